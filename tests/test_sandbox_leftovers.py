"""What a sandbox leaves and passes on: no key agent's socket variable, no private /tmp of a killed agentloop.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing) keeps commands from the user's
credentials; an ssh agent's socket is one (it signs with the user's keys).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None, reason=f"no sandbox here: {_why}")


def test_the_ssh_agents_socket_variable_does_not_reach_sandboxed_commands(tmp_path: Path) -> None:
    proj = tmp_path / "w"
    proj.mkdir()
    env = {**os.environ, "SSH_AUTH_SOCK": str(tmp_path / "agent.sock"), "PLAIN_VALUE": "kept"}
    model = ScriptedModel([reply("", [("Bash", {"command": "echo sock=${SSH_AUTH_SOCK:-none} plain=$PLAIN_VALUE"})]),
                           reply("done")])
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert "sock=none" in out and "plain=kept" in out


def test_a_killed_agentloops_private_tmp_is_removed_at_the_next_start(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stale = Path(tempfile.mkdtemp(prefix=f"{sbx.TMP_PREFIX}{p.pid}-"))
    (stale / "left").write_text("x")
    live = Path(tempfile.mkdtemp(prefix=f"{sbx.TMP_PREFIX}{os.getpid()}-"))  # negative control: its owner runs
    p.kill()
    p.wait()
    time.sleep(0.1)
    s = sbx.Sandbox(sbx.SandboxSettings(), [str(tmp_path)], [], _path)
    try:
        s.tmpdir()
        assert not stale.exists() and live.exists()
    finally:
        s.close()
        live.rmdir()
