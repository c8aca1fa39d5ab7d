"""A full disk, for real: a small tmpfs filled until ENOSPC, then the transcript verifies.

Issue 16 point 8: a failed write must leave a verifiable prefix. The writer
cuts the file back to the end of its last acknowledged record (ftruncate);
fault injection covers EIO and every k-th write in tests/test_io_faults.py,
this covers the kernel's own short write and ENOSPC on a real file system.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.cli.main import main as cli_main
from agentloop.transcript import TranscriptError, TranscriptWriter, verify_file


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted for this test (skipped where mounting is not permitted)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
            capture_output=True, text=True, timeout=30,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here: a real full disk cannot be made (fault injection still runs)")
    if proc.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here ({proc.stderr.strip() or proc.returncode}); "
                    "fault injection in test_io_faults.py still runs")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def _fill(path: Path, sizes: list[int]) -> tuple[int, TranscriptError]:
    """Append records of the given payload sizes, over and over, until the disk is full."""
    w = TranscriptWriter(path)
    acked = 0
    try:
        i = 0
        while True:
            w.append("chunk", {"i": i, "text": "x" * sizes[i % len(sizes)]})
            acked += 1
            i += 1
            assert i < 10_000, "the small file system never filled up"
    except TranscriptError as exc:
        with pytest.raises(TranscriptError, match="broken"):
            w.append("late", {})
        return acked, exc
    finally:
        w.close()


@pytest.mark.parametrize("sizes", [[5000], [333, 7000, 12_345], [100]], ids=["5k", "mixed", "small"])
def test_a_full_disk_leaves_a_transcript_that_verifies_with_every_acknowledged_record(small_fs: Path, sizes: list[int]) -> None:
    path = small_fs / "run.jsonl"
    acked, exc = _fill(path, sizes)
    assert os.strerror(errno.ENOSPC) in str(exc) and str(path) in str(exc)
    assert "could not be cut off" not in str(exc)
    report = verify_file(path)
    assert report.ok, report.problems[:3]
    assert report.count == acked > 0
    assert cli_main(["verify", str(path)]) == 0
    # the writer made the cut itself: resuming finds nothing to repair
    with TranscriptWriter(path, resume=True) as w:
        assert w.repaired is None and w.count == acked


def test_a_full_disk_under_other_files_of_the_session_still_leaves_a_whole_record(small_fs: Path) -> None:
    # Space taken by something else between two appends: the next record lands short.
    path = small_fs / "run.jsonl"
    w = TranscriptWriter(path)
    for i in range(3):
        w.append("k", {"i": i})
    filler = small_fs / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    os.truncate(filler, os.path.getsize(filler) - 4096)  # one page free: the record lands part-way
    with pytest.raises(TranscriptError, match="No space left"):
        w.append("big", {"text": "y" * 20_000})
    w.close()
    report = verify_file(path)
    assert report.ok and report.count == 3
