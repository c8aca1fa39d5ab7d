"""Memory files: the standing instructions loaded into the system prompt.

Rules:

1. Files, in order, most general first (Claude Code's memory documentation
   names the same places; ``AGENTS.md`` and ``AGENT.md`` are read beside
   them): the managed ``/etc/claude-code/CLAUDE.md``; the user's
   ``<agentloop home>/AGENTS.md``, ``~/.claude/CLAUDE.md`` and
   ``~/.claude/rules/**/*.md``; then for every directory from the top of the
   git repository (or ``/`` outside git) down to the working directory:
   ``AGENTS.md``, ``AGENT.md``, ``CLAUDE.md``, ``.claude/CLAUDE.md``,
   ``.claude/rules/**/*.md`` (sorted) and ``CLAUDE.local.md``. Later files
   are more specific and come later in the prompt. A rule file whose front
   matter has ``paths:`` is loaded all the same, with a line saying which
   files it is about (Claude Code loads such rules only when those files are
   read; agentloop has no on-demand loading, and says so rather than drop
   the rule).
2. ``@path`` in a file imports another file (relative to the importing file,
   ``~/`` for the home directory, or absolute), up to 5 hops deep, as in
   Claude Code. Imports
   are not read inside code spans or fenced code blocks, nor from
   e-mail-like text (``a@b.c``). A file is loaded once, by its real path, so
   ``CLAUDE.md`` holding ``@AGENTS.md`` (the documented bridge) or a symlink
   does not duplicate it, and cycles end.
3. Sizes are capped: each file at ``MAX_FILE_CHARS``, all of them together
   at ``MAX_TOTAL_CHARS``; a cut file says so, and skipped files are listed
   with the reason, so the session can record exactly what was loaded.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["MAX_FILE_CHARS", "MAX_IMPORT_DEPTH", "MAX_TOTAL_CHARS", "MemoryFile", "load_memory", "render_memory"]

MEMORY_NAMES = ("AGENTS.md", "AGENT.md", "CLAUDE.md", ".claude/CLAUDE.md")
LOCAL_NAMES = ("CLAUDE.local.md",)
MANAGED_MEMORY = "/etc/claude-code/CLAUDE.md"
MAX_IMPORT_DEPTH = 5
MAX_RULE_FILES = 200
MAX_FILE_CHARS = 40_000
MAX_TOTAL_CHARS = 120_000

_IMPORT = re.compile(r"(?<![\w@/.\\])@((?:~/|\.{1,2}/|/)?[A-Za-z0-9_\-.][^\s`'\"()<>\[\]{}]*)")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True)
class MemoryFile:
    """One loaded file."""

    path: str
    """Its real path."""
    text: str
    """Its content (cut at ``MAX_FILE_CHARS``)."""
    reason: str
    """Why it was loaded: ``user``, ``project``, or ``imported by <path>``."""


def _git_top(cwd: str) -> str | None:
    d = cwd
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _chain(top: str, cwd: str) -> list[str]:
    dirs = [cwd]
    d = cwd
    while d != top:
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        dirs.append(d)
    return list(reversed(dirs))


def _imports(text: str) -> list[str]:
    masked = _FENCE.sub(lambda m: " " * len(m.group(0)), text)
    masked = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), masked)
    out = []
    for m in _IMPORT.finditer(masked):
        target = m.group(1).rstrip(".,;:!?")
        if target:
            out.append(target)
    return out


class _Loader:
    def __init__(self, user_home: str) -> None:
        self.files: list[MemoryFile] = []
        self.seen: set[str] = set()
        self.total = 0
        self.user_home = user_home

    def rules(self, folder: str, reason: str) -> None:
        """Every ``*.md`` under a ``rules`` folder, sorted by path, at most ``MAX_RULE_FILES``."""
        found: list[str] = []
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
            if len(found) >= MAX_RULE_FILES:
                break
        for path in sorted(found)[:MAX_RULE_FILES]:
            self.load(path, reason, 0)

    def load(self, path: str, reason: str, depth: int) -> None:
        real = os.path.realpath(path)
        if real in self.seen or not os.path.isfile(real):
            return
        self.seen.add(real)
        try:
            with open(real, "rb") as f:
                data = f.read(MAX_FILE_CHARS * 4 + 4)
        except OSError:
            return
        text = _scoped(data.decode("utf-8", "replace"))
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[... {real} was cut at {MAX_FILE_CHARS} characters]"
        room = MAX_TOTAL_CHARS - self.total
        if room <= 0:
            self.files.append(MemoryFile(real, "", f"{reason}; skipped: memory files exceed {MAX_TOTAL_CHARS} characters"))
            return
        if len(text) > room:
            text = text[:room] + f"\n[... cut: memory files exceed {MAX_TOTAL_CHARS} characters]"
        self.total += len(text)
        self.files.append(MemoryFile(real, text, reason))
        if depth >= MAX_IMPORT_DEPTH:
            return
        base = os.path.dirname(real)
        for target in _imports(text):
            if target.startswith("~/"):
                full = os.path.join(self.user_home, target[2:])
            elif os.path.isabs(target):
                full = target
            else:
                full = os.path.join(base, target)
            self.load(full, f"imported by {real}", depth + 1)


def _scoped(text: str) -> str:
    """A rule's ``paths:`` front matter, said in words (rule 1); other text unchanged."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---", 4)
    if end < 0:
        return text
    head = text[4:end]
    paths: list[str] = []
    lines = head.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("paths:"):
            rest = line.split(":", 1)[1].strip()
            if rest:
                paths += [p.strip().strip("'\"") for p in rest.strip("[]").split(",") if p.strip()]
            for follow in lines[i + 1 :]:
                if not follow.strip().startswith("-"):
                    break
                paths.append(follow.strip()[1:].strip().strip("'\""))
    body = text[end + 4 :].lstrip("\n")
    if not paths:
        return body
    return f"(This rule is about files matching: {', '.join(paths)}.)\n\n{body}"


def load_memory(cwd: str, home: str, user_home: str | None = None, managed: str = MANAGED_MEMORY) -> list[MemoryFile]:
    """The memory files for a session started in ``cwd``, most general first (rule 1).

    ``home`` is agentloop's home (``agentloop_home()``): its ``AGENTS.md`` is
    the user's own; ``user_home`` is the user's home directory (``~``, for
    ``~/.claude``). Missing and unreadable files are skipped silently.
    """
    uh = user_home if user_home is not None else os.path.expanduser("~")
    loader = _Loader(uh)
    loader.load(managed, "managed", 0)
    loader.load(os.path.join(home, "AGENTS.md"), "user", 0)
    loader.load(os.path.join(uh, ".claude", "CLAUDE.md"), "user", 0)
    loader.rules(os.path.join(uh, ".claude", "rules"), "user rule")
    real_cwd = os.path.realpath(cwd)
    top = _git_top(real_cwd) or os.sep
    for d in _chain(top, real_cwd):
        for name in MEMORY_NAMES:
            loader.load(os.path.join(d, name), "project", 0)
        loader.rules(os.path.join(d, ".claude", "rules"), "project rule")
        for name in LOCAL_NAMES:
            loader.load(os.path.join(d, name), "local", 0)
    return loader.files


def render_memory(files: list[MemoryFile]) -> str:
    """The memory files as one block for the system prompt ("" when there are none)."""
    parts = []
    for f in files:
        if not f.text.strip():
            continue
        parts.append(f"Contents of {f.path} ({f.reason}):\n\n{f.text.rstrip()}\n")
    if not parts:
        return ""
    head = (
        "Instructions from memory files (AGENTS.md, CLAUDE.md). Follow them; when they disagree, "
        "the later, more specific file wins.\n\n"
    )
    return head + "\n".join(parts)
