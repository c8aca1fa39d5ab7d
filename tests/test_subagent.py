"""Sub-agents: the Agent tool, budgets reserved from the parent, child transcripts, worktrees, parallel read-only children."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, Price, Registry, TranscriptWriter, run
from agentloop.agent.hooks.runner import HookRunner
from agentloop.agent.subagents.agent_types import load_agent_types
from agentloop.agent.subagents.runner import (
    SubagentRunner,
    parallel_executor,
    verify_tree,
)
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
from agentloop.tools import Tool
from agentloop.transcript import read_records

PRICES = {"m": Price(input=1_000_000, output=1_000_000)}  # 1 micro-USD per token


SLOW_SPANS: list[tuple[float, float]] = []
"""(start, end) of each slow read: whether two overlapped says whether they ran at once."""


def make_tools(cwd: str) -> Registry:
    def read(path: str) -> str:
        if path == "slow":
            t0 = time.monotonic()
            time.sleep(1.0)
            SLOW_SPANS.append((t0, time.monotonic()))
            return "slow contents"
        with open(os.path.join(cwd, path)) as f:
            return f.read()

    def write(path: str, content: str) -> str:
        with open(os.path.join(cwd, path), "w") as f:
            f.write(content)
        return "ok"

    obj = lambda **props: {"type": "object", "properties": props, "required": list(props)}  # noqa: E731
    return Registry([
        Tool("Read", "read a file", obj(path={"type": "string"}), read, read_only=True),
        Tool("Write", "write a file", obj(path={"type": "string"}, content={"type": "string"}), write),
    ])


class Router:
    """One model for parent and children: children are told apart by their system prompt."""

    name = "m"

    def __init__(self, parent: Callable[[int, ModelRequest], ModelReply], child: Callable[[int, ModelRequest], ModelReply]):
        self.parent, self.child = parent, child
        self.n_parent = 0
        self.n_child = 0

    def complete(self, req: ModelRequest) -> ModelReply:
        if "sub-agent" in str(req.messages[0].get("content", "")):
            self.n_child += 1
            return self.child(self.n_child, req)
        self.n_parent += 1
        return self.parent(self.n_parent, req)


def calls(*cs: tuple[str, dict[str, Any]], prefix: str = "p") -> ModelReply:
    return ModelReply(tool_calls=tuple(ToolCall(f"{prefix}{i}", n, a) for i, (n, a) in enumerate(cs)), usage=Usage(100, 10))


def answer(text: str) -> ModelReply:
    return ModelReply(text=text, usage=Usage(100, 10))


def parent_run(tmp: Path, model: Any, runner: SubagentRunner, budget: Budget, **kw: Any) -> tuple[Any, Path]:
    path = tmp / "parent.jsonl"
    reg = make_tools(str(tmp))
    reg.register(runner.tool())
    with TranscriptWriter(path) as w:
        runner.record = w.append
        r = run(model, reg, [{"role": "user", "content": "task"}], budget, transcript=w, prices=PRICES, prepare=runner.parent.bind, **kw)
    return r, path


def runner_for(tmp: Path, model: Any, **kw: Any) -> SubagentRunner:
    return SubagentRunner(model=model, make_tools=make_tools, cwd=str(tmp), transcript_dir=str(tmp / "subagents"), prices=PRICES, model_name="m", **kw)


def test_a_child_runs_with_its_own_prompt_tools_and_transcript_and_the_parent_records_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42")
    seen_child: list[ModelRequest] = []

    def child(n: int, req: ModelRequest) -> ModelReply:
        seen_child.append(req)
        return calls(("Read", {"path": "notes.txt"}), prefix="c") if n == 1 else answer("found: 42")

    model = Router(lambda n, req: calls(("Agent", {"description": "find it", "prompt": "find the answer", "subagent_type": "Explore"})) if n == 1 else answer("done"), child)
    runner = runner_for(tmp_path, model)
    r, path = parent_run(tmp_path, model, runner, Budget(max_steps=10, max_usd_micros=100_000), model_name="m")
    assert r.stop_reason == "no_tool_calls"
    # the child had its own prompt and only the read-only tools of its type
    assert "read-only sub-agent" in seen_child[0].messages[0]["content"]
    assert seen_child[0].messages[1] == {"role": "user", "content": "find the answer"}
    assert [t.name for t in seen_child[0].tools] == ["Read"]
    recs = list(read_records(str(path)))
    (sub,) = [x.payload for x in recs if x.kind == "subagent"]
    assert sub["answer"] == "found: 42" and sub["stop_reason"] == "no_tool_calls" and sub["spent_micros"] == 220
    child_path = sub["transcript"]
    assert os.path.dirname(child_path) == str(tmp_path / "subagents")
    child_recs = list(read_records(child_path))
    assert sub["last_hash"] == child_recs[-1].hash and sub["transcript_records"] == len(child_recs)
    # the parent's model reads the child's answer as text, then one line of facts; the bookkeeping stays in the record
    (tr,) = [x.payload for x in recs if x.kind == "tool_result" and x.payload["name"] == "Agent"]
    answer_text, facts = tr["content"].rsplit("\n\n", 1)
    assert answer_text == "found: 42"
    assert facts == f"[agent {sub['agent_id']} (Explore) · 2 turns · $0.0002]"
    assert "last_hash" not in tr["content"] and "transcript" not in tr["content"]
    # the child's spend is the parent's
    parent_turns = sum(x.payload["cost_micros"] for x in recs if x.kind == "budget")
    assert r.spent_micros == parent_turns + sub["spent_micros"]
    assert verify_tree(str(path)) == []


def test_verify_tree_notices_a_changed_or_cut_child_transcript(tmp_path: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "d", "prompt": "p"})) if n == 1 else answer("done"),
                   lambda n, req: calls(("Read", {"path": "slow"}), prefix="c") if n == 1 else answer("child done"))
    runner = runner_for(tmp_path, model)
    _, path = parent_run(tmp_path, model, runner, Budget(max_steps=10, max_usd_micros=100_000), model_name="m")
    assert verify_tree(str(path)) == []
    child = Path(runner.children[0]["transcript"] if os.path.isabs(runner.children[0]["transcript"]) else tmp_path / "subagents" / runner.children[0]["transcript"])
    lines = child.read_bytes().splitlines(keepends=True)
    child.write_bytes(b"".join(lines[:-1]))  # cut the last record: the child's own chain still verifies
    problems = verify_tree(str(path))
    assert len(problems) == 1 and "last hash" in problems[0]
    child.write_bytes(b"".join(lines).replace(b"child done", b"child DONE"))
    assert any("does not match" in p for p in verify_tree(str(path)))


def test_a_child_can_never_overspend_what_the_parent_has_left_and_unused_budget_returns(tmp_path: Path) -> None:
    # the child would read forever (different arguments each time: no loop stop)
    model = Router(
        lambda n, req: calls(("Agent", {"description": "d", "prompt": "p"})) if n == 1 else answer("done"),
        lambda n, req: calls(("Read", {"path": "slow" if False else f"f{n}"}), prefix="c"),
    )
    for i in range(200):
        (tmp_path / f"f{i}").write_text("x")
    runner = runner_for(tmp_path, model, max_steps=1000)
    cap = 20_000
    r, path = parent_run(tmp_path, model, runner, Budget(max_steps=10, max_usd_micros=cap), model_name="m", max_output_tokens=100)
    recs = list(read_records(str(path)))
    (sub,) = [x.payload for x in recs if x.kind == "subagent"]
    assert sub["stop_reason"] == "cost_budget"
    # the child's caps were all the parent had left when it started, and its calls drew from that room
    first_turn = [x.payload for x in recs if x.kind == "budget"][0]["cost_micros"]
    assert sub["allowed_micros"] == cap - first_turn
    assert sub["spent_micros"] <= sub["allowed_micros"]
    assert runner.parent.held_micros == 0 and runner.parent.drawn.spent == 0  # every draw settled and handed over
    (handed,) = [x.payload for x in recs if x.kind == "side_cost" and x.payload.get("purpose") == "subagent"]
    assert handed["cost_micros"] == sub["spent_micros"]
    assert r.spent_micros <= cap and r.stop_reason != "budget_overrun"


def test_an_unknown_agent_type_is_an_error_for_the_model(tmp_path: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "d", "prompt": "p", "subagent_type": "Wizard"})) if n == 1 else answer("ok"),
                   lambda n, req: answer("never"))
    runner = runner_for(tmp_path, model)
    r, path = parent_run(tmp_path, model, runner, Budget(max_steps=5), model_name="m")
    (tr,) = [x.payload for x in read_records(str(path)) if x.kind == "tool_result"]
    assert not tr["ok"] and "no sub-agent type 'Wizard'" in tr["error"] and model.n_child == 0


def test_subagent_start_and_stop_hooks_fire_with_the_agent_type(tmp_path: Path) -> None:
    log = tmp_path / "hooks.log"
    script = tmp_path / "h.sh"
    script.write_text(f"#!/usr/bin/env bash\ncat >> {log}\necho >> {log}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    hooks = HookRunner.from_settings(
        [_src({"SubagentStart": [{"matcher": "Explore", "hooks": [{"type": "command", "command": str(script)}]}],
               "SubagentStop": [{"hooks": [{"type": "command", "command": str(script)}]}]})],
        project_dir=str(tmp_path),
    )
    model = Router(lambda n, req: calls(("Agent", {"description": "d", "prompt": "look", "subagent_type": "Explore"})) if n == 1 else answer("ok"),
                   lambda n, req: answer("seen"))
    runner = runner_for(tmp_path, model, hooks=hooks)
    _, path = parent_run(tmp_path, model, runner, Budget(max_steps=5), model_name="m")
    events = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert [e["hook_event_name"] for e in events] == ["SubagentStart", "SubagentStop"]
    assert events[0]["agent_type"] == "Explore" and events[1]["last_assistant_message"] == "seen"
    assert [x.payload["event"] for x in read_records(str(path)) if x.kind == "hook"] == ["SubagentStart", "SubagentStop"]


def _src(hooks: dict[str, Any]) -> Any:
    from agentloop.config.settings import SettingsSource

    return SettingsSource("settings.json", "project", {"hooks": hooks})


# --- worktrees ------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    (r / "a.txt").write_text("one\n")
    git(r, "add", "a.txt")
    git(r, "commit", "-q", "-m", "init")
    return r


def test_a_worktree_child_that_writes_reports_its_branch_and_its_changes_reach_the_checkout(repo: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "edit", "prompt": "change a", "isolation": "worktree"})) if n == 1 else answer("ok"),
                   lambda n, req: calls(("Write", {"path": "a.txt", "content": "two\n"}), prefix="c") if n == 1 else answer("changed a.txt"))
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    _, path = parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    wt = runner.children[0]["worktree"]
    assert wt["changed"] and wt["branch"].startswith("agentloop/agent-")
    assert git(repo, "show", f"{wt['branch']}:a.txt") == "two"
    assert wt["applied"] == "applied" and (repo / "a.txt").read_text() == "two\n"  # applied, not committed
    assert git(repo, "status", "--porcelain") == "M a.txt"
    assert wt["removed"] and len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_worktree_child_that_changes_nothing_leaves_no_worktree_or_branch(repo: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "look", "prompt": "read a", "isolation": "worktree"})) if n == 1 else answer("ok"),
                   lambda n, req: calls(("Read", {"path": "a.txt"}), prefix="c") if n == 1 else answer("it says one"))
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    assert runner.children[0]["worktree"] == {"changed": False, "removed": True}
    assert "agentloop/" not in git(repo, "branch", "--list")
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_worktree_isolation_outside_a_repository_is_an_error_for_the_model(tmp_path: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "d", "prompt": "p", "isolation": "worktree"})) if n == 1 else answer("ok"),
                   lambda n, req: answer("never"))
    runner = runner_for(tmp_path, model)
    _, path = parent_run(tmp_path, model, runner, Budget(max_steps=5), model_name="m")
    (tr,) = [x.payload for x in read_records(str(path)) if x.kind == "tool_result"]
    assert not tr["ok"] and "needs a git repository" in tr["error"]
    assert runner.parent.held_micros == 0


# --- parallel read-only children ------------------------------------------------------------


def _two(kind: str) -> Router:
    return Router(
        lambda n, req: calls(("Agent", {"description": "a", "prompt": "p1", "subagent_type": kind}),
                             ("Agent", {"description": "b", "prompt": "p2", "subagent_type": kind})) if n == 1 else answer("ok"),
        lambda n, req: calls(("Read", {"path": "slow"}), prefix=f"c{n}") if not req.messages[-1]["role"] == "tool" else answer("read it"),
    )


@pytest.mark.parametrize("kind", ["Explore", "general-purpose"])
def test_children_of_one_reply_run_at_the_same_time_whatever_their_type(tmp_path: Path, kind: str) -> None:
    """Claude Code runs the Agent calls of one reply at once, read-only or not (three research sub-agents
    asked for together ran together there); so does agentloop, each child drawing from the parent's room."""
    model = _two(kind)
    runner = runner_for(tmp_path, model)
    reg = make_tools(str(tmp_path))
    reg.register(runner.tool())
    execu = parallel_executor(lambda cs: [reg.invoke(c) for c in cs], runner)
    SLOW_SPANS.clear()
    with TranscriptWriter(tmp_path / "p.jsonl") as w:
        runner.record = w.append
        r = run(model, reg, "task", Budget(max_steps=5, max_usd_micros=1_000_000), transcript=w, prices=PRICES, prepare=runner.parent.bind, executor=execu, model_name="m")
    assert r.stop_reason == "no_tool_calls"
    assert len(runner.children) == 2 and all(c["answer"] == "read it" for c in runner.children)
    (a0, a1), (b0, b1) = sorted(SLOW_SPANS)
    # each child's one-second read: overlapping spans prove they ran at once, whatever the machine's load
    overlapped = b0 < a1
    assert overlapped, SLOW_SPANS
    # each started with all the parent had left, and drew from that one room call by call
    # (less what a sibling's first call was already billed, when it was, 110 here, as this child started)
    allowed = sorted(c["allowed_micros"] for c in runner.children)
    assert allowed[-1] == 1_000_000 - 110 and allowed[0] >= 1_000_000 - 220, allowed
    assert runner.parent.held_micros == 0
    assert verify_tree(str(tmp_path / "p.jsonl")) == []


def test_claude_code_agent_files_define_types(tmp_path: Path) -> None:
    d = tmp_path / ".claude" / "agents"
    d.mkdir(parents=True)
    (d / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nYou review code.\n")
    types = load_agent_types(str(tmp_path), str(tmp_path / "home"))
    t = types["reviewer"]
    assert t.tools == ("Read", "Grep") and t.prompt == "You review code." and t.read_only()
    assert "Explore" in types and "general-purpose" in types


# --- isolation by default -----------------------------------------------


def test_in_a_git_repository_a_writing_child_gets_a_worktree_by_default(repo: Path) -> None:
    """Seed 004: each sub-agent that may write gets its own temporary git worktree; its changes come back
    on a branch reported to the parent; ``isolation: "none"`` works in the parent's directory."""
    model = Router(lambda n, req: calls(("Agent", {"description": "edit", "prompt": "change a"})) if n == 1 else answer("ok"),
                   lambda n, req: calls(("Write", {"path": "a.txt", "content": "two\n"}), prefix="c") if n == 1 else answer("changed a.txt"))
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    wt = runner.children[0]["worktree"]
    assert wt["changed"] and git(repo, "show", f"{wt['branch']}:a.txt") == "two"
    assert (repo / "a.txt").read_text() == "two\n"


def test_isolation_none_and_read_only_children_work_in_the_parents_directory(repo: Path) -> None:
    model = Router(lambda n, req: calls(("Agent", {"description": "edit", "prompt": "change a", "isolation": "none"})) if n == 1 else answer("ok"),
                   lambda n, req: calls(("Write", {"path": "a.txt", "content": "three\n"}), prefix="c") if n == 1 else answer("done"))
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    assert "worktree" not in runner.children[0] and (repo / "a.txt").read_text() == "three\n"
    model = Router(lambda n, req: calls(("Agent", {"description": "look", "prompt": "read a", "subagent_type": "Explore"})) if n == 1 else answer("ok"),
                   lambda n, req: calls(("Read", {"path": "a.txt"}), prefix="c") if n == 1 else answer("read"))
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents2")
    (repo.parent / "second").mkdir()
    parent_run(repo.parent / "second", model, runner, Budget(max_steps=5), model_name="m")
    assert "worktree" not in runner.children[0]
    assert len(git(repo, "worktree", "list").splitlines()) == 1


# --- a worktree starts from the parent's working tree, and its changes come back ------------


def test_a_worktree_child_starts_from_the_uncommitted_work_and_its_changes_are_applied_to_it(repo: Path) -> None:
    """The child sees the parent's uncommitted edits and untracked files; what it changes lands in the parent's tree."""
    (repo / "a.txt").write_text("one\nparent\n")  # uncommitted
    (repo / "u.txt").write_text("untracked\n")
    seen: list[str] = []

    def child(n: int, req: ModelRequest) -> ModelReply:
        seen.extend(str(m.get("content")) for m in req.messages if m.get("role") == "tool")
        if n == 1:
            return calls(("Read", {"path": "u.txt"}), ("Read", {"path": "a.txt"}), prefix="c")
        if n == 2:
            return calls(("Write", {"path": "a.txt", "content": "one\nparent\nchild\n"}),
                         ("Write", {"path": "c.txt", "content": "new\n"}), prefix="d")
        return answer("done")

    model = Router(lambda n, req: calls(("Agent", {"description": "edit", "prompt": "edit a"})) if n == 1 else answer("ok"), child)
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    assert "untracked\n" in seen and "one\nparent\n" in seen
    wt = runner.children[0]["worktree"]
    assert wt["applied"] == "applied", wt
    assert (repo / "a.txt").read_text() == "one\nparent\nchild\n"
    assert (repo / "c.txt").read_text() == "new\n" and (repo / "u.txt").read_text() == "untracked\n"
    assert git(repo, "log", "--format=%s") == "init"  # nothing committed on the parent's branch


def test_a_conflict_with_the_parents_own_change_is_reported_to_the_parent_model(repo: Path) -> None:
    parent_saw: list[str] = []

    def child(n: int, req: ModelRequest) -> ModelReply:
        if n == 1:
            (repo / "a.txt").write_text("parent meanwhile\n")  # the parent's tree changes while the child works
            return calls(("Write", {"path": "a.txt", "content": "child\n"}), prefix="c")
        return answer("done")

    def parent(n: int, req: ModelRequest) -> ModelReply:
        parent_saw.extend(str(m.get("content")) for m in req.messages if m.get("role") == "tool")
        return calls(("Agent", {"description": "edit", "prompt": "edit a"})) if n == 1 else answer("ok")

    model = Router(parent, child)
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    wt = runner.children[0]["worktree"]
    assert wt["applied"] == "conflicts" and "a.txt" in wt["conflicts"], wt["conflicts"]
    text = (repo / "a.txt").read_text()
    assert "<<<<<<<" in text and "child" in text and "parent meanwhile" in text
    assert any("conflict" in t for t in parent_saw)  # the parent model is told
    git(repo, "worktree", "remove", "--force", wt["path"])


def test_changes_coming_back_never_follow_a_symlink_out_of_the_checkout(repo: Path, tmp_path: Path) -> None:
    """A directory the parent replaced by a symlink to elsewhere is not written through when the child's changes come back."""
    (repo / "d").mkdir()
    (repo / "d" / "x.txt").write_text("line\n")
    git(repo, "add", "d/x.txt")
    git(repo, "commit", "-q", "-m", "d")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("line\n")

    def child(n: int, req: ModelRequest) -> ModelReply:
        if n == 1:
            shutil.rmtree(repo / "d")
            os.symlink(outside, repo / "d")  # the parent's tree changes while the child works
            return calls(("Write", {"path": "d/x.txt", "content": "line\nchild\n"}), prefix="c")
        return answer("done")

    model = Router(lambda n, req: calls(("Agent", {"description": "edit", "prompt": "edit d"})) if n == 1 else answer("ok"), child)
    runner = runner_for(repo, model)
    runner.transcript_dir = str(repo.parent / "subagents")
    parent_run(repo.parent, model, runner, Budget(max_steps=5), model_name="m")
    wt = runner.children[0]["worktree"]
    assert wt["applied"] == "failed" and "d/x.txt" in wt["conflicts"]
    assert (outside / "x.txt").read_text() == "line\n"
    git(repo, "worktree", "remove", "--force", wt["path"])


TEN_CAP = 13_100


def test_ten_children_at_once_all_finish_when_the_room_pays_for_their_bills_not_their_reservations(tmp_path: Path) -> None:
    """Each child's call reserves its bound (about a thousand micro-USD here) but is billed 110: the room holds
    two or three reservations at once, and all ten bills. Children whose call does not fit wait for their
    siblings' calls to settle instead of stopping, so every one of them finishes."""
    def child(n: int, req: ModelRequest) -> ModelReply:
        time.sleep(0.2)  # the calls overlap, so the room is contended
        return answer(f"report {n}")

    parent_calls = [("Agent", {"description": f"part {i}", "prompt": f"do part {i}", "isolation": "none"}) for i in range(10)]
    model = Router(lambda n, req: calls(*parent_calls) if n == 1 else answer("done"), child)
    runner = runner_for(tmp_path, model)
    reg = make_tools(str(tmp_path))
    reg.register(runner.tool())
    execu = parallel_executor(lambda cs: [reg.invoke(c) for c in cs], runner)
    with TranscriptWriter(tmp_path / "p.jsonl") as w:
        runner.record = w.append
        r = run(model, reg, "task", Budget(max_steps=5, max_usd_micros=TEN_CAP), transcript=w, prices=PRICES,
                prepare=runner.parent.bind, executor=execu, model_name="m", max_output_tokens=100)
    assert runner.children, (r.stop_reason, r.error, r.steps)
    child_budget = [x.payload for x in read_records(os.path.join(tmp_path / "subagents", runner.children[0]["transcript"])) if x.kind == "budget"]
    room = TEN_CAP - 110  # after the parent's first turn
    assert 2 * child_budget[0]["reserved_micros"] <= room < 3 * child_budget[0]["reserved_micros"]  # two fit at once, not ten
    assert [c["stop_reason"] for c in runner.children] == ["no_tool_calls"] * 10
    assert sorted(c["answer"] for c in runner.children) == sorted(f"report {n}" for n in range(1, 11))
    assert [c["description"] for c in runner.children] == [f"part {i}" for i in range(10)]  # call order
    assert r.spent_micros <= TEN_CAP and r.stop_reason == "no_tool_calls" and runner.parent.held_micros == 0


def test_a_parent_interrupted_while_children_run_stops_them_all(tmp_path: Path) -> None:
    """Ctrl+C in the parent while three children run at once: each child stops before its next model call
    (its transcript ends ``interrupted`` and verifies), the parent's run records its interrupt, and nothing
    keeps running."""
    import signal
    import threading

    started: set[str] = set()
    all_running = threading.Event()
    lock = threading.Lock()

    def child(n: int, req: ModelRequest) -> ModelReply:
        with lock:
            started.add(threading.current_thread().name)
            if len(started) >= 3:
                all_running.set()
        time.sleep(0.3)
        return calls(("Read", {"path": f"f{n}"}), prefix=f"c{n}-")  # would read forever

    for i in range(100):
        (tmp_path / f"f{i}").write_text("x")
    parent_calls = [("Agent", {"description": f"part {i}", "prompt": f"do part {i}", "isolation": "none"}) for i in range(3)]
    model = Router(lambda n, req: calls(*parent_calls) if n == 1 else answer("done"), child)
    runner = runner_for(tmp_path, model, max_steps=30)  # a child left running reads on for 9 s, then stops short of "interrupted"
    reg = make_tools(str(tmp_path))
    reg.register(runner.tool())
    execu = parallel_executor(lambda cs: [reg.invoke(c) for c in cs], runner)
    interrupted_at: list[float] = []
    finished = threading.Event()

    def ctrl_c() -> None:  # Ctrl+C, as the terminal sends it, once all three children are running (not on a
        if all_running.wait(60) and not finished.wait(0.2):  # fixed timer, which a loaded machine can beat
            interrupted_at.append(time.monotonic())  # before the children start)
            os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=ctrl_c, daemon=True)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl+C raises, even where the test runner
    with TranscriptWriter(tmp_path / "p.jsonl") as w:  # was started with SIGINT ignored (a forked runner may be)
        runner.record = w.append
        timer.start()
        try:
            r = run(model, reg, "task", Budget(max_steps=5, max_usd_micros=1_000_000), transcript=w, prices=PRICES,
                    prepare=runner.parent.bind, executor=execu, model_name="m")
        except KeyboardInterrupt:
            r = None
        finally:
            finished.set()
            all_running.set()
            timer.join()
            signal.signal(signal.SIGINT, previous)
    assert interrupted_at and time.monotonic() - interrupted_at[0] < 10
    assert r is None or r.stop_reason == "interrupted"
    stops = []
    for f in sorted((tmp_path / "subagents").glob("*.jsonl")):
        recs = list(read_records(str(f)))
        stops.append(recs[-1].payload.get("reason") if recs[-1].kind == "stop" else recs[-1].kind)
    assert stops == ["interrupted"] * 3, stops
    assert not [t for t in threading.enumerate() if t.name.startswith("agentloop-child")]


def test_an_agent_files_isolation_is_its_default_and_a_calls_own_wins(repo: Path, tmp_path: Path) -> None:
    """Claude Code's agent files take ``isolation: worktree`` (code.claude.com/docs/en/sub-agents, supported
    front matter fields); the Agent call's ``isolation`` still decides when given."""
    d = repo / ".claude" / "agents"
    d.mkdir(parents=True)
    (d / "inplace.md").write_text("---\nname: inplace\ndescription: edits here\nisolation: none\n---\nYou edit.\n")
    (d / "apart.md").write_text("---\nname: apart\ndescription: reads apart\ntools: Read\nisolation: worktree\n---\nYou read.\n")
    warnings: list[str] = []
    types = load_agent_types(str(repo), str(tmp_path / "home"), warnings=warnings)
    runner = runner_for(repo, None, types=types)
    assert types["inplace"].isolation == "none" and types["apart"].isolation == "worktree"
    assert not runner._isolate(types["inplace"], None) and runner._isolate(types["inplace"], "worktree")
    assert runner._isolate(types["apart"], None) and not runner._isolate(types["apart"], "none")
    assert runner._isolate(types["general-purpose"], None)  # a writing type in a repository: a worktree by default
