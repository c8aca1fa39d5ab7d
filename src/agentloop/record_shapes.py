"""What each record kind's payload must look like before a reader believes it.

The chain (transcript.py) proves that a file is the one its writer wrote; it
says nothing of whether the writer was agentloop. Anyone can write records
that chain (the format is public), so a reader that folds a session into
messages, totals or a replayed run checks each payload here first, and a
forged record is refused by name instead of crashing the reader or being
believed.

Rules:

1. One shape per record kind, declared once in ``SHAPES``; every reader of a
   session (resume, rewind, replay, ``sessions``, ACP's session/load) goes
   through ``payload_problem`` (via ``transcript.check_payloads``).
2. A shape names what readers use. A field a reader indexes directly is
   required; every other field is checked only when present (older files and
   other layers' records leave some out). Unknown kinds and extra fields pass:
   the format lets any layer add its own. Where the redactor may have put a
   marker in place of a value (``redact.py``), the shape accepts the marker.
3. Money and token counts are integers in ``[0, MAX_MICROS]``: a negative or
   absurd total is refused, never added up. JSON's ``true`` is not a number.
4. The first problem found is reported as its path in the payload and what
   it holds (``reply.tool_calls is a string, expected an array``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .budget import MAX_MICROS
from .redact import is_marker

__all__ = ["SHAPES", "Check", "payload_problem"]

Check = Callable[[Any, str], "str | None"]
"""A shape: given a value and its path, the problem with it, or None."""

_MAX_COUNT = MAX_MICROS
"""The largest count (tokens, steps, records) a record may hold: past any real run."""


def _describe(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, int):
        return f"the integer {v}"
    if isinstance(v, float):
        return f"the number {v!r}"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def integer(lo: int = 0, hi: int = _MAX_COUNT) -> Check:
    """An integer in ``[lo, hi]`` (money, tokens, steps)."""

    def check(v: Any, path: str) -> str | None:
        if not _is_int(v):
            return f"{path} is {_describe(v)}, expected an integer"
        if v < lo or v > hi:
            return f"{path} is {v}, outside [{lo}, {hi}]"
        return None

    return check


def _typed(kind: type, name: str) -> Check:
    def check(v: Any, path: str) -> str | None:
        return None if isinstance(v, kind) else f"{path} is {_describe(v)}, expected {name}"

    return check


STRING = _typed(str, "a string")
BOOL = _typed(bool, "a boolean")
OBJECT = _typed(dict, "an object")


def MARKER(v: Any, path: str) -> str | None:  # noqa: N802 - a shape constant, named as the others
    """What the redactor leaves in place of a value (``{"$redacted": ...}``, ``{"$truncated": ...}``)."""
    return None if is_marker(v) else f"{path} is {_describe(v)}, expected a redaction or truncation marker"


def ANY(v: Any, path: str) -> str | None:  # noqa: N802 - a shape constant, named as the others
    return None


def nullable(inner: Check) -> Check:
    def check(v: Any, path: str) -> str | None:
        return None if v is None else inner(v, path)

    return check


def array(item: Check) -> Check:
    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, list):
            return f"{path} is {_describe(v)}, expected an array"
        for i, x in enumerate(v):
            bad = item(x, f"{path}[{i}]")
            if bad:
                return bad
        return None

    return check


def mapping(value: Check) -> Check:
    """An object whose every member is ``value`` (names are free)."""

    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, dict):
            return f"{path} is {_describe(v)}, expected an object"
        for k, x in v.items():
            bad = value(x, f"{path}.{k}")
            if bad:
                return bad
        return None

    return check


def either(first: Check, second: Check, name: str) -> Check:
    def check(v: Any, path: str) -> str | None:
        if first(v, path) is None or second(v, path) is None:
            return None
        return f"{path} is {_describe(v)}, expected {name}"

    return check


def list_or_reference(listed: Check, reference: Check) -> Check:
    """A list checked by ``listed``, or an object (a reference to a record holding one) by ``reference``."""

    def check(v: Any, path: str) -> str | None:
        if type(v) is list:
            return listed(v, path)
        if type(v) is dict:
            return reference(v, path)
        return f"{path} is {_describe(v)}, expected a list or a reference"

    return check


def obj(required: Mapping[str, Check] | None = None, optional: Mapping[str, Check] | None = None) -> Check:
    """An object with ``required`` members, and ``optional`` ones checked when present."""
    req = dict(required or {})
    opt = dict(optional or {})

    def check(v: Any, path: str) -> str | None:
        if not isinstance(v, dict):
            return f"{path} is {_describe(v)}, expected an object"
        for k, c in req.items():
            if k not in v:
                return f"{path}.{k} is missing"
            bad = c(v[k], f"{path}.{k}")
            if bad:
                return bad
        for k, c in opt.items():
            if k in v:
                bad = c(v[k], f"{path}.{k}")
                if bad:
                    return bad
        return None

    return check


MONEY = integer(0, MAX_MICROS)
"""Integer micro-dollars, never negative, never past any real bound."""
COUNT = integer(0, _MAX_COUNT)
USAGE = obj(optional={k: COUNT for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")})
TOOL_CALL = obj({"id": STRING, "name": STRING}, {"arguments": ANY})
TEXT = either(STRING, MARKER, "a string or a redaction marker")
"""Text the redactor may have replaced (a failed call's error, a message's content)."""
MESSAGE = obj({"role": STRING}, {
    "content": nullable(either(TEXT, array(OBJECT), "a string, an array of blocks or a redaction marker")),
    "tool_calls": array(TOOL_CALL),
    "tool_call_id": nullable(STRING), "reasoning": array(OBJECT), "ok": BOOL,
})
MESSAGES = array(MESSAGE)
REPLY = obj(optional={
    "text": STRING, "tool_calls": array(TOOL_CALL), "usage": nullable(USAGE), "model": nullable(STRING),
    "finish_reason": nullable(STRING), "reasoning": array(OBJECT),
})
PRICE = obj(optional={k: COUNT for k in ("input", "output", "cache_read", "cache_write")})
BUDGET = obj(optional={
    "max_steps": nullable(COUNT), "max_tokens": nullable(COUNT), "max_usd_micros": nullable(MONEY), "unlimited": BOOL,
})
TOOL_ENTRY = obj({"name": STRING}, {"description": STRING, "parameters": OBJECT, "read_only": BOOL, "fingerprint": ANY})
CONFIG = obj(optional={
    "model": STRING, "budget": BUDGET, "price": PRICE,
    "tools": list_or_reference(array(TOOL_ENTRY), obj({"same_as": COUNT})),
    "max_output_tokens": COUNT,
    "loop_threshold": nullable(COUNT), "meta": nullable(OBJECT), "fallback_prices": nullable(mapping(PRICE)),
    "max_value_bytes": COUNT, "max_continuations": COUNT, "image_tokens": COUNT, "can_count": BOOL, "shared_cap": BOOL,
})
_STATS = {
    "spent_micros": MONEY, "usage": USAGE, "turns": COUNT, "model_calls": COUNT, "last_input_tokens": COUNT,
    "estimated_tokens": COUNT, "tools": mapping(obj(optional={"ok": COUNT, "failed": COUNT})),
}
_STEP = {"step": COUNT}
_CALL_IDS = array(STRING)

SHAPES: dict[str, Check] = {
    "run_start": obj({"config": CONFIG}, {
        "format": integer(1, 2), "messages": MESSAGES,
        "continues": obj({"seq": COUNT, "hash": STRING, "messages": COUNT}),
    }),
    "model_turn": obj({"reply": REPLY}, {**_STEP, "usage_estimated": BOOL}),
    "budget": obj(optional={
        **_STEP, "reserved_micros": MONEY, "cost_micros": MONEY, "spent_micros": MONEY, "tokens": COUNT,
    }),
    "tool_result": obj({"call_id": STRING, "name": STRING, "ok": BOOL}, {
        **_STEP, "error": nullable(TEXT), "detail": nullable(OBJECT),
    }),
    "tools_changed": obj({"tools": array(TOOL_ENTRY)}, _STEP),
    "model_error": obj(optional={**_STEP, "error": nullable(STRING), "usage": nullable(USAGE)}),
    "loop_detected": obj(optional={**_STEP, "method": STRING, "fingerprint": STRING, "repeats": COUNT}),
    "token_count": obj(optional={
        **_STEP, "bound": COUNT, "counted": nullable(COUNT), "reserved_tokens": nullable(COUNT),
        "needed_micros": nullable(MONEY), "left_micros": nullable(MONEY), "error": nullable(STRING),
    }),
    "overrun": obj(optional={**_STEP, "reserved_micros": MONEY, "cost_micros": MONEY, "usage": USAGE, "error": STRING}),
    "side_cost": obj(optional={
        **_STEP, "purpose": STRING, "reserved_micros": nullable(MONEY), "reserved_tokens": nullable(COUNT),
        "usage": USAGE, "cost_micros": MONEY, "spent_micros": MONEY, "tokens": COUNT,
        "needed_micros": nullable(MONEY), "needed_tokens": nullable(COUNT), "refused": STRING, "by": STRING,
    }),
    "stop": obj(optional={
        "reason": STRING, "steps": COUNT, "usage": USAGE, "tokens": COUNT, "spent_micros": MONEY,
        "answer": nullable(STRING), "error": nullable(STRING),
    }),
    "session_cost": obj(optional=_STATS),
    "session_end": obj(optional={**_STATS, "reason": STRING}),
    "session_start": obj(optional={"started_at": STRING}),
    "compaction": obj(optional={
        "call": nullable(obj(optional={"cost_micros": MONEY, "usage": USAGE})), "status": STRING, "head": COUNT,
        "summarized_messages": COUNT, "summary": STRING,
    }),
    "context": obj(optional={**_STEP, "where": STRING, "masked": _CALL_IDS, "evicted": _CALL_IDS, "files": nullable(OBJECT)}),
    "rewind": obj(optional={"messages": MESSAGES}),
    "fork": obj(optional={"messages": MESSAGES, "verified_records": COUNT}),
    "file_change": obj(optional={"path": STRING, "before": nullable(STRING), "after": nullable(STRING), "turn": COUNT}),
    "loop_check": obj(optional={**_STEP, "cost_micros": MONEY, "usage": USAGE}),
}
"""Each record kind a reader interprets, and the shape its payload must have."""


def payload_problem(kind: str, payload: Any) -> str | None:
    """What is wrong with a ``kind`` record's payload (``"reply.tool_calls is a string, expected an
    array"``), or None when its shape is one readers can use (or no reader interprets ``kind``)."""
    check = SHAPES.get(kind)
    return None if check is None else check(payload, "payload")
