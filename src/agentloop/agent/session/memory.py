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
4. What a memory file may bring in is the user's to allow. Every path is
   resolved (symlinks followed) before it is judged. Loaded: files inside
   the workspace and the added directories, Markdown in the user's own
   memory folders (``~/.claude``, the agentloop home, the managed folder),
   and the memory files in their places (a symlink out of its place counts as
   an import). Anything else is an external import: it loads only when the
   user approved external imports for this folder (asked once in the REPL,
   as Claude Code asks; in ``-p`` refused until then). Never, approved or
   not: ``/proc``, ``/sys``, ``/dev``, ``/run``, credential paths under the
   home (``CREDENTIAL_PATHS``: ``~/.ssh``, ``~/.aws``, ``~/.netrc``...), the
   agentloop home's keys and sessions, and anything that is not a regular
   file (a FIFO is never opened for a blocking read, a device never read).
   The agent reads memory after the folder's trust is settled.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
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


CREDENTIAL_PATHS = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
    ".config/git/credentials", ".config/gh", ".config/glab-cli", ".pypirc", ".npmrc", ".cache/huggingface",
    ".password-store", ".local/share/keyrings", ".config/op", ".1password", ".mozilla", ".config/google-chrome",
    ".config/chromium", ".bash_history", ".zsh_history", ".python_history", ".claude.json", ".claude/.credentials.json",
    ".config/Code/User/globalStorage",
)
"""Under the user's home: never read as memory, whoever asks (rule 4)."""
SYSTEM_NEVER = ("/proc", "/sys", "/dev", "/run")
MAX_WALK_ENTRIES = 5_000
"""A rules folder's walk stops after this many entries (a symlink to ``/`` must not walk the disk)."""


@dataclass
class _Places:
    """Where a memory file may come from (rule 4)."""

    roots: tuple[str, ...]
    """The workspace and the added directories: imports inside load."""
    mine: tuple[str, ...]
    """The user's own memory folders (``~/.claude``, the agentloop home, the managed folder): Markdown there loads."""
    never: tuple[str, ...]
    """Credential paths and system folders: never."""

    def judge(self, real: str) -> str | None:
        """None: it loads; ``"external"``: it needs the user's approval; else why it never loads."""
        if any(_under(real, n) for n in self.never):
            return "a credential or system path is never read as memory"
        if any(_under(real, r) for r in self.roots):
            return None
        if real.endswith(".md") and any(_under(real, m) for m in self.mine):
            return None
        return "external"


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _places(roots: list[str], user_home: str, home: str, managed: str) -> _Places:
    homes = {os.path.realpath(user_home)}
    try:
        import pwd

        homes.add(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))  # the account's, whatever HOME says
    except (ImportError, KeyError):
        pass
    never = [*SYSTEM_NEVER, *(os.path.join(h, c) for h in homes for c in CREDENTIAL_PATHS)]
    for h in homes:
        never += [os.path.join(h, ".agentloop", d) for d in ("keys", "projects")]
    real_home = os.path.realpath(home)
    never += [os.path.join(real_home, d) for d in ("keys", "projects")]
    mine = [*(os.path.join(h, ".claude") for h in homes), real_home, os.path.dirname(os.path.realpath(managed))]
    return _Places(tuple(os.path.realpath(r) for r in roots), tuple(mine), tuple(never))


def _read_regular(real: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file; None for anything else (a FIFO never blocks, a device is
    never read: ``transcript.open_regular``)."""
    from ...transcript import open_regular

    try:
        with open_regular(real) as f:
            return f.read(limit)
    except OSError:
        return None


class _Loader:
    def __init__(self, user_home: str, places: _Places, external: bool) -> None:
        self.files: list[MemoryFile] = []
        self.seen: set[str] = set()
        self.total = 0
        self.user_home = user_home
        self.places = places
        self.external = external
        self.waiting: list[str] = []
        """Imports from outside that wait for the user's approval (rule 4)."""

    def rules(self, folder: str, reason: str, own: str) -> None:
        """Every ``*.md`` under a ``rules`` folder, sorted by path, at most ``MAX_RULE_FILES``; the walk is bounded."""
        found: list[str] = []
        seen = 0
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            seen += len(dirs) + len(files)
            found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
            if len(found) >= MAX_RULE_FILES or seen >= MAX_WALK_ENTRIES:
                break
        for path in sorted(found)[:MAX_RULE_FILES]:
            self.load(path, reason, 0, own=own)

    def _skip(self, real: str, reason: str, why: str) -> None:
        self.files.append(MemoryFile(real, "", f"{reason}; skipped: {why}"))

    def load(self, path: str, reason: str, depth: int, own: str | None = None) -> None:
        """Load ``path``; ``own`` is the folder a file found in place (not imported) may resolve inside as it is."""
        real = os.path.realpath(path)  # symlinks resolved before any check
        if real in self.seen or not os.path.lexists(path):
            return
        self.seen.add(real)
        verdict = self.places.judge(real)
        if verdict == "external" and own is not None and (_under(real, own) or real == os.path.abspath(path)):
            verdict = None  # a file found in its place (no symlink out of it) is that place's
        if verdict == "external":
            if not self.external:
                self.waiting.append(real)
                self._skip(real, reason, "outside the workspace and your memory folders; not approved")
                return
        elif verdict is not None:
            named = os.path.abspath(path)
            self._skip(real, reason, verdict if named == real else f"{verdict} ({named} points there)")
            return
        data = _read_regular(real, MAX_FILE_CHARS * 4 + 4)
        if data is None:
            if os.path.exists(real) and not os.path.isdir(real):
                self._skip(real, reason, "not a regular file")
            return
        self._add(real, data, reason, depth)

    def _add(self, real: str, data: bytes, reason: str, depth: int) -> None:
        text = _scoped(data.decode("utf-8", "replace"))
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[... {real} was cut at {MAX_FILE_CHARS} characters]"
        room = MAX_TOTAL_CHARS - self.total
        if room <= 0:
            self._skip(real, reason, f"memory files exceed {MAX_TOTAL_CHARS} characters")
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


ExternalImports = Callable[[list[str]], bool]
"""Asked once, with the files imported from outside, whether to load them (the REPL's question)."""


def load_memory(
    cwd: str,
    home: str,
    user_home: str | None = None,
    managed: str = MANAGED_MEMORY,
    *,
    roots: Sequence[str] = (),
    external: bool | ExternalImports = False,
) -> list[MemoryFile]:
    """The memory files for a session started in ``cwd``, most general first (rule 1).

    ``home`` is agentloop's home (``agentloop_home()``): its ``AGENTS.md`` is
    the user's own; ``user_home`` is the user's home directory (``~``, for
    ``~/.claude``). Missing and unreadable files are skipped silently.
    ``roots`` are the added directories (the workspace is ``cwd``);
    ``external`` says whether imports from elsewhere load: True, False, or
    a question asked once with their list (rule 4).
    """
    uh = user_home if user_home is not None else os.path.expanduser("~")
    places = _places([cwd, *roots], uh, home, managed)
    loader = _walk(cwd, home, uh, managed, places, external is True)
    if loader.waiting and callable(external) and external(sorted(set(loader.waiting))):
        loader = _walk(cwd, home, uh, managed, places, True)
    return loader.files


def _walk(cwd: str, home: str, uh: str, managed: str, places: _Places, external: bool) -> _Loader:
    loader = _Loader(uh, places, external)
    loader.load(managed, "managed", 0, own=os.path.dirname(managed))
    loader.load(os.path.join(home, "AGENTS.md"), "user", 0, own=home)
    loader.load(os.path.join(uh, ".claude", "CLAUDE.md"), "user", 0, own=os.path.join(uh, ".claude"))
    loader.rules(os.path.join(uh, ".claude", "rules"), "user rule", os.path.realpath(os.path.join(uh, ".claude")))
    real_cwd = os.path.realpath(cwd)
    top = _git_top(real_cwd) or os.sep
    for d in _chain(top, real_cwd):
        for name in MEMORY_NAMES:
            loader.load(os.path.join(d, name), "project", 0, own=d)
        loader.rules(os.path.join(d, ".claude", "rules"), "project rule", d)
        for name in LOCAL_NAMES:
            loader.load(os.path.join(d, name), "local", 0, own=d)
    return loader


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
