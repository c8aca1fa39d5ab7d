"""What a sandboxed command may not leave behind for the host to run: git's metadata and start-up files.

A command in the sandbox may write its workspace, and git keeps a repository's
metadata inside it. Whatever git reads from there and runs (hooks, the config's
programs, a ``commondir`` or ``gitdir:`` that points at a planted config, a
submodule's git directory) would run on the host the next time the user runs
git. Bubblewrap can only mount over names that exist, and a commit must be
able to create files at the top of ``.git`` (``index.lock`` renamed over
``index``), so the guard has two halves (docs/decisions/0011-the-sandbox-is-the-wall-for-persistence-and-reads.md):

1. Before a command (``plan``): every git directory found in the writable
   roots is made a mount point of its own (it cannot be renamed aside,
   removed or replaced), and inside it ``config``, ``hooks``, ``info``,
   ``commondir`` and ``config.worktree`` are mounted read-only; a missing
   ``hooks`` or ``info`` folder is created empty first so it can be mounted
   too. A ``.git`` file (``gitdir:``) is mounted read-only, and so are the
   files git's configuration names as programs, hook folders or includes
   when they lie in a writable root. The same holds for the user's shell and
   tool start-up files when the home folder is writable.
2. After a command (``check``), once nothing of it is left running: names
   that were missing and could not be mounted (``commondir``, a start-up
   file, a configured hook folder...) and git directories that did not exist
   before are looked at. A missing name that appeared, or a new git
   directory with a hook or a configuration key outside the short list a
   clone or ``git init`` writes, is moved aside (``NAME.blocked-by-agentloop``)
   and the command's result says so.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .wall import DIR, DISK, TreeWalk, View

__all__ = ["BLOCKED_SUFFIX", "EDITOR_FOLDERS", "STARTUP_FILES", "GitPlan", "account_homes", "check", "check_names", "plan", "sweep", "user_home_of",
           "write_refusal"]

BLOCKED_SUFFIX = ".blocked-by-agentloop"

GITDIR_READ_ONLY = ("config", "hooks", "info", "commondir", "config.worktree")
"""Inside a git directory: what git reads and runs, kept read-only."""
GITDIR_MAKE = ("hooks", "info")
"""Folders created empty (harmless to git) when missing, so they can be mounted read-only."""
GITDIR_WATCH = ("commondir", "config.worktree")
"""Files that cannot be made ahead: must not appear during a command."""

STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".inputrc", ".xprofile",
    ".xsessionrc", ".xinitrc", ".pam_environment", ".gitconfig", ".config/git", ".config/fish", ".config/systemd",
    ".config/autostart", ".config/environment.d", ".local/bin", ".local/lib", ".ssh", ".claude.json", ".pythonrc",
    ".pythonstartup", ".npmrc", ".pypirc", ".config/pip", ".cargo/config", ".cargo/config.toml", ".cargo/bin",
)
"""Under the user's home: files and folders that start programs (shells, git, systemd, the desktop, Python's
user site and its ``.pth`` files, user tools on ``PATH``), read-only to sandboxed commands wherever the home
is writable to them."""

EDITOR_FOLDERS = (".vscode", ".idea", ".helix", ".zed")
"""At the top of each writable root: the editors' project settings, which a trusted folder's editor applies on
opening without looking (VS Code's ``settings.json`` names the git, terminal and interpreter it starts, its
``tasks.json`` runs tasks on opening; JetBrains' ``.idea`` holds run configurations and startup tasks; Helix's
and Zed's ``languages.toml``/``settings.json`` name the language servers they start, helix-editor/helix#9514).
Claude Code's sandbox (sandbox-runtime's mandatory denials) keeps the first two from writes; here all are read-only where they
exist and a command cannot make them where they do not (``GitPlan.unmade``: the supervisor refuses the name). Only
the roots' tops: folders deeper down are what packages ship (an npm tarball's ``.vscode``), and an editor opens
the workspace."""

_CLEAN_KEYS = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.quotepath",
    "core.sparsecheckout", "core.sparsecheckoutcone", "core.compression", "core.abbrev", "core.untrackedcache",
    "core.worktree", "core.checkstat", "core.trustctime", "core.longpaths", "core.preloadindex",
    "remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt", "remote.*.mirror",
    "remote.*.prune", "remote.*.promisor", "remote.*.partialclonefilter",
    "branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote", "branch.*.description",
    "user.name", "user.email", "init.defaultbranch", "extensions.*", "gc.*", "pack.*", "fetch.prune",
    "pull.rebase", "pull.ff", "push.default", "push.autosetupremote", "advice.*", "color.*", "index.*",
    "submodule.*.url", "submodule.*.active", "submodule.*.path", "submodule.*.branch", "lfs.repositoryformatversion",
)
"""Configuration keys a clone, ``git init`` or ``git submodule`` writes, none of which runs a program. A new
git directory whose configuration holds any other key is moved aside (an allow-list: git has too many
keys that run programs to list them)."""

_PROGRAM_KEYS = re.compile(
    r"^(core\.(fsmonitor|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)|sequence\.editor|diff\.external"
    r"|gpg(\..*)?\.program|credential(\..*)?\.helper|.*\.textconv|.*\.command|.*\.cmd|filter\..*\.(clean|smudge|process)"
    r"|merge\..*\.driver|alias\..*|pager\..*|interactive\.difffilter|remote\..*\.(uploadpack|receivepack)"
    r"|uploadpack\.packobjectshook|include\.path|includeif\..*\.path|core\.hookspath|core\.excludesfile"
    r"|core\.attributesfile)$"
)
"""Keys of an existing configuration whose value names a file git runs or reads for programs."""


@dataclass
class GitPlan:
    """What to mount before a command, and what to look at after it."""

    self_binds: list[str] = field(default_factory=list)
    """Git directories (and their parents' ``.git`` files' targets) made mount points of their own."""
    read_only: list[str] = field(default_factory=list)
    """Existing paths mounted read-only."""
    watch: list[str] = field(default_factory=list)
    """Missing paths that must still be missing after the command."""
    pinned: dict[str, str] = field(default_factory=dict)
    """Symbolic links (a ``hooks`` folder, a dotfile) that must still point where they did after the command."""
    unmade: list[str] = field(default_factory=list)
    """Missing paths the supervisor refuses to let a command make, which the watch leaves alone: the user's
    own editor may make them on the host while a background command runs (``EDITOR_FOLDERS``)."""
    gitdirs: set[str] = field(default_factory=set)
    """Every ``.git`` entry (file or folder) and git directory found before the command (real paths)."""
    roots: tuple[str, ...] = ()


def _inside(p: str, roots: Iterable[str]) -> bool:
    return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


_config_memo: dict[str, tuple[tuple[int, int, int, int], list[tuple[str, str]]]] = {}


def config_entries(path: str) -> list[tuple[str, str]]:
    """``(key, value)`` of one configuration file, includes not followed; [] when unreadable.

    Remembered while the file's inode, size and modification time stay the same (each command reads the
    same few files again)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _config_memo.get(path)
    if hit is not None and hit[0] == stamp:
        return list(hit[1])
    entries = _read_config(path)
    if len(_config_memo) > 512:
        _config_memo.clear()
    _config_memo[path] = (stamp, entries)
    return list(entries)


_MAX_CONFIG = 1 << 20
"""A git configuration larger than this is not read (a command could make one of gigabytes)."""


_SECTION = re.compile(r'^\s*\[([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\]\s*(.*)$')
_VARIABLE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$")


def _read_config(path: str) -> list[tuple[str, str]]:
    """The user's own configuration, read leniently (a line that is not understood is skipped)."""
    return parse_config(path, strict=False) or []


def parse_config(path: str, *, strict: bool, view: View | None = None) -> list[tuple[str, str]] | None:
    """``(key, value)`` of a git configuration file, read in this process (no git is started), keys
    lower-cased (``remote.origin.url``). Includes are not followed.

    ``strict`` is for a file a command wrote: only the plain lines that ``git init``, ``git clone`` and
    ``git config`` write are understood, and anything else (a continued line, a key on its section's
    line, bytes that are not UTF-8) gives None, so a file git would read otherwise is never taken for clean.
    """
    raw = (view or DISK).read(path, _MAX_CONFIG)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if strict and "\0" in text:
        return None
    out: list[tuple[str, str]] = []
    section = ""
    for line in text.splitlines():
        body = line.strip()
        if not body or body[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower() + (f".{m.group(2)}" if m.group(2) is not None else "")
            rest = m.group(3).strip()
            if not rest or rest[0] in "#;":
                continue
            if strict:
                return None
            line = rest
        v = _VARIABLE.match(line)
        if v is None or not section or (v.group(2) or "").endswith("\\"):
            if strict:
                return None
            continue
        value = v.group(2) or ""
        if not strict and not value.startswith('"'):
            value = re.split(r"\s[#;]", value, maxsplit=1)[0].rstrip()
        elif not strict:
            value = value[1:value.find('"', 1)] if '"' in value[1:] else value[1:]
        elif value.startswith('"') and value.endswith('"') and len(value) > 1:
            value = value[1:-1]
        out.append((f"{section}.{v.group(1)}".lower(), value))
    return out


def gitdir_of_file(dot_git: str) -> str | None:
    """The git directory a ``.git`` file (``gitdir: PATH``) points at."""
    try:
        with open(dot_git, "rb") as f:
            line = f.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), line[len("gitdir:"):].strip()))


def _is_gitdir(d: str, view: View = DISK) -> bool:
    """``d`` is a folder git could take for a repository, by its shape (see ``wall.looks_like_gitdir``): any
    entry named ``objects`` counts, whatever it is, since git only asks ``access(objects, X_OK)``, which a
    symbolic link to another repository's objects (or an executable file) passes."""
    return view.lexists(os.path.join(d, "HEAD")) and (
        view.lexists(os.path.join(d, "objects")) or view.lexists(os.path.join(d, "commondir")))


def _program_path_refusal(after: View, roots: Sequence[str]) -> str | None:
    """Why a written path is one the configuration of the repository it lies in (or the user's own) names as a
    program, a hook folder or an include (``core.hooksPath = .husky``, ``include.path``): read-only to commands
    (``plan``), so not written by the file tools either (None: none is)."""
    homes = account_homes(user_home_of({}))
    memo: dict[str, list[str]] = {}
    for path, data in after.pending.items():
        if data is DIR:
            continue
        root = next((r for r in roots if _inside(path, [r])), None)
        d = os.path.dirname(path)
        while root is not None and _inside(d, [root]):
            dot = os.path.join(d, ".git")
            if d not in memo:
                gitdir = os.path.realpath(dot) if os.path.isdir(dot) else gitdir_of_file(dot) if os.path.isfile(dot) else None
                memo[d] = _program_paths(gitdir, d, homes) if gitdir else []
            hit = next((t for t in memo[d] if _inside(path, [t])), None)
            if hit is not None:
                return f"{path} is in {hit}, which the configuration of the repository at {d} runs or reads for programs"
            if d == root:
                break
            d = os.path.dirname(d)
    return None


def _runs_from(d: str, path: str) -> bool:
    """``path`` is one of the files of the git directory ``d`` that name or are programs: its ``config``,
    ``config.worktree``, ``commondir``, or anything under ``hooks``."""
    return path in (os.path.join(d, n) for n in ("config", "config.worktree", "commondir")) or _inside(
        path, [os.path.join(d, "hooks")])


def _may_become_gitdir(d: str, view: View) -> bool:
    """``d`` holds a ``HEAD``: judged as a repository even before it has ``objects``, since a sandboxed
    command running beside the write could add ``objects`` (or a link of that name) between this check and
    the write, and a folder holding ``HEAD`` can gain nothing from a sandboxed command afterwards
    (``supervisor.CreationPolicy``). So the check and the supervisor together leave no moment where a
    folder is a repository with a program in it."""
    return view.lexists(os.path.join(d, "HEAD")) or _is_gitdir(d, view)


def _gitdirs_from(dot_gits: Iterable[str]) -> list[str]:
    """The git directories behind ``.git`` entries, with their submodules' and worktrees' and common dirs."""
    out: list[str] = []
    todo = []
    for g in dot_gits:
        todo.append(os.path.realpath(g) if os.path.isdir(g) else (gitdir_of_file(g) or ""))
    while todo:
        d = todo.pop()
        if not d or d in out or not os.path.isdir(d):
            continue
        out.append(d)
        try:
            with open(os.path.join(d, "commondir"), encoding="utf-8", errors="replace") as f:
                todo.append(os.path.realpath(os.path.join(d, f.read(4096).strip())))
        except OSError:
            pass
        for sub in ("modules", "worktrees"):
            todo += _nested_gitdirs(os.path.join(d, sub))
    return out


def _nested_gitdirs(top: str, depth: int = 4) -> list[str]:
    """Git directories under ``.git/modules`` (submodule names may hold slashes) or ``.git/worktrees``."""
    out: list[str] = []
    try:
        entries = list(os.scandir(top))
    except OSError:
        return out
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if _is_gitdir(e.path):
                out.append(os.path.realpath(e.path))
            elif depth > 0:
                out += _nested_gitdirs(e.path, depth - 1)
    return out


def _program_paths(gitdir: str, worktree: str | None, homes: Sequence[str]) -> list[str]:
    """Files the configuration of ``gitdir`` (and the user's) names as programs, hook folders or includes."""
    files = [os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree")]
    for h in homes:
        files += [os.path.join(h, ".gitconfig"), os.path.join(h, ".config", "git", "config")]
    base = worktree or gitdir
    out = []
    for cf in files:
        if not os.path.isfile(cf):
            continue
        for key, value in config_entries(cf):
            if not _PROGRAM_KEYS.match(key) or not value.strip():
                continue
            if key == "core.fsmonitor" and value.strip().lower() in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                continue
            word = value.strip().lstrip("!").split()[0] if value.strip().lstrip("!").split() else ""
            if "/" not in word and not key.endswith(".path") and key not in ("core.hookspath",):
                continue
            if word.startswith("~/") and homes:
                word = homes[0] + word[1:]
            rel_base = os.path.dirname(cf) if key.endswith(".path") else base
            out.append(os.path.realpath(os.path.join(rel_base, word)))
    return out


def _guard(p: GitPlan, path: str, roots: Sequence[str]) -> None:
    """Keep ``path`` as it is: read-only when it exists, pinned (and its target read-only) when it is a
    link, watched when it is missing."""
    if os.path.islink(path):
        try:
            p.pinned[path] = os.readlink(path)
        except OSError:
            return
        target = os.path.realpath(path)
        if os.path.exists(target) and _inside(target, roots):
            p.read_only.append(target)
    elif os.path.lexists(path):
        p.read_only.append(path)
    else:
        p.watch.append(path)


def plan(roots: Sequence[str], homes: Sequence[str] = (), walk: TreeWalk | None = None) -> GitPlan:
    """The mounts and watches for one command whose writable places are ``roots`` (real paths).

    ``walk``: the session's walk of the roots (re-reads only what changed); a new one when None. Every
    folder is looked at, however many there are: a ``.git`` entry and any folder shaped like a git
    directory (a bare repository written as plain files) are guarded alike."""
    p = GitPlan(roots=tuple(roots))
    shapes, dot_gits = (walk or TreeWalk(roots)).walk()
    for g in dot_gits:
        p.gitdirs.add(os.path.realpath(g) if os.path.isdir(g) else g)
        if os.path.isfile(g) and not os.path.islink(g):
            p.read_only.append(g)
    gitdirs = _gitdirs_from([*dot_gits, *shapes])
    p.gitdirs.update(gitdirs)
    for d in gitdirs:
        if not _inside(d, roots):
            continue
        p.self_binds.append(d)
        for name in GITDIR_READ_ONLY:
            path = os.path.join(d, name)
            if name in GITDIR_MAKE and not os.path.lexists(path):
                try:
                    os.mkdir(path)
                except OSError:
                    pass
            if os.path.lexists(path) or name in GITDIR_WATCH:
                _guard(p, path, roots)
        worktree = os.path.dirname(d) if os.path.basename(d) == ".git" else None
        for target in _program_paths(d, worktree, homes):
            if _inside(target, roots):
                (p.read_only if os.path.lexists(target) and not os.path.islink(target) else p.watch).append(target)
    for h in homes:
        for name in STARTUP_FILES:
            path = os.path.join(h, name)
            if _inside(path, roots):
                _guard(p, path, roots)
    for r in roots:
        for name in EDITOR_FOLDERS:
            path = os.path.join(r, name)
            if os.path.lexists(path):
                _guard(p, path, roots)
            else:
                p.unmade.append(path)
    p.self_binds = list(dict.fromkeys(p.self_binds))
    p.read_only = list(dict.fromkeys(p.read_only))
    p.watch = list(dict.fromkeys(p.watch))
    return p


def _move_aside(path: str) -> str:
    n = 0
    while True:
        dest = f"{path}{BLOCKED_SUFFIX}" + (f".{n}" if n else "")
        if not os.path.lexists(dest):
            os.rename(path, dest)
            return dest
        n += 1


def _new_gitdir_problem(d: str, known: set[str], view: View = DISK) -> str | None:
    """What in a git directory made during a command would run code on the host (None: nothing)."""
    found: list[str] = []
    hooks = os.path.join(d, "hooks")
    planted = [n for n in view.listdir(hooks) if not n.endswith(".sample")] if view.isdir(hooks) else []
    if planted:
        found.append(f"hooks ({', '.join(planted)})")
    elif view.lexists(hooks) and not view.isdir(hooks):
        found.append("hooks that is not a plain folder")
    for name in ("config", "config.worktree"):
        cf = os.path.join(d, name)
        if view.isfile(cf) and not os.path.islink(cf):
            entries = parse_config(cf, strict=True, view=view)
            if entries is None:
                found.append(f"{name} in a form git init and git clone do not write")
                continue
            bad = [k for k, _ in entries if not any(fnmatch.fnmatchcase(k, pat) for pat in _CLEAN_KEYS)]
            if bad:
                found.append(f"{name} sets {', '.join(dict.fromkeys(bad))}")
        elif view.lexists(cf):
            found.append(f"{name} is not a plain file")
    common = os.path.join(d, "commondir")
    if view.lexists(common):
        raw = view.read(common, 4096)
        if raw is None:
            found.append("an unreadable commondir")
        else:
            target = os.path.realpath(os.path.join(d, raw.decode("utf-8", "replace").strip()))
            if target not in known:
                found.append(f"commondir points at {target}, a git directory made during the command")
    return "; ".join(found) or None


def _check_pinned(p: GitPlan) -> list[str]:
    """Links that no longer point where they did: what replaced them moved aside, the link put back."""
    notes: list[str] = []
    for path, was in p.pinned.items():
        try:
            same = os.readlink(path) == was
        except OSError:
            same = not os.path.lexists(path)  # gone: nothing there to run
        if same:
            continue
        try:
            dest = _move_aside(path)
            os.symlink(was, path)
        except OSError as exc:
            notes.append(f"{path} was changed and could not be put back ({exc.strerror or exc})")
            continue
        notes.append(f"{path} was replaced; it would run code outside the sandbox, so it was moved to {dest} and the link put back")
    return notes


def check(p: GitPlan, walk: TreeWalk | None = None) -> list[str]:
    """After a command: move aside what it planted; one line for each thing moved.

    ``walk``: the session's walk of the roots (a new one when None)."""
    return check_names(p) + sweep(p, walk or TreeWalk(p.roots))


def check_names(p: GitPlan) -> list[str]:
    """The names ``p`` could not mount that now exist, and its pinned links that moved: moved aside."""
    notes = []
    for path in p.watch:
        if os.path.lexists(path):
            try:
                dest = _move_aside(path)
            except OSError as exc:
                notes.append(f"{path} was created and could not be moved aside ({exc.strerror or exc})")
                continue
            notes.append(f"{path} was created; it would run code outside the sandbox, so it was moved to {dest}")
    notes += _check_pinned(p)
    return notes


def sweep(p: GitPlan, walk: TreeWalk, *, walked: bool = False) -> list[str]:
    """Every git directory under the roots that is not one of ``p.gitdirs`` (those that were there before),
    found by its shape wherever it is and however many entries the tree holds, and every new ``.git``
    entry: what would make the host's git run code is moved aside; one line each. Called after each
    command and, while commands run (background ones too), by the sandbox's watch.

    ``walked``: ``walk`` is up to date already (the watch updated the folders inotify named); otherwise
    the whole tree is walked first."""
    shapes, dot_gits = walk.known() if walked else walk.walk()
    fresh = [g for g in dot_gits if (os.path.realpath(g) if os.path.isdir(g) else g) not in p.gitdirs]
    new_dirs = [d for d in _gitdirs_from([*dot_gits, *shapes, *(x for x in p.gitdirs if os.path.isdir(x))])
                if d not in p.gitdirs and _inside(d, p.roots)]
    known = set(p.gitdirs) | set(new_dirs)
    notes: list[str] = []
    moved: list[str] = []
    for d in sorted(new_dirs, key=len):
        if _inside(d, moved):
            continue
        why = _new_gitdir_problem(d, p.gitdirs)
        if why is None:
            continue
        try:
            dest = _move_aside(d)
            _move_aside(os.path.join(dest, "HEAD"))  # no longer shaped like a repository: git would not use it
        except OSError as exc:
            notes.append(f"the new git directory {d} holds {why} and could not be moved aside ({exc.strerror or exc})")
            continue
        moved.append(d)
        notes.append(f"the new git directory {d} holds {why}, which the host's git would run; it was moved to {dest}")
    for g in fresh:
        if not os.path.lexists(g):
            continue
        target = os.path.realpath(g) if os.path.isdir(g) else gitdir_of_file(g)
        if target is None or target in known or _inside(target, p.roots):
            continue  # not a way to a git directory, or one checked above
        try:
            dest = _move_aside(g)
        except OSError as exc:
            notes.append(f"{g} points git at {target} and could not be moved aside ({exc.strerror or exc})")
            continue
        notes.append(f"{g} points git at {target}, outside the workspace; it was moved to {dest}")
    return notes


def write_refusal(pending: Mapping[str, bytes | None], roots: Sequence[str]) -> str | None:
    """Why writing ``pending`` (real path -> new bytes, None to remove) would let the user's git run code
    it did not run before (None: it would not). The one check every file-writing path calls before it
    writes (Write, Edit, NotebookEdit, apply_patch, a sub-agent's merge-back, ACP's editor writes); the
    sandbox's ``sweep`` applies the same ``_new_gitdir_problem`` to what commands wrote.

    Each folder from a written path up to its root is looked at as git would: when the write leaves one
    shaped like a git directory (``HEAD`` with ``objects`` or ``commondir``: a ``.git`` folder, a bare
    repository written as plain files, a worktree's git directory), what it would run (hooks, program
    keys in its configuration, a ``commondir``) must be what it already ran before the write. A ``.git``
    file must not point git outside the roots."""
    after = View(pending)
    why = _new_shape(after, roots) or _program_path_refusal(after, roots)
    if why is not None:
        return why
    for path in after.pending:
        root = next((r for r in roots if _inside(path, [r])), None)
        if root is None:
            continue
        if os.path.basename(path) == ".git" and after.isfile(path):
            raw = after.read(path, 4096) or b""
            line = raw.decode("utf-8", "replace").strip()
            target = os.path.realpath(os.path.join(os.path.dirname(path), line[len("gitdir:"):].strip()))
            if line.startswith("gitdir:") and not _inside(target, roots):
                return f"{path} would point git at {target}, outside the workspace"
        d = path
        while _inside(d, [root]):
            if _may_become_gitdir(d, after):
                now = _new_gitdir_problem(d, set(), DISK) if _may_become_gitdir(d, DISK) else None
                then = _new_gitdir_problem(d, set(), after)
                if then is not None and then != now:
                    return (f"{d} would be a git repository holding {then}, which the user's git would run"
                            " (git reads a folder with HEAD and objects as a repository, whatever its name)")
                if then is not None and _runs_from(d, path):
                    # the same keys and hook names as before, but new bytes in what names or is a program
                    # (a filter.lfs.clean of git lfs install --local rewritten): judged by the file, not the list
                    return (f"{path} is what the git repository {d} runs ({then}); a change to it is the user's to"
                            " make (git runs it without being asked)")
            if d == root:
                break
            d = os.path.dirname(d)
    return None


SHAPE_NAMES = ("HEAD", ".git")
"""Names that make a folder a repository to git (with ``objects``), or a working tree of one."""
INNER_NAMES = frozenset({"objects", "commondir", "gitdir", ".git", "config", "config.worktree", "hooks"})
"""Inside an existing git directory's sub-folders: what would make one of them a repository of its own
(``supervisor.INNER_FORBIDDEN``, the same rule for commands)."""


def _git_directory_holding(d: str, root: str) -> str | None:
    """The existing git directory (by its shape, or a folder named ``.git``) that is ``d`` or holds it."""
    while _inside(d, [root]):
        if _is_gitdir(d) or (os.path.basename(d) == ".git" and os.path.isdir(d) and not os.path.islink(d)):
            return d
        if d == root:
            break
        d = os.path.dirname(d)
    return None


def _new_shape(after: View, roots: Sequence[str]) -> str | None:
    """Why a name the write makes would give the workspace a new repository shape (None: none would).

    The invariant the creation supervisor holds for sandboxed commands (``supervisor.CreationPolicy``), held
    for the host's writes too: no new ``HEAD`` or ``.git`` outside an existing git directory, nothing new in a
    folder holding ``HEAD`` that is not one, and inside an existing git directory's sub-folders none of
    ``INNER_NAMES``. So no folder becomes a repository while a command that started before (a background
    one, whose mounts did not make that folder's ``config`` read-only) could still write its files: there
    is no order of writes from both sides, and no race between them, that ends in a new repository."""
    for path, data in after.pending.items():
        if data is None or os.path.lexists(path):
            continue  # a removal, or new bytes for a name that exists: the content checks judge it
        root = next((r for r in roots if _inside(path, [r])), None)
        if root is None or path == root:
            continue
        parent, name = os.path.dirname(path), os.path.basename(path)
        holder = _git_directory_holding(parent, root)
        if holder is None:
            if name in SHAPE_NAMES:
                return f"{path} would be a new {name}, which makes a git repository (git runs what a repository configures)"
            if os.path.lexists(os.path.join(parent, "HEAD")):
                return f"{path} is new in {parent}, which holds HEAD: it could make that folder a git repository"
        elif holder != parent and name in INNER_NAMES:
            return f"{path} would make a repository inside the git directory {holder}"
    return None


def user_home_of(env: Mapping[str, str]) -> str:
    """The user's home directory, from the user's account (``env`` is not asked: a project's ``env`` setting
    could move it)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def account_homes(user_home: str) -> list[str]:
    """Every folder that may be the user's home: the account's, ``user_home``, and this process's ``HOME``
    (set by whoever started agentloop, not by a project). Hiding one too many is safe; one too few is not."""
    out = [user_home_of({}), user_home, os.environ.get("HOME", "")]
    homes = []
    for h in out:
        if not h or not os.path.isabs(h):
            continue
        real = os.path.realpath(h)
        try:
            st = os.stat(real)
        except OSError:
            continue
        if real != os.sep and st.st_uid == os.getuid() and real not in homes and os.path.isdir(real):
            homes.append(real)
    return homes
