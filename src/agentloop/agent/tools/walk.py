"""Walking a directory tree as git would see it, and glob patterns for the file tools.

Rules:

1. ``.gitignore`` files are honoured at every level, from the repository's
   top (the nearest ancestor holding ``.git``, else the workspace root) down
   to each directory walked, plus ``.git/info/exclude``. The deepest file with
   a matching pattern decides, and a ``!`` pattern re-includes, as in git.
   Matching uses ``pathspec``'s ``GitIgnoreSpec``, which implements git's
   wildmatch rules (a home-made matcher gets ``**``, anchoring and negation
   subtly wrong), on its RE2 backend: a ``.gitignore`` comes from the
   repository, and on a backtracking engine one line such as
   ``*a*a*a*a*a*a*a*a*a*b`` stalls every walk on a long file name.
2. An ignored directory is not entered: git cannot re-include a file below an
   excluded directory either. ``.git`` itself is never walked.
3. Symlinked directories are not followed (loops, escapes). A symlinked file
   is yielded as its real path, and only when that lies inside the workspace.
   Each directory is listed through a descriptor opened by the workspace's
   symlink-free walk, so swapping a directory for a link mid-walk does not
   list what lies outside.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from ...tools import ToolError
from .linear_regex import Matcher, RegexError, compile_linear, quote
from .workspace import Workspace

__all__ = ["Found", "IgnoreRules", "glob_to_regex", "walk", "walk_files"]

if TYPE_CHECKING:
    import pathspec

_Spec = tuple[str, "pathspec.GitIgnoreSpec"]


def _read_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    import pathspec  # deferred: a run that never walks a tree never loads it

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")


def _repo_top(start: str, stop: str) -> str:
    """The nearest ancestor of ``start`` (up to ``/``) holding ``.git``, else ``stop``."""
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return stop
        d = parent


class IgnoreRules:
    """The gitignore patterns in force for one directory, inherited by its children."""

    def __init__(self, specs: tuple[_Spec, ...] = ()):
        self.specs = specs

    @classmethod
    def for_directory(cls, directory: str, fallback_top: str) -> IgnoreRules:
        """The rules of ``directory`` gathered from the repository top down to it."""
        top = _repo_top(directory, fallback_top)
        if not (directory == top or directory.startswith(top.rstrip(os.sep) + os.sep)):
            top = directory
        chain: list[str] = []
        d = directory
        while True:
            chain.append(d)
            if d == top:
                break
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        specs: list[_Spec] = []
        exclude = _read_spec(os.path.join(top, ".git", "info", "exclude"))
        if exclude is not None:
            specs.append((top, exclude))
        for d in reversed(chain):
            spec = _read_spec(os.path.join(d, ".gitignore"))
            if spec is not None:
                specs.append((d, spec))
        return cls(tuple(specs))

    def child(self, directory: str) -> IgnoreRules:
        """The rules for a subdirectory: these plus its own ``.gitignore``."""
        spec = _read_spec(os.path.join(directory, ".gitignore"))
        if spec is None:
            return self
        return IgnoreRules((*self.specs, (directory, spec)))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """True when git would ignore ``path`` (an absolute path)."""
        for base, spec in reversed(self.specs):
            prefix = base if base.endswith(os.sep) else base + os.sep
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :].replace(os.sep, "/")
            if is_dir:
                rel += "/"
            result = spec.check_file(rel)
            if result.include is not None:
                return bool(result.include)
        return False


class Found(NamedTuple):
    """A file the walk found."""

    path: str
    """Its real path."""
    dir_fd: int | None
    """A descriptor of its directory, valid until the walk moves on (None for a symlinked file)."""
    name: str


def walk_files(
    ws: Workspace,
    base: str,
    *,
    respect_gitignore: bool = True,
    visible: Callable[[str], bool] | None = None,
) -> Iterator[str]:
    """Every file below the real directory ``base`` that git would not ignore.

    Yields real paths inside the workspace, in a stable (sorted) order.
    ``visible(path)`` can hide more paths (e.g. those a permission rule denies).
    """
    for found in walk(ws, base, respect_gitignore=respect_gitignore, visible=visible):
        yield found.path


def walk(
    ws: Workspace,
    base: str,
    *,
    respect_gitignore: bool = True,
    visible: Callable[[str], bool] | None = None,
) -> Iterator[Found]:
    """Like ``walk_files``, also giving each file's directory descriptor so it can be opened safely and cheaply."""
    rules = IgnoreRules.for_directory(base, ws.root) if respect_gitignore else IgnoreRules()
    stack: list[tuple[str, IgnoreRules]] = [(base, rules)]
    while stack:
        directory, rules = stack.pop()
        try:
            # Listed through a descriptor from the symlink-free walk of the
            # workspace, so a directory swapped for a link mid-walk is skipped.
            fd = ws.open_resolved(directory)
        except (OSError, ToolError):
            continue
        try:
            try:
                with os.scandir(fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            subdirs: list[tuple[str, IgnoreRules]] = []
            for e in entries:
                if e.name == ".git":
                    continue
                try:
                    is_link = e.is_symlink()
                    is_dir = e.is_dir(follow_symlinks=False)
                    is_file = e.is_file(follow_symlinks=False)
                except OSError:
                    continue
                path = os.path.join(directory, e.name)
                if respect_gitignore and rules.ignored(path, is_dir):
                    continue
                if visible is not None and not visible(path):
                    continue
                if is_dir:
                    sub = rules.child(path) if respect_gitignore else rules
                    subdirs.append((path, sub))
                    continue
                if is_link:
                    real = os.path.realpath(path)
                    if not ws.contains(real) or not os.path.isfile(real):
                        continue
                    if visible is not None and not visible(real):
                        continue
                    yield Found(real, None, e.name)
                    continue
                if is_file:
                    if ws.hidden_homes and not ws.contains(path):
                        continue  # a dot file at the top of a home workspace (~/.netrc): not the workspace's
                    yield Found(path, fd, e.name)
        finally:
            os.close(fd)
        stack.extend(reversed(subdirs))


@lru_cache(maxsize=256)
def glob_to_regex(pattern: str) -> Matcher:
    """A compiled regex for a glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay within one path segment, ``**`` spans segments
    (``**/`` also matches no directory at all), ``[...]`` is a class and
    ``{a,b}`` an alternation. The regex runs on RE2 (``linear_regex``), so matching
    takes time linear in the name whatever the pattern: a backtracking
    engine takes minutes over ``*a*a*a*a*a*a*a*a*a*b`` and a long name.
    """
    i, n = 0, len(pattern)
    out: list[str] = []
    depth = 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                j = i + 2
                if j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                else:
                    out.append(".*")
                    i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2 if i + 1 < n and pattern[i + 1] in "!^" else i + 1)
            if j < 0:
                out.append(quote(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(quote(pattern[i]))
        else:
            out.append(quote(c))
        i += 1
    out.extend(")" * depth)
    try:
        return compile_linear("".join(out) + r"\z", flags="s")
    except RegexError:
        return compile_linear(quote(pattern) + r"\z")
