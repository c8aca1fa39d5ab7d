"""A sub-agent asks its model for the output budget its parent would, within its share of the parent's cap.

Claude Code's sub-agents run on the same model settings as the main conversation
(code.claude.com/docs/en/sub-agents: ``model`` defaults to the main conversation's model);
its ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` (code.claude.com/docs/en/env-vars) sets the most output
tokens a request asks for, and each model's documented "Max output" is the default otherwise.
Through the real Anthropic adapter against the local fake server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.budget import usd
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

SPEC = "anthropic:claude-sonnet-4-5"


def _run(tmp_path: Path, max_usd: str, **kw: Any) -> tuple[list[dict[str, Any]], Agent]:
    cwd = tmp_path / "proj"
    cwd.mkdir(exist_ok=True)
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "look around", "subagent_type": "Explore"}}]},
        {"text": "child done"},
        {"text": "parent done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env=kw.pop("env", {}),
                  permission_mode="bypassPermissions", max_usd_micros=usd(max_usd), **kw)
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        return [r["body"] for r in fp.requests if r["protocol"]], a


def test_a_child_asks_for_its_models_documented_output_not_a_fixed_4096(tmp_path: Path) -> None:
    bodies, a = _run(tmp_path, "100")  # a cap whose child share still pays for the model's whole output
    parent, child = bodies[0], bodies[1]
    assert parent["max_tokens"] == 64_000
    assert "look around" in str(child["messages"][0])
    assert child["max_tokens"] == 64_000  # the parent's budget, not the old 4,096
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    start = next(r for r in read_records(sub["transcript"] if sub["transcript"].startswith("/") else
                                         str(Path(a.session.path).parent / a.session.id / "subagents" / sub["transcript"]))
                 if r.kind == "run_start")
    assert start.payload["config"]["max_output_tokens"] == 64_000  # and the child's loop reserves that much


def test_a_childs_output_budget_is_limited_only_by_what_the_parent_has_left(tmp_path: Path) -> None:
    bodies, a = _run(tmp_path, "2")
    price = a.prices.resolve("claude-sonnet-4-5").output
    parent, child = bodies[0]["max_tokens"], bodies[1]["max_tokens"]
    assert parent == min(64_000, usd("2") // 4 * 1_000_000 // price)
    # the child starts with all the parent has left, and asks for what that pays for, as the parent does
    assert child == a.models.child_output(SPEC, _allowed(a))
    assert parent - parent // 10 <= child <= parent


def test_the_variable_sets_the_childs_output_budget_as_it_sets_the_parents(tmp_path: Path) -> None:
    bodies, _ = _run(tmp_path, "100", env={"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "9000"})
    assert bodies[0]["max_tokens"] == 9_000 and bodies[1]["max_tokens"] == 9_000


def _allowed(a: Agent) -> int:
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    return int(sub["allowed_micros"])


def test_a_child_of_a_type_with_its_own_model_asks_for_that_models_budget(tmp_path: Path) -> None:
    """Claude Code's sub-agent files take a ``model`` (code.claude.com/docs/en/sub-agents, "Choose a model")."""
    agents = tmp_path / "proj" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "opus-reader.md").write_text("---\nname: opus-reader\ndescription: reads with opus 4.1\n"
                                            "model: anthropic:claude-opus-4-1\ntools: Read\n---\nYou read files.\n")
    cwd = tmp_path / "proj"
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "look around", "subagent_type": "opus-reader"}}]},
        {"text": "child done"},
        {"text": "parent done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={}, trust=True,
                  permission_mode="bypassPermissions", max_usd_micros=usd("1000"))
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        bodies = [r["body"] for r in fp.requests if r["protocol"]]
    assert bodies[1]["model"] == "claude-opus-4-1" and bodies[1]["max_tokens"] == 32_000  # its model's maximum, not the parent's 64,000


def test_a_child_is_told_where_it_works_what_happens_to_its_changes_its_tools_and_its_budget(tmp_path: Path) -> None:
    """A child's system prompt carries the parent's working rules and environment block (as seen from its
    worktree), and what is particular to it: a temporary copy of the parent's repository at a path, changes
    coming back when it ends, a report rather than report files, its tools and its budget."""
    import subprocess

    from agentloop.agent.system_prompt import STATIC_PROMPT

    cwd = tmp_path / "proj"
    cwd.mkdir()
    (cwd / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "a.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "change", "prompt": "change a.txt"}}]},
        {"text": "child done"},
        {"text": "parent done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={},
                  permission_mode="bypassPermissions", max_usd_micros=usd("3"))
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        child = fp.requests[1]["body"]
    system = "\n".join(b["text"] for b in child["system"]) if isinstance(child["system"], list) else child["system"]
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    assert "temporary git worktree" in system and f"the parent's repository at {cwd}" in system
    assert "applied to the parent's working tree" in system and "not in files" in system
    assert "Your tools: " in system and "Bash" in system.split("Your tools: ")[1].split("\n")[0]
    assert "Your budget: at most $" in system
    assert STATIC_PROMPT[:200] in system  # the parent's working rules
    assert "# Environment" in system and "Working directory: " in system
    workdir = system.split("Working directory: ")[1].split("\n")[0]
    assert workdir != str(cwd) and "Git repository: yes" in system  # the environment as seen from the worktree
    assert sub["answer"] == "child done"


def _repo_with_a_venv(tmp_path: Path) -> Path:
    import subprocess
    import sys

    cwd = tmp_path / "proj"
    (cwd / "tests").mkdir(parents=True)
    (cwd / ".gitignore").write_text(".venv/\n.env\nbuild/\n__pycache__/\n")
    (cwd / ".worktreeinclude").write_text(".env\n")
    (cwd / ".env").write_text("SETTING=from-the-parent\n")
    (cwd / "build").mkdir()
    (cwd / "build" / "big.bin").write_text("not copied\n")
    (cwd / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (cwd / "tests" / "__init__.py").write_text("")
    (cwd / "tests" / "test_calc.py").write_text(
        "import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n"
        "        self.assertEqual(calc.add(2, 3), 5)\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(cwd / ".venv")], check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return cwd


def test_a_child_in_its_worktree_runs_the_projects_tests_from_the_parents_venv_and_cannot_change_it(tmp_path: Path) -> None:
    """A worktree holds tracked files only; the child still runs the project's suite from ``.venv`` (linked,
    read-only in its sandbox) and sees the ``.env`` that ``.worktreeinclude`` names (Claude Code copies the
    ignored files that file lists into its worktrees: code.claude.com/docs/en/common-workflows, worktrees)."""
    cwd = _repo_with_a_venv(tmp_path)
    line = ("cat .env; ls build 2>&1 | head -1; .venv/bin/python -m unittest discover -s tests -t . 2>&1 | tail -1; "
            "touch .venv/child-was-here 2>/dev/null && echo WROTE || echo READ-ONLY")
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "test", "prompt": "run the tests"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": line}}]},
        {"text": "tests pass"},
        {"text": "parent done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={"PATH": "/usr/bin:/bin"},
                  permission_mode="bypassPermissions", max_usd_micros=usd("3"))
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        bash_result = str(fp.requests[2]["body"]["messages"][-1]["content"])
    assert "SETTING=from-the-parent" in bash_result  # .worktreeinclude's ignored file, copied
    assert "No such file" in bash_result  # an ignored folder it does not name stays out
    assert "OK" in bash_result.split("No such file or directory")[1].split("READ-ONLY")[0], bash_result  # the suite passed
    assert "READ-ONLY" in bash_result and not (cwd / ".venv" / "child-was-here").exists()
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    assert "worktree" not in sub or not sub["worktree"].get("changed"), sub["worktree"]  # the links are no change
    assert not (cwd / ".venv").is_symlink()


def test_explore_runs_read_only_bash_and_nothing_else_even_when_the_parent_may_do_anything(tmp_path: Path) -> None:
    """Claude Code's built-in Explore agent is read-only but can look with Bash (code.claude.com/docs/en/sub-agents,
    "Explore": read-only tools); here its Bash runs the lines the permission rules pass as read-only (git only for the
    subcommands that read objects and refs: ``git log`` can run a signature program), and refuses the rest even
    under bypassPermissions."""
    cwd = _repo_with_a_venv(tmp_path)
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "look", "subagent_type": "Explore"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "ls calc.py; git rev-list --count HEAD"}},
                        {"name": "Bash", "arguments": {"command": "touch written-by-explore"}}]},
        {"text": "looked"},
        {"text": "parent done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={"PATH": "/usr/bin:/bin"},
                  permission_mode="bypassPermissions", max_usd_micros=usd("3"))
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        results = fp.requests[2]["body"]["messages"][-1]["content"]
    log, touch = (r for r in results if r.get("type") == "tool_result")
    assert "calc.py" in str(log["content"]) and "1" in str(log["content"]) and not log.get("is_error")
    assert touch.get("is_error") and "read-only commands only" in str(touch["content"])
    assert not (cwd / "written-by-explore").exists()
