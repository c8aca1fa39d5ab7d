"""The fault table, end to end: our adapters against the fake server over real HTTP,
driven by the loop, recorded to a transcript that must verify every time.

Each fault ends in a recovered run or a clean stop with a stated reason; the
key never reaches the transcript, the error, the notices or the log; and the
run never spends past its cap.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from agentloop.budget import Budget, usd
from agentloop.providers import open_model
from agentloop.replay import replay
from agentloop.run import RunResult, arun, make_config, run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import Registry, tool
from agentloop.transcript import TranscriptWriter, read_records, verify_file

KEY = "sk-test-SECRETKEY0123456789"


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first
        b: the second
    """
    return a + b


CALL = {"text": "Let me add.", "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
DONE = {"text": "The sum is 5."}
OK = [CALL, DONE]
VENDORS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}


@dataclasses.dataclass
class Outcome:
    result: RunResult
    requests: list[dict[str, Any]]
    delays: list[float]
    notices: list[str]
    transcript: bytes
    kinds: list[str]
    turns: list[dict[str, Any]]


def drive(tmp_path: Path, vendor: str, replies: list[dict[str, Any]], *, cap: str = "0.05", max_out: int = 400,
          use_async: bool = False, spec: str | None = None, env: dict[str, str] | None = None, **opts: Any) -> Outcome:
    delays: list[float] = []
    notices: list[str] = []

    async def asleep(d: float) -> None:
        delays.append(d)

    with FakeProvider({"replies": replies, "require_key": KEY}) as fp:
        base = fp.url + "/v1" if vendor == "openai" else fp.url
        e = {k: v.replace("FAKE", fp.url) for k, v in (env or {}).items()}
        opts = {"max_attempts": 4, "backoff_base": 0.01, "stall_timeout": 4.0, "sleep": delays.append, "asleep": asleep,
                "on_notice": notices.append, **opts}
        model = open_model(spec or VENDORS[vendor], base_url=base, api_key=KEY, env=e, **opts)
        reg = Registry([add])
        budget = Budget(max_usd_micros=usd(cap), max_steps=10)
        cfg = dataclasses.replace(make_config(model, reg, budget, max_output_tokens=max_out), max_continuations=model.max_continuations)
        path = tmp_path / f"{vendor}.jsonl"
        with TranscriptWriter(path) as w:
            if use_async:
                res = asyncio.run(arun(model, reg, "What is 2+3?", budget, transcript=w, config=cfg))
            else:
                res = run(model, reg, "What is 2+3?", budget, transcript=w, config=cfg)
        reqs = [r for r in fp.requests if r["protocol"]]
    report = verify_file(path)
    assert report.ok, report.problems
    rep = replay(path, tools=[add])  # and the recorded run replays byte for byte, faults and all
    assert rep.equal, rep.summary(str(path))
    recs = list(read_records(path))
    assert res.spent_micros <= usd(cap)
    data = path.read_bytes()
    assert KEY.encode() not in data
    assert KEY not in (res.error or "") and not any(KEY in n for n in notices)
    return Outcome(res, reqs, delays, notices, data, [r.kind for r in recs], [r.payload for r in recs if r.kind == "model_turn"])


def recovered(o: Outcome) -> None:
    assert o.result.stop_reason == "no_tool_calls", o.result.error
    assert o.result.answer.endswith("The sum is 5.")
    assert o.result.steps >= 2


@pytest.fixture(params=sorted(VENDORS))
def vendor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_clean_run_over_http_records_usage_and_the_model_that_answered(tmp_path: Path, vendor: str) -> None:
    o = drive(tmp_path, vendor, OK)
    recovered(o)
    assert len(o.requests) == 2 and not o.delays and not o.notices
    for t in o.turns:
        u = t["reply"]["usage"]
        assert u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"] > 0 and u["output_tokens"] > 0
        assert not t["usage_estimated"]
    assert o.turns[0]["reply"]["model"] == VENDORS[vendor].split(":")[1]
    assert o.turns[0]["reply"]["tool_calls"][0]["arguments"] == {"a": 2, "b": 3}


def test_429_waits_for_retry_after_then_recovers(tmp_path: Path, vendor: str) -> None:
    o = drive(tmp_path, vendor, [{"fault": "429", "retry_after": 0.25}, *OK])
    recovered(o)
    assert o.delays == [0.25] and len(o.requests) == 3
    assert "rate limited (429)" in o.notices[0]


@pytest.mark.parametrize("fault", ["500", "529"])
def test_server_errors_back_off_with_jitter_then_recover(tmp_path: Path, vendor: str, fault: str) -> None:
    o = drive(tmp_path, vendor, [{"fault": fault}, {"fault": fault}, *OK], backoff_base=0.4)
    recovered(o)
    assert len(o.delays) == 2 and 0 <= o.delays[0] <= 0.4 and 0 <= o.delays[1] <= 0.8
    assert len(set(o.delays)) == 2  # jittered, not fixed


def test_repeated_server_errors_end_in_a_stated_model_error(tmp_path: Path, vendor: str) -> None:
    o = drive(tmp_path, vendor, [{"fault": "500"}] * 3, max_attempts=3)
    assert o.result.stop_reason == "model_error"
    assert "gave up after 3 attempts" in (o.result.error or "") and "server error 500" in (o.result.error or "")
    assert len(o.requests) == 3 and "model_error" in o.kinds


def test_overloaded_primary_falls_back_with_a_notice(tmp_path: Path, vendor: str) -> None:
    fb = {"openai": "openai:gpt-4.1-nano", "anthropic": "anthropic:claude-sonnet-4-6"}[vendor]
    o = drive(tmp_path, vendor, [{"fault": "529"}, {"fault": "529"}, *OK], max_attempts=2, spec=None, fallback=fb)
    recovered(o)
    assert [r["body"]["model"] for r in o.requests] == [VENDORS[vendor].split(":")[1]] * 2 + [fb.split(":")[1]] * 2
    assert any("falling back to " + fb in n for n in o.notices)
    assert o.turns[0]["reply"]["model"] == fb.split(":")[1]  # visible in the record


def test_fallback_to_the_other_vendor_speaks_its_protocol(tmp_path: Path) -> None:
    o = drive(tmp_path, "openai", [{"fault": "500"}, CALL, DONE], max_attempts=1, fallback="anthropic:claude-haiku-4-5",
              env={"ANTHROPIC_BASE_URL": "FAKE", "ANTHROPIC_API_KEY": KEY})
    recovered(o)
    assert [r["protocol"] for r in o.requests] == ["openai", "anthropic", "anthropic"]


@pytest.mark.parametrize("fault", ["stall", "cut", "malformed", "error_event"])
def test_broken_streams_are_aborted_and_retried(tmp_path: Path, vendor: str, fault: str) -> None:
    first = {**CALL, "fault": fault, "stall_seconds": 8, "chunk_size": 2}
    o = drive(tmp_path, vendor, [first, *OK])
    recovered(o)
    assert len(o.requests) == 3 and len(o.notices) == 1
    words = {"stall": "no event", "cut": "", "malformed": "malformed", "error_event": "stream error"}[fault]
    assert words in o.notices[0]


def test_a_billed_broken_attempt_is_counted_and_shrinks_the_retry(tmp_path: Path, vendor: str) -> None:
    clean = drive(tmp_path / "a", vendor, OK) if (tmp_path / "a").mkdir() is None else None
    o = drive(tmp_path, vendor, [{**CALL, "fault": "cut", "chunk_size": 2}, *OK])
    recovered(o)
    assert clean is not None
    u_clean = clean.turns[0]["reply"]["usage"]
    u_retry = o.turns[0]["reply"]["usage"]
    # the cut attempt's tokens are in the first turn's usage: the record says what was spent
    assert u_retry["input_tokens"] + u_retry["output_tokens"] > u_clean["input_tokens"] + u_clean["output_tokens"]
    field = "max_tokens" if vendor == "anthropic" else "max_tokens"
    assert o.requests[1]["body"][field] < o.requests[0]["body"][field] == 400


def test_a_retry_that_would_pass_the_reservation_is_not_made(tmp_path: Path, vendor: str) -> None:
    big = {**CALL, "fault": "cut", "chunk_size": 2, "usage": {"input_tokens": 500}}
    o = drive(tmp_path, vendor, [big, *OK], max_out=40)
    assert o.result.stop_reason == "model_error"
    assert "would spend past this call's reservation" in (o.result.error or "")
    assert len(o.requests) == 1
    # the cut attempt may have been billed: the loop spends it and the record says so
    err = next(r for r in read_records_of(o) if r["kind"] == "model_error")
    # Anthropic reports input at message_start; OpenAI only at the end, so it is estimated from the request
    billed_in = err["payload"]["usage"]["input_tokens"]
    assert billed_in == 500 if vendor == "anthropic" else billed_in >= len(json.dumps(o.requests[0]["body"])) // 5
    assert err["payload"]["cost_micros"] > 0
    assert o.result.spent_micros == err["payload"]["cost_micros"] and o.result.usage.input_tokens == billed_in


def read_records_of(o: Outcome) -> list[dict[str, Any]]:
    return [json.loads(line) for line in o.transcript.splitlines()]


def test_a_turn_cut_at_max_tokens_is_continued(tmp_path: Path, vendor: str) -> None:
    o = drive(tmp_path, vendor, [CALL, {"text": "The sum", "stop_reason": "max_tokens"}, {"text": " is 5."}])
    recovered(o)
    assert o.result.answer == "The sum is 5." and "continuation" in o.kinds
    last = o.requests[-1]["body"]["messages"][-1]
    assert last["role"] == "assistant"  # the cut text goes back as the start of the answer
    assert (last["content"] if vendor == "openai" else last["content"][-1]["text"]) == "The sum"


def test_a_cut_inside_tool_arguments_is_continued_and_the_call_written_again(tmp_path: Path, vendor: str) -> None:
    """A call cut at max_tokens cannot run; the turn is continued (reserved like any other) and the
    model writes the call whole on the next one, instead of the run ending."""
    o = drive(tmp_path, vendor, [{**CALL, "text": "Adding.", "stop_reason": "max_tokens"}, CALL, {"text": "5"}])
    assert o.result.stop_reason == "no_tool_calls" and o.result.answer == "5"
    assert "continuation" in o.kinds and "model_error" not in o.kinds
    assert len(o.requests) == 3
    cut_turn = next(r for r in read_records_of(o) if r["kind"] == "model_turn")
    assert cut_turn["payload"]["reply"]["tool_calls"] == [] and cut_turn["payload"]["reply"]["finish_reason"] == "max_tokens"
    last = o.requests[1]["body"]["messages"][-1]
    assert last["role"] == "assistant"  # the text before the cut goes back as the start of the turn


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("content_type", "content type 'text/html', not an event stream"),
        ("401", "authentication failed (401)"),
        ("quota", "spend limit"),
    ],
)
def test_fatal_answers_stop_at_once_with_the_reason(tmp_path: Path, vendor: str, fault: str, words: str) -> None:
    o = drive(tmp_path, vendor, [{"fault": fault}, *OK])
    assert o.result.stop_reason == "model_error"
    assert words in (o.result.error or ""), o.result.error
    assert len(o.requests) == 1 and not o.delays


def test_a_wrong_key_is_refused_and_never_echoed(tmp_path: Path, vendor: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeProvider({"replies": OK, "require_key": "the-right-key"}) as fp:
        m = open_model(VENDORS[vendor], base_url=fp.url + "/v1", api_key=KEY, env={}, max_attempts=1)
        path = tmp_path / "t.jsonl"
        with TranscriptWriter(path) as w:
            r = run(m, None, "hi", Budget(max_steps=2), transcript=w)
    assert r.stop_reason == "model_error" and "authentication failed" in (r.error or "")
    assert ("OPENAI_API_KEY" if vendor == "openai" else "ANTHROPIC_API_KEY") in (r.error or "")
    assert KEY not in path.read_text() and KEY not in caplog.text and KEY not in (r.error or "")
    assert verify_file(path).ok


def test_the_async_driver_recovers_the_same_way(tmp_path: Path, vendor: str) -> None:
    o = drive(tmp_path, vendor, [{"fault": "429", "retry_after": 0.1}, {**CALL, "fault": "cut"}, *OK], use_async=True)
    recovered(o)
    assert o.delays[0] == 0.1 and len(o.requests) == 4


_PARITY = {
    "backoff": ([{"fault": "500"}, {"fault": "500"}, *OK], {"max_attempts": 3}),
    "gives_up": ([{"fault": "500"}] * 3, {"max_attempts": 3}),
    "retry_after": ([{"fault": "429", "retry_after": 0.25}, *OK], {}),
    "fallback": ([{"fault": "529"}, {"fault": "529"}, *OK], {"max_attempts": 2, "fallback": "FALLBACK"}),
    "reservation": ([{**CALL, "fault": "cut", "chunk_size": 2, "usage": {"input_tokens": 500}}, *OK], {"max_out": 40}),
    "billed_cut": ([{**CALL, "fault": "cut", "chunk_size": 2}, *OK], {}),
}


_PORT = re.compile(r"127\.0\.0\.1:\d+")
"""The fake server's address: each server has its own port."""


def _same_run(o: Outcome) -> list[tuple[str, str]]:
    """The records' kinds and payloads, with the fake server's port taken out."""
    return [(r["kind"], _PORT.sub("HOST", json.dumps(r["payload"], sort_keys=True))) for r in read_records_of(o)]


@pytest.mark.parametrize("case", sorted(_PARITY))
def test_the_async_driver_makes_the_same_attempts_waits_notices_and_records_as_the_sync_one(
    tmp_path: Path, vendor: str, case: str
) -> None:
    """``complete`` and ``acomplete`` share one retry decision: any drift between them shows here."""
    replies, opts = _PARITY[case]
    if opts.get("fallback") == "FALLBACK":
        opts = {**opts, "fallback": {"openai": "openai:gpt-4.1-nano", "anthropic": "anthropic:claude-sonnet-4-6"}[vendor]}
    outs = []
    for use_async in (False, True):
        d = tmp_path / ("async" if use_async else "sync")
        d.mkdir()
        outs.append(drive(d, vendor, replies, use_async=use_async, rand=lambda: 0.5, **opts))
    s, a = outs
    assert a.delays == s.delays
    assert [_PORT.sub("HOST", n) for n in a.notices] == [_PORT.sub("HOST", n) for n in s.notices]
    assert [r["body"] for r in a.requests] == [r["body"] for r in s.requests]
    assert _same_run(a) == _same_run(s)
    assert a.result.stop_reason == s.result.stop_reason and a.result.spent_micros == s.result.spent_micros


def test_text_streams_to_the_observer_as_it_arrives(vendor: str) -> None:
    from agentloop.events import TextDelta

    seen: list[str] = []
    with FakeProvider({"replies": [{"text": "Hello there, streaming world", "chunk_size": 4}]}) as fp:
        m = open_model(VENDORS[vendor], base_url=fp.url + "/v1", env={})
        r = run(m, None, "hi", Budget(max_steps=1), observer=lambda e: seen.append(e.text) if isinstance(e, TextDelta) else None)
    assert r.answer == "Hello there, streaming world"
    assert len(seen) == 7 and "".join(seen) == r.answer


def test_a_dearer_fallback_is_reserved_for_up_front_and_keeps_the_full_allowance(tmp_path: Path) -> None:
    # gpt-4o costs ~16x gpt-4o-mini: the loop reserves every call at the chain's dearest price, so the
    # fallback may write max_tokens and its bill still fits the reservation (budget records: cost <= reserved)
    o = drive(tmp_path, "openai", [{"fault": "500"}, CALL, DONE], max_out=4000, max_attempts=1, fallback="openai:gpt-4o")
    recovered(o)
    assert [r["body"]["model"] for r in o.requests] == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]
    assert [r["body"]["max_tokens"] for r in o.requests] == [4000, 4000, 4000]
    budgets = [json.loads(line)["payload"] for line in o.transcript.splitlines() if json.loads(line)["kind"] == "budget"]
    assert budgets and all(0 < b["cost_micros"] <= b["reserved_micros"] for b in budgets)
    assert budgets[0]["reserved_micros"] >= 4000 * 10  # max_tokens at gpt-4o's $10/Mtok output price, not the mini's $0.60


def test_a_cheaper_fallback_keeps_the_full_allowance(tmp_path: Path) -> None:
    o = drive(tmp_path, "openai", [{"fault": "500"}, CALL, DONE], spec="openai:gpt-4o", max_out=300, max_attempts=1,
              fallback="openai:gpt-4o-mini")
    recovered(o)
    assert [r["body"]["max_tokens"] for r in o.requests[:2]] == [300, 300]


def test_a_fallbacks_turns_are_spent_at_its_own_price(tmp_path: Path) -> None:
    from agentloop.budget import cost_micros
    from agentloop.events import Usage
    from agentloop.prices import default_prices

    o = drive(tmp_path, "openai", [{"fault": "500"}, CALL, DONE], max_out=4000, max_attempts=1, fallback="openai:gpt-4o")
    recovered(o)
    budgets = [json.loads(line)["payload"] for line in o.transcript.splitlines() if json.loads(line)["kind"] == "budget"]
    dear = default_prices().resolve("gpt-4o")
    for t, b in zip(o.turns, budgets):
        assert b["cost_micros"] == cost_micros(Usage.from_json(t["reply"]["usage"]), dear)
