"""The loop: budgets hold before the spend, the precedence of stops, determinism."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop import Budget, LocalLedger, MemoryTranscript, Price, PriceTable, arun, run, tool, usd
from agentloop.events import ModelReply, ModelRequest, Usage
from agentloop.loop import LoopConfig, ModelReplied, Reserved, start, step
from agentloop.testing import (
    FunctionModel,
    ScriptedModel,
    UnconsumedModelSteps,
    UnexpectedModelCall,
    reply,
)
from agentloop.tools import Registry
from agentloop.transcript import TranscriptWriter, verify_file

ran: list[str] = []


@tool
def note(text: str) -> str:
    """Remember a note."""
    ran.append(text)
    return "noted"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def kinds(t: MemoryTranscript) -> list[str]:
    return [r.kind for r in t.records]


def test_an_answer_stops_with_no_tool_calls() -> None:
    with ScriptedModel([reply("", [("note", {"text": "a"})]), reply("the answer")]) as m:
        t = MemoryTranscript()
        r = run(m, [note], "q", Budget(max_steps=5), transcript=t)
    assert (r.stop_reason, r.answer, r.steps) == ("no_tool_calls", "the answer", 2)
    assert kinds(t) == ["run_start", "model_turn", "budget", "tool_result", "model_turn", "budget", "stop"]


def test_two_identical_runs_write_byte_identical_files(tmp_path: Path) -> None:
    def once(path: Path) -> bytes:
        m = ScriptedModel([reply("", [("note", {"text": "x"}), ("nope", {})], step=1), reply("done")])
        with TranscriptWriter(path) as w:
            run(m, [note], "q", Budget(max_steps=5, max_usd_micros=usd("1")), transcript=w, run_id="r1")
        return path.read_bytes()

    assert once(tmp_path / "a.jsonl") == once(tmp_path / "b.jsonl")


def test_the_async_driver_writes_the_same_bytes_as_the_sync_one() -> None:
    script = [reply("", [("note", {"text": "x"})], step=1), reply("done")]
    a, b = MemoryTranscript(), MemoryTranscript()
    run(ScriptedModel(list(script)), [note], "q", Budget(max_steps=5), transcript=a)
    asyncio.run(arun(ScriptedModel(list(script)), [note], "q", Budget(max_steps=5), transcript=b))
    assert a.getvalue() == b.getvalue()


def _fails(req: ModelRequest) -> ModelReply:
    raise RuntimeError("the model broke")


_PRICES = PriceTable({"scripted": Price(1_000_000, 1_000_000)})
_DRIVER_CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "prepare_stops": (lambda: ScriptedModel([reply("", [("note", {"text": "x"})], step=1), reply("done")]),
                      {"prepare": lambda st, rec: "loop_detected" if st.steps >= 1 else None}),
    "ledger_refuses": (lambda: ScriptedModel([]), {"ledger": LocalLedger(max_usd_micros=10)}),
    "ledger_settles": (lambda: ScriptedModel([reply("", [("note", {"text": "x"})], usage=(10, 10)), reply("done", usage=(10, 10))]),
                       {"ledger": LocalLedger(max_usd_micros=usd("1"))}),
    "cost_budget": (lambda: FunctionModel(lambda req: reply("", [("note", {"text": "n"})], usage=(100, 100))),
                    {"budget": Budget(max_usd_micros=5_000), "prices": _PRICES, "max_output_tokens": 1000}),
    "model_error": (lambda: FunctionModel(_fails), {}),
    "sentinel": (lambda: ScriptedModel([reply("", [("note", {"text": "x"})]), reply("DONE")]), {"sentinel": "DONE"}),
}


_DRIVER_STOPS = {"prepare_stops": "loop_detected", "ledger_refuses": "cost_budget", "ledger_settles": "no_tool_calls",
                 "cost_budget": "cost_budget", "model_error": "model_error", "sentinel": "sentinel"}


@pytest.mark.parametrize("case", sorted(_DRIVER_CASES))
def test_the_async_driver_stops_records_and_settles_as_the_sync_one(case: str) -> None:
    """``run`` and ``arun`` share their driving (prepare, ledger, stops): the same bytes and result."""
    make, kw = _DRIVER_CASES[case]
    kw = {"budget": Budget(max_steps=5), **kw}
    a, b = MemoryTranscript(), MemoryTranscript()
    ledger = kw.get("ledger")
    ra = run(make(), [note], "q", transcript=a, **kw)
    spent = (ledger.spent, ledger.reserved, ledger.refusals) if ledger is not None else None
    if ledger is not None:
        kw["ledger"] = LocalLedger(max_usd_micros=ledger.max_usd_micros)
    rb = asyncio.run(arun(make(), [note], "q", transcript=b, **kw))
    assert ra.stop_reason == _DRIVER_STOPS[case]
    assert a.getvalue() == b.getvalue()
    assert dataclasses.replace(ra, messages=[]) == dataclasses.replace(rb, messages=[]) and ra.messages == rb.messages
    if ledger is not None:
        assert (kw["ledger"].spent, kw["ledger"].reserved, kw["ledger"].refusals) == spent


@pytest.mark.parametrize("cap", [0, 1, 2, 5])
def test_the_step_budget_is_never_exceeded_and_equals_the_model_records(cap: int) -> None:
    def forever(req: ModelRequest) -> ModelReply:
        if m.calls > cap + 5:
            raise AssertionError("the step budget did not stop the run")
        return reply("", [("note", {"text": "again"})])

    m = FunctionModel(forever)
    t = MemoryTranscript()
    r = run(m, [note], "loop", Budget(max_steps=cap), transcript=t)
    assert r.stop_reason == "step_budget"
    assert r.steps == m.calls == kinds(t).count("model_turn") == cap


def test_the_step_budget_stops_before_the_model_is_called() -> None:
    m = ScriptedModel([])
    r = run(m, [note], "q", Budget(max_steps=0))
    assert r.stop_reason == "step_budget" and m.calls == 0


def test_the_token_budget_records_the_turn_and_does_not_run_its_tools() -> None:
    m = ScriptedModel([reply("", [("note", {"text": "never"})], usage=(500, 600))])
    t = MemoryTranscript()
    r = run(m, [note], "q", Budget(max_tokens=1000), transcript=t)
    assert r.stop_reason == "token_budget" and ran == []
    assert "model_turn" in kinds(t) and "tool_result" not in kinds(t)


def test_the_cost_budget_stops_before_the_call_when_the_reservation_does_not_fit() -> None:
    m = ScriptedModel([])
    prices = PriceTable({"scripted": Price(1_000_000, 1_000_000)})
    # 4096 output tokens at $1/Mtok reserve 4,096 micro-USD: more than the cap.
    r = run(m, [note], "q", Budget(max_usd_micros=4_000), prices=prices)
    assert r.stop_reason == "cost_budget" and m.calls == 0 and r.spent_micros == 0
    assert "reservation" in (r.error or "")


def test_the_cost_budget_never_lets_settled_spend_pass_the_cap() -> None:
    prices = PriceTable({"scripted": Price(1_000_000, 1_000_000)})
    m = FunctionModel(lambda req: reply("", [("note", {"text": "n"})], usage=(100, 100)))
    r = run(m, [note], "q", Budget(max_usd_micros=5_000), prices=prices, max_output_tokens=1000)
    assert r.stop_reason == "cost_budget" and r.spent_micros <= 5_000


def test_a_shared_ledger_that_refuses_stops_the_run_with_cost_budget() -> None:
    ledger = LocalLedger(max_usd_micros=10)
    m = ScriptedModel([])
    r = run(m, [note], "q", Budget(max_steps=3), ledger=ledger)
    assert r.stop_reason == "cost_budget" and m.calls == 0 and ledger.refusals == 1 and ledger.reserved == 0


def test_a_shared_ledger_is_settled_with_the_real_cost() -> None:
    ledger = LocalLedger(max_usd_micros=usd("1"))
    with ScriptedModel([reply("done", usage=(10, 10))]) as m:
        r = run(m, [note], "q", Budget(max_steps=3), ledger=ledger)
    assert ledger.spent == r.spent_micros > 0 and ledger.reserved == 0


def test_sentinel_beats_tool_calls_in_the_same_turn() -> None:
    with ScriptedModel([reply("DONE", [("note", {"text": "never"})])]) as m:
        r = run(m, [note], "q", Budget(max_steps=3), sentinel="DONE")
    assert r.stop_reason == "sentinel" and ran == []


def test_sentinel_beats_the_token_budget() -> None:
    with ScriptedModel([reply("DONE", usage=(10_000, 10_000))]) as m:
        r = run(m, [note], "q", Budget(max_tokens=10), sentinel="DONE")
    assert r.stop_reason == "sentinel"


def test_no_tool_calls_beats_the_token_budget() -> None:
    with ScriptedModel([reply("fine", usage=(10_000, 10_000))]) as m:
        r = run(m, [note], "q", Budget(max_tokens=10))
    assert r.stop_reason == "no_tool_calls"


def test_token_budget_stops_a_turn_billed_within_its_reservation() -> None:
    prices = PriceTable({"scripted": Price(1_000_000, 1_000_000)})
    with ScriptedModel([reply("", [("note", {"text": "n"})], usage=(50, 5))]) as m:
        r = run(m, [note], "q", Budget(max_tokens=10, max_usd_micros=usd("0.05")), prices=prices, max_output_tokens=10)
    assert r.stop_reason == "token_budget"


def test_a_model_that_raises_ends_the_run_with_model_error() -> None:
    m = ScriptedModel([RuntimeError("provider down")])
    t = MemoryTranscript()
    r = run(m, [note], "q", Budget(max_steps=3), transcript=t)
    assert r.stop_reason == "model_error" and "provider down" in (r.error or "")
    assert kinds(t)[-2:] == ["model_error", "stop"]


def test_a_model_that_returns_something_else_ends_with_model_error() -> None:
    m = FunctionModel(lambda req: {"text": "hi"})  # type: ignore[arg-type,return-value]
    r = run(m, [note], "q", Budget(max_steps=3))
    assert r.stop_reason == "model_error" and "not a ModelReply" in (r.error or "")


def test_the_scripted_model_fails_loudly_past_its_end_and_with_steps_left() -> None:
    m = ScriptedModel([reply("", [("note", {"text": "a"})])])
    r = run(m, [note], "q", Budget(max_steps=5))
    assert r.stop_reason == "model_error" and "UnexpectedModelCall" in (r.error or "")
    with pytest.raises(UnexpectedModelCall):
        m.check()
    left = ScriptedModel([reply("a"), reply("b")])
    with pytest.raises(UnconsumedModelSteps):
        with left:
            run(left, [note], "q", Budget(max_steps=5))


def test_the_budget_is_required() -> None:
    with pytest.raises(TypeError, match="budget"):
        run(ScriptedModel([]), [note], "q", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unlimited"):
        Budget()


def test_an_unlimited_budget_is_written_in_the_transcript() -> None:
    t = MemoryTranscript()
    with ScriptedModel([reply("ok")]) as m:
        run(m, [note], "q", Budget.unlimited(), transcript=t)
    assert t.records[0].payload["config"]["budget"]["unlimited"] is True


def test_a_model_missing_from_the_price_table_costs_the_highest_price() -> None:
    prices = PriceTable({"cheap": Price(1, 1), "dear": Price(9_000_000, 2_000_000, 7, 8), "mid": Price(5, 30_000_000)})
    t = MemoryTranscript()
    with ScriptedModel([reply("ok", usage=(1_000_000, 1_000_000))], name="unknown-model") as m:
        r = run(m, [note], "q", Budget.unlimited(), prices=prices, transcript=t)
    assert t.records[0].payload["config"]["price"] == {"input": 9_000_000, "output": 30_000_000, "cache_read": 7, "cache_write": 8}
    assert r.spent_micros == 39_000_000


def test_usage_is_taken_at_its_bound_when_the_model_reports_none() -> None:
    from agentloop.budget import MESSAGE_ALLOWANCE, input_bound

    t = MemoryTranscript()
    with ScriptedModel([reply("x" * 400)]) as m:
        r = run(m, [note], "q" * 40, Budget.unlimited(), transcript=t)
    turn = t.records[1].payload
    assert turn["usage_estimated"] is True
    # input: the reservation's bound; output: the reply's bytes and framing (never more than max_tokens)
    assert r.usage.output_tokens == 400 + MESSAGE_ALLOWANCE
    assert r.usage.input_tokens == input_bound([{"role": "user", "content": "q" * 40}], Registry([note]).specs())


def test_tool_results_go_back_to_the_model_in_order() -> None:
    seen: list[Any] = []

    def script(req: ModelRequest) -> ModelReply:
        seen.append([m for m in req.messages if m["role"] == "tool"])
        if len(seen) == 1:
            return reply("", [("note", {"text": "1"}), ("missing", {}), ("note", {"text": 3})])
        return reply("done")

    run(FunctionModel(script), [note], "q", Budget(max_steps=5))
    tool_msgs = seen[1]
    assert [m["ok"] for m in tool_msgs] == [True, False, False]
    assert tool_msgs[1]["content"].startswith("ERROR: no tool named 'missing'")
    assert "$.text" in tool_msgs[2]["content"]


def test_the_loop_is_a_state_machine_that_refuses_out_of_order_events() -> None:
    cfg = LoopConfig(model="m", budget=Budget(max_steps=2), price=Price(0, 0))
    state, out = start(cfg, [{"role": "user", "content": "q"}])
    assert [type(o).__name__ for o in out] == ["Append", "Reserve"]
    with pytest.raises(ValueError, match="phase"):
        step(state, ModelReplied(ModelReply("x")))
    state, out = step(state, Reserved(True))
    assert [type(o).__name__ for o in out] == ["CallModel"]


def test_loop_threshold_stops_identical_repeats_but_not_varied_ones() -> None:
    same = FunctionModel(lambda req: reply("", [("note", {"text": "same"})]) if same.calls < 50 else reply("stop"))
    r = run(same, [note], "q", Budget(max_steps=50), loop_threshold=5)
    assert r.stop_reason == "loop_detected" and r.steps == 5
    n = iter(range(1000))
    varied = FunctionModel(lambda req: reply("", [("note", {"text": f"v{next(n)}"})]))
    r2 = run(varied, [note], "q", Budget(max_steps=20), loop_threshold=5)
    assert r2.stop_reason == "step_budget"


def test_every_record_of_a_run_is_json_with_integer_money(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with TranscriptWriter(p) as w, ScriptedModel([reply("", [("note", {"text": "a"})], usage=(3, 4)), reply("ok", usage=(5, 6))]) as m:
        run(m, [note], "q", Budget(max_usd_micros=usd("0.5")), transcript=w)
    assert verify_file(p).ok
    for line in p.read_bytes().splitlines():
        rec = orjson.loads(line)
        for key, value in rec["payload"].items() if isinstance(rec["payload"], dict) else []:
            if "micros" in key:
                assert isinstance(value, int)


def test_observer_sees_text_tools_and_the_stop() -> None:
    events: list[str] = []
    with ScriptedModel([reply("thinking", [("note", {"text": "a"})]), reply("done")]) as m:
        run(m, [note], "q", Budget(max_steps=5), observer=lambda e: events.append(type(e).__name__))
    assert events == ["TextDelta", "TurnRecorded", "ToolStarted", "ToolFinished", "TextDelta", "TurnRecorded", "Stopped"]


def test_usage_adds_up_over_the_run() -> None:
    with ScriptedModel([reply("", [("note", {"text": "a"})], usage=Usage(1, 2, 3, 4)), reply("ok", usage=Usage(10, 20, 30, 40))]) as m:
        r = run(m, Registry([note]), "q", Budget.unlimited())
    assert r.usage == Usage(11, 22, 33, 44) and r.tokens == 110


def test_the_fast_event_makers_build_what_the_constructors_build_and_stay_frozen() -> None:
    import dataclasses

    from agentloop import events

    call = events.ToolCall("c1", "add", {"a": 1})
    usage = events.Usage(1, 2, 3, 4)
    cases: list[tuple[Any, tuple[Any, ...]]] = [
        (events.ToolCall, ("c1", "add", {"a": 1})),
        (events.Usage, (1, 2, 3, 4)),
        (events.ModelReply, ("hi", (call,), usage, "m", "stop", {"raw": True}, ({"type": "thinking", "thinking": "t", "signature": "s"},), "chatcmpl-1")),
        (events.ToolResult, ("c1", "add", False, None, "boom", {"type": "ValueError"})),
    ]
    for cls, values in cases:
        made = events._maker(cls)(*values)
        assert type(made) is cls and made == cls(*values)
        assert [getattr(made, f.name) for f in dataclasses.fields(cls)] == list(values)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, dataclasses.fields(cls)[0].name, "changed")
    reply = events.ModelReply("hi", (call,), usage, "m", "stop")
    assert events.ModelReply.from_json(reply.to_json()) == reply
    assert "reasoning" not in reply.to_json()  # only a reply with reasoning records the key
    thought = events.ModelReply("hi", (call,), usage, "m", "stop", None, ({"type": "thinking", "thinking": "t", "signature": "s"},))
    assert events.ModelReply.from_json(thought.to_json()) == thought
    result = events.ToolResult("c1", "add", True, {"sum": 3})
    assert events.ToolResult.from_json(result.to_json()) == result
    assert events.Usage.from_json(usage.to_json()) == usage
