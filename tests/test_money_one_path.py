"""Every provider call spends through one path: hold the bound, read the bill by ``budget.bill``, settle.

A side call (WebFetch's prompt, a compaction summary, a loop check) and a server tool (WebSearch) are
settled exactly as the loop settles its own turns: figures no provider can have billed for the request
(output past ``max_tokens``, tokens past the input's byte bound, searches past ``max_uses``, negative
counts) are charged the whole reservation, recorded as an overrun, and stop the run before its next
call. A token count never lowers a reservation below the byte bound; an interrupted call is charged its
reservation (never 0); a failed one what its attempts were billed, at most its reservation.

Anthropic's web search tool (platform.claude.com, "Web search tool"): ``max_uses`` limits the searches
one request may make; ``usage.server_tool_use.web_search_requests`` counts those billed, $10 per 1,000.
Its Messages API: ``max_tokens`` is the most output tokens the reply may have.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.tools.web_search import MAX_USES, OUTPUT_TOKENS
from agentloop.budget import (
    Budget,
    CallBound,
    Price,
    bill,
    capped_bill,
    cost_micros,
    unreported_bill,
    usd,
)
from agentloop.events import ModelReply, Usage
from agentloop.providers import open_model
from agentloop.providers.web_search import SEARCH_INPUT_BOUND, SEARCH_PRICE_MICROS
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing import FunctionModel, ScriptedModel, reply
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import tool
from agentloop.transcript import TranscriptWriter, read_records, verify_file

PRICE = Price(1_000_000, 5_000_000)


@tool(read_only=True)
def note(text: str) -> str:
    """Keep a note."""
    return "kept"


# --- the one rule -------------------------------------------------------------


@pytest.mark.parametrize(("usage", "uses", "why"), [
    (Usage(10, 101), 0, "output tokens"),
    (Usage(60_000, 1), 0, "input is at most 1000"),
    (Usage(-1, 1), 0, "negative"),
    (Usage(10, 10), 6, "server-tool uses"),
])
def test_figures_beyond_what_the_request_allowed_are_charged_the_whole_reservation(usage: Usage, uses: int, why: str) -> None:
    bound = CallBound(1_000, 100, PRICE, uses=5, use_micros=10_000)
    b = bill(bound, usage, uses)
    assert b.at_reservation and b.cost_micros == bound.micros and why in (b.overrun or "")


def test_believable_figures_are_charged_as_billed() -> None:
    bound = CallBound(1_000, 100, PRICE, uses=5, use_micros=10_000)
    b = bill(bound, Usage(900, 100), 5)
    assert not b.at_reservation and b.overrun is None
    assert b.cost_micros == cost_micros(Usage(900, 100), PRICE) + 5 * 10_000 <= bound.micros


def test_a_failed_calls_estimate_is_charged_at_most_its_reservation_and_no_figures_at_least_its_input() -> None:
    """An OpenAI stream failing mid-reply once reported '74957 tokens already billed of 16384' for a 1,200-token
    prompt: the request's bytes, not a bill. Whatever a failure estimates, the call costs at most its reservation."""
    bound = CallBound(1_200, 16_384, PRICE)
    capped = capped_bill(bound, Usage(74_957, 0))
    assert capped.cost_micros <= bound.micros and capped.usage.input_tokens == 1_200
    none = unreported_bill(bound, 0)
    assert none.usage.input_tokens == 1_200 and 0 < none.cost_micros <= bound.micros


# --- the loop's own turns ------------------------------------------------------


def test_a_reply_with_more_output_than_max_tokens_is_charged_its_reservation_as_an_overrun(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    model = FunctionModel(lambda req: ModelReply("x", usage=Usage(10, req.max_output_tokens + 1)))
    with TranscriptWriter(path) as w:
        r = run(model, [note], "go", Budget(max_steps=3, max_usd_micros=50_000), transcript=w, max_output_tokens=100,
                prices={"scripted": PRICE})
    assert r.stop_reason == "budget_overrun" and "output tokens" in (r.error or "")
    (over,) = [x.payload for x in read_records(path) if x.kind == "overrun"]
    assert over["billed_at_reservation"] and r.spent_micros == over["cost_micros"] == over["reserved_micros"] > 0
    assert replay(path).equal


def test_an_interrupt_while_the_model_answers_is_charged_the_calls_reservation_and_replays(tmp_path: Path) -> None:
    """Esc or Ctrl+C during a streaming reply: the provider bills what it read; the call is never charged 0."""
    def ctrl_c(req: Any) -> ModelReply:
        raise KeyboardInterrupt

    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(ScriptedModel([reply("", [("note", {"text": "a"})], usage=(10, 1)), ctrl_c]), [note], "go",
                Budget(max_steps=5, max_usd_micros=1_000_000), transcript=w, prices={"scripted": PRICE})
    recs = list(read_records(path))
    (err,) = [x.payload for x in recs if x.kind == "model_error"]
    first = [x.payload for x in recs if x.kind == "budget"][0]
    assert r.stop_reason == "interrupted" and err["interrupted"] is True and err["cost_micros"] > 0
    assert r.spent_micros == first["cost_micros"] + err["cost_micros"]
    assert replay(path).equal


def test_an_interrupt_between_calls_charges_nothing_more(tmp_path: Path) -> None:
    @tool(read_only=True)
    def stop_now(text: str) -> str:
        """Interrupt."""
        raise KeyboardInterrupt

    with TranscriptWriter(tmp_path / "t.jsonl") as w:
        r = run(ScriptedModel([reply("", [("stop_now", {"text": "a"})], usage=(10, 1))]), [stop_now], "go",
                Budget(max_steps=5, max_usd_micros=1_000_000), transcript=w, prices={"scripted": PRICE})
    assert r.stop_reason == "interrupted" and r.spent_micros == cost_micros(Usage(10, 1), PRICE)
    assert not [x for x in read_records(tmp_path / "t.jsonl") if x.kind == "model_error"]


def test_an_interrupted_stream_from_a_real_provider_is_charged_not_zero(tmp_path: Path) -> None:
    """The fake streams slowly; the text callback interrupts after the first delta, as Esc does."""
    seen: list[str] = []

    def observer(ev: Any) -> None:
        if type(ev).__name__ == "TextDelta":
            seen.append(ev.text)
            raise KeyboardInterrupt

    path = tmp_path / "t.jsonl"
    with FakeProvider({"replies": [{"text": "a long answer " * 20, "chunk_size": 4, "chunk_delay": 0.01}]}) as fp:
        m = open_model("openai:gpt-4o-mini", base_url=fp.url + "/v1", env={}, max_attempts=1)
        with TranscriptWriter(path) as w:
            r = run(m, [], "go", Budget(max_steps=2, max_usd_micros=1_000_000), transcript=w, max_output_tokens=500, observer=observer)
    assert seen and r.stop_reason == "interrupted" and r.spent_micros > 0
    assert verify_file(path).ok


# --- WebSearch and WebFetch ------------------------------------------------------


def _search_agent(tmp_path: Path, replies: list[dict[str, Any]]) -> tuple[Agent, Any]:
    cwd = tmp_path / "proj"
    (cwd / ".claude").mkdir(parents=True, exist_ok=True)
    (cwd / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["WebSearch", "WebFetch(domain:127.0.0.1)"]}}))
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model="anthropic:claude-sonnet-4-5", base_url=fp.url, env={},
                  max_usd_micros=usd("1"), trust=True)
        try:
            r = a.ask("look it up")
        finally:
            a.close("prompt_input_exit")
        return a, (r, [q["body"] for q in fp.requests if q["protocol"]])


SEARCHED = {"web_search": [{"query": "widget", "results": [{"url": "https://docs.widget.dev/", "title": "Widget"}]}], "text": "found"}


@pytest.mark.parametrize("lie", [{"web_search_requests": 1_000}, {"output_tokens": 100_000}, {"output_tokens": -5}],
                         ids=["1000 searches", "100000 output tokens", "negative output"])
def test_a_web_search_reporting_more_than_its_request_allowed_is_charged_its_reservation_and_stops_the_run(
    tmp_path: Path, lie: dict[str, Any]
) -> None:
    """1,000 searches against max_uses 5 (or 100,000 output tokens against max_tokens 2,048) once cost $10.77 under
    a $1 cap: now the search is charged its bound and the run stops before its next call."""
    call = {"tool_calls": [{"name": "WebSearch", "arguments": {"query": "widget"}}]}
    a, (r, bodies) = _search_agent(tmp_path, [call, {**SEARCHED, "usage": lie}, {"text": "never asked"}])
    recs = list(read_records(a.session.path))
    (side,) = [x.payload for x in recs if x.kind == "side_cost"]
    haiku = a.prices.resolve("claude-haiku-4-5")
    bound = CallBound(SEARCH_INPUT_BOUND, OUTPUT_TOKENS, haiku, uses=MAX_USES, use_micros=SEARCH_PRICE_MICROS)
    assert side["purpose"] == "web_search" and side["cost_micros"] == bound.micros == side["reserved_micros"]
    assert "overrun" in side and r.stop_reason == "budget_overrun"
    assert len(bodies) == 2  # the turn and the search; nothing after the lie
    assert r.spent_micros <= usd("1")
    assert replay(a.session.path).equal


PAGE = b"<html><body><h1>Installing</h1><p>Run pip install widget.</p></body></html>"


class _Site(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture
def site() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/page"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("lie", [{"output_tokens": 100_000}, {"input_tokens": 10_000_000}, {"input_tokens": -1}],
                         ids=["output", "input", "negative"])
def test_a_webfetch_prompt_call_with_figures_it_cannot_have_been_billed_is_charged_its_reservation(
    tmp_path: Path, site: str, lie: dict[str, Any]
) -> None:
    """Twenty such calls were once recorded at $0 each while the server billed $0.877 under a $0.50 cap."""
    call = {"tool_calls": [{"name": "WebFetch", "arguments": {"url": site, "prompt": "How?"}}]}
    a, (r, bodies) = _search_agent(tmp_path, [call, {"text": "pip install widget", "usage": lie}, {"text": "never asked"}])
    (side,) = [x.payload for x in read_records(a.session.path) if x.kind == "side_cost"]
    assert side["purpose"] == "web_fetch" and side["cost_micros"] == side["reserved_micros"] > 0 and "overrun" in side
    assert r.stop_reason == "budget_overrun" and len(bodies) == 2
    assert replay(a.session.path).equal


def test_a_compaction_summary_with_more_output_than_asked_is_charged_its_reservation(tmp_path: Path) -> None:
    from agentloop.agent.context.compaction import Compactor

    @tool(read_only=True)
    def big(n: int) -> str:
        """A big result."""
        return f"{n}:" + "y" * 3000

    cm = Compactor(window=1000, keep_recent=1, mask_threshold=100, transcript_path=str(tmp_path / "t.jsonl"),
                   summarizer=ScriptedModel([reply("summary", usage=(10, 10**6))]))
    steps = [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(4)]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(ScriptedModel(steps), [big], [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
                Budget(max_steps=10, max_usd_micros=10_000_000), transcript=w, prepare=cm.prepare)
    (side,) = [x.payload for x in read_records(path) if x.kind == "side_cost"]
    assert side["cost_micros"] == side["reserved_micros"] and "output tokens" in side["overrun"]
    assert r.stop_reason == "budget_overrun"
    assert replay(path).equal


def test_an_openai_stream_failing_mid_reply_is_charged_at_most_its_reservation(tmp_path: Path) -> None:
    """OpenAI reports usage only at the end: a stream cut before it is estimated from the request's bytes
    (framing and all), which may pass the reservation; the call is charged at most what it reserved."""
    from agentloop.budget import input_bound, reservation_micros
    from agentloop.prices import default_prices

    msgs: list[dict[str, Any]] = [{"role": "system", "content": "rules " * 200}, {"role": "user", "content": "go"}]
    price = default_prices().resolve("gpt-4o-mini")
    reserved = reservation_micros(input_bound(msgs), 40, price)
    path = tmp_path / "t.jsonl"
    with FakeProvider({"replies": [{"text": "x" * 400, "fault": "cut", "chunk_size": 2}]}) as fp, TranscriptWriter(path) as w:
        m = open_model("openai:gpt-4o-mini", base_url=fp.url + "/v1", env={}, max_attempts=1)
        r = run(m, [], msgs, Budget(max_steps=2, max_usd_micros=reserved), transcript=w, max_output_tokens=40)
    (err,) = [x.payload for x in read_records(path) if x.kind == "model_error"]
    assert r.stop_reason == "model_error" and 0 < r.spent_micros <= reserved, (r.spent_micros, reserved, err)
    assert replay(path).equal
