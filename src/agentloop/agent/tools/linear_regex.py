"""Regular expressions that run in linear time, for patterns the model or a repository writes.

Python's ``re`` backtracks: ``(\\w+\\s*)*\\(`` against ten words, or the glob
``*a*a*a*a*a*a*a*a*a*b`` against a 200-character name, runs for minutes at
full CPU. Grep and Glob therefore compile through RE2 (``google-re2``),
whose automata match in time linear in the input, whatever the pattern.

RE2's syntax is the one ripgrep's default engine takes, which is what Claude
Code's Grep accepts: no look-around and no backreferences (a clear error
says so), ``\\z`` for the end of the text. ``\\w``, ``\\d`` and ``\\s`` are
ASCII classes; ``\\pL`` and friends name Unicode ones.
"""

from __future__ import annotations

from typing import Any, Protocol

import re2

__all__ = ["Matcher", "RegexError", "compile_linear", "quote"]


class Matcher(Protocol):
    """What Grep and Glob use of a compiled pattern (str or UTF-8 bytes input)."""

    def search(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...

    def match(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...

    def finditer(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...


class RegexError(ValueError):
    """A pattern RE2 cannot compile; the message says why in one line."""


_UNSUPPORTED = ("(?=", "(?!", "(?<=", "(?<!")


def compile_linear(pattern: str, *, flags: str = "", never_nl: bool = False) -> Matcher:
    """``pattern`` compiled by RE2, with inline ``flags`` (``"i"``, ``"m"``, ``"s"``).

    ``never_nl`` keeps every match within one line (a class such as ``\\s``
    or ``[^x]`` no longer takes a newline), as ripgrep does unless asked for
    multiline search.

    Raises:
        RegexError: the pattern is not valid RE2 syntax.
    """
    options = re2.Options()
    options.never_nl = never_nl
    options.max_mem = 64 << 20
    source = f"(?{flags}){pattern}" if flags else pattern
    try:
        rx: Matcher = re2.compile(source, options)
    except re2.error as exc:
        why = str(exc) or "not a valid pattern"
        if any(u in pattern for u in _UNSUPPORTED) or "\\1" in pattern:
            why += " (look-around and backreferences are not supported: the syntax is ripgrep's)"
        raise RegexError(why) from None
    return rx


def quote(text: str) -> str:
    """``text`` as an RE2 pattern that matches it literally."""
    quoted: str = re2.escape(text)
    return quoted
