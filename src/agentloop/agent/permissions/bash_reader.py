"""Splitting a shell command line into the simple commands it would run, for permission checks.

Rules:

1. Every command the line could run is found: the parts of ``&&``, ``||``,
   ``;``, ``|``, ``&`` and newlines, subshells ``( )`` and groups ``{ }``,
   function bodies (``f() { ...; }``, ``function f { ...; }``: they run when
   called), the branches of ``case`` (its patterns are data, but their
   substitutions run), command substitutions ``$( )`` and backticks (also inside double
   quotes, inside ``${...}`` up to its real end, and inside ``$(( ))``),
   process substitutions ``<( )`` ``>( )``, and the keywords of ``if``,
   ``while``, ``time``, ``coproc``... are peeled off. Redirections are read as bash
   reads them (``>out rm v`` runs ``rm v``); ``[[ ... ]]`` and ``(( ... ))`` are
   read as the conditions and arithmetic they are.
2. Words are unquoted the way the shell would (single, double, ``$'...'``
   and backslashes), so ``r\\m``, ``"rm"`` and ``$'\\x72m'`` are all ``rm``; a word
   the shell would still expand (``$X``, ``$(...)``, a glob, ``{a,b}``) is not literal.
3. Wrappers that run another command (``sudo``, ``env``, ``VAR=x``,
   ``nice``, ``nohup``, ``timeout``, ``time``, ``command``, ``exec``, ``flock``,
   ``taskset``, ``chrt``, ``ionice``, ``setsid``, ``unshare``, ``busybox``,
   ``script -c``, ``watch``, ``stdbuf``...) are unwrapped into more views of the same
   command; ``bash -c``/``sh -c`` (with any options), ``eval``, ``trap`` and
   ``watch`` strings are parsed as command lines of their own. Deny and ask rules
   are tried on every view; allow rules only on views reached through wrappers
   that add no power (``sudo``, ``env`` and assignments do add power). ``env`` is
   read as GNU env reads it (``-S`` strings in every spelling, bundled or
   abbreviated); ``setarch`` and its architecture names and ``ssh-agent`` are
   wrappers; git's subcommand is found past its global options. A chain of more
   than ``MAX_WRAPPERS`` wrappers is opaque.
4. A part whose command cannot be known from the text is *opaque*, with a reason:
   a computed, globbed or brace-expanded command word, ``"$@"``, a shell reading
   its script from stdin, a here-document or a file, ``source``, aliases,
   ``eval`` of a computed string, interpreters' inline code (``python3 -c``,
   ``perl -e``, ``node -e``...), ``git -c``, ``find -exec``, ``xargs``, wrappers
   with options this reader does not know, and text that bash evaluates as code
   while the line can put unknown text there (arithmetic, ``[[ -eq ]]``,
   ``test -v``, ``printf -v``, ``read``, subscripts). The caller never allows an
   opaque line by a pattern rule and asks about it whenever Bash deny or ask
   rules exist. Programs that run command strings they are given (``vim -c``,
   ``make``, ``tar --to-command``, ``sort --compress-program``: ``_runner_reason``)
   are opaque too, but mark their unit's ``runner``: an allow rule naming that
   program may approve them. An abbreviated long option counts as every option
   it may abbreviate (``may_abbreviate``).
6. Time is linear in the line's length; past ``MAX_COMMANDS`` commands or
   ``MAX_WORDS`` words the line is ``TooLarge`` and not read further.
5. What cannot be parsed (an open quote, an unbalanced parenthesis, a
   heredoc with substitutions...) raises ``ShellSyntax``: the caller never
   allows such a line by rule and checks its crude pieces against deny rules.
"""

from __future__ import annotations

import codecs
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Analysis", "Unit", "ShellSyntax", "analyze", "crude_pieces", "units"]

MAX_DEPTH = 8
MAX_COMMANDS = 5_000
"""A line holding more simple commands than this is not read further: it is opaque (``TooLarge``)."""
MAX_WORDS = 20_000
"""Nor more words than this (``TooLarge``): a decision stays well under a second whatever the line."""
MAX_WRAPPERS = 32
"""Wrappers followed in one command (``env env ... rm``); a deeper chain is opaque."""
MAX_KEYWORDS = 64
"""Keywords in front of one command (``! ! ... a``) this reader peels; more is refused."""


class ShellSyntax(ValueError):
    """The command line cannot be split with confidence."""


class TooLarge(ShellSyntax):
    """The line holds more commands than this reader reads (``MAX_COMMANDS``): it is opaque as a whole."""


@dataclass
class Simple:
    words: list[str]
    raw: str
    lits: list[bool] = field(default_factory=list)
    """Per word: True when the shell expands nothing in it (no $, no backtick, no glob, no braces)."""
    redirects: list[tuple[str, str]] = field(default_factory=list)
    """(operator, target) of each redirection, in order."""
    redirect_lits: list[bool] = field(default_factory=list)
    """Per redirection: True when the shell expands nothing in its target (``< $HOME/x``, ``< src/*/x`` do)."""
    unsure: frozenset[int] = frozenset()
    """Indices of words whose brace expansion the text here cannot show: a quoted part beside braces
    (``{"}",e}``, ``{\\{,e}``); ``words`` holds them with their quoting gone."""


@dataclass
class Unit:
    """One command the line would run, seen through its wrappers."""

    views: list[tuple[str, bool]] = field(default_factory=list)
    """(command text, may an allow rule approve it through this view)."""
    container: bool = False
    """A transparent ``sh -c``-style wrapper: approved when its inner commands are."""
    opaque: list[str] = field(default_factory=list)
    """Why bash may run something here that the text does not show."""
    simple: Simple | None = None
    """The simple command as written (before wrappers were peeled)."""
    writes: list[str] = field(default_factory=list)
    """The redirections of the command that write a file (``>victim``, ``1<>f``, ``>&f``): an allow
    rule approves them only when its pattern shows a redirection itself."""
    runner: str | None = None
    """A program that runs command strings it is given (``vim -c``, ``tar --to-command``, ``make``): the
    unit is opaque, but an allow rule whose pattern names this program may still approve it."""
    exact_only: list[str] = field(default_factory=list)
    """A wrapper's own text (``timeout 5 npm test``): a rule without ``*`` naming exactly this text
    allows it, but ``Bash(timeout:*)`` does not approve whatever the wrapper runs."""


@dataclass
class _Ctx:
    """What the whole line does with data, shared by every nested parser."""

    evals: list[str] = field(default_factory=list)
    """Places where bash evaluates text as code (arithmetic, subscripts, ``-v``...)."""
    taint: list[str] = field(default_factory=list)
    """Places where text the rules cannot see enters variables."""
    code_words: list[str] = field(default_factory=list)
    """Literal words holding code-like text (``'a[$(rm v)]'``)."""
    loose: list[tuple[str, str]] = field(default_factory=list)
    """Redirections of no simple command: of a compound (``(x) >t``, ``{ x; } >t``, ``done >t``) or bare (``>t``)."""
    commands: int = 0
    words: int = 0
    """Simple commands read so far (the whole line, nested ones included), bounded by ``MAX_COMMANDS``."""


@dataclass
class Analysis:
    """A parsed line: its commands, and why any of it is opaque."""

    units: list[Unit]
    opaque: list[str]
    code_words: list[str]
    line_opaque: list[str] = field(default_factory=list)
    """The reasons that belong to the line, not to one of its units (text evaluated as code)."""
    loose_redirects: list[tuple[str, str]] = field(default_factory=list)
    """(operator, target) of redirections that belong to a compound command or to none: no unit shows them."""


_OPERATOR_CHARS = ";&|\n"
_RESERVED_LEAD = {"!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "fi", "done", "esac"}
_HEADERS = {"for", "select", "case", "function"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_HARMLESS_REDIRECT = re.compile(r"^(?:[012]?>&[012]|[012]?>/dev/null|&>/dev/null|[012]?>>/dev/null)$")
_REDIR_OP = re.compile(r"<<<|<<-|<<|<>|<&|<|>>|>&|>\||>")
_FD_WORD = re.compile(r"^(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})$")
_GLOB_SHAPE = re.compile(r"[*?]|\[.*\]|\{[^{}]*(?:,|\.\.)[^{}]*\}")
"""Unquoted characters that make a word a pattern (``[]-f]``, ``[!]]``: a ``]`` first in brackets is a member)."""
_CODE_TEXT = re.compile(r"\$\(|`|\$\{|\$\[")
_IDENT_IN_ARITH = re.compile(r"(?<![\w#])[A-Za-z_]")
_NAME_START = re.compile(r"[A-Za-z_0-9@*#?$!-]")
_PARAM_PLAIN = re.compile(r"[^\\'\"`$}]+")
_ARITH_PLAIN = re.compile(r"[^$`]+")
_DOUBLE_PLAIN = re.compile(r"[^\\\"`$]+")
_PARENS = re.compile(r"[()]")
_BACKTICK_PLAIN = re.compile(r"[^\\`]+")
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_./,:=+@%~^*?\[\]{}!-]+")


class _Parser:
    def __init__(self, text: str, depth: int, ctx: _Ctx | None = None):
        if depth > MAX_DEPTH:
            raise ShellSyntax("commands nested too deeply")
        self.s = text
        self.n = len(text)
        self.depth = depth
        self.ctx = ctx if ctx is not None else _Ctx()
        self.out: list[Simple] = []
        self.top: list[Simple] = []
        """The simple commands of this level only (not those of its substitutions)."""
        self.lit = True
        """The word being read has no expansion so far."""

    def _sub(self) -> _Parser:
        return _Parser(self.s, self.depth + 1, self.ctx)

    def parse(self, i: int = 0, close: str | None = None) -> int:
        """Parse from ``i`` until ``close`` (or the end); returns the index after it."""
        s, n = self.s, self.n
        words: list[str] = []
        lits: list[bool] = []
        redirects: list[tuple[str, str]] = []
        redirect_lits: list[bool] = []
        unsure: set[int] = set()
        word: list[str] = []
        shape: list[str] = []  # the word's unquoted characters, "\0" for quoted ones
        in_word = False
        quoted = False
        start = i
        heredocs: list[tuple[str, bool, bool]] = []
        pending_redir: str | None = None
        cases = 0  # "case ... in" open here; their patterns are data, their bodies commands
        want_pattern = False
        cond = False  # inside [[ ... ]]

        def end_word() -> None:
            nonlocal word, shape, in_word, quoted, pending_redir, cases, want_pattern, cond
            if in_word:
                w = "".join(word)
                assigns = _ASSIGN.match(w) is not None and all(_ASSIGN.match(x) for x in words)  # "X=*", not "cat a=*"
                lit = self.lit and (assigns or not _GLOB_SHAPE.search("".join(shape)))
                if quoted and not lit and ("{" in w or "}" in w) and pending_redir is None:
                    unsure.add(len(words))
                if pending_redir is not None:
                    if pending_redir in ("<<", "<<-"):
                        heredocs.append((w, pending_redir == "<<-", quoted))
                    redirects.append((pending_redir, w))
                    redirect_lits.append(lit)
                    pending_redir = None
                else:
                    self.ctx.words += 1
                    if self.ctx.words > MAX_WORDS:
                        raise TooLarge(f"the line holds more than {MAX_WORDS} words")
                    if not quoted and w in ("in", "esac", "[["):
                        head = _Head(words)
                        if w == "in" and head.first == "case" and len(head) == 2:
                            cases += 1
                            want_pattern = True
                        elif w == "esac" and cases and not head:
                            cases -= 1
                        if w == "[[" and not head:
                            cond = True
                    elif cond and not quoted and w == "]]":
                        cond = False
                    words.append(w)
                    lits.append(lit)
            word = []
            shape = []
            in_word = False
            quoted = False
            self.lit = True

        def end_command(at: int) -> None:
            end_word()
            if pending_redir is not None:
                raise ShellSyntax(f"the redirection {pending_redir!r} has no target")
            if words or redirects:
                self.ctx.commands += 1
                if self.ctx.commands > MAX_COMMANDS:
                    raise TooLarge(f"the line holds more than {MAX_COMMANDS} commands")
                simple = Simple(list(words), s[start:at].strip(), list(lits), list(redirects), list(redirect_lits),
                                frozenset(unsure))
                self.out.append(simple)
                self.top.append(simple)
            words.clear()
            lits.clear()
            redirects.clear()
            redirect_lits.clear()
            unsure.clear()

        def token(t: str) -> None:
            end_word()
            words.append(t)
            lits.append(True)

        while i < n:
            if want_pattern:
                end_command(i)  # "case word in": a header, no command
                want_pattern = False
                i, closed = self._case_pattern(i)
                cases -= closed
                start = i
                continue
            c = s[i]
            if cond and c in "()<>&|\n" and not (c in "<>" and s.startswith("(", i + 1)):
                end_word()  # "]])": the ]] ends the condition before the ")" is read
            if cond and not (c in "<>" and s.startswith("(", i + 1)):
                # inside [[ ]]: ( ) < > && || are the condition's own operators (a process substitution still runs)
                if c in "()<>":
                    token(c)
                    i += 1
                    continue
                if s.startswith(("&&", "||"), i):
                    token(s[i : i + 2])
                    i += 2
                    continue
                if c in "&|":
                    word.append(c)
                    shape.append(c)
                    in_word = True
                    i += 1
                    continue
                if c == "\n":
                    end_word()
                    i += 1
                    continue
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
                    shape.append("\0")
                in_word = True
                quoted = True
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise ShellSyntax("unterminated single quote")
                word.append(s[i + 1 : j])
                shape.append("\0")
                in_word = True
                quoted = True
                i = j + 1
                continue
            if c == '"':
                i = self._double(i + 1, word)
                shape.append("\0")
                in_word = True
                quoted = True
                continue
            if c == "`":
                i = self._backtick(i, word, in_double=False)
                shape.append("\0")
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
                    shape.append("\0")
                    in_word = True
                    quoted = True
                    i = j + 1
                    continue
                if nxt == '"':
                    i = self._double(i + 2, word)
                    shape.append("\0")
                    in_word = True
                    quoted = True
                    continue
                if nxt == "(":
                    i = self._dollar_paren(i, word)
                    shape.append("\0")
                    in_word = True
                    continue
                if nxt == "{":
                    i = self._param(i, word, in_double=False)
                    shape.append("\0")
                    in_word = True
                    continue
                if nxt == "[":
                    i = self._old_arith(i, word)
                    shape.append("\0")
                    in_word = True
                    continue
                if _NAME_START.match(nxt):
                    self.lit = False
            if c in "<>" and i + 1 < n and s[i + 1] == "(":
                # a process substitution, wherever it stands in a word
                sub = self._sub()
                j = sub.parse(i + 2, ")")
                self.out.extend(sub.out)
                self.ctx.taint.append("a process substitution")
                word.append(s[i:j])
                shape.append("\0")
                self.lit = False
                in_word = True
                i = j
                continue
            if c in "<>" or (c == "&" and s.startswith("&>", i)):
                if in_word and not quoted and _FD_WORD.match("".join(word)):
                    word, shape, in_word = [], [], False  # "2>x": the 2 belongs to the redirection
                    self.lit = True
                else:
                    end_word()
                if pending_redir is not None:
                    raise ShellSyntax("a redirection where its target should be")
                if c == "&":
                    op = "&>>" if s.startswith("&>>", i) else "&>"
                else:
                    m = _REDIR_OP.match(s, i)
                    assert m is not None
                    op = m.group(0)
                pending_redir = op
                i += len(op)
                continue
            if c == "#" and not in_word:
                j = s.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "(":
                if in_word and not quoted and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\+?=", "".join(word)):
                    i = self._array(i + 1, word)  # "a=(x y)": an array's elements are data
                    shape.append("\0")
                    continue
                end_word()
                head = _Head(words)
                if s.startswith("((", i) and (not head or (len(head) == 1 and head.first == "for")):
                    end = _arith_end(s, i + 2)
                    if end is not None:
                        self._arith_body(i + 2, end - 1, "(( ))")
                        words.clear()
                        lits.clear()
                        i = end + 1
                        start = i
                        continue
                k = i + 1
                while k < n and s[k] in " \t":
                    k += 1
                if k < n and s[k] == ")" and (len(head) == 1 or (not head and words[-2:-1] == ["function"])):
                    # "name()" or "function name()": a function's header. Its body (a group
                    # or a subshell) is parsed as the commands it is: they run when it is called.
                    words.clear()
                    lits.clear()
                    i = k + 1
                    start = i
                    continue
                # a subshell may follow keywords ("{ (a); }", "if (a); then", "! (a)"), function
                # headers ("function f (a)") and "coproc NAME", nothing else
                if head and not (len(words) == 2 and words[0] == "coproc"):
                    raise ShellSyntax("unexpected '('")
                end_command(i)
                sub = self._sub()
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
            m = _PLAIN_RUN.match(s, i)
            if m is not None:  # a run of characters with no meaning to the shell, read at once (linear time)
                word.append(m.group(0))
                shape.append(m.group(0))
                i = m.end()
            else:
                word.append(c)
                shape.append(c)
                i += 1
            in_word = True
        if close is not None:
            raise ShellSyntax(f"missing '{close}'")
        end_word()
        if cond:
            raise ShellSyntax("'[[' without ']]'")
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
                if not quoted and ("$(" in line or "`" in line or "${" in line or "$[" in line):
                    raise ShellSyntax("an expansion inside a heredoc")
                if _CODE_TEXT.search(line):
                    self.ctx.code_words.append(line)
                    self.ctx.taint.append("code-like text in a heredoc")
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
            elif s.startswith("${", i):
                i = self._param(i, scratch, in_double=False)
            elif c in ";&\n(":
                break
            else:
                i += 1
        raise ShellSyntax("a case pattern without its ')'")

    def _double(self, i: int, word: list[str]) -> int:
        s, n = self.s, self.n
        while i < n:
            m = _DOUBLE_PLAIN.match(s, i)
            if m is not None:
                word.append(m.group(0))
                i = m.end()
                if i >= n:
                    break
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
            if c == "$" and i + 1 < n:
                nxt = s[i + 1]
                if nxt == "(":
                    i = self._dollar_paren(i, word)
                    continue
                if nxt == "{":
                    i = self._param(i, word, in_double=True)
                    continue
                if nxt == "[":
                    i = self._old_arith(i, word)
                    continue
                if _NAME_START.match(nxt):
                    self.lit = False
            word.append(c)
            i += 1
        raise ShellSyntax("unterminated double quote")

    def _param(self, i: int, word: list[str], *, in_double: bool) -> int:
        """``${...}`` at ``i``, up to the ``}`` bash ends it at (an escaped ``\\}`` does not);
        substitutions inside it are parsed as commands. Returns where it ends."""
        s, n = self.s, self.n
        j = i + 2
        depth = 1
        scratch: list[str] = []
        while j < n:
            m = _PARAM_PLAIN.match(s, j)
            if m is not None:
                j = m.end()
                if j >= n:
                    break
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                if in_double:
                    # bash keeps these quotes and still runs "$(...)" between them: not read here
                    raise ShellSyntax("a single quote inside \"${...}\"")
                k = s.find("'", j + 1)
                if k < 0:
                    raise ShellSyntax("unterminated single quote")
                j = k + 1
                continue
            if c == '"':
                j = self._double(j + 1, scratch)
                continue
            if c == "`":
                j = self._backtick(j, scratch, in_double=in_double)
                continue
            if s.startswith("$(", j):
                j = self._dollar_paren(j, scratch)
                continue
            if s.startswith("$[", j):
                j = self._old_arith(j, scratch)
                continue
            if s.startswith("$'", j) and not in_double:
                k = j + 2
                while k < n and s[k] != "'":
                    k += 2 if s[k] == "\\" else 1
                j = k + 1
                continue
            if s.startswith("${", j):
                depth += 1
                j += 2
                continue
            if c == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        else:
            raise ShellSyntax("unterminated ${")
        self._param_body(s[i + 2 : j])
        word.append(s[i : j + 1])
        self.lit = False
        return j + 1

    def _param_body(self, body: str) -> None:
        """Note the parts of ``${body}`` where bash evaluates a value as code."""
        m = re.match(r"([!#]?)([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(\[([^\]]*)\])?(.*)", body, re.DOTALL)
        if m is None:
            self.ctx.evals.append("${" + body + "}")
            return
        prefix, _name, _sub, sub, rest = m.groups()
        if prefix == "!" and not rest.startswith(("*", "@")):
            self.ctx.evals.append(f"the indirection ${{{body}}}")
        if sub is not None and sub not in ("@", "*") and not sub.strip().isdigit():
            self.ctx.evals.append(f"the subscript in ${{{body}}}")
        if rest.startswith("@P"):
            self.ctx.evals.append(f"the prompt expansion ${{{body}}}")
        if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+") and _IDENT_IN_ARITH.search(rest):
            self.ctx.evals.append(f"the offset in ${{{body}}}")

    def _old_arith(self, i: int, word: list[str]) -> int:
        """``$[ ... ]``, bash's old arithmetic."""
        j = self.s.find("]", i + 2)
        if j < 0:
            raise ShellSyntax("unterminated $[")
        self._arith_body(i + 2, j, "$[ ]")
        word.append(self.s[i : j + 1])
        self.lit = False
        return j + 1

    def _backtick(self, i: int, word: list[str], *, in_double: bool) -> int:
        """A backtick substitution at ``i``: its commands are checked too, its text kept in ``word``.

        Inside one, a backslash escapes `` ` ``, ``$`` and ``\\`` (and ``"`` within double quotes).
        Returns where it ends.
        """
        s = self.s
        j = self._backtick_end(i + 1)
        inner = re.sub(r"\\([`$\\\"])" if in_double else r"\\([`$\\])", r"\1", s[i + 1 : j])
        _Parser(inner, self.depth + 1, self.ctx)._into(self.out)
        self.ctx.taint.append("a command substitution")
        word.append(s[i : j + 1])
        self.lit = False
        return j + 1

    def _arith_body(self, k: int, end: int, what: str) -> None:
        """The text ``s[k:end]`` of an arithmetic expression: its substitutions run, its names are evaluated."""
        s = self.s
        scratch: list[str] = []
        plain: list[str] = []
        while k < end:
            if s.startswith("$(", k):
                k = self._dollar_paren(k, scratch)
            elif s.startswith("${", k):
                k = self._param(k, scratch, in_double=False)
            elif s[k] == "`":
                k = self._backtick(k, scratch, in_double=False)
            else:
                m = _ARITH_PLAIN.match(s, k, end)
                step = m.end() if m is not None else k + 1
                plain.append(s[k:step])
                k = step
        if k > end:
            raise ShellSyntax(f"a substitution runs past the end of {what}")
        text = "".join(plain)
        if _IDENT_IN_ARITH.search(text) or scratch:
            self.ctx.evals.append(f"the arithmetic {what}")
        if "'" in text or '"' in text:
            self.ctx.evals.append(f"quoted text in {what}")
            self.ctx.taint.append(f"quoted text in {what}")

    def _dollar_paren(self, i: int, word: list[str]) -> int:
        """``$((...))`` (arithmetic, kept as text) or ``$(...)`` (its commands checked too) at ``i``."""
        s = self.s
        self.lit = False
        if i + 2 < self.n and s[i + 2] == "(":
            j = _arith_end(s, i + 3)
            if j is not None:
                # the expression's own substitutions run: "$(( $(b) + 1 ))" runs b
                self._arith_body(i + 3, j - 1, "$(( ))")
                word.append(s[i : j + 1])
                return j + 1
            # its first "(" closed but not by "))": bash reads "$( (...)...)", a command substitution
        sub = self._sub()
        j = sub.parse(i + 2, ")")
        self.out.extend(sub.out)
        self.ctx.taint.append("a command substitution")
        word.append(s[i:j])
        return j

    def _array(self, i: int, word: list[str]) -> int:
        """The elements of ``name=( ... )`` from ``i`` to its ``)``: data, whose substitutions run."""
        sub = self._sub()
        j = sub.parse(i, ")")
        for simple in sub.top:
            # the parse took the elements for commands: they are words
            if not all(simple.lits):
                self.ctx.taint.append("an array assignment from expansions")
            for w in simple.words:
                if _CODE_TEXT.search(w):
                    self.ctx.code_words.append(w)
                    self.ctx.taint.append("code-like text in an array")
            if simple.redirects:
                raise ShellSyntax("a redirection inside an array assignment")
        self.out.extend(x for x in sub.out if not any(x is t for t in sub.top))
        word.append(self.s[i - 1 : j])
        return j

    def _backtick_end(self, i: int) -> int:
        s, n = self.s, self.n
        while i < n:
            m = _BACKTICK_PLAIN.match(s, i)
            if m is not None:
                i = m.end()
                continue
            if s[i] == "\\":
                i += 2
                continue
            return i
        raise ShellSyntax("unterminated backtick")

    def _into(self, out: list[Simple]) -> None:
        self.parse()
        out.extend(self.out)


def _arith_end(s: str, i: int) -> int | None:
    """The index of the last ")" of the ``$((...))`` whose body starts at ``i``, or None when
    its first "(" is closed by a lone ")": bash then reads a command substitution, as
    ``$(( a ); b)``."""
    depth = 2
    for m in _PARENS.finditer(s, i):
        i = m.start()
        if s[i] == "(":
            depth += 1
        else:
            depth -= 1
            if depth == 1:
                return i + 1 if i + 1 < len(s) and s[i + 1] == ")" else None
    raise ShellSyntax("unterminated $((")


def _ansi_c(body: str) -> str:
    try:
        with warnings.catch_warnings():
            # "\;" and other escapes bash keeps literally warn as invalid in Python.
            warnings.simplefilter("ignore", DeprecationWarning)
            return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


def _peel_at(words: list[str]) -> int:
    """How many keywords and ``function name`` headers stand in front of a command."""
    i = 0
    while i < len(words):
        if i > MAX_KEYWORDS:
            raise ShellSyntax(f"more than {MAX_KEYWORDS} keywords in front of a command")
        w = words[i]
        if w in _RESERVED_LEAD:
            i += 1
        elif w == "function" and i + 1 < len(words):
            i += 2  # "function name { first; ...": the header goes, the body's first command stays
        elif w == "time":
            i += 1  # bash's keyword: "time while a; do...", "time -p -- cmd"
            while i < len(words) and words[i] in ("-p", "--"):
                i += 1
        elif w == "coproc" and i + 1 < len(words):
            i += 2 if words[i + 2 : i + 3] == ["{"] else 1  # "coproc NAME { ...; }" or "coproc cmd"
        else:
            break
    return i


class _Head:
    """What a command's words are after its keywords, without copying them (the parser asks at every word)."""

    __slots__ = ("first", "size")

    def __init__(self, words: list[str]):
        k = _peel_at(words)
        self.size = len(words) - k
        self.first = words[k] if self.size else None

    def __len__(self) -> int:
        return self.size


def _peel(words: list[str]) -> list[str]:
    """``words`` without the keywords and ``function name`` headers in front of a command."""
    return words[_peel_at(words) :]


_PLAIN_NUMBER = re.compile(r"^(?:-?\d+|\$[#?$!]|\$\{#[A-Za-z_][A-Za-z0-9_]*\})$")


def split(command: str, depth: int = 0, ctx: _Ctx | None = None) -> list[Simple]:
    """The simple commands of a command line, words unquoted, keywords peeled off.

    Raises:
        ShellSyntax: the line cannot be split with confidence.
    """
    ctx = ctx if ctx is not None else _Ctx()
    p = _Parser(command, depth, ctx)
    p.parse()
    out: list[Simple] = []
    for cmd in p.out:
        for w, lit in zip(cmd.words, cmd.lits):
            if lit and _CODE_TEXT.search(w):
                ctx.code_words.append(w)
                ctx.taint.append(f"the code-like text {w!r}")
            if not lit and _ASSIGN.match(w):
                ctx.taint.append(f"the assignment {w!r}")
        for _op, target in cmd.redirects:
            if _CODE_TEXT.search(target):
                ctx.code_words.append(target)
                ctx.taint.append(f"the code-like text {target!r}")
        k = _peel_at(cmd.words)
        words, lits = cmd.words[k:], cmd.lits[k:]
        if not words or words[0] in _HEADERS:
            ctx.loose.extend(cmd.redirects)  # "(x) >t", "} >t", "done <f": the compound's, not a command's
        if not words:
            continue
        if words[0] in _HEADERS:
            if words[0] in ("for", "select") and not all(lits):
                ctx.taint.append(f"a {words[0]} loop over expanded words")
            continue
        if words[0] == "[[":
            _cond(words, ctx)
            continue
        out.append(Simple(words, cmd.raw, lits, cmd.redirects, cmd.redirect_lits, frozenset(i - k for i in cmd.unsure if i >= k)))
    return out


def _cond(words: list[str], ctx: _Ctx) -> None:
    """``[[ ... ]]``: its arithmetic comparisons and ``-v`` tests evaluate their operands."""
    for i, w in enumerate(words):
        if w in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            if any(not _PLAIN_NUMBER.match(o) for o in words[i - 1 : i] + words[i + 1 : i + 2]):
                ctx.evals.append(f"the arithmetic comparison {w} in [[ ]]")
        elif w in ("-v", "-R"):
            ctx.evals.append(f"the {w} test in [[ ]]")


# --- wrappers ---------------------------------------------------------------

_SHELLS = {"sh", "bash", "rbash", "zsh", "dash", "ksh", "ksh93", "mksh", "fish", "ash", "yash", "posh", "tcsh", "csh"}


@dataclass(frozen=True)
class _Wrap:
    """How a wrapper's own arguments are laid out before the command it runs."""

    vals: frozenset[str] = frozenset()
    """Options that take a value."""
    flags: frozenset[str] | None = frozenset()
    """Options that take none (None: every other option is taken for one)."""
    npos: int = 0
    """Positional words between the options and the command (timeout's duration...)."""
    power: bool = False
    """Runs the command with more power than the caller (another user, another root)."""
    noexec: frozenset[str] = frozenset()
    """Options after which no command runs (``command -v``, ``taskset -p``)."""
    strings: frozenset[str] = frozenset()
    """Options whose value is a shell command line (``flock -c``, ``script -c``)."""
    needs_cmd: bool = False
    """Without a command it starts a shell (``unshare``, ``chroot``, ``script``)."""
    after_string: bool = False
    """Words after a command string are not a command (``script -c CMD FILE``)."""


def _fs(*xs: str) -> frozenset[str]:
    return frozenset(xs)


_WRAPPERS: dict[str, _Wrap] = {
    "sudo": _Wrap(_fs("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--host",
                      "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout"),
                  None, power=True, noexec=_fs("-l", "-v", "-k", "-K", "-e", "-V", "--list", "--validate", "--edit", "--version")),
    "doas": _Wrap(_fs("-u", "-C"), _fs("-n", "-s", "-L"), power=True),
    "nice": _Wrap(_fs("-n", "--adjustment")),
    "ionice": _Wrap(_fs("-c", "-n", "--class", "--classdata"), _fs("-t", "--ignore"),
                    noexec=_fs("-p", "-P", "-u", "--pid", "--pgid", "--uid")),
    "nohup": _Wrap(),
    "time": _Wrap(_fs("-f", "-o", "--format", "--output"), _fs("-p", "-a", "-v", "-q", "--append", "--verbose", "--quiet", "--portability")),
    "command": _Wrap(flags=_fs("-p"), noexec=_fs("-v", "-V")),
    "builtin": _Wrap(),
    "exec": _Wrap(_fs("-a"), _fs("-c", "-l")),
    "stdbuf": _Wrap(_fs("-i", "-o", "-e", "--input", "--output", "--error")),
    "setsid": _Wrap(flags=_fs("-c", "-f", "-w", "--ctty", "--fork", "--wait")),
    "timeout": _Wrap(_fs("-s", "--signal", "-k", "--kill-after"), _fs("--preserve-status", "--foreground", "-v", "--verbose"), npos=1),
    "chronic": _Wrap(flags=_fs("-e", "-v")),
    "unbuffer": _Wrap(flags=_fs("-p")),
    "flock": _Wrap(_fs("-w", "--timeout", "-E", "--conflict-exit-code"),
                   _fs("-s", "-x", "-u", "-n", "-o", "-e", "-F", "--shared", "--exclusive", "--unlock", "--nonblock",
                       "--nb", "--close", "--no-fork", "--verbose"), npos=1, strings=_fs("-c", "--command")),
    "taskset": _Wrap(flags=_fs("-a", "--all-tasks", "-c", "--cpu-list"), npos=1, noexec=_fs("-p", "--pid")),
    "chrt": _Wrap(_fs("-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"),
                  _fs("-b", "-f", "-i", "-o", "-r", "-d", "-R", "-a", "-v", "--batch", "--fifo", "--idle", "--other", "--rr",
                      "--deadline", "--reset-on-fork", "--all-tasks", "--verbose"), npos=1, noexec=_fs("-p", "--pid", "-m", "--max")),
    "script": _Wrap(_fs("-I", "-O", "-B", "-T", "-E", "-m", "--log-in", "--log-out", "--log-io", "--log-timing", "--echo",
                        "--logging-format", "--output-limit"),
                    _fs("-a", "-e", "-f", "-q", "--append", "--return", "--flush", "--quiet", "--force"),
                    strings=_fs("-c", "--command"), needs_cmd=True, after_string=True),
    "unshare": _Wrap(_fs("--propagation", "--setgroups", "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd",
                         "--map-user", "--map-group", "--map-users", "--map-groups"), None, power=True, needs_cmd=True),
    "chroot": _Wrap(_fs("--userspec", "--groups"), _fs("--skip-chdir"), npos=1, power=True, needs_cmd=True),
    "busybox": _Wrap(noexec=_fs("--list", "--help", "--list-full")),
    "su": _Wrap(_fs("-g", "-G", "-s", "--group", "--supp-group", "--shell", "-w", "--whitelist-environment"),
                _fs("-", "-l", "-m", "-p", "-P", "-f", "--login", "--preserve-environment", "--pty"),
                power=True, strings=_fs("-c", "--command", "--session-command"), needs_cmd=True, after_string=True),
    "runuser": _Wrap(_fs("-g", "-G", "-s", "-u", "--group", "--supp-group", "--shell", "--user"),
                     _fs("-", "-l", "-m", "-p", "-f", "--login", "--preserve-environment", "--pty"),
                     power=True, strings=_fs("-c", "--command", "--session-command"), needs_cmd=True, after_string=True),
}
_WRAPPERS["xargs"] = _Wrap(_fs("-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a", "--max-args", "--max-procs",
                               "--delimiter", "--arg-file", "--replace", "--max-lines", "--eof", "--max-chars"), None)
_WATCH = _Wrap(_fs("-n", "--interval", "-q", "--equexit"), None)
_WRAPPERS["ssh-agent"] = _Wrap(_fs("-a", "-E", "-P", "-t", "-O"), _fs("-c", "-D", "-d", "-s"), noexec=_fs("-k"))
_WRAPPERS["dbus-launch"] = _Wrap(flags=None)
_SETARCH = _Wrap(flags=None, needs_cmd=True)
"""util-linux ``setarch ARCH`` and its per-architecture names (``x86_64 rm v``): every option is a flag."""
_ARCH_NAMES = frozenset({
    "linux32", "linux64", "uname26", "i386", "i486", "i586", "i686", "athlon", "x86_64", "ia64", "ppc", "powerpc",
    "ppc32", "ppc64", "ppc64le", "ppcle", "powerpc64", "powerpc64le", "s390", "s390x", "sparc", "sparc32", "sparc32bash",
    "sparc64", "mips", "mips32", "mips64", "alpha", "arm", "armv7l", "armv8l", "armh", "armv7hl", "aarch64", "arm64",
    "parisc", "parisc32", "parisc64", "loongarch", "loongarch32", "loongarch64", "riscv32", "riscv64", "m68k", "sh4",
})

# Programs that run another command in ways this reader does not follow: best-guess views for
# deny rules, and the line is opaque.
_OPAQUE_RUNNERS = frozenset({
    "nsenter", "strace", "ltrace", "valgrind", "gdb", "systemd-run", "firejail", "bwrap", "proot", "fakeroot",
    "xvfb-run", "prlimit", "numactl", "setpriv", "sg", "pkexec", "parallel", "perf", "catchsegv", "dbus-run-session",
    "cgexec", "rr", "torsocks", "proxychains", "proxychains4", "at", "batch", "tsp", "nq", "ssh", "sshpass", "expect",
    "tmux", "screen", "dtach", "nix-shell", "faketime", "eatmydata", "with-contenv", "s6-setuidgid",
    "chpst", "daemonize", "start-stop-daemon", "capsh", "ld.so",
})
_INTERPRETER = re.compile(r"^(python|pypy|perl|ruby|node|nodejs|bun|deno|php|lua|luajit|Rscript|R|julia|tclsh|wish|"
                          r"osascript|pwsh|powershell|jshell|groovy|scala|guile|racket|sbcl|clisp|gst|swipl|ghci|runghc|"
                          r"elixir|erl|escript|dotnet-script|ts-node|tsx|rhino|jjs|qjs|irb|ipython)[0-9.]*$")
_INLINE_LETTERS = {"python": "c", "pypy": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "bun": "e",
                   "php": "rRBEF", "lua": "e", "luajit": "e", "Rscript": "e", "R": "e", "julia": "eE", "pwsh": "c",
                   "powershell": "c", "guile": "c", "racket": "e", "elixir": "e", "erl": "e", "ipython": "c",
                   "ts-node": "e", "tsx": "e", "qjs": "e", "irb": "", "tclsh": "", "osascript": "e"}
_CODE_VARS = re.compile(r"^(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|BASH_LOADABLES_PATH|"
                        r"BASH_CMDS|BASH_ALIASES|"
                        r"LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|PATH|GIT_.*|EDITOR|VISUAL|PAGER|MANPAGER|LESSOPEN|"
                        r"LESSCLOSE|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|"
                        r"NODE_OPTIONS|NODE_PATH|SSH_ASKPASS|SUDO_ASKPASS|BROWSER|TERMINAL|SHELL|INPUTRC)$")
_GIT_CODE_KEY = re.compile(r"(?i)^(?:alias\.|core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy|"
                           r"attributesfile|excludesfile)|diff\.external|sequence\.editor|include\.|includeif\.|"
                           r"credential\.|pager\.|gpg\.|filter\.|web\.browser|uploadpack\.|receive\.|protocol\.|"
                           r".*\.(?:command|cmd|textconv|program|helper|tool|driver|clean|smudge|process|path|"
                           r"uploadpack|receivepack|proxy|sshcommand))")
GIT_CODE_KEY = _GIT_CODE_KEY
"""git configuration keys whose values name programs git runs (or pull in more configuration)."""


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


@dataclass
class _Unwrapped:
    rest: int = 0
    """Index of the wrapped command's first word (len(words): none)."""
    script: str | None = None
    script_lit: bool = True
    noexec: bool = False
    unknown: list[str] = field(default_factory=list)


def _unwrap(head: str, words: list[str], lits: list[bool], spec: _Wrap) -> _Unwrapped:
    """Where ``words`` (a wrapper's call) hold the command the wrapper runs."""
    r = _Unwrapped()
    i = 1
    n = len(words)
    while i < n:
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-" or (head == "su" and w == "-"):
            break
        if head == "nice" and re.fullmatch(r"-\d+", w):
            i += 1
            continue
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name in spec.strings:
                r.script = value if eq else (words[i + 1] if i + 1 < n else None)
                r.script_lit = all(lits[i : i + (1 if eq else 2)])
                i += 1 if eq else 2
                continue
            if name in spec.noexec:
                r.noexec = True
                return r
            if name in spec.vals:
                i += 1 if eq else 2
                continue
            if spec.flags is None or name in spec.flags:
                i += 1
                continue
            r.unknown.append(w)
            i += 1
            continue
        j = 1
        take_next = False
        while j < len(w):
            o = "-" + w[j]
            if o in spec.strings:
                attached = w[j + 1 :]
                r.script = attached or (words[i + 1] if i + 1 < n else None)
                r.script_lit = lits[i] and (bool(attached) or (i + 1 < n and lits[i + 1]))
                take_next = not attached
                break
            if o in spec.noexec:
                r.noexec = True
                return r
            if o in spec.vals:
                take_next = not w[j + 1 :]
                break
            if spec.flags is None or o in spec.flags:
                j += 1
                continue
            r.unknown.append(w)
            break
        i += 2 if take_next else 1
    if r.script is None and spec.strings and spec.npos and i + spec.npos < n and words[i + spec.npos] in spec.strings:
        k = i + spec.npos  # "flock FILE -c CMD"
        r.script = words[k + 1] if k + 1 < n else None
        r.script_lit = all(lits[k : k + 2])
        r.rest = n
        return r
    if r.script is None and spec.after_string:
        # script, su, runuser take their -c anywhere ("script /dev/null -c CMD", "su root -c CMD")
        for k in range(i, n):
            w = words[k]
            name, eq, value = w.partition("=")
            if w.startswith("--") and name in spec.strings:
                r.script = value if eq else (words[k + 1] if k + 1 < n else None)
                r.script_lit = all(lits[k : k + (1 if eq else 2)])
                break
            if w.startswith("-") and not w.startswith("--") and any("-" + ch in spec.strings for ch in w[1:]):
                ch = next(ch for ch in w[1:] if "-" + ch in spec.strings)
                attached = w[w.index(ch, 1) + 1 :]
                r.script = attached or (words[k + 1] if k + 1 < n else None)
                r.script_lit = lits[k] and (bool(attached) or (k + 1 < n and lits[k + 1]))
                break
    if spec.after_string:
        r.rest = n  # their other words are a file or a user, never a command
        return r
    r.rest = min(n, i + spec.npos)
    return r


def _shell_script(words: list[str], lits: list[bool]) -> tuple[str | None, str | None]:
    """(the script of ``bash -c SCRIPT`` with any options, or None; why the call is opaque, or None)."""
    i = 1
    has_c = False
    n = len(words)
    while i < n:
        w = words[i]
        if not lits[i]:
            return None, "its options are computed"
        if w in ("--", "-"):
            i += 1
            break
        if w in ("-o", "+o", "-O", "+O"):
            if "expand_aliases" in words[i + 1 : i + 2]:
                return None, "it turns aliases on"
            i += 2
            continue
        if w in ("--rcfile", "--init-file"):
            i += 2
            continue
        if w.startswith("--"):
            if w in ("--version", "--help"):
                return None, None
            if w in ("--norc", "--noprofile", "--posix", "--login", "--noediting", "--restricted", "--verbose",
                     "--debugger", "--protected", "--no-rcs"):
                i += 1
                continue
            return None, f"an option this reader does not know ({w})"
        if len(w) > 1 and w[0] in "-+":  # an empty word (sh -c "" ...) is the command string, not an option
            letters = w[1:]
            if "c" in letters and w[0] == "-":
                has_c = True
            if "s" in letters or "i" in letters:
                return None, "it reads commands from stdin"
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    if not has_c:
        return None, "it reads its commands from stdin or from a file"
    if i >= n:
        return None, "-c without a command string"
    if not lits[i]:
        return None, "its command string is computed"
    return words[i], None


_CODE_MODULES = frozenset({"timeit", "pdb", "code", "idlelib", "cProfile", "profile"})
"""Python modules run with ``-m`` whose arguments or input are code (``timeit -s``, ``pdb -c``, ``code``)."""


def _interpreter_reason(head: str, words: list[str], lits: list[bool]) -> str | None:
    """Why an interpreter's call runs code the rules cannot read (inline code, a program from stdin), or None."""
    family = re.sub(r"[0-9.]+$", "", head)
    letters = _INLINE_LETTERS.get(family, "")
    args = words[1:]
    if family == "deno" and args[:1] == ["eval"]:
        return f"{head} eval runs code given on its command line"
    files = 0
    for k, a in enumerate(args):
        if a.startswith("--"):
            if a.split("=")[0] in ("--eval", "--print", "--command", "--exec", "--execute", "--expression"):
                return f"{head} {a} runs code given on its command line"
            if a in ("--version", "--help"):
                return None
            continue
        if a == "-":
            return f"{head} - reads its program from stdin"
        if a.startswith("-") and len(a) > 1:
            if any(ch in letters for ch in a[1:]):
                return f"{head} {a} runs code given on its command line"
            if family in ("python", "pypy", "ipython") and "m" in a[1:]:
                module = a[a.index("m") + 1 :] or (args[k + 1] if k + 1 < len(args) else "")
                if module in _CODE_MODULES:
                    return f"{head} -m {module} runs code given on its command line or stdin"
                files += 1
            if a in ("-V", "-v", "-h", "--version"):
                return None
            continue
        if not files and (a.startswith(("/dev/", "/proc/")) or not lits[k + 1]):
            return f"{head} reads its program from {a!r}, which the line does not show"
        files += 1
    if not files:
        return f"{head} reads its program from stdin"
    return None


def _awk_reason(head: str, words: list[str], lits: list[bool]) -> str | None:
    i = 1
    while i < len(words):
        w = words[i]
        if w in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load") or w.startswith(("--file=", "--exec=", "--include=", "--load=")):
            return f"{head} reads its program from a file"
        if w in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if w == "--":
            i += 1
            break
        if w.startswith("-") and w != "-":
            i += 1
            continue
        break
    if i >= len(words):
        return f"{head} without a program"
    if not lits[i]:
        return f"{head}'s program is computed"
    if re.search(r"system|getline|@load|@include|(?<!\|)\|(?!\|)", words[i]):
        return f"{head}'s program can run commands (system, pipes)"
    return None


_SED_E_CMD = re.compile(r"(?:^|[;\n{}]|\d|\$|/)\s*!?\s*e(?:\s|;|$|\})")
_SED_S_E = re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[^;\n}]*e")


def _sed_reason(words: list[str], lits: list[bool]) -> str | None:
    scripts: list[tuple[str, bool]] = []
    explicit = False
    i = 1
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name == "--expression":
                scripts.append((value, lits[i]) if eq else (words[i + 1] if i + 1 < len(words) else "", all(lits[i : i + 2])))
                explicit = True
                i += 1 if eq else 2
                continue
            if name == "--file":
                return "sed reads its script from a file"
            i += 2 if name == "--line-length" and not eq else 1
            continue
        if w.startswith("-") and w != "-":
            take = 1
            for j, ch in enumerate(w[1:], 1):
                if ch == "e":
                    rest = w[j + 1 :]
                    scripts.append((rest, lits[i]) if rest else (words[i + 1] if i + 1 < len(words) else "", all(lits[i : i + 2])))
                    take = 1 if rest else 2
                    explicit = True
                    break
                if ch == "f":
                    return "sed reads its script from a file"
                if ch == "l":
                    take = 1 if w[j + 1 :] else 2
                    break
                if ch == "i":
                    break  # -i[SUFFIX]
            i += take
            continue
        if not explicit and not scripts:
            scripts.append((w, lits[i]))
        i += 1
    for text, lit in scripts:
        if not lit:
            return "sed's script is computed"
        if _SED_E_CMD.search(text) or _SED_S_E.search(text):
            return "sed's script runs commands (e)"
    return None


GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
                               "--attr-source"})
"""git's global options that take a value (as the next word, or after ``=`` when long)."""


def git_subcommand(words: list[str]) -> int:
    """The index in ``words`` (``git ...``) of git's subcommand, past its global options
    (``git --namespace log clean -fdx`` runs ``clean``); ``len(words)`` when there is none."""
    i = 1
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if not w.startswith("-"):
            return i
        i += 2 if w in GIT_VALUE_OPTIONS else 1
    return i


_GIT_OPTION_RUNS = {
    "grep": ("--open-files-in-pager",), "ls-remote": ("--upload-pack",), "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",), "clone": ("--upload-pack", "--template"), "archive": ("--exec",),
    "push": ("--receive-pack", "--exec"), "send-email": ("--to-cmd", "--cc-cmd", "--header-cmd", "--smtp-server"),
}
"""Options of git subcommands whose value is a program git runs (``git grep -O``, ``ls-remote --upload-pack``)."""
_GIT_SHORT_RUNS = {"grep": "O", "ls-remote": "u", "fetch": "u", "pull": "u", "clone": "u"}


def _git_reason(words: list[str]) -> str | None:
    i = git_subcommand(words)
    for w in words[1:i]:
        if w == "-c" or (w.startswith("-c") and "=" in w) or w.startswith("--config-env"):
            return "git -c sets configuration, and configuration can name commands for git to run"
        if w.startswith("--exec-path"):
            return "git --exec-path chooses the programs git runs"
    sub = words[i] if i < len(words) else ""
    args = words[i + 1 :]
    if any(may_abbreviate(a, _GIT_OPTION_RUNS.get(sub, ())) for a in args) or (
        set(_GIT_SHORT_RUNS.get(sub, "")) & set(_short_letters(args))
    ):
        return f"git {sub} is given a program to run"
    if sub == "config":
        for a in args:
            if _GIT_CODE_KEY.match(a) or a.startswith("!"):
                return f"git config {a} can name a command for git to run"
    if sub == "rebase" and any(a in ("-x", "--exec") or a.startswith("--exec=") for a in args):
        return "git rebase --exec runs a command"
    if sub == "bisect" and args[:1] == ["run"]:
        return "git bisect run runs a command"
    if sub == "submodule" and "foreach" in args:
        return "git submodule foreach runs a command"
    if sub in ("filter-branch", "filter-repo"):
        return f"git {sub} runs commands"
    if sub in ("difftool", "mergetool") and any(a in ("-x", "--extcmd", "-t", "--tool") or a.startswith(("--extcmd=", "--tool=")) for a in args):
        return f"git {sub} runs the tool it is given"
    return None


def _builtin_effects(head: str, words: list[str], lits: list[bool], ctx: _Ctx, unit: Unit) -> None:
    """What a builtin does with text: evaluate names and subscripts, or fill variables with data."""
    args = words[1:]
    alits = lits[1:]
    if head in ("test", "[") and any(a in ("-v", "-R") for a in args):
        ctx.evals.append(f"{head} -v")
    elif head == "printf" and args[:1] and args[0].startswith("-v"):  # "-vNAME" too: getopt takes a stuck value
        ctx.evals.append("printf -v")
    elif head == "read":
        ctx.taint.append("read")
        if any("[" in a or not lit for a, lit in zip(args, alits) if not a.startswith("-")):
            ctx.evals.append("read into a subscript")
    elif head in ("mapfile", "readarray"):
        ctx.taint.append(head)
        if any("[" in a for a in args):
            ctx.evals.append(f"{head} into a subscript")
    elif head in ("declare", "typeset", "local", "export", "readonly"):
        for a, lit in zip(args, alits):
            if a.startswith("-") and ("n" in a or "i" in a):
                ctx.evals.append(f"{head} {a}")
            elif not a.startswith(("-", "+")):
                name = a.split("=", 1)[0]
                if "[" in name:
                    ctx.evals.append(f"{head} of a subscript")
                if not lit:
                    ctx.taint.append(f"{head} {a}")
                if "=" in a and _CODE_VARS.match(name):
                    unit.opaque.append(f"{name} holds code or a search path that bash or a program runs")
    elif head == "let":
        ctx.evals.append("let")
    elif head == "unset" and any("[" in a for a in args):
        ctx.evals.append("unset of a subscript")
    elif head == "wait" and "-p" in args:
        ctx.evals.append("wait -p")
    elif head == "getopts":
        ctx.taint.append("getopts")
    elif head == "set" and not all(alits):
        ctx.taint.append("set with expanded words")


def _assignment(w: str, lit: bool, unit: Unit, ctx: _Ctx) -> None:
    name_part = w.split("=", 1)[0].rstrip("+")
    name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", name_part)
    if name and _CODE_VARS.match(name.group(0)):
        unit.opaque.append(f"{name.group(0)} holds code or a search path that bash or a program runs")
    if "[" in name_part and not re.fullmatch(r"[A-Za-z_]\w*\[\s*\d+\s*\]", name_part):
        ctx.evals.append(f"the subscript of {name_part}")


def _join(words: list[str]) -> str:
    return " ".join(w for w in words if not _HARMLESS_REDIRECT.match(w))


def unit_views(words: list[str], depth: int, extra: list[Unit], lits: list[bool] | None = None,
               ctx: _Ctx | None = None) -> Unit:
    """Every view of one simple command; inner ``sh -c`` lines are appended to ``extra``."""
    ctx = ctx if ctx is not None else _Ctx()
    lits = list(lits) if lits is not None and len(lits) == len(words) else [True] * len(words)
    unit = Unit()
    allow_ok = True
    seen: set[tuple[str, bool]] = set()

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

    def wrapped() -> None:
        # a wrapper runs what follows it: a pattern for the wrapper does not approve that
        for i, (text, ok) in enumerate(unit.views):
            if ok:
                unit.views[i] = (text, False)
                seen.add((text, False))
                unit.exact_only.append(text)

    def inner_line(script: str) -> None:
        if depth + 1 > MAX_DEPTH:
            raise ShellSyntax("commands nested too deeply")
        for inner in split(script, depth + 1, ctx):
            u = unit_views(inner.words, depth + 1, extra, inner.lits, ctx)
            u.simple = inner
            extra.append(u)

    def inner_command(ws: list[str], ls: list[bool]) -> None:
        if ws:
            extra.append(unit_views(ws, depth + 1, extra, ls, ctx))

    add(words, allow_ok)
    for _ in range(MAX_WRAPPERS):
        if not words:
            break
        if _ASSIGN.match(words[0]):
            k = 0
            while k < len(words) and _ASSIGN.match(words[k]):
                _assignment(words[k], lits[k], unit, ctx)
                k += 1
            words, lits = words[k:], lits[k:]
            allow_ok = False
            add(words, allow_ok)
            continue
        if not lits[0]:
            unit.opaque.append(f"the command word {words[0]!r} is computed or expanded by the shell")
            break
        head = os.path.basename(words[0])
        _builtin_effects(head, words, lits, ctx, unit)
        if head in _SHELLS:
            script, why = _shell_script(words, lits)
            if why is not None:
                unit.opaque.append(f"{head}: {why}")
            elif script is not None:
                inner_line(script)
                unit.container = allow_ok
            break
        if head == "eval":
            if not all(lits[1:]):
                unit.opaque.append("eval of a computed string")
                break
            args = words[1:]
            inner_line(" ".join(args[1:] if args[:1] == ["--"] else args))
            unit.container = allow_ok
            break
        if head == "trap":
            args, alits = words[1:], lits[1:]
            if args[:1] == ["--"]:
                args, alits = args[1:], alits[1:]
            if len(args) >= 2 and args[0] not in ("-p", "-l", "-P", "-"):
                if not alits[0]:
                    unit.opaque.append("trap of a computed command")
                else:
                    inner_line(args[0])
            break
        if head in ("source", "."):
            unit.opaque.append(f"{head} runs the commands of a file")
            break
        if head == "alias" and any("=" in w for w in words[1:]):
            unit.opaque.append("an alias changes what a later command word runs")
            break
        if head == "shopt" and "expand_aliases" in words:
            unit.opaque.append("shopt expand_aliases lets aliases change what command words run")
            break
        if head == "hash" and any(w.startswith("-") and "p" in w for w in words[1:]):
            unit.opaque.append("hash -p makes a command name run another program")
            break
        if head in ("mapfile", "readarray", "compgen") and any(w.startswith("-") and ("C" in w or (head == "compgen" and "F" in w)) for w in words[1:]):
            unit.opaque.append(f"{head} -C runs a command given as a string")
            break
        if head == "enable" and any(w.startswith("-") and "f" in w for w in words[1:]):
            unit.opaque.append("enable -f loads a builtin from a file")
            break
        if head in ("awk", "gawk", "mawk", "nawk"):
            why = _awk_reason(head, words, lits)
            if why:
                unit.opaque.append(why)
            break
        if head in ("sed", "gsed"):
            why = _sed_reason(words, lits)
            if why:
                unit.opaque.append(why)
            break
        if head == "git":
            sub = git_subcommand(words)
            if 1 < sub < len(words):  # "git -C d --namespace x clean -fdx": deny rules see "git clean -fdx" too
                put((_join(["git", *words[sub:]]), False))
            why = _git_reason(words)
            if why:
                unit.opaque.append(why)
            break
        if _INTERPRETER.match(head):
            why = _interpreter_reason(head, words, lits)
            if why:
                unit.opaque.append(why)
            break
        if head == "find":
            inners = _find_exec(words)
            if inners:
                unit.opaque.append("find -exec runs a command on names it finds")
                for inner in inners:
                    inner_command(inner, [True] * len(inner))
            break
        if head in _OPAQUE_RUNNERS:
            unit.opaque.append(f"{head} runs a command in a way this reader does not follow")
            rest = _strip_options(words[1:], frozenset())
            inner_command(rest, [True] * len(rest))
            for k in range(1, min(len(rest), 4)):  # "runner ARG cmd ...": guesses for deny rules
                inner_command(rest[k:], [True] * (len(rest) - k))
            break
        if head == "watch":
            u = _unwrap(head, words, lits, _WATCH)
            rest, rlits = words[u.rest :], lits[u.rest :]
            if any(w in ("-x", "--exec") for w in words[1 : u.rest]):
                wrapped()
                words, lits = rest, rlits
                add(words, allow_ok)
                continue
            if rest:
                if not all(rlits):
                    unit.opaque.append("watch of a computed command")
                    break
                inner_line(" ".join(rest))
                unit.container = allow_ok
            break
        if head == "env":
            rest, rlits = _env_command(words, lits, unit, ctx)
            if not rest:
                break
            allow_ok = False
            wrapped()
            words, lits = rest, rlits
            add(words, allow_ok)
            continue
        if head == "setarch":
            if len(words) < 2 or words[1] not in _ARCH_NAMES:
                if words[1:2] not in (["--list"], ["-h"], ["--help"], ["-V"], ["--version"]):
                    unit.opaque.append("setarch with an architecture this reader does not know")
                break
            wrapped()
            words, lits = words[1:], lits[1:]  # "setarch ARCH ..." runs as "ARCH ..."
            add(words, allow_ok)
            continue
        why = _runner_reason(head, words)
        if why:
            unit.opaque.append(why)
            unit.runner = head
            break
        spec = _WRAPPERS.get(head) or (_SETARCH if head in _ARCH_NAMES else None)
        if spec is None:
            break
        u = _unwrap(head, words, lits, spec)
        if u.noexec:
            break
        if u.unknown:
            unit.opaque.append(f"{head} has options this reader does not know: {' '.join(u.unknown)}")
        if head == "xargs":
            unit.opaque.append("xargs builds its command's arguments from its input")
            rest, rlits = words[u.rest :], lits[u.rest :]
            inner_command(rest, rlits)
            break
        if u.script is None and spec.after_string:
            unit.opaque.append(f"{head} without a command string starts a shell")
            break
        if u.script is not None:
            if not u.script_lit:
                unit.opaque.append(f"{head} runs a computed command line")
            else:
                inner_line(u.script)
                unit.container = allow_ok and not spec.power
            break
        rest, rlits = words[u.rest :], lits[u.rest :]
        if not rest:
            if spec.needs_cmd:
                unit.opaque.append(f"{head} without a command starts a shell")
            break
        if spec.power:
            allow_ok = False
        wrapped()
        words, lits = rest, rlits
        add(words, allow_ok)
    else:
        if words:  # fail closed: what the last wrapper runs was not read
            unit.opaque.append(f"a chain of more than {MAX_WRAPPERS} wrappers")
    return unit


_BRACE_WORD = re.compile(r"^\{([^{}]*,[^{}]*)\}$")
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


def _redirect_text(op: str, target: str) -> str:
    return f"{op}{target}"


def _written(simple: Simple) -> list[str]:
    """The redirections of ``simple`` that write a file, as ``OP TARGET``."""
    return [f"{op} {t}" for op, t in simple.redirects if _writes(op, t)]


def _writes(op: str, target: str) -> bool:
    """Does this redirection write to a file (not /dev/null, not a descriptor copy)?"""
    if op in ("<", "<<", "<<-", "<<<", "<&"):
        return False
    return not _HARMLESS_REDIRECT.match(_redirect_text(op, target)) and not (op in (">&",) and target in ("-", "0", "1", "2"))


def analyze(command: str) -> Analysis:
    """Every command the line would run, and why any of it cannot be known from the text.

    Raises:
        ShellSyntax: the line cannot be split with confidence.
    """
    ctx = _Ctx()
    out: list[Unit] = []
    for simple in split(command, 0, ctx):
        extra: list[Unit] = []
        u = unit_views(list(simple.words), 0, extra, list(simple.lits), ctx)
        u.simple = simple
        raw = " ".join(simple.raw.split())
        if raw and all(v[0] != raw for v in u.views):
            u.views.append((raw, u.views[0][1] if u.views and not _written(simple) else False))
        out.append(u)
        out.extend(extra)
    for u in out:
        written = _written(u.simple) if u.simple is not None else []
        if written:
            # a rule allows "cmd >file" only through a view that shows the redirection (and only
            # a rule whose pattern has one: see Unit.writes), wherever the command stands (sh -c '...')
            u.writes = written
            shown: list[tuple[str, bool]] = [(f"{t} {' '.join(w.replace(' ', '') for w in written)}", ok) for t, ok in u.views if ok]
            shown += [(f"{t} {' '.join(written)}", ok) for t, ok in u.views if ok]
            u.views = [(t, False) for t, _ in u.views] + shown
    reasons = [r for u in out for r in u.opaque]
    line: list[str] = []
    if ctx.evals and ctx.taint:
        line.append(f"bash evaluates text as code ({ctx.evals[0]}) where the line can put text the rules "
                    f"cannot see ({ctx.taint[0]})")
    return Analysis(out, list(dict.fromkeys(reasons + line)), list(dict.fromkeys(ctx.code_words)), line, list(ctx.loose))


def units(command: str) -> list[Unit]:
    """One ``Unit`` per command the line would run (inner ``sh -c`` commands included).

    Raises:
        ShellSyntax: the line cannot be split with confidence.
    """
    return analyze(command).units


_CRUDE = re.compile(r"\$\(|`|\(|\)|&&|\|\||[;&|\n]")


def crude_pieces(command: str) -> list[str]:
    """A line cut at every operator-like character, for deny checks on lines that do not parse.

    Each piece, its quotes and backslashes dropped, is seen through its
    wrappers as a parsed command is (``nice -n 5 rm x`` gives ``rm x`` too).
    Only the first ``MAX_COMMANDS`` pieces are read.
    """
    pieces: dict[str, None] = {}
    for k, p in enumerate(_CRUDE.split(command)):
        if k > MAX_COMMANDS:
            break  # the line is opaque already: its deny check stops at the bound (time stays linear)
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


# --- programs that run command strings ------------------------------------------


def long_option(word: str, known: Iterable[str]) -> str | None:
    """The option ``word`` (``--name`` or ``--name=value``) stands for among ``known``, as GNU getopt reads it:
    the exact name, or the one option it is the unique abbreviation of (``--compress=`` is
    ``--compress-program``); None when it names none or several."""
    name = word.partition("=")[0]
    known = tuple(known)
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)]
    return hits[0] if len(hits) == 1 and len(name) > 2 else None


def may_abbreviate(word: str, options: Iterable[str], exact: Iterable[str] = ()) -> bool:
    """Can ``word`` (``--name[=value]``) be one of ``options``, exactly or as an abbreviation? Fails closed:
    an abbreviation that could also stand for another option of the program counts. ``exact``: other
    options of the program, which GNU getopt takes when named in full (``dpkg --status`` is not
    ``--status-logger``)."""
    name = word.partition("=")[0]
    if name in exact:
        return False
    return word.startswith("--") and len(name) > 2 and any(o.startswith(name) for o in options)


def _short_letters(words: list[str]) -> str:
    """Every letter of every bundled short option (``-xzf`` gives ``xzf``), for checks that fail closed."""
    return "".join(w[1:] for w in words if w.startswith("-") and not w.startswith("--"))


_ALWAYS_RUNNERS = frozenset({
    "vim", "vi", "view", "ex", "rvim", "rview", "vimdiff", "gvim", "gview", "evim", "nvim", "ed", "red", "emacs",
    "sqlite3", "make", "gmake", "bmake", "run-parts", "dc", "m4",
})
"""Programs whose every call may run command strings the line does not show: editors with ``:!``/``-c``,
``ed``'s ``!``, sqlite3's ``.shell``, make's recipes (from ``-f -``, ``--eval`` or a Makefile), run-parts."""
_TAR_RUNS = ("--checkpoint-action", "--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
             "--rsh-command", "--rmt-command")
_DPKG_RUNS = ("--pre-invoke", "--post-invoke", "--status-logger", "--install", "--unpack", "--configure",
              "--triggers-only", "--remove", "--purge", "--pending")


def _runner_reason(head: str, words: list[str]) -> str | None:
    """Why ``words`` (a call of ``head``) may run a command string this reader does not follow, or None."""
    args = words[1:]
    longs = [a for a in args if a.startswith("--")]
    if head in _ALWAYS_RUNNERS:
        return f"{head} can run commands given to it as text ({head} is opaque unless an allow rule names it)"
    if head in ("tar", "gtar", "bsdtar"):
        old_style = args[0] if args and not args[0].startswith("-") else ""  # "tar cIf prog a.tar"
        if any(may_abbreviate(a, _TAR_RUNS, ("--to-stdout", "--totals", "--touch")) for a in longs) or set("IF") & set(_short_letters(args) + old_style):
            return f"{head} is told to run a program (--to-command, -I, --checkpoint-action...)"
    elif head == "zip":
        if "TT" in _short_letters(args) or any(may_abbreviate(a, ("--unzip-command",)) for a in longs):
            return "zip -TT runs a command to test the archive"
    elif head in ("groff", "troff"):
        if "U" in _short_letters(args):
            return f"{head} -U lets the document run commands"
    elif head == "dpkg":
        if any(may_abbreviate(a, _DPKG_RUNS, ("--status", "--remove-excluded")) for a in longs) or set("irPa") & set(_short_letters(args)):
            return "dpkg runs commands or package scripts here"
    elif head == "rsync":
        if "e" in _short_letters(args) or any(may_abbreviate(a, ("--rsh", "--rsync-path")) for a in longs):
            return "rsync -e runs the command it is given as a remote shell"
    elif head == "sort":
        if any(may_abbreviate(a, ("--compress-program",)) for a in longs):
            return "sort --compress-program runs the program it is given"
    return None


def _env_command(words: list[str], lits: list[bool], unit: Unit, ctx: _Ctx) -> tuple[list[str], list[bool]]:
    """The command ``env ...`` runs, read as GNU env reads its arguments: options (long ones abbreviated
    too, short ones bundled: ``-vS'rm v'``), ``-S``/``--split-string`` strings split into more arguments
    (options among them), then ``NAME=VALUE`` words. What this cannot follow is noted as opaque."""
    args, alits = list(words[1:]), list(lits[1:])
    i = splits = 0
    while i < len(args):
        w = args[i]
        if w == "--":
            i += 1
            break
        if w == "-":  # the same as -i
            i += 1
            continue
        if not w.startswith("-"):
            break
        text, used = _env_option(w, args[i + 1] if i + 1 < len(args) else None, unit)
        if text is None:
            i += used
            continue
        splits += 1
        if splits > 8 or not all(alits[i : i + used]):
            unit.opaque.append("env -S of a computed string")
            return [], []
        if re.search(r"[\\\"'$#]", text):
            unit.opaque.append("env -S with quotes, escapes or variables this reader does not follow")
        parts = text.split()
        args[i : i + used] = parts
        alits[i : i + used] = [True] * len(parts)
    rest, rlits = args[i:], alits[i:]
    while rest and "=" in rest[0]:  # env takes any word with "=" for a variable, whatever its name
        name = rest[0].split("=", 1)[0]
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            unit.opaque.append(f"env passes {name!r}, which bash may read as an imported function")
        _assignment(rest[0], rlits[0], unit, ctx)
        rest, rlits = rest[1:], rlits[1:]
    return rest, rlits


_ENV_LONG = ("--ignore-environment", "--null", "--unset", "--chdir", "--split-string", "--debug", "--argv0",
             "--block-signal", "--default-signal", "--ignore-signal", "--list-signal-handling", "--help", "--version")


def _env_option(w: str, nxt: str | None, unit: Unit) -> tuple[str | None, int]:
    """One env option word: (the ``-S`` string it carries or None, how many words it takes)."""
    if w.startswith("--"):
        full = long_option(w, _ENV_LONG)
        has_value = "=" in w
        if full is None:
            unit.opaque.append(f"env has an option this reader does not know: {w}")
            return None, 1
        if full == "--split-string":
            return (w.partition("=")[2], 1) if has_value else (nxt or "", 2)
        return None, 2 if full in ("--unset", "--chdir", "--argv0") and not has_value else 1
    for j in range(1, len(w)):
        ch = w[j]
        if ch in "iv0":
            continue
        attached = w[j + 1 :]
        if ch == "S":
            return (attached, 1) if attached else (nxt or "", 2)
        if ch in "uCa":
            return None, 1 if attached else 2
        unit.opaque.append(f"env has an option this reader does not know: {w}")
        return None, 1
    return None, 1
