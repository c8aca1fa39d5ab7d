"""Sub-agents in the background: Claude Code's ``run_in_background`` on ``Agent``.

Claude Code documents (sub-agents): "Background subagents run concurrently while you continue working"; the
Agent tool's ``run_in_background`` returns at once, and the agent's result reaches the model as a notification
on a later turn; in ``-p`` the session waits for background agents before it ends. Here: the call returns
at once naming the agent, the report arrives as a user message before the next model call, ``-p`` waits and
goes on, the bill lands in the session's spend, and Ctrl+C or the session's end stops the child.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.agent.subagents.parent_budget import ParentBudget
from agentloop.agent.subagents.runner import verify_tree
from agentloop.budget import Budget, Price
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
from agentloop.transcript import read_records


class Model:
    """Parent and child on one model, told apart by the child's system prompt; the child waits for ``go``."""

    name = "m"

    def __init__(self, parent: list[ModelReply], child: Any):
        self.parent, self.child = list(parent), child
        self.parent_requests: list[ModelRequest] = []
        self.go = threading.Event()

    def complete(self, req: ModelRequest) -> ModelReply:
        if "sub-agent" in str(req.messages[0].get("content", "")):
            return self.child(self, req)
        self.parent_requests.append(req)
        return self.parent.pop(0)


def bg_call(prompt: str = "look into it") -> ModelReply:
    args = {"description": "research", "prompt": prompt, "run_in_background": True, "isolation": "none"}
    return ModelReply(tool_calls=(ToolCall("a1", "Agent", args),), usage=Usage(100, 10))


def say(text: str) -> ModelReply:
    return ModelReply(text=text, usage=Usage(100, 10))


def reporting_child(m: Model, req: ModelRequest) -> ModelReply:
    assert m.go.wait(20)
    return ModelReply(text="the report: 42", usage=Usage(1000, 100))


def agent(tmp_path: Path, model: Model) -> Agent:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    return Agent(cwd=str(proj), home=str(tmp_path / "home"), model=model, price=Price(1_000_000, 1_000_000),
                 max_usd_micros=5_000_000, permission_mode="bypassPermissions", env={"PATH": "/usr/bin:/bin"})


def _text(msg: Any) -> str:
    c = msg.get("content")
    return c if isinstance(c, str) else str(c)


def test_a_background_agent_returns_at_once_and_its_report_reaches_the_model_before_its_next_call(tmp_path: Path) -> None:
    model = Model([bg_call(), say("started it"), say("got the report")], reporting_child)
    a = agent(tmp_path, model)
    try:
        first = a.ask("research this")  # returns while the child still waits: the call did not block on it
        assert first.answer == "started it"
        tool_msg = [m for m in model.parent_requests[1].messages if m.get("role") == "tool"][-1]
        assert "in the background" in _text(tool_msg) and "agent-" in _text(tool_msg)
        model.go.set()
        a.context.subagents.background.wait(20)  # type: ignore[attr-defined]
        spent_before = a.stats.spent_micros
        second = a.ask("what did it find?")
        assert second.answer == "got the report"
        last_user = [m for m in model.parent_requests[2].messages if m.get("role") == "user"][-1]
        assert "<task-notification>" in _text(last_user) and "the report: 42" in _text(last_user)
        assert "what did it find?" in _text(last_user)
        # the child's bill (1100 tokens at 1 micro-USD each) is in the session's spend, charged by the delivering run
        assert a.stats.spent_micros - spent_before >= 1100 + 110
    finally:
        a.close("prompt_input_exit")
    recs = list(read_records(a.session.path))
    kinds = [r.kind for r in recs]
    assert "subagent" in kinds and any(r.kind == "side_cost" and r.payload.get("purpose") == "subagent" for r in recs)
    assert verify_tree(a.session.path) == []
    from agentloop.cli.main import main

    assert main(["replay", a.session.path]) == 0  # the notification is a recorded user message: replay is byte-identical


def test_in_print_mode_a_turn_that_ends_while_a_child_runs_waits_for_it_and_goes_on_with_its_report(tmp_path: Path) -> None:
    model = Model([bg_call(), say("waiting for it"), say("final: 42")], reporting_child)
    a = agent(tmp_path, model)
    a.context.subagents.background.wait_at_end = True  # type: ignore[attr-defined]  # what -p sets
    threading.Timer(0.5, model.go.set).start()
    try:
        r = a.ask("research this")
    finally:
        a.close("prompt_input_exit")
    assert r.answer == "final: 42"
    users = [_text(m) for m in model.parent_requests[2].messages if m.get("role") == "user"]
    assert "the report: 42" in users[-1] and "<task-notification>" in users[-1]


CHILD_CALLS: list[float] = []


def looping_child(m: Model, req: ModelRequest) -> ModelReply:
    CHILD_CALLS.append(time.monotonic())
    time.sleep(0.1)
    return ModelReply(tool_calls=(ToolCall(f"c{len(req.messages)}", "Read", {"file_path": "/etc/hostname"}),), usage=Usage(10, 1))


def test_the_sessions_end_stops_a_background_child_before_its_next_call(tmp_path: Path) -> None:
    model = Model([bg_call(), say("started")], looping_child)
    a = agent(tmp_path, model)
    a.max_steps = 1000
    CHILD_CALLS.clear()
    a.ask("go")
    while len(CHILD_CALLS) < 3:  # it has been billed for some calls
        time.sleep(0.05)
    t0 = time.monotonic()
    a.close("prompt_input_exit")
    assert time.monotonic() - t0 < 10
    assert not [t for t in threading.enumerate() if t.name.startswith("agentloop-bg-")]
    recs = list(read_records(a.session.path))
    child = [r for r in recs if r.kind == "subagent"]
    assert child and child[0].payload["stop_reason"] == "interrupted"
    # what it was billed is in the session's spend, though no run was left to take it
    turn_cost = [r for r in recs if r.kind == "session_cost"][-1].payload["spent_micros"]
    end = [r for r in recs if r.kind == "session_end"][-1].payload["spent_micros"]
    assert child[0].payload["spent_micros"] > 0 and end == turn_cost + child[0].payload["spent_micros"]


def test_ctrl_c_in_the_parents_turn_stops_a_background_child_before_its_next_call(tmp_path: Path) -> None:
    def interrupted() -> ModelReply:
        raise KeyboardInterrupt

    model = Model([bg_call(), say("started")], looping_child)
    a = agent(tmp_path, model)
    a.max_steps = 1000
    try:
        a.ask("go")
        model.parent.append(None)  # type: ignore[arg-type]
        model.complete = lambda req: (interrupted() if "sub-agent" not in str(req.messages[0].get("content", ""))  # type: ignore[method-assign]
                                      else looping_child(model, req))
        r = a.ask("again")
        assert r.stop_reason == "interrupted"
        bg = a.context.subagents.background  # type: ignore[attr-defined]
        t0 = time.monotonic()
        bg.wait(10)
        assert time.monotonic() - t0 < 10 and not bg.busy() or all(b.done for b in bg.running.values())
        assert [b.ran.result.stop_reason for b in bg.running.values()] == ["interrupted"]
    finally:
        a.close("prompt_input_exit")


def test_the_parents_own_call_is_refused_when_background_children_drew_the_room() -> None:
    """The parent's reservation goes through the shared room: what a background child drew or left pending
    counts, so the parent cannot reserve what the child already spent."""
    pb = ParentBudget()
    view = pb.for_run(Budget(max_usd_micros=1_000))
    child = pb.child_ledger()
    assert child.reserve(700, 0)
    child.settle(700, 600, 0, 0)  # the child was billed 600 of the room
    assert view.reserve(400, 0)  # 400 + 600 fits 1000
    assert not view.reserve(401, 0)  # one more micro-dollar would pass the cap
    pb.settle((1_000, None), child, None, later=True)  # the child ends: its bill waits for a live run, still counted
    assert not view.reserve(401, 0)


def test_a_background_childs_worktree_changes_reach_the_checkout_when_its_report_is_delivered(tmp_path: Path) -> None:
    """Its merge-back happens between runs, on the parent's thread, when its report is delivered: never under a
    parent's run in progress."""
    import subprocess

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=proj, check=True, capture_output=True)

    def writer(m: Model, req: ModelRequest) -> ModelReply:
        if not any(msg.get("role") == "tool" for msg in req.messages):
            return ModelReply(tool_calls=(ToolCall("w1", "Write", {"file_path": "b.txt", "content": "from the child\n"}),),
                              usage=Usage(10, 1))
        return say("wrote b.txt")

    args = {"description": "write", "prompt": "write b.txt", "run_in_background": True}
    model = Model([ModelReply(tool_calls=(ToolCall("a1", "Agent", args),), usage=Usage(100, 10)), say("started"), say("ok")], writer)
    a = agent(tmp_path, model)
    try:
        a.ask("go")
        a.context.subagents.background.wait(20)  # type: ignore[attr-defined]
        assert not (proj / "b.txt").exists()  # finished, not yet delivered: the checkout is as it was
        a.ask("next")
        assert (proj / "b.txt").read_text() == "from the child\n"
        last_user = [m for m in model.parent_requests[2].messages if m.get("role") == "user"][-1]
        assert "1 file changed (b.txt)" in _text(last_user)
    finally:
        a.close("prompt_input_exit")
