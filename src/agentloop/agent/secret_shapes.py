"""The shapes a held secret takes when a command or a URL re-encodes it, as one linear-time pattern.

A secret printed as is, reversed (``rev``), base64-encoded (``base64``, at any
offset of the bytes around it, standard or URL-safe, wrapped or not), hex
(``xxd -p``, ``od``-free either case, wrapped or not) or URL-encoded (every
character or only some, ``%67hp_...``, either hex case, ``+`` for a space)
is the same secret. ``pattern(values)`` is one RE2 alternation of all those
shapes of all the values; RE2 matches it in time linear in the text, however
many secrets and shapes (``bench``: 10 MB in well under a second). ``name_of``
gives back the value a match stands for, by undoing the shape.

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
from collections.abc import Iterable, Mapping
from urllib.parse import unquote_plus

__all__ = ["PIECE", "base64_cores", "compile_shapes", "name_of", "pieces", "shape_patterns", "shapes_of"]

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


def _url_char(c: str) -> str:
    """One character, as is or %-encoded (either hex case), a space also as ``+``."""
    encoded = "".join(f"%{b:02X}" for b in c.encode("utf-8"))
    either = "".join(f"[{x}{x.lower()}]" if x.isalpha() else _escape(x) for x in encoded)
    alts = [_escape(c), either] + (["\\+"] if c == " " else [])
    return "(?:" + "|".join(alts) + ")"


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
    pats.append(_WRAP.join(f"[{x}{x.upper()}]" if x.isalpha() else x for x in raw.hex()))
    return sorted(pats, key=len, reverse=True)


def shapes_of(value: str) -> list[str]:
    """The plain texts a match of ``value``'s shapes turns back into (``name_of``'s keys)."""
    raw = value.encode("utf-8")
    return [value, value[::-1], *base64_cores(raw), raw.hex(), *pieces(value)]


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
    for form in (match, unquote_plus(match), flat.replace("-", "+").replace("_", "/"), flat.lower()):
        if form in known:
            return known[form]
    for i in range(len(match) - PIECE + 1):  # a run holding a piece
        if match[i:i + PIECE] in known:
            return known[match[i:i + PIECE]]
    return None
