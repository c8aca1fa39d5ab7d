"""Money is integers, rounding never helps a run past its cap, unknown models cost the most."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.budget import (
    Budget,
    LocalLedger,
    Price,
    PriceTable,
    cost_micros,
    estimate_micros,
    format_usd,
    usd,
)
from agentloop.events import Usage


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
