"""Regular expressions that run in linear time, for patterns the model or a repository writes.

Python's ``re`` backtracks: ``(\\w+\\s*)*\\(`` against ten words, or the glob
``*a*a*a*a*a*a*a*a*a*b`` against a 200-character name, runs for minutes at
full CPU. Grep and Glob therefore compile through RE2 (``google-re2``),
whose automata match in time linear in the input, whatever the pattern.

RE2's syntax is the one ripgrep's default engine takes, which is what Claude
Code's Grep accepts: no look-around and no backreferences (a clear error
says so), ``\\z`` for the end of the text. ``\\w``, ``\\d`` and ``\\s`` are
ASCII classes; ``\\pL`` and friends name Unicode ones.

RE2 never writes to the process's stderr (``log_errors`` off: its own log
lines, such as "DFA out of memory", would reach the user raw), and a pattern
too large to match in bounded memory and time (longer than ``MAX_PATTERN``
characters, or compiling to more than ``MAX_PROGRAM`` instructions) is a
``RegexError`` of one line, before anything is searched.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["MAX_PATTERN", "MAX_PROGRAM", "Matcher", "RegexError", "compile_linear", "quote"]


class Matcher(Protocol):
    """What Grep and Glob use of a compiled pattern (str or UTF-8 bytes input)."""

    def search(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...

    def match(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...

    def finditer(self, text: Any, pos: int = ..., endpos: int = ...) -> Any: ...


class RegexError(ValueError):
    """A pattern RE2 cannot compile; the message says why in one line."""


_UNSUPPORTED = ("(?=", "(?!", "(?<=", "(?<!")

MAX_PATTERN = 100_000
"""Characters: a longer pattern is refused before it is compiled (compiling a 1 MB one takes seconds)."""
MAX_PROGRAM = 3_000
"""Instructions of the compiled pattern. RE2's DFA can need memory that grows with the square of the
program (a literal of 5,000 ``a`` against a line of ``a``: 5,000 states of 5,000 instructions each);
past its ``max_mem`` it falls back to matching in time proportional to the text times the pattern
(55 s for that literal against 200 KB). Below this bound the DFA fits in 64 MiB."""


def compile_linear(pattern: str, *, flags: str = "", never_nl: bool = False) -> Matcher:
    """``pattern`` compiled by RE2, with inline ``flags`` (``"i"``, ``"m"``, ``"s"``).

    ``never_nl`` keeps every match within one line (a class such as ``\\s``
    or ``[^x]`` no longer takes a newline), as ripgrep does unless asked for
    multiline search.

    Raises:
        RegexError: the pattern is not valid RE2 syntax.
    """
    if len(pattern) > MAX_PATTERN:
        raise RegexError(f"the pattern is too large: {len(pattern)} characters (at most {MAX_PATTERN})")
    import re2  # deferred: RE2 loads with the first pattern, not with the tools at every start

    options = re2.Options()
    options.never_nl = never_nl
    options.max_mem = 64 << 20
    options.log_errors = False  # RE2's log lines would reach the user's terminal raw
    source = f"(?{flags}){pattern}" if flags else pattern
    try:
        rx: Any = re2.compile(source, options)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        why = (text.strip() or "not a valid pattern").splitlines()[0][:300]
        if any(u in pattern for u in _UNSUPPORTED) or "\\1" in pattern:
            why += " (look-around and backreferences are not supported: the syntax is ripgrep's)"
        raise RegexError(why) from None
    size = max(int(getattr(rx, "programsize", 0)), int(getattr(rx, "reverseprogramsize", 0)))
    if size > MAX_PROGRAM:
        raise RegexError(f"the pattern is too large: it compiles to {size} instructions (at most {MAX_PROGRAM}); make it shorter")
    matcher: Matcher = rx
    return matcher


def quote(text: str) -> str:
    """``text`` as an RE2 pattern that matches it literally."""
    import re2

    quoted: str = re2.escape(text)
    return quoted
