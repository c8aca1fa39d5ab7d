"""The home folder as the workspace: said, and asked, before anything starts.

Claude Code and Codex both warn when started in the home folder: every file there (credential stores,
shell start-up files, other projects) would be the agent's workspace. agentloop asks in the REPL and, in
``-p`` where no one can answer, refuses with the way on: ``--home-workspace`` (the choice, for one run).
Then the sandbox shows that home through an allow-list (``allow_list_mounts``): its project content (the
entries that do not start with a dot), toolchains read-only, and what the user's own settings add
(``filesystem.allowRead``, ``filesystem.allowWrite``); credential stores, agent sockets, histories and
start-up files are not there for commands."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from .gitguard import account_homes, user_home_of

__all__ = ["FLAG", "allow_list_mounts", "hidden_part", "home_workspace", "listed_homes"]

FLAG = "--home-workspace"


def home_workspace(cwd: str) -> str | None:
    """What is wrong with ``cwd`` as a workspace when it is the user's home or a folder above it (``/``
    included), in words for the question; None for any other folder."""
    real = os.path.realpath(cwd)
    for home in account_homes(user_home_of(os.environ)):
        if real == home:
            return f"{real} is your home folder"
        if home.startswith(real.rstrip(os.sep) + os.sep):
            return f"{real} holds your home folder ({home})"
    return None


NOT_PROJECT_CONTENT = ("snap",)
"""Names under the home that do not start with a dot but hold other programs' homes (snap keeps each
application's own dot-folders, browser profiles included, under ``~/snap/APP``): hidden like dot entries."""


def listed_homes(homes: Sequence[str], roots: Sequence[str]) -> list[str]:
    """The homes a root shows as a whole (the workspace is the home or a folder above it): each one is
    shown through an allow-list (``allow_list_mounts``), never as it is."""
    return [h for h in homes if any(h == r or h.startswith(r.rstrip(os.sep) + os.sep) for r in roots)]


def allow_list_mounts(home: str, writable: bool, read_only: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``(path, bubblewrap options)`` that show ``home`` as an allow-list, to mount after the root holding it.

    The home becomes an empty folder; then each of its entries that does not start with a dot (project
    content: folders, files, and links, which are made again pointing where they point) is shown as it is,
    writable when ``writable``; then ``read_only`` (toolchains, the user's ``filesystem.allowRead``) that
    lies under a hidden part of the home. Everything else under the home (credential stores, agent sockets,
    histories, shell and editor start-up files) is not there for commands, and a name they make at the
    top of the home lands in the empty folder, not on disk. The user's ``filesystem.allowWrite`` names a
    path to show writable (mounted later, over this)."""
    out: list[tuple[str, list[str]]] = [(home, ["--tmpfs", home])]
    try:
        names = sorted(os.listdir(home))
    except OSError:
        names = []
    shown: list[str] = []
    for name in names:
        if name.startswith(".") or name in NOT_PROJECT_CONTENT:
            continue
        p = os.path.join(home, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            out.append((p, ["--symlink", os.readlink(p), p]))
        elif stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
            out.append((p, ["--bind" if writable else "--ro-bind", p, p]))
            shown.append(p)
    for p in read_only:
        if p.startswith(home + os.sep) and os.path.exists(p) and not _under(p, shown):
            out.append((p, ["--ro-bind", p, p]))
    return out


def hidden_part(path: str, homes: Sequence[str]) -> bool:
    """``path`` lies in what ``allow_list_mounts`` hides of one of ``homes`` (under a dot entry or a name
    of ``NOT_PROJECT_CONTENT``): mounting it from the disk would show it again."""
    for h in homes:
        if path.startswith(h + os.sep):
            first = path[len(h) + 1:].split(os.sep, 1)[0]
            return first.startswith(".") or first in NOT_PROJECT_CONTENT
    return False


def _under(p: str, tops: Sequence[str]) -> bool:
    return any(p == t or p.startswith(t + os.sep) for t in tops)
