"""Commands, skills and sub-agent files laid out as Claude Code lays them.

The specification is Claude Code's documentation:

- Slash commands: Markdown files in ``.claude/commands/`` (and
  ``~/.claude/commands/``); a file in a subfolder is still ``/name``, the
  folder showing in its description; front matter ``allowed-tools`` and
  ``description``; ``!`command``` runs a Bash command before the command is
  sent and puts its output in the prompt (it needs ``allowed-tools`` naming
  Bash for it); ``$ARGUMENTS``. Headless mode accepts ``-p "/name args"``.
- Skills: ``.claude/skills/<name>/SKILL.md``; ``disable-model-invocation:
  true`` keeps the model from loading one (the user still can);
  ``allowed-tools`` lets Claude use those tools without asking while the
  skill is active.
- Sub-agents: Markdown files in ``.claude/agents/`` with ``name``,
  ``description``, ``tools``, ``model``; ``model: inherit`` uses the main
  conversation's model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.commands import load_commands, load_skills, render_skill_index, skill_tool
from agentloop.agent.subagents.agent_types import load_agent_types
from agentloop.transcript import read_records

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.fixture()
def proj(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared project folder (conftest.py) with commands, skills and an agent; agentloop's home at tmp_path/"alhome"."""
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "alhome"))
    d = proj
    (d / ".claude" / "commands" / "git").mkdir(parents=True)
    (d / ".claude" / "commands" / "git" / "status-report.md").write_text(
        "---\ndescription: Summarise the working tree\nallowed-tools: Bash(echo:*), Bash(printf:*)\n---\n"
        "Here is the state:\n!`echo TREE-IS-CLEAN`\nFocus on $ARGUMENTS.\n"
    )
    (d / ".claude" / "commands" / "unguarded.md").write_text("State:\n!`touch MADE-BY-BANG`\n")
    (d / ".claude" / "commands" / "writer.md").write_text("---\nallowed-tools: Write\n---\nWrite the file.\n")
    sk = d / ".claude" / "skills"
    (sk / "release").mkdir(parents=True)
    (sk / "release" / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release\ndisable-model-invocation: true\n---\nRELEASE-STEPS\n")
    (sk / "notes").mkdir()
    (sk / "notes" / "SKILL.md").write_text("---\nname: notes\ndescription: Write notes\nallowed-tools: Write\n---\nNOTES-STEPS\n")
    ag = d / ".claude" / "agents" / "review"
    ag.mkdir(parents=True)
    (ag / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Frobnicate\nmodel: inherit\n---\nReview it.\n")
    return d


def test_a_command_in_a_subfolder_is_named_by_its_file(proj: Path, tmp_path: Path) -> None:
    cmds = load_commands(str(proj), str(tmp_path / "alhome"))
    assert "status-report" in cmds and "git:status-report" not in cmds
    assert cmds["status-report"].description == "Summarise the working tree (project:git)"
    assert cmds["status-report"].allowed_tools == ("Bash(echo:*)", "Bash(printf:*)")


def test_bang_lines_run_through_permissions_with_the_commands_allowed_tools(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        expanded = a.expand_command("/status-report the tests")
        assert expanded is not None
        prompt, rules = expanded
        assert "TREE-IS-CLEAN" in prompt and "!`" not in prompt and "Focus on the tests." in prompt
        assert rules == ("Bash(echo:*)", "Bash(printf:*)")
        # no allowed-tools: the ! line asks, and with no one to ask it does not run: the command stops
        with pytest.raises(AgentError, match="Bash command failed for pattern"):
            a.expand_command("/unguarded")
        assert not (proj / "MADE-BY-BANG").exists()
        # the grant ended with the expansion
        assert all(source != "command" for _, _, source in a.policy.describe())
    finally:
        a.close()


def test_allowed_tools_hold_for_the_commands_turn_only(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    write = {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "out.txt", "content": "x"}}]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([write, {"text": "done"}, write, {"text": "refused"}]))
    try:
        prompt, rules = a.expand_command("/writer") or ("", ())
        a.ask(prompt, allowed_tools=rules)
        assert (proj / "out.txt").read_text() == "x"
        (proj / "out.txt").unlink()
        a.ask("again, without the command")
        assert not (proj / "out.txt").exists()  # the next turn has no grant: Write asks, no one can answer
        assert [d["tool_name"] for d in a.permission_denials] == ["Write"]
    finally:
        a.close()


def test_print_mode_expands_a_slash_command(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "alhome")
    p = subprocess.run([*AGENTLOOP, "-p", "/status-report the docs", "--model", scripted([{"text": "ok"}]),
                        "--output-format", "json"], cwd=proj, env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    start = next(r.payload for r in read_records(json.loads(p.stdout)["transcript"]) if r.kind == "run_start")
    sent = start["messages"][-1]["content"]
    assert "TREE-IS-CLEAN" in sent and "Focus on the docs." in sent and not sent.startswith("/status-report")


def test_a_skill_the_model_may_not_invoke_is_kept_from_it(proj: Path, tmp_path: Path) -> None:
    skills = load_skills(str(proj), str(tmp_path / "alhome"))
    assert skills["release"].model_invocable is False and skills["notes"].model_invocable is True
    index = render_skill_index(skills)
    assert "notes" in index and "release" not in index
    from agentloop.events import ToolCall
    from agentloop.tools import Registry

    reg = Registry([skill_tool(skills)])
    r = reg.invoke(ToolCall("c1", "Skill", {"skill": "release"}))
    assert not r.ok and "for the user to load" in str(r.error)
    assert "NOTES-STEPS" in str(reg.invoke(ToolCall("c2", "Skill", {"skill": "notes"})).content)


def test_loading_a_skill_needs_no_approval_and_grants_its_tools_for_the_turn(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    load = {"text": "", "tool_calls": [{"name": "Skill", "arguments": {"skill": "notes"}}]}
    write = {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "notes.md", "content": "n"}}]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([load, write, {"text": "done"}, write, {"text": "no"}]))
    try:
        a.ask("take notes")
        assert (proj / "notes.md").read_text() == "n"  # Skill ran unasked, then its allowed-tools let Write run
        (proj / "notes.md").unlink()
        a.ask("write again")
        assert not (proj / "notes.md").exists()  # the skill's grant ended with its turn
    finally:
        a.close()


def test_agent_files_in_subfolders_are_found_and_unknown_tools_are_named(proj: Path, tmp_path: Path) -> None:
    warnings: list[str] = []
    types = load_agent_types(str(proj), str(tmp_path / "alhome"), warnings=warnings)
    assert "reviewer" in types and types["reviewer"].model is None  # inherit: the parent's model
    assert types["reviewer"].tools == ("Read", "Grep", "Frobnicate")
    assert any("Frobnicate" in w and "reviewer" in w for w in warnings)


def test_the_cli_shows_what_it_could_not_honour(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "alhome")
    p = subprocess.run([*AGENTLOOP, "-p", "hi", "--model", scripted([{"text": "ok"}])], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert "warning:" in p.stderr and "Frobnicate" in p.stderr


def test_an_agent_files_model_alias_names_the_model_it_stands_for(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    """Claude Code's sub-agent ``model`` takes the aliases ``sonnet``, ``opus``, ``haiku`` (or ``inherit``)."""
    (proj / ".claude" / "agents" / "deep.md").write_text("---\nname: deep\ndescription: Thinks hard\nmodel: opus\n---\nThink.\n")
    a = Agent(cwd=str(proj), model=scripted([]), trust=True)
    try:
        types = a.context.subagents.types  # type: ignore[attr-defined]
        assert types["deep"].model == "anthropic:claude-opus-4-6"
        assert types["reviewer"].model is None  # inherit
    finally:
        a.close()
