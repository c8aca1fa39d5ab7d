"""Linux inotify, to wake the write wall's watch as soon as a name changes under the writable roots.

The watch (``watch.WriteWatch``) looks at the whole tree on a timer; with a kernel watch on each folder it
looks as soon as something is made, renamed, removed or written there, so a planted repository is visible
to the host for about as long as one look takes rather than until the timer fires. Where inotify is missing
or the share of the per-user limit it takes (a quarter) is used up, the folders past it are simply looked
at on the timer (nothing is missed: every look still walks the whole tree).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Iterable

__all__ = ["FolderEvents"]

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_IN_IGNORED = 0x8000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC


class FolderEvents:
    """One inotify instance watching a set of folders. ``fd`` is -1 when inotify cannot be used here."""

    def __init__(self) -> None:
        self.fd = -1
        self.full = False
        """The per-user watch limit was reached: the folders past it are left to the timer."""
        self._wds: dict[str, int] = {}
        self.cap = _watch_share()
        """At most this many folders are followed: the watches are the user's, shared with their editors."""
        try:
            self._libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            self.fd = int(self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        except (OSError, AttributeError):
            self.fd = -1

    def follow(self, folders: Iterable[str]) -> None:
        """Watch exactly ``folders`` (new ones added, ones no longer listed dropped)."""
        if self.fd < 0:
            return
        want = set(folders)
        for gone in [p for p in self._wds if p not in want]:
            self._libc.inotify_rm_watch(self.fd, self._wds.pop(gone))  # fails harmlessly when the folder is gone
        for p in want:
            if p in self._wds or self.full:
                continue
            if len(self._wds) >= self.cap:
                self.full = True
                continue
            wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(p), _MASK))
            if wd >= 0:
                self._wds[p] = wd
            elif ctypes.get_errno() == errno.ENOSPC:
                self.full = True

    def drain(self) -> bool:
        """Read every pending event; True when there was any."""
        got = False
        while self.fd >= 0:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not data:
                break
            at = 0
            while at + 16 <= len(data):  # struct inotify_event: wd, mask, cookie, len, then the name
                _wd, mask, _cookie, size = struct.unpack_from("iIII", data, at)
                at += 16 + size
                got = got or not mask & _IN_IGNORED  # a dropped watch's last word is not a change
        return got

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._wds.clear()


def _watch_share() -> int:
    """A quarter of the user's inotify watches (``fs.inotify.max_user_watches``; 8,192 when unreadable):
    taking them all would leave the user's editors and file watchers none."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as f:
            return max(1, int(f.read().strip()) // 4)
    except (OSError, ValueError):
        return 8192 // 4
