"""Everything agentloop writes under its home is the user's alone, even under ``umask 000``, with the sandbox
on and the file tools' checkpoints in use.

Under ``umask 000`` the checkpoint store's folders came out 0777 and the sandbox's probe cache 0666 (a
``makedirs`` mode covers only the last folder, and a plain ``open`` follows the umask). The session files
beside the record were already private (``tests/test_private_session_files.py``). Claude Code keeps its
session files under ``~/.claude`` for the user only.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.sandbox import bubblewrap as sbx

_path, _why = sbx.probe()


@pytest.fixture
def no_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(_path is None, reason=f"no sandbox here: {_why}")
def test_checkpoints_and_the_sandbox_probe_cache_are_private_under_umask_000(tmp_path: Path, no_umask: None) -> None:
    home = tmp_path / "al"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "f.txt").write_text("before\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": str(proj / "f.txt")}}]},
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {"file_path": str(proj / "f.txt"),
                                                                    "old_string": "before", "new_string": "after"}}]},
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]},
        {"text": "done"},
    ]))
    env = {**os.environ, "HOME": str(tmp_path), "AGENTLOOP_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "go", "--model", f"scripted:{script}",
                    "--allowedTools", "Read,Edit,Bash"], cwd=proj, env=env, capture_output=True, timeout=180, check=True)
    assert (proj / "f.txt").read_text() == "after\n"
    seen = {}
    for root, dirs, files in os.walk(home):
        for n in [*dirs, *files]:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                seen[os.path.relpath(p, home)] = stat.S_IMODE(os.lstat(p).st_mode)
    assert any(p.startswith("checkpoints" + os.sep) for p in seen), seen
    assert any(p.endswith(sbx.PROBE_CACHE) for p in seen), seen
    wrong = {p: f"{m:o}" for p, m in seen.items() if m & 0o077}
    assert not wrong, wrong


def test_a_permission_rule_the_user_adds_is_written_private_under_umask_000(tmp_path: Path, no_umask: None) -> None:
    """``/permissions allow`` writes the project's ``.agentloop/settings.local.json``: new, it is the user's
    alone (0600 in a 0700 folder); an existing settings file keeps the mode it had."""
    from agentloop.agent.agent import Agent
    from agentloop.cli.permissions_edit import add_rule
    from agentloop.testing import ScriptedModel

    proj = tmp_path / "proj"
    proj.mkdir()
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), model=ScriptedModel([]), trust=True)
    try:
        add_rule(a, "allow", '"Bash(make test)"')
        (proj / "shared.json").write_text("{}")
        (proj / "shared.json").chmod(0o644)
        add_rule(a, "allow", '"Bash(make lint)" --file shared.json')
    finally:
        a.close()
    assert stat.S_IMODE((proj / ".agentloop").stat().st_mode) == 0o700
    assert stat.S_IMODE((proj / ".agentloop" / "settings.local.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((proj / "shared.json").stat().st_mode) == 0o644
