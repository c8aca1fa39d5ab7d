"""Provider pieces: the SSE decoder, choosing a model and its key, scrubbing, prices,
prompt caching, token counting, raw recording, and the fake server as a program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentloop.budget import Budget, Price, cost_micros
from agentloop.config.settings import ConfigError, load_settings, prices_from_settings
from agentloop.events import ModelRequest, ToolSpec, Usage
from agentloop.prices import BUILTIN_PRICES, default_prices
from agentloop.providers import ProviderConfigError, open_model, scrub
from agentloop.providers.sse import SSEDecoder, parse_events
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import TranscriptWriter, read_records, verify_file

DATA = Path(__file__).parent / "data" / "anthropic-sse"

# --- SSE ------------------------------------------------------------------------


def _all_splits(body: bytes) -> list[list[tuple[str, bytes]]]:
    outs = []
    for i in range(len(body) + 1):
        d = SSEDecoder()
        outs.append(d.feed(body[:i]) + d.feed(body[i:]) + d.close())
    return outs


def test_sse_events_are_the_same_wherever_the_bytes_are_cut() -> None:
    body = b'event: a\ndata: {"x":1}\n\n: a comment\ndata: line1\ndata: line2\n\nid: 7\nretry: 10\nevent: b\ndata:no-space\n\n'
    want = [("a", b'{"x":1}'), ("message", b"line1\nline2"), ("b", b"no-space")]
    for got in _all_splits(body):
        assert got == want


def test_sse_accepts_crlf_and_cr_line_ends_even_split_between_cr_and_lf() -> None:
    for sep in (b"\r\n", b"\r"):
        body = b"event: a" + sep + b"data: 1" + sep + sep + b"data: 2" + sep + sep
        for got in _all_splits(body):
            assert got == [("a", b"1"), ("message", b"2")], (sep, got)


def test_sse_keeps_the_last_event_of_a_body_without_a_final_blank_line() -> None:
    body = (DATA / "basic_response.txt").read_bytes()
    assert not body.endswith(b"\n\n")
    evs = parse_events(body)
    assert evs[-1][0] == "message_stop" and len(evs) == body.count(b"event: ")


def test_sse_drops_events_without_data() -> None:
    assert parse_events(b"event: ping\n\n: keepalive\n\ndata: x\n\n") == [("message", b"x")]


# --- choosing a model, keys ------------------------------------------------------


def test_no_key_fails_at_once_saying_how_to_set_one_or_use_a_local_server() -> None:
    with pytest.raises(ProviderConfigError) as ei:
        open_model("openai:gpt-4o-mini", env={})
    msg = str(ei.value)
    assert "OPENAI_API_KEY" in msg and "--base-url" in msg and "\n" not in msg
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        open_model("anthropic:claude-haiku-4-5", env={})


def test_a_local_base_url_needs_no_key_and_sends_none() -> None:
    seen: list[httpx.Request] = []

    def h(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')

    m = open_model("openai:llama3.2", base_url="http://localhost:11434/v1", env={}, transport=httpx.MockTransport(h))
    assert m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 10)).text == "hi"
    assert "authorization" not in seen[0].headers
    assert str(seen[0].url) == "http://localhost:11434/v1/chat/completions"
    assert json.loads(seen[0].content)["max_tokens"] == 10  # local servers know max_tokens


def test_keys_come_from_the_named_variable_then_the_vendor_variable() -> None:
    m = open_model("openai:gpt-4o", api_key_env="MY_KEY", env={"MY_KEY": "sk-named", "OPENAI_API_KEY": "sk-default"})
    assert m.target.api_key == "sk-named"
    m = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert m.target.api_key == "sk-ant-x" and m.target.base_url == "https://api.anthropic.com"
    with pytest.raises(ProviderConfigError, match="MY_KEY is not set"):
        open_model("openai:gpt-4o", api_key_env="MY_KEY", env={"OPENAI_API_KEY": "sk-default"})


@pytest.mark.parametrize(
    ("spec", "words"),
    [("gpt-4o", "needs a provider: say openai:gpt-4o"), ("claude-x", "say anthropic:claude-x"), ("gemini:pro", "unknown provider 'gemini'"), ("openai:", "names no model")],
)
def test_bad_model_specs_are_one_clear_line(spec: str, words: str) -> None:
    with pytest.raises(ProviderConfigError, match=words.replace("(", r"\(")):
        open_model(spec, env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})


def test_an_unknown_option_is_named() -> None:
    with pytest.raises(ProviderConfigError, match="unknown option 'cache' for openai"):
        open_model("openai:gpt-4o", api_key="k", env={}, cache=True)


def test_scrub_removes_the_key_and_key_shaped_strings() -> None:
    text = "bad key sk-live-abcdef123456 and Bearer sk-ant-zzzzzz999999 and mysecretvalue"
    out = scrub(text, ["mysecretvalue"])
    assert "abcdef123456" not in out and "zzzzzz999999" not in out and "mysecretvalue" not in out
    assert out.count("[REDACTED]") == 3


def test_a_key_is_not_in_the_models_repr() -> None:
    m = open_model("openai:gpt-4o", api_key="sk-very-secret-123456", env={})
    assert "sk-very-secret" not in repr(m)


# --- prices ----------------------------------------------------------------------------


def test_vendor_spellings_resolve_to_the_table_and_unknown_models_cost_the_most() -> None:
    t = default_prices()
    assert t.resolve("claude-haiku-4-5-20251001") == BUILTIN_PRICES["claude-haiku-4-5"]
    assert t.resolve("gpt-4o-2024-08-06") == BUILTIN_PRICES["gpt-4o"]
    assert t.resolve("openai/gpt-4o-mini") == BUILTIN_PRICES["gpt-4o-mini"]
    assert t.resolve("gpt-4o-mini") != t.resolve("gpt-4o")
    hi = t.resolve("some-new-model")
    assert hi == t.highest() and all(hi.output >= p.output and hi.input >= p.input for p in BUILTIN_PRICES.values())
    assert "claude-sonnet-4-6-20260101" in t and "nope" not in t


def test_every_builtin_price_has_cache_reads_cheaper_than_input() -> None:
    for name, p in BUILTIN_PRICES.items():
        assert 0 < p.input <= p.output, name
        assert p.cache_read < p.input, name
        if name.startswith("claude"):
            assert p.cache_write == p.input * 5 // 4, name  # 5-minute cache writes are 1.25x input


def _settings(tmp_path: Path, user: Any, project: Any) -> list[Any]:
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir(parents=True)
    (cwd / ".agentloop").mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps(user))
    (cwd / ".agentloop" / "settings.json").write_text(json.dumps(project))
    return load_settings(str(cwd), str(home))


def test_settings_prices_override_and_extend_the_table_layer_by_layer(tmp_path: Path) -> None:
    src = _settings(
        tmp_path,
        {"prices": {"my-model": {"input": 1, "output": 2}, "gpt-4o": {"input": 3, "output": 4}}},
        {"prices": {"gpt-4o": {"input": 5, "output": 6, "cache_read": 1}}},
    )
    t = prices_from_settings(src)
    assert t.resolve("my-model") == Price(1, 2)  # the user's model survives the project layer
    assert t.resolve("gpt-4o") == Price(5, 6, 1)  # the project wins for gpt-4o
    assert t.resolve("gpt-4o-2024-11-20") == Price(5, 6, 1)
    assert t.resolve("claude-haiku-4-5") == BUILTIN_PRICES["claude-haiku-4-5"]


def test_a_bad_price_in_settings_names_the_file_and_the_model(tmp_path: Path) -> None:
    src = _settings(tmp_path, {}, {"prices": {"gpt-4o": {"input": 1.5, "output": 2}}})
    with pytest.raises(ConfigError) as ei:
        prices_from_settings(src)
    assert str(tmp_path / "proj" / ".agentloop" / "settings.json") in str(ei.value) and "prices.gpt-4o" in str(ei.value)
    src = _settings(tmp_path / "b", {"prices": {"x": {"input": 1}}}, {})
    with pytest.raises(ConfigError, match='prices.x: needs "input" and "output"'):
        prices_from_settings(src)


# --- prompt caching ---------------------------------------------------------------------

SYSTEM = "You are a careful assistant. " * 40
TOOLS = (ToolSpec("add", "Add two integers a and b.", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),)


def _two_turns(vendor: str, **kw: Any) -> tuple[list[Usage], list[dict[str, Any]]]:
    with FakeProvider([{"text": "first"}, {"text": "second"}]) as fp:
        spec = "anthropic:claude-haiku-4-5" if vendor == "anthropic" else "openai:gpt-4o-mini"
        m = open_model(spec, base_url=fp.url if vendor == "anthropic" else fp.url + "/v1", env={}, **kw)
        msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "one"}]
        r1 = m.complete(ModelRequest(msgs, TOOLS, 100))
        msgs += [{"role": "assistant", "content": r1.text}, {"role": "user", "content": "two"}]
        r2 = m.complete(ModelRequest(msgs, TOOLS, 100))
        assert r1.usage is not None and r2.usage is not None
        return [r1.usage, r2.usage], [r["body"] for r in fp.requests]


def test_anthropic_breakpoints_follow_the_static_prefix_and_the_second_turn_reads_the_cache() -> None:
    (u1, u2), bodies = _two_turns("anthropic")
    b = bodies[1]
    assert b["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert b["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert b["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sum("cache_control" in json.dumps(x) for x in [b["tools"], b["system"]]) == 2
    assert u1.cache_write_tokens > 0 and u1.cache_read_tokens == 0
    assert u2.cache_read_tokens >= u1.cache_write_tokens > 0  # the whole first prompt is read back
    # cache reads are priced at their own rate: the second turn is cheaper than it would be uncached
    p = default_prices().resolve("claude-haiku-4-5")
    uncached = Usage(u2.input_tokens + u2.cache_read_tokens + u2.cache_write_tokens, u2.output_tokens)
    assert cost_micros(u2, p) < cost_micros(uncached, p)


def test_without_breakpoints_nothing_is_cached() -> None:
    (u1, u2), bodies = _two_turns("anthropic", cache=False)
    assert "cache_control" not in json.dumps(bodies)
    assert u1.cache_read_tokens == u2.cache_read_tokens == u1.cache_write_tokens == 0


def test_openai_cached_tokens_are_reported_as_cache_reads() -> None:
    (u1, u2), _ = _two_turns("openai")
    assert u1.cache_read_tokens == 0 and u2.cache_read_tokens > 0
    assert u2.input_tokens > 0  # cached tokens are taken out of the input count


# --- count_tokens ----------------------------------------------------------------------------


def test_anthropic_count_tokens_is_the_exact_input_the_server_then_bills() -> None:
    with FakeProvider({"replies": [{"text": "ok"}], "cache": False}) as fp:
        m = open_model("anthropic:claude-haiku-4-5", base_url=fp.url, env={}, cache=False)
        req = ModelRequest([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}], TOOLS, 50)
        n = m.count_tokens(req)
        r = m.complete(req)
        assert r.usage is not None and n == r.usage.input_tokens
        assert fp.requests[0]["path"] == "/messages/count_tokens"
        assert open_model("openai:gpt-4o", api_key="k", env={}).count_tokens(req) is None


# --- raw recording -------------------------------------------------------------------------


def test_raw_streams_are_recorded_only_when_asked(tmp_path: Path) -> None:
    for raw in (False, True):
        with FakeProvider([{"text": "hello raw"}]) as fp:
            m = open_model("anthropic:claude-haiku-4-5", base_url=fp.url, api_key="sk-raw-secret-12345", env={}, record_raw=raw)
            path = tmp_path / f"{raw}.jsonl"
            with TranscriptWriter(path) as w:
                run(m, None, "hi", Budget(max_steps=1), transcript=w, record_raw=raw)
        assert verify_file(path).ok
        turn = next(r for r in read_records(path) if r.kind == "model_turn").payload
        if raw:
            assert "event: message_stop" in turn["raw"]["stream"] and turn["raw"]["vendor"] == "anthropic"
        else:
            assert "raw" not in turn
        assert "sk-raw-secret" not in path.read_text()


# --- the fake server as a program -------------------------------------------------------------


def test_fakeprovider_prints_its_url_first_and_serves_both_protocols(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [{"text": "from a process"}], "when_done": "repeat"}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", str(script), "--port", "0"],
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout is not None
        url = p.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        for spec, base in (("openai:m", url + "/v1"), ("anthropic:m", url)):
            r = open_model(spec, base_url=base, env={}).complete(ModelRequest([{"role": "user", "content": "x"}], (), 20))
            assert r.text == "from a process"
        assert len(httpx.get(url + "/requests").json()) == 2
    finally:
        p.terminate()
        p.wait(10)


def test_fakeprovider_names_a_bad_script_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"replies": [{"fault": "explode"}]}))
    p = subprocess.run([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert str(script) in p.stderr and "'explode' is not one of" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_fakeprovider_answers_a_500_when_its_script_runs_out() -> None:
    with FakeProvider([{"text": "only"}]) as fp:
        m = open_model("openai:m", base_url=fp.url + "/v1", env={}, max_attempts=1)
        m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 20))
        from agentloop.providers import ProviderError

        with pytest.raises(ProviderError, match="no reply for request 2"):
            m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 20))


# --- streams that end early ----------------------------------------------------------------


def _served(bodies: list[bytes]) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def h(r: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=bodies[len(calls) - 1])

    return httpx.MockTransport(h), calls


def test_an_openai_stream_that_ends_after_its_finish_reason_without_done_is_complete() -> None:
    t, calls = _served([b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'])
    m = open_model("openai:m", base_url="http://localhost:1/v1", env={}, transport=t)
    r = m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 10))
    assert (r.text, r.finish_reason, len(calls)) == ("hi", "stop", 1)


def test_a_stream_that_ends_before_its_finish_is_cut_and_retried() -> None:
    partial = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    whole = partial + b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    t, calls = _served([partial, whole])
    notices: list[str] = []
    m = open_model("openai:m", base_url="http://localhost:1/v1", env={}, transport=t, sleep=lambda d: None, on_notice=notices.append)
    r = m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 1000))
    assert (r.text, len(calls)) == ("hi!", 2)
    assert "ended before its final event" in notices[0]


def test_the_key_is_not_in_the_target_repr_either() -> None:
    m = open_model("anthropic:claude-haiku-4-5", api_key="sk-ant-hidden-98765", env={})
    assert "hidden" not in repr(m.target) and "hidden" not in repr(m)


def test_a_server_that_ignores_stream_and_answers_json_is_understood() -> None:
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    t = httpx.MockTransport(lambda r: httpx.Response(200, json=body))
    r = open_model("openai:m", base_url="http://localhost:1/v1", env={}, transport=t).complete(ModelRequest([{"role": "user", "content": "x"}], (), 10))
    assert (r.text, r.usage) == ("whole", Usage(3, 1))


def test_fake_latency_ranges_are_applied_per_request() -> None:
    import time

    with FakeProvider({"replies": [{"text": "slow", "latency": [0.2, 0.3]}], "seed": 7}) as fp:
        m = open_model("openai:m", base_url=fp.url + "/v1", env={})
        t0 = time.monotonic()
        m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 10))
        assert time.monotonic() - t0 >= 0.2
