"""Hooks in a command's or skill's front matter run while it is active, and only then.

Claude Code's skills page, "Hooks in skills": skills (and commands) can define hooks in their front matter, in the
settings' shape; they are "scoped to the component's lifecycle and only run when that component is active"
(https://code.claude.com/docs/en/skills; hooks reference, "Hooks in skills and agents",
https://code.claude.com/docs/en/hooks#hooks-in-skills-and-agents). Here a command's hooks hold for the turn it
starts, a skill's from the moment it is loaded (``/name`` or the Skill tool) to the end of that turn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.transcript import read_records

GUARD = """\
---
description: Deploy carefully
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "echo 'no shell while deploying' >&2; exit 2"
---
Deploy now.
"""
BASH = {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]}


def _results(a: Agent) -> list[dict[str, object]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def test_a_commands_hooks_hold_for_its_turn_only(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "deploy.md").write_text(GUARD)
    a = Agent(cwd=str(proj), model=scripted([BASH, {"text": "stopped"}, BASH, {"text": "ran"}]), trust=True,
              cli_rules=[("allow", "Bash")])
    try:
        assert not [w for w in a.load_warnings if "hooks" in w]
        expanded = a.expand_command("/deploy")
        assert expanded is not None
        a.ask(expanded[0], allowed_tools=expanded[1])
        a.ask("now just say hi")
        first, second = _results(a)
        assert first["ok"] is False and "no shell while deploying" in str(first["error"])
        assert second["ok"] is True and "hi" in str(second["content"])
    finally:
        a.close()


def test_a_skills_hooks_hold_once_the_model_loads_it_until_the_turn_ends(proj: Path, scripted: Callable[..., str]) -> None:
    d = proj / ".claude" / "skills" / "deploy"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(GUARD.replace("description: Deploy carefully", "name: deploy\ndescription: Deploy carefully"))
    replies = [BASH, {"text": "", "tool_calls": [{"name": "Skill", "arguments": {"skill": "deploy"}}]}, BASH,
               {"text": "done"}, BASH, {"text": "ran"}]
    a = Agent(cwd=str(proj), model=scripted(replies), trust=True, cli_rules=[("allow", "Bash")])
    try:
        a.ask("deploy")
        a.ask("again")
        before, _skill, during, after = _results(a)
        assert before["ok"] is True and during["ok"] is False and "no shell while deploying" in str(during["error"])
        assert after["ok"] is True
    finally:
        a.close()


def test_an_untrusted_folders_command_hooks_do_not_run(proj: Path, scripted: Callable[..., str]) -> None:
    """Folder trust (docs/decisions/0005): nothing a folder not trusted configures runs on the host; its command
    still loads as text, its hooks are named as not run."""
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "deploy.md").write_text(GUARD.replace(
        "echo 'no shell while deploying' >&2; exit 2", "touch hook-ran; exit 2"))
    notices: list[str] = []
    a = Agent(cwd=str(proj), model=scripted([BASH, {"text": "ran"}]), trust=False, cli_rules=[("allow", "Bash")])
    a.on_notice = notices.append
    try:
        expanded = a.expand_command("/deploy")
        assert expanded is not None
        a.ask(expanded[0], allowed_tools=expanded[1])
        assert not (proj / "hook-ran").exists()
        assert any("front matter hooks not run: this folder is not trusted" in n for n in notices)
    finally:
        a.close()
