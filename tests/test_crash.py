"""Crash consistency: SIGKILL a writer at random moments; cut files at every byte.

A writer acknowledges a record by returning from ``append`` with fsync
durability: the child prints ``seq hash`` right after. Each round resumes the
same file (repairing a torn tail first), appends until killed, and the parent
checks that every acknowledged record is still there with the same hash.

CI runs a few dozen kills per writer; ``AGENTLOOP_LONG=1`` runs 500+ of them
and the power-loss sweep over more records. The counts go to
``$AGENTLOOP_HARDENING_STATS`` (a JSON file) when that is set, for the README.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from agentloop.audit.repair import RepairRefused, repair_file
from agentloop.cli.main import main as cli_main
from agentloop.transcript import TranscriptError, TranscriptWriter, verify_file

LONG = os.environ.get("AGENTLOOP_LONG") == "1"
KILLS = 170 if LONG else 8  # per writer kind; three kinds: 510 long
STATS = os.environ.get("AGENTLOOP_HARDENING_STATS")


def record_stat(key: str, value: int) -> None:
    if not STATS:
        return
    data = json.loads(Path(STATS).read_text()) if os.path.exists(STATS) else {}
    data[key] = data.get(key, 0) + value
    Path(STATS).write_text(json.dumps(data, indent=1, sort_keys=True))


CHILD = r"""
import os, sys
from agentloop.transcript import TranscriptWriter
from agentloop.audit.repair import repair_file
mode, path, home = sys.argv[1], sys.argv[2], sys.argv[3]
out = sys.stdout

def ack(rec):
    out.write(f"{rec.seq} {rec.hash}\n")
    out.flush()
    return rec

if mode == "writer":
    w = TranscriptWriter(path, durability="fsync", resume=True, repair=repair_file)
    if w.repaired is not None:
        out.write("REPAIRED " + w.repaired.describe() + "\n")
    out.write("READY\n"); out.flush()
    i = 0
    while True:
        i += 1
        # sizes from a few bytes to past the 8 KiB buffer, so kills land inside big writes too
        ack(w.append("note", {"i": i, "text": "x" * ((i * 7919) % 20000)}))

elif mode == "run":
    from agentloop import Budget, run, tool
    from agentloop.testing import FunctionModel, reply

    class Acked(TranscriptWriter):
        def append(self, kind, payload):
            return ack(super().append(kind, payload))

    @tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    w = Acked(path, durability="fsync", resume=True, repair=repair_file)
    if w.repaired is not None:
        out.write("REPAIRED " + w.repaired.describe() + "\n")
    out.write("READY\n"); out.flush()
    n = [0]
    def step(req):
        n[0] += 1
        return reply(calls=[("add", {"a": n[0], "b": 1})], usage=(3, 2), step=n[0])
    run(FunctionModel(step), [add], "count forever", Budget(max_steps=10**9), transcript=w, model_name="scripted")

elif mode == "session":
    from agentloop import Budget, run, tool
    from agentloop.agent.session.store import Session
    from agentloop.testing import FunctionModel, reply

    @tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    sid = "20260101-000000-crash"
    if os.path.exists(path):
        s = Session.resume(home, sid, home, durability="fsync")
    else:
        s = Session.create(home, home, durability="fsync", sid=sid)
    if s.repaired is not None:
        out.write("REPAIRED " + s.repaired.describe() + "\n")
    inner = s.append
    s.append = lambda kind, payload: ack(inner(kind, payload))
    out.write("READY\n"); out.flush()
    n = [0]
    def step(req):
        n[0] += 1
        return reply(calls=[("add", {"a": n[0], "b": 1})], usage=(3, 2), step=n[0])
    run(FunctionModel(step), [add], "count forever", Budget(max_steps=10**9), transcript=s, model_name="scripted")
"""


def _kill_rounds(tmp_path: Path, mode: str, rounds: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if mode == "session":
        from agentloop.agent.session.store import sessions_dir

        path = Path(sessions_dir(str(home), str(home))) / "20260101-000000-crash.jsonl"
    else:
        path = tmp_path / "t.jsonl"
    acked: dict[int, str] = {}
    torn = repaired = unopened = 0
    env = {**os.environ, "AGENTLOOP_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    for _ in range(rounds):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, mode, str(path), str(home)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        assert proc.stdout is not None
        # Wait for READY, then kill after a random number of acks plus a random delay.
        want = rng.randint(0, 6)
        seen_acks = 0
        lines: list[bytes] = []
        buf = b""
        deadline = time.monotonic() + 60
        fd = proc.stdout.fileno()
        ready = False
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                buf += chunk
                *done, buf = buf.split(b"\n")
                for ln in done:
                    lines.append(ln)
                    if ln == b"READY":
                        ready = True
                    elif ready and ln[:1].isdigit():
                        seen_acks += 1
            if ready and seen_acks >= want:
                break
            if proc.poll() is not None:
                break
        assert ready, f"child never became ready: {proc.stderr.read().decode() if proc.stderr else ''}"
        time.sleep(rng.random() * 0.004)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rest = proc.stdout.read()
        proc.stdout.close()
        if proc.stderr is not None:
            err = proc.stderr.read().decode()
            proc.stderr.close()
        else:
            err = ""
        assert proc.returncode == -signal.SIGKILL, f"child exited by itself ({proc.returncode}): {err[-2000:]}"
        buf += rest
        lines.extend(buf.split(b"\n"))
        for ln in lines:
            if ln.startswith(b"REPAIRED "):
                repaired += 1
                assert b"cut" in ln and b"saved to" in ln, ln
            elif ln[:1].isdigit() and b" " in ln:
                seq_s, h = ln.decode().split(" ", 1)
                if len(h) == 64:  # a torn ack line (the pipe, not the file) is not an acknowledgement
                    acked[int(seq_s)] = h
        if not path.exists():
            # A session opens its file at its first record: a kill before that leaves no file,
            # which is right only if nothing was acknowledged yet.
            assert mode == "session" and not acked, f"{path} is gone after {len(acked)} acknowledged records"
            unopened += 1
            continue
        # What a reader sees now: every acknowledged record, same hash, in a verifying prefix.
        rep = verify_file(path)
        if not rep.ok:
            torn += 1
            assert all(pr.index >= rep.valid_prefix for pr in rep.problems), rep.problems
            assert rep.problems[0].kind in {"torn_tail", "bad_json"}, rep.problems
        assert rep.valid_prefix > max(acked, default=-1), (rep.valid_prefix, max(acked, default=-1))
        with open(path, "rb") as f:
            for i, line in enumerate(f):
                if i >= rep.valid_prefix:
                    break
                if i in acked:
                    assert json.loads(line)["hash"] == acked[i], f"acknowledged record {i} changed"
    return {"kills": rounds, "torn": torn, "repaired": repaired, "acked": len(acked), "unopened": unopened}


@pytest.mark.parametrize("mode", ["writer", "run", "session"])
def test_sigkilled_writer_loses_no_acknowledged_record_and_resumes(tmp_path: Path, mode: str) -> None:
    stats = _kill_rounds(tmp_path, mode, KILLS, seed=zlib.crc32(mode.encode()))
    assert stats["acked"] > KILLS  # the writers really wrote between kills
    record_stat("kills", stats["kills"])
    record_stat("records_lost", 0)


# --- power loss: every byte offset of the last records, plus zeros or junk ---------


def _make(path: Path, n: int) -> list[int]:
    """A transcript of n records; returns the byte offset where each line ends."""
    ends = []
    with TranscriptWriter(path) as w:
        for i in range(n):
            w.append("note", {"i": i, "s": "é✓" * (i % 5), "n": [i, -i, 1.5]})
            w._f.flush()
            ends.append(os.path.getsize(path))
    return ends


TAILS = [b"", b"\x00" * 37, b"\x00" * 4096, b"\xff\xfe junk \n more junk", b"\n", b'{"hash":"', b"\n\x00\x00"]


def test_power_loss_at_every_offset_verify_and_repair_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # thousands of repairs: their fsyncs (7 ms each here) are not what this test is about
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    n, last = (40, 12) if LONG else (8, 2)
    tails = TAILS if LONG else TAILS[1:5]
    src = tmp_path / "whole.jsonl"
    ends = _make(src, n)
    data = src.read_bytes()
    start = ends[n - last - 1]
    tested = 0
    for cut in range(start, len(data) + 1):
        for tail in tails:
            body = data[:cut] + tail
            # the longest run of whole original records at the start (a "\n" tail may complete one)
            kept_records = sum(1 for e in ends if e <= len(body) and body[:e] == data[:e])
            kept_bytes = ends[kept_records - 1] if kept_records else 0
            f = tmp_path / "f.jsonl"
            for old in tmp_path.glob("f.jsonl*"):
                old.unlink()
            f.write_bytes(body)
            rep = verify_file(f)
            whole = len(body) == kept_bytes
            assert rep.ok == whole, (cut, tail, rep.problems)
            assert rep.valid_prefix == kept_records, (cut, tail)
            assert rep.valid_prefix_bytes == kept_bytes, (cut, tail)
            res = repair_file(f)
            assert res.kept_records == kept_records and res.kept_bytes == kept_bytes
            assert res.removed_bytes == len(body) - kept_bytes
            assert f.read_bytes() == data[:kept_bytes]
            if res.removed_bytes:
                assert res.side_file is not None and Path(res.side_file).read_bytes() == body[kept_bytes:]
            else:
                assert res.side_file is None
            assert verify_file(f).ok
            # and the writer goes on from there
            with TranscriptWriter(f, resume=True, repair=repair_file) as w:
                assert w.count == kept_records
                w.append("after", {})
            assert verify_file(f).ok
            tested += 1
    record_stat("offsets", tested)
    assert tested >= (len(data) - start) * len(tails)


def test_resume_on_a_torn_tail_repairs_first_and_says_so(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    ends = _make(f, 5)
    with open(f, "ab") as fh:
        fh.write(b'{"hash":"abc')
    with TranscriptWriter(f, resume=True, repair=repair_file) as w:
        assert w.repaired is not None and w.repaired.removed_bytes == 12
        assert "cut 12 bytes" in w.repaired.describe() and "after record 4" in w.repaired.describe()
        assert w.count == 5
        w.append("after", {})
    assert verify_file(f).ok and os.path.getsize(f) > ends[-1]
    # negative control: without a repair function a torn tail is refused
    with open(f, "ab") as fh:
        fh.write(b"\x00\x00")
    with pytest.raises(TranscriptError, match="incomplete"):
        TranscriptWriter(f, resume=True)


def test_session_resume_after_a_crash_repairs_and_records_it(tmp_path: Path) -> None:
    from agentloop.agent.session.store import Session

    home = str(tmp_path)
    s = Session.create(home, home, sid="20260101-000000-torn")
    s.append("note", {"x": 1})
    s.close()
    with open(s.path, "ab") as fh:
        fh.write(b"\x00" * 100)
    s2 = Session.resume(home, "20260101-000000-torn", home)
    assert s2.repaired is not None and s2.repaired.removed_bytes == 100
    s2.close()
    rep = verify_file(s2.path)
    assert rep.ok
    kinds = [json.loads(line)["kind"] for line in Path(s2.path).read_bytes().splitlines()]
    assert "repair" in kinds


def test_repair_refuses_damage_that_is_not_a_torn_tail(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    _make(f, 6)
    lines = f.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"i":2', b'"i":9')
    f.write_bytes(b"".join(lines))
    before = f.read_bytes()
    with pytest.raises(RepairRefused, match="not a torn tail"):
        repair_file(f)
    assert f.read_bytes() == before and not list(tmp_path.glob("t.jsonl.torn-*"))


def test_cli_verify_repair_reports_what_it_cut_and_keeps_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.jsonl"
    ends = _make(f, 4)
    with open(f, "ab") as fh:
        fh.write(b'{"hash":"0\x00\x00')
    assert cli_main(["verify", str(f)]) == 1
    capsys.readouterr()
    assert cli_main(["verify", "--repair", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"cut 12 bytes (a partial last line) at offset {ends[-1]} after record 3; kept 4 records" in out
    side = tmp_path / f"t.jsonl.torn-{ends[-1]}"
    assert str(side) in out and side.read_bytes() == b'{"hash":"0\x00\x00'
    assert cli_main(["verify", str(f)]) == 0
    assert cli_main(["verify", "--repair", str(f)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    # tampering in the middle: refused, one line, exit 1, file untouched
    lines = f.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"i":1', b'"i":7')
    f.write_bytes(b"".join(lines))
    assert cli_main(["verify", "--repair", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a torn tail" in err


# --- a batch: driver and workers SIGKILLed together, again and again ---------------------


def test_sigkilled_batch_keeps_every_acknowledged_run_and_finishes_on_rerun(tmp_path: Path) -> None:
    from _batch import add_task, all_verify, manifest, write_tasks

    rounds = 170 if LONG else 4
    n_tasks = 400 if LONG else 16
    rng = random.Random(4242)
    # The short variant's tasks wait 50-150 ms a turn, so the batch (about 2.4 s of
    # model time on 2 workers) outlives the first kill even on an idle machine.
    low, high = (0, 15) if LONG else (50, 150)
    tasks = [add_task(i, delay_ms=rng.randint(low, high), steps=3) for i in range(n_tasks)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "agentloop.cli.main", "batch", path, "--out", str(out), "--workers", "2", "--json"]
    env = {**os.environ, "AGENTLOOP_HOME": str(tmp_path / "home")}
    acked: dict[str, bytes] = {}
    kills = 0
    for _ in range(rounds):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
        time.sleep(0.6 + rng.random() * 1.5)
        if proc.poll() is not None:
            break  # the batch finished before this kill
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        # a run the manifest calls finished is acknowledged: its file must stay, byte for byte, and verify
        done = [e["id"] for e in manifest(out) if e.get("status") == "completed"] if (out / "manifest.jsonl").exists() else []
        all_verify(out, done)
        for tid in done:
            data = (out / "runs" / f"{tid}.jsonl").read_bytes()
            assert acked.setdefault(tid, data) == data, f"{tid} changed after it was acknowledged"
    final = subprocess.run(args, capture_output=True, env=env, timeout=900)
    assert final.returncode == 0, final.stderr.decode()[-2000:]
    report = json.loads(final.stdout)
    assert report["counts"]["completed"] == n_tasks
    all_verify(out, [t["id"] for t in tasks])
    for tid, data in acked.items():
        assert (out / "runs" / f"{tid}.jsonl").read_bytes() == data
    assert kills >= 1
    record_stat("kills", kills)


def test_cli_verify_repair_on_a_missing_file_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["verify", "--repair", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err == f"agentloop: error: cannot read {tmp_path / 'nope.jsonl'}: No such file or directory\n"
