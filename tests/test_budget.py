"""Money is integers, rounding never helps a run past its cap, unknown models cost the most."""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop import tool
from agentloop.budget import (
    Budget,
    Ledger,
    LocalLedger,
    Price,
    PriceTable,
    cost_micros,
    estimate_micros,
    format_usd,
    output_left,
    session_budget,
    usd,
)
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage


@pytest.mark.parametrize(("text", "micros"), [("0.05", 50_000), ("1", 1_000_000), (2, 2_000_000), (Decimal("0.000001"), 1), ("0", 0)])
def test_usd_parses_dollars_exactly(text: object, micros: int) -> None:
    assert usd(text) == micros  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.1, "-1", "abc", "0.0000001", "NaN", None])
def test_usd_refuses_floats_negatives_and_sub_micro_amounts(bad: object) -> None:
    with pytest.raises(ValueError):
        usd(bad)  # type: ignore[arg-type]


@settings(deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**8), st.integers(0, 10**8))
def test_cost_rounds_up_and_is_never_below_the_exact_amount(i: int, o: int, p_in: int, p_out: int) -> None:
    c = cost_micros(Usage(i, o), Price(p_in, p_out))
    exact = Decimal(i * p_in + o * p_out) / Decimal(1_000_000)
    assert isinstance(c, int) and c >= exact and c - exact < 1


def test_the_highest_price_is_taken_field_by_field() -> None:
    t = PriceTable({"a": Price(1, 9, 0, 5), "b": Price(7, 2, 3, 0)})
    assert t.resolve("zzz") == Price(7, 9, 3, 5)
    assert t.resolve("a") == Price(1, 9, 0, 5)


def test_prices_from_config_must_be_integers() -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        PriceTable.from_json({"m": {"input": 1.5, "output": 2}})


def test_budget_caps_must_be_non_negative_integers() -> None:
    with pytest.raises(ValueError):
        Budget(max_steps=-1)
    with pytest.raises(ValueError):
        Budget(max_usd_micros=0.5)  # type: ignore[arg-type]
    assert Budget.from_json(Budget(max_steps=3).to_json()) == Budget(max_steps=3)
    assert Budget.from_json(Budget.unlimited().to_json()).is_unlimited


def test_the_local_ledger_refuses_what_does_not_fit_and_settles_exactly() -> None:
    led = LocalLedger(max_usd_micros=100, max_tokens=50)
    assert led.reserve(60, 10) and not led.reserve(50, 10)
    led.settle(60, 30, 10, 5)
    assert (led.reserved, led.spent, led.used_tokens) == (0, 30, 5)
    assert led.reserve(70, 45) and not led.reserve(0, 1)


def test_format_usd_is_for_people() -> None:
    assert format_usd(1_234_567) == "$1.234567" and format_usd(5) == "$0.000005"


def test_the_local_ledger_holds_its_cap_under_threads() -> None:
    import threading

    led = LocalLedger(max_usd_micros=1_000)
    granted: list[bool] = []

    def worker() -> None:
        for _ in range(200):
            if led.reserve(7, 0):
                granted.append(True)
                led.settle(7, 7, 0, 0)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert led.spent <= 1_000 and led.reserved == 0 and led.spent == 7 * len(granted)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 10**7), st.integers(0, 10**9), st.integers(0, 10**9))
def test_a_reservation_estimate_costs_what_the_same_usage_would(i: int, o: int, p_in: int, p_out: int) -> None:
    price = Price(p_in, p_out, 7, 11)
    assert estimate_micros(i, o, price) == cost_micros(Usage(input_tokens=i, output_tokens=o), price)


# --- one budget type: nested ledgers, whole numbers only ----------------------------------------


def test_every_figure_entering_a_ledger_is_a_whole_number() -> None:
    """A float (or a bool) never becomes an amount: reserving, holding, settling or capping with one is refused."""
    acct = Ledger(1_000, 100)
    for bad in (0.5, 1.0, True, "1", None):
        with pytest.raises(ValueError, match="whole number"):
            acct.reserve(bad, 0)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="whole number"):
            acct.settle(0, bad, 0, 0)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="whole number"):
            acct.hold(0, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole number"):
        Ledger(10.0)  # type: ignore[arg-type]
    assert (acct.spent, acct.reserved, acct.used_tokens, acct.reserved_tokens) == (0, 0, 0, 0)


@given(st.integers(0, 10**12), st.integers(0, 10**9), st.integers(1, 50), st.integers(1, 50), st.integers(1, 12))
@settings(max_examples=200, deadline=None)
def test_children_split_from_what_is_left_hold_whole_amounts_within_their_share(cap: int, tokens: int, num: int, den: int, n: int) -> None:
    num = min(num, den)
    parent = Ledger(cap, tokens, spent=cap // 3, reserved=cap // 5)
    money_left, tokens_left = parent.left()
    holds = parent.split((num, den), n)
    assert len(holds) == n
    for m, t in holds:
        assert type(m) is int and type(t) is int  # never a float: no micro-dollar rounded up
    assert money_left is not None and tokens_left is not None
    assert sum(h[0] or 0 for h in holds) * den <= money_left * num
    assert sum(h[1] or 0 for h in holds) * den <= tokens_left * num
    assert parent.spent + parent.reserved <= cap


def test_a_child_of_an_uncapped_parent_is_uncapped_and_holds_nothing() -> None:
    assert Ledger().split((1, 2), 3) == [(None, None)] * 3


def test_a_turns_remaining_budget_is_what_its_runs_left_and_none_once_a_cap_is_reached() -> None:
    b = Budget(max_steps=10, max_tokens=1_000, max_usd_micros=5_000)
    assert Ledger.of(b, spent=1_200, used_tokens=300, steps=4).remaining() == Budget(max_steps=6, max_tokens=700, max_usd_micros=3_800)
    assert Ledger.of(b, spent=5_000).remaining() is None
    assert Ledger.of(b, steps=10).remaining() is None
    assert Ledger.of(Budget.unlimited()).remaining(unlimited=True) == Budget.unlimited()


def test_a_sessions_next_run_gets_what_is_left_of_its_money_never_less_than_nothing() -> None:
    assert session_budget(25, 10_000, 4_000) == Budget(max_steps=25, max_usd_micros=6_000)
    assert session_budget(25, 10_000, 12_000) == Budget(max_steps=25, max_usd_micros=0)
    assert session_budget(25, None, 12_000) == Budget(max_steps=25)


def test_a_retry_gets_the_output_its_reservation_still_covers() -> None:
    """Billed failed input is converted to output tokens at the dearest rates (rounded up: never more room)."""
    price = Price(input=3_000_000, output=15_000_000, cache_write=3_750_000)
    assert output_left(1_000, Usage(input_tokens=100, output_tokens=50), price) == 1_000 - 50 - 25  # 100 x 3.75/15, up
    assert output_left(1_000, Usage(input_tokens=1, output_tokens=0), price) == 999
    assert output_left(1_000, Usage(input_tokens=100, output_tokens=50), None) == 850  # no price: one for one


def _pure_source() -> bool:
    import agentloop.loop as loop_mod

    return str(loop_mod.__file__).endswith(".py")


@pytest.mark.skipif(not _pure_source(), reason="the compiled State cannot be watched: the pure-source run of this file checks it")
def test_at_run_time_only_the_loop_and_the_budget_write_what_a_reservation_is_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with masking near the window's limit (compaction lowers the messages' bound) and a side cost:
    every write of a guarded ``State`` field comes from loop.py or budget.py; a ``prepare`` writing one
    itself is caught."""
    from agentloop import MemoryTranscript, run
    from agentloop.agent.context.compaction import Compactor
    from agentloop.loop import State
    from agentloop.testing import FunctionModel
    from test_side_costs import MONEY

    writers: list[tuple[str, str]] = []
    setter = object.__setattr__

    def watched(self: object, name: str, value: object) -> None:
        if name in MONEY:
            where = sys._getframe(1).f_code.co_filename
            if os.path.basename(where) not in ("loop.py", "budget.py") and where != "<string>":  # <string>: the dataclass's __init__
                writers.append((where, name))
        setter(self, name, value)

    monkeypatch.setattr(State, "__setattr__", watched)
    cm = Compactor(window=4_000, transcript_path=str(tmp_path / "t.jsonl"), spill_dir=str(tmp_path / "spill"), compact_at=2.0)

    def model(req: ModelRequest) -> ModelReply:
        k = sum(1 for m in req.messages if m["role"] == "tool")
        if k < 6:
            return ModelReply(text="", tool_calls=(ToolCall(f"c{k}", "big", {}),), usage=Usage(10, 5))
        return ModelReply(text="done", usage=Usage(10, 5))

    @tool(read_only=True)
    def big() -> str:
        """A large output."""
        return "x" * 4_000

    r = run(FunctionModel(model, name="m"), [big], "go", Budget(max_steps=20, max_usd_micros=10**9), transcript=MemoryTranscript(),
            prepare=cm.prepare, prices={"m": Price(1, 1)})
    assert r.stop_reason == "no_tool_calls" and cm.last_saved > 0  # masking ran and lowered the bound
    assert writers == []

    def rogue(state: Any, record: Any) -> None:
        state.messages_bound -= 1  # what compaction did before the loop took the write

    run(FunctionModel(model, name="m"), [big], "go", Budget(max_steps=3), transcript=MemoryTranscript(), prepare=rogue)
    assert [w[1] for w in writers] and {w[1] for w in writers} == {"messages_bound"}
