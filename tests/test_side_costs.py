"""Costs beside the model turn enter the loop as inbound events.

A compaction's summary, a model loop check and a child agent's run are paid
for by the run but are not its turns. The loop alone decides whether a side
call may be made and charges what it cost (``loop`` rule 6); each is a
``side_cost`` record (docs/transcript-format.md, section 5.2). These tests
pin the transitions with no driver, then the whole path through ``run()``
and replay, and check that nothing outside ``loop.py`` writes the loop's
money fields.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from _loopkit import cfg, kinds, to_call
from agentloop import Budget, MemoryTranscript, Registry, run, tool
from agentloop.budget import Price
from agentloop.events import ModelReply, ModelRequest, ToolCall, ToolResult, Usage
from agentloop.loop import (
    Append,
    LoopConfig,
    ModelReplied,
    Reserve,
    Reserved,
    Settle,
    SideCostAnswer,
    SideCostAsked,
    SideCostSettled,
    State,
    ToolsDone,
    after_prepare,
    step,
)
from agentloop.replay import replay
from agentloop.transcript import TranscriptWriter, read_records

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"


def _to_tools(cfg: LoopConfig) -> State:
    """A first turn that asked for a tool call: the loop waits for its result (where a child runs)."""
    state = to_call(cfg)
    state, out = step(state, ModelReplied(ModelReply(tool_calls=(ToolCall("c1", "echo", {"text": "x"}),), usage=Usage(10, 2))))
    assert kinds(out)[-1] == "RunTools"
    return state


def _record(out: list[Any]) -> dict[str, Any]:
    (rec,) = [o.payload for o in out if isinstance(o, Append) and o.kind == "side_cost"]
    return dict(rec)


# --- the transitions ------------------------------------------------------------------


def test_a_side_call_with_room_is_reserved_with_the_ledger_then_granted_then_charged_and_recorded() -> None:
    state = to_call(cfg())
    spent, held = state.spent_micros, state.reserved_micros
    state, out = step(state, SideCostAsked("loop_check", 500, 300))
    assert len(out) == 1 and isinstance(out[0], Reserve) and (out[0].amount_micros, out[0].tokens) == (500, 300)
    state, out = step(state, Reserved(True))
    assert len(out) == 1 and isinstance(out[0], SideCostAnswer) and out[0].granted
    assert state.spent_micros == spent  # granted is not spent
    state, out = step(state, SideCostSettled("loop_check", Usage(40, 2), 44))
    assert kinds(out) == ["Settle", "side_cost"]
    settle = out[0]
    assert isinstance(settle, Settle) and (settle.reserved_micros, settle.actual_micros, settle.actual_tokens) == (500, 44, 42)
    rec = _record(out)
    assert rec == {"step": 0, "purpose": "loop_check", "reserved_micros": 500, "reserved_tokens": 300, "usage": Usage(40, 2).to_json(),
                   "cost_micros": 44, "spent_micros": spent + 44, "tokens": 42}
    assert (state.spent_micros, state.tokens, state.usage) == (spent + 44, 42, Usage(40, 2))
    assert state.reserved_micros == held and state.phase == "call"  # the turn's own reservation still stands
    assert after_prepare(state, None) is None  # the call goes ahead


def test_a_side_call_past_what_the_cap_leaves_after_the_held_turn_is_refused_by_the_loop_and_recorded() -> None:
    state = to_call(cfg(max_usd_micros=20_000))
    left = 20_000 - state.spent_micros - state.reserved_micros
    assert left > 0
    state, out = step(state, SideCostAsked("compaction", left + 1, 10))
    assert kinds(out) == ["side_cost", "SideCostAnswer"]  # no Reserve: the ledger is never asked
    answer = out[1]
    assert isinstance(answer, SideCostAnswer) and not answer.granted and "has no room" in str(answer.reason)
    rec = _record(out)
    assert rec["by"] == "budget" and rec["needed_micros"] == left + 1 and f"{left} are left" in rec["refused"]
    assert state.spent_micros == 0 and state.side_asked is None
    # exactly what is left still fits
    state, out = step(state, SideCostAsked("compaction", left, 10))
    assert kinds(out) == ["Reserve"]


def test_a_side_call_past_the_token_cap_less_the_held_turn_is_refused() -> None:
    from agentloop.loop import side_room

    state = to_call(cfg(max_tokens=100_000))
    money, tokens = side_room(state)
    assert money == 1_000_000 - state.reserved_micros and tokens == 100_000 - state.reserved_tokens > 0
    state, out = step(state, SideCostAsked("loop_check", 1, tokens + 1))
    assert kinds(out) == ["side_cost", "SideCostAnswer"] and _record(out)["by"] == "budget"
    state, out = step(state, SideCostAsked("loop_check", 1, tokens))
    assert kinds(out) == ["Reserve"]


def test_a_side_call_the_shared_ledger_refuses_is_recorded_as_the_ledgers_refusal() -> None:
    state = to_call(cfg())
    state, out = step(state, SideCostAsked("loop_check", 500, 300))
    state, out = step(state, Reserved(False))
    assert kinds(out) == ["side_cost", "SideCostAnswer"]
    assert _record(out)["by"] == "ledger" and "shared ledger refused a reservation of 500" in _record(out)["refused"]
    assert state.side_asked is None and not state.side_waiting
    state, out = step(state, SideCostAsked("loop_check", 500, 300))  # the next ask is answered afresh
    assert kinds(out) == ["Reserve"]


def test_a_side_call_billed_past_its_reservation_stops_the_run_with_budget_overrun_before_the_call() -> None:
    state = to_call(cfg())
    state, _ = step(state, SideCostAsked("compaction", 100, 50))
    state, _ = step(state, Reserved(True))
    state, out = step(state, SideCostSettled("compaction", Usage(1000, 0), 1000))
    assert "past its reservation of 100" in _record(out)["overrun"]
    stop = after_prepare(state, None)
    assert stop is not None and kinds(stop) == ["overrun", "Settle", "stop", "Finished"]
    assert state.stop_reason == "budget_overrun" and state.spent_micros >= 1000


def test_a_childs_spend_settled_while_tools_run_is_charged_and_counts_at_the_next_turn() -> None:
    state = _to_tools(cfg(max_usd_micros=50_000))
    before = state.spent_micros
    state, out = step(state, SideCostSettled("subagent", Usage(300, 30), 360, reserved_micros=20_000, reserved_tokens=None))
    assert kinds(out) == ["side_cost"]  # no ask, so nothing to settle with the ledger: the child reserved its own
    rec = _record(out)
    assert (rec["purpose"], rec["reserved_micros"], rec["cost_micros"], rec["spent_micros"]) == ("subagent", 20_000, 360, before + 360)
    state, out = step(state, ToolsDone((ToolResult("c1", "echo", True, "x"),)))
    assert kinds(out)[:2] == ["tool_result", "Reserve"] and state.spent_micros == before + 360


def test_a_child_stopped_by_budget_overrun_stops_its_parent_before_its_next_call() -> None:
    state = _to_tools(cfg())
    state, _ = step(state, SideCostSettled("subagent", Usage(1, 1), 10, reserved_micros=1000, overrun="a sub-agent was billed past its reservation: x"))
    state, out = step(state, ToolsDone((ToolResult("c1", "echo", True, "x"),)))
    assert kinds(out) == ["tool_result", "overrun", "stop", "Finished"] and state.stop_reason == "budget_overrun"


def test_a_childs_tokens_past_the_token_cap_stop_the_parent_with_token_budget() -> None:
    state = _to_tools(cfg(max_tokens=1000))
    state, _ = step(state, SideCostSettled("subagent", Usage(990, 10), 5, reserved_micros=None))
    state, out = step(state, ToolsDone((ToolResult("c1", "echo", True, "x"),)))
    assert kinds(out) == ["tool_result", "stop", "Finished"] and state.stop_reason == "token_budget"


def test_a_side_cost_asked_while_tools_run_or_asked_twice_is_a_driver_bug() -> None:
    with pytest.raises(ValueError, match="cannot take SideCostAsked"):
        step(_to_tools(cfg()), SideCostAsked("loop_check", 1, 1))
    state = to_call(cfg())
    state, _ = step(state, SideCostAsked("loop_check", 1, 1))
    with pytest.raises(ValueError, match="cannot take SideCostAsked"):
        step(state, SideCostAsked("loop_check", 1, 1))


def test_a_stop_before_a_granted_side_call_is_settled_frees_its_reservation() -> None:
    from agentloop.loop import interrupt

    state = to_call(cfg())
    state, _ = step(state, SideCostAsked("compaction", 700, 70))
    state, _ = step(state, Reserved(True))
    out = interrupt(state)
    settles = [(o.reserved_micros, o.actual_micros) for o in out if isinstance(o, Settle)]
    assert (700, 0) in settles and state.side_asked is None


# --- through run() and replay ---------------------------------------------------------


@tool(read_only=True)
def big(n: int) -> str:
    """A large output."""
    return f"{n}:" + "y" * 3000


def _side_records(path: Path) -> list[dict[str, Any]]:
    return [dict(r.payload) for r in read_records(str(path)) if r.kind == "side_cost"]


def test_compaction_a_loop_check_and_a_childs_run_are_side_cost_records_counted_against_the_cap_and_replayed(tmp_path: Path) -> None:
    """The three side costs of one capped run: each a ``side_cost`` record, all in the stop's spend, the cap held,
    and the file replays byte for byte with no summariser, no checker and no child (the record answers)."""
    from agentloop.agent.context.compaction import Compactor
    from agentloop.agent.context.loop_check import LoopCheck, chain
    from agentloop.agent.subagents.runner import SubagentRunner
    from agentloop.testing import ScriptedModel, reply

    cap = 2_000_000
    prices = {"m": Price(1_000_000, 2_000_000)}
    cm = Compactor(window=1000, keep_recent=1, mask_threshold=100, transcript_path=str(tmp_path / "t.jsonl"),
                        summarizer=ScriptedModel([reply("the summary", usage=(200, 5))] * 4, name="m"))
    check = LoopCheck(ScriptedModel([reply("NOT_LOOPING", usage=(50, 1))] * 3, name="cheap"), model_name="cheap",
                      price=Price(1_000_000, 2_000_000), after=2, every=100)
    child = ScriptedModel([reply("child done", usage=(300, 20))], name="m")
    runner = SubagentRunner(model=child, make_tools=lambda cwd: Registry([big]), cwd=str(tmp_path),
                            transcript_dir=str(tmp_path / "subagents"), prices=prices, model_name="m", default_isolation="none")
    steps = [reply("", [("Agent", {"description": "d", "prompt": "look", "subagent_type": "Explore"})], usage=(10, 1))]
    steps += [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(1, 4)]
    steps += [reply("done", usage=(10, 1))]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        runner.record = w.append
        r = run(ScriptedModel(steps, name="m"), Registry([big, runner.tool()]), [{"role": "user", "content": "go"}],
                Budget(max_steps=10, max_usd_micros=cap), transcript=w, prices=prices,
                prepare=chain(runner.parent.bind, cm.prepare, check.prepare))
    assert r.stop_reason == "no_tool_calls", r.error
    sides = _side_records(path)
    assert sorted({s["purpose"] for s in sides}) == ["compaction", "loop_check", "subagent"]
    recs = list(read_records(str(path)))
    turns = sum(x.payload["cost_micros"] for x in recs if x.kind == "budget")
    assert all(any(s["cost_micros"] > 0 for s in sides if s["purpose"] == p) for p in ("compaction", "loop_check", "subagent")), sides
    assert r.spent_micros == turns + sum(s["cost_micros"] for s in sides) <= cap
    assert recs[-1].payload["spent_micros"] == r.spent_micros
    # the child's spend is recorded before the Agent call's result, as the parent's loop took it
    recorded = [x.kind for x in recs]
    sub = next(i for i, x in enumerate(recs) if x.kind == "side_cost" and x.payload["purpose"] == "subagent")
    assert recorded.index("tool_result") > sub
    # the side calls' own records say where their charge is, and the session's total counts each once
    comp = [x.payload for x in recs if x.kind == "compaction" and "call" in x.payload]
    assert comp and all(c["call"]["charged_as"] == "side_cost" for c in comp)
    from agentloop.agent.session.store import summarize

    assert summarize(str(path)).spent_micros == r.spent_micros
    res = replay(str(path))
    assert res.equal, res.summary()
    assert res.result is not None and res.result.spent_micros == r.spent_micros


def test_a_cap_with_no_room_for_the_loop_check_records_the_loops_refusal_and_the_run_goes_on(tmp_path: Path) -> None:
    from agentloop.agent.context.loop_check import LoopCheck
    from agentloop.testing import ScriptedModel, reply

    dear = LoopCheck(ScriptedModel([], name="dear"), model_name="dear", price=Price(10**9, 10**9), after=1, every=1)
    t = MemoryTranscript()
    script = [reply("", [("echo", {"text": f"{i}"})], usage=(10, 1), step=i) for i in range(1, 3)] + [reply("ok", usage=(10, 1))]

    @tool(read_only=True)
    def echo(text: str) -> str:
        """Echo."""
        return text

    r = run(ScriptedModel(script), [echo], "t", Budget(max_steps=5, max_usd_micros=200_000), transcript=t, prepare=dear.prepare,
            prices={"ScriptedModel": Price(1_000_000, 2_000_000)})
    assert r.stop_reason == "no_tool_calls"
    refusals = [x.payload for x in t.records if x.kind == "side_cost"]
    assert refusals and all(p["by"] == "budget" and "has no room" in p["refused"] for p in refusals)
    checks = [x.payload for x in t.records if x.kind == "loop_check"]
    assert checks and all("has no room" in c["skipped"] for c in checks)


# --- a manual /compact between runs: the session's Ledger decides and charges ---------


class _Summarizer:
    """Answers a compaction's summary request with 50 tokens in and 10 out; anything else is a test bug."""

    name = "summarizer"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, req: ModelRequest) -> ModelReply:
        self.calls += 1
        return ModelReply(text="Summary: the user pasted a long log twice.", usage=Usage(50, 10))


def _session_agent(tmp_path: Path, cap: int) -> tuple[Any, _Summarizer]:
    from agentloop.agent.agent import Agent

    (tmp_path / "proj").mkdir(exist_ok=True)
    model = _Summarizer()
    a = Agent(cwd=str(tmp_path / "proj"), home=str(tmp_path / "home"), model=model, price=Price(1_000_000, 1_000_000),
              max_usd_micros=cap, env={"PATH": "/usr/bin:/bin"})
    log = "line of a long log\n" * 2000
    a.session.messages.extend([{"role": "user", "content": log}, {"role": "assistant", "content": "seen"},
                               {"role": "user", "content": log}, {"role": "assistant", "content": "seen again"},
                               {"role": "user", "content": "and now?"}, {"role": "assistant", "content": "ready"}])
    return a, model


def test_a_manual_compact_is_charged_to_the_session_by_its_ledger(tmp_path: Path) -> None:
    """Between runs no loop takes a side cost: the session's ``budget.Ledger`` holds the summary's bound and
    charges its bill (60 tokens at one micro-dollar each), which the session's spend then shows."""
    a, model = _session_agent(tmp_path, cap=5_000_000)
    try:
        before = a.stats.spent_micros
        a.compact("")
        (comp,) = [r.payload for r in read_records(a.session.path) if r.kind == "compaction"]
        assert comp["status"] == "compacted" and model.calls == 1
        assert comp["call"]["cost_micros"] == 60 and a.stats.spent_micros == before + 60
    finally:
        a.close()


def test_a_manual_compact_the_session_has_no_room_for_is_refused_before_the_call(tmp_path: Path) -> None:
    """The ledger refuses a bound past what the cap leaves: the summary is not asked, nothing is charged."""
    from agentloop.agent.errors import AgentError

    a, model = _session_agent(tmp_path, cap=2_000)
    try:
        with pytest.raises(AgentError, match="no room"):
            a.compact("")
        assert model.calls == 0 and a.stats.spent_micros == 0
    finally:
        a.close()


def test_the_agents_side_calls_are_held_and_billed_in_one_module() -> None:
    """Compaction, the loop check, WebFetch's prompt call, WebSearch and a manual /compact all hold and settle
    through ``agent/context/side_calls.py`` (its accounts and ``metered``); only the sub-agents' shared room
    (``ParentBudget``) holds beside it. No other module of the agent or the CLI asks a budget whether a bound
    fits, holds one, or reads a bill."""
    import re

    calls = re.compile(r"\b(bill|capped_bill|unreported_bill|over_cap)\(|\.(fits|reserve|hold|forfeit|settle_side)\(")
    found = {p.relative_to(SRC).as_posix() for folder in ("agent", "cli") for p in (SRC / folder).rglob("*.py")
             if calls.search(p.read_text(encoding="utf-8"))}
    assert found == {"agent/context/side_calls.py", "agent/subagents/parent_budget.py"}


# --- nothing else writes the loop's money ---------------------------------------------

MONEY = {
    "spent_micros", "tokens", "usage", "overrun", "reserved_micros", "reserved_tokens", "side_asked", "side_waiting",
    # what the next reservation is computed from: the bounds of the messages, the tools and framing, the images,
    # the pending bound, the steps (the step budget) and the config (the price, the caps, the tools)
    "messages_bound", "framing_bound", "images", "bound", "steps", "config",
}
"""The loop ``State``'s fields that hold money, feed a reservation, or hold the decisions on them."""

RESERVING = ("_next_turn", "_reserve", "_on_counted", "side_room", "_on_side_asked", "_past_caps", "_continue")
"""The loop's functions that decide a reservation or a budget stop."""

NOT_MONEY = {"error", "phase", "continuations", "request", "messages"}
"""State fields those functions read that are no figure: a message, the phase, a count of continuations, the
request object (rebuilt from the messages), the messages (their bound is ``messages_bound``)."""

NOT_A_STATE = {
    # (file, assignment target) of objects that are not a loop State, each checked by eye when listed.
    # ``self.<field>`` is always allowed: an object setting its own field (a ledger, a session's stats).
    ("agent/session/store.py", "stats.spent_micros"),  # SessionStats: the session's tally, folded from records
    ("agent/agent.py", "s.stats.spent_micros"),
    ("agent/agent.py", "self.stats.spent_micros"),  # a manual /compact between runs: what the session's Ledger charged
    ("providers/base.py", "err.usage"),  # a provider error's billed attempts
    ("providers/base.py", "final.usage"),
    ("replay.py", "exc.usage"),
}


def _money_writes(root: Path = SRC) -> list[tuple[str, str, int]]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ("loop.py", "budget.py"):  # the two modules that decide money
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) >= 2:
                a = node.args[1]
                if isinstance(a, ast.Constant) and a.value in MONEY:
                    out.append((rel, ast.unparse(node), node.lineno))
            for t in targets:
                for e in ast.walk(t):
                    if isinstance(e, ast.Attribute) and e.attr in MONEY and isinstance(e.ctx, ast.Store):
                        if not (isinstance(e.value, ast.Name) and e.value.id == "self"):
                            out.append((rel, ast.unparse(e), e.lineno))
    return [w for w in out if (w[0], w[1]) not in NOT_A_STATE]


def test_the_guarded_fields_are_every_field_a_reservation_is_computed_from() -> None:
    """Every ``State`` field the loop reads when it reserves or stops on a budget is guarded (a new one must
    be added to ``MONEY``), and each guarded field is a field of ``State``."""
    tree = ast.parse((SRC / "loop.py").read_text(encoding="utf-8"))
    read: set[str] = set()
    for f in tree.body:
        if isinstance(f, ast.FunctionDef) and f.name in RESERVING:
            read |= {n.attr for n in ast.walk(f) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "state"}
    assert {f.name for f in tree.body if isinstance(f, ast.FunctionDef)} >= set(RESERVING)
    assert read - NOT_MONEY <= MONEY, f"unguarded fields that feed a reservation: {sorted(read - NOT_MONEY - MONEY)}"
    assert {"messages_bound", "framing_bound", "images", "bound"} <= read
    assert MONEY <= {f.name for f in dataclasses.fields(State)}


def test_nothing_outside_the_loop_assigns_the_loops_money_fields() -> None:
    """The loop alone writes its spend, tokens, usage, reservations and overrun: a side cost is an inbound event."""
    assert _money_writes() == []


def test_the_scan_finds_the_writes_this_change_removed(tmp_path: Path) -> None:
    """The scan's own negative control: the State writes of sidecall.py, subagent.py and replay.py before
    this change (copied here as they were) are all found."""
    (tmp_path / "agent" / "context").mkdir(parents=True)
    (tmp_path / "agent" / "subagents").mkdir()
    (tmp_path / "agent" / "context" / "side_calls.py").write_text(
        "def settle(self, usage, cost):\n    st = self.state\n    st.overrun = 'x'\n    st.spent_micros += cost\n"
        "    st.tokens += usage.total\n    st.usage = st.usage + usage\n")
    (tmp_path / "agent" / "subagents" / "runner.py").write_text("def settle(self, result):\n    with self._lock:\n        self.state.spent_micros += result.spent_micros\n")
    (tmp_path / "replay.py").write_text("def prepare(state, nxt):\n    state.overrun, state.tokens = str(nxt), 0\n    setattr(state, 'usage', None)\n")
    found = {(w[0], w[1]) for w in _money_writes(tmp_path)}
    assert {("agent/context/side_calls.py", "st.overrun"), ("agent/context/side_calls.py", "st.spent_micros"), ("agent/context/side_calls.py", "st.tokens"),
            ("agent/context/side_calls.py", "st.usage"), ("agent/subagents/runner.py", "self.state.spent_micros"), ("replay.py", "state.overrun"),
            ("replay.py", "state.tokens")} <= found
    assert any(w[0] == "replay.py" and "setattr" in w[1] for w in found)


# --- files written before side_cost records ---------------------------------------------

LEGACY = Path(__file__).parent / "data" / "side-costs-legacy"


@pytest.mark.parametrize("name", ["loop-check.jsonl", "compaction-overrun.jsonl"])
def test_a_file_written_before_side_cost_records_still_verifies_and_replays_byte_for_byte(name: str) -> None:
    """Older files charged side calls from their own records: replay charges them the same way, writing nothing new."""
    from agentloop.transcript import verify_file

    path = LEGACY / name
    assert verify_file(str(path)).ok
    recorded = [r.kind for r in read_records(str(path))]
    assert "side_cost" not in recorded and ("loop_check" in recorded or "compaction" in recorded)
    res = replay(str(path))
    assert res.equal, res.summary()
    stop = json.loads(path.read_bytes().splitlines()[-1])["payload"]
    turns = sum(r.payload["cost_micros"] for r in read_records(str(path)) if r.kind == "budget")
    assert stop["spent_micros"] > turns  # the side calls were in the spend, and replay charged them again
    assert res.result is not None and res.result.spent_micros == stop["spent_micros"]


def test_the_legacy_files_are_what_their_source_says() -> None:
    assert (LEGACY / "SOURCE.md").is_file()
    assert os.path.getsize(LEGACY / "loop-check.jsonl") > 0


class _RefuseNth:
    """A shared ledger that refuses its ``n``-th reservation and grants the rest."""

    def __init__(self, n: int):
        self.n, self.k, self.settled = n, 0, 0

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        self.k += 1
        return self.k != self.n

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        self.settled += 1


def _checked_run(ledger: Any, transcript: Any) -> Any:
    from agentloop.agent.context.loop_check import LoopCheck
    from agentloop.testing import ScriptedModel, reply

    @tool(read_only=True)
    def echo(text: str) -> str:
        """Echo."""
        return text

    check = LoopCheck(ScriptedModel([reply("NOT_LOOPING", usage=(5, 1))] * 3, name="cheap"), model_name="cheap",
                      price=Price(1_000_000, 2_000_000), after=1, every=1)
    script = [reply("", [("echo", {"text": f"{i}"})], usage=(10, 1), step=i) for i in range(1, 3)] + [reply("ok", usage=(10, 1))]
    return run(ScriptedModel(script), [echo], "t", Budget(max_steps=5), transcript=transcript, prepare=check.prepare,
               ledger=ledger, prices={"ScriptedModel": Price(1_000_000, 2_000_000)})


def test_a_side_call_the_shared_ledger_refuses_is_not_made_and_replays_as_refused(tmp_path: Path) -> None:
    """Reservations: turn 1, turn 2, the loop check before turn 2's call (refused), turn 3, its check (granted)."""
    ledger = _RefuseNth(3)
    t = MemoryTranscript()
    r = _checked_run(ledger, t)
    assert r.stop_reason == "no_tool_calls"
    sides = [x.payload for x in t.records if x.kind == "side_cost"]
    assert sides[0]["by"] == "ledger" and "shared ledger refused" in sides[0]["refused"]
    assert "refused" not in sides[1] and sides[1]["cost_micros"] > 0
    assert ledger.settled == ledger.k - 1  # every granted reservation, side calls included, is settled once
    path = tmp_path / "t.jsonl"
    path.write_bytes(t.getvalue())
    res = replay(str(path))
    assert res.equal, res.summary()


def test_arun_takes_side_costs_as_run_does_byte_for_byte() -> None:
    import asyncio

    from agentloop import arun
    from agentloop.agent.context.loop_check import LoopCheck
    from agentloop.testing import ScriptedModel, reply

    def go(driver: Any) -> bytes:
        check = LoopCheck(ScriptedModel([reply("NOT_LOOPING", usage=(5, 1))] * 3, name="cheap"), model_name="cheap",
                          price=Price(1_000_000, 2_000_000), after=1, every=1)
        script = [reply("", [("echo", {"text": f"{i}"})], usage=(10, 1), step=i) for i in range(1, 3)] + [reply("ok", usage=(10, 1))]
        t = MemoryTranscript()

        @tool(read_only=True)
        def echo(text: str) -> str:
            """Echo."""
            return text

        out = driver(ScriptedModel(script), [echo], "t", Budget(max_steps=5, max_usd_micros=1_000_000), transcript=t, prepare=check.prepare)
        if asyncio.iscoroutine(out):
            asyncio.run(out)
        return t.getvalue()

    sync, async_ = go(run), go(arun)
    assert b'"kind":"side_cost"' in sync and sync == async_


def test_a_summary_billed_past_its_bound_is_recorded_as_an_overrun_and_stops_the_run_before_its_next_call(tmp_path: Path) -> None:
    """A summary reporting a million input tokens for a request whose bytes bound it far lower: no provider
    can have billed that, so it is charged its whole reservation, as an overrun that stops the run."""
    from agentloop.agent.context.compaction import Compactor
    from agentloop.testing import ScriptedModel, reply

    cm = Compactor(window=1000, keep_recent=1, mask_threshold=100, transcript_path=str(tmp_path / "t.jsonl"),
                   summarizer=ScriptedModel([reply("summary", usage=(1_000_000, 5))]))
    steps = [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(4)]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(ScriptedModel(steps), [big], [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
                Budget(max_steps=10, max_usd_micros=10_000_000), transcript=w, prepare=cm.prepare)
    assert r.stop_reason == "budget_overrun" and "side call (compaction)" in (r.error or "")
    recs = list(read_records(str(path)))
    (side,) = [x.payload for x in recs if x.kind == "side_cost"]
    assert side["cost_micros"] == side["reserved_micros"] and side["overrun"] == r.error
    assert "cannot have been billed" in side["overrun"]
    assert [x.kind for x in recs][-2:] == ["overrun", "stop"]
    assert sum(1 for x in recs if x.kind == "model_turn") == r.steps  # no call was made after the bill
    assert replay(str(path)).equal


class _Agentish:
    """A model for the terminal agent that writes compaction summaries when asked and plays a parent that
    delegates once, a child that answers, then a parent that reads a large file until it is compacted."""

    name = "scripted"

    def __init__(self) -> None:
        self.parent = 0

    def complete(self, req: ModelRequest) -> ModelReply:
        from agentloop.agent.context.compaction import COMPACT_PROMPT

        first = str(req.messages[0].get("content", ""))
        if not req.tools and first.startswith(COMPACT_PROMPT):
            return ModelReply(text="Summary: read big.txt several times.", usage=Usage(500, 40))
        if "sub-agent" in first:
            return ModelReply(text="the child looked", usage=Usage(400, 20))
        self.parent += 1
        n = self.parent
        if n == 1:
            args = {"description": "look", "prompt": "look around", "subagent_type": "Explore"}
            return ModelReply(tool_calls=(ToolCall("a1", "Agent", args),), usage=Usage(100, 10))
        if n <= 13:
            return ModelReply(tool_calls=(ToolCall(f"r{n}", "Read", {"file_path": "big.txt", "offset": n}),), usage=Usage(100, 10))
        return ModelReply(text="done", usage=Usage(100, 5))


def test_an_agent_sessions_compaction_and_child_are_side_costs_within_its_spend_cap(proj: Path) -> None:
    """The terminal agent's spend cap (``--max-usd``, here ``max_usd_micros``) holds the turns, the compaction
    summaries and the child's run; the session file says so in ``side_cost`` records and replays byte for byte."""
    from agentloop.agent.agent import Agent

    (proj / "big.txt").write_text(("x" * 99 + "\n") * 200)
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"contextWindow": 8000, "permissions": {"allow": ["Agent"]}}))
    cap = 3_000_000
    a = Agent(cwd=str(proj), trust=True, model=_Agentish(), max_usd_micros=cap)
    res = a.ask("look, then read it many times")
    a.close()
    assert res.stop_reason == "no_tool_calls", res.error
    recs = list(read_records(a.session.path))
    sides = [x.payload for x in recs if x.kind == "side_cost"]
    assert {"compaction", "subagent"} <= {s["purpose"] for s in sides if s.get("cost_micros", 0) > 0}
    turns = sum(x.payload["cost_micros"] for x in recs if x.kind == "budget")
    stop = [x.payload for x in recs if x.kind == "stop"][-1]
    assert stop["spent_micros"] == res.spent_micros == turns + sum(s.get("cost_micros", 0) for s in sides) <= cap
    assert a.stats.spent_micros == res.spent_micros
    from agentloop.agent.session.store import summarize

    assert summarize(a.session.path).spent_micros == res.spent_micros
    r = replay(a.session.path)
    assert r.equal, r.summary()


def test_a_childs_spend_before_a_ctrl_c_is_still_the_runs(tmp_path: Path) -> None:
    """A child finished (its spend queued while the tools ran), then the user pressed Ctrl+C: the stop counts it."""
    from agentloop.run import SideCosts
    from agentloop.testing import ScriptedModel, reply

    held: list[SideCosts] = []

    def prepare(state: Any, record: Any) -> None:
        held[:] = [record]

    def execute(calls: Any) -> list[Any]:
        held[0].settle("subagent", Usage(1000, 100), 4321, reserved_micros=50_000)
        raise KeyboardInterrupt

    t = MemoryTranscript()
    r = run(ScriptedModel([reply("", [("big", {"n": 1})], usage=(10, 1))]), [big], "go", Budget(max_steps=5, max_usd_micros=100_000),
            transcript=t, prepare=prepare, executor=execute)
    assert r.stop_reason == "interrupted"
    recorded = [x.kind for x in t.records]
    assert recorded[-2:] == ["side_cost", "stop"]
    stop = [x.payload for x in t.records if x.kind == "stop"][-1]
    turn = [x.payload for x in t.records if x.kind == "budget"][-1]["cost_micros"]
    assert stop["spent_micros"] == r.spent_micros == turn + 4321
