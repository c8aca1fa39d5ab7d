"""The bubblewrap that every git agentloop runs for itself runs in (decision 0013).

A repository's configuration can name programs for git to run (filters,
fsmonitor, hooks, textconv, pagers, ssh commands, includes that bring in
more) under names and spellings no list of settings can switch off, and git
always reads the repository's own ``.git/config``. So agentloop does not try
to list them: its git runs where whatever a repository makes it run is
harmless to the host.

Rules:

1. The root file system is read-only; every home folder, agentloop's home,
   ``/tmp``, ``/var/tmp`` and ``/run`` (agent sockets, other sessions' files)
   are empty folders; there is no network and no process outside the jail
   to see.
2. The repository (its work tree, git directory and common directory, and
   the object stores its ``alternates`` name, which git only reads and which
   stay read-only) is put back, read-only unless the call writes; the caller names any other path the call needs
   (``paths``), with the same mode. Even in a call that writes, what in a
   git directory names programs (``KEPT``: config, hooks, info...) stays
   read-only.
3. The environment is the one ``spawn.git_environment`` made: no key (and,
   since agentloop holds its keys in memory only, none to read from
   ``/proc`` either).
4. No sandbox here: no git (``GitUnconfined``); the caller says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...config.settings import agentloop_home
from .gitguard import account_homes, user_home_of

__all__ = ["GitUnconfined", "jail_argv", "repository_paths"]

HIDDEN = ("/tmp", "/var/tmp", "/run", "/dev/shm")
"""Folders of the host emptied inside the jail, besides the homes."""


KEPT = ("config", "config.worktree", "hooks", "info", "commondir", "gitdir")
"""Inside a git directory: what names programs or where git looks for them, read-only in every call."""


class GitUnconfined(OSError):
    """No sandbox can start here: agentloop runs no git (it would run the repository's programs on the host)."""


def _read_first_line(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "replace").splitlines()[0].strip()
    except (OSError, IndexError):
        return None


def _git_dirs(dot_git: str) -> list[str]:
    """The git directory behind a ``.git`` entry, its common directory and the object stores it borrows
    (``_borrowed``: last)."""
    if os.path.isdir(dot_git):
        gitdir = os.path.realpath(dot_git)
    else:
        line = _read_first_line(dot_git) or ""
        if not line.startswith("gitdir:"):
            return []
        gitdir = os.path.realpath(os.path.join(os.path.dirname(dot_git), line[len("gitdir:"):].strip()))
    out = [gitdir]
    common = _read_first_line(os.path.join(gitdir, "commondir"))
    if common:
        out.append(os.path.realpath(os.path.join(gitdir, common)))
    out += _borrowed(out[-1])
    return [d for d in out if os.path.isdir(d)]


def _borrowed(common: str) -> list[str]:
    """The object stores the repository whose common directory is ``common`` borrows (``objects/info/alternates``).
    A repository's own file names them, so they may be anywhere (a home folder): git only reads them, and the
    jail shows them read-only in every call (rule 2)."""
    try:
        with open(os.path.join(common, "objects", "info", "alternates"), encoding="utf-8", errors="replace") as f:
            alternates = [ln.strip() for ln in f.read(65536).splitlines()]
    except OSError:
        return []
    objects = os.path.join(common, "objects")
    return [os.path.realpath(os.path.join(objects, a)) for a in alternates if a and not a.startswith("#")]


def repository_paths(cwd: str) -> list[str]:
    """The paths git needs to see for a call in ``cwd``: the work tree's top (or ``cwd`` outside a
    repository) and its git directories (rule 2). Read here, in this process: no git is started."""
    d = os.path.realpath(cwd)
    while True:
        dot_git = os.path.join(d, ".git")
        if os.path.lexists(dot_git):
            return [d, *_git_dirs(dot_git)]
        parent = os.path.dirname(d)
        if parent == d:
            return [os.path.realpath(cwd)]
        d = parent


def _hidden() -> list[str]:
    homes = account_homes(user_home_of({}))
    out = [h for h in (*HIDDEN, *homes, "/home", "/root", os.path.realpath(agentloop_home())) if os.path.isdir(h)]
    return sorted(set(out), key=len)


def jail_argv(bwrap: str, argv: Sequence[str], *, cwd: str, write: bool, paths: Sequence[str] = ()) -> list[str]:
    """``bwrap ... argv``: ``argv`` run in the jail (rules 1 and 2), in ``cwd``.

    ``write``: the repository and ``paths`` are writable (else read-only).
    """
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = _hidden()
    for h in hidden:
        out += ["--tmpfs", h]
    repo = repository_paths(cwd)
    shown = {os.path.realpath(p) for p in (*repo, *paths) if os.path.exists(p)}
    read_only = {b for d in repo[1:] for b in _borrowed(d)} - {os.path.realpath(p) for p in (repo[0], *paths)}
    for p in sorted(shown, key=len):
        out += ["--bind" if write and p not in read_only else "--ro-bind", p, p]
    for h in hidden:  # hidden again where the repository showed it (agentloop's home inside a repository)
        if any(h.startswith(p + os.sep) for p in shown) and not any(p == h or p.startswith(h + os.sep) for p in shown):
            out += ["--tmpfs", h]
    if write:  # what git reads to find programs stays as it was, even in a call that writes
        for d in repo[1:]:
            for name in KEPT:
                f = os.path.join(d, name)
                if os.path.lexists(f) and not os.path.islink(f):
                    out += ["--ro-bind", f, f]
    out += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--chdir", os.path.realpath(cwd), "--", *argv]
    return out
