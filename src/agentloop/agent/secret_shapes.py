"""The shapes a held secret takes when a command or a URL re-encodes it, as one linear-time pattern.

A secret printed as is, reversed (``rev``), base64-encoded (``base64``, at any
offset of the bytes around it, standard or URL-safe, wrapped or not), base32
(at any of its five offsets), hex (``xxd -p``, either case, wrapped or not, its
bytes apart or in groups: ``xxd``, ``hexdump -C``, ``od -tx1``, ``0x67,0x68``;
a dump's line is matched by the piece it holds), URL-encoded (every character or
only some, ``%67hp_...``, either hex case, ``+`` for a space) or escaped as JSON
and C write characters (``\\u0067hp_...``, ``\\x67\\x68...``, at will) is the
same secret. ``pattern(values)`` is one RE2 alternation of all those shapes of
all the values; RE2 matches it in time linear in the text, however many secrets
and shapes (``bench``: 10 MB in well under a second). ``name_of`` gives back
the value a match stands for, by undoing the shape.

A piece of a secret is the secret too: ``cut -c``, ``head -c`` or a slice in a
script that leaves ``PIECE`` characters or more of it in one run of word
characters. The whole run around such a piece is the shape (``[word]*piece[word]*``),
so a secret cut in two shows neither half. A piece must look like a secret on its
own (two of lower case, upper case and digits, six different characters), so a
held value that holds ordinary words does not redact them everywhere; a
passphrase of lower-case words has no pieces, only its whole.

Base64 at an offset: the bytes before the secret change the characters that
mix its first bits with theirs, and the bytes after it the last ones; the
characters between depend on the secret alone. For each of the three offsets
(the secret's first byte at position 0, 1 or 2 of a 3-byte group) those middle
characters are a shape.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote_plus

__all__ = ["PIECE", "base32_cores", "base64_cores", "compile_shapes", "name_of", "pieces", "sent_forms", "shape_patterns", "shapes_of"]

PIECE = 10
"""Characters of a held secret, in one run, that count as the secret: 10 random token characters carry some 60
bits, far past chance (the odds that 10 given characters appear in a megabyte of random text are about 1 in
10^12)."""

_WRAP = r"(?:\r?\n)?"
"""Between two characters of an encoded shape: ``base64`` and ``xxd -p`` wrap their lines."""


def base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that depend on ``raw`` alone, at each of the three offsets (standard alphabet)."""
    out = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw + b"\0\0").decode()
        start, end = -(-8 * k // 6), 8 * (k + len(raw)) // 6
        out.append(enc[start:end])
    return out


def _escape(c: str) -> str:
    """One character as an RE2 literal: a letter or digit as is, ASCII punctuation escaped, the rest by code point."""
    if c.isascii() and (c.isalnum() or c == "_"):
        return c
    if c.isascii() and c.isprintable() and c != " ":
        return "\\" + c
    return f"\\x{{{ord(c):x}}}"


def _either_case(text: str) -> str:
    return "".join(f"[{x.upper()}{x.lower()}]" if x.isalpha() else _escape(x) for x in text)


def _url_char(c: str) -> str:
    """One character, as is, %-encoded, or escaped as JSON and C write it (``\\u0067``, ``\\x67``; hex either
    case), a space also as ``+``."""
    encoded = "".join(f"%{b:02X}" for b in c.encode("utf-8"))
    alts = [_escape(c), _either_case(encoded), "\\\\" + _either_case(f"u{ord(c):04x}")]
    if ord(c) < 0x80:
        alts.append("\\\\" + _either_case(f"x{ord(c):02x}"))
    alts += ["\\+"] if c == " " else []
    return "(?:" + "|".join(alts) + ")"


_DUMP_STRIDE = 6
"""Every window of ``PIECE + _DUMP_STRIDE`` (16) characters holds a piece starting at a multiple of this."""

_HEX_SEP = r"(?:\r?\n)?[ \t,;:\-]{0,2}(?:0[xX])?"
"""Between two bytes of hex: ``xxd``'s and ``hexdump``'s spaces, ``0x`` lists, a wrapped line."""


def _hex_bytes(raw: bytes) -> str:
    """``raw`` as hex either case, with or without a separator between bytes (``67 68``, ``6768 705f``, ``0x67,0x68``)."""
    return _HEX_SEP.join(_either_case(f"{b:02x}") for b in raw)


def _b64_char(c: str) -> str:
    return {"+": "[+\\-]", "/": "[/_]"}.get(c, c)


def _kinds(s: str) -> int:
    return sum(any(f(c) for c in s) for f in (str.islower, str.isupper, str.isdigit))


def pieces(value: str) -> list[str]:
    """The runs of ``PIECE`` characters of ``value`` that count as the secret: each that mixes two kinds of
    letter or digit (lower, upper, digit) and six different characters; none when ``value`` is no longer than that,
    or is a file's path (``GOOGLE_APPLICATION_CREDENTIALS``: its pieces are in every path beside it)."""
    if len(value) <= PIECE or value.startswith(("/", "~/", "./", "../")):
        return []  # a path (a credential file's, say) is not a token: its pieces are other paths' too
    out = {value[i:i + PIECE] for i in range(len(value) - PIECE + 1)}
    return sorted(w for w in out if _kinds(w) >= 2 and len(set(w)) >= 6)


def _pieces_pattern(value: str) -> str | None:
    """A run of word characters (and the value's own) holding one of its pieces, as one pattern."""
    ws = pieces(value)
    if not ws:
        return None
    extra = "".join(sorted({_escape(c) for c in value if not (c.isascii() and (c.isalnum() or c in "_-"))}))
    word = f"[A-Za-z0-9_\\-{extra}]*"
    return word + "(?:" + "|".join("".join(_escape(c) for c in w) for w in ws) + ")" + word


def shape_patterns(value: str) -> list[str]:
    """RE2 patterns of ``value``'s shapes: %-encoded at will (which includes as is), reversed, base64, hex, and
    the runs of word characters that hold a piece of it."""
    raw = value.encode("utf-8")
    pats = ["".join(_url_char(c) for c in value), "".join(_escape(c) for c in reversed(value))]
    piece = _pieces_pattern(value)
    if piece is not None:
        pats.append(piece)
    pats += [_WRAP.join(_b64_char(c) for c in core) for core in base64_cores(raw)]
    pats += [_WRAP.join(core) for core in base32_cores(raw)]
    pats.append(_hex_bytes(raw))
    # A dump's line (16 bytes: xxd, hexdump -C, od) holds a piece starting at a multiple of 6: the run of hex
    # bytes around it is the shape. Only those pieces: every piece in hex makes RE2's replacement crawl on hex text.
    known = set(pieces(value))
    ws = [w for w in (value[i:i + PIECE] for i in range(0, len(value) - PIECE + 1, _DUMP_STRIDE)) if w in known]
    if ws:
        byte = "[0-9a-fA-F]{2}"
        alts = "|".join(_hex_bytes(w.encode("utf-8")) for w in ws)
        pats.append(f"(?:\\b(?:{byte})+{_HEX_SEP})*(?:{alts})(?:{_HEX_SEP}(?:{byte})+\\b)*")
    return sorted(pats, key=len, reverse=True)


def base32_cores(raw: bytes) -> list[str]:
    """The base32 characters that depend on ``raw`` alone, at each of the five offsets of a 5-byte group."""
    out = []
    for k in range(5):
        enc = base64.b32encode(b"\0" * k + raw + b"\0" * 5).decode()
        start, end = -(-8 * k // 5), 8 * (k + len(raw)) // 5
        out.append(enc[start:end])
    return out


def shapes_of(value: str) -> list[str]:
    """The plain texts a match of ``value``'s shapes turns back into (``name_of``'s keys)."""
    raw = value.encode("utf-8")
    return [value, value[::-1], *base64_cores(raw), *base32_cores(raw), raw.hex(), *pieces(value)]


def compile_shapes(values: Iterable[str]) -> object:
    """One RE2 pattern of every shape of every value (linear time; RE2 never logs to stderr)."""
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = 64 << 20
    pats = [p for v in values for p in shape_patterns(v)]
    return re2.compile("|".join(f"(?:{p})" for p in sorted(pats, key=len, reverse=True)), opts)


def name_of(match: str, known: Mapping[str, str]) -> str | None:
    """The name of the secret ``match`` is a shape of: the match as is, %-decoded, unwrapped and in the standard
    base64 alphabet, or unwrapped and lower-case hex; None when it is none of them."""
    flat = match.replace("\r", "").replace("\n", "")
    forms = [match, unquote_plus(_unescaped(match)), flat.replace("-", "+").replace("_", "/"), flat.lower(), flat]
    digits = _HEX_NOISE.sub("", flat)
    if len(digits) % 2 == 0 and _HEX_DIGITS.fullmatch(digits):
        forms.append(bytes.fromhex(digits).decode("utf-8", "replace"))
    for form in forms:
        if form in known:
            return known[form]
    for text in (match, forms[-1]):
        for i in range(len(text) - PIECE + 1):  # a run holding a piece (a dump's line holds one in hex)
            if text[i:i + PIECE] in known:
                return known[text[i:i + PIECE]]
    return None


_HEX_NOISE = re.compile(r"0[xX]|[\s,;:\-]")
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")
_CHAR_ESCAPE = re.compile(r"\\(?:[uU]([0-9a-fA-F]{4})|[xX]([0-9a-fA-F]{2}))")


def _unescaped(text: str) -> str:
    """``text`` with JSON's ``\\uXXXX`` and C's ``\\xXX`` escapes written as the characters they stand for."""
    return _CHAR_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def sent_forms(text: str) -> tuple[str, ...]:
    """``text`` a tool sends off this machine (a URL, a query, an MCP argument) as the other end may read it: as
    written, %-decoded once (``+`` as a space) and twice (a base64 shape's ``+``, ``/`` and ``=`` are often
    %-encoded in a query). One place, for WebFetch's own check and the pipeline's (``SecretGuard``)."""
    from urllib.parse import unquote, unquote_plus

    return tuple(dict.fromkeys((text, unquote_plus(text), unquote(unquote(text)))))
