"""The transcript: append-only JSON Lines whose records form a SHA-256 chain.

Format v1 (normative text: docs/transcript-format.md). Changing how a line is
built here changes every hash: the golden files in tests/golden pin it.

Rules:

1. A record is ``{"hash", "kind", "payload", "prev", "seq"}``, written as one
   RFC 8785 canonical line ending in ``\\n``.
2. ``hash`` is SHA-256 of the canonical form of ``{"kind", "payload", "prev",
   "seq"}``. Since "hash" sorts first, those hashed bytes are the line with its
   ``"hash":"…",`` member cut out: the writer builds the line by splicing and
   the verifier checks a record without serialising it again.
3. ``prev`` is the previous record's hash; record 0 has 64 zeros.
4. Writers append each record with one unbuffered write (a short write is
   finished before ``append`` returns), so an acknowledged record is in the
   OS's hands as a flush would leave it; ``durability="fsync"`` also fsyncs it,
   and fsyncs the directory when the file is created. A failed write or fsync
   is never retried as if it had worked: the writer is then broken for good,
   and it cuts the file back (``ftruncate``) to the end of its last
   acknowledged record, so a full disk leaves a file that verifies. When even
   that cut fails, resuming the file with a ``repair`` function (the agent's
   sessions pass ``audit.repair.repair_file``) cuts the torn tail.
5. A chain cannot see a tail that was cut off. Anchors (``anchor.py``) can.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal, NamedTuple, Protocol, cast

import orjson

from .canonical import NotCanonicalizable, canonical
from .line import fast_hash, is_canonical, make_line

__all__ = [
    "GENESIS",
    "MemoryTranscript",
    "Problem",
    "Record",
    "Sink",
    "TranscriptError",
    "TranscriptWriter",
    "VerifyReport",
    "MAX_LINE_BYTES",
    "bounded_lines",
    "check_payloads",
    "make_line",
    "new_record",
    "open_regular",
    "read_records",
    "too_long_problem",
    "verify_file",
    "verify_for_reading",
    "verify_lines",
    "verify_records",
]

FORMAT_VERSION = 1
GENESIS = "0" * 64
_KEYS = frozenset(("seq", "prev", "kind", "payload", "hash"))


class TranscriptError(Exception):
    """The transcript cannot be written or read (I/O, a broken chain on resume)."""


class Record(NamedTuple):
    """One record as read or written (a named tuple: verifying makes millions)."""

    seq: int
    prev: str
    kind: str
    payload: Any
    hash: str

    def to_json(self) -> dict[str, Any]:
        return {"hash": self.hash, "kind": self.kind, "payload": self.payload, "prev": self.prev, "seq": self.seq}


new_record: Callable[[tuple[int, str, str, Any, str]], Record] = functools.partial(tuple.__new__, Record)
"""``new_record((seq, prev, kind, payload, hash))``: a ``Record`` without the named
tuple's Python-level ``__new__`` (a call frame a record, on the write path)."""


class Sink(Protocol):
    """Where a run's records go. ``append`` returns the new record."""

    def append(self, kind: str, payload: Any) -> Record: ...


LineListener = Callable[[bytes], None]


class MemoryTranscript:
    """A transcript kept in memory: for tests, replay and comparisons."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.records: list[Record] = []
        self.listeners: list[LineListener] = []
        self._prev = GENESIS

    def append(self, kind: str, payload: Any) -> Record:
        seq = len(self.records)
        digest, line = make_line(seq, self._prev, kind, payload)
        rec = Record(seq, self._prev, kind, payload, digest)
        self.lines.append(line)
        self.records.append(rec)
        self._prev = digest
        for listener in self.listeners:
            listener(line[:-1])
        return rec

    def getvalue(self) -> bytes:
        return b"".join(self.lines)

    @property
    def last_hash(self) -> str:
        return self._prev


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


class TranscriptWriter:
    """Appends records to a file, one unbuffered write of a whole line each.

    Open with ``resume=True`` to continue an existing file: only its tail is
    read (the last line gives ``seq`` and ``prev``), never the whole file.
    When that tail is torn (a crash mid-append) and a ``repair`` function is
    given (``agentloop.audit.repair.repair_file``), the file is first cut back
    to its last valid record with it (the cut bytes kept in a side file) and
    ``self.repaired`` says what was removed; without one it raises. The core
    takes the function as an argument so it never imports the audit layer.

    Raises:
        TranscriptError: the file cannot be opened, its last line is not a
            record, or a write or fsync failed (then the writer stays broken).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Literal["flush", "fsync"] = "flush",
        resume: bool = False,
        opener: Callable[[str, str], BinaryIO] | None = None,
        repair: Callable[[str], Any] | None = None,
    ):
        self.path = os.fspath(path)
        self.durability = durability
        self.listeners: list[LineListener] = []
        self._broken: str | None = None
        self._seq = 0
        self._prev = GENESIS
        existed = os.path.exists(self.path)
        if existed and not resume and os.path.getsize(self.path) > 0:
            raise TranscriptError(f"{self.path}: exists and is not empty; pass resume=True to append")
        self.repaired: Any = None
        """On resume, what ``repair`` returned for a torn tail it cut first (else None)."""
        if existed and resume:
            try:
                tail = read_tail(self.path)
            except TranscriptError:
                if repair is None:
                    raise
                self.repaired = repair(self.path)  # a crash left a torn tail: cut it, keep the bytes aside
                tail = read_tail(self.path)
            if tail is not None:
                self._seq = tail.seq + 1
                self._prev = tail.hash
        try:
            # unbuffered by default: each record is one write(2), with no copy into a buffer to flush
            # a new file is 0600: a transcript holds every prompt, tool output and answer of its run
            self._f: BinaryIO = opener(self.path, "ab") if opener is not None else open(  # noqa: SIM115
                self.path, "ab", buffering=0, opener=_private)
        except OSError as exc:
            raise TranscriptError(f"{self.path}: cannot open for appending: {exc.strerror or exc}") from None
        self._end: int | None = None
        """Where the last acknowledged record ends: a failed append cuts the file back to it."""
        try:
            self._end = os.fstat(self._f.fileno()).st_size
        except (OSError, ValueError, AttributeError):
            pass  # not a real file (a test double): nothing to cut back
        if not existed and durability == "fsync":
            self._fsync_dir()

    @property
    def count(self) -> int:
        return self._seq

    @property
    def last_hash(self) -> str:
        return self._prev

    def _fsync_dir(self) -> None:
        d = os.path.dirname(os.path.abspath(self.path))
        try:
            fd = os.open(d, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            self._broken = f"fsync of the directory failed: {exc.strerror or exc}"
            raise TranscriptError(f"{self.path}: {self._broken}") from None
        finally:
            os.close(fd)

    def append(self, kind: str, payload: Any) -> Record:
        if self._broken is not None:
            raise TranscriptError(f"{self.path}: the writer is broken ({self._broken}); nothing more is written")
        digest, line = make_line(self._seq, self._prev, kind, payload)
        try:
            n = self._f.write(line)
            if n is not None and n < len(line):  # an unbuffered file may take part of a line (a nearly full disk)
                self._write_rest(line, n)
            self._f.flush()
            if self.durability == "fsync":
                os.fsync(self._f.fileno())
        except OSError as exc:
            self._broken = f"{exc.strerror or exc} while writing record {self._seq}"
            raise TranscriptError(f"{self.path}: {self._broken}{self._cut_back()}") from None
        if self._end is not None:
            self._end += len(line)
        rec = new_record((self._seq, self._prev, kind, payload, digest))
        self._seq += 1
        self._prev = digest
        for listener in self.listeners:
            listener(line[:-1])
        return rec

    def _cut_back(self) -> str:
        """After a failed append, cut off whatever part of the record landed; a note when that fails too."""
        if self._end is None:
            return ""
        try:
            fd = self._f.fileno()
            if os.fstat(fd).st_size != self._end:
                # Not fsynced: after a failed fsync another one proves nothing, and a
                # crash before the cut reaches the disk leaves a torn tail that resume cuts.
                os.ftruncate(fd, self._end)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return f"; the partial record could not be cut off ({why}): 'agentloop verify --repair' (or resuming the session) cuts it"
        return ""

    def _write_rest(self, line: bytes, done: int) -> None:
        """Finish a short write; a write that makes no progress fails as an OSError (the writer then breaks)."""
        view = memoryview(line)
        while done < len(line):
            n = self._f.write(view[done:])
            if not n:
                raise OSError(errno.EIO, "the file took no more bytes")
            done += n

    def close(self) -> None:
        try:
            self._f.close()
        except OSError:
            pass

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_tail(path: str) -> Record | None:
    """The last record of a file, read from its end.

    Raises:
        TranscriptError: the file does not end in a complete, valid record.
    """
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size == 0:
                return None
            chunk = 4096
            pos = size
            buf = b""
            while pos > 0:
                step = min(chunk, pos)
                pos -= step
                f.seek(pos)
                buf = f.read(step) + buf
                if buf.count(b"\n") >= 2 or pos == 0:
                    break
                chunk *= 2
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not buf.endswith(b"\n"):
        raise TranscriptError(f"{path}: the last line is incomplete (a torn write); run 'agentloop verify --repair'")
    last = buf[:-1].rsplit(b"\n", 1)[-1]
    problems: list[Problem] = []
    rec = _check_line(last, -1, 0, problems)
    if rec is None or problems:
        what = problems[0].message if problems else "not a record"
        raise TranscriptError(f"{path}: the last line is not a valid record ({what}); run 'agentloop verify --repair'")
    return rec


# --- verification -------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One fault found by the verifier."""

    index: int
    """The record's position (0-based) in the file."""
    kind: str
    message: str
    line: int | None = None
    """The 1-based line number, where the input had lines."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "kind": self.kind, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass
class VerifyReport:
    count: int = 0
    """How many records were read (valid or not)."""
    problems: list[Problem] = field(default_factory=list)
    last_hash: str = GENESIS
    """The last record's stored hash."""
    valid_prefix: int = 0
    """How many records from the start verify with no problem."""
    valid_prefix_bytes: int = 0
    """The byte length of that prefix."""

    @property
    def ok(self) -> bool:
        return not self.problems


_HEX64 = re.compile(r"[0-9a-f]{64}\Z").match


def _is_hex64(v: Any) -> bool:
    return type(v) is str and _HEX64(v) is not None


def _shape(obj: Any, index: int, line_no: int | None, problems: list[Problem]) -> Record | None:
    """The record's structure: an object with exactly the five fields, each of its type."""
    if not isinstance(obj, dict):
        problems.append(Problem(index, "not_an_object", f"record {index} is a {type(obj).__name__}, not an object", line_no))
        return None
    if len(obj) != 5 or obj.keys() != _KEYS:
        missing = _KEYS - obj.keys()
        if missing:
            problems.append(Problem(index, "missing_fields", f"record {index} lacks {', '.join(sorted(missing))}", line_no))
        else:
            extra = obj.keys() - _KEYS
            problems.append(Problem(index, "unexpected_fields", f"record {index} has extra keys {', '.join(sorted(extra))}", line_no))
        return None
    seq, prev, kind, h = obj["seq"], obj["prev"], obj["kind"], obj["hash"]
    if type(seq) is not int or type(kind) is not str or not _is_hex64(prev) or not _is_hex64(h):
        problems.append(Problem(index, "missing_fields", f"record {index} has a field of the wrong type or shape", line_no))
        return None
    return Record(seq, prev, kind, obj["payload"], h)


def _check_obj(obj: Any, index: int, line_no: int | None, problems: list[Problem]) -> tuple[Record | None, bytes | None]:
    """Structure and hashed body of one parsed record."""
    rec = _shape(obj, index, line_no, problems)
    if rec is None:
        return None, None
    try:
        body = canonical({"kind": rec.kind, "payload": rec.payload, "prev": rec.prev, "seq": rec.seq}, exact=False)
    except NotCanonicalizable as exc:
        problems.append(Problem(index, "unserialisable_payload", f"record {index}: {exc}", line_no))
        return None, None
    return rec, body


def _check_line(line: bytes, index: int, line_no: int, problems: list[Problem], fast: bool = True) -> Record | None:
    """Check one line (without its ``\n``); ``fast=False`` takes the reference path alone."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        problems.append(Problem(index, "bad_json", f"line {line_no} is not JSON: {exc}", line_no))
        return None
    if fast and type(obj) is dict and len(obj) == 5 and type(obj.get("hash")) is str and len(obj["hash"]) == 64:
        shaped = _shape(obj, index, line_no, problems)
        if shaped is None:
            return None
        if is_canonical(obj, line):
            # The line is canonical, so the bytes after its hash member are the hashed body.
            if hashlib.sha256(b"{" + line[75:]).hexdigest() != shaped.hash:
                problems.append(Problem(index, "hash_mismatch", f"record {index}: the stored hash does not match its content", line_no))
            return shaped
    # The reference path: rebuild the hashed body by RFC 8785 and compare bytes.
    rec, body = _check_obj(obj, index, line_no, problems)
    if rec is None or body is None:
        return None
    digest = hashlib.sha256(body).hexdigest()
    if digest != rec.hash:
        problems.append(Problem(index, "hash_mismatch", f"record {index}: the stored hash does not match its content", line_no))
    elif not (line[:9] == b'{"hash":"' and line[9:73] == rec.hash.encode() and line[73:75] == b'",' and line[75:] == body[1:]):
        problems.append(Problem(index, "non_canonical", f"record {index}: valid JSON, but not the canonical line", line_no))
    return rec


class _Chain:
    """Carries the chain from one record to the next."""

    def __init__(self, report: VerifyReport):
        self.report = report
        self.expect_seq = 0
        self.prev: str | None = GENESIS
        self.clean = True

    def link(self, rec: Record | None, index: int, line_no: int | None, had_problem: bool, nbytes: int) -> None:
        r = self.report
        if rec is not None:
            if rec.seq != self.expect_seq:
                r.problems.append(Problem(index, "seq_gap", f"record {index} has seq {rec.seq}, expected {self.expect_seq}", line_no))
                had_problem = True
            if self.prev is not None and rec.prev != self.prev:
                r.problems.append(Problem(index, "prev_mismatch", f"record {index}: prev does not match the hash of record {index - 1}", line_no))
                had_problem = True
            self.expect_seq = rec.seq + 1
            self.prev = rec.hash
            r.last_hash = rec.hash
        else:
            self.expect_seq += 1
            self.prev = None
        if had_problem:
            self.clean = False
        if self.clean:
            r.valid_prefix = index + 1
            r.valid_prefix_bytes += nbytes


def verify_records(records: Iterable[Any]) -> VerifyReport:
    """Check parsed records (not lines): every problem with its index and kind.

    ``non_canonical`` needs the original bytes: use ``verify_lines`` for that.
    """
    report = VerifyReport()
    chain = _Chain(report)
    for index, obj in enumerate(records):
        before = len(report.problems)
        rec, body = _check_obj(obj, index, None, report.problems)
        if rec is not None and body is not None and hashlib.sha256(body).hexdigest() != rec.hash:
            report.problems.append(Problem(index, "hash_mismatch", f"record {index}: the stored hash does not match its content"))
        chain.link(rec, index, None, len(report.problems) > before, 0)
        report.count = index + 1
    return report


def verify_lines(lines: Iterable[bytes], *, fast: bool = True) -> VerifyReport:
    """Check lines as read from a file, each with its ``\\n`` where it had one.

    A record that is canonical and chained takes the fast path
    (``line.fast_hash``); anything else goes through ``_check_line``, which finds and names
    every fault. Both reach the same verdict: the fast path only ever accepts
    (``fast=False`` turns it off, here and in ``_check_line``: the reference
    path alone; property tests hold the two equal).
    """
    report = VerifyReport()
    chain = _Chain(report)
    problems = report.problems
    index = -1
    for index, raw in enumerate(lines):  # noqa: B007
        if fast and chain.prev is not None:
            h = fast_hash(raw, chain.expect_seq, chain.prev)
            if h is not None:
                chain.expect_seq += 1
                chain.prev = report.last_hash = h
                if chain.clean:
                    report.valid_prefix = index + 1
                    report.valid_prefix_bytes += len(raw)
                continue
        line_no = index + 1
        before = len(problems)
        if not raw.endswith(b"\n"):
            problems.append(Problem(index, "torn_tail", f"line {line_no} does not end in a newline: a torn write", line_no))
            line = raw
        else:
            line = raw[:-1]
        rec = _check_line(line, index, line_no, problems, fast)
        chain.link(rec, index, line_no, len(problems) > before, len(raw))
    report.count = index + 1
    return report


MAX_LINE_BYTES = 64 << 20
"""The longest line a reader takes in (64 MiB): past it a file is not read on, so memory stays bounded."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a file for reading only if it is a regular file.

    A FIFO would block the open, ``/dev/zero`` (or a link to it) never ends:
    both are refused at once with an ``OSError`` whose ``strerror`` says what
    the file is, checked before the open and again on the descriptor.
    """
    p = os.fspath(path)

    def refuse(mode: int) -> OSError:
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        return OSError(errno.EINVAL, f"not a regular file ({kind})", p)

    st = os.stat(p)
    if not stat.S_ISREG(st.st_mode):
        raise refuse(st.st_mode)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the two looks
            raise refuse(st.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


_CHUNK = 1 << 16
"""``bounded_lines`` reads this much at a time and splits it in C (io.BytesIO): a readline call a line
costs more, and a larger read (1 MiB) leaves the cache before its lines are checked."""


def bounded_lines(f: BinaryIO, too_long: list[int], max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of ``f`` (each with its ``\\n``), stopping before a line longer than ``max_bytes``.

    When it stops there, the 1-based number of that line is appended to
    ``too_long``; memory holds at most ``max_bytes`` of a line not yet ended,
    plus a read of ``_CHUNK`` bytes (and, while such a line is joined, a copy).
    The lines and the stop are those of ``f.readline(max_bytes + 1)`` called
    until a line is past the limit.
    """
    n = 0
    read = f.read
    parts: list[bytes] = []  # the line being read, in pieces, no newline yet: size bytes in all
    size = 0
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if cut:
            if parts:
                parts.append(chunk[:cut])
                head = b"".join(parts)
                parts = []
                size = 0
            else:
                head = chunk[:cut]
            for line in io.BytesIO(head):
                n += 1
                if len(line) > max_bytes + 1:
                    too_long.append(n)
                    return
                yield line
            chunk = chunk[cut:]
        if chunk:
            parts.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                too_long.append(n + 1)
                return
    if parts:
        yield b"".join(parts)


def too_long_problem(line_no: int, max_bytes: int = MAX_LINE_BYTES) -> Problem:
    """The problem a verifier reports when ``bounded_lines`` stopped at ``line_no``."""
    return Problem(
        line_no - 1, "line_too_long",
        f"line {line_no} is longer than {max_bytes} bytes; the file is not read past it", line_no,
    )


def verify_file(path: str | os.PathLike[str]) -> VerifyReport:
    """Verify a transcript file. Never raises: an unreadable file is a problem too.

    Memory stays bounded whatever the file holds: a file that is not regular
    is refused before it is read, and no line is read past ``MAX_LINE_BYTES``.
    """
    p = os.fspath(path)
    too_long: list[int] = []
    try:
        with open_regular(p) as f:
            report = verify_lines(bounded_lines(f, too_long))
    except (OSError, MemoryError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        report = VerifyReport()
        report.problems.append(Problem(-1, "unreadable", f"{p}: {msg}"))
        return report
    if too_long:
        report.problems.append(too_long_problem(too_long[0]))
    return report


def check_payloads(lines: Iterable[bytes]) -> tuple[Problem, int] | None:
    """The first record among ``lines`` (verified lines, from record 0) whose payload is not the
    shape its kind must have (``record_shapes``), as a ``bad_payload`` problem, with the byte
    length of the lines before it; None when every payload is one readers can use."""
    from .record_shapes import payload_problem

    done = 0
    for index, raw in enumerate(lines):
        obj = orjson.loads(raw)
        kind = obj["kind"]
        bad = payload_problem(kind, obj["payload"])
        if bad is not None:
            msg = f"record {index} (line {index + 1}, {kind}): {bad}"
            return Problem(index, "bad_payload", msg, index + 1), done
        done += len(raw)
    return None


def verify_for_reading(path: str | os.PathLike[str]) -> VerifyReport:
    """``verify_file``, then each verified record's payload checked against its kind's shape:
    what every reader of a session runs before it believes a record.

    The first record whose payload is not its kind's shape is a ``bad_payload`` problem (its
    index, line and what is wrong), and the valid prefix ends before it: a chain proves who
    wrote nothing, so a forged record that chains is refused here rather than read. Memory stays
    bounded as in ``verify_file``.
    """
    report = verify_file(path)
    if not report.valid_prefix:
        return report
    try:
        with open_regular(path) as f:
            found = check_payloads(bounded_lines(cast(BinaryIO, _Prefix(f, report.valid_prefix_bytes)), []))
    except OSError as exc:
        report.problems.insert(0, Problem(-1, "unreadable", f"{os.fspath(path)}: {exc.strerror or exc}"))
        return report
    if found is not None:
        problem, done = found
        report.problems.insert(0, problem)
        report.valid_prefix, report.valid_prefix_bytes = problem.index, done
    return report


class _Prefix:
    """A file read no further than ``end`` bytes."""

    def __init__(self, f: BinaryIO, end: int):
        self.f = f
        self.left = end

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        data = self.f.read(self.left if n < 0 else min(n, self.left))
        self.left -= len(data)
        return data


def read_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The records of a file that verifies and whose payloads have their kinds' shapes.

    Raises:
        TranscriptError: the file is unreadable, fails verification, or holds a payload of the
            wrong shape (``bad_payload``, the record and its line named).
    """
    report = verify_for_reading(path)
    if not report.ok:
        first = report.problems[0]
        if first.kind == "bad_payload":
            raise TranscriptError(f"{os.fspath(path)}: {first.message}")
        raise TranscriptError(f"{os.fspath(path)}: fails verification at record {first.index}: {first.kind}: {first.message}")
    too_long: list[int] = []
    try:
        f = open_regular(path)
    except OSError as exc:
        raise TranscriptError(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
    with f:
        for line in bounded_lines(f, too_long):
            obj = orjson.loads(line)
            yield Record(obj["seq"], obj["prev"], obj["kind"], obj["payload"], obj["hash"])
    if too_long:
        raise TranscriptError(f"{os.fspath(path)}: {too_long_problem(too_long[0]).message}")
