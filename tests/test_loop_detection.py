"""Loop detection: the heuristic in the loop and the optional cheap-model check, with negative controls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, MemoryTranscript, Price, run, tool
from agentloop.agent.context.compaction import Compactor
from agentloop.agent.context.loop_check import LoopCheck, chain, parse_verdict
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
from agentloop.testing import FunctionModel

PRICES = {"main": Price(input=1_000_000, output=1_000_000), "cheap": Price(input=100_000, output=100_000)}
AGENT_THRESHOLD = 5  # the agent's default


@tool(read_only=True)
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool(read_only=True)
def grep(pattern: str) -> str:
    """Search."""
    return f"no match for {pattern}"


def scripted(calls: Callable[[int], list[tuple[str, dict[str, Any]]] | None]) -> FunctionModel:
    """A model whose n-th turn (1-based) makes ``calls(n)``, or answers when that is None."""
    state = {"n": 0}

    def fn(req: ModelRequest) -> ModelReply:
        state["n"] += 1
        n = state["n"]
        cs = calls(n)
        if cs is None:
            return ModelReply(text="done", usage=Usage(10, 2))
        return ModelReply(tool_calls=tuple(ToolCall(f"c{n}_{i}", name, args) for i, (name, args) in enumerate(cs)), usage=Usage(10, 2))

    return FunctionModel(fn, name="main")


def go(model: Any, steps: int = 200, threshold: int | None = AGENT_THRESHOLD, **kw: Any) -> tuple[Any, MemoryTranscript]:
    t = MemoryTranscript()
    r = run(model, [read, grep], "fix it", Budget(max_steps=steps), transcript=t, prices=PRICES, loop_threshold=threshold, **kw)
    return r, t


def kinds(t: MemoryTranscript, kind: str) -> list[Any]:
    return [r.payload for r in t.records if r.kind == kind]


# --- the heuristic ----------------------------------------------------------------------


def test_the_same_call_five_turns_in_a_row_stops_with_loop_detected() -> None:
    r, t = go(scripted(lambda n: [("read", {"path": "a.py"})]))
    assert r.stop_reason == "loop_detected" and r.steps == 5
    (ld,) = kinds(t, "loop_detected")
    assert ld["method"] == "heuristic" and ld["repeats"] == 5 and ld["step"] == 5
    assert len(kinds(t, "tool_result")) == 4  # the fifth repeat never runs


def test_four_repeats_are_not_a_loop() -> None:
    r, t = go(scripted(lambda n: [("read", {"path": "a.py"})] if n <= 4 else None))
    assert r.stop_reason == "no_tool_calls" and kinds(t, "loop_detected") == []


def test_the_same_tool_with_different_arguments_is_not_a_loop() -> None:
    r, t = go(scripted(lambda n: [("read", {"path": f"file{n}.py"})] if n <= 60 else None))
    assert r.stop_reason == "no_tool_calls" and r.steps == 61 and kinds(t, "loop_detected") == []


def test_alternating_calls_are_not_a_heuristic_loop() -> None:
    r, _ = go(scripted(lambda n: [("read", {"path": "a.py"})] if n % 2 else [("grep", {"pattern": "x"})] if n <= 40 else None))
    assert r.stop_reason == "no_tool_calls"


def test_a_run_broken_by_a_different_call_starts_counting_again() -> None:
    # 4 identical, 1 different, 4 identical...: never 5 in a row
    r, _ = go(scripted(lambda n: ([("grep", {"pattern": "p"})] if n % 5 == 0 else [("read", {"path": "a.py"})]) if n <= 40 else None))
    assert r.stop_reason == "no_tool_calls"


def test_argument_key_order_does_not_hide_a_loop() -> None:
    r, _ = go(scripted(lambda n: [("grep", {"pattern": "x"}), ("read", {"path": "a"})]))
    assert r.stop_reason == "loop_detected"
    # the fingerprint is over canonical JSON: {"b":1,"a":2} and {"a":2,"b":1} are the same call
    r2, _ = go(scripted(lambda n: [("read", {"path": "a"} if n % 2 else dict(reversed(list({"path": "a"}.items()))))]))
    assert r2.stop_reason == "loop_detected"


def test_no_threshold_means_no_heuristic() -> None:
    r, _ = go(scripted(lambda n: [("read", {"path": "a.py"})] if n <= 12 else None), threshold=None)
    assert r.stop_reason == "no_tool_calls"


# --- the model check -----------------------------------------------------------------------


class Cheap:
    name = "cheap"

    def __init__(self, answer: str | Callable[[int], str]):
        self.answer = answer
        self.calls = 0
        self.steps_seen: list[str] = []

    def complete(self, req: ModelRequest) -> ModelReply:
        self.calls += 1
        self.steps_seen.append(str(req.messages[0]["content"]))
        a = self.answer(self.calls) if callable(self.answer) else self.answer
        return ModelReply(text=a, usage=Usage(200, 2))


def varied(n: int) -> list[tuple[str, dict[str, Any]]] | None:
    """A cycle of three different calls: invisible to the heuristic."""
    return [("read", {"path": f"f{n % 3}.py"})]


def test_the_model_check_runs_after_turn_30_every_10_turns_and_can_stop_a_cycle() -> None:
    cheap = Cheap(lambda k: "NOT_LOOPING" if k < 3 else "LOOPING")
    check = LoopCheck(cheap, model_name="cheap", price=PRICES["cheap"])
    r, t = go(scripted(varied), prepare=check.prepare)
    assert r.stop_reason == "loop_detected" and r.steps == 50
    checks = kinds(t, "loop_check")
    assert [c["step"] for c in checks] == [30, 40, 50]
    assert [c["verdict"] for c in checks] == ["NOT_LOOPING", "NOT_LOOPING", "LOOPING"]
    (ld,) = kinds(t, "loop_detected")
    assert ld == {"step": 50, "method": "model", "model": "cheap"}
    # inside the same budget: the checks' cost is in the run's spend
    turns = sum(b["cost_micros"] for b in kinds(t, "budget"))
    assert sum(c["cost_micros"] for c in checks) > 0
    assert r.spent_micros == turns + sum(c["cost_micros"] for c in checks)


def test_a_not_looping_verdict_never_stops_the_run() -> None:
    cheap = Cheap("NOT_LOOPING")
    check = LoopCheck(cheap, model_name="cheap", price=PRICES["cheap"])
    r, t = go(scripted(lambda n: varied(n) if n <= 75 else None), prepare=check.prepare)
    assert r.stop_reason == "no_tool_calls" and r.steps == 76
    assert cheap.calls == 5 and [c["step"] for c in kinds(t, "loop_check")] == [30, 40, 50, 60, 70]


def test_the_model_check_is_skipped_when_the_budget_has_no_room() -> None:
    cheap = Cheap("LOOPING")
    check = LoopCheck(cheap, model_name="cheap", price=Price(input=10**12, output=10**12))
    t = MemoryTranscript()
    r = run(scripted(lambda n: varied(n) if n <= 35 else None), [read, grep], "x", Budget(max_steps=100, max_usd_micros=10**6), transcript=t, prices=PRICES, prepare=check.prepare)
    assert r.stop_reason == "no_tool_calls" and cheap.calls == 0
    (c,) = kinds(t, "loop_check")
    assert "budget has no room" in c["skipped"] and c["verdict"] == "unknown"


def test_a_failing_cheap_model_never_stops_the_run() -> None:
    class Broken:
        name = "cheap"

        def complete(self, req: ModelRequest) -> ModelReply:
            raise TimeoutError("slow")

    r, t = go(scripted(lambda n: varied(n) if n <= 35 else None), prepare=LoopCheck(Broken(), price=PRICES["cheap"]).prepare)
    assert r.stop_reason == "no_tool_calls"
    assert "TimeoutError" in kinds(t, "loop_check")[0]["error"]


@pytest.mark.parametrize(
    ("text", "verdict"),
    [("LOOPING", "LOOPING"), (" looping.", "LOOPING"), ("NOT_LOOPING", "NOT_LOOPING"), ("**NOT_LOOPING**", "NOT_LOOPING"),
     ("not looping", "NOT_LOOPING"), ("I think it is LOOPING", "unknown"), ("", "unknown")],
)
def test_verdicts_are_parsed_strictly(text: str, verdict: str) -> None:
    # seed 004's `"LOOPING" in answer` would read NOT_LOOPING as LOOPING
    assert parse_verdict(text) == verdict


def test_the_check_chains_with_context_management() -> None:
    cheap = Cheap("LOOPING")
    cm = Compactor(window=10**6)
    r, t = go(scripted(varied), prepare=chain(cm.prepare, LoopCheck(cheap, price=PRICES["cheap"]).prepare))
    assert r.stop_reason == "loop_detected" and r.steps == 30


def test_the_model_loop_check_is_on_by_default_with_the_providers_cheap_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004: after turn 30, every 10 turns, a cheap model judges whether the run is stuck; on by
    default where the provider has a known cheap model, off with ``"loopCheckModel": false``."""
    import json

    from agentloop.agent.agent import Agent
    from agentloop.agent.hooks_and_context import loop_check_model

    assert loop_check_model("openai:gpt-4o", None) == "openai:gpt-4o-mini"
    assert loop_check_model("anthropic:claude-sonnet-4-5", None) == "anthropic:claude-haiku-4-5"
    assert loop_check_model("scripted:x.json", None) is None
    assert loop_check_model("openai:gpt-4o", False) is None and loop_check_model("openai:gpt-4o", "openai:o4-mini") == "openai:o4-mini"
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    env = {"AGENTLOOP_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)}
    a = Agent(cwd=str(proj), model="openai:gpt-4o", base_url="http://127.0.0.1:9/v1", env=env)
    try:
        lc = a.context.loopcheck  # type: ignore[attr-defined]
        assert lc is not None and lc.model_name == "gpt-4o-mini"
    finally:
        a.close()
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"loopCheckModel": False}))
    b = Agent(cwd=str(proj), model="openai:gpt-4o", base_url="http://127.0.0.1:9/v1", env=env, trust=True)
    try:
        assert b.context.loopcheck is None  # type: ignore[attr-defined]
    finally:
        b.close()
