"""How the write wall sees a tree: the disk as it is or as a pending write would leave it, and a walk of the
writable roots with no entry limit that re-reads only the directories that changed.

``gitguard`` decides, from this view, whether a directory is something git would take for a repository and
whether it holds anything git would run (docs/decisions/0014-one-write-wall-for-every-write-path.md).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["DISK", "DIR", "TreeWalk", "View"]

DIR = b"\0<directory>\0"
"""In a pending write: a directory the write makes (a missing parent)."""


class View:
    """The file system as it is (no ``pending``) or as it will be once ``pending`` is written.

    ``pending`` maps real paths to their new bytes (``DIR`` for a directory the write makes, None for a
    path the write removes)."""

    def __init__(self, pending: Mapping[str, bytes | None] | None = None):
        self.pending: dict[str, bytes | None] = {}
        for path, data in (pending or {}).items():
            path = os.path.normpath(path)
            self.pending[path] = data
            parent = os.path.dirname(path)
            while parent != os.path.dirname(parent) and not os.path.lexists(parent) and parent not in self.pending:
                self.pending[parent] = DIR
                parent = os.path.dirname(parent)

    def _gone(self, path: str) -> bool:
        """``path`` or a folder above it is removed by the pending write."""
        p = path
        while True:
            if p in self.pending and self.pending[p] is None:
                return True
            up = os.path.dirname(p)
            if up == p:
                return False
            p = up

    def lexists(self, path: str) -> bool:
        if path in self.pending:
            return self.pending[path] is not None
        return not self._gone(path) and os.path.lexists(path)

    def isdir(self, path: str) -> bool:
        if path in self.pending:
            return self.pending[path] is DIR
        return not self._gone(path) and os.path.isdir(path) and not os.path.islink(path)

    def isfile(self, path: str) -> bool:
        if path in self.pending:
            return self.pending[path] not in (None, DIR)
        return not self._gone(path) and os.path.isfile(path)

    def read(self, path: str, limit: int) -> bytes | None:
        """The file's bytes (None: missing, not a file, unreadable, or larger than ``limit``)."""
        if path in self.pending:
            data = self.pending[path]
            return None if data is None or data is DIR or len(data) > limit else data
        if self._gone(path):
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(limit + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        return None if len(data) > limit else data

    def listdir(self, path: str) -> list[str]:
        names: set[str] = set()
        if not self._gone(path) and path not in self.pending:
            try:
                names = set(os.listdir(path))
            except OSError:
                names = set()
        for p, data in self.pending.items():
            if os.path.dirname(p) == path:
                if data is None:
                    names.discard(os.path.basename(p))
                else:
                    names.add(os.path.basename(p))
        return sorted(names)


DISK = View()
"""The file system as it is."""


def looks_like_gitdir(names: Iterable[str]) -> bool:
    """A folder holding these names is one git could take for a repository: a ``HEAD``, and ``objects`` or a
    ``commondir`` pointing at them (git's own test also wants ``refs``; asking less catches more)."""
    s = set(names)
    return "HEAD" in s and ("objects" in s or "commondir" in s)


_Entry = tuple[tuple[int, int, int], tuple[str, ...], bool, bool]
"""A folder as last read: (inode, mtime, ctime), its sub-folders, git-shaped, holds ``.git``."""


class TreeWalk:
    """Every folder under the writable roots, walked in full (no entry limit, symlinks not followed).

    A folder is read again only when its inode, modification or change time moved (a name in it was made,
    removed or renamed: the change time cannot be set back by a command); otherwise what it held last time
    is used. A walk of an unchanged tree costs one ``lstat`` per folder. ``update`` re-reads only the
    folders it is told changed (inotify names them) and what is new below them: its cost follows the
    change, not the tree. ``before_read`` is called with each folder about to be read for the first time
    (the watch follows it with inotify first, so nothing made in it meanwhile goes unseen).
    """

    def __init__(self, roots: Sequence[str]):
        self.roots = tuple(roots)
        self._seen: dict[str, _Entry] = {}
        self._shapes: set[str] = set()
        self._dots: set[str] = set()
        self.lock = threading.Lock()
        self.before_read: Callable[[list[str]], None] | None = None
        self._round: list[str] = []
        """The folders the backstop has yet to look at in this round (``recheck``), last first."""
        self.forgotten: list[str] = []
        """Folders dropped since the last ``take_forgotten`` (their inotify watches can go)."""

    def folders(self) -> list[str]:
        """Every folder the last walk saw."""
        with self.lock:
            return list(self._seen)

    def take_forgotten(self) -> list[str]:
        with self.lock:
            out, self.forgotten = self.forgotten, []
        return out

    def walk(self) -> tuple[list[str], list[str]]:
        """``(folders that look like git directories, .git entries)``, all under the roots."""
        with self.lock:
            self._walk()
            return self._known()

    def known(self) -> tuple[list[str], list[str]]:
        """What ``walk`` returns, as of the last walk or update (no file system access)."""
        with self.lock:
            return self._known()

    def _known(self) -> tuple[list[str], list[str]]:
        return sorted(self._shapes), sorted(os.path.join(d, ".git") for d in self._dots)

    def _put(self, d: str, entry: _Entry) -> None:
        self._seen[d] = entry
        (self._shapes.add if entry[2] else self._shapes.discard)(d)
        (self._dots.add if entry[3] else self._dots.discard)(d)

    def _walk(self) -> None:
        old = self._seen
        self._seen, self._shapes, self._dots = {}, set(), set()
        new = [r for r in dict.fromkeys(self.roots) if r not in old]
        if new and self.before_read is not None:
            self.before_read(new)
        stack = list(dict.fromkeys(self.roots))
        while stack:
            d = stack.pop()
            if d in self._seen:
                continue
            try:
                st = os.lstat(d)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                continue
            stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
            hit = old.get(d)
            if hit is None or hit[0] != stamp:
                hit = (stamp, *_read_folder(d))
            self._put(d, hit)
            below = [os.path.join(d, n) for n in hit[1]]
            unseen = [c for c in below if c not in old]
            if unseen and self.before_read is not None:
                self.before_read(unseen)
            stack += below
        self.forgotten += [d for d in old if d not in self._seen]

    def size(self) -> int:
        """How many folders the walk knows."""
        return len(self._seen)

    def recheck(self, count: int) -> None:
        """Look at the next ``count`` folders of a round over them all (the roots first): each whose inode,
        modification or change time moved is read again, with what is new below it. A round that ends
        starts again with the folders known then."""
        with self.lock:
            if not self._round:
                self._round = list(dict.fromkeys([*self.roots, *self._seen]))
                self._round.reverse()
            while self._round and count > 0:
                d = self._round.pop()
                count -= 1
                hit = self._seen.get(d)
                if hit is None and d not in self.roots:
                    continue  # dropped since the round began: its parent's change covers it
                try:
                    st = os.lstat(d)
                    stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                except OSError:
                    stamp = None
                if hit is None or stamp is None or hit[0] != stamp:
                    self._refresh(d)

    def update(self, folders: Iterable[str]) -> None:
        """Re-read ``folders`` (those inotify says changed) and walk what is new below them."""
        with self.lock:
            for d in sorted(set(folders), key=len):
                if d in self._seen or d in self.roots:
                    self._refresh(d)

    def _refresh(self, top: str) -> None:
        stack = [top]
        while stack:
            d = stack.pop()
            was = self._seen.get(d)
            try:
                st = os.lstat(d)
                alive = stat.S_ISDIR(st.st_mode)
            except OSError:
                alive = False
            if not alive:
                self._drop(d)
                continue
            entry: _Entry = ((st.st_ino, st.st_mtime_ns, st.st_ctime_ns), *_read_folder(d))
            self._put(d, entry)
            for gone in set(was[1] if was else ()) - set(entry[1]):
                self._drop(os.path.join(d, gone))
            for kept in set(was[1] if was else ()) & set(entry[1]):
                self._drop_if_replaced(os.path.join(d, kept))  # a folder renamed over an empty one
            fresh = [os.path.join(d, n) for n in entry[1] if os.path.join(d, n) not in self._seen]
            if fresh and self.before_read is not None:
                self.before_read(fresh)
            stack += fresh

    def _drop_if_replaced(self, d: str) -> None:
        try:
            same = os.lstat(d).st_ino == self._seen[d][0][0]
        except (OSError, KeyError):
            same = False
        if not same:
            self._drop(d)

    def _drop(self, top: str) -> None:
        stack = [top]
        while stack:
            d = stack.pop()
            entry = self._seen.pop(d, None)
            if entry is None:
                continue
            self._shapes.discard(d)
            self._dots.discard(d)
            self.forgotten.append(d)
            stack += [os.path.join(d, n) for n in entry[1]]


def _read_folder(d: str) -> tuple[tuple[str, ...], bool, bool]:
    """A folder's sub-folders (not links), whether it looks like a git directory, whether it holds ``.git``."""
    subdirs: list[str] = []
    names: list[str] = []
    try:
        with os.scandir(d) as it:
            for e in it:
                names.append(e.name)
                try:
                    if e.is_dir(follow_symlinks=False):
                        subdirs.append(e.name)
                except OSError:
                    pass
    except OSError:
        return (), False, False
    return tuple(subdirs), looks_like_gitdir(names), ".git" in names
