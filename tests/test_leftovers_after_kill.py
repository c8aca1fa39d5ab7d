"""What an agentloop killed with SIGKILL leaves in the temporary folder is gone at the next start.

A SIGKILL runs no clean-up: the session's private ``/tmp`` (``agentloop-sandbox-PID-...``) and a sub-agent's
worktree (``agentloop-worktree-PID-...``) stayed, and the next agentloop removed them only when its first
sandboxed command ran, so a session without one left them for good. Every start now removes those whose PID
has gone. Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing) gives commands a private
temporary folder; it is the session's, not the machine's, to keep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agentloop.agent.sandbox import bubblewrap as sbx

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None, reason=f"no sandbox here: {_why}")


def agentloop(tmp_path: Path, replies: list[dict[str, object]], name: str) -> list[str]:
    (tmp_path / name).write_text(json.dumps(replies))
    return [sys.executable, "-m", "agentloop.cli.main", "-p", "go", "--model", f"scripted:{tmp_path / name}",
            "--allowedTools", "Bash"]


def test_a_sigkilled_agentloops_temporary_folders_are_gone_after_the_next_start_without_a_command(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "proj").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "HOME": str(tmp_path), "AGENTLOOP_HOME": str(tmp_path / "al")}
    sleeper = agentloop(tmp_path, [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 60"}}]},
                                   {"text": "done"}], "sleep.json")
    p = subprocess.Popen(sleeper, cwd=tmp_path / "proj", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(n.startswith(sbx.TMP_PREFIX) for n in os.listdir(tmp)):
            assert time.monotonic() < deadline and p.poll() is None, "the sandbox's /tmp never appeared"
            time.sleep(0.1)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    worktree = Path(tempfile.mkdtemp(prefix=f"agentloop-worktree-{p.pid}-child-", dir=tmp))
    (worktree / "worktree").mkdir()
    live = Path(tempfile.mkdtemp(prefix=f"agentloop-worktree-{os.getpid()}-child-", dir=tmp))  # negative control
    left = [n for n in os.listdir(tmp) if n.startswith(sbx.TMP_PREFIX)]
    assert left, "SIGKILL left nothing: the test shows nothing"
    subprocess.run(agentloop(tmp_path, [{"text": "done"}], "done.json"), cwd=tmp_path / "proj", env=env,
                   capture_output=True, timeout=120, check=True)
    assert sorted(os.listdir(tmp)) == [live.name]
