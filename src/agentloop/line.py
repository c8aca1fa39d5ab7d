"""A record's line: its canonical body, the body's SHA-256, and the hash spliced in front.

Kept apart from ``transcript.py`` so that it is compiled with the core
(``_native.MODULES``): every record written, replayed or verified passes here.
The format itself is documented in ``transcript.py`` and
docs/transcript-format.md. The verifier's fast path (``fast_hash``,
``is_canonical``) lives here for the same reason: it runs once a line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from .canonical import _utf16_key, canonical

_scan: Callable[[bytes], int] | None
"""The three checks below in one C pass over the line (``_linescan.c``), or None: they run in Python."""
_ALL_OK = 1
"""``_scan``: orjson's sorted form is RFC 8785's."""
_KEYS_PART = 2
"""``_scan``: every number is RFC 8785's, but some object's keys sort otherwise by UTF-16 code unit."""
try:
    from ._linescan import scan as _c_scan

    _scan = _c_scan
except ImportError:  # not built, or a stale build (_native refuses it then)
    _scan = None

__all__ = ["fast_hash", "is_canonical", "make_line"]


def make_line(seq: int, prev: str, kind: str, payload: Any) -> tuple[str, bytes]:
    """The hash and the full line (with ``\\n``) of a record.

    Raises:
        NotCanonicalizable: the payload is not JSON.
    """
    body = canonical({"kind": kind, "payload": payload, "prev": prev, "seq": seq})
    digest = hashlib.sha256(body).hexdigest()
    return digest, b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n"


# The verifier's fast path. orjson parses a line, writes the object back with
# sorted keys, and when that is the line byte for byte, the line is in orjson's
# form. orjson's form is the RFC 8785 form except in three places, each looked
# for at C speed and, only where found, checked token by token:
#
# - integers past 2**53 - 1: orjson's strict mode refuses them; the object is
#   then written without it (in full, up to 64 bits), and every integer past
#   2**53 - 1 in the parsed values is checked against the double it reads as
#   (``_int_is_jcs``);
# - floats: orjson writes the same shortest digits as ECMAScript, and the same
#   text when it writes no exponent and no trailing ".0". It writes "100.0"
#   (RFC 8785: "100"), and exponents from 1e+16 and below 1e-5 where RFC 8785
#   has them from 1e+21 and below 1e-6. So a token "<digits>.0" is never
#   canonical, and one with an exponent is canonical exactly when the exponent
#   is at least 21 or at most -7. They are found in the line translated (digits
#   to "0" or "1", "+" and "-" to "-", "," "]" "}" to ",") as "e-" and ".0,"; a
#   string that merely looks like one costs a check or a trip down the
#   reference path, never correctness;
# - keys holding characters past U+FFFF: orjson sorts keys by code point, RFC
#   8785 by UTF-16 code unit, and the orders differ only between such a
#   character and one in U+E000..U+FFFF. Only a line with a key holding a
#   character in U+E000..U+FFFF (found from the bytes EE and EF by memchr) has
#   its objects' key orders checked.
#
# With the C module built (``_linescan.c``, ``_scan``), the three are looked
# for in one pass over the line instead, strings skipped by memchr: every
# number token judged as below (integers past 2**53 - 1 exactly, in integer
# arithmetic), and each key compared with the previous key of its object when
# both hold a byte from EE up. orjson then writes integers of up to 64 bits
# in full at once (no strict first try), and no parsed value is walked. A
# canonical line whose keys sort otherwise by UTF-16 code unit than by code
# point is not orjson's sorted form; when the pass finds such keys and every
# number in order, orjson writes the value again with each object's keys put
# in UTF-16 order first (``_in_utf16_key_order``), and that must be the line.
#
# The fast path only ever accepts; whatever it does not accept goes down the
# reference path, which names the fault. Property tests hold the two equal,
# with the C module and without it.


def _table(pairs: dict[bytes, bytes]) -> bytes:
    out = bytearray(b" " * 256)
    for chars, to in pairs.items():
        for c in chars:
            out[c] = to[0]
    return bytes(out)


# One translation serves every scan: "e" and "." become "x", a sign and the
# digit 0 become "y", so one two-byte search for "xy" finds every exponent
# ("e-", "e+") and every ".0" (and, harmlessly, "e0" and "-0").
_SCAN_TABLE = _table({b".e": b"x", b"+-0": b"y"})
_MAX_SAFE_INT = 2**53 - 1
_TOKEN_CHARS = frozenset(b"0123456789.-")
_TOKEN_START = frozenset(b":,[")
_TOKEN_END = frozenset(b",]}")
_SORTED_STRICT = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
_BODY_START = hashlib.sha256(b"{")
_int_cache: dict[int, bool] = {}


def _numbers_ok(line: bytes, t: bytes) -> bool:
    """No float token at an "xy" of the translated line ``t`` is written otherwise by RFC 8785.

    At "<digit>e<sign>": the exponent's digits decide (at most -7 or at least 21 is
    RFC 8785's form too). At "<digit>.0" ending a token (a float written "100.0"):
    never RFC 8785's form. Anything else that matched ("e0", "-0", "0.05") is fine.
    """
    n = len(line)
    i = t.find(b"xy")
    while i >= 0:
        if i > 0 and 0x30 <= line[i - 1] <= 0x39 and i + 4 < n:  # after a digit: a number (or a string like one)
            c = line[i]
            d = line[i + 2]
            if c == 0x65 and 0x30 <= d <= 0x39:  # "e", a sign, a digit
                e = line[i + 3]
                if line[i + 1] == 0x2D:  # "e-": -1 .. -6 are written "0.00000d" by RFC 8785
                    if not 0x30 <= e <= 0x39 and d < 0x37:
                        return False
                elif line[i + 1] == 0x2B:  # "e+"
                    if not 0x30 <= e <= 0x39:
                        return False  # "e+d": orjson never writes it; let the reference path decide
                    if not 0x30 <= line[i + 4] <= 0x39 and line[i + 2 : i + 4] < b"21":
                        return False  # "e+16" .. "e+20": written in full by RFC 8785
            elif c == 0x2E and line[i + 1] == 0x30 and d in _TOKEN_END:  # "<digit>.0" ending a token
                s = i - 1
                while s > 0 and line[s - 1] in _TOKEN_CHARS:
                    s -= 1
                if s > 0 and line[s - 1] in _TOKEN_START:
                    return False
        i = t.find(b"xy", i + 2)
    return True


def _int_is_jcs(n: int) -> bool:
    """An integer's text is the RFC 8785 form of the double it reads as (exact up to 2**53)."""
    known = _int_cache.get(n)
    if known is not None:
        return known
    r = repr(float(n))  # the shortest digits: "9007199254740994.0" or "-1.152921504606847e+18"
    mant, _, e = r.partition("e")
    text = str(n)
    if not e:
        ok = r == text + ".0"
    else:
        shortest = mant.replace(".", "").lstrip("-")
        k = int(e) + 1
        ok = k <= 21 and ("-" if text[0] == "-" else "") + shortest + "0" * (k - len(shortest)) == text
    if len(_int_cache) < 4096:
        _int_cache[n] = ok
    return ok


def _big_ints_ok(value: Any) -> bool:
    """Every integer past 2**53 - 1 in ``value`` (parsed from orjson's form, which writes it in
    full) is written as RFC 8785 writes the double it reads as.

    A walk of the parsed values, not a scan of the line: a type test a value
    costs less than finding and delimiting every run of 16 digits in the bytes.
    """
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t is int and (v > _MAX_SAFE_INT or v < -_MAX_SAFE_INT) and not _int_is_jcs(v):
            return False
    return True


def _keys_in_utf16_order(value: Any) -> bool:
    """Every object's keys, in the order parsed, are sorted by UTF-16 code units."""
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            keys = list(v)
            if not all(k.isascii() for k in keys) and keys != sorted(keys, key=_utf16_key):
                return False
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
    return True


def _high_bmp_in_a_key(line: bytes) -> bool:
    """Some string holding a character in U+E000..U+FFFF (UTF-8 lead byte EE or EF) is an object key."""
    for lead in (b"\xee", b"\xef"):
        i = line.find(lead)
        while i >= 0:
            q = line.find(b'"', i)  # the end of the string that holds it
            while q > 0 and line[q - 1] == 0x5C:  # a quote after backslashes: escaped when they are odd in number
                k = q - 1
                while line[k] == 0x5C:
                    k -= 1
                if (q - 1 - k) % 2 == 0:
                    break
                q = line.find(b'"', q + 1)
            if q < 0 or line[q + 1 : q + 2] == b":":
                return True  # a key (or not valid JSON here: the walk decides)
            i = line.find(lead, q)
    return False


def _orjson_form_is_canonical(obj: Any, line: bytes, big: bool) -> bool:
    """``line`` is orjson's sorted form of ``obj``: True when it is also its RFC 8785 form.

    ``big``: the object holds an integer past 2**53 - 1 (orjson's strict mode refused it).
    Single-byte scans (memchr) rule out most lines first: a float that orjson
    writes otherwise holds "." or an exponent's sign, and keys can sort
    otherwise only when one holds a character in U+E000..U+FFFF (UTF-8 lead
    byte EE or EF): then every object's keys are checked in UTF-16 order.
    """
    if big and not _big_ints_ok(obj):
        return False
    if line.find(b".") >= 0 or line.find(b"-") >= 0 or line.find(b"+") >= 0:
        t = line.translate(_SCAN_TABLE)
        if not _numbers_ok(line, t):
            return False
    if line.isascii() or (line.find(b"\xee") < 0 and line.find(b"\xef") < 0) or not _high_bmp_in_a_key(line):
        return True
    return _keys_in_utf16_order(obj)


def _utf16_sorted(value: Any) -> Any:
    """``value`` with each object's keys in UTF-16 order (RFC 8785's), for orjson to write as they stand."""
    t = type(value)
    if t is dict:
        return {k: _utf16_sorted(value[k]) for k in sorted(value, key=_utf16_key)}
    if t is list:
        return [_utf16_sorted(v) for v in value]
    return value


def _in_utf16_key_order(obj: Any, line: bytes) -> bool:
    """``line`` (no ``\n``) is orjson's form of ``obj`` with each object's keys in UTF-16 order."""
    try:
        return orjson.dumps(_utf16_sorted(obj)) == line
    except (orjson.JSONEncodeError, RecursionError):
        return False


def _sorted(obj: Any) -> tuple[bytes, bool]:
    """orjson's sorted form, and whether it holds integers past 2**53 - 1; b"" past orjson's limits."""
    try:
        return orjson.dumps(obj, option=_SORTED_STRICT), False
    except orjson.JSONEncodeError:
        pass
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), True
    except orjson.JSONEncodeError:
        return b"", True


def is_canonical(obj: Any, line: bytes) -> bool:
    """``line`` (no ``\\n``) is the RFC 8785 form of ``obj``, the value parsed from it.

    False means "not shown here": the caller's reference path decides.
    """
    scan = _scan
    if scan is not None:
        try:
            d = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            return False
        if d == line:
            return scan(line) == _ALL_OK
        return len(d) == len(line) and scan(line) == _KEYS_PART and _in_utf16_key_order(obj, line)
    d, big = _sorted(obj)
    return d == line and _orjson_form_is_canonical(obj, line, big)


def fast_hash(raw: bytes, expect_seq: int, prev: str) -> str | None:
    """The stored hash of ``raw`` (a line with its ``\\n``) when it is a canonical, intact record
    with that ``seq`` and ``prev``; None when anything is off or unproved (the caller's reference
    path then finds and names it).
    """
    if raw[-1:] != b"\n":
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or len(obj) != 5 or "payload" not in obj:
        return None
    seq = obj.get("seq")
    h = obj.get("hash")
    if type(seq) is not int or seq != expect_seq or obj.get("prev") != prev or type(obj.get("kind")) is not str or type(h) is not str:
        return None
    scan = _scan
    if scan is not None:  # the C pass checks every number and key order itself
        try:
            d = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # an integer past 64 bits, or nesting past orjson's limit
            return None
        if len(d) + 1 != len(raw):
            return None
        if raw.startswith(d):
            if scan(raw) != _ALL_OK:
                return None
        elif scan(raw) != _KEYS_PART or not _in_utf16_key_order(obj, raw[:-1]):
            return None
        sha = _BODY_START.copy()
        sha.update(memoryview(raw)[75:-1])
        return h if sha.hexdigest() == h else None
    big = False
    try:
        d = orjson.dumps(obj, option=_SORTED_STRICT)
    except orjson.JSONEncodeError:  # an integer past 2**53 - 1 (or nesting past orjson's limit)
        big = True
        try:
            d = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            return None
    if len(d) + 1 != len(raw) or not raw.startswith(d):
        return None
    if not _orjson_form_is_canonical(obj, raw, big):
        return None
    sha = _BODY_START.copy()
    sha.update(memoryview(raw)[75:-1])  # the line is canonical: after its hash member comes the hashed body
    if sha.hexdigest() != h:
        return None
    return h
