"""Linux inotify, to tell the write wall's watch which folders changed under the writable roots, at once.

With a kernel watch on each folder, the watch (``watch.WriteWatch``) learns which folders had a name made,
renamed, removed or written, and re-reads only those (the cost of a look follows the change, not the tree);
a name that makes a git directory (``GIT_NAMES``) or anything in a ``hooks`` folder is looked at without
the usual spacing. Where inotify is missing, the share of the per-user limit it takes (a quarter) is used
up, or the kernel's queue overflowed (``Changes.lost``), the watch walks the whole tree instead; it also
walks it now and then as a backstop.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["GIT_NAMES", "Changes", "FolderEvents"]

GIT_NAMES = frozenset({"HEAD", "objects", "refs", "config", "config.worktree", "hooks", "commondir", "gitdir",
                       ".git", "info"})
"""Names whose making (or writing) can turn a folder into a git directory, or change what one runs."""

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_IN_IGNORED, _IN_Q_OVERFLOW = 0x8000, 0x4000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC


@dataclass
class Changes:
    """What the kernel reported since the last read."""

    folders: set[str] = field(default_factory=set)
    """The followed folders where a name was made, renamed, removed or written."""
    urgent: bool = False
    """One of the names was in ``GIT_NAMES``, or in a folder called ``hooks``: look now."""
    lost: bool = False
    """The kernel's queue overflowed: events were lost, only a walk of the whole tree is sure."""

    def __bool__(self) -> bool:
        return bool(self.folders) or self.lost


class FolderEvents:
    """One inotify instance watching a set of folders. ``fd`` is -1 when inotify cannot be used here."""

    def __init__(self) -> None:
        self.fd = -1
        self.full = False
        """The per-user watch limit was reached: the folders past it are left to the timer."""
        self._wds: dict[str, int] = {}
        self._paths: dict[int, str] = {}
        """Each watch's folder (a folder renamed keeps its watch: the newest path it was added under)."""
        self._lock = threading.Lock()
        """``add`` runs in whichever thread walks the tree; ``changes`` in the watch's."""
        self.cap = _watch_share()
        """At most this many folders are followed: the watches are the user's, shared with their editors."""
        try:
            self._libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            self.fd = int(self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        except (OSError, AttributeError):
            self.fd = -1

    def follow(self, folders: Iterable[str]) -> None:
        """Watch exactly ``folders`` (new ones added, ones no longer listed dropped)."""
        want = set(folders)
        self.forget([p for p in list(self._wds) if p not in want])
        self.add(want)

    def add(self, folders: Iterable[str]) -> None:
        """Watch ``folders`` too (before they are read, so nothing made meanwhile goes unseen)."""
        with self._lock:
            for p in folders:
                if self.fd < 0 or p in self._wds or self.full:
                    continue
                if len(self._wds) >= self.cap:
                    self.full = True
                    continue
                wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(p), _MASK))
                if wd >= 0:
                    old = self._paths.get(wd)
                    if old is not None and old != p:
                        self._wds.pop(old, None)  # the same folder, renamed: one watch, its new path
                    self._wds[p] = wd
                    self._paths[wd] = p
                elif ctypes.get_errno() == errno.ENOSPC:
                    self.full = True

    def forget(self, folders: Iterable[str]) -> None:
        """Stop watching ``folders`` (a watch another path now names, after a rename, is kept)."""
        with self._lock:
            for p in folders:
                wd = self._wds.pop(p, None)
                if wd is not None and self._paths.get(wd) == p and self.fd >= 0:
                    del self._paths[wd]
                    self._libc.inotify_rm_watch(self.fd, wd)  # fails harmlessly when the folder is gone

    def drain(self) -> bool:
        """Read every pending event; True when there was any."""
        return bool(self.changes())

    def changes(self) -> Changes:
        """Read every pending event: the folders they happened in."""
        got = Changes()
        with self._lock:
            while self.fd >= 0:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:  # BlockingIOError: nothing more
                    break
                if not data:
                    break
                self._parse(data, got)
        return got

    def _parse(self, data: bytes, got: Changes) -> None:
        at = 0
        while at + 16 <= len(data):  # struct inotify_event: wd, mask, cookie, len, then the name
            wd, mask, _cookie, size = struct.unpack_from("iIII", data, at)
            name = data[at + 16:at + 16 + size].rstrip(b"\0").decode("utf-8", "surrogateescape")
            at += 16 + size
            if mask & _IN_Q_OVERFLOW:
                got.lost = True
            elif not mask & _IN_IGNORED and wd in self._paths:  # a dropped watch's last word is not a change
                folder = self._paths[wd]
                got.folders.add(folder)
                got.urgent = got.urgent or name in GIT_NAMES or os.path.basename(folder) == "hooks"

    def close(self) -> None:
        with self._lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            self._wds.clear()
            self._paths.clear()


def _watch_share() -> int:
    """A quarter of the user's inotify watches (``fs.inotify.max_user_watches``; 8,192 when unreadable):
    taking them all would leave the user's editors and file watchers none."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as f:
            return max(1, int(f.read().strip()) // 4)
    except (OSError, ValueError):
        return 8192 // 4
