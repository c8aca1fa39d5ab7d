"""Smaller points of Claude Code's behaviour that real files rely on.

- Skill tool: it takes ``skill`` and an optional ``args`` string, given to the skill as ``/name args`` would
  (skills page, "Pass arguments to skills": ``$ARGUMENTS`` is what follows the name;
  https://code.claude.com/docs/en/skills#pass-arguments-to-skills).
- Bash: ``BASH_DEFAULT_TIMEOUT_MS`` is "Default timeout for long-running bash commands" (environment variables page,
  https://code.claude.com/docs/en/env-vars); the tool's description says the timeout the session has.
- A command's ``!`` lines run after UserPromptSubmit: hooks reference, UserPromptSubmit "Runs when the user submits
  a prompt, before Claude processes it" (https://code.claude.com/docs/en/hooks#userpromptsubmit), and it "receives
  only the raw prompt string" (anthropics/claude-code#87320); the command's expansion, its bash lines included, is
  what follows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from _wait import until
from agentloop.agent.agent import Agent
from agentloop.agent.commands import Skill, skill_tool
from agentloop.tools import Registry


def test_the_skill_tool_takes_args_as_the_skills_arguments(tmp_path: Path) -> None:
    d = tmp_path / "skills" / "release"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release\n---\nRelease version $ARGUMENTS now.\n")
    tool = skill_tool({"release": Skill("release", "Cut a release", str(d / "SKILL.md"))})
    assert "args" in tool.parameters["properties"]
    reg = Registry()
    reg.register(tool)
    from agentloop.events import ToolCall

    out = reg.invoke(ToolCall("c1", "Skill", {"skill": "release", "args": "2.1.0"}))
    assert out.ok and "Release version 2.1.0 now." in str(out.content)
    plain = reg.invoke(ToolCall("c2", "Skill", {"skill": "release"}))
    assert plain.ok and "Release version $ARGUMENTS now." in str(plain.content)


def test_bashs_description_says_the_timeout_bash_default_timeout_ms_gives(
        proj: Path, scripted: Callable[..., str]) -> None:
    import os

    a = Agent(cwd=str(proj), model=scripted([]), env={**os.environ, "BASH_DEFAULT_TIMEOUT_MS": "300000"})
    try:
        doc = a.registry.get("Bash").description  # type: ignore[union-attr]
        assert "The default timeout is 5 minutes" in doc and "2 minutes" not in doc
    finally:
        a.close()


def test_a_commands_bang_lines_run_after_user_prompt_submit(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "status.md").write_text(
        "---\nallowed-tools: Bash(cat:*)\n---\nHook said: !`cat hook-ran`\n")
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"prompt\"])' > hook-ran"}]}]}}))
    a = Agent(cwd=str(proj), model=scripted([{"text": "ok"}]), trust=True)
    try:
        expanded = a.expand_command("/status now")
        assert expanded is not None and "Hook said: /status now" in expanded[0]
        a.ask(expanded[0], allowed_tools=expanded[1])
        assert (proj / "hook-ran").read_text().strip() == "/status now"  # fired once, on the prompt as typed
    finally:
        a.close()


def test_output_style_adds_the_chosen_styles_text_to_the_system_prompt(proj: Path, scripted: Callable[..., str]) -> None:
    """Output styles page (https://code.claude.com/docs/en/output-styles): ``outputStyle`` names a built-in style or
    a Markdown file in ``~/.claude/output-styles/`` or ``.claude/output-styles/`` (front matter ``name``); its text
    goes into the system prompt."""
    import os

    styles = Path(os.environ["HOME"]) / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "brief.md").write_text("---\nname: Brief\ndescription: Short answers\nkeep-coding-instructions: true\n---\n"
                                     "Answer in at most three sentences.\n")
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.local.json").write_text(json.dumps({"outputStyle": "Brief"}))
    a = Agent(cwd=str(proj), model=scripted([]), trust=True)
    try:
        assert "Answer in at most three sentences." in a.system_prompt()
        assert not [w for w in a.config_warnings if "outputStyle" in w]
    finally:
        a.close()
    (proj / ".claude" / "settings.local.json").write_text(json.dumps({"outputStyle": "Nonesuch"}))
    b = Agent(cwd=str(proj), model=scripted([]), trust=True)
    try:
        assert any("outputStyle 'Nonesuch': no such output style" in w for w in b.load_warnings)
    finally:
        b.close()


def test_an_async_rewake_hooks_exit_2_message_reaches_the_model_on_the_next_prompt(
        proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, hook handler fields: ``asyncRewake`` "runs in the background and wakes Claude on exit code 2";
    its stderr is shown to Claude (https://code.claude.com/docs/en/hooks#command-hook-fields). agentloop does not start
    a turn by itself in an idle session: the message joins the next prompt (README, "For Claude Code users")."""

    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'the test suite failed: 2 errors' >&2; exit 2", "asyncRewake": True}]}]}}))
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo built"}}]}, {"text": "done"},
               {"text": "fixing"}]
    a = Agent(cwd=str(proj), model=scripted(replies), trust=True, cli_rules=[("allow", "Bash")])
    try:
        assert not [w for w in a.config_warnings if "asyncRewake" in w]
        assert a.ask("build it").answer == "done"
        until(lambda: not [t for t in a.hooks.runner._async_running if t.is_alive()])  # type: ignore[attr-defined]
        a.ask("and now?")
        users = [str(m.get("content")) for m in a.session.messages if m.get("role") == "user"]
        assert "the test suite failed: 2 errors" in users[-1]
    finally:
        a.close()
