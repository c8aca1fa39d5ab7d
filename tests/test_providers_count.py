"""Count before refusing: when the bound does not fit, an exact count may replace it; far from the cap nobody asks."""

from __future__ import annotations

from pathlib import Path

from agentloop.budget import Budget, Price, input_bound, reservation_micros
from agentloop.providers import open_model
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import TranscriptWriter, read_records, verify_file

SYSTEM = "Rules: " + "be exact, " * 60
MSGS = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}]
# input dear, output cheap: the input decides whether a call fits
PRICE = Price(1_000_000_000, 1_000_000)
PRICES = {"claude-haiku-4-5": PRICE}
MAX_OUT = 10


def _go(tmp_path: Path, cap: int | None) -> tuple[object, list[dict[str, object]], list[str]]:
    with FakeProvider({"replies": [{"text": "fine"}], "cache": False}) as fp:
        m = open_model("anthropic:claude-haiku-4-5", base_url=fp.url, env={}, cache=False)
        path = tmp_path / "t.jsonl"
        budget = Budget(max_usd_micros=cap, max_steps=3) if cap is not None else Budget(max_steps=3)
        with TranscriptWriter(path) as w:
            r = run(m, None, MSGS, budget, transcript=w, prices=PRICES, max_output_tokens=MAX_OUT)
        paths = [str(q["path"]) for q in fp.requests]
    assert verify_file(path).ok
    assert replay(path).equal  # the count and what it decided replay word for word
    return r, [x.payload for x in read_records(path) if x.kind == "token_count"], paths


def _bound_micros() -> int:
    return reservation_micros(input_bound(MSGS), MAX_OUT, PRICE)


def test_when_the_bound_does_not_fit_an_exact_count_that_fits_lets_the_call_go(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, _bound_micros() - 1)
    assert r.stop_reason == "no_tool_calls"  # type: ignore[attr-defined]
    assert counts and counts[0]["bound"] == input_bound(MSGS) and counts[0]["needed_micros"] <= counts[0]["left_micros"]  # type: ignore[operator]
    assert paths == ["/messages/count_tokens", "/messages"]


def test_an_exact_count_that_does_not_fit_refuses_the_call_with_the_bound_and_the_count(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, 1000)
    assert r.stop_reason == "cost_budget" and r.spent_micros == 0  # type: ignore[attr-defined]
    assert "exact count" in (r.error or "") and "reservation of" in (r.error or "")  # type: ignore[attr-defined]
    assert counts and isinstance(counts[0]["counted"], int)
    assert paths == ["/messages/count_tokens"]  # no model call was made


def test_when_the_bound_fits_nothing_is_counted(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, _bound_micros())
    assert r.stop_reason == "no_tool_calls" and not counts and paths == ["/messages"]  # type: ignore[attr-defined]
    (tmp_path / "x").mkdir()
    r, counts, paths = _go(tmp_path / "x", None)
    assert not counts and paths == ["/messages"]
