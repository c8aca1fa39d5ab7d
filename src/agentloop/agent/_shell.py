"""Splitting a shell command line into the simple commands it would run, for permission checks.

Rules:

1. Every command the line could run is found: the parts of ``&&``, ``||``,
   ``;``, ``|``, ``&`` and newlines, subshells ``( )`` and groups ``{ }``,
   function bodies (``f() { ...; }``, ``function f { ...; }``: they run when
   called), the branches of ``case`` (its patterns are data, but their
   substitutions run), command substitutions ``$( )`` and backticks (also inside double
   quotes and inside ``$(( ))``),
   process substitutions ``<( )`` ``>( )``, and the keywords of ``if``,
   ``while``... are peeled off.
2. Words are unquoted the way the shell would (single, double, ``$'...'``
   and backslashes), so ``r\\m``, ``"rm"`` and ``$'\\x72m'`` are all ``rm``.
3. Wrappers that run another command (``sudo``, ``env``, ``VAR=x``,
   ``nice``, ``nohup``, ``timeout``, ``time``, ``command``, ``exec``,
   ``xargs``, ``stdbuf``...) are unwrapped into more views of the same
   command; ``bash -c``/``sh -c``/``eval`` strings are parsed as command
   lines of their own. Deny and ask rules are tried on every view; allow
   rules only on views reached through wrappers that add no power
   (``sudo``, ``env`` and assignments do add power).
4. What cannot be parsed (an open quote, an unbalanced parenthesis, a
   heredoc with substitutions...) raises ``ShellSyntax``: the caller never
   allows such a line by rule and checks its crude pieces against deny rules.
"""

from __future__ import annotations

import codecs
import os
import re
import warnings
from dataclasses import dataclass, field

__all__ = ["Unit", "ShellSyntax", "crude_pieces", "units"]

MAX_DEPTH = 8


class ShellSyntax(ValueError):
    """The command line cannot be split with confidence."""


@dataclass
class Simple:
    words: list[str]
    raw: str


@dataclass
class Unit:
    """One command the line would run, seen through its wrappers."""

    views: list[tuple[str, bool]] = field(default_factory=list)
    """(command text, may an allow rule approve it through this view)."""
    container: bool = False
    """A transparent ``sh -c``-style wrapper: approved when its inner commands are."""


_OPERATOR_CHARS = ";&|\n"
_RESERVED_LEAD = {"!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "fi", "done", "esac"}
_HEADERS = {"for", "select", "case", "function"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_HARMLESS_REDIRECT = re.compile(r"^(?:[012]?>&[012]|[012]?>/dev/null|&>/dev/null|[012]?>>/dev/null)$")


class _Parser:
    def __init__(self, text: str, depth: int):
        if depth > MAX_DEPTH:
            raise ShellSyntax("commands nested too deeply")
        self.s = text
        self.n = len(text)
        self.depth = depth
        self.out: list[Simple] = []

    def parse(self, i: int = 0, close: str | None = None) -> int:
        """Parse from ``i`` until ``close`` (or the end); returns the index after it."""
        s, n = self.s, self.n
        words: list[str] = []
        word: list[str] = []
        in_word = False
        quoted = False
        start = i
        heredocs: list[tuple[str, bool, bool]] = []
        pending_heredoc: str | None = None
        cases = 0  # "case ... in" open here; their patterns are data, their bodies commands
        want_pattern = False

        def end_word() -> None:
            nonlocal word, in_word, quoted, pending_heredoc, cases, want_pattern
            if in_word:
                w = "".join(word)
                if not quoted and w == "in" and _peel(words)[:1] == ["case"] and len(_peel(words)) == 2:
                    cases += 1
                    want_pattern = True
                elif not quoted and w == "esac" and cases and not _peel(words):
                    cases -= 1
                if pending_heredoc is not None:
                    heredocs.append((w, pending_heredoc == "-", quoted))
                    pending_heredoc = None
                elif w in ("<<", "<<-"):
                    pending_heredoc = "-" if w == "<<-" else ""
                elif w.startswith("<<") and not w.startswith("<<<"):
                    rest = w[3:] if w.startswith("<<-") else w[2:]
                    heredocs.append((rest, w.startswith("<<-"), quoted))
                words.append(w)
            word = []
            in_word = False
            quoted = False

        def end_command(at: int) -> None:
            end_word()
            if words:
                self.out.append(Simple(list(words), s[start:at].strip()))
            words.clear()

        while i < n:
            if want_pattern:
                end_command(i)  # "case word in": a header, no command
                want_pattern = False
                i, closed = self._case_pattern(i)
                cases -= closed
                start = i
                continue
            c = s[i]
            if c == ";" and cases and s.startswith((";;", ";&"), i):
                end_command(i)
                i += 3 if s.startswith(";;&", i) else 2
                want_pattern = True
                continue
            if c in " \t\r":
                end_word()
                i += 1
                continue
            if c == "\\":
                if i + 1 < n and s[i + 1] == "\n":
                    i += 2
                    continue
                if i + 1 < n:
                    word.append(s[i + 1])
                in_word = True
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise ShellSyntax("unterminated single quote")
                word.append(s[i + 1 : j])
                in_word = True
                quoted = True
                i = j + 1
                continue
            if c == '"':
                i = self._double(i + 1, word)
                in_word = True
                quoted = True
                continue
            if c == "`":
                i = self._backtick(i, word, in_double=False)
                in_word = True
                continue
            if c == "$" and i + 1 < n:
                nxt = s[i + 1]
                if nxt == "'":
                    j = i + 2
                    while j < n and s[j] != "'":
                        j += 2 if s[j] == "\\" else 1
                    if j >= n:
                        raise ShellSyntax("unterminated $'...' quote")
                    word.append(_ansi_c(s[i + 2 : j]))
                    in_word = True
                    i = j + 1
                    continue
                if nxt == "(":
                    i = self._dollar_paren(i, word)
                    in_word = True
                    continue
                if nxt == "{":
                    j = s.find("}", i + 2)
                    if j < 0:
                        raise ShellSyntax("unterminated ${")
                    if "$(" in s[i:j] or "`" in s[i:j]:
                        raise ShellSyntax("command substitution inside ${...}")
                    word.append(s[i : j + 1])
                    in_word = True
                    i = j + 1
                    continue
            if c in "<>" and i + 1 < n and s[i + 1] == "(" and not word:
                sub = _Parser(s, self.depth + 1)
                j = sub.parse(i + 2, ")")
                self.out.extend(sub.out)
                word.append(s[i:j])
                in_word = True
                i = j
                continue
            if c == "#" and not in_word:
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "(":
                end_word()
                k = i + 1
                while k < n and s[k] in " \t":
                    k += 1
                head = _peel(words)
                if k < n and s[k] == ")" and (len(head) == 1 or (not head and words[-2:-1] == ["function"])):
                    # "name()" or "function name()": a function's header. Its body (a group
                    # or a subshell) is parsed as the commands it is: they run when it is called.
                    words.clear()
                    i = k + 1
                    start = i
                    continue
                # a subshell may follow keywords ("{ (a); }", "if (a); then", "! (a)") and
                # function headers ("function f (a)"), nothing else
                if head:
                    raise ShellSyntax("unexpected '(' (arrays and the like are not checked)")
                end_command(i)
                sub = _Parser(s, self.depth + 1)
                j = sub.parse(i + 1, ")")
                self.out.extend(sub.out)
                i = j
                start = i
                continue
            if c == ")":
                if close != ")":
                    raise ShellSyntax("unbalanced ')'")
                end_command(i)
                if heredocs:
                    raise ShellSyntax("a heredoc inside a substitution")
                return i + 1
            if c == "&" and (
                (word and word[-1].endswith((">", "<"))) or (i + 1 < n and s[i + 1] == ">")
            ):
                word.append(c)
                in_word = True
                i += 1
                continue
            if c in _OPERATOR_CHARS:
                end_command(i)
                i += 1
                if c == "\n":
                    if heredocs:
                        i = self._skip_heredocs(i, heredocs)
                        heredocs = []
                else:
                    while i < n and s[i] in "&|;":
                        i += 1
                start = i
                continue
            word.append(c)
            in_word = True
            i += 1
        if close is not None:
            raise ShellSyntax(f"missing '{close}'")
        end_command(n)
        if heredocs:
            raise ShellSyntax("a heredoc with no body")
        return n

    def _skip_heredocs(self, i: int, heredocs: list[tuple[str, bool, bool]]) -> int:
        s = self.s
        for delim, strip_tabs, quoted in heredocs:
            while True:
                if i >= self.n:
                    raise ShellSyntax(f"heredoc {delim!r} is never closed")
                j = s.find("\n", i)
                line = s[i:] if j < 0 else s[i:j]
                i = self.n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                if not quoted and ("$(" in line or "`" in line):
                    raise ShellSyntax("command substitution inside a heredoc")
        return i

    def _case_pattern(self, i: int) -> tuple[int, bool]:
        """Past the next ``pattern)`` of a case (its substitutions run), or past ``esac`` (True)."""
        s, n = self.s, self.n
        while i < n and s[i] in " \t\r\n":
            i += 1
        if s.startswith("esac", i) and (i + 4 == n or s[i + 4] in " \t\r\n;&|)"):
            return i + 4, True
        if i < n and s[i] == "(":
            i += 1
        scratch: list[str] = []
        while i < n:
            c = s[i]
            if c == ")":
                return i + 1, False
            if c == "\\":
                i += 2
            elif c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise ShellSyntax("unterminated single quote")
                i = j + 1
            elif c == '"':
                i = self._double(i + 1, scratch)
            elif c == "`":
                i = self._backtick(i, scratch, in_double=False)
            elif s.startswith("$(", i):
                i = self._dollar_paren(i, scratch)
            elif c in ";&\n(":
                break
            else:
                i += 1
        raise ShellSyntax("a case pattern without its ')'")

    def _double(self, i: int, word: list[str]) -> int:
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt in '"\\$`':
                    word.append(nxt)
                elif nxt != "\n":
                    word.append(c + nxt)
                i += 2
                continue
            if c == "`":
                i = self._backtick(i, word, in_double=True)
                continue
            if c == "$" and i + 1 < n and s[i + 1] == "(":
                i = self._dollar_paren(i, word)
                continue
            word.append(c)
            i += 1
        raise ShellSyntax("unterminated double quote")

    def _backtick(self, i: int, word: list[str], *, in_double: bool) -> int:
        """A backtick substitution at ``i``: its commands are checked too, its text kept in ``word``.

        Inside one, a backslash escapes `` ` ``, ``$`` and ``\\`` (and ``"`` within double quotes).
        Returns where it ends.
        """
        s = self.s
        j = self._backtick_end(i + 1)
        inner = re.sub(r"\\([`$\\\"])" if in_double else r"\\([`$\\])", r"\1", s[i + 1 : j])
        _Parser(inner, self.depth + 1)._into(self.out)
        word.append(s[i : j + 1])
        return j + 1

    def _dollar_paren(self, i: int, word: list[str]) -> int:
        """``$((...))`` (arithmetic, kept as text) or ``$(...)`` (its commands checked too) at ``i``."""
        s = self.s
        if i + 2 < self.n and s[i + 2] == "(":
            j = _arith_end(s, i + 3)
            if j is not None:
                # the expression's own substitutions run: "$(( $(b) + 1 ))" runs b
                k = i + 3
                scratch: list[str] = []
                while k < j - 1:
                    if s.startswith("$(", k):
                        k = self._dollar_paren(k, scratch)
                    elif s[k] == "`":
                        k = self._backtick(k, scratch, in_double=False)
                    else:
                        k += 1
                if k > j - 1:
                    raise ShellSyntax("a substitution runs past the end of $((...))")
                word.append(s[i : j + 1])
                return j + 1
            # its first "(" closed but not by "))": bash reads "$( (...)...)", a command substitution
        sub = _Parser(s, self.depth + 1)
        j = sub.parse(i + 2, ")")
        self.out.extend(sub.out)
        word.append(s[i:j])
        return j

    def _backtick_end(self, i: int) -> int:
        s, n = self.s, self.n
        while i < n:
            if s[i] == "\\":
                i += 2
                continue
            if s[i] == "`":
                return i
            i += 1
        raise ShellSyntax("unterminated backtick")

    def _into(self, out: list[Simple]) -> None:
        self.parse()
        out.extend(self.out)


def _arith_end(s: str, i: int) -> int | None:
    """The index of the last ")" of the ``$((...))`` whose body starts at ``i``, or None when
    its first "(" is closed by a lone ")": bash then reads a command substitution, as
    ``$(( a ); b)``."""
    depth = 2
    while i < len(s):
        if s[i] == "(":
            depth += 1
        elif s[i] == ")":
            depth -= 1
            if depth == 1:
                return i + 1 if i + 1 < len(s) and s[i + 1] == ")" else None
        i += 1
    raise ShellSyntax("unterminated $((")


def _ansi_c(body: str) -> str:
    try:
        with warnings.catch_warnings():
            # "\;" and other escapes bash keeps literally warn as invalid in Python.
            warnings.simplefilter("ignore", DeprecationWarning)
            return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


def _peel(words: list[str]) -> list[str]:
    """``words`` without the keywords and ``function name`` headers in front of a command."""
    i = 0
    while i < len(words):
        if words[i] in _RESERVED_LEAD:
            i += 1
        elif words[i] == "function" and i + 1 < len(words):
            i += 2  # "function name { first; ...": the header goes, the body's first command stays
        elif words[i] == "time":
            i += 2 if words[i + 1 : i + 2] == ["-p"] else 1  # bash's keyword: "time while a; do..."
        else:
            break
    return words[i:]


def split(command: str, depth: int = 0) -> list[Simple]:
    """The simple commands of a command line, words unquoted, keywords peeled off.

    Raises:
        ShellSyntax: the line cannot be split with confidence.
    """
    p = _Parser(command, depth)
    p.parse()
    out: list[Simple] = []
    for cmd in p.out:
        words = _peel(cmd.words)
        if not words or words[0] in _HEADERS:
            continue
        if words[0].startswith("[["):
            continue
        out.append(Simple(words, cmd.raw))
    return out


# --- wrappers ---------------------------------------------------------------

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"}
# wrapper -> (options that take a value, adds power?)
_WRAPPERS: dict[str, tuple[frozenset[str], bool]] = {
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}), True),
    "doas": (frozenset({"-u", "-C"}), True),
    "env": (frozenset({"-u", "-C", "--unset", "--chdir", "-S", "--split-string"}), True),
    "nice": (frozenset({"-n", "--adjustment"}), False),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u"}), False),
    "nohup": (frozenset(), False),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), False),
    "command": (frozenset(), False),
    "builtin": (frozenset(), False),
    "exec": (frozenset({"-a"}), False),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), False),
    "setsid": (frozenset(), False),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), False),
    "xargs": (
        frozenset({"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a", "--max-args",
                   "--max-procs", "--delimiter", "--arg-file", "--replace", "--max-lines"}),
        False,
    ),
    "watch": (frozenset({"-n", "-d", "--interval"}), False),
    "chronic": (frozenset(), False),
    "unbuffer": (frozenset(), False),
}


def _strip_options(words: list[str], takes_value: frozenset[str]) -> list[str]:
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            return words[i + 1 :]
        if not w.startswith("-") or w == "-":
            break
        if w in takes_value:
            i += 2
            continue
        i += 1
    return words[i:]


def _join(words: list[str]) -> str:
    return " ".join(w for w in words if not _HARMLESS_REDIRECT.match(w))


def unit_views(words: list[str], depth: int, extra: list[Unit]) -> Unit:
    """Every view of one simple command; inner ``sh -c`` lines are appended to ``extra``."""
    unit = Unit()
    allow_ok = not _opaque(words[0]) if words else True
    seen: set[tuple[str, bool]] = set()
    found_exec: list[bool] = []

    def put(view: tuple[str, bool]) -> None:
        if view not in seen:
            seen.add(view)
            unit.views.append(view)

    def add(ws: list[str], ok: bool) -> None:
        if not ws:
            return
        put((_join(ws), ok))
        base = os.path.basename(ws[0])
        if base != ws[0] and base:
            put((_join([base, *ws[1:]]), False))
        # What the shell would make of ${IFS} and a {a,b} command word,
        # for deny rules only (rm${IFS}-rf, {rm,-rf,/}).
        joined = " ".join(ws)
        if "$IFS" in joined or "${IFS}" in joined:
            put((" ".join(joined.replace("${IFS}", " ").replace("$IFS", " ").split()), False))
        brace = _BRACE_WORD.match(ws[0])
        if brace:
            put((_join([*brace.group(1).split(","), *ws[1:]]), False))
        if os.path.basename(ws[0]) == "find" and not found_exec:
            found_exec.append(True)
            for inner in _find_exec(ws):
                extra.append(unit_views(inner, depth + 1, extra))

    add(words, allow_ok)
    for _ in range(32):
        if not words:
            break
        if _ASSIGN.match(words[0]):
            while words and _ASSIGN.match(words[0]):
                words = words[1:]
            allow_ok = False
            add(words, allow_ok)
            continue
        head = os.path.basename(words[0])
        if head in _SHELLS or head == "eval":
            script = _shell_script(words) if head != "eval" else " ".join(words[1:])
            if script is None:
                break
            if depth + 1 > MAX_DEPTH:
                raise ShellSyntax("commands nested too deeply")
            for inner in split(script, depth + 1):
                extra.append(unit_views(inner.words, depth + 1, extra))
            unit.container = allow_ok
            break
        spec = _WRAPPERS.get(head)
        if spec is None:
            break
        takes_value, power = spec
        rest = _strip_options(words[1:], takes_value)
        if head == "env":
            split_string = _env_split_string(words[1:])
            if split_string is not None:
                rest = split_string
            while rest and _ASSIGN.match(rest[0]):
                rest = rest[1:]
        if head == "timeout" and rest:
            rest = rest[1:]
        if head in ("nice",) and words[1:2] and re.match(r"^-\d+$", words[1]):
            rest = _strip_options(words[2:], takes_value)
        if power or (rest and _opaque(rest[0])):
            allow_ok = False
        words = rest
        add(words, allow_ok)
    return unit


_BRACE_WORD = re.compile(r"^\{([^{}]*,[^{}]*)\}$")
_OPAQUE = re.compile(r"[$`*?\[]|\{[^{}]*,[^{}]*\}")


def _opaque(word: str) -> bool:
    """A command word the shell would expand ($X, globs, braces): no rule can know what it runs."""
    return bool(_OPAQUE.search(word))


def _find_exec(words: list[str]) -> list[list[str]]:
    """The commands of ``find ... -exec CMD {} ;`` (also -execdir, -ok, -okdir)."""
    out: list[list[str]] = []
    i = 0
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(words[i + 1 : j])
            i = j
        i += 1
    return out


def _env_split_string(args: list[str]) -> list[str] | None:
    for i, w in enumerate(args):
        if w in ("-S", "--split-string") and i + 1 < len(args):
            return args[i + 1].split() + args[i + 2 :]
        if w.startswith("-S") and len(w) > 2:
            return w[2:].split() + args[i + 1 :]
        if not w.startswith("-"):
            return None
    return None


def _shell_script(words: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (also ``-lc``, ``-ec``...), or None for other uses."""
    i = 1
    while i < len(words):
        w = words[i]
        if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
            return words[i + 1] if i + 1 < len(words) else None
        if w in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if w.startswith(("-", "+")):
            i += 1
            continue
        return None
    return None


def units(command: str) -> list[Unit]:
    """One ``Unit`` per command the line would run (inner ``sh -c`` commands included).

    Raises:
        ShellSyntax: the line cannot be split with confidence.
    """
    out: list[Unit] = []
    for simple in split(command):
        extra: list[Unit] = []
        u = unit_views(list(simple.words), 0, extra)
        raw = " ".join(simple.raw.split())
        if raw and all(v[0] != raw for v in u.views):
            u.views.append((raw, u.views[0][1] if u.views else False))
        out.append(u)
        out.extend(extra)
    return out


_CRUDE = re.compile(r"\$\(|`|\(|\)|&&|\|\||[;&|\n]")


def crude_pieces(command: str) -> list[str]:
    """A line cut at every operator-like character, for deny checks on lines that do not parse.

    Each piece, its quotes and backslashes dropped, is seen through its
    wrappers as a parsed command is (``nice -n 5 rm x`` gives ``rm x`` too).
    """
    pieces: dict[str, None] = {}
    for p in _CRUDE.split(command):
        try:
            found = units(p)  # a piece that parses on its own ("x) sh -c 'rm a'" of a case) is read as one
        except ShellSyntax:
            words = _peel(re.sub(r"[\"'\\]", "", p).split())
            if not words:
                continue
            extra: list[Unit] = []
            try:
                found = [unit_views(words, 0, extra), *extra]
            except ShellSyntax:
                pieces[" ".join(words)] = None
                continue
        pieces.update(dict.fromkeys(text for u in found for text, _ in u.views if text))
    return list(pieces)
