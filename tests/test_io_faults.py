"""I/O faults: ENOSPC and EIO in the k-th write and the k-th fsync, for every k of a run.

The run must stop with a clear TranscriptError, never acknowledge the record
whose write or fsync failed, never write or fsync again after it, and leave a
file that is a verifiable prefix (a half-written record is a torn tail that
``repair_file`` cuts). The CLI turns it into one line and a non-zero exit.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, run, tool
from agentloop.audit.repair import repair_file
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import Record, TranscriptError, TranscriptWriter, verify_file

STATS = os.environ.get("AGENTLOOP_HARDENING_STATS")
K_CALLS = 6


def record_stat(key: str, value: int) -> None:
    if not STATS:
        return
    data = json.loads(Path(STATS).read_text()) if os.path.exists(STATS) else {}
    data[key] = data.get(key, 0) + value
    Path(STATS).write_text(json.dumps(data, indent=1, sort_keys=True))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model() -> ScriptedModel:
    steps = [reply(calls=[("add", {"a": i, "b": 1})], usage=(5, 2), step=i) for i in range(K_CALLS)]
    return ScriptedModel([*steps, reply("done", usage=(5, 2))])


class Plan:
    def __init__(self, op: str = "", k: int = 0, err: int = 0):
        self.op, self.k, self.err = op, k, err
        self.writes = self.fsyncs = 0
        self.after_fault: list[str] = []
        self.faulted = False


class FaultyFile:
    """A file whose k-th write lands half its bytes and then fails, as a full disk does."""

    def __init__(self, f: Any, plan: Plan):
        self.f, self.plan = f, plan

    def write(self, data: bytes) -> int:
        p = self.plan
        if p.faulted:
            p.after_fault.append("write")
        p.writes += 1
        if p.op == "write" and p.writes == p.k:
            p.faulted = True
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            raise OSError(p.err, os.strerror(p.err))
        return int(self.f.write(data))

    def flush(self) -> None:
        self.f.flush()

    def fileno(self) -> int:
        return int(self.f.fileno())

    def close(self) -> None:
        self.f.close()


class Acked(TranscriptWriter):
    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.acked: list[Record] = []

    def append(self, kind: str, payload: Any) -> Record:
        rec = super().append(kind, payload)
        self.acked.append(rec)
        return rec


def _run_with(path: Path, plan: Plan, monkeypatch: pytest.MonkeyPatch) -> tuple[Acked | None, BaseException | None]:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if plan.faulted:
            plan.after_fault.append("fsync")
        plan.fsyncs += 1
        if plan.op == "fsync" and plan.fsyncs == plan.k:
            plan.faulted = True
            raise OSError(plan.err, os.strerror(plan.err))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    w: Acked | None = None
    try:
        w = Acked(path, durability="fsync", opener=lambda p, m: FaultyFile(open(p, m), plan))  # noqa: SIM115
        run(_model(), [add], "add things", Budget(max_steps=50), transcript=w, model_name="scripted")
    except TranscriptError as exc:
        if w is not None:
            # the run is over; a later append must refuse, not write or fsync again
            with pytest.raises(TranscriptError, match="broken"):
                w.append("late", {})
            w.close()
        return w, exc
    finally:
        monkeypatch.setattr(os, "fsync", real_fsync)
    assert w is not None
    w.close()
    return w, None


def test_every_kth_write_and_fsync_fault_stops_the_run_and_leaves_a_verifiable_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean = Plan()
    w, exc = _run_with(tmp_path / "clean.jsonl", clean, monkeypatch)
    assert exc is None and w is not None
    n_records = len(w.acked)
    assert clean.writes == n_records and clean.fsyncs == n_records + 1  # + the directory's, at creation
    injected = 0
    for op, total in (("write", clean.writes), ("fsync", clean.fsyncs)):
        for err in (errno.ENOSPC, errno.EIO):
            for k in range(1, total + 1):
                path = tmp_path / f"{op}-{err}-{k}.jsonl"
                plan = Plan(op, k, err)
                w, exc = _run_with(path, plan, monkeypatch)
                injected += 1
                assert exc is not None, f"{op} fault {k} went unnoticed"
                msg = str(exc)
                assert os.strerror(err) in msg and str(path) in msg, msg
                assert plan.after_fault == [], f"{op} fault {k}: {plan.after_fault} after the fault"
                acked = w.acked if w is not None else []
                # which record failed: the k-th write is record k-1; fsync 1 is the directory's
                failed = k - 1 if op == "write" else k - 2
                assert len(acked) == max(failed, 0), (op, k, len(acked))
                rep = verify_file(path)
                assert rep.valid_prefix >= len(acked)
                lines = path.read_bytes().splitlines()
                for rec in acked:
                    assert json.loads(lines[rec.seq])["hash"] == rec.hash
                # The writer cut off the record that failed (half-written, or whole but
                # never acknowledged because its fsync failed): the file is exactly the
                # acknowledged records, and it verifies with nothing to repair.
                assert rep.ok and rep.count == len(acked), (op, k, rep.problems[:1])
                assert os.path.getsize(path) == sum(len(line) + 1 for line in lines[: len(acked)])
                assert repair_file(path).kept_records == len(acked)
    assert injected == 2 * (clean.writes + clean.fsyncs)
    record_stat("faults", injected)


def test_when_the_cut_after_a_failed_write_fails_too_the_error_says_so_and_resume_repairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    plan = Plan("write", 3, errno.EIO)
    w = TranscriptWriter(path, opener=lambda p, m: FaultyFile(open(p, m), plan))  # noqa: SIM115

    def ftruncate(fd: int, length: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "ftruncate", ftruncate)
    w.append("a", {})
    w.append("b", {})
    with pytest.raises(TranscriptError) as info:
        w.append("c", {"text": "x" * 100})
    w.close()
    monkeypatch.undo()
    msg = str(info.value)
    assert msg.startswith(f"{path}: Input/output error while writing record 2")
    assert msg.endswith("the partial record could not be cut off (Input/output error): 'agentloop verify --repair' (or resuming the session) cuts it")
    assert verify_file(path).problems[0].kind == "torn_tail"
    resumed = TranscriptWriter(path, resume=True, repair=repair_file)
    assert resumed.repaired is not None and resumed.count == 2
    resumed.close()
    assert verify_file(path).ok


WRAPPER = r"""
import errno, os, sys
import agentloop.transcript as t
k = int(os.environ["FAULT_K"]); n = [0]
class F:
    def __init__(self, f): self.f = f
    def write(self, b):
        n[0] += 1
        if n[0] == k:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.f.write(b)
    def flush(self): self.f.flush()
    def fileno(self): return self.f.fileno()
    def close(self): self.f.close()
t.open = lambda p, m, **kw: F(open(p, m, **kw))
from agentloop.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_reports_a_full_disk_as_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}], "usage": [100, 10]},
        {"text": "It says hi.", "usage": [150, 5]},
    ]))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "hello.txt").write_text("hi\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(tmp_path / "home"), NO_COLOR="1", FAULT_K="3")
    p = subprocess.run(
        [sys.executable, "-c", WRAPPER, "-p", "what does hello.txt say?", "--model", f"scripted:{script}"],
        cwd=proj, env=env, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode != 0
    err = [line for line in p.stderr.splitlines() if line.strip() and not line.startswith("agentloop: spend cap")]
    assert len(err) == 1, p.stderr
    assert err[0].startswith("agentloop: error: cannot write the transcript:") and "No space left on device" in err[0]
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    # negative control: with no fault the same command succeeds
    env["FAULT_K"] = "0"
    ok = subprocess.run(
        [sys.executable, "-c", WRAPPER, "-p", "what does hello.txt say?", "--model", f"scripted:{script}"],
        cwd=proj, env=env, capture_output=True, text=True, timeout=120,
    )
    assert ok.returncode == 0 and ok.stdout == "It says hi.\n", ok.stderr
