"""Count before sending: near the cap the exact input count decides, and far from it nobody asks."""

from __future__ import annotations

from pathlib import Path

from agentloop.budget import Budget, Price, cost_micros
from agentloop.events import Usage
from agentloop.providers import open_model
from agentloop.providers.budgeting import count_guard
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import TranscriptWriter, read_records, verify_file

SYSTEM = "Rules: " + "be exact, " * 60
# input dear, output cheap: the input estimate decides whether a call fits
PRICES = {"claude-haiku-4-5": Price(1_000_000_000, 1_000_000)}
MAX_OUT = 10


def _go(tmp_path: Path, cap: int | None, near: float = 0.5) -> tuple[object, list[dict[str, object]], list[str]]:
    with FakeProvider({"replies": [{"text": "fine"}], "cache": False}) as fp:
        m = open_model("anthropic:claude-haiku-4-5", base_url=fp.url, env={}, cache=False)
        path = tmp_path / "t.jsonl"
        budget = Budget(max_usd_micros=cap, max_steps=3) if cap is not None else Budget(max_steps=3)
        with TranscriptWriter(path) as w:
            r = run(m, None, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}], budget,
                    transcript=w, prices=PRICES, max_output_tokens=MAX_OUT, prepare=count_guard(m, near=near))
        paths = [str(q["path"]) for q in fp.requests]
    assert verify_file(path).ok
    assert replay(path).equal  # the count and the stop it caused replay word for word
    return r, [x.payload for x in read_records(path) if x.kind == "token_count"], paths


def _estimate() -> int:
    return (len(SYSTEM) + 4 + len("go") + 4 + len("[]")) // 4


def test_near_the_cap_an_exact_count_stops_a_call_the_estimate_let_through(tmp_path: Path) -> None:
    est = _estimate()
    fits_estimate = cost_micros(Usage(est, MAX_OUT), PRICES["claude-haiku-4-5"]) + 500  # the estimate fits, barely
    r, counts, paths = _go(tmp_path, fits_estimate)
    assert counts and counts[0]["estimated"] == est
    counted = counts[0]["counted"]
    assert isinstance(counted, int) and counted > est  # the wire format is bigger than the estimate
    assert r.stop_reason == "cost_budget" and r.spent_micros == 0  # type: ignore[attr-defined]
    assert "exact count" in (r.error or "")  # type: ignore[attr-defined]
    assert paths == ["/messages/count_tokens"]  # no model call was made


def test_an_exact_count_that_fits_lets_the_call_go(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, 10_000_000, near=0.0)
    assert r.stop_reason == "no_tool_calls" and counts and counts[0]["needed_micros"] <= counts[0]["left_micros"]  # type: ignore[attr-defined,operator]
    assert paths == ["/messages/count_tokens", "/messages"]


def test_far_from_the_cap_nothing_is_counted(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, 10_000_000)
    assert r.stop_reason == "no_tool_calls" and not counts and paths == ["/messages"]  # type: ignore[attr-defined]
    r, counts, paths = _go(tmp_path / "x", None) if (tmp_path / "x").mkdir() is None else (None, [], [])
    assert not counts and paths == ["/messages"]
