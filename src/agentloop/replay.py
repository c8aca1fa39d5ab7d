"""Redo a recorded run with the same loop: offline, spending nothing.

Rules:

1. Replay is not a second code path. Each recorded run is driven through
   ``run()`` with the config of its ``run_start``, a ``ReplayModel`` that
   answers from its ``model_turn`` records, and an executor chosen by the mode:

   ``full``        results come from the ``tool_result`` records; no tool runs.
   ``live-tools``  the tools really run (calls whose arguments were redacted or
                   truncated answer from the record: their input is unknown).
   ``dry-run``     tools are skipped; the report counts the steps that followed
                   tool output.

2. The new transcript is compared with the old one record by record. ``equal``
   means byte-identical. Every differing record is listed, the first one
   named, with the payload paths that differ.
3. A transcript that fails verification is refused (``ReplayError``), never
   replayed silently. In ``live-tools`` mode the file is verified before any
   tool runs. In ``full`` and ``dry-run`` modes (no effects) a byte-identical
   replay is itself the verification, since every line was re-derived and
   re-hashed; when anything differs, the original is verified in full before a
   result is returned.
4. A tool whose fingerprint differs from the recorded one gives a warning
   naming the tool and both fingerprints. MCP tools carry a stand-in
   fingerprint (``mcp:server@version``) and are checked the same way.
5. The raw provider response is passed through as recorded and never read.
6. Records of kinds the loop does not write (``session_start``, ``hook``,
   ``compaction``...) are copied through at their place, so a session file
   of several runs replays whole.
"""

from __future__ import annotations

import difflib
import gc
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import orjson

from .budget import IMAGE_TOKENS, Budget, Price
from .canonical import canonical
from .conversation import Continues, Conversation, reapply, tool_list
from .events import (
    ModelReply,
    ModelRequest,
    ReplayedInterrupt,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from .loop import LoopConfig, State, ToolsChanged
from .record_shapes import payload_problem
from .redact import DEFAULT_MAX_VALUE_BYTES, REDACTED, is_marker
from .run import RunResult, SideCosts, may_overlap, run, schedule
from .tools import Registry, Tool
from .transcript import (
    GENESIS,
    Record,
    TranscriptError,
    bounded_lines,
    make_line,
    new_record,
    open_regular,
    too_long_problem,
    verify_lines,
)

__all__ = [
    "Difference",
    "ReplayError",
    "ReplayModel",
    "ReplayResult",
    "StepNote",
    "ToolChange",
    "assert_replays",
    "config_from_record",
    "replay",
]

Mode = Literal["full", "live-tools", "dry-run"]
MODES: tuple[str, ...] = ("full", "live-tools", "dry-run")
LOOP_KINDS = frozenset(
    {
        "run_start", "model_turn", "budget", "tool_result", "model_error", "loop_detected", "continuation", "stop", "token_count",
        "overrun", "tools_changed", "side_cost",
    }
)
DRY_RUN_ERROR = "not run: a dry-run replay skips tools"


class ReplayError(TranscriptError):
    """The transcript cannot be replayed: unreadable, failing verification, or of an unknown format."""


class ReplayExhausted(Exception):
    """The replayed loop asked for more model turns than were recorded.

    (An ``Exception``, not an ``AssertionError``: this module is compiled, and
    mypyc subclasses only ``Exception`` among the built-in exceptions. Only the
    class name reaches the record.)"""


class ReplayCountError(Exception):
    """A recorded failed token count, raised again with its recorded text (``verbatim``)."""

    verbatim = True


@dataclass(frozen=True)
class Difference:
    """One record that differs between the recorded and the replayed transcript."""

    index: int
    kind: str | None
    """The recorded record's kind (None: the replay wrote more records)."""
    replay_kind: str | None
    """The replayed record's kind (None: the replay wrote fewer records)."""
    step: int | None
    changes: tuple[str, ...] = ()
    """``"$.path: recorded -> replayed"`` for each differing value (at most 20)."""

    def describe(self) -> str:
        where = f"record {self.index}"
        if self.kind is None:
            return f"{where}: the replay wrote an extra {self.replay_kind!r} record"
        if self.replay_kind is None:
            return f"{where} ({self.kind}{_at(self.step)}): missing from the replay"
        what = self.kind if self.kind == self.replay_kind else f"{self.kind} -> {self.replay_kind}"
        return f"{where} ({what}{_at(self.step)}): " + ("; ".join(self.changes) or "differs")


def _at(step: int | None) -> str:
    return "" if step is None else f", step {step}"


@dataclass(frozen=True)
class StepNote:
    """A step of a run (runs counted from 1) and what is to be said about it."""

    run: int
    step: int
    reason: str

    def __str__(self) -> str:
        return f"run {self.run} step {self.step}: {self.reason}"


@dataclass(frozen=True)
class ToolChange:
    name: str
    recorded: str
    current: str


@dataclass
class ReplayResult:
    mode: str
    equal: bool
    """The replayed transcript is byte-identical to the recorded one."""
    results: list[RunResult]
    """One per recorded run, in order."""
    first_difference: Difference | None = None
    differences: list[Difference] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unreproducible_steps: list[StepNote] = field(default_factory=list)
    """Steps whose recorded values are markers (redacted, truncated): passed on, not reproduced."""
    tool_dependent_steps: list[StepNote] = field(default_factory=list)
    """dry-run: the model turns that were given tool output (the turn before them ran tools)."""
    tool_changes: list[ToolChange] = field(default_factory=list)
    decisions_equal: bool = True
    """Same model turns in the same order, and every run stopped for the same reason at the same step."""
    skipped_calls: int = 0
    """Tool calls not run (dry-run)."""
    records: int = 0
    original_records: int = 0
    lines: list[bytes] = field(default_factory=list, repr=False)
    """The replayed transcript, one line each (with ``\\n``)."""

    @property
    def result(self) -> RunResult | None:
        """The last run's result."""
        return self.results[-1] if self.results else None

    def summary(self, name: str = "transcript") -> str:
        """A readable report: equal or not, the first difference, the warnings."""
        head = "EQUAL (byte-identical)" if self.equal else "DIFFERENT"
        out = [f"replay of {name} ({self.mode}): {head}"]
        stops = ", ".join(f"{r.stop_reason} after {r.steps} step{'s' if r.steps != 1 else ''}" for r in self.results)
        out.append(f"  {self.original_records} records recorded, {self.records} replayed; "
                   f"{len(self.results)} run{'s' if len(self.results) != 1 else ''}: {stops or 'none'}")
        if not self.equal:
            out.append(f"  decisions: {'the same model turns and stops' if self.decisions_equal else 'CHANGED'}")
        if self.first_difference is not None:
            out.append(f"  first difference: {self.first_difference.describe()}")
            rest = self.differences[1:]
            for d in rest[:20]:
                out.append(f"  also: {d.describe()}")
            if len(rest) > 20:
                out.append(f"  … and {len(rest) - 20} more differing records")
        if self.mode == "dry-run":
            out.append(f"  tools skipped: {self.skipped_calls} call(s); "
                       f"{len(self.tool_dependent_steps)} step(s) depended on tool output")
            for n in self.tool_dependent_steps[:20]:
                out.append(f"    {n}")
        if self.unreproducible_steps:
            out.append(f"  {len(self.unreproducible_steps)} step(s) could not be reproduced from the record:")
            for n in self.unreproducible_steps[:20]:
                out.append(f"    {n}")
        for w in self.warnings:
            out.append(f"  warning: {w}")
        if not self.warnings:
            out.append("  warnings: none")
        return "\n".join(out)

    def diff(self, original: Sequence[bytes] | None = None) -> str:
        """A unified diff of the first differing record's payload, for test failures."""
        d = self.first_difference
        if d is None or original is None:
            return ""
        a = _pretty(original[d.index]) if d.index < len(original) else []
        b = _pretty(self.lines[d.index]) if d.index < len(self.lines) else []
        return "\n".join(difflib.unified_diff(a, b, "recorded", "replayed", lineterm="", n=2))


def _pretty(line: bytes) -> list[str]:
    obj = orjson.loads(line)
    obj.pop("hash", None)
    obj.pop("prev", None)
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


# --- reading ------------------------------------------------------------------


REPLAY_MAX_BYTES = 1 << 30
"""Replay holds the whole record in memory: a larger file is refused, not read."""


def _load(transcript: str | os.PathLike[str] | bytes) -> tuple[str, list[bytes]]:
    if isinstance(transcript, (bytes, bytearray)):
        return "transcript", bytes(transcript).splitlines(keepends=True)
    path = os.fspath(transcript)
    too_long: list[int] = []
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > REPLAY_MAX_BYTES:
                raise ReplayError(
                    f"{path}: {size} bytes is more than replay reads into memory ({REPLAY_MAX_BYTES} bytes)"
                )
            lines = list(bounded_lines(f, too_long))
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if too_long:
        raise ReplayError(f"{path}: {too_long_problem(too_long[0]).message}; not replayed")
    return path, lines


def _refuse_if_invalid(name: str, lines: Sequence[bytes]) -> None:
    report = verify_lines(lines)
    if not report.ok:
        p = report.problems[0]
        raise ReplayError(f"{name}: fails verification at record {p.index}: {p.kind}: {p.message}; not replayed")


class RecordLike(Protocol):
    """What ``ReplayModel`` reads of a record: a ``Record`` or replay's own ``_Rec``."""

    @property
    def kind(self) -> str: ...

    @property
    def payload(self) -> Any: ...


class _Rec:
    """A recorded record as replay reads it. A ``budget`` record's payload is
    parsed only when a difference needs it: the loop re-derives it anyway."""

    __slots__ = ("kind", "payload", "line")

    def __init__(self, kind: str, payload: Any, line: bytes | None = None):
        self.kind = kind
        self.payload = payload
        self.line = line

    def full_payload(self) -> Any:
        if self.line is not None:
            self.payload = orjson.loads(self.line)["payload"]
            self.line = None
        return self.payload


_LAZY = b'"kind":"budget","payload":'


def _parse(name: str, lines: Sequence[bytes]) -> list[_Rec]:
    recs = []
    for i, line in enumerate(lines):
        if line.startswith(_LAZY, 75):
            recs.append(_Rec("budget", None, line))
            continue
        try:
            o = orjson.loads(line)
            recs.append(_Rec(o["kind"], o["payload"]))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            _refuse_if_invalid(name, lines)
            raise ReplayError(f"{name}: record {i} is not a record; not replayed") from None
        bad = payload_problem(recs[-1].kind, recs[-1].payload)  # a forged record that chains (budget: re-derived)
        if bad is not None:
            _refuse_if_invalid(name, lines)
            raise ReplayError(f"{name}: record {i} (line {i + 1}, {recs[-1].kind}): {bad}; not replayed")
    return recs


def config_from_record(payload: Mapping[str, Any], redaction_salt: bytes | str | None = None,
                       tools: Sequence[Any] | None = None) -> LoopConfig:
    """The ``LoopConfig`` recorded in a ``run_start`` payload; ``tools``: the list its config refers
    to instead of holding it (``conversation`` rule 3), taken from the record it names.

    Raises:
        ReplayError: the record is not of format 1 or 2, or its config cannot be read.
    """
    if payload.get("format") not in (1, 2):
        raise ReplayError(f"run_start of format {payload.get('format')!r}: this version replays formats 1 and 2 only")
    try:
        c = payload["config"]
        if tools is None and type(c["tools"]) is not list:
            raise ReplayError(f"run_start config's tools are {canonical(c['tools']).decode()[:80]}: a list, or a reference "
                              "only in a run_start that continues the conversation")
        entries = [dict(t) for t in (c["tools"] if tools is None else tools)]
        specs = _specs(entries)
        return LoopConfig(
            model=str(c["model"]),
            budget=Budget.from_json(c["budget"]),
            price=Price.from_json(c["price"]),
            tools=specs,
            manifest=tuple(entries),
            sentinel=c.get("sentinel"),
            max_output_tokens=int(c["max_output_tokens"]),
            loop_threshold=c.get("loop_threshold"),
            run_id=c.get("run_id"),
            meta=dict(c.get("meta") or {}),
            redaction_salt=redaction_salt,
            max_value_bytes=int(c.get("max_value_bytes", DEFAULT_MAX_VALUE_BYTES)),
            record_raw=bool(c.get("record_raw", False)),
            max_continuations=int(c.get("max_continuations", 0)),
            fallback_prices={str(k): Price.from_json(v) for k, v in (c.get("fallback_prices") or {}).items()},
            image_tokens=int(c.get("image_tokens", IMAGE_TOKENS)),
            can_count=bool(c.get("can_count", False)),
            shared_cap=bool(c.get("shared_cap", False)),
            priced_by_name=bool(c.get("fallback_prices")) and c.get("pricing") != "dearest",
            legacy_estimate=c.get("reservation") != "bound",
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayError(f"run_start config cannot be read: {type(exc).__name__}: {exc}") from None


def _specs(entries: Iterable[Mapping[str, Any]]) -> tuple[ToolSpec, ...]:
    """What the model is shown of recorded tools (a config's ``tools``, a ``tools_changed``'s)."""
    return tuple(
        ToolSpec(str(t["name"]), str(t.get("description", "")), dict(t.get("parameters", {})), bool(t.get("read_only", False)))
        for t in entries
    )


def tools_changed_from_record(payload: Mapping[str, Any]) -> ToolsChanged:
    """The ``ToolsChanged`` a ``tools_changed`` record holds, as the loop took it."""
    entries = [dict(t) for t in payload["tools"]]
    return ToolsChanged(_specs(entries), tuple(entries))


# --- the replay model ---------------------------------------------------------

_ERROR_FORM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:: (.*))?", re.S)
_NOT_A_REPLY = re.compile(r"the model returned a ([A-Za-z_][A-Za-z0-9_]*), not a ModelReply")


class ReplayModel:
    """A model that answers from recorded ``model_turn`` records, in order.

    A recorded ``model_error`` is raised again so that the driver writes the
    same error text. When the record runs out, the run was ``interrupted``
    there (the replay interrupts too) or the loop now asks for more turns
    than were recorded (``ReplayExhausted``: the run ends in ``model_error``).
    """

    def __init__(self, turns: Sequence[RecordLike], *, interrupted: bool = False, name: str = "replay"):
        self.turns = list(turns)
        self.interrupted = interrupted
        self.name = name
        self.calls = 0
        self.unreproducible: list[str] = []
        self.replayed_interrupt = False
        """The recorded interrupt was raised again (a Ctrl+C of the person replaying is not)."""
        self.counts: list[Mapping[str, Any]] = []
        """The recorded ``token_count`` payloads, answered in order by ``count_tokens``."""

    def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact count the loop was given here, from the record (its error raised again)."""
        if not self.counts:
            raise ReplayExhausted("the loop asked for a token count the record does not hold")
        p = self.counts.pop(0)
        n = p.get("counted")
        if not isinstance(n, int):
            raise ReplayCountError(str(p.get("error", "no count")))
        return n

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.calls >= len(self.turns):
            if self.interrupted:
                self.replayed_interrupt = True
                raise ReplayedInterrupt(in_call=False)
            self.calls += 1
            raise ReplayExhausted(f"the record holds {len(self.turns)} model turns; the loop asked for turn {self.calls}")
        rec = self.turns[self.calls]
        self.calls += 1
        if rec.kind == "model_error" and rec.payload.get("interrupted") is True and self.interrupted:
            self.replayed_interrupt = True
            raise ReplayedInterrupt(in_call=True)  # the call was interrupted while the model answered: charged again
        if rec.kind == "overrun":  # a reply (or failure) whose figures no provider can have billed: charged again
            return raise_recorded_failure(str(rec.payload.get("error", "")), self.unreproducible, None, unaccounted=True)
        if rec.kind == "model_error":
            return raise_recorded_failure(str(rec.payload.get("error", "")), self.unreproducible, rec.payload.get("usage"),
                                          unaccounted=rec.payload.get("billed_at_reservation") is True)
        p = rec.payload
        reply = ModelReply.from_json(p["reply"])
        raw = p.get("raw")
        out = reply if raw is None else replace(reply, raw=raw)
        if request.on_text is not None and out.text:
            request.on_text(out.text)
        return out


def raise_recorded_failure(error: str, notes: list[str], usage: Mapping[str, Any] | None = None, *, unaccounted: bool = False) -> ModelReply:
    """Raise (or return) what makes the driver record ``error`` again, word for word (and charge it again:
    ``usage`` billed, or the whole reservation when it was ``unaccounted``)."""
    m = _NOT_A_REPLY.fullmatch(error)
    if m:
        return type(m.group(1), (), {})()  # type: ignore[no-any-return]
    m = _ERROR_FORM.fullmatch(error)
    if m:
        cls = type(m.group(1), (Exception,), {})
        exc = cls() if m.group(2) is None else cls(m.group(2))
        if usage is not None:
            exc.usage = Usage.from_json(usage)  # what the failed attempts were billed, spent again
        if unaccounted:
            exc.unaccounted = True  # charged at the reservation again
        raise exc
    notes.append(f"the recorded model error {error[:60]!r} cannot be raised again word for word")
    raise ReplayExhausted(error)


class _Ledger:
    """Grants every reservation except those the recorded run was refused: a turn's (the ``refuse_at``-th),
    and side costs the record says the ledger refused (``side``, set just before each side cost is asked)."""

    def __init__(self, refuse_at: int | None):
        self.refuse_at = refuse_at
        self.n = 0
        self.side: bool | None = None
        self.refuses_side = False

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        if self.side is not None:
            granted, self.side = self.side, None
            return granted
        self.n += 1
        return self.n != self.refuse_at

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        return None


class _Lines:
    """The replay's transcript: its lines only (bytes, which the collector never walks)."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.last_hash = GENESIS

    def append(self, kind: str, payload: Any) -> Record:
        seq = len(self.lines)
        digest, line = make_line(seq, self.last_hash, kind, payload)
        rec = new_record((seq, self.last_hash, kind, payload, digest))
        self.lines.append(line)
        self.last_hash = digest
        return rec

    def records(self) -> list[_Rec]:
        out = []
        for line in self.lines:
            o = orjson.loads(line)
            out.append(_Rec(o["kind"], o["payload"]))
        return out


class _PassSink:
    """Writes the loop's records, copying the recorded foreign records at their places.

    For a run that was cut off (no ``stop``), the replay stops where the
    record does: the next record interrupts the loop, and what the interrupt
    writes is dropped.
    """

    def __init__(self, out: _Lines, segment: Sequence[_Rec], cut_off: bool = False):
        self.out = out
        self.segment = segment
        self.cursor = 0
        self.limit = sum(1 for r in segment if r.kind in LOOP_KINDS) if cut_off else None
        self.written = 0
        self.cut = False

    def _foreign(self) -> None:
        seg = self.segment
        while self.cursor < len(seg) and seg[self.cursor].kind not in LOOP_KINDS:
            self.out.append(seg[self.cursor].kind, seg[self.cursor].payload)
            self.cursor += 1

    def append(self, kind: str, payload: Any) -> Record:
        seg, i = self.segment, self.cursor
        if i < len(seg) and seg[i].kind not in LOOP_KINDS:
            self._foreign()
        if self.limit is not None and self.written >= self.limit:
            if not self.cut:
                self.cut = True
                raise KeyboardInterrupt
            return Record(-1, self.out.last_hash, kind, payload, self.out.last_hash)
        rec = self.out.append(kind, payload)
        self.written += 1
        self.cursor += 1
        return rec

    def finish(self) -> None:
        while self.cursor < len(self.segment):
            self._foreign()
            self.cursor += 1


# --- the runs of a file -------------------------------------------------------


def _segments(records: Sequence[_Rec]) -> list[tuple[bool, list[_Rec]]]:
    """The file cut into (is_run, records): a run goes from run_start to its stop."""
    out: list[tuple[bool, list[_Rec]]] = []
    current: list[_Rec] | None = None
    loose: list[_Rec] = []
    for r in records:
        if r.kind == "run_start":
            if current is not None:
                out.append((True, current))
            elif loose:
                out.append((False, loose))
                loose = []
            current = [r]
        elif current is not None:
            current.append(r)
            if r.kind == "stop":
                out.append((True, current))
                current = None
        else:
            loose.append(r)
    if current is not None:
        out.append((True, current))
    if loose:
        out.append((False, loose))
    return out


def _priors(name: str, lines: Sequence[bytes], records: Sequence[_Rec]) -> dict[int, Continues]:
    """For each ``run_start`` that continues the conversation before it (format 2), that
    conversation, rebuilt from the records (``conversation`` rule 1), keyed by ``id`` of the record.

    Raises:
        ReplayError: a reference that does not name the record just before it, or
            whose count of messages is not what the records rebuild.
    """
    if not any(r.kind == "run_start" and "continues" in r.payload for r in records):
        return {}
    conv = Conversation()
    out: dict[int, Continues] = {}
    for i, r in enumerate(records):
        if r.kind == "budget":
            continue  # no budget record changes the conversation (and its payload is read lazily)
        p = r.payload
        if r.kind == "run_start" and "continues" in p:
            ref = p["continues"]
            h = lines[i - 1][9:73].decode() if i > 0 else ""
            prior = conv.continues(i - 1, h)
            if not isinstance(ref, dict) or ref.get("seq") != i - 1 or ref.get("hash") != h:
                raise ReplayError(f"{name}: record {i}: its run_start continues a record that is not the one before it")
            if prior is None or ref.get("messages") != len(prior.messages):
                raise ReplayError(
                    f"{name}: record {i}: its run_start continues {ref.get('messages')} messages; "
                    f"the records before it rebuild {0 if prior is None else len(prior.messages)}"
                )
            out[id(r)] = replace(prior, tools=_referred_tools(name, i, p, records, conv))
        conv.feed(r.kind, p, i)
    return out


def _referred_tools(name: str, i: int, payload: Mapping[str, Any], records: Sequence[_Rec],
                    conv: Conversation) -> tuple[int, Sequence[Any]] | None:
    """The record and list a continuing ``run_start``'s ``config.tools`` refers to (``conversation``
    rule 3), or None when it holds its list itself.

    Raises:
        ReplayError: a reference to anything but the latest record before it with a tool list.
    """
    tools = (payload.get("config") or {}).get("tools")
    if type(tools) is list:
        return None
    s = tools.get("same_as") if isinstance(tools, Mapping) else None
    if type(s) is not int or not 0 <= s < i or conv.tools is None or conv.tools[0] != s:
        latest = "none" if conv.tools is None else f"record {conv.tools[0]}"
        raise ReplayError(f"{name}: record {i}: its run_start's tools refer to {canonical(tools).decode()[:80]}; "
                          f"the latest record before it with a tool list is {latest}")
    held = tool_list(records[s].payload, records[s].kind)
    assert held is not None  # conv.tools named it: it holds one
    return s, held


def _markers(v: Any) -> str | None:
    """"redacted", "truncated", or None: the first marker found in a value."""
    if is_marker(v):
        return "redacted" if REDACTED in v else "truncated"
    if type(v) is dict:
        for x in v.values():
            k = _markers(x)
            if k:
                return k
    elif type(v) is list:
        for x in v:
            k = _markers(x)
            if k:
                return k
    return None


def _has_salted_hash(v: Any) -> bool:
    return b'"salted_sha256"' in canonical(v)


class _RunReplay:
    def __init__(
        self, index: int, seg: list[_Rec], mode: str, registry: Registry | None, salt: bytes | str | None,
        out: _Lines, has_markers: bool = True, prior: Continues | None = None,
    ):
        self.index = index
        self.seg = seg
        self.prior = prior
        self.mode = mode
        self.registry = registry
        self.warnings: list[str] = []
        self.unreproducible: list[StepNote] = []
        self.skipped = 0
        start = seg[0]
        listed = prior.tools[1] if prior is not None and prior.tools is not None else None
        self.config = config_from_record(start.payload, salt, listed)
        written = dict(start.payload.get("config") or {})
        if listed is not None:
            written["tools"] = list(listed)
        if canonical(self.config.to_json()) != canonical(written):
            self.warnings.append(f"run {index}: its run_start config holds fields this version does not read")
        # one pass over the run's records: its turns, its stop, its tool results by step, and
        # whether a driver's ``prepare`` wrote anything between them
        self.turns: list[_Rec] = []
        self.stop: Any = None
        self.results: dict[int, list[dict[str, Any]]] = {}
        self.uses_prepare = False
        self.changes: dict[int, Mapping[str, Any]] = {}
        """The ``tools_changed`` records, by the step whose tool calls they followed."""
        self.tool_costs: dict[int, list[Mapping[str, Any]]] = {}
        """``side_cost`` records written while a step's tools ran (a child's spend), by step: fed again there."""
        self.costs: SideCosts | None = None
        """The run's ``SideCosts``, from its ``prepare``: side costs are fed back through them."""
        self.legacy_side = True
        """No ``side_cost`` record: a file written before them, whose side calls are charged from their own records."""
        counts: list[Mapping[str, Any]] = []
        last = ""
        for k, r in enumerate(seg):
            kind = r.kind
            if kind == "side_cost":
                self.legacy_side = False
                self.uses_prepare = True
                if last == "budget":  # after a turn's budget, before its results: while its tools ran
                    self.tool_costs.setdefault(int(r.payload.get("step", 0)), []).append(r.payload)
                continue
            if kind in LOOP_KINDS:
                last = kind
            if kind == "model_turn" or kind == "model_error" or (kind == "overrun" and r.payload.get("billed_at_reservation") is True):
                self.turns.append(r)  # an overrun billed at its reservation stands for a reply whose figures were not believed
            elif kind == "token_count":
                counts.append(r.payload)
            elif kind == "tool_result":
                self.results.setdefault(int(r.payload.get("step", 0)), []).append(r.payload)
            elif kind == "tools_changed":
                self.changes[int(r.payload.get("step", 0))] = r.payload
            elif kind == "stop":
                if self.stop is None:
                    self.stop = r.payload
            elif kind not in LOOP_KINDS or (kind == "loop_detected" and r.payload.get("method") not in (None, "heuristic")):
                self.uses_prepare = self.uses_prepare or k > 0
        if self.stop is None:
            self.warnings.append(f"run {index} has no stop record: it was cut off; replayed as far as the record goes")
        reason = (self.stop or {}).get("reason")
        self.interrupted = reason == "interrupted"
        refuse_at = None
        if reason == "cost_budget" and str((self.stop or {}).get("error", "")).startswith("the shared ledger refused"):
            refuse_at = sum(1 for r in self.turns if r.kind == "model_turn") + 1
        self.ledger = _Ledger(refuse_at)
        self.ledger.refuses_side = any(r.kind == "side_cost" and r.payload.get("by") == "ledger" for r in seg)
        self.model = ReplayModel(self.turns, interrupted=self.interrupted)
        self.model.counts = counts
        self.sink = _PassSink(out, seg, cut_off=self.stop is None)
        if has_markers:
            self._notes()

    def _note(self, step: int, reason: str) -> None:
        self.unreproducible.append(StepNote(self.index, step, reason))

    def _notes(self) -> None:
        """Steps whose recorded values are markers, as this mode can and cannot reproduce them."""
        for r in self.seg:
            p = r.payload
            if r.kind == "model_turn":
                for c in p["reply"].get("tool_calls", []):
                    k = _markers(c.get("arguments"))
                    if k:
                        what = "answered from the record" if self.mode == "live-tools" else "passed on as recorded"
                        self._note(int(p["step"]), f"the arguments of {c.get('name')} ({c.get('id')}) are {k} in the record: {what}")
            elif r.kind == "tool_result" and self.mode == "full":
                for key in ("content", "error", "detail"):
                    k = _markers(p.get(key))
                    if k:
                        self._note(int(p["step"]), f"the {key} of {p.get('name')} ({p.get('call_id')}) is {k} in the record: passed on, not reproduced")
                        break
            elif r.kind == "tool_result" and self.mode == "live-tools" and self.config.redaction_salt is None:
                if any(_has_salted_hash(p.get(key)) for key in ("content", "error", "detail") if is_marker(p.get(key))):
                    self.warnings.append(
                        f"run {self.index} step {p.get('step')}: {p.get('name')}'s output was recorded with a salted hash; "
                        "pass the same redaction salt to compare it"
                    )

    def _interrupt_here(self, step: int) -> bool:
        return self.interrupted and step not in self.results and step == sum(1 for r in self.turns if r.kind == "model_turn")

    def _from_record(self, step: int, k: int, c: ToolCall) -> ToolResult:
        recs = self.results.get(step, [])
        p = recs[k] if k < len(recs) else None
        if p is None or p.get("call_id") != c.id:
            return ToolResult(c.id, c.name, False, error=f"replay: the record holds no result for call {c.id!r} at step {step}")
        return ToolResult.from_json(p)

    def execute(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        step = self.model.calls
        for p in self.tool_costs.get(step, ()):
            self._side_cost(p, asked=False)  # queued by the driver, fed before the step's results, as recorded
        if self._interrupt_here(step):
            self.model.replayed_interrupt = True
            raise KeyboardInterrupt
        where = {id(c): k for k, c in enumerate(calls)}
        registry = self.registry
        live = self.mode == "live-tools" and registry is not None
        # the one scheduler (``run.schedule``) decides as the run did: the tools it runs live keep their overlap
        return schedule(calls, lambda c: self._result(step, where[id(c)], c), None,
                        alongside=lambda c: live and registry is not None and may_overlap(registry, c))

    def _result(self, step: int, k: int, c: ToolCall) -> ToolResult:
        """Call ``c`` (the ``k``-th of ``step``) as this mode answers it: from the record, skipped, or run."""
        if self.mode == "full":
            return self._from_record(step, k, c)
        if self.mode == "dry-run":
            self.skipped += 1
            return ToolResult(c.id, c.name, False, error=DRY_RUN_ERROR, detail={"type": "DryRun", "message": DRY_RUN_ERROR})
        if _markers(c.arguments) is not None:
            return self._from_record(step, k, c)
        assert self.registry is not None
        return self.registry.invoke(c)

    def changed_manifests(self) -> list[list[Any]]:
        """The tool lists the run changed to, as recorded."""
        return [p["tools"] for p in self.changes.values() if isinstance(p.get("tools"), list)]

    def tools_changed(self) -> ToolsChanged | None:
        """After a step's tool calls: the tools the record says changed then."""
        p = self.changes.get(self.model.calls)
        if p is None:
            return None
        try:
            return tools_changed_from_record(p)
        except (KeyError, TypeError, ValueError):
            return ToolsChanged(())  # unreadable: the replayed record differs, and says where

    def prepare(self, state: State, record: Callable[[str, Any], None]) -> str | None:
        """What a driver's ``prepare`` did before this model call, from the record.

        Side costs it incurred (a loop check, a compaction's summary) are fed
        to the loop again from their ``side_cost`` records (asked, then
        settled: the loop decides and records them as it did); a file written
        before those records has them charged from the side call's own record.
        A stop it made (``loop_detected`` by a model's judgment) is made again.
        """
        costs = self.costs = record if isinstance(record, SideCosts) else None
        seg, i = self.seg, self.sink.cursor
        while i < len(seg) and (seg[i].kind not in LOOP_KINDS or seg[i].kind == "side_cost"):
            r = seg[i]
            if r.kind == "side_cost":
                self._side_cost(r.payload, asked=True)
            else:
                _charge_side_call(costs, r.payload)
                if r.kind in ("context", "compaction"):  # masking and compaction: what the model was shown
                    from .loop import recount_bound

                    if reapply(state.messages, r.kind, r.payload):
                        recount_bound(state)
            i += 1
        nxt = seg[i] if i < len(seg) else None
        if nxt is not None and nxt.kind == "overrun" and "error" in nxt.payload:
            if self.legacy_side and costs is not None:  # an older file: the side call's overrun, as it was recorded
                costs.settle("overrun", Usage(), 0, overrun=str(nxt.payload["error"]), legacy=True)
            return None
        if nxt is not None and nxt.kind == "loop_detected":
            record(nxt.kind, nxt.payload)
            return str((self.stop or {}).get("reason", "loop_detected"))
        if nxt is not None and nxt.kind == "stop":
            if nxt.payload.get("error") is not None:
                state.error = str(nxt.payload["error"])  # the stop's stated reason, word for word
            reason = str(nxt.payload.get("reason"))
            self.model.replayed_interrupt = self.model.replayed_interrupt or reason == "interrupted"
            return reason
        return None

    def _side_cost(self, p: Mapping[str, Any], asked: bool) -> None:
        """Feed a recorded ``side_cost`` to the loop again: its ask (refused as recorded, when it was), then its bill."""
        costs = self.costs
        if costs is None:
            return  # no driver's SideCosts to feed: the replayed record is missing, and the comparison says so
        purpose = str(p.get("purpose", ""))
        if "refused" in p:
            self._ask(costs, purpose, p.get("needed_micros"), p.get("needed_tokens"), granted=p.get("by") != "ledger")
            return
        usage = Usage.from_json(p.get("usage") or {})
        reserved, reserved_tokens = p.get("reserved_micros"), p.get("reserved_tokens")
        over = p.get("overrun")
        if asked:
            if self._ask(costs, purpose, reserved, reserved_tokens, granted=True) is not None:
                return  # refused now where it was granted then: the replay differs, and says where
            # its overrun as recorded: a bill charged at its reservation (figures no one could have billed) says so
            costs.settle(purpose, usage, int(p.get("cost_micros", 0)), overrun=None if over is None else str(over))
            return
        costs.settle(
            purpose, usage, int(p.get("cost_micros", 0)),
            reserved_micros=None if reserved is None else int(reserved),
            reserved_tokens=None if reserved_tokens is None else int(reserved_tokens),
            overrun=None if over is None else str(over),
        )

    def _ask(self, costs: SideCosts, purpose: str, micros: Any, tokens: Any, *, granted: bool) -> str | None:
        """Ask the loop again for a recorded side cost, the ledger answering as it did then."""
        self.ledger.side = granted
        try:
            return costs.ask(purpose, int(micros or 0), int(tokens or 0))
        finally:
            self.ledger.side = None

    def replay(self) -> RunResult:
        sink = self.sink
        msgs = list(self.seg[0].payload.get("messages", []))
        if self.prior is not None:
            msgs = list(self.prior.messages) + msgs
        res = run(
            self.model, None, msgs, self.config.budget, config=self.config, transcript=sink, continues=self.prior,
            executor=self.execute, prepare=self.prepare if self.uses_prepare else None,
            # a ledger only to refuse where the record was refused: without one, reserves and settles cost nothing
            ledger=self.ledger if self.ledger.refuse_at is not None or self.ledger.refuses_side else None,
            tools_changed=self.tools_changed if self.changes else None,
        )
        if res.stop_reason == "interrupted" and not (self.model.replayed_interrupt or sink.cut):
            # the driver stopped on a Ctrl+C that the record does not hold: the person replaying
            # pressed it (or a live tool raised it). Stop the replay; do not report a difference.
            raise KeyboardInterrupt
        sink.finish()
        for text in self.model.unreproducible:
            self._note(self.model.calls, text)
        return res


def _charge_side_call(costs: SideCosts | None, payload: Any) -> None:
    """A side call recorded in its own record (a file written before ``side_cost`` records, whose ``call``
    has no ``charged_as``): its ``usage`` and ``cost_micros`` go to the loop again, charged, not recorded."""
    if costs is None or not isinstance(payload, dict):
        return
    call = payload.get("call") if isinstance(payload.get("call"), dict) else payload
    if not isinstance(call, dict) or "purpose" not in call or "cost_micros" not in call or not isinstance(call.get("usage"), dict):
        return
    if "charged_as" in call:
        return  # charged by its ``side_cost`` record, which the loop writes again
    costs.settle(str(call["purpose"]), Usage.from_json(call["usage"]), int(call["cost_micros"]), legacy=True)


def _check_tools(manifests: Iterable[Sequence[Any]], registry: Registry, mode: str) -> tuple[list[str], list[ToolChange]]:
    """The recorded tools (each run's, and each list it changed to) against the tools given."""
    warnings: list[str] = []
    changes: list[ToolChange] = []
    seen: set[tuple[str, str]] = set()
    for manifest in manifests:
        for entry in manifest:
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("name"))
            recorded = entry.get("fingerprint")
            t: Tool | None = registry.get(name)
            if t is None:
                if mode == "live-tools" and (name, "missing") not in seen:
                    seen.add((name, "missing"))
                    warnings.append(f"tool {name!r} is in the record but not among the tools given: its calls fail")
                continue
            current = t.fingerprint
            if recorded is None or recorded == current or (name, current) in seen:
                continue
            seen.add((name, current))
            changes.append(ToolChange(name, str(recorded), current))
            warnings.append(
                f"tool {name!r} changed since the run was recorded: fingerprint {recorded} then, {current} now; "
                "the record may no longer describe what it does"
            )
    return warnings, changes


def _body(line: bytes) -> bytes:
    """The kind and payload part of a canonical line (no hash, prev or seq)."""
    end = line.rfind(b',"prev":"')
    return line[75:end] if line.startswith(b'{"hash":"') and end > 75 else line


def _changes(a: Any, b: Any, path: str, out: list[str]) -> None:
    if len(out) >= 20:
        return
    if type(a) is dict and type(b) is dict:
        for k in sorted(a.keys() | b.keys()):
            p = f"{path}.{k}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) else f"{path}[{json.dumps(k)}]"
            if k not in a:
                out.append(f"{p}: (absent) -> {_short(b[k])}")
            elif k not in b:
                out.append(f"{p}: {_short(a[k])} -> (absent)")
            else:
                _changes(a[k], b[k], p, out)
        return
    if type(a) is list and type(b) is list and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _changes(x, y, f"{path}[{i}]", out)
        return
    if canonical(a) != canonical(b):
        out.append(f"{path}: {_short(a)} -> {_short(b)}")


def _short(v: Any) -> str:
    s = canonical(v).decode()
    return s if len(s) <= 80 else s[:77] + "..."


def _compare(orig: Sequence[bytes], new: Sequence[bytes], orecs: Sequence[_Rec], nrecs: Sequence[_Rec]) -> list[Difference]:
    diffs: list[Difference] = []
    for i in range(max(len(orig), len(new))):
        if i < len(orig) and i < len(new):
            if orig[i] == new[i] or _body(orig[i]) == _body(new[i]):
                continue
            a, b = orecs[i], nrecs[i]
            pa = a.full_payload()
            changes: list[str] = []
            if a.kind == b.kind:
                _changes(pa, b.payload, "$", changes)
            step = pa.get("step") if isinstance(pa, dict) else None
            diffs.append(Difference(i, a.kind, b.kind, step if isinstance(step, int) else None, tuple(changes)))
        elif i < len(orig):
            pa = orecs[i].full_payload()
            step = pa.get("step") if isinstance(pa, dict) else None
            diffs.append(Difference(i, orecs[i].kind, None, step if isinstance(step, int) else None))
        else:
            diffs.append(Difference(i, None, nrecs[i].kind, None))
    return diffs


def _decisions(recs: Iterable[_Rec]) -> list[bytes]:
    out = []
    for r in recs:
        if r.kind in ("model_turn", "model_error", "loop_detected"):
            out.append(r.kind.encode() + canonical(r.payload))
        elif r.kind == "stop":
            out.append(b"stop" + canonical([r.payload.get("reason"), r.payload.get("steps")]))
    return out


def replay(
    transcript: str | os.PathLike[str] | bytes,
    *,
    tools: Registry | Iterable[Tool] | None = None,
    mode: str = "full",
    out: str | os.PathLike[str] | None = None,
    redaction_salt: bytes | str | None = None,
) -> ReplayResult:
    """Redo every run of a transcript and compare what it writes with the record.

    Args:
        transcript: a file path, or the file's bytes.
        tools: the tools to run (``live-tools``), and whose fingerprints are
            checked against the record in every mode.
        mode: ``"full"``, ``"live-tools"`` or ``"dry-run"``.
        out: where to write the replayed transcript (a new file).
        redaction_salt: the salt the run was recorded with, so that redacted
            outputs of re-run tools can be compared.

    Returns:
        A ``ReplayResult``: ``equal``, the differences, warnings and notes.
    Raises:
        ReplayError: unreadable, fails verification, an unknown format, or
            ``out`` exists.
        ValueError: an unknown mode, or ``live-tools`` without tools.
    """
    if mode not in MODES:
        raise ValueError(f"unknown replay mode {mode!r}: use one of {', '.join(MODES)}")
    registry = None if tools is None else tools if isinstance(tools, Registry) else Registry(tools)
    if mode == "live-tools" and registry is None:
        raise ValueError("live-tools mode runs the tools: pass tools=")
    if out is not None and os.path.exists(out) and os.path.getsize(out) > 0:
        raise ReplayError(f"{os.fspath(out)}: exists and is not empty; choose a new path for the replay")
    name, lines = _load(transcript)
    if not lines:
        raise ReplayError(f"{name}: holds no records")
    if mode == "live-tools":
        _refuse_if_invalid(name, lines)
    # The collector is paused while the record is read (a bulk load of acyclic values, which it
    # would walk again and again) and, when no tool runs, for the whole replay: the loop and this
    # module make no reference cycles (tests/test_replay.py holds that), so refcounting frees all.
    # With live tools, which may make cycles, the record is frozen out of its walks instead.
    whole = mode != "live-tools"
    paused = (whole or len(lines) >= 10_000) and gc.isenabled()
    if paused:
        gc.disable()
    try:
        records = _parse(name, lines)
        if paused and not whole:
            gc.enable()
            paused = False
        frozen = not whole and len(lines) >= 10_000 and gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        try:
            return _replay(name, lines, records, mode, registry, out, redaction_salt)
        finally:
            if frozen:
                gc.unfreeze()
    finally:
        if paused:
            gc.enable()


def _replay(
    name: str,
    lines: list[bytes],
    records: list[_Rec],
    mode: str,
    registry: Registry | None,
    out: str | os.PathLike[str] | None,
    redaction_salt: bytes | str | None,
) -> ReplayResult:
    segments = _segments(records)
    blob = b"".join(lines)
    has_markers = b'"$redacted":' in blob or b'"$truncated":' in blob
    del blob
    if not any(is_run for is_run, _ in segments):
        _refuse_if_invalid(name, lines)
        raise ReplayError(f"{name}: holds no run (no run_start record)")

    sink = _Lines()
    result = ReplayResult(mode=mode, equal=False, results=[])
    priors = _priors(name, lines, records)
    runs = []
    n = 0
    for is_run, seg in segments:
        if is_run:
            n += 1
            runs.append(_RunReplay(n, seg, mode, registry, redaction_salt, sink, has_markers, priors.get(id(seg[0]))))
    if registry is not None:
        manifests = [m for r in runs for m in (r.config.manifest, *r.changed_manifests())]
        w, result.tool_changes = _check_tools(manifests, registry, mode)
        result.warnings += w
    it = iter(runs)
    for is_run, seg in segments:
        if not is_run:
            for r in seg:
                sink.append(r.kind, r.payload)
            continue
        rr = next(it)
        result.results.append(rr.replay())
        result.warnings += rr.warnings
        result.unreproducible_steps += rr.unreproducible
        result.skipped_calls += rr.skipped
        steps_with_tools = set(rr.results) if mode == "dry-run" else set()
        for r in rr.turns if steps_with_tools else ():
            s = int(r.payload.get("step", 0))
            if r.kind == "model_turn" and s - 1 in steps_with_tools:
                k = len(rr.results[s - 1])
                result.tool_dependent_steps.append(StepNote(rr.index, s, f"followed the output of {k} tool call(s) of step {s - 1}"))

    new = list(sink.lines)
    result.lines = new
    result.records = len(new)
    result.original_records = len(lines)
    result.equal = new == list(lines)
    replayed: list[_Rec] = []
    if not result.equal:
        if mode != "live-tools":
            _refuse_if_invalid(name, lines)
        replayed = sink.records()
        result.differences = _compare(lines, new, records, replayed)
        result.first_difference = result.differences[0] if result.differences else None
    result.decisions_equal = result.equal or _decisions(records) == _decisions(replayed)
    if out is not None:
        try:
            with open(out, "wb") as f:
                f.writelines(new)
        except OSError as exc:
            raise ReplayError(f"{os.fspath(out)}: cannot write the replay: {exc.strerror or exc}") from None
    return result


def assert_replays(
    path: str | os.PathLike[str],
    *,
    tools: Registry | Iterable[Tool] | None = None,
    mode: str = "full",
    redaction_salt: bytes | str | None = None,
    allow_warnings: bool = False,
) -> ReplayResult:
    """A regression test from a committed transcript: replay it and fail on any change.

    Raises:
        AssertionError: the replay is not byte-identical (with a readable
            diff of the first differing record), or warned (a changed tool)
            and ``allow_warnings`` is false.
    """
    r = replay(path, tools=tools, mode=mode, redaction_salt=redaction_salt)
    if r.equal and (allow_warnings or not r.warnings):
        return r
    _, lines = _load(path)
    msg = r.summary(os.fspath(path))
    d = r.diff(lines)
    raise AssertionError(msg + ("\n\nthe first differing record, recorded vs replayed:\n" + d if d else ""))
