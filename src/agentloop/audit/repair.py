"""Cutting a torn tail off a transcript (``agentloop verify --repair``).

A writer that dies mid-append (SIGKILL, power loss) can leave a partial last
line, or zeros and junk past the last record (a file system that grew the file
before its data reached the disk). ``repair_file`` cuts the file back to its
longest valid prefix and keeps every cut byte in a side file beside it, so the
repair loses nothing that could be looked at later.

Only a *tail* is cut. A damaged record followed by more records is not what a
crash leaves (writers only append): that is tampering or disk corruption, and
``repair_file`` refuses it rather than throw the later records away.

Order of effects, safe to crash at any point: the side file is written and
fsynced first, then the transcript is truncated and fsynced. A crash between
the two leaves the transcript as it was and a side file a rerun replaces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO

import orjson

from ..transcript import MAX_LINE_BYTES, TranscriptError, open_regular, verify_file

__all__ = ["RepairRefused", "RepairResult", "repair_file", "side_path_for"]


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
            while more := f.readline(_CHUNK):  # the rest of a line too long to be a record
                if more.endswith(b"\n"):
                    ended = True
                    break
        if complete >= 1 and _record_shaped(line[:-1] if ended else line):
            raise RepairRefused(
                f"{p}: not a torn tail: record {valid} is damaged but"
                f" {'another record follows' if complete == 1 else 'records follow'} it; run 'agentloop verify' (nothing was changed)"
            )
        if not ended:
            return complete, True
        complete += 1


def _record_shaped(line: bytes) -> bool:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "hash" in obj and "seq" in obj and "prev" in obj


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
                f.seek(keep)
                while chunk := f.read(_CHUNK):
                    view = memoryview(chunk)
                    while view:
                        n = os.write(fd, view)
                        view = view[n:]
                    removed += len(chunk)
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
