"""Every path that runs a turn's tool calls runs them by one scheduler (``run.schedule``, ``run.waves``).

The same five calls (two of a read-only tool, one of a writing tool, two more read-only ones) run in
the same waves whichever entry point runs them: ``run``, ``arun``, replay (``live-tools``), a library
user's sub-agent executor (``parallel_executor``), the terminal agent's turn, and a sub-agent's turn
under the terminal agent. Claude Code runs a reply's concurrency-safe tool calls together and every
other call alone, in order ("Tools that are read-only ... can run concurrently"; its sub-agents
documentation: several Agent calls in one reply run in parallel); agentloop's waves are the
consecutive calls whose tools' records say they may overlap. A call whose reservation does not hold
(the scheduler's ``admit``: for the agent, ``ParentBudget.admit``) never starts, in every driver.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, MemoryTranscript, Price, Registry, Tool, TranscriptWriter, arun, run
from agentloop.events import ModelReply, ToolCall, ToolResult, Usage
from agentloop.run import turn_rules, waves
from agentloop.testing import ScriptedModel

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}
MIX = ["look", "look", "change", "look", "look"]
WAVES = [(0, 1), (2,), (3, 4)]
PARTNER = {0: 1, 1: 0, 3: 4, 4: 3}
"""Each read-only call waits (a while at most) for its wave's other call to start: together they pass at once."""


class Log:
    """What the tools saw: each call's start and end, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.started = {i: threading.Event() for i in range(len(MIX))}
        self.replay_equal: bool | None = None

    def tool(self, i: int, waits: bool) -> int:
        with self.lock:
            self.events.append(("start", i))
        self.started[i].set()
        if waits and i in PARTNER:
            self.started[PARTNER[i]].wait(3)
        with self.lock:
            self.events.append(("end", i))
        return i

    async def atool(self, i: int, waits: bool) -> int:
        """``tool`` for ``arun``, awaited on its loop (a sync tool would run on the loop's few worker threads)."""
        with self.lock:
            self.events.append(("start", i))
        self.started[i].set()
        if waits and i in PARTNER:
            for _ in range(300):
                if self.started[PARTNER[i]].is_set():
                    break
                await asyncio.sleep(0.01)
        with self.lock:
            self.events.append(("end", i))
        return i

    def atools(self) -> list[Tool]:
        async def look(i: int) -> int:
            return await self.atool(i, True)

        async def change(i: int) -> int:
            return await self.atool(i, False)

        return [Tool("look", "reads", SCHEMA, look, read_only=True), Tool("change", "writes", SCHEMA, change)]

    def tools(self, prefix: str = "") -> list[Tool]:
        return [Tool(prefix + "look", "reads", SCHEMA, lambda i: self.tool(i, True), read_only=True),
                Tool(prefix + "change", "writes", SCHEMA, lambda i: self.tool(i, False))]

    def shape(self) -> tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int]]]:
        """(the pairs of calls that overlapped, the pairs where one ended before the other started)."""
        at = {(kind, i): k for k, (kind, i) in enumerate(self.events)}
        ran = sorted({i for _, i in self.events})
        overlap = frozenset((a, b) for a in ran for b in ran if a < b
                            and at["start", a] < at["end", b] and at["start", b] < at["end", a])
        before = frozenset((a, b) for a in ran for b in ran if at["end", a] < at["start", b])
        return overlap, before


def expected(skipped: frozenset[int] = frozenset()) -> tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int]]]:
    """The shape the waves give: calls of a wave overlap; every call of a wave ends before a later wave starts."""
    overlap = frozenset((a, b) for w in WAVES for a in w for b in w if a < b and a not in skipped and b not in skipped)
    before = frozenset((a, b) for k, w in enumerate(WAVES) for later in WAVES[k + 1:] for a in w for b in later
                       if a not in skipped and b not in skipped)
    return overlap, before


def turn(prefix: str = "", ids: str = "c") -> ModelReply:
    return ModelReply(tool_calls=tuple(ToolCall(f"{ids}{i}", prefix + n, {"i": i}) for i, n in enumerate(MIX)), usage=Usage(10, 5))


def model(prefix: str = "") -> ScriptedModel:
    return ScriptedModel([turn(prefix), ModelReply(text="done", usage=Usage(10, 5))])


def refuse_change(call: ToolCall) -> ToolResult | None:
    """An ``admit`` under which the writing call's reservation does not hold."""
    return ToolResult(call.id, call.name, False, error="no room") if call.name.endswith("change") else None


def by_run(tmp: Path, log: Log) -> list[ToolResult]:
    t = MemoryTranscript()
    run(model(), log.tools(), "go", Budget(max_steps=5), transcript=t)
    return [ToolResult.from_json(r.payload) for r in t.records if r.kind == "tool_result"]


def by_arun(tmp: Path, log: Log) -> list[ToolResult]:
    t = MemoryTranscript()
    asyncio.run(arun(model(), log.atools(), "go", Budget(max_steps=5), transcript=t))
    return [ToolResult.from_json(r.payload) for r in t.records if r.kind == "tool_result"]


def by_replay(tmp: Path, log: Log) -> list[ToolResult]:
    from agentloop.replay import replay
    from agentloop.transcript import read_records

    path = tmp / "recorded.jsonl"
    recorder = Log()
    with TranscriptWriter(path) as w:
        run(model(), recorder.tools(), "go", Budget(max_steps=5), transcript=w)
    out = tmp / "replayed.jsonl"
    result = replay(str(path), tools=log.tools(), mode="live-tools", out=str(out))
    log.replay_equal = result.equal  # the same records as the run made, byte for byte (unless admit refused one)
    return [ToolResult.from_json(r.payload) for r in read_records(str(out)) if r.kind == "tool_result"]


def by_parallel_executor(tmp: Path, log: Log) -> list[ToolResult]:
    """A library user's sub-agent executor: its calls through the same scheduler; the registry's tools' own
    records decide (here none is an ``Agent`` call, so each runs through ``inner``, in the same waves)."""
    from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor

    reg = Registry(log.tools())
    runner = SubagentRunner(model=None, make_tools=lambda cwd: reg, cwd=str(tmp), transcript_dir=str(tmp / "subagents"))
    execute = parallel_executor(lambda cs: [reg.invoke(c) for c in cs], runner, registry=reg)
    t = MemoryTranscript()
    run(model(), reg, "go", Budget(max_steps=5), transcript=t, executor=execute)
    return [ToolResult.from_json(r.payload) for r in t.records if r.kind == "tool_result"]


def _agent(proj: Path, scripted: Callable[..., str], log: Log, replies: list[dict[str, Any]], child: bool = False) -> list[ToolResult]:
    """The tool results of the agent's turn, or (``child``) of its sub-agent's turn, from their transcripts."""
    import os

    from agentloop.agent.agent import Agent
    from agentloop.transcript import read_records

    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=1_000_000,
              cli_rules=[("allow", "Agent"), ("allow", "mcp__t__look"), ("allow", "mcp__t__change")])
    try:
        a.register_tools(log.tools("mcp__t__"))
        a.ask("go")
    finally:
        a.close()
    path = a.session.path
    if child:
        (sub,) = [r.payload for r in read_records(path) if r.kind == "subagent"]
        path = os.path.join(os.path.dirname(path), sub["transcript"]) if not os.path.isabs(sub["transcript"]) else sub["transcript"]
    return [ToolResult.from_json(r.payload) for r in read_records(path) if r.kind == "tool_result"]


def _calls(ids: str) -> list[dict[str, Any]]:
    return [{"id": f"{ids}{i}", "name": "mcp__t__" + n, "arguments": {"i": i}} for i, n in enumerate(MIX)]


ENTRY_POINTS: dict[str, Callable[[Path, Log], list[ToolResult]]] = {
    "run": by_run, "arun": by_arun, "replay": by_replay, "parallel_executor": by_parallel_executor,
}


@pytest.fixture()
def agent_entry_points(proj: Path, scripted: Callable[..., str]) -> Iterator[dict[str, Callable[[Path, Log], list[ToolResult]]]]:
    def agent_turn(tmp: Path, log: Log) -> list[ToolResult]:
        return _agent(proj, scripted, log, [{"text": "", "usage": [100, 10], "tool_calls": _calls("p")},
                                            {"text": "done", "usage": [100, 5]}])

    def sub_agent_turn(tmp: Path, log: Log) -> list[ToolResult]:
        results = _agent(proj, scripted, log, [
            {"text": "", "usage": [100, 10], "tool_calls": [{"name": "Agent", "arguments": {
                "description": "go", "prompt": "go", "subagent_type": "general-purpose", "isolation": "none"}}]},
            {"text": "", "usage": [50, 5], "tool_calls": _calls("c")},
            {"text": "child done", "usage": [50, 5]},
            {"text": "done", "usage": [100, 5]},
        ], child=True)
        return results

    yield {"agent": agent_turn, "sub-agent": sub_agent_turn}


def test_the_waves_are_the_consecutive_calls_that_may_overlap() -> None:
    calls = [ToolCall(f"c{i}", n, {"i": i}) for i, n in enumerate(MIX)]
    assert waves(calls, lambda c: c.name == "look") == WAVES
    assert waves(calls, lambda c: False) == [(i,) for i in range(len(MIX))]


def test_every_entry_point_runs_the_same_mix_in_the_same_waves(tmp_path: Path,
                                                                agent_entry_points: dict[str, Callable[[Path, Log], list[ToolResult]]]) -> None:
    every = {**ENTRY_POINTS, **agent_entry_points}
    assert set(every) == {"run", "arun", "replay", "parallel_executor", "agent", "sub-agent"}
    shapes = {}
    for name, entry in every.items():
        log = Log()
        started = time.monotonic()
        (tmp_path / name).mkdir()
        results = entry(tmp_path / name, log)
        assert [r.content for r in results] == list(range(len(MIX))), (name, results)  # call order, every call
        shapes[name] = log.shape()
        assert log.replay_equal is not False, name
        assert time.monotonic() - started < 20, name
    assert all(s == expected() for s in shapes.values()), shapes


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_a_call_whose_reservation_does_not_hold_never_starts(tmp_path: Path, name: str) -> None:
    log = Log()
    with turn_rules(admit=refuse_change):
        results = ENTRY_POINTS[name](tmp_path, log)
    assert ("start", 2) not in log.events, name  # the tool was never entered
    assert [(r.ok, r.error) for r in results][2] == (False, "no room")
    assert [r.content for r in results if r.ok] == [0, 1, 3, 4]
    assert log.shape() == expected(frozenset({2}))


def test_the_agents_calls_that_spend_start_only_while_the_run_has_room() -> None:
    """The terminal agent's ``admit`` (``ParentBudget.admit``): a call to a tool whose record ``spends`` (Agent,
    WebFetch, WebSearch) is refused before it starts when the run has nothing left; other calls always start."""
    from agentloop.agent.subagents.parent_budget import ParentBudget
    from agentloop.agent.tools.catalog import RECORDS

    spent = ParentBudget()
    spent.for_run(Budget(max_steps=5, max_usd_micros=0))
    room = ParentBudget()
    room.for_run(Budget(max_steps=5, max_usd_micros=1_000))
    spending = sorted(r.name for r in RECORDS if r.spends)
    assert spending == ["Agent", "WebFetch", "WebSearch"]
    for r in RECORDS:
        call = ToolCall("c1", r.name, {})
        refused = spent.admit(call)
        assert (refused is not None) == r.spends, r.name
        assert room.admit(call) is None
        if refused is not None:
            assert not refused.ok and "not started" in str(refused.error)


def test_the_agents_turn_holds_its_calls_to_the_agents_admit(monkeypatch: pytest.MonkeyPatch, proj: Path,
                                                             scripted: Callable[..., str]) -> None:
    """The agent's turns run under its ``ParentBudget.admit`` (``AgentContext.wrap_executor``)."""
    from agentloop.agent.subagents.parent_budget import ParentBudget

    monkeypatch.setattr(ParentBudget, "admit", lambda self, call: refuse_change(call))
    log = Log()
    results = _agent(proj, scripted, log, [{"text": "", "usage": [100, 10], "tool_calls": _calls("p")},
                                           {"text": "done", "usage": [100, 5]}])
    assert ("start", 2) not in log.events
    assert [r.ok for r in results] == [True, True, False, True, True]



@pytest.mark.parametrize("held", [600, 1_000])
def test_two_spending_calls_admitted_side_by_side_never_hold_more_than_the_room_together(held: int) -> None:
    """``admit`` only says the run has room as a call starts; what keeps two calls running side by side from
    passing the cap together is that each holds its bound before it spends (``ParentBudget.hold``, under one
    lock). Two calls of a spending tool (named as WebFetch, made concurrent here so they overlap, as two
    children's WebFetch calls do) are both admitted with 1,000 micro-USD left; each would fit alone, not both:
    one holds and settles, the other is refused before it spends, and the run's spend stays under its cap."""
    from agentloop.agent.context.side_calls import HeldAccount
    from agentloop.agent.subagents.parent_budget import ParentBudget
    from agentloop.agent.tools.catalog import record_of

    rec = record_of("WebFetch")
    assert rec is not None and rec.spends
    room = ParentBudget()
    both_in = threading.Barrier(2, timeout=5)
    outcomes: list[str | None] = []
    lock = threading.Lock()

    def fetch(i: int) -> str:
        both_in.wait()  # both calls were admitted and are running side by side before either holds
        account = HeldAccount(room)
        why = account.ask("web_fetch", held, 0)
        with lock:
            outcomes.append(why)
        if why is not None:
            return f"refused: {why}"
        account.settle("web_fetch", held, 0, Usage(10, 5), held)
        return "fetched"

    spending = Tool(rec.name, "fetch", SCHEMA, fetch, concurrent=True)
    calls = ModelReply(tool_calls=(ToolCall("w0", rec.name, {"i": 0}), ToolCall("w1", rec.name, {"i": 1})), usage=Usage(0, 0))
    t = MemoryTranscript()
    with turn_rules(admit=room.admit):
        result = run(ScriptedModel([calls, ModelReply(text="done")]), [spending], "go", Budget(max_steps=5, max_usd_micros=1_000),
                     transcript=t, prepare=room.bind, prices={"scripted": Price(0, 0)})  # the turns cost nothing
    assert sorted(o is None for o in outcomes) == [False, True], outcomes  # both ran; one held, one was refused
    sides = [r.payload for r in t.records if r.kind == "side_cost"]
    assert [s["cost_micros"] for s in sides] == [held]
    assert result.spent_micros == held <= 1_000 and result.stop_reason == "no_tool_calls"
