"""Cutting a torn tail off a transcript (``agentloop verify --repair``).

A writer that dies mid-append (SIGKILL, power loss) can leave a partial last
line, or zeros and junk past the last record (a file system that grew the file
before its data reached the disk). ``repair_file`` cuts the file back to its
longest valid prefix and keeps every cut byte in a side file beside it, so the
repair loses nothing that could be looked at later.

Only a *tail* is cut. A damaged record followed by more records is not what a
crash leaves (writers only append): that is tampering or disk corruption, and
``repair_file`` refuses it rather than throw the later records away.

A file whose first line is not a record is not a transcript at all (random
bytes, a file of zeros): it is refused, and no repair ever empties a file.
Holes in a sparse tail are skipped, not read (``SEEK_DATA``), and stay holes
in the side file, so a tail of gigabytes of zeros costs neither the time to
read them nor the disk to keep them.

Order of effects, safe to crash at any point: the side file is written and
fsynced first, then the transcript is truncated and fsynced. A crash between
the two leaves the transcript as it was and a side file a rerun replaces.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import orjson

from ..transcript import MAX_LINE_BYTES, TranscriptError, open_regular, verify_file

__all__ = ["RepairRefused", "RepairResult", "crash_tail", "repair_file", "side_path_for"]


class RepairRefused(TranscriptError):
    """The damage is not a torn tail (records follow it), or the file cannot be read."""


@dataclass(frozen=True)
class RepairResult:
    path: str
    kept_records: int
    """Records left in the file (its valid prefix)."""
    kept_bytes: int
    removed_bytes: int
    """How many bytes were cut (0: the file was already whole)."""
    removed_lines: int
    """Complete lines cut (each ended by a newline)."""
    partial_tail: bool
    """The cut ended in bytes with no newline after them (a torn write)."""
    side_file: str | None
    """Where the cut bytes were kept (None when nothing was cut)."""
    first_problem: str | None
    """The verifier's message about the first cut record."""

    @property
    def repaired(self) -> bool:
        return self.removed_bytes > 0

    def describe(self) -> str:
        """One line saying exactly what was removed."""
        if not self.repaired:
            return f"{self.path}: nothing to repair ({self.kept_records} records, {self.kept_bytes} bytes)"
        parts = []
        if self.removed_lines:
            parts.append(f"{self.removed_lines} damaged line(s)")
        if self.partial_tail:
            parts.append("a partial last line")
        what = " and ".join(parts) or "trailing bytes"
        return (
            f"{self.path}: repaired: cut {self.removed_bytes} bytes ({what}) at offset {self.kept_bytes}"
            f" after record {self.kept_records - 1}; kept {self.kept_records} records;"
            f" cut bytes saved to {self.side_file}"
            + (f" (first problem: {self.first_problem})" if self.first_problem else "")
        )


def side_path_for(path: str, offset: int) -> str:
    """``FILE.torn-OFFSET`` (``.1``, ``.2``... when one is already there)."""
    base = f"{path}.torn-{offset}"
    cand, n = base, 0
    while os.path.exists(cand):
        n += 1
        cand = f"{base}.{n}"
    return cand


_CHUNK = 1 << 20


def _data_from(fd: int, pos: int) -> int | None:
    """The first offset at or after ``pos`` that holds data (not a hole), or None: only holes are left."""
    if pos >= os.fstat(fd).st_size:
        return None
    try:
        return os.lseek(fd, pos, getattr(os, "SEEK_DATA", 3))
    except OSError as exc:
        # ENXIO: only a hole is left; anything else (EINVAL): no SEEK_DATA here, so read it all
        return None if exc.errno == errno.ENXIO else pos


def _chunks(fd: int, start: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of everything from ``start`` to the end that is not a hole, in bounded pieces."""
    pos = start
    while (at := _data_from(fd, pos)) is not None:
        try:
            hole = os.lseek(fd, at, getattr(os, "SEEK_HOLE", 4))
        except OSError:
            hole = os.fstat(fd).st_size
        if hole <= at:  # no progress from the file system's answers: read on instead of asking again
            hole = os.fstat(fd).st_size
        while at < hole:
            data = os.pread(fd, min(_CHUNK, hole - at), at)
            if not data:
                return
            yield at, data
            at += len(data)
        pos = hole


def crash_tail(path: str, start: int) -> bool:
    """Whether the bytes of ``path`` from ``start`` on are what a crash leaves: no newline in them
    (a torn write, or zeros past the last record). Holes are skipped; memory stays bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        return all(b"\n" not in data for _, data in _chunks(fd, start))
    finally:
        os.close(fd)


def _scan_cut(f: BinaryIO, p: str, valid: int) -> tuple[int, bool]:
    """(complete lines, whether a partial line ends it) of the cut; refuses when records follow the damage.

    The first cut line is the damaged one; any record after it means the
    damage is not at the end, and cutting would throw good records away. Each
    line is looked at through its first ``MAX_LINE_BYTES`` only.
    """
    complete = 0
    partial = False
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return complete, partial
        ended = line.endswith(b"\n")
        if not ended and len(line) > MAX_LINE_BYTES:
            ended = _skip_line(f)
        if complete >= 1 and _record_shaped(line[:-1] if ended else line):
            raise RepairRefused(
                f"{p}: not a torn tail: record {valid} is damaged but"
                f" {'another record follows' if complete == 1 else 'records follow'} it; run 'agentloop verify' (nothing was changed)"
            )
        if not ended:
            return complete, True
        complete += 1


def _skip_line(f: BinaryIO) -> bool:
    """Read past the rest of a line too long to be a record, holes skipped; whether a newline ended it."""
    for at, data in _chunks(f.fileno(), f.tell()):
        nl = data.find(b"\n")
        if nl >= 0:
            f.seek(at + nl + 1)
            return True
    f.seek(0, os.SEEK_END)
    return False


def _record_shaped(line: bytes) -> bool:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "hash" in obj and "seq" in obj and "prev" in obj


def _copy_tail(src: int, keep: int, dst: int) -> int:
    """Copy ``src`` from ``keep`` to its end into ``dst``, holes left as holes; the bytes cut."""
    end = os.fstat(src).st_size
    for at, chunk in _chunks(src, keep):
        view = memoryview(chunk)
        off = at - keep
        while view:
            n = os.pwrite(dst, view, off)
            view = view[n:]
            off += n
    os.ftruncate(dst, end - keep)
    return end - keep


def repair_file(path: str | os.PathLike[str]) -> RepairResult:
    """Cut ``path`` back to its last valid record; keep the cut bytes beside it.

    Raises:
        RepairRefused: the file cannot be read or written, or a damaged record
            is followed by a record-shaped line (not a torn tail).
    """
    p = os.fspath(path)
    report = verify_file(p)
    if any(pr.kind == "unreadable" for pr in report.problems):
        raise RepairRefused(f"cannot read {report.problems[0].message}")  # the message starts with the path
    keep = report.valid_prefix_bytes
    try:
        size = os.path.getsize(p)
    except OSError as exc:
        raise RepairRefused(f"{p}: cannot read: {exc.strerror or exc}") from None
    first = next((pr.message for pr in report.problems), None)
    if size == keep:
        return RepairResult(p, report.valid_prefix, keep, 0, 0, False, None, first)
    if keep == 0:
        raise RepairRefused(
            f"{p}: not an agentloop transcript: its first line is not a record ({first}); nothing was changed"
            " (a repair never empties a file)"
        )
    # The cut is read in bounded pieces, never whole: a tail of junk can be any size.
    try:
        with open_regular(p) as f:
            f.seek(keep)
            complete, partial = _scan_cut(f, p, report.valid_prefix)
    except OSError as exc:
        raise RepairRefused(f"{p}: cannot read: {exc.strerror or exc}") from None
    side = side_path_for(p, keep)
    removed = 0
    try:
        fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with open_regular(p) as f:
                removed = _copy_tail(f.fileno(), keep, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        fd = os.open(p, os.O_WRONLY)
        try:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise RepairRefused(f"{p}: repair failed: {exc.strerror or exc} (the transcript is as it was, or cut only to its valid prefix)") from None
    return RepairResult(p, report.valid_prefix, keep, removed, complete, partial, side, first)
