"""OpenAI's Responses API, end to end: the fake server's wire shape checked by the ``openai`` SDK, and the
adapter driven through the loop (calls and their outputs, reasoning items sent back, usage priced, errors
retried, a replay identical byte for byte).

The documented behaviour these follow (OpenAI's API reference for ``POST /v1/responses`` and its
streaming events, as the ``openai`` SDK 3.63 types them): a reasoning model's output holds ``reasoning``
items; with ``store: false`` and ``include: ["reasoning.encrypted_content"]`` each carries its
``encrypted_content`` (whole in ``response.output_item.done``), and the items are sent back in the next
request's ``input`` with the ``function_call`` items and before their ``function_call_output``; usage's
``input_tokens`` counts ``input_tokens_details.cached_tokens`` and ``output_tokens`` counts
``output_tokens_details.reasoning_tokens``; ``response.incomplete`` with ``max_output_tokens`` is a cut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from agentloop.agent.agent import Agent
from agentloop.agent.tools.web_search import MAX_USES
from agentloop.budget import Budget, Price, PriceTable, cost_micros, usd
from agentloop.events import Usage
from agentloop.providers import OpenArgs, open_model, open_spec
from agentloop.providers.openai_responses import ResponsesModel, responses_only, to_responses
from agentloop.providers.sse import parse_events
from agentloop.providers.web_search import SEARCH_PRICE_MICROS
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing.fake_responses import encrypted
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import tool
from agentloop.transcript import TranscriptWriter, read_records, verify_file

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
PRICES = PriceTable({"gpt-5-codex": Price(1_250_000, 10_000_000, 125_000, 0), "gpt-5.1-codex": Price(1_250_000, 10_000_000, 125_000, 0)})
NOTE = {"name": "note", "arguments": {"text": "a"}}


@tool(read_only=True)
def note(text: str) -> str:
    """Keep a note."""
    return f"kept {text}"


def _model(url: str, spec: str = "openai:gpt-5-codex", **kw: Any) -> Any:
    kw.setdefault("max_attempts", 1)
    return open_model(spec, base_url=url + "/v1", env={}, prices=PRICES, sleep=lambda s: None, rand=lambda: 0.0, **kw)


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5-codex", "input": [{"type": "message", "role": "user", "content": "hi"}], "stream": True, "store": False,
            "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "medium", "summary": "auto"},
            "tools": [{"type": "function", "name": "note", "parameters": {"type": "object"}, "strict": False}], **extra}


# --- the fake's wire shape, with the SDK as the oracle ------------------------------------------

SEARCH_REPLY_FOR_EVENTS = {"reasoning": "search first", "text": "found it",
                           "web_search": [{"query": "q", "results": [{"url": "https://a.dev/x", "title": "A"}]}, {"query": "r", "error": "failed"}]}


@pytest.mark.parametrize("reply", [
    {"reasoning": "think first", "text": "hello there", "tool_calls": [NOTE, {"name": "note", "arguments": {"text": "b"}}]},
    {"text": "cut", "stop_reason": "max_tokens", "tool_calls": [{"name": "note", "arguments": {"text": "abcdefghijkl"}}]},
    {"fault": "failed"},
    {"fault": "error_event", "reasoning": "x"},
    {**SEARCH_REPLY_FOR_EVENTS},
], ids=["reasoning-text-calls", "incomplete", "failed", "error-event", "web-search"])
def test_every_event_the_fake_streams_is_a_stream_event_of_the_openai_sdk(reply: dict[str, Any]) -> None:
    tools = [{"type": "function", "name": "note", "parameters": {"type": "object"}, "strict": False}, {"type": "web_search"}]
    with FakeProvider([reply]) as fp:
        r = httpx.post(fp.url + "/v1/responses", json=_request(tools=tools, include=["reasoning.encrypted_content", "web_search_call.action.sources"]))
    events = parse_events(r.content)
    assert r.status_code == 200 and events
    for n, (name, data) in enumerate(events):
        ev = EVENTS.validate_json(data)
        assert ev.type == name and ev.sequence_number == n


def test_the_openai_sdk_reads_the_fakes_stream_into_its_final_response() -> None:
    script = [{"reasoning": "look before", "text": "I will note it.", "tool_calls": [NOTE],
               "usage": {"input_tokens": 900, "cached_tokens": 300, "output_tokens": 200, "reasoning_tokens": 150}}]
    with FakeProvider(script) as fp:
        client = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-test", max_retries=0)
        req = _request()
        req.pop("stream")
        with client.responses.stream(**req) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        client.close()
    kinds = [o.type for o in final.output]
    assert kinds == ["reasoning", "message", "function_call"]
    assert "".join(deltas) == final.output_text == "I will note it."
    rs = final.output[0]
    assert rs.type == "reasoning" and rs.encrypted_content == encrypted("look before", 1) and rs.summary[0].text == "look before"
    fc = final.output[2]
    assert fc.type == "function_call" and fc.name == "note" and fc.arguments == '{"text":"a"}'
    assert final.usage is not None and final.usage.input_tokens_details.cached_tokens == 300
    assert final.usage.output_tokens_details.reasoning_tokens == 150


# --- choosing the wire format ---------------------------------------------------------------------


@pytest.mark.parametrize(("name", "only"), [
    ("gpt-5-codex", True), ("gpt-5.1-codex", True), ("gpt-5.1-codex-mini", True), ("gpt-5.1-codex-max", True),
    ("codex-mini-latest", True), ("gpt-5.2-codex-max", True), ("gpt-5", False), ("gpt-4o-mini", False), ("openai/gpt-5-codex", False),
])
def test_the_models_served_only_by_the_responses_api_are_known_by_name(name: str, only: bool) -> None:
    assert responses_only(name) is only


def test_a_responses_only_model_or_the_openai_responses_provider_opens_the_responses_adapter() -> None:
    assert isinstance(open_model("openai:gpt-5-codex", env={"OPENAI_API_KEY": "sk-x"}), ResponsesModel)
    m = open_spec("openai-responses:gpt-5", OpenArgs(env={"OPENAI_API_KEY": "sk-x"}))
    assert isinstance(m, ResponsesModel) and m.url() == "https://api.openai.com/v1/responses"
    assert not isinstance(open_model("openai:gpt-5", env={"OPENAI_API_KEY": "sk-x"}), ResponsesModel)


def test_system_messages_become_instructions_and_calls_carry_their_call_id() -> None:
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "note", "arguments": {"text": "a"}}],
             "reasoning": [{"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "E"}, {"type": "thinking", "thinking": "t"}]},
            {"role": "tool", "tool_call_id": "call_1", "name": "note", "content": "kept a"},
            {"role": "system", "content": "later"}]
    instructions, items, _ = to_responses(msgs, [])
    assert instructions == "be brief"
    assert [i.get("type") for i in items] == ["message", "reasoning", "function_call", "function_call_output", "message"]
    assert items[1] == {"type": "reasoning", "summary": [], "encrypted_content": "E"}  # as received, without its id; Anthropic's blocks left out
    assert items[2] == {"type": "function_call", "call_id": "call_1", "name": "note", "arguments": '{"text":"a"}'}
    assert items[3] == {"type": "function_call_output", "call_id": "call_1", "output": "kept a"}
    assert items[4]["role"] == "developer"


# --- through the loop -----------------------------------------------------------------------------


def _round_trip(tmp_path: Path, replies: list[dict[str, Any]], **kw: Any) -> tuple[Any, list[dict[str, Any]], Path]:
    path = tmp_path / "t.jsonl"
    with FakeProvider(replies) as fp, TranscriptWriter(path) as w:
        r = run(_model(fp.url, **kw), [note], "go", Budget(max_steps=6, max_usd_micros=500_000), transcript=w, prices=PRICES,
                max_output_tokens=1000)
        reqs = [q for q in fp.requests if q["path"] == "/responses"]
    return r, reqs, path


def test_a_tool_call_round_trip_sends_the_reasoning_items_back_as_received_before_the_outputs(tmp_path: Path) -> None:
    """The second request carries the first reply's reasoning item (its encrypted content and summary as
    issued, no id), then the call, then its output; the fake refuses an item altered, made up or with an id."""
    r, reqs, path = _round_trip(tmp_path, [{"reasoning": "need a note", "tool_calls": [NOTE]}, {"text": "done"}],
                                reasoning_effort="high")
    assert r.stop_reason == "no_tool_calls" and r.answer == "done", r.error
    first, second = reqs[0]["body"], reqs[1]["body"]
    for b in (first, second):
        assert b["store"] is False and b["include"] == ["reasoning.encrypted_content"]
        assert b["reasoning"] == {"effort": "high", "summary": "auto"} and b["stream"] is True
        assert "max_output_tokens" in b and "messages" not in b
    kinds = [i["type"] for i in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    rs, call, out = second["input"][1:]
    assert rs == {"type": "reasoning", "summary": [{"type": "summary_text", "text": "need a note"}], "encrypted_content": encrypted("need a note", 1)}
    assert call["call_id"] == out["call_id"] and out["output"] == "kept a"
    # the record keeps the item exactly as output_item.done carried it, id included
    (turn,) = [x.payload for x in read_records(path) if x.kind == "model_turn"][:1]
    assert turn["reply"]["reasoning"] == [{"id": "rs_fake0001", "type": "reasoning", "summary": rs["summary"], "encrypted_content": rs["encrypted_content"]}]


def test_a_responses_run_replays_byte_for_byte(tmp_path: Path) -> None:
    r, _, path = _round_trip(tmp_path, [{"reasoning": "plan", "text": "noting", "tool_calls": [NOTE, NOTE]},
                                        {"reasoning": "again", "tool_calls": [NOTE]}, {"text": "done"}], record_raw=True)
    assert r.stop_reason == "no_tool_calls", r.error
    assert verify_file(path).ok
    res = replay(path)
    assert res.equal, res.differences[:3]


def test_cached_and_reasoning_tokens_are_priced(tmp_path: Path) -> None:
    """Cached input at the cache-read price, taken out of the input; reasoning inside the output, at the output price."""
    u = {"input_tokens": 1_000, "cached_tokens": 600, "output_tokens": 500, "reasoning_tokens": 400}
    r, _, path = _round_trip(tmp_path, [{"reasoning": "hm", "text": "done", "usage": u}])
    assert r.stop_reason == "no_tool_calls", r.error
    (turn,) = [x.payload for x in read_records(path) if x.kind == "model_turn"]
    assert turn["reply"]["usage"] == {"input_tokens": 400, "output_tokens": 500, "cache_read_tokens": 600, "cache_write_tokens": 0}
    want = -(-(400 * 1_250_000 + 600 * 125_000 + 500 * 10_000_000) // 1_000_000)
    assert r.spent_micros == want == cost_micros(Usage(400, 500, 600), PRICES.resolve("gpt-5-codex"))


@pytest.mark.parametrize("usage", [
    {"output_tokens": 10, "reasoning_tokens": 400},
    {"input_tokens": 100, "cached_tokens": 101},
    {"output_tokens": -5},
    {"reasoning_tokens": 1.5},
], ids=["more-reasoning-than-output", "more-cached-than-input", "negative-output", "fractional-reasoning"])
def test_a_usage_that_cannot_be_billed_is_charged_at_the_reservation(tmp_path: Path, usage: dict[str, Any]) -> None:
    r, _, path = _round_trip(tmp_path, [{"reasoning": "hm", "text": "done", "usage": usage}])
    assert r.stop_reason == "budget_overrun" and "cannot be billed" in (r.error or ""), r.error
    assert verify_file(path).ok and replay(path).equal


def test_server_errors_failed_responses_and_error_events_are_retried(tmp_path: Path) -> None:
    notices: list[str] = []
    replies = [{"fault": "500"}, {"fault": "failed"}, {"fault": "error_event", "text": "partial"}, {"text": "done"}]
    r, reqs, _ = _round_trip(tmp_path, replies, max_attempts=4, on_notice=notices.append)
    assert r.stop_reason == "no_tool_calls" and r.answer == "done", r.error
    assert len(reqs) == 4 and len([n for n in notices if "retrying" in n]) == 3, notices


@pytest.mark.parametrize(("fault", "kind"), [("quota", "quota"), ("401", "authentication failed")])
def test_quota_and_authentication_failures_are_not_retried(tmp_path: Path, fault: str, kind: str) -> None:
    r, reqs, _ = _round_trip(tmp_path, [{"fault": fault}, {"text": "never"}], max_attempts=3)
    assert r.stop_reason == "model_error" and kind in (r.error or "") and len(reqs) == 1, r.error


def test_a_reply_cut_at_max_output_tokens_is_continued(tmp_path: Path) -> None:
    r, reqs, _ = _round_trip(tmp_path, [{"text": "part one", "stop_reason": "max_tokens"}, {"text": " and two"}])
    assert r.stop_reason == "no_tool_calls" and len(reqs) == 2, r.error
    assert reqs[1]["body"]["input"][-1] == {"type": "message", "role": "assistant", "content": "part one"}


def test_a_stream_cut_after_reasoning_began_counts_its_whole_max_tokens_of_output(tmp_path: Path) -> None:
    """The reasoning is billed but not streamed: once a reasoning item began, what a cut attempt may have
    cost is all it was allowed, and no retry fits in the call's reservation."""
    r, reqs, path = _round_trip(tmp_path, [{"fault": "cut", "reasoning": "long", "tool_calls": [NOTE]}, {"text": "done"}], max_attempts=2)
    assert len(reqs) == 1 and r.stop_reason in ("model_error", "budget_overrun"), r.error
    assert "not retried" in (r.error or "")
    errs = [x.payload for x in read_records(path) if x.kind == "model_error"]
    assert errs and errs[0]["usage"]["output_tokens"] >= 1000


def test_a_key_never_appears_in_an_error(tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": "x"}], "require_key": "right"}) as fp:
        m = open_model("openai-responses:gpt-5.1-codex", base_url=fp.url + "/v1", api_key="sk-wrong-secret-key", env={}, max_attempts=1)
        r = run(m, [], "go", Budget(max_steps=2, max_usd_micros=100_000), prices=PRICES, max_output_tokens=100)
    assert r.stop_reason == "model_error" and "sk-wrong-secret-key" not in (r.error or "") and "OPENAI_API_KEY" in (r.error or "")


# --- through the terminal agent -------------------------------------------------------------------

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


def _cli(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_", "CLAUDE_"))}
    env["AGENTLOOP_HOME"] = str(home)
    env["OPENAI_API_KEY"] = "sk-test-responses-key"
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_agent_on_gpt_5_codex_reads_a_file_through_the_responses_api_and_its_session_replays(home: Path, proj: Path) -> None:
    """``-p`` on a Responses-only model: the call to Read and its output travel as ``function_call`` and
    ``function_call_output`` with the reasoning item before them, the default effort is Codex's ``medium``,
    and the session's transcript verifies and replays byte for byte."""
    (proj / "notes.txt").write_text("the answer is 42\n")
    script = [{"reasoning": "read the notes", "tool_calls": [{"name": "Read", "arguments": {"file_path": str(proj / "notes.txt")}}]},
              {"reasoning": "now answer", "text": "It says 42."}]
    with FakeProvider(script) as fp:
        p = _cli(["-p", "what do the notes say?", "--model", "openai:gpt-5-codex", "--base-url", fp.url + "/v1", "--max-usd", "1"], proj, home)
        reqs = [q["body"] for q in fp.requests if q["path"] == "/responses"]
    assert p.returncode == 0 and p.stdout.strip() == "It says 42.", p.stderr
    assert len(reqs) == 2 and reqs[0]["reasoning"] == {"effort": "medium", "summary": "auto"}
    kinds = [i["type"] for i in reqs[1]["input"]]
    assert kinds[-3:] == ["reasoning", "function_call", "function_call_output"], kinds
    assert "the answer is 42" in json.dumps(reqs[1]["input"][-1]["output"])
    (path,) = [f for f in home.rglob("*.jsonl") if any(r.kind == "model_turn" for r in read_records(f))]
    assert "sk-test-responses-key" not in path.read_text()
    q = subprocess.run([AGENTLOOP, "replay", str(path), "--mode", "full"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "AGENTLOOP_HOME": str(home)})
    assert q.returncode == 0, q.stdout + q.stderr


# --- WebSearch through the built-in web_search tool -------------------------------------------------

SEARCH_REPLY = {
    "web_search": [{"query": "widget release", "results": [
        {"url": "https://docs.widget.dev/releases", "title": "Widget release notes"},
        {"url": "https://spam.example/widget", "title": "Cheap widgets"},
    ]}],
    "text": "Widget 2.1 came out this week.",
}


def _ask(tmp_path: Path, replies: list[dict[str, Any]], model: str = "openai-responses:gpt-5", **args: Any) -> tuple[Agent, list[dict[str, Any]]]:
    cwd = tmp_path / "proj"
    (cwd / ".claude").mkdir(parents=True, exist_ok=True)
    (cwd / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["WebSearch"]}}))
    call = {"tool_calls": [{"name": "WebSearch", "arguments": {"query": "widget release", **args}}]}
    with FakeProvider({"replies": [call, *replies], "when_done": "repeat"}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=model, base_url=fp.url + "/v1", env={},
                  max_usd_micros=usd("5"), trust=True)
        try:
            a.ask("what's new with widget?")
        finally:
            a.close("prompt_input_exit")
        return a, [r["body"] for r in fp.requests if r["protocol"]]


def _search_result(a: Agent) -> dict[str, Any]:
    (res,) = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result" and r.payload["name"] == "WebSearch"]
    return res


def test_websearch_on_the_responses_api_uses_its_web_search_tool_and_bills_each_search(tmp_path: Path) -> None:
    """OpenAI's web search tool (``{"type": "web_search", "filters": {"allowed_domains": [...]}}``, its calls
    capped by ``max_tool_calls``): each ``web_search_call`` is a search billed at $10 per 1,000 on top of the tokens."""
    a, bodies = _ask(tmp_path, [SEARCH_REPLY, {"text": "done"}], allowed_domains=["docs.widget.dev"])
    search = bodies[1]
    assert search["tools"] == [{"type": "web_search", "filters": {"allowed_domains": ["docs.widget.dev"]}}]
    assert search["max_tool_calls"] == MAX_USES and search["store"] is False and "widget release" in json.dumps(search["input"])
    res = _search_result(a)
    assert res["ok"] and "1. [Widget release notes](https://docs.widget.dev/releases)" in res["content"], res
    assert "spam.example" not in res["content"] and "Widget 2.1 came out this week." in res["content"]
    (cost,) = [r.payload for r in read_records(a.session.path) if r.kind == "side_cost"]
    tokens = Usage(**{k: cost["usage"].get(k, 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")})
    assert search["model"] == "gpt-5-mini"  # the provider's cheap model searches
    assert cost["cost_micros"] == cost_micros(tokens, a.prices.resolve("gpt-5-mini")) + SEARCH_PRICE_MICROS
    rep = replay(a.session.path)
    assert rep.equal, rep.first_difference


def test_a_responses_only_model_of_the_openai_provider_is_offered_websearch_served_over_responses(tmp_path: Path) -> None:
    """``openai:gpt-5-codex`` is served only by the Responses API, so its side calls are too: its cheap model is
    ``gpt-5-mini`` over Responses (not ``gpt-4o-mini`` over Chat Completions, which has no search), and WebSearch
    is offered and runs through the built-in ``web_search`` tool, billed per search."""
    from agentloop.agent.toolbox import model_hides
    from agentloop.providers import cheap_spec, has_web_search

    assert cheap_spec("openai:gpt-5-codex", {}) == "openai-responses:gpt-5-mini"
    assert cheap_spec("openai:gpt-5", {}) == "openai:gpt-4o-mini"  # a family on Chat Completions keeps its own
    assert has_web_search("openai:gpt-5-codex") is True and has_web_search("openai:gpt-5") is False
    assert "WebSearch" not in model_hides("openai:gpt-5-codex") and "WebSearch" in model_hides("openai:gpt-5")
    a, bodies = _ask(tmp_path, [SEARCH_REPLY, {"text": "done"}], model="openai:gpt-5-codex", allowed_domains=["docs.widget.dev"])
    assert bodies[0]["model"] == "gpt-5-codex" and any(t.get("name") == "WebSearch" for t in bodies[0]["tools"])
    search = bodies[1]
    assert search["model"] == "gpt-5-mini" and search["tools"] == [{"type": "web_search", "filters": {"allowed_domains": ["docs.widget.dev"]}}]
    res = _search_result(a)
    assert res["ok"] and "1. [Widget release notes](https://docs.widget.dev/releases)" in res["content"], res
    (cost,) = [r.payload for r in read_records(a.session.path) if r.kind == "side_cost"]
    tokens = Usage(**{k: cost["usage"].get(k, 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")})
    assert cost["cost_micros"] == cost_micros(tokens, a.prices.resolve("gpt-5-mini")) + SEARCH_PRICE_MICROS
    rep = replay(a.session.path)
    assert rep.equal, rep.first_difference


def test_websearch_with_blocked_domains_on_the_responses_api_makes_no_search_and_says_why(tmp_path: Path) -> None:
    """OpenAI's search filters by allowed domains only: a block it cannot honour is refused, not ignored."""
    a, bodies = _ask(tmp_path, [{"text": "done"}], blocked_domains=["spam.example"])
    res = _search_result(a)
    assert not res["ok"] and "allowed_domains only" in res["error"], res
    assert not any(b.get("tools") and b["tools"][0].get("type") == "web_search" for b in bodies)


def test_after_a_switch_of_model_each_vendor_is_sent_only_its_own_reasoning() -> None:
    """A conversation begun on the Responses API and continued on Claude (``/model``): Anthropic is sent its
    ``thinking`` blocks and never OpenAI's reasoning items, and the Responses API the reverse."""
    from agentloop.providers.anthropic import to_anthropic

    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok", "reasoning": [{"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "E"},
                                                                 {"type": "thinking", "thinking": "t", "signature": "s"}]},
            {"role": "user", "content": "more"}]
    _, amsgs, _ = to_anthropic(msgs, [], cache=False)
    assert [b["type"] for b in amsgs[1]["content"]] == ["thinking", "text"]
    _, items, _ = to_responses(msgs, [])
    assert [i["type"] for i in items] == ["message", "reasoning", "message", "message"]


def test_a_reasoning_model_is_given_codexs_idle_timeout_unless_another_is_set() -> None:
    """Hidden reasoning sends no event: a reasoning model's stream waits 300 s (Codex's stream idle timeout) for one."""
    env = {"OPENAI_API_KEY": "sk-x"}
    assert open_model("openai:gpt-5-codex", env=env).policy.stall_timeout == 300.0
    assert open_model("openai:gpt-5-codex", env=env, stall_timeout=12).policy.stall_timeout == 12
    assert open_model("openai-responses:gpt-4.1", env=env).policy.stall_timeout == 30.0


def test_a_server_that_answers_with_one_json_response_is_read_whole() -> None:
    """A server that ignores ``stream`` and sends the ``Response`` object itself: the same turn, usage checked."""
    from agentloop.events import ModelRequest
    from agentloop.providers.base import Target
    from agentloop.testing.fake_responses import ResponsesReply

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        rep = ResponsesReply(body, {"reasoning": "whole", "text": "all at once", "tool_calls": []}, 7, [], 40, 0, lambda e: None,
                             lambda d, u: True)
        return httpx.Response(200, json=rep.final())

    m = ResponsesModel(Target("openai-responses", "gpt-5-codex", "http://json.invalid/v1", "k"), transport=httpx.MockTransport(handle))
    reply = m.complete(ModelRequest(messages=[{"role": "user", "content": "go"}], tools=[], max_output_tokens=500))
    assert reply.text == "all at once" and reply.reasoning[0]["encrypted_content"] == encrypted("whole", 7)
    assert reply.usage is not None and reply.usage.input_tokens == 40
