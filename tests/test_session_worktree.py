"""The session moves into a git worktree of its own and back: Claude Code's EnterWorktree / ExitWorktree and
``--worktree``.

Claude Code documents (worktrees): EnterWorktree "creates an isolated git worktree and switches the current
session into it", on a new branch, with an optional ``name``; ExitWorktree leaves it (``keep`` or ``remove``);
``claude --worktree NAME`` starts the session in one. agentloop's ``remove`` brings the worktree's changes back
to the original checkout, as a sub-agent's are.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.testing.fakeprovider import FakeProvider

SPEC = "anthropic:claude-sonnet-4-5"


def _repo(tmp_path: Path) -> Path:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    (cwd / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return cwd


def _results(fp: FakeProvider, n: int) -> list[str]:
    out = []
    for b in fp.requests[n]["body"]["messages"][-1]["content"]:
        if b.get("type") == "tool_result":
            c = b.get("content")
            out.append(c if isinstance(c, str) else json.dumps(c))
    return out


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def test_the_session_enters_a_worktree_works_there_and_its_changes_come_back_on_exit(tmp_path: Path) -> None:
    cwd = _repo(tmp_path)
    replies = [_call("EnterWorktree", {"name": "feat"}), _call("Bash", {"command": "pwd; echo two > a.txt"}),
               _call("ExitWorktree", {}), {"text": "done"}]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={"PATH": "/usr/bin:/bin"},
                  permission_mode="bypassPermissions")
        try:
            a.ask("work in a worktree")
            entered, ran, left = _results(fp, 1)[0], _results(fp, 2)[0], _results(fp, 3)[0]
        finally:
            a.close("prompt_input_exit")
    assert "new git worktree" in entered and "agentloop/session-feat" in entered
    where = ran.splitlines()[0]
    assert where != str(cwd) and where.endswith("worktree")  # Bash ran in the worktree, not the checkout
    assert (cwd / "a.txt").read_text() == "two\n"  # the change came back
    assert "back in" in left and "a.txt" in left
    assert a.cwd == str(cwd.resolve())
    branches = subprocess.run(["git", "branch", "--list", "agentloop/*"], cwd=cwd, capture_output=True, text=True).stdout
    assert branches.strip() == ""


def test_entering_twice_or_leaving_when_not_in_one_is_an_error_for_the_model(tmp_path: Path) -> None:
    cwd = _repo(tmp_path)
    replies = [_call("ExitWorktree", {}), _call("EnterWorktree", {}), _call("EnterWorktree", {}),
               _call("ExitWorktree", {"action": "remove", "discard_changes": True}), {"text": "done"}]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={"PATH": "/usr/bin:/bin"},
                  permission_mode="bypassPermissions")
        try:
            a.ask("go")
            assert "not in a worktree" in _results(fp, 1)[0]
            assert "already in a worktree" in _results(fp, 3)[0]
            assert "dropped" in _results(fp, 4)[0]
        finally:
            a.close("prompt_input_exit")


def test_outside_a_repository_entering_a_worktree_says_why(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with FakeProvider({"replies": [_call("EnterWorktree", {}), {"text": "done"}]}) as fp:
        a = Agent(cwd=str(tmp_path / "plain"), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url,
                  env={"PATH": "/usr/bin:/bin"}, permission_mode="bypassPermissions")
        try:
            a.ask("go")
            assert "needs a git repository" in _results(fp, 1)[0]
        finally:
            a.close("prompt_input_exit")


def test_the_worktree_flag_starts_the_session_in_a_new_worktree(tmp_path: Path, scripted: Any) -> None:
    """``agentloop -p --worktree NAME``: Bash runs in the worktree (on branch agentloop/session-NAME), the
    original checkout is untouched while the session stays there."""
    import sys

    cwd = _repo(tmp_path)
    spec = scripted([_call("Bash", {"command": "pwd; git branch --show-current; echo two > a.txt"}), {"text": "done"}])
    p = subprocess.run([sys.executable, "-m", "agentloop", "--model", spec, "-p", "go", "--worktree", "feat",
                        "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose"],
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import os

    (transcript,) = Path(os.environ["AGENTLOOP_HOME"]).glob("projects/*/sessions/*.jsonl")
    (out,) = [json.loads(ln)["payload"]["content"] for ln in transcript.read_text().splitlines() if '"tool_result"' in ln]
    where, branch = out.splitlines()[:2]
    assert where != str(cwd.resolve()) and where.endswith("worktree") and branch == "agentloop/session-feat"
    assert (cwd / "a.txt").read_text() == "one\n"  # the session never left the worktree: nothing applied
