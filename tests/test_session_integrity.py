"""A session's records are checked before they are trusted.

``-c``, ``--resume`` and ``rewind`` verify the whole chain first (the fast path
``agentloop verify`` takes) and refuse a damaged file with its first bad record
named, appending nothing to it; ``--force`` says what it skips and goes on in a
new session (``-c``/``--resume``) or rewinds only the files the verified records
name (``rewind``). A rewind never touches a path outside the workspace, whatever
a record says. ``sessions`` and ``rewind`` read as ``verify`` reads: bounded
memory and time whatever the file's tail holds.

Claude Code's documentation ("Checkpointing": rewinding restores code and/or
conversation to a checkpoint; "CLI reference": ``--continue``/``--resume``
load a conversation) says what these commands do; what they may trust is
agentloop's own rule (its sessions are hash-chained transcripts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.store import Session, SessionDamaged, sessions_dir
from agentloop.line import make_line
from agentloop.transcript import verify_file

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    return env


def _run(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTLOOP, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


SCRIPT = [
    {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "a.txt", "content": "alpha\n"}}]},
    {"text": "wrote a"},
    {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]},
    {"text": "read a"},
]


@pytest.fixture()
def proj(proj: Path) -> Path:
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write", "Edit", "Read"]}}))
    return proj


def _session(scripted: Callable[..., str], proj: Path) -> tuple[str, Path]:
    """Two prompts (a Write, then a Read), and a side cost recorded after them."""
    a = Agent(cwd=str(proj), trust=True, model=scripted(SCRIPT))
    a.ask("write a")
    a.ask("read a")
    sid = a.session.id
    a.close("done")
    s = Session.resume(str(proj), sid)
    s.append("side_cost", {"what": "compaction", "cost_micros": 7})
    s.close()
    path = Path(sessions_dir(str(proj))) / f"{sid}.jsonl"
    assert verify_file(path).ok
    return sid, path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _index(lines: list[bytes], kind: str, last: bool = False) -> int:
    found = [i for i, ln in enumerate(lines) if json.loads(ln)["kind"] == kind]
    return found[-1] if last else found[0]


def _rechain(records: list[dict[str, Any]]) -> bytes:
    """Lines for ``records`` with every hash and link recomputed: a forgery that verifies."""
    out, prev = [], "0" * 64
    for seq, r in enumerate(records):
        prev, line = make_line(seq, prev, r["kind"], r["payload"])
        out.append(line)
    return b"".join(out)


def _edit(lines: list[bytes], i: int, change: Callable[[dict[str, Any]], None]) -> list[bytes]:
    obj = json.loads(lines[i])
    change(obj["payload"])
    return [*lines[:i], json.dumps(obj, separators=(",", ":")).encode() + b"\n", *lines[i + 1 :]]


def _tool_text(p: dict[str, Any]) -> None:
    p["content"] = "something the tool never said"


def _path(p: dict[str, Any]) -> None:
    p["path"] = p["path"] + ".elsewhere"


def _cost(p: dict[str, Any]) -> None:
    p["cost_micros"] = 0


def _forge_tool_result(lines: list[bytes]) -> list[bytes]:
    """The tool result changed and its own hash recomputed: the next record's link breaks."""
    i = _index(lines, "tool_result")
    obj = json.loads(lines[i])
    _tool_text(obj["payload"])
    _, line = make_line(obj["seq"], obj["prev"], obj["kind"], obj["payload"])
    return [*lines[:i], line, *lines[i + 1 :]]


DAMAGE: dict[str, tuple[Callable[[list[bytes]], list[bytes]], str]] = {
    "a changed tool result": (lambda ls: _edit(ls, _index(ls, "tool_result"), _tool_text), "hash_mismatch"),
    "a changed tool result with its hash recomputed": (_forge_tool_result, "prev_mismatch"),
    "a deleted line": (lambda ls: [*ls[:3], *ls[4:]], "seq_gap"),
    "two lines swapped": (lambda ls: [*ls[:3], ls[4], ls[3], *ls[5:]], "seq_gap"),
    "an edited file_change": (lambda ls: _edit(ls, _index(ls, "file_change"), _path), "hash_mismatch"),
    "an edited side_cost": (lambda ls: _edit(ls, _index(ls, "side_cost"), _cost), "hash_mismatch"),
    "a garbage line in the middle": (lambda ls: [*ls[:3], b"garbage\n", *ls[3:]], "bad_json"),
    "a duplicated line": (lambda ls: [*ls[:4], ls[3], *ls[4:]], "seq_gap"),
    "a duplicated last line": (lambda ls: [*ls, ls[-1]], "seq_gap"),
    "a garbage last line": (lambda ls: [*ls, b"{}\n"], "missing_fields"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_resuming_a_damaged_session_is_refused_with_the_record_named_and_nothing_appended(
    proj: Path, scripted: Callable[..., str], damage: str
) -> None:
    sid, path = _session(scripted, proj)
    change, kind = DAMAGE[damage]
    path.write_bytes(b"".join(change(_lines(path))))
    before = path.read_bytes()
    report = verify_file(path)
    assert not report.ok
    with pytest.raises(SessionDamaged) as info:
        Session.resume(str(proj), sid)
    msg = str(info.value)
    assert f"record {report.problems[0].index}" in msg and kind in msg and "\n" not in msg
    assert path.read_bytes() == before
    # the lock was released: a second try is refused the same way, not as busy
    with pytest.raises(SessionDamaged):
        Session.resume(str(proj), sid)


def test_continue_on_a_damaged_session_exits_1_naming_the_record_and_writes_nothing(proj: Path, scripted: Callable[..., str]) -> None:
    sid, path = _session(scripted, proj)
    path.write_bytes(b"".join(DAMAGE["a changed tool result"][0](_lines(path))))
    before = path.read_bytes()
    names = sorted(os.listdir(path.parent))
    for flags in (["-c"], ["--resume", sid[:15]]):
        p = _run([*flags, "-p", "go on", "--model", scripted([{"text": "unused"}], "more.json")], proj)
        assert p.returncode == 1, p.stderr
        assert p.stderr.count("\n") == 1 and "fails verification at record" in p.stderr and "hash_mismatch" in p.stderr
        assert path.read_bytes() == before
        assert sorted(os.listdir(path.parent)) == names


def test_force_goes_on_in_a_new_session_from_the_verified_records_and_says_what_it_skips(
    proj: Path, scripted: Callable[..., str]
) -> None:
    sid, path = _session(scripted, proj)
    lines = _lines(path)
    bad = _index(lines, "run_start", last=True)  # the second prompt's run: only the first prompt is trusted
    path.write_bytes(b"".join(_edit(lines, bad, lambda p: p.update(config={}))))
    before = path.read_bytes()
    p = _run(["-c", "--force", "-p", "go on", "--model", scripted([{"text": "went on"}], "more.json")], proj)
    assert p.returncode == 0, p.stderr
    assert f"--force: session {sid} fails verification at record {bad}" in p.stderr
    assert f"record {bad} on (hash_mismatch) is not read" in p.stderr and "left as it is" in p.stderr
    assert path.read_bytes() == before
    new = [n for n in os.listdir(path.parent) if n.endswith(".jsonl") and n != path.name]
    assert len(new) == 1
    new_path = path.parent / new[0]
    assert verify_file(new_path).ok
    recs = [json.loads(ln) for ln in _lines(new_path)]
    assert recs[0]["kind"] == "fork" and recs[0]["payload"]["from_session"] == sid
    run = next(r for r in recs if r["kind"] == "run_start")
    said = [m["content"] for m in run["payload"]["messages"] if m["role"] in ("user", "assistant")]
    assert said[:2] == ["write a", ""] and "wrote a" in said and "read a" not in said and said[-1] == "go on"


def test_a_crash_tail_is_still_cut_on_continue_and_the_chain_goes_on(proj: Path, scripted: Callable[..., str]) -> None:
    sid, path = _session(scripted, proj)
    with open(path, "ab") as f:
        f.write(b'{"hash":"12')  # a torn append
    p = _run(["-c", "-p", "go on", "--model", scripted([{"text": "went on"}], "more.json")], proj)
    assert p.returncode == 0, p.stderr
    assert verify_file(path).ok and list(path.parent.glob("*.torn-*"))


def test_rewind_listing_appends_nothing_and_refuses_a_damaged_session_naming_the_record(
    proj: Path, scripted: Callable[..., str]
) -> None:
    sid, path = _session(scripted, proj)
    before = path.read_bytes()
    p = _run(["rewind", sid], proj)
    assert p.returncode == 0, p.stderr
    assert [ln.split()[0] for ln in p.stdout.splitlines()] == ["1", "2"]
    assert path.read_bytes() == before  # listing writes nothing, not even session_start
    path.write_bytes(b"".join(DAMAGE["a deleted line"][0](_lines(path))))
    before = path.read_bytes()
    p = _run(["rewind", sid], proj)
    assert p.returncode == 1 and "fails verification at record 3" in p.stderr and "seq_gap" in p.stderr
    p = _run(["rewind", sid, "--to", "1"], proj)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "fails verification at record 3" in p.stderr
    assert path.read_bytes() == before and (proj / "a.txt").exists()


def test_rewind_force_on_a_damaged_session_rewinds_only_verified_files_and_records_nothing(
    proj: Path, scripted: Callable[..., str]
) -> None:
    sid, path = _session(scripted, proj)
    lines = _lines(path)
    bad = _index(lines, "side_cost")
    path.write_bytes(b"".join(_edit(lines, bad, _cost)))
    before = path.read_bytes()
    p = _run(["rewind", sid, "--to", "1", "--force"], proj)
    assert f"fails verification at record {bad}" in p.stderr and "nothing is written to the session" in p.stderr
    assert not (proj / "a.txt").exists()  # prompt 1's Write undone: the file did not exist before it
    assert path.read_bytes() == before


def _forge_outside(path: Path, target: str) -> None:
    """Point the session's file_change at ``target`` (a delete: it did not exist before), hashes recomputed."""
    records = [json.loads(ln) for ln in _lines(path)]
    fc = next(r for r in records if r["kind"] == "file_change")
    data = Path(target).read_bytes() if os.path.exists(target) else b""
    import hashlib

    fc["payload"].update(path=target, before=None, after=hashlib.sha256(data).hexdigest())
    path.write_bytes(_rechain(records))
    assert verify_file(path).ok


@pytest.mark.parametrize("how", ["an absolute path outside", "a path through a symlink out of the workspace"])
@pytest.mark.parametrize("force", [False, True])
def test_a_rewind_never_touches_a_path_outside_the_workspace_whatever_a_record_says(
    tmp_path: Path, proj: Path, scripted: Callable[..., str], how: str, force: bool
) -> None:
    sid, path = _session(scripted, proj)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    target = str(victim)
    if how.startswith("a path through"):
        (proj / "link").symlink_to(outside, target_is_directory=True)
        target = str(proj / "link" / "victim.txt")
    _forge_outside(path, target)
    p = _run(["rewind", sid, "--to", "1", *(["--force"] if force else [])], proj)
    assert victim.read_text() == "keep me\n"
    assert p.returncode == 1 and "outside the workspace" in p.stderr and target in p.stderr


def _peak(cmd: list[str], cwd: Path) -> tuple[int, float, subprocess.CompletedProcess[str]]:
    """(peak resident KiB, seconds, result) of ``agentloop CMD`` in a fresh child."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)\n"
        "d = time.monotonic() - t\n"
        "print(json.dumps([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, d, p.returncode, p.stdout, p.stderr]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, json.dumps([*AGENTLOOP, *cmd])], cwd=cwd, env=_env(),
                         capture_output=True, text=True, timeout=300)
    rss, secs, code, stdout, stderr = json.loads(out.stdout)
    return rss, secs, subprocess.CompletedProcess(cmd, code, stdout, stderr)


SPARSE_TAIL = 1 << 30


@pytest.mark.parametrize("cmd", [["sessions"], ["rewind", "SID"], ["-c", "-p", "go on"]])
def test_sessions_rewind_and_continue_read_a_sparse_giant_tail_in_bounded_memory_and_time(
    proj: Path, scripted: Callable[..., str], cmd: list[str]
) -> None:
    """A session with 1 GiB of zeros after its last record (a file system that grew the file
    before a crash): each command reads it as ``verify`` does, never whole."""
    sid, path = _session(scripted, proj)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size + SPARSE_TAIL)
    cmd = [sid if c == "SID" else c for c in cmd]
    if cmd[0] == "-c":
        cmd += ["--model", scripted([{"text": "went on"}], "more.json")]
    t = time.monotonic()
    rss_kib, secs, p = _peak(cmd, proj)
    assert p.returncode == 0, p.stderr
    assert rss_kib < 400 * 1024, f"{cmd[0]} peaked at {rss_kib // 1024} MiB"
    assert secs < 60 and time.monotonic() - t < 90
    if cmd[0] == "sessions":
        assert sid in p.stdout and "NO" in p.stdout  # listed, and marked as failing verify
    if cmd[0] == "-c":
        assert verify_file(path).ok
