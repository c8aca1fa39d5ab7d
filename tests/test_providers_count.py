"""A token count is a hint, never a bound: a call whose byte bound does not fit is refused, whatever a count
would say (a provider's ``count_tokens`` answering 1 once let a call reserved at $0.062 be billed $0.137)."""

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


def test_when_the_bound_does_not_fit_no_count_lets_the_call_go(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, _bound_micros() - 1)
    assert r.stop_reason == "cost_budget" and r.spent_micros == 0  # type: ignore[attr-defined]
    assert "reservation of" in (r.error or "") and "UTF-8 bytes" in (r.error or "")  # type: ignore[attr-defined]
    assert not counts and paths == []  # neither a count nor a model call


def test_a_count_of_one_token_cannot_lower_the_reservation(tmp_path: Path) -> None:
    """A model that counts (Anthropic) and a cap one micro-dollar short of the byte bound: whatever a count would
    answer (1, say), the reservation is the byte bound, so the call is refused and nothing is sent."""
    with FakeProvider({"replies": [{"text": "fine"}], "cache": False}) as fp:
        m = open_model("anthropic:claude-haiku-4-5", base_url=fp.url, env={}, cache=False)
        r = run(m, None, MSGS, Budget(max_usd_micros=_bound_micros() - 1, max_steps=3), prices=PRICES, max_output_tokens=MAX_OUT)
        assert r.stop_reason == "cost_budget" and fp.requests == []


def test_when_the_bound_fits_nothing_is_counted(tmp_path: Path) -> None:
    r, counts, paths = _go(tmp_path, _bound_micros())
    assert r.stop_reason == "no_tool_calls" and not counts and paths == ["/messages"]  # type: ignore[attr-defined]
    (tmp_path / "x").mkdir()
    r, counts, paths = _go(tmp_path / "x", None)
    assert not counts and paths == ["/messages"]
