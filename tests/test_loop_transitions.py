"""The loop's state machine, driven by hand: one inbound event in, the outbound requests out.

These tests call ``loop.start`` and ``loop.step`` directly, with no driver,
so each transition of the rules in ``agentloop/loop.py`` is pinned on its
own: what is recorded, in what order, and what is asked of the driver next.
The amounts reserved are the loop's business (``budget``); here only their
presence, order and relation to the cap are checked.
"""

from __future__ import annotations

import pytest

import agentloop.loop as loop_mod
from _loopkit import ECHO, cfg, kinds, to_call
from agentloop.budget import Budget, Price
from agentloop.conversation import Continues
from agentloop.events import ModelReply, ToolCall, ToolResult, Usage
from agentloop.loop import (
    TRANSITIONS,
    Append,
    CallModel,
    CountInput,
    Finished,
    InputCounted,
    LoopConfig,
    ModelFailed,
    ModelReplied,
    Phase,
    Reserve,
    Reserved,
    RunTools,
    Settle,
    ToolsDone,
    interrupt,
    start,
    step,
)


def test_start_records_the_run_then_asks_to_reserve_before_any_call() -> None:
    state, out = start(cfg(), [{"role": "user", "content": "hi"}])
    assert isinstance(out[0], Append) and out[0].kind == "run_start"
    assert out[0].payload["messages"] == [{"role": "user", "content": "hi"}]
    assert isinstance(out[1], Reserve) and out[1].amount_micros > 0
    assert state.phase == "reserve" and state.steps == 0


def test_a_granted_reservation_asks_for_the_model_with_the_messages_and_tools() -> None:
    state, out = start(cfg(), [{"role": "user", "content": "hi"}])
    state, out = step(state, Reserved(True))
    (call,) = out
    assert isinstance(call, CallModel)
    assert call.request.messages is state.messages and [t.name for t in call.request.tools] == ["echo"]


def test_a_refused_reservation_stops_with_cost_budget_and_no_call() -> None:
    state, _ = start(cfg(), [{"role": "user", "content": "hi"}])
    state, out = step(state, Reserved(False))
    assert kinds(out) == ["stop", "Finished"]
    assert out[0].payload["reason"] == "cost_budget" and "refused" in out[0].payload["error"]  # type: ignore[union-attr]
    assert state.done and state.steps == 0


def test_a_reservation_that_does_not_fit_the_cap_stops_before_asking_the_ledger() -> None:
    state, out = start(cfg(max_usd_micros=1), [{"role": "user", "content": "hi"}])
    assert kinds(out) == ["run_start", "stop", "Finished"]
    assert out[1].payload["reason"] == "cost_budget"  # type: ignore[union-attr]


def test_a_reply_with_calls_records_the_turn_settles_and_asks_for_the_tools() -> None:
    state = to_call(cfg())
    call = ToolCall("c1", "echo", {"text": "x"})
    state, out = step(state, ModelReplied(ModelReply("", (call,), Usage(10, 5))))
    assert kinds(out) == ["model_turn", "Settle", "budget", "RunTools"]
    settle = out[1]
    assert isinstance(settle, Settle) and settle.actual_micros == 10 * 1 + 5 * 2  # 1 and 2 µUSD a token
    assert isinstance(out[3], RunTools) and out[3].calls == (call,)
    assert state.phase == "tools" and state.steps == 1 and state.spent_micros == 20


def test_tool_results_are_recorded_in_call_order_then_the_next_turn_reserves() -> None:
    state = to_call(cfg())
    calls = (ToolCall("a", "echo", {"text": "1"}), ToolCall("b", "echo", {"text": "2"}))
    state, _ = step(state, ModelReplied(ModelReply("", calls, Usage(1, 1))))
    state, out = step(state, ToolsDone((ToolResult("a", "echo", True, "1"), ToolResult("b", "echo", True, "2"))))
    assert kinds(out) == ["tool_result", "tool_result", "Reserve"]
    assert [o.payload["call_id"] for o in out[:2]] == ["a", "b"]  # type: ignore[union-attr]
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "tool"]


def test_results_out_of_call_order_are_a_driver_bug() -> None:
    state = to_call(cfg())
    calls = (ToolCall("a", "echo", {}), ToolCall("b", "echo", {}))
    state, _ = step(state, ModelReplied(ModelReply("", calls, Usage(1, 1))))
    with pytest.raises(ValueError, match="one result per call, in the order of the calls"):
        step(state, ToolsDone((ToolResult("b", "echo", True, ""), ToolResult("a", "echo", True, ""))))


def test_an_answer_without_calls_stops_with_no_tool_calls() -> None:
    state = to_call(cfg())
    state, out = step(state, ModelReplied(ModelReply("done", (), Usage(1, 1))))
    assert kinds(out) == ["model_turn", "Settle", "budget", "stop", "Finished"]
    assert isinstance(out[-1], Finished) and out[-1].reason == "no_tool_calls"
    assert state.answer == "done"


def test_a_model_failure_is_recorded_and_ends_the_run_with_its_billed_usage_spent() -> None:
    state = to_call(cfg())
    state, out = step(state, ModelFailed("boom", Usage(100, 0)))
    assert kinds(out) == ["Settle", "model_error", "stop", "Finished"]
    assert isinstance(out[0], Settle) and out[0].actual_micros == 100  # the reservation is settled at what was billed
    assert out[1].payload["cost_micros"] == 100  # type: ignore[union-attr]
    assert out[2].payload["reason"] == "model_error"  # type: ignore[union-attr]
    assert state.spent_micros == 100


def test_the_step_budget_stops_before_the_next_reservation() -> None:
    state = to_call(cfg(max_steps=1))
    state, _ = step(state, ModelReplied(ModelReply("", (ToolCall("a", "echo", {}),), Usage(1, 1))))
    state, out = step(state, ToolsDone((ToolResult("a", "echo", True, ""),)))
    assert kinds(out) == ["tool_result", "stop", "Finished"]
    assert out[1].payload["reason"] == "step_budget"  # type: ignore[union-attr]


def test_the_sentinel_stops_the_run_even_with_calls_pending() -> None:
    config = LoopConfig(model="m", budget=Budget(max_steps=5, max_usd_micros=10**6), price=Price(1, 1), tools=(ECHO,),
                        manifest=({"name": "echo"},), sentinel="DONE")
    state = to_call(config)
    state, out = step(state, ModelReplied(ModelReply("DONE", (ToolCall("a", "echo", {}),), Usage(1, 1))))
    assert kinds(out)[-2:] == ["stop", "Finished"] and out[-1].reason == "sentinel"  # type: ignore[union-attr]
    assert "RunTools" not in kinds(out)


def test_an_event_the_loop_did_not_ask_for_is_refused_in_every_phase() -> None:
    state, _ = start(cfg(), [{"role": "user", "content": "hi"}])
    for wrong in (ModelReplied(ModelReply("x")), ToolsDone(())):
        with pytest.raises(ValueError, match="phase 'reserve'"):
            step(state, wrong)
    state, _ = step(state, Reserved(True))
    with pytest.raises(ValueError, match="phase 'call'"):
        step(state, Reserved(True))


# --- the transitions of the rarer paths: exact counts, continuations, loops, overruns, continued runs ---------


def _first_reservation() -> int:
    _, out = start(cfg(), [{"role": "user", "content": "hi"}])
    assert isinstance(out[1], Reserve)
    return out[1].amount_micros


def _counting(max_usd_micros: int) -> LoopConfig:
    return LoopConfig(model="m", budget=Budget(max_steps=5, max_usd_micros=max_usd_micros), price=Price(1_000_000, 2_000_000),
                      tools=(ECHO,), manifest=({"name": "echo"},), can_count=True)


def test_a_bound_that_does_not_fit_asks_a_counting_model_for_an_exact_count_instead_of_refusing() -> None:
    state, out = start(_counting(_first_reservation() - 1), [{"role": "user", "content": "hi"}])
    assert kinds(out) == ["run_start", "CountInput"]
    assert isinstance(out[1], CountInput) and out[1].request.messages is state.messages
    assert state.phase == "count"


def test_an_exact_count_that_fits_is_recorded_and_reserved_from() -> None:
    cap = _first_reservation() - 1
    state, _ = start(_counting(cap), [{"role": "user", "content": "hi"}])
    state, out = step(state, InputCounted(10))
    assert kinds(out) == ["token_count", "Reserve"]
    rec = out[0].payload  # type: ignore[union-attr]
    assert rec["counted"] == 10 and rec["reserved_tokens"] > 10 and rec["needed_micros"] <= cap
    assert isinstance(out[1], Reserve) and out[1].amount_micros == rec["needed_micros"]
    state, out = step(state, Reserved(True))
    assert kinds(out) == ["CallModel"]


def test_an_exact_count_that_does_not_fit_or_no_count_stops_with_cost_budget() -> None:
    for counted in (10**7, None):
        state, _ = start(_counting(_first_reservation() - 1), [{"role": "user", "content": "hi"}])
        state, out = step(state, InputCounted(counted, None if counted else "count_tokens failed"))
        assert kinds(out) == ["token_count", "stop", "Finished"]
        assert out[1].payload["reason"] == "cost_budget" and "reservation" in out[1].payload["error"]  # type: ignore[union-attr]
        assert ("error" in out[0].payload) is (counted is None)  # type: ignore[union-attr]


def _continuing(n: int) -> LoopConfig:
    return LoopConfig(model="m", budget=Budget(max_steps=5, max_usd_micros=10**6), price=Price(1, 1), tools=(ECHO,),
                      manifest=({"name": "echo"},), max_continuations=n)


def test_a_reply_cut_at_max_tokens_is_continued_and_the_answer_joined() -> None:
    state = to_call(_continuing(1))
    state, out = step(state, ModelReplied(ModelReply("Hel", (), Usage(1, 1), finish_reason="max_tokens")))
    assert kinds(out) == ["model_turn", "Settle", "budget", "continuation", "Reserve"]
    assert out[3].payload == {"step": 1, "count": 1}  # type: ignore[union-attr]
    state, _ = step(state, Reserved(True))
    state, out = step(state, ModelReplied(ModelReply("lo", (), Usage(1, 1), finish_reason="max_tokens")))
    assert kinds(out)[-2:] == ["stop", "Finished"] and "continuation" not in kinds(out)  # only one allowed
    assert state.answer == "Hello" and state.stop_reason == "no_tool_calls"


def test_a_cut_reply_without_continuations_stops_as_an_answer() -> None:
    state = to_call(_continuing(0))
    state, out = step(state, ModelReplied(ModelReply("Hel", (), Usage(1, 1), finish_reason="length")))
    assert kinds(out) == ["model_turn", "Settle", "budget", "stop", "Finished"]


def test_the_same_calls_turn_after_turn_stop_with_loop_detected_at_the_threshold() -> None:
    config = LoopConfig(model="m", budget=Budget(max_steps=9, max_usd_micros=10**6), price=Price(1, 1), tools=(ECHO,),
                        manifest=({"name": "echo"},), loop_threshold=2)
    state = to_call(config)
    call = ToolCall("a", "echo", {"text": "same"})
    state, out = step(state, ModelReplied(ModelReply("", (call,), Usage(1, 1))))
    assert kinds(out)[-1] == "RunTools"
    state, _ = step(state, ToolsDone((ToolResult("a", "echo", True, "same"),)))
    state, _ = step(state, Reserved(True))
    state, out = step(state, ModelReplied(ModelReply("", (ToolCall("b", "echo", {"text": "same"}),), Usage(1, 1))))
    assert kinds(out)[-3:] == ["loop_detected", "stop", "Finished"]
    assert out[-3].payload["repeats"] == 2 and out[-2].payload["reason"] == "loop_detected"  # type: ignore[union-attr]
    assert "RunTools" not in kinds(out)


def test_a_bill_past_its_reservation_is_recorded_as_an_overrun_and_stops_the_run() -> None:
    """More input tokens than the request's byte bound allows: no provider can have billed it, so the call is
    charged its whole reservation (never the figure), recorded as an overrun, and the run stops."""
    state = to_call(cfg())
    reserved = state.reserved_micros
    state, out = step(state, ModelReplied(ModelReply("", (ToolCall("a", "echo", {}),), Usage(reserved + 1, 0))))
    assert kinds(out) == ["Settle", "overrun", "stop", "Finished"]
    assert out[1].payload["reserved_micros"] == reserved and out[1].payload["cost_micros"] == reserved  # type: ignore[union-attr]
    assert out[1].payload["billed_at_reservation"] is True  # type: ignore[union-attr]
    assert state.stop_reason == "budget_overrun" and state.spent_micros == reserved


def test_a_run_that_continues_a_conversation_records_only_what_it_adds() -> None:
    prior = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "1"}]
    later = [*prior, {"role": "user", "content": "two"}]
    _, out = start(cfg(), later, continues=Continues(7, "ab" * 32, prior))
    rec = out[0].payload  # type: ignore[union-attr]
    assert rec["format"] == 2 and rec["continues"] == {"seq": 7, "hash": "ab" * 32, "messages": 2}
    assert rec["messages"] == [{"role": "user", "content": "two"}]
    # messages that do not begin with the conversation it names are recorded whole
    _, out = start(cfg(), [{"role": "user", "content": "other"}], continues=Continues(7, "ab" * 32, prior))
    assert out[0].payload["format"] == 1 and len(out[0].payload["messages"]) == 1  # type: ignore[union-attr]


def test_an_interrupt_between_reserve_and_reply_settles_the_reservation_at_zero() -> None:
    state = to_call(cfg())
    reserved = state.reserved_micros
    out = interrupt(state)
    assert kinds(out) == ["Settle", "stop", "Finished"]
    assert isinstance(out[0], Settle) and (out[0].reserved_micros, out[0].actual_micros) == (reserved, 0)
    assert state.stop_reason == "interrupted" and state.reserved_micros == 0


# --- the phases as one table ---------------------------------------------------------------------


def test_the_phase_table_names_real_phases_and_every_live_phase_can_stop() -> None:
    for (phase, event), nxt in TRANSITIONS.items():
        assert isinstance(phase, Phase) and isinstance(nxt, Phase) and isinstance(event, str)
    assert {p for p in Phase if p is not Phase.DONE} <= {p for (p, e) in TRANSITIONS if e == "stop"}
    assert {nxt for (p, e), nxt in TRANSITIONS.items() if p is Phase.DONE} == {Phase.DONE}  # nothing leaves done


@pytest.mark.parametrize(("phase", "event"), [(Phase.NEW, "granted"), (Phase.DONE, "reserve"), (Phase.COUNT, "tools"),
                                              (Phase.TOOLS, "granted"), (Phase.RESERVE, "count")])
def test_a_move_the_table_does_not_list_raises_and_leaves_the_phase(phase: Phase, event: str) -> None:
    state, _ = start(cfg(), [{"role": "user", "content": "hi"}])
    state.phase = phase
    with pytest.raises(ValueError, match="no such move"):
        loop_mod._move(state, event)
    assert state.phase is phase


def test_every_phase_a_run_passes_through_is_a_move_in_the_table() -> None:
    state, out = start(cfg(), [{"role": "user", "content": "hi"}])
    seen = [Phase.NEW, state.phase]
    replies = [ModelReply(text="", tool_calls=(ToolCall("c1", "echo", {"text": "a"}),), usage=Usage(5, 5)),
               ModelReply(text="done", usage=Usage(5, 5))]
    while not state.done:
        nxt = [o for o in out if isinstance(o, (Reserve, CallModel, RunTools))][-1]
        if isinstance(nxt, Reserve):
            state, out = step(state, Reserved(True))
        elif isinstance(nxt, CallModel):
            state, out = step(state, ModelReplied(replies.pop(0)))
        else:
            state, out = step(state, ToolsDone(tuple(ToolResult(c.id, c.name, True, c.arguments["text"]) for c in nxt.calls)))
        seen.append(state.phase)
    assert [p.value for p in seen] == ["new", "reserve", "call", "tools", "reserve", "call", "done"]
