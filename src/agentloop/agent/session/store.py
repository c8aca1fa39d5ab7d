"""Sessions: one hash-chained transcript per conversation, kept per project.

Rules:

1. A session lives at ``$AGENTLOOP_HOME/projects/<project_hash(cwd)>/sessions/
   <id>.jsonl``: the same directory through any symlink of the working
   directory. Ids are time-sortable (``20261129-113000-1a2b3c``, UTC), so the
   names sort in the order the sessions were started.
2. The file is one chain (format v1) holding every run of the conversation one
   after another, plus the session's own records (``session_start``,
   ``session_cost``, ``session_end``). Each record is written as it happens.
3. One process at a time: a session is opened under an exclusive ``flock`` on
   ``<id>.lock``. A second process is refused with a ``SessionBusy`` naming
   the holder; it never writes a record.
4. Resuming reads the file from its last ``run_start`` that records every
   message its run started from (format 1): the conversation is those
   messages, plus the turns, tool results and later ``run_start`` tails after
   it (a format 2 ``run_start`` continues the conversation before it instead
   of repeating it, see ``agentloop.conversation``). A session that was
   compacted, cleared or resumed starts such a record again, so resume reads
   back no further than that.
6. Records are checked before they are trusted: resuming (and rewinding)
   verifies the whole chain first, as ``agentloop verify`` does (its fast
   path: bounded memory, one streaming pass). A file that fails is refused
   with the first bad record named (``SessionDamaged``) and nothing is
   appended to it. Every record a reader reads has its payload checked against
   the shape of its kind (``record_shapes``): a forged record that still
   chains is refused the same way, the file's first one named
   (``bad_payload``), never folded into the conversation or the totals.
   Rewind, replay and the listing read every record; resume reads the tail
   (rule 4) and checks that, so its cost stays that of the chain's check. The one exception is what a crash leaves: damage after the
   last good record that holds no complete line (a torn write, zeros a file
   system left). That tail is cut first (``audit.repair``, the bytes kept
   beside the file) and the cut is recorded. ``fork_damaged`` is what
   ``--force`` does with a damaged session: a new session that starts from
   the records before the first bad one; the damaged file is left as it is.
5. Records are written with SIGINT and SIGTERM held back (in the main thread),
   so Ctrl+C can never tear a record or split a line from its bookkeeping.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import orjson

from ... import record_shapes as shapes
from ...audit.repair import crash_tail, repair_file
from ...config.private import private_dirs
from ...config.settings import agentloop_home, project_hash
from ...conversation import Continues, Conversation, close_dangling_calls
from ...events import Message, ToolResult
from ...transcript import (
    GENESIS,
    MAX_LINE_BYTES,
    Record,
    TranscriptError,
    TranscriptWriter,
    VerifyReport,
    bounded_lines,
    open_regular,
    verify_file,
    verify_for_reading,
)

__all__ = [
    "Session",
    "SessionBusy",
    "SessionDamaged",
    "SessionError",
    "SessionStats",
    "SessionSummary",
    "check_session",
    "fork_damaged",
    "last_permission_mode",
    "list_sessions",
    "new_session_id",
    "verified_records",
    "sessions_dir",
]

Durability = Literal["flush", "fsync"]

# Canonical lines start '{"hash":"<64 hex>","kind":"' (hash sorts first): the
# kind of a line can be read without parsing it.
_KIND_AT = len(b'{"hash":"') + 64 + len(b'",')
_KIND_PREFIX = b'"kind":"'


class SessionError(Exception):
    """A session cannot be opened or written: one line for the user."""


class SessionBusy(SessionError):
    """Another process holds the session."""


class SessionDamaged(SessionError):
    """The session's file fails verification (rule 6): nothing was appended to it."""

    def __init__(self, message: str, sid: str, path: str, report: VerifyReport):
        super().__init__(message)
        self.sid = sid
        self.path = path
        self.report = report

    @property
    def forged(self) -> bool:
        """The chain holds but a record's payload is not its kind's shape (bad input: exit 2)."""
        return forged(self.report)


def forged(report: VerifyReport) -> bool:
    """True when the first problem of ``report`` is a payload of the wrong shape, not a broken chain."""
    return bool(report.problems) and report.problems[0].kind == "bad_payload"


def sessions_dir(cwd: str, home: str | None = None) -> str:
    """``<home>/projects/<16 hex of sha256(realpath(cwd))>/sessions``."""
    return os.path.join(home or agentloop_home(), "projects", project_hash(cwd), "sessions")


def new_session_id(now: datetime | None = None) -> str:
    """A time-sortable id: UTC second, then 6 random hex digits."""
    t = now or datetime.now(timezone.utc)
    return f"{t:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _kind(line: bytes) -> bytes:
    if line[_KIND_AT : _KIND_AT + len(_KIND_PREFIX)] != _KIND_PREFIX:
        return b""
    start = _KIND_AT + len(_KIND_PREFIX)
    end = line.find(b'"', start)
    return line[start:end] if end > 0 else b""


def _reverse_lines(path: str, chunk: int = 8192, end: int | None = None) -> Iterator[bytes]:
    """The complete lines of a file (up to byte ``end``), last first, read from there in growing chunks.

    Callers read only what verified: no line is longer than ``MAX_LINE_BYTES``.
    """
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        pos = f.tell() if end is None else min(end, f.tell())
        rest = b""
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            f.seek(pos)
            buf = f.read(step) + rest
            parts = buf.split(b"\n")
            rest = parts[0]
            for line in reversed(parts[1:]):
                if line:
                    yield line
            chunk = min(chunk * 2, 1 << 20)
        if rest:
            yield rest


def last_permission_mode(path: str, end: int | None = None) -> str | None:
    """The permission mode the session was last in, up to byte ``end``: what its latest
    ``mode_change`` or ``session_start`` record says (None when neither says one). Read from
    the end; call it on a verified file."""
    for line in _reverse_lines(path, end=end):
        if _kind(line) in (b"mode_change", b"session_start"):
            mode = orjson.loads(line)["payload"].get("permission_mode")
            return mode if isinstance(mode, str) else None
    return None


def check_session(path: str, *, payloads: bool = True) -> tuple[VerifyReport, bool]:
    """The whole file verified as ``agentloop verify`` does and (``payloads``) every payload
    checked (rule 6), and whether its only damage is a tail a crash left (no complete line after
    the last good record). Resume passes ``payloads=False``: it checks the records it reads."""
    report = verify_for_reading(path) if payloads else verify_file(path)
    if report.ok or any(p.kind == "unreadable" for p in report.problems):
        return report, False
    return report, crash_tail(path, report.valid_prefix_bytes)


def damage_line(sid: str, path: str, report: VerifyReport) -> str:
    """One line naming the first bad record of a damaged session and what the user can do."""
    first = report.problems[0]
    if first.kind == "unreadable":
        return f"session {sid}: cannot read {first.message}"
    if first.kind == "bad_payload":
        return (
            f"session {sid}: {path}: {first.message} (its chain verifies, but agentloop never writes such a record);"
            f" nothing was written to it (--force goes on in a new session from the {report.valid_prefix} records before it)"
        )
    where = f"record {first.index}" + (f" (line {first.line})" if first.line is not None else "")
    more = f" and {len(report.problems) - 1} more problem(s)" if len(report.problems) > 1 else ""
    return (
        f"session {sid} fails verification at {where}: {first.kind}: {first.message}{more}; nothing was written to it"
        f" ('agentloop verify {path}' lists every problem; --force goes on in a new session from the"
        f" {report.valid_prefix} records before it)"
    )


def _tail(path: str, end: int | None = None) -> tuple[list[bytes], list[bytes], bool, int]:
    """The lines resume reads (rule 4), oldest first: back from the end (or byte ``end``) to the last
    run_start that holds every message and the last ``session_cost``; with their kinds, whether
    such a run_start was found, and how many lines from the end it is."""
    segment: list[bytes] = []
    kinds: list[bytes] = []
    have_run = have_cost = False
    full_from_end = 0
    for line in _reverse_lines(path, end=end):
        k = _kind(line)
        segment.append(line)
        kinds.append(k)
        if k in (b"run_start", b"rewind", b"fork") and not have_run:
            p = orjson.loads(line)["payload"]
            # a format 1 run_start, or a rewind that holds the whole conversation: rule 4
            ok = isinstance(p, dict)
            have_run = ok and ("continues" not in p if k == b"run_start" else isinstance(p.get("messages"), list))
            full_from_end = len(segment) if have_run else 0
        have_cost = have_cost or k == b"session_cost"
        if have_run and have_cost:
            break
    segment.reverse()
    kinds.reverse()
    return segment, kinds, have_run, full_from_end


def _forged(lines: list[bytes]) -> bool:
    """Whether any of ``lines`` (verified records) has a payload that is not its kind's shape."""
    for line in lines:
        obj = orjson.loads(line)
        if shapes.payload_problem(obj["kind"], obj["payload"]) is not None:
            return True
    return False


class _Prefix:
    """A file read no further than ``end`` bytes."""

    def __init__(self, f: Any, end: int):
        self.f = f
        self.left = end

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        data: bytes = self.f.read(self.left if n < 0 else min(n, self.left))
        self.left -= len(data)
        return data


def verified_records(path: str, end: int) -> Iterator[Record]:
    """The records of ``path`` in its first ``end`` bytes (a prefix ``verify_file`` passed), streamed.

    Raises:
        SessionError: the file cannot be read.
    """
    too_long: list[int] = []
    try:
        f = open_regular(path)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with f:
        for line in bounded_lines(_Prefix(f, end), too_long, MAX_LINE_BYTES):  # type: ignore[arg-type]
            obj = orjson.loads(line)
            yield Record(obj["seq"], obj["prev"], obj["kind"], obj["payload"], obj["hash"])


def fork_damaged(cwd: str, damaged: SessionDamaged, home: str | None = None) -> tuple[str, str]:
    """``--force`` on a damaged session: a new session holding the conversation of the damaged
    one's records before its first bad record (a ``fork`` record), and the note to print.

    The damaged file is not written to; nothing at or after its first bad record is read.

    Raises:
        SessionError: the new session cannot be written.
    """
    report = damaged.report
    old = Session(damaged.sid, os.path.dirname(damaged.path), None, -1, created=False)
    fd = _lock(old.dir, damaged.sid)  # no writer may add to it while it is read
    try:
        if report.valid_prefix:
            old._load_tail(damaged.path, end=report.valid_prefix_bytes)
    finally:
        _unlock(fd)
    first = report.problems[0]
    skipped = f"record {first.index} on ({first.kind})"
    new = Session.create(cwd, home)
    try:
        new.append("fork", {
            "from_session": damaged.sid, "verified_records": report.valid_prefix, "skipped": skipped,
            "messages": old.messages,
        })
        new.append("session_cost", old.stats.to_json())
    finally:
        new.close()
    note = (
        f"--force: session {damaged.sid} fails verification at record {first.index} ({first.kind}); going on in the new"
        f" session {new.id} from its {report.valid_prefix} verified records; {skipped} is not read, and {damaged.sid}"
        " is left as it is"
    )
    return new.id, note


@dataclass
class SessionStats:
    """What a session has cost so far; written as ``session_cost`` after each turn."""

    spent_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    turns: int = 0
    """User prompts answered (runs)."""
    model_calls: int = 0
    tools: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per tool: ``{"ok": n, "failed": m}``."""
    last_input_tokens: int = 0
    """Input of the last model call: how full the context window is."""
    estimated_tokens: int = 0
    """Of the tokens above, how many are the loop's len//4 estimate (the provider reported no usage)."""

    def count_tool(self, name: str, ok: bool) -> None:
        t = self.tools.setdefault(name, {"ok": 0, "failed": 0})
        t["ok" if ok else "failed"] += 1

    def add_turn(self, usage: dict[str, Any], cost: int = 0) -> None:
        self.model_calls += 1
        self.input_tokens += int(usage.get("input_tokens", 0))
        self.output_tokens += int(usage.get("output_tokens", 0))
        self.cache_read_tokens += int(usage.get("cache_read_tokens", 0))
        self.cache_write_tokens += int(usage.get("cache_write_tokens", 0))
        self.last_input_tokens = int(usage.get("input_tokens", 0)) + int(usage.get("cache_read_tokens", 0)) + int(
            usage.get("cache_write_tokens", 0)
        )
        self.spent_micros += cost

    def to_json(self) -> dict[str, Any]:
        return {
            "spent_micros": self.spent_micros,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
            "turns": self.turns,
            "model_calls": self.model_calls,
            "tools": {k: dict(v) for k, v in sorted(self.tools.items())},
            "last_input_tokens": self.last_input_tokens,
            **({"estimated_tokens": self.estimated_tokens} if self.estimated_tokens else {}),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SessionStats:
        u = obj.get("usage", {})
        return cls(
            spent_micros=int(obj.get("spent_micros", 0)),
            input_tokens=int(u.get("input_tokens", 0)),
            output_tokens=int(u.get("output_tokens", 0)),
            cache_read_tokens=int(u.get("cache_read_tokens", 0)),
            cache_write_tokens=int(u.get("cache_write_tokens", 0)),
            turns=int(obj.get("turns", 0)),
            model_calls=int(obj.get("model_calls", 0)),
            tools={str(k): {"ok": int(v.get("ok", 0)), "failed": int(v.get("failed", 0))} for k, v in obj.get("tools", {}).items()},
            last_input_tokens=int(obj.get("last_input_tokens", 0)),
            estimated_tokens=int(obj.get("estimated_tokens", 0)),
        )


def _apply(stats: SessionStats, kind: str, payload: dict[str, Any]) -> None:
    """Fold one record the loop wrote into the session's totals."""
    if kind == "model_turn":
        stats.add_turn((payload.get("reply") or {}).get("usage") or {})
    elif kind == "budget":
        stats.spent_micros += int(payload.get("cost_micros", 0))
    elif kind == "side_cost":  # a cost beside the model turn, charged by the loop (compaction, loop check, a child)
        stats.spent_micros += int(payload.get("cost_micros", 0))
    elif kind == "compaction":  # a manual /compact's spend (in no run), or a side call of a file before side_cost records
        stats.spent_micros += _side_cost(payload)
    elif kind == "tool_result":
        stats.count_tool(str(payload.get("name", "?")), bool(payload.get("ok")))
    elif kind == "run_start":
        stats.turns += 1


def _side_cost(payload: Any) -> int:
    """The cost a side call's own record holds, unless a ``side_cost`` record (``charged_as``) holds it."""
    call = payload.get("call") if isinstance(payload, dict) else None
    if not isinstance(call, dict) or "charged_as" in call:
        return 0
    return int(call.get("cost_micros", 0))


def _assistant_message(reply: dict[str, Any]) -> Message:
    msg: Message = {"role": "assistant", "content": reply.get("text", "")}
    if reply.get("tool_calls"):
        msg["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": c.get("arguments")} for c in reply["tool_calls"]]
    if reply.get("reasoning"):  # thinking blocks go back as recorded (their signatures are checked)
        msg["reasoning"] = [dict(b) for b in reply["reasoning"]]
    return msg


def rebuild(lines: list[bytes]) -> list[Message]:
    """The conversation at the end of ``lines``, which start at a ``run_start``:
    its messages, then each turn and tool result as the loop appended them,
    and each masking or compaction made during the run, made again."""
    from ...loop import tool_message

    messages: list[Message] = []
    for line in lines:
        obj = orjson.loads(line)
        kind, payload = obj["kind"], obj["payload"]
        if kind == "run_start":
            tail = list(payload.get("messages", []))
            if "continues" in payload:  # format 2: the conversation so far, then what this run added
                close_dangling_calls(messages)
                messages = messages + tail
            else:
                messages = tail
        elif kind == "model_turn":
            messages.append(_assistant_message(payload.get("reply") or {}))
        elif kind == "tool_result":
            messages.append(tool_message(ToolResult.from_json(payload)))
        elif kind in ("rewind", "fork") and isinstance(payload.get("messages"), list):
            messages = list(payload["messages"])  # the conversation was rewound: it restarts from here
        elif kind in ("context", "compaction"):
            # Masking and compaction inside a run rewrote the messages in place;
            # their records say how, so the same rewrite is made here.
            from ..context.compaction import reapply

            reapply(messages, kind, payload)
    return messages


class Session:
    """An open session: the sink a run writes to, under its lock.

    Use ``Session.create`` or ``Session.resume``; close it (or use ``with``).
    """

    def __init__(
        self,
        sid: str,
        directory: str,
        writer: TranscriptWriter | None,
        lock_fd: int,
        *,
        created: bool,
        durability: Durability = "flush",
    ):
        self.id = sid
        self.dir = directory
        self.path = os.path.join(directory, f"{sid}.jsonl")
        self.lock_path = os.path.join(directory, f"{sid}.lock")
        self._writer = writer
        self._durability = durability
        self._lock_fd = lock_fd
        self.created = created
        """True for a new session (its file appears with its first run)."""
        self.messages: list[Message] = []
        """The conversation so far (system message first), as the next run starts from it."""
        self.conversation = Conversation()
        """The conversation as the records rebuild it: what the next ``run_start`` may refer to."""
        self.stats = SessionStats()
        self.runs_written = 0
        self.closed = False
        self._held: list[tuple[str, Any]] = []
        self.listeners: list[Any] = []
        """Called with each line's bytes as it is written (see TranscriptWriter.listeners)."""
        self.repaired: Any = writer.repaired if writer is not None else None
        """The ``repair.RepairResult`` when resuming cut a torn tail first (a crash), else None."""

    # --- opening ---------------------------------------------------------

    @classmethod
    def create(cls, cwd: str, home: str | None = None, *, durability: Durability = "flush", sid: str | None = None) -> Session:
        """A new, empty session of the project at ``cwd``.

        Raises:
            SessionError: the directory cannot be made or the file exists.
        """
        d = sessions_dir(cwd, home)
        try:
            private_dirs(d)  # 0700: a session holds every prompt and every tool's output
        except OSError as exc:
            raise SessionError(f"{d}: cannot create the sessions directory: {exc.strerror or exc}") from None
        sid = sid or new_session_id()
        fd = _lock(d, sid)
        if os.path.exists(os.path.join(d, f"{sid}.jsonl")):
            _unlock(fd)
            raise SessionError(f"session {sid} already exists")
        return cls(sid, d, None, fd, created=True, durability=durability)

    @classmethod
    def resume(cls, cwd: str, sid: str, home: str | None = None, *, durability: Durability = "flush") -> Session:
        """Open an existing session to append to it; ``sid`` may be a unique prefix.

        The whole file is verified first (rule 6); a tail a crash left is cut.

        Raises:
            SessionDamaged: the file fails verification (the first bad record named); nothing was written.
            SessionError: no such session, an ambiguous prefix, or an unreadable file.
            SessionBusy: another process holds it.
        """
        d = sessions_dir(cwd, home)
        sid = resolve_id(d, sid)
        fd = _lock(d, sid)
        path = os.path.join(d, f"{sid}.jsonl")
        try:
            report, torn = check_session(path, payloads=False)  # the chain whole; payloads where read
            if not report.ok and not torn:
                report = verify_for_reading(path)  # the prefix --force goes on from holds no forged record either
                raise SessionDamaged(damage_line(sid, path, report), sid, path, report)
            repaired = repair_file(path) if torn else None
            tail = _tail(path)
            if _forged(tail[0]):  # named as every reader names it: the file's first bad record
                report = verify_for_reading(path)
                raise SessionDamaged(damage_line(sid, path, report), sid, path, report)
            writer = TranscriptWriter(path, durability=durability, resume=True, repair=repair_file)
            s = cls(sid, d, writer, fd, created=False, durability=durability)
            s.repaired = repaired or writer.repaired
            s.listeners = writer.listeners
            s._fold(*tail, feed=True)
            if s.repaired is not None:
                s.note("repair", {"kept_records": s.repaired.kept_records, "removed_bytes": s.repaired.removed_bytes, "side_file": os.path.basename(s.repaired.side_file or "")})
        except SessionError:
            _unlock(fd)
            raise
        except TranscriptError as exc:
            _unlock(fd)
            raise SessionError(str(exc)) from None
        except BaseException:
            _unlock(fd)
            raise
        return s

    def _load_tail(self, path: str | None = None, end: int | None = None) -> None:
        """Messages and totals from the end of the file, or of ``path`` up to byte ``end`` (rule 4)."""
        path = path or self.path
        self._fold(*_tail(path, end), feed=path == self.path)

    def _fold(self, segment: list[bytes], kinds: list[bytes], have_run: bool, full_from_end: int, *, feed: bool) -> None:
        """Messages and totals from ``segment`` (verified lines, oldest first)."""
        # Messages from the last whole run_start on; totals from the last session_cost.
        start = len(segment) - full_from_end if have_run else None
        cost_at = max((i for i, k in enumerate(kinds) if k == b"session_cost"), default=None)
        msgs: list[Message] = rebuild(segment[start:]) if start is not None else []
        stats = SessionStats()
        folded_from = 0
        if cost_at is not None:
            stats = SessionStats.from_json(orjson.loads(segment[cost_at])["payload"])
            folded_from = cost_at + 1
        for raw, k in zip(segment[folded_from:], kinds[folded_from:]):
            kind = k.decode()
            if kind in ("model_turn", "budget", "tool_result", "run_start", "side_cost"):
                _apply(stats, kind, orjson.loads(raw)["payload"])
        close_dangling_calls(msgs)
        if start is not None and feed:
            for raw in segment[start:]:
                obj = orjson.loads(raw)
                self.conversation.feed(obj["kind"], obj["payload"], obj["seq"])
        self.messages = msgs
        self.stats = stats
        self.runs_written = stats.turns

    # --- the sink --------------------------------------------------------

    def note(self, kind: str, payload: Any) -> None:
        """Record a fact about the session (``session_start``, a model change):
        at once when the file exists, else held until the first run writes it,
        so a session in which nothing was asked leaves no file behind."""
        if self._writer is None:
            if self.closed:
                raise SessionError(f"session {self.id} is closed")
            self._held.append((kind, payload))
            return
        self.append(kind, payload)

    def append(self, kind: str, payload: Any) -> Record:
        """Write one record now (after any held ones), with SIGINT/SIGTERM held back (rule 5).

        Raises:
            SessionError: the session is closed, or its file cannot be created.
            TranscriptError: the write failed (the writer is then broken).
        """
        if self.closed:
            raise SessionError(f"session {self.id} is closed")
        with _signals_held():
            w = self._open_writer()
            for k, p in self._held:
                held = w.append(k, p)
                self.conversation.feed(k, p, held.seq)
            self._held.clear()
            rec = w.append(kind, payload)
            self.conversation.feed(kind, payload, rec.seq)
        if kind == "run_start":
            self.runs_written += 1
        return rec

    def _open_writer(self) -> TranscriptWriter:
        if self._writer is None:
            try:
                self._writer = TranscriptWriter(self.path, durability=self._durability)
            except TranscriptError as exc:
                raise SessionError(str(exc)) from None
            self._writer.listeners.extend(self.listeners)
            self.listeners = self._writer.listeners
        return self._writer

    @property
    def written(self) -> bool:
        """The session's file exists (something was recorded)."""
        return self._writer is not None

    @property
    def count(self) -> int:
        return self._writer.count if self._writer is not None else 0

    @property
    def spill_dir(self) -> str:
        """Where this session's tools keep outputs too long to return whole (Read may read them there)."""
        return os.path.join(self.dir, self.id, "tool-results")

    @property
    def last_hash(self) -> str:
        return self._writer.last_hash if self._writer is not None else GENESIS

    def continuation(self) -> Continues | None:
        """What the next ``run_start`` may refer to instead of repeating it (rule 4), if anything."""
        if self._writer is None or self._held:
            return None
        return self.conversation.continues(self.count - 1, self.last_hash)

    def close(self) -> None:
        """Release the lock. A new session that never ran a turn leaves nothing behind."""
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.close()
        elif self.created:
            try:
                os.unlink(self.lock_path)  # no file, so no one can be waiting for this id
            except OSError:
                pass
        _unlock(self._lock_fd)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- locking -----------------------------------------------------------------


def _lock(directory: str, sid: str) -> int:
    import fcntl

    path = os.path.join(directory, f"{sid}.lock")
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise SessionError(f"{path}: cannot open the session lock: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = ""
            try:
                holder = os.pread(fd, 21, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise SessionBusy(f"session {sid} is in use by another agentloop process{who}; close it there or start a new session") from None
            raise SessionError(f"{path}: cannot lock: {exc.strerror or exc}") from None
        # The file may have been replaced between open and lock: lock the one on disk.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        # Fixed width, so no truncation (a slow metadata write) is needed.
        os.pwrite(fd, f"{os.getpid():<20}\n".encode(), 0)
        return fd
    raise SessionError(f"{path}: the lock file keeps changing; is another process removing it?")


def _unlock(fd: int) -> None:
    try:
        os.close(fd)  # closing the descriptor releases the flock
    except OSError:
        pass


class _signals_held:
    """Hold SIGINT and SIGTERM back for the duration (main thread only)."""

    _SIGS = {signal.SIGINT, signal.SIGTERM}

    def __enter__(self) -> None:
        self.active = threading.current_thread() is threading.main_thread()
        if self.active:
            self.old = signal.pthread_sigmask(signal.SIG_BLOCK, self._SIGS)

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


# --- finding and listing -----------------------------------------------------


def resolve_id(directory: str, sid: str) -> str:
    """The full id of ``sid`` or of the one session whose id starts with it.

    Raises:
        SessionError: none, or more than one, matches.
    """
    if not sid or "/" in sid or sid.startswith("."):
        raise SessionError(f"not a session id: {sid!r}")
    if os.path.exists(os.path.join(directory, f"{sid}.jsonl")):
        return sid
    try:
        names = [n[:-6] for n in os.listdir(directory) if n.endswith(".jsonl") and n.startswith(sid)]
    except FileNotFoundError:
        names = []
    if not names:
        raise SessionError(f"no session {sid!r} for this directory (see 'agentloop sessions')")
    if len(names) > 1:
        raise SessionError(f"session id {sid!r} is ambiguous: {', '.join(sorted(names)[:5])}")
    return names[0]


def latest_id(cwd: str, home: str | None = None) -> str | None:
    """The session of this project used most recently, or None."""
    d = sessions_dir(cwd, home)
    try:
        entries = [e for e in os.scandir(d) if e.name.endswith(".jsonl")]
    except FileNotFoundError:
        return None
    if not entries:
        return None
    best = max(entries, key=lambda e: (e.stat().st_mtime_ns, e.name))
    return best.name[:-6]


@dataclass(frozen=True)
class SessionSummary:
    id: str
    path: str
    started: str
    """ISO time the session started (from its first record, else its id)."""
    first_prompt: str
    turns: int
    spent_micros: int
    records: int
    verified: bool
    problem: str | None = None
    updated_ns: int = 0
    uncapped: int = 0
    """Runs (prompts) that had no spend cap: an unlimited session is marked in listings."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "started": self.started,
            "first_prompt": self.first_prompt,
            "turns": self.turns,
            "spent_micros": self.spent_micros,
            "records": self.records,
            "verified": self.verified,
            "problem": self.problem,
            "uncapped": self.uncapped,
        }


def _started_from_id(sid: str) -> str:
    try:
        t = datetime.strptime(sid[:15], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return ""
    return t.isoformat().replace("+00:00", "Z")


def _user_text(messages: list[Any]) -> str:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def summarize(path: str) -> SessionSummary:
    """What a listing shows of a session: verified as ``agentloop verify`` verifies, then its
    verified records read once more, streamed (bounded memory, whatever the file holds)."""
    sid = os.path.basename(path)[:-6]
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        mtime = 0
    report = verify_for_reading(path)
    facts: dict[str, Any] = {"started": "", "first_prompt": "", "turns": 0, "spent": 0, "uncapped": 0}
    try:
        for rec in verified_records(path, report.valid_prefix_bytes):
            _summary_fact(facts, rec)
    except (SessionError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        pass
    problem = None if report.ok else f"{report.problems[0].kind}: {report.problems[0].message}"
    return SessionSummary(
        id=sid, path=path, started=str(facts["started"]) or _started_from_id(sid), first_prompt=str(facts["first_prompt"]),
        turns=int(facts["turns"]), spent_micros=int(facts["spent"]), records=report.count, verified=report.ok,
        problem=problem, updated_ns=mtime, uncapped=int(facts["uncapped"]),
    )


def _summary_fact(facts: dict[str, Any], rec: Record) -> None:
    """Fold one record into what a listing shows."""
    k, payload = rec.kind, rec.payload
    if not isinstance(payload, dict):
        return
    if k == "run_start":
        facts["turns"] += 1
        if facts["turns"] == 1:
            facts["first_prompt"] = _user_text(payload.get("messages", []))
        b = payload.get("config", {}).get("budget", {})
        if b.get("unlimited") or b.get("max_usd_micros") is None:
            facts["uncapped"] += 1
    elif k in ("budget", "side_cost"):
        facts["spent"] += int(payload.get("cost_micros", 0))
    elif k == "compaction":
        facts["spent"] += _side_cost(payload)
    elif k == "session_cost":  # the session's own total (side calls, sub-agents); later records add to it
        facts["spent"] = int(payload.get("spent_micros", 0))
    elif k == "session_start" and not facts["started"]:
        facts["started"] = str(payload.get("started_at", ""))


_CACHED = shapes.obj({
    "id": shapes.STRING, "path": shapes.STRING, "started": shapes.STRING, "first_prompt": shapes.STRING,
    "turns": shapes.COUNT, "spent_micros": shapes.MONEY, "records": shapes.COUNT, "verified": shapes.BOOL,
    "problem": shapes.nullable(shapes.STRING), "uncapped": shapes.COUNT,
})
"""A summary ``index.json`` may hold: anything else (a forged total) is read again from the session."""


def list_sessions(cwd: str, home: str | None = None) -> list[SessionSummary]:
    """Every session of the project at ``cwd``, newest first.

    A summary is cached in ``index.json`` beside the sessions, keyed by each
    file's size and modification time, so listing does not re-read files that
    did not change.
    """
    d = sessions_dir(cwd, home)
    try:
        entries = [e for e in os.scandir(d) if e.name.endswith(".jsonl")]
    except FileNotFoundError:
        return []
    index_path = os.path.join(d, "index.json")
    try:
        with open(index_path, "rb") as f:
            cache = orjson.loads(f.read())
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, orjson.JSONDecodeError):
        cache = {}
    out: list[SessionSummary] = []
    fresh: dict[str, Any] = {}
    changed = False
    for e in entries:
        st = e.stat()
        key = [st.st_size, st.st_mtime_ns, st.st_ino]
        sid = e.name[:-6]
        hit = cache.get(sid)
        if isinstance(hit, dict) and hit.get("key") == key and _CACHED(hit.get("summary"), "summary") is None:
            try:
                s = SessionSummary(**{k: v for k, v in hit["summary"].items()}, updated_ns=st.st_mtime_ns)
            except TypeError:
                s = summarize(e.path)
                changed = True
        else:
            s = summarize(e.path)
            changed = True
        fresh[sid] = {"key": key, "summary": s.to_json()}
        out.append(s)
    if changed or len(fresh) != len(cache):
        tmp = f"{index_path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb", opener=lambda q, flags: os.open(q, flags, 0o600)) as f:
                f.write(orjson.dumps(fresh))
            os.replace(tmp, index_path)
        except OSError:
            pass
    out.sort(key=lambda s: (s.updated_ns, s.id), reverse=True)
    return out
