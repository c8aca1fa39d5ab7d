"""The loop's state machine, driven by hand: one inbound event in, the outbound requests out.

These tests call ``loop.start`` and ``loop.step`` directly, with no driver,
so each transition of the rules in ``agentloop/loop.py`` is pinned on its
own: what is recorded, in what order, and what is asked of the driver next.
The amounts reserved are the loop's business (``budget``); here only their
presence, order and relation to the cap are checked.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentloop.budget import Budget, Price
from agentloop.events import ModelReply, ToolCall, ToolResult, ToolSpec, Usage
from agentloop.loop import (
    Append,
    CallModel,
    Finished,
    LoopConfig,
    ModelFailed,
    ModelReplied,
    Reserve,
    Reserved,
    RunTools,
    Settle,
    State,
    ToolsDone,
    start,
    step,
)

ECHO = ToolSpec("echo", "Echo the text.", {"type": "object", "properties": {"text": {"type": "string"}}}, True)


def _cfg(**budget: Any) -> LoopConfig:
    b = Budget(**{"max_steps": 5, "max_usd_micros": 1_000_000, **budget})
    return LoopConfig(model="m", budget=b, price=Price(1_000_000, 2_000_000), tools=(ECHO,), manifest=({"name": "echo"},))


def _kinds(out: list[Any]) -> list[str]:
    return [o.kind if isinstance(o, Append) else type(o).__name__ for o in out]


def _to_call(cfg: LoopConfig) -> State:
    """A run started and its first reservation granted: the loop waits for the model."""
    state, out = start(cfg, [{"role": "user", "content": "hi"}])
    assert _kinds(out) == ["run_start", "Reserve"]
    state, out = step(state, Reserved(True))
    assert _kinds(out) == ["CallModel"]
    return state


def test_start_records_the_run_then_asks_to_reserve_before_any_call() -> None:
    state, out = start(_cfg(), [{"role": "user", "content": "hi"}])
    assert isinstance(out[0], Append) and out[0].kind == "run_start"
    assert out[0].payload["messages"] == [{"role": "user", "content": "hi"}]
    assert isinstance(out[1], Reserve) and out[1].amount_micros > 0
    assert state.phase == "reserve" and state.steps == 0


def test_a_granted_reservation_asks_for_the_model_with_the_messages_and_tools() -> None:
    state, out = start(_cfg(), [{"role": "user", "content": "hi"}])
    state, out = step(state, Reserved(True))
    (call,) = out
    assert isinstance(call, CallModel)
    assert call.request.messages is state.messages and [t.name for t in call.request.tools] == ["echo"]


def test_a_refused_reservation_stops_with_cost_budget_and_no_call() -> None:
    state, _ = start(_cfg(), [{"role": "user", "content": "hi"}])
    state, out = step(state, Reserved(False))
    assert _kinds(out) == ["stop", "Finished"]
    assert out[0].payload["reason"] == "cost_budget" and "refused" in out[0].payload["error"]  # type: ignore[union-attr]
    assert state.done and state.steps == 0


def test_a_reservation_that_does_not_fit_the_cap_stops_before_asking_the_ledger() -> None:
    state, out = start(_cfg(max_usd_micros=1), [{"role": "user", "content": "hi"}])
    assert _kinds(out) == ["run_start", "stop", "Finished"]
    assert out[1].payload["reason"] == "cost_budget"  # type: ignore[union-attr]


def test_a_reply_with_calls_records_the_turn_settles_and_asks_for_the_tools() -> None:
    state = _to_call(_cfg())
    call = ToolCall("c1", "echo", {"text": "x"})
    state, out = step(state, ModelReplied(ModelReply("", (call,), Usage(10, 5))))
    assert _kinds(out) == ["model_turn", "Settle", "budget", "RunTools"]
    settle = out[1]
    assert isinstance(settle, Settle) and settle.actual_micros == 10 * 1 + 5 * 2  # 1 and 2 µUSD a token
    assert isinstance(out[3], RunTools) and out[3].calls == (call,)
    assert state.phase == "tools" and state.steps == 1 and state.spent_micros == 20


def test_tool_results_are_recorded_in_call_order_then_the_next_turn_reserves() -> None:
    state = _to_call(_cfg())
    calls = (ToolCall("a", "echo", {"text": "1"}), ToolCall("b", "echo", {"text": "2"}))
    state, _ = step(state, ModelReplied(ModelReply("", calls, Usage(1, 1))))
    state, out = step(state, ToolsDone((ToolResult("a", "echo", True, "1"), ToolResult("b", "echo", True, "2"))))
    assert _kinds(out) == ["tool_result", "tool_result", "Reserve"]
    assert [o.payload["call_id"] for o in out[:2]] == ["a", "b"]  # type: ignore[union-attr]
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "tool"]


def test_results_out_of_call_order_are_a_driver_bug() -> None:
    state = _to_call(_cfg())
    calls = (ToolCall("a", "echo", {}), ToolCall("b", "echo", {}))
    state, _ = step(state, ModelReplied(ModelReply("", calls, Usage(1, 1))))
    with pytest.raises(ValueError, match="one result per call, in the order of the calls"):
        step(state, ToolsDone((ToolResult("b", "echo", True, ""), ToolResult("a", "echo", True, ""))))


def test_an_answer_without_calls_stops_with_no_tool_calls() -> None:
    state = _to_call(_cfg())
    state, out = step(state, ModelReplied(ModelReply("done", (), Usage(1, 1))))
    assert _kinds(out) == ["model_turn", "Settle", "budget", "stop", "Finished"]
    assert isinstance(out[-1], Finished) and out[-1].reason == "no_tool_calls"
    assert state.answer == "done"


def test_a_model_failure_is_recorded_and_ends_the_run_with_its_billed_usage_spent() -> None:
    state = _to_call(_cfg())
    state, out = step(state, ModelFailed("boom", Usage(100, 0)))
    assert _kinds(out) == ["Settle", "model_error", "stop", "Finished"]
    assert isinstance(out[0], Settle) and out[0].actual_micros == 100  # the reservation is settled at what was billed
    assert out[1].payload["cost_micros"] == 100  # type: ignore[union-attr]
    assert out[2].payload["reason"] == "model_error"  # type: ignore[union-attr]
    assert state.spent_micros == 100


def test_the_step_budget_stops_before_the_next_reservation() -> None:
    state = _to_call(_cfg(max_steps=1))
    state, _ = step(state, ModelReplied(ModelReply("", (ToolCall("a", "echo", {}),), Usage(1, 1))))
    state, out = step(state, ToolsDone((ToolResult("a", "echo", True, ""),)))
    assert _kinds(out) == ["tool_result", "stop", "Finished"]
    assert out[1].payload["reason"] == "step_budget"  # type: ignore[union-attr]


def test_the_sentinel_stops_the_run_even_with_calls_pending() -> None:
    cfg = LoopConfig(model="m", budget=Budget(max_steps=5, max_usd_micros=10**6), price=Price(1, 1), tools=(ECHO,),
                     manifest=({"name": "echo"},), sentinel="DONE")
    state = _to_call(cfg)
    state, out = step(state, ModelReplied(ModelReply("DONE", (ToolCall("a", "echo", {}),), Usage(1, 1))))
    assert _kinds(out)[-2:] == ["stop", "Finished"] and out[-1].reason == "sentinel"  # type: ignore[union-attr]
    assert "RunTools" not in _kinds(out)


def test_an_event_the_loop_did_not_ask_for_is_refused_in_every_phase() -> None:
    state, _ = start(_cfg(), [{"role": "user", "content": "hi"}])
    for wrong in (ModelReplied(ModelReply("x")), ToolsDone(())):
        with pytest.raises(ValueError, match="phase 'reserve'"):
            step(state, wrong)
    state, _ = step(state, Reserved(True))
    with pytest.raises(ValueError, match="phase 'call'"):
        step(state, Reserved(True))
