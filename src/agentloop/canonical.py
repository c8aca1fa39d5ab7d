"""RFC 8785 (JCS) canonical JSON.

Changing anything in this module changes every hash of every transcript ever
written. It is pinned by the RFC 8785 vectors in ``tests/data/jcs-rfc8785`` and
by property tests that hold the fast path byte-equal to the reference path.

Rules:

1. Objects have string keys, sorted by their UTF-16 code units.
2. Strings are escaped minimally: ``"`` and ``\\``, the five short escapes
   (``\\b \\t \\n \\f \\r``), and ``\\u00xx`` (lowercase) for the other
   control characters. Everything else is written as UTF-8. A lone surrogate
   cannot be written and is refused.
3. Numbers are written as ECMAScript's ``Number.prototype.toString`` writes an
   IEEE double, integers included: a large integer that a double holds exactly
   is written as that double (``10**21`` is ``1e+21``); one that a double
   cannot hold exactly is refused rather than silently rounded. NaN and the
   infinities are refused.
4. Only ``None``, ``bool``, ``int``, ``float``, ``str``, ``list``, ``tuple``
   and ``dict`` are JSON. Anything else is refused with ``NotCanonicalizable``.

Theory of operation: ``canonical()`` first tries ``orjson`` with sorted keys,
which is ten times faster than ``json.dumps``. orjson agrees with JCS on every
value except floats, integers past 2**53 and the sort order of keys that hold
characters past U+FFFF. A cheap walk looks for floats (and non-JSON types)
first; orjson itself refuses big integers (``OPT_STRICT_INTEGER``); and only
an output holding a 4-byte UTF-8 sequence is searched for such keys. Any of
these sends the value down the reference path, ``canonical_reference()``.
Strings and safe integers, the commonest single values, skip the walk.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

__all__ = ["NotCanonicalizable", "canonical", "canonical_reference"]

_MAX_SAFE_INT = 2**53

_ORJSON_OPTS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


class NotCanonicalizable(ValueError):
    """The value has no RFC 8785 form (not JSON, NaN, a lone surrogate, ...)."""


def _refuse(value: Any) -> Any:
    raise NotCanonicalizable(f"not a JSON value: {type(value).__name__}")


_LEAVES = frozenset((str, int, bool, type(None)))
_STRICT_OPTS = _ORJSON_OPTS | orjson.OPT_STRICT_INTEGER
"""orjson refuses integers past 53 bits with this: they go down the reference path."""
_ASTRAL = re.compile(rb"[\xf0-\xf4]").search
"""A lead byte of a 4-byte UTF-8 sequence: a character past U+FFFF."""


def _fast_ok(value: Any) -> bool:
    """True when the value holds only types whose orjson form is their JCS form.

    That is everything but floats (orjson writes ``1.0`` and turns NaN into
    ``null``) and the types orjson writes but JSON does not have (enums,
    UUIDs). Integer range and key types are left to orjson itself (strict
    integers, string keys only); keys past U+FFFF are looked for in its output.
    This walk runs on every record, so it is kept to a few bytecodes a node:
    an explicit stack that only containers go on, leaves checked in place.
    """
    t = type(value)
    if t is not dict and t is not list and t is not tuple:
        return t in _LEAVES
    stack = [value]
    pop = stack.pop
    push = stack.append
    leaves = _LEAVES
    nodes = 0
    while stack:
        v = pop()
        nodes += 1
        if nodes > 100_000:
            return False
        for x in v.values() if type(v) is dict else v:
            t = type(x)
            if t in leaves:
                continue
            if t is dict or t is list or t is tuple:
                push(x)
            else:
                return False
    return True


def _astral_key(value: Any) -> bool:
    """True when some object key in the value holds a character past U+FFFF.

    orjson sorts keys by code point and JCS by UTF-16 code unit: the two
    orders differ only for such keys.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            for k in v:
                if not k.isascii() and any(ord(ch) > 0xFFFF for ch in k):
                    return True
            stack.extend(v.values())
        elif type(v) is list or type(v) is tuple:
            stack.extend(v)
    return False


def canonical(value: Any, *, exact: bool = True) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of ``value``.

    ``exact=False`` is for values parsed from JSON: see ``canonical_reference``.

    Raises:
        NotCanonicalizable: the value is not JSON or has no canonical form.
    """
    t = type(value)
    if t is str:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            raise NotCanonicalizable("a string holds a lone surrogate") from None
    if t is int and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return str(value).encode()
    if _fast_ok(value):
        try:
            out = orjson.dumps(value, default=_refuse, option=_STRICT_OPTS)
        except (orjson.JSONEncodeError, RecursionError):
            pass  # a big integer, a non-string key, a lone surrogate, nesting past orjson's 254 levels
        else:
            if out.isascii() or _ASTRAL(out) is None or not _astral_key(value):
                return out
    return canonical_reference(value, exact=exact)


def canonical_reference(value: Any, *, exact: bool = True) -> bytes:
    """The reference path: slow, obviously correct, used as the oracle.

    ``exact=False`` reads an integer past 2**53 as the nearest double, as any
    JSON reader that holds numbers in doubles does: verifiers use it on what
    they parse. Writers keep ``exact=True``, so a value is never silently
    rounded on its way into a record.
    """
    parts: list[str] = []
    try:
        _write(value, parts, 0, exact)
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError:
        raise NotCanonicalizable("a string holds a lone surrogate") from None
    except RecursionError:
        raise NotCanonicalizable("the value is nested too deeply") from None


def _write(value: Any, out: list[str], depth: int, exact: bool = True) -> None:
    if depth > 500:
        raise NotCanonicalizable("the value is nested too deeply")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            out.append(str(int(value)))
        else:
            try:
                as_double = float(value)
            except OverflowError:
                raise NotCanonicalizable(f"integer {value} is too large for a JSON number") from None
            if exact and int(as_double) != value:  # compared as integers: exact (a float compare would round value)
                raise NotCanonicalizable(f"integer {value} is beyond 2**53 and not exact as a double")
            out.append(number(as_double))
    elif isinstance(value, float):
        out.append(number(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, depth + 1, exact)
        out.append("]")
    elif isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise NotCanonicalizable(f"object key {k!r} is not a string")
        out.append("{")
        for i, k in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(value[k], out, depth + 1, exact)
        out.append("}")
    else:
        raise NotCanonicalizable(f"not a JSON value: {type(value).__name__}")


def _utf16_key(key: str) -> bytes:
    try:
        return key.encode("utf-16-be")
    except UnicodeEncodeError:
        raise NotCanonicalizable("an object key holds a lone surrogate") from None


def _string(s: str) -> str:
    text = json.dumps(s, ensure_ascii=False)
    # json.dumps writes lone surrogates as-is; they fail at encode time, which
    # canonical_reference turns into NotCanonicalizable.
    return text


def number(x: float) -> str:
    """ECMAScript Number.prototype.toString for a finite double."""
    if math.isnan(x) or math.isinf(x):
        raise NotCanonicalizable(f"{x!r} has no JSON form")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    n = len(int_part) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        body = digits + exp if k == 1 else digits[0] + "." + digits[1:] + exp
    return sign + body
