"""Settings keys from Claude Code's settings reference, honoured as it documents them.

- Settings reference, "Environment variables": ``BASH_DEFAULT_TIMEOUT_MS`` ("Default timeout for
  long-running bash commands") and ``BASH_MAX_TIMEOUT_MS`` ("Maximum timeout the model can set for
  long-running bash commands"), in the process environment or the settings' ``env``.
- Settings reference, hook settings: ``allowManagedHooksOnly`` "When true (and set in managed
  settings), only hooks from managed settings run. User, project, and local hooks are ignored."
- Settings reference, permission settings: ``disableBypassPermissionsMode``: ``"disable"`` prevents
  ``bypassPermissions`` mode from being activated.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.transcript import read_records


def bash_call(cmd: str, timeout_ms: int | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"command": cmd}
    if timeout_ms is not None:
        args["timeout"] = timeout_ms
    return {"text": "", "tool_calls": [{"name": "Bash", "arguments": args}], "usage": [100, 10]}


def write_settings(proj: Path, data: dict[str, Any]) -> None:
    (proj / ".claude").mkdir(exist_ok=True)
    (proj / ".claude" / "settings.json").write_text(json.dumps(data))


def test_bash_timeouts_come_from_the_settings_env(proj: Path, scripted: Callable[..., str]) -> None:
    """Environment variables: the default timeout applies when the model gives none; the maximum caps the one it gives."""
    write_settings(proj, {"permissions": {"allow": ["Bash"]},
                          "env": {"BASH_DEFAULT_TIMEOUT_MS": "1000", "BASH_MAX_TIMEOUT_MS": "1500"}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("sleep 30; echo late"), bash_call("sleep 30; echo late", 600_000),
                                                        bash_call("echo quick"), {"text": "done", "usage": [10, 1]}]))
    try:
        assert (a.shell_timeout_s, a.shell_max_timeout_s) == (1.0, 1.5)
        t0 = time.monotonic()
        a.ask("go")
        took = time.monotonic() - t0
    finally:
        a.close()
    default, capped, quick = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert not default["ok"] and "timed out after 1 s" in default["error"]
    assert not capped["ok"] and "timed out after 1.5 s" in capped["error"]
    assert quick["ok"] and took < 25  # killed at 1 s and 1.5 s, not left to run 60 s


def test_a_bad_bash_timeout_is_named_and_the_default_kept(proj: Path, scripted: Callable[..., str]) -> None:
    write_settings(proj, {"env": {"BASH_DEFAULT_TIMEOUT_MS": "soon"}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        assert a.shell_timeout_s == 120.0 and a.shell_max_timeout_s is None
        assert any("BASH_DEFAULT_TIMEOUT_MS='soon' is not a positive number of milliseconds" in w for w in a.config_warnings)
    finally:
        a.close()


def test_managed_allow_managed_hooks_only_keeps_project_and_user_hooks_from_running(
    proj: Path, tmp_path: Path, scripted: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    """Hook settings, ``allowManagedHooksOnly``: only the managed file's hooks run; the others are named."""
    managed = tmp_path / "managed-settings.json"
    managed.write_text(json.dumps({"allowManagedHooksOnly": True, "hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": f"touch {proj}/managed-ran"}]}]}}))
    write_settings(proj, {"allowManagedHooksOnly": False, "hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": f"touch {proj}/project-ran"}]}]}})
    with caplog.at_level("WARNING", logger="agentloop"):
        a = Agent(cwd=str(proj), trust=True, model=scripted([]), managed_settings=str(managed))
        a.close()
    warnings = [r.getMessage() for r in caplog.records]
    assert (proj / "managed-ran").exists() and not (proj / "project-ran").exists()
    assert any("hooks not run" in w and "allowManagedHooksOnly" in w for w in warnings)
    assert any("allowManagedHooksOnly is read from managed settings only" in w for w in warnings)


def test_disable_bypass_permissions_mode_refuses_bypass(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    """Permission settings, ``disableBypassPermissionsMode: "disable"``: bypassPermissions cannot be turned on."""
    managed = tmp_path / "managed-settings.json"
    managed.write_text(json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}}))
    with pytest.raises(AgentError, match="bypassPermissions mode is disabled by .*managed-settings.json"):
        Agent(cwd=str(proj), trust=True, model=scripted([]), managed_settings=str(managed), permission_mode="bypassPermissions")
    a = Agent(cwd=str(proj), trust=True, model=scripted([]), managed_settings=str(managed), permission_mode="acceptEdits")
    try:
        assert a.permission_mode == "acceptEdits" and not [w for w in a.config_warnings if "disableBypass" in w]
    finally:
        a.close()


STATUS_SH = """#!/usr/bin/env bash
input=$(cat)
model=$(echo "$input" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["model"]["id"], d["cost"]["total_cost_usd"], d["workspace"]["current_dir"])')
echo "[$model] key=${ANTHROPIC_API_KEY:-none} dir=$CLAUDE_PROJECT_DIR"
echo "second row"
"""


def test_the_status_line_command_draws_the_toolbar(proj: Path, scripted: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings reference, ``statusLine``; status line docs: the command reads the session as JSON on stdin and
    what it prints is shown, each line a row ("Display multiple lines",
    https://code.claude.com/docs/en/statusline#display-multiple-lines). It runs in the hooks' environment (no
    provider keys)."""
    import argparse
    import stat

    from agentloop.cli.repl import Repl

    script = proj / "status.sh"
    script.write_text(STATUS_SH)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    write_settings(proj, {"statusLine": {"type": "command", "command": str(script)}})
    repl = Repl(argparse.Namespace(), None, interactive=False)
    repl.agent = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        spec = repl.agent.model_spec
        assert repl.status_line() == f"[{spec} 0.0 {proj}] key=none dir={proj}\nsecond row"
        write_settings(proj, {"statusLine": {"type": "command", "command": "echo oops >&2; exit 4"}})
    finally:
        repl.agent.close()
    repl.agent = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        assert repl.status_line() == "status line: exited with 4: oops"
    finally:
        repl.agent.close()


def test_the_history_file_keeps_the_last_thousand_prompts(tmp_path: Path) -> None:
    """Seed 004, REPL: the history file holds at most 1,000 entries (prompt_toolkit's file format kept)."""
    from prompt_toolkit.history import FileHistory

    from agentloop.cli.repl import trim_history

    path = tmp_path / "history"
    h = FileHistory(str(path))
    for i in range(1005):
        h.store_string(f"prompt {i}\nsecond line {i}")
    trim_history(str(path))
    kept = list(FileHistory(str(path)).load_history_strings())
    assert len(kept) == 1000 and kept[0] == "prompt 1004\nsecond line 1004" and kept[-1] == "prompt 5\nsecond line 5"
    trim_history(str(path))  # already short enough: unchanged
    assert len(list(FileHistory(str(path)).load_history_strings())) == 1000
