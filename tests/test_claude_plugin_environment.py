"""What a plugin's hooks and a session's SessionStart hooks find in their environment, with files laid out as
Anthropic's hookify plugin and obra/superpowers lay theirs out.

Claude Code's documentation:

- Plugins reference, "Environment variables": ``${CLAUDE_PLUGIN_ROOT}`` is "the absolute path to your plugin's
  directory"; "Both are also exported as environment variables to hook processes and MCP or LSP server
  subprocesses." (https://code.claude.com/docs/en/plugins-reference#environment-variables)
- Hooks reference, "PreToolUse decision control": ``hookSpecificOutput.permissionDecision: "deny"`` "prevents
  the tool call", the reason shown to Claude. (https://code.claude.com/docs/en/hooks#pretooluse-decision-control)
- Hooks reference, "SessionStart decision control": "``additionalContext``: String added to Claude's context";
  the output shape is ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}``.
  (https://code.claude.com/docs/en/hooks#sessionstart-decision-control)
- Hooks reference, "Persist environment variables": "SessionStart hooks have access to the ``CLAUDE_ENV_FILE``
  environment variable, which provides a file path where you can persist environment variables for subsequent
  Bash commands." (https://code.claude.com/docs/en/hooks#persist-environment-variables)
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.transcript import read_records

HOOKIFY_HOOK = """\
import json, os, sys
root = os.environ.get("CLAUDE_PLUGIN_ROOT")
if root:
    sys.path.insert(0, os.path.dirname(root))  # the plugin's folder is the package hookify
try:
    from hookify.core.rules import check
except ImportError as exc:
    print(json.dumps({"systemMessage": f"Hookify import error: {exc}"}))
    sys.exit(0)
print(json.dumps(check(json.load(sys.stdin))))
"""
HOOKIFY_RULES = """\
def check(event):
    command = (event.get("tool_input") or {}).get("command", "")
    if event.get("tool_name") == "Bash" and "rm -rf" in command:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "hookify: rm -rf is blocked by rule block-rm"}}
    return {}
"""


def _hookify(market: Path) -> Path:
    """A marketplace listing a plugin shaped as anthropics/claude-code's plugins/hookify: its hook is
    ``python3 ${CLAUDE_PLUGIN_ROOT}/hooks/pretooluse.py``, which imports its rules from the package the plugin's
    folder is, found through ``CLAUDE_PLUGIN_ROOT`` in its environment."""
    root = market / "plugins" / "hookify"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "hookify", "version": "0.1.0",
                                                                    "description": "Rules as hooks"}))
    (root / "__init__.py").write_text("")
    (root / "core").mkdir()
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "rules.py").write_text(HOOKIFY_RULES)
    (root / "hooks").mkdir()
    (root / "hooks" / "pretooluse.py").write_text(HOOKIFY_HOOK)
    (root / "hooks" / "hooks.json").write_text(json.dumps({"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/hooks/pretooluse.py", "timeout": 10}]}]}))
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "claude-code-plugins", "owner": {"name": "Anthropic"},
        "plugins": [{"name": "hookify", "source": "./plugins/hookify", "description": "Rules as hooks"}]}))
    return root


def _results(a: Agent) -> list[dict[str, object]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def test_a_hookify_like_plugin_imports_its_package_from_its_root_and_denies_rm_rf(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """The hook finds its package through ``CLAUDE_PLUGIN_ROOT`` in its environment, so its rule stops ``rm -rf``
    (Bash itself is allowed: only the hook stands in the way)."""
    _hookify(tmp_path / "market")
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({
        "extraKnownMarketplaces": {"claude-code-plugins": {"source": {"source": "directory", "path": str(tmp_path / "market")}}},
        "enabledPlugins": {"hookify@claude-code-plugins": True}}))
    (proj / "build").mkdir()
    (proj / "build" / "out.o").write_text("x")
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf build"}}]}, {"text": "done"}]
    notices: list[str] = []
    a = Agent(cwd=str(proj), model=scripted(replies), cli_rules=[("allow", "Bash")])
    a.on_notice = notices.append
    try:
        assert a.ask("clean up").answer == "done"
        [result] = _results(a)
        assert result["ok"] is False and "rm -rf is blocked by rule block-rm" in str(result["error"])
        assert (proj / "build" / "out.o").exists()
        assert not [n for n in notices if "import error" in n], notices
    finally:
        a.close()


SUPERPOWERS_HOOK = """\
#!/usr/bin/env bash
set -euo pipefail
context="You have superpowers. Use the Skill tool."
if [ -n "${CLAUDE_PLUGIN_ROOT:-}" ]; then
  printf '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "%s"}}\\n' "$context"
else
  printf '{"additional_context": "%s"}\\n' "$context"
fi
"""


def test_a_superpowers_like_session_start_hook_sees_its_plugin_root_and_its_context_reaches_the_model(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """obra/superpowers' ``hooks/session-start`` picks its output's shape by ``CLAUDE_PLUGIN_ROOT``; with the variable
    set it answers in the documented ``hookSpecificOutput.additionalContext``, which the model gets."""
    root = tmp_path / "superpowers"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "superpowers", "version": "4.0.0"}))
    (root / "hooks").mkdir()
    hook = root / "hooks" / "session-start"
    hook.write_text(SUPERPOWERS_HOOK)
    hook.chmod(0o755)
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"matcher": "startup|resume|clear|compact",
        "hooks": [{"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/hooks/session-start\"", "async": False}]}]}}))
    a = Agent(cwd=str(proj), model=scripted([]), plugin_dirs=[str(root)])
    try:
        assert any("You have superpowers. Use the Skill tool." in str(m.get("content")) for m in a.session.messages)
    finally:
        a.close()


ENV_HOOK = """\
#!/bin/bash
if [ -n "$CLAUDE_ENV_FILE" ]; then
  echo 'export NODE_ENV=production' >> "$CLAUDE_ENV_FILE"
  echo 'export PATH="$PATH:/opt/tools/bin"' >> "$CLAUDE_ENV_FILE"
  echo 'export DEPLOY_TOKEN=abc123' >> "$CLAUDE_ENV_FILE"
fi
exit 0
"""


def test_exports_a_session_start_hook_writes_to_claude_env_file_reach_later_bash_calls(
        proj: Path, scripted: Callable[..., str], caplog: pytest.LogCaptureFixture) -> None:
    """The documented example: ``export`` lines appended to ``$CLAUDE_ENV_FILE`` are there in every later Bash call;
    a secret-named one stays out (agentloop's rule for every child: allowedEnvVars passes it) and a notice says so."""
    hooks = proj / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "env.sh").write_text(ENV_HOOK)
    (hooks / "env.sh").chmod(0o755)
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/env.sh"}]}]}}))
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {
        "command": 'echo "$NODE_ENV|${DEPLOY_TOKEN:-none}"; case ":$PATH:" in *:/opt/tools/bin:*) echo on-path;; esac'}}]},
        {"text": "done"}]
    a = Agent(cwd=str(proj), model=scripted(replies), cli_rules=[("allow", "Bash")], trust=True)
    try:
        assert any("DEPLOY_TOKEN is not passed to Bash" in r.getMessage() for r in caplog.records)
        assert a.ask("which env?").answer == "done"
        [result] = _results(a)
        assert "production|none" in str(result["content"]) and "on-path" in str(result["content"])
    finally:
        a.close()


def test_what_a_projects_session_start_hook_writes_to_claude_env_file_never_runs_on_the_host(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """A project's hooks run in the sandbox (decision 0015); the file they write is sourced where they ran, so a
    command written into it cannot reach outside the workspace, as the hook itself could not."""
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "sourced-on-the-host"
    hooks = proj / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "env.sh").write_text(f"#!/bin/bash\necho 'touch {marker}; export SEEN=yes' >> \"$CLAUDE_ENV_FILE\"\n")
    (hooks / "env.sh").chmod(0o755)
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/env.sh"}]}]}}))
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": 'echo "seen=$SEEN"'}}]}, {"text": "done"}]
    a = Agent(cwd=str(proj), model=scripted(replies), cli_rules=[("allow", "Bash")], trust=True)
    try:
        assert a.ask("go").answer == "done"
        [result] = _results(a)
        assert "seen=yes" in str(result["content"])  # the export still reaches Bash
        assert not marker.exists()  # the command in the file ran in the sandbox, where outside is read-only
    finally:
        a.close()
