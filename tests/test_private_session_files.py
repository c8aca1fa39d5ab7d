"""What a session leaves beside its record is the user's alone, whatever the umask: the Claude Code
transcript mirror that hooks read, the tool-results folder (long outputs kept for Read) and background
commands' logs are 0600 files in 0700 folders; a home someone made 0755 is tightened and the user is told.

Claude Code hands hooks ``transcript_path`` (hooks reference, https://code.claude.com/docs/en/hooks,
"Hook input"): a file holding the whole conversation, as private as the session itself.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.testing import ScriptedModel, reply


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(top: Path) -> dict[str, int]:
    out = {}
    for root, dirs, files in os.walk(top):
        for n in [*dirs, *files]:
            p = os.path.join(root, n)
            out[os.path.relpath(p, top)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def test_the_transcript_mirror_tool_results_and_background_logs_are_private(tmp_path: Path, open_umask: None) -> None:
    home = tmp_path / "al"
    home.mkdir(mode=0o700)
    (home / "settings.json").write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}))
    (home / "settings.json").chmod(0o600)  # the test's own file
    proj = tmp_path / "proj"
    proj.mkdir()
    model = ScriptedModel([
        reply("", [("Bash", {"command": "seq 1 60000"})]),
        reply("", [("Bash", {"command": "echo from-the-background; sleep 1", "run_in_background": True})]),
        reply("done"),
    ])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "AGENTLOOP_HOME": str(home)}
    a = Agent(cwd=str(proj), home=str(home), env=env, model=model, permission_mode="bypassPermissions",
              sandbox="danger-full-access", trust=True)
    try:
        a.ask("go")
        time.sleep(0.5)
    finally:
        a.close()
    seen = modes(home)
    names = [os.path.basename(p) for p in seen]
    assert "claude-transcript.jsonl" in names and "tool-results" in names, seen
    assert any(n.startswith("background-") for n in names), seen
    assert any(p.endswith(".txt") and "tool-results" in p for p in seen), seen
    wrong = {p: f"{m:o}" for p, m in seen.items()
             if m != (0o700 if os.path.isdir(home / p) else 0o600) and not os.path.islink(home / p)}
    assert not wrong, wrong


def test_a_home_made_open_to_others_is_tightened_and_the_user_is_told(tmp_path: Path) -> None:
    home = tmp_path / "al"
    home.mkdir()
    home.chmod(0o755)
    proj = tmp_path / "proj"
    proj.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(home))
    p = subprocess.run([sys.executable, "-m", "agentloop", "-p", "x", "--model", f"scripted:{script}"], cwd=proj,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "hi\n", p.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert f"{home}: agentloop's home was open to others (755); it is 0700 now" in p.stderr
