"""``agentloop replay --mode live-tools`` on a session of the terminal agent runs the agent's own tools.

The session is recorded for real (``agentloop -p`` on the scripted model, calling Read and Bash), then
replayed with its tools run again: Bash inside the agent's sandbox, the files in a scratch copy of the
session's folder, which itself is never written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.cli.main import main

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

# The session writes a file, reads one, and tries a credential file the sandbox hides.
SESSION = [
    {"text": "Reading.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
    {"text": "Running.", "tool_calls": [{"name": "Bash", "arguments": {
        "command": "echo made > made.txt; cat notes.txt made.txt; cat ~/.ssh/id_demo 2>/dev/null || echo no key here"}}]},
    {"text": "Done."},
]


@pytest.fixture
def session(tmp_path: Path, scripted, private_homes) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """(the recorded session's transcript, the folder it worked in), with a key in the user's ~/.ssh."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("first line\n")
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_demo").write_text("PRIVATE KEY\n")
    p = subprocess.run([sys.executable, "-m", "agentloop", "--model", scripted(SESSION), "-p", "go",
                        "--permission-mode", "bypassPermissions"], cwd=work, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (transcript,) = Path(os.environ["AGENTLOOP_HOME"]).glob("projects/*/sessions/*.jsonl")
    results = [json.loads(ln)["payload"] for ln in transcript.read_text().splitlines() if '"tool_result"' in ln]
    assert results[1]["content"] == "first line\nmade\nno key here", results  # recorded inside the sandbox
    (work / "made.txt").unlink()
    return transcript, work


def test_an_agent_session_replays_with_the_agents_own_tools_in_the_sandbox_and_a_scratch_copy(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    transcript, work = session
    code = main(["replay", str(transcript), "--mode", "live-tools", "--workdir", str(work)])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "(live-tools): EQUAL (byte-identical)" in out  # the key stayed hidden from the replayed Bash too
    assert "Bash runs inside the agent's sandbox" in err and "scratch copy" in err
    assert not (work / "made.txt").exists()  # written in the scratch copy only


def test_tools_agent_names_them_and_the_current_folder_is_the_default(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript, work = session
    monkeypatch.chdir(work)
    assert main(["replay", str(transcript), "--mode", "live-tools", "--tools", "agent"]) == 0
    assert "EQUAL" in capsys.readouterr().out
    assert not (work / "made.txt").exists()


def test_live_tools_on_a_session_without_its_files_differs_and_says_where(
    session: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript, _ = session
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["replay", str(transcript), "--mode", "live-tools", "--workdir", str(empty)]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT" in out and "no tool named" not in out


def test_workdir_without_the_agents_tools_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentloop.demo import act_core

    act_core(str(tmp_path))
    code = main(["replay", str(tmp_path / "demo-recover.jsonl"), "--mode", "live-tools", "--workdir", str(tmp_path)])
    assert code == 2
    assert "--workdir: only with the agent's own tools" in capsys.readouterr().err
