"""What agentloop keeps in its home is the user's alone: folders 0700, files 0600.

Sessions hold every prompt, every tool's output and every answer; the home
also holds the trust store, signing keys, OAuth tokens, the REPL's history
and the logs. ``private_home`` makes the home 0700 when agentloop starts
(tightening one an older version or a plain ``mkdir`` left open, and saying
so); ``private_dirs`` and ``private_file`` create what goes inside with those
modes from the start, never a chmod after the fact.
"""

from __future__ import annotations

import os
import stat
import threading

__all__ = ["home_notice", "private_dirs", "private_file", "private_home", "private_write", "tightened_notice"]

_tightened: dict[str, str] = {}
"""Homes this process made 0700, and the line saying so, until ``tightened_notice`` hands it on: the logging
set-up tightens the home first (its log file goes there), and the user must still be told, not only the log."""


def private_home(home: str) -> str | None:
    """Make ``home`` exist with mode 0700; a line saying what changed when it was open to others, else None."""
    try:
        private_dirs(home)
        st = os.stat(home)
    except OSError as exc:
        return f"{home}: cannot make agentloop's home private: {exc.strerror or exc}"
    if st.st_uid != os.getuid() or not stat.S_IMODE(st.st_mode) & 0o077:
        return None
    try:
        os.chmod(home, 0o700)
    except OSError as exc:
        return f"{home}: agentloop's home is open to others ({stat.S_IMODE(st.st_mode):o}) and cannot be made 0700: {exc.strerror or exc}"
    said = f"{home}: agentloop's home was open to others ({stat.S_IMODE(st.st_mode):o}); it is 0700 now"
    _tightened[os.path.realpath(home)] = said
    return said


def home_notice(home: str) -> str | None:
    """``private_home``, then what this process said of tightening ``home`` (by the logging set-up, or just now)."""
    said = private_home(home)
    return tightened_notice(home) or said


def tightened_notice(home: str) -> str | None:
    """The line saying this process made ``home`` 0700 (once: it is handed on, then forgotten)."""
    return _tightened.pop(os.path.realpath(home), None)


def private_dirs(path: str) -> None:
    """``os.makedirs(path)`` with every folder it creates 0700 (``makedirs``'s ``mode`` covers only the last).

    Raises:
        OSError: a folder cannot be made.
    """
    missing: list[str] = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            if not os.path.isdir(d):
                raise


def private_file(path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_APPEND) -> int:
    """A descriptor of ``path``, created 0600 if it is new.

    Raises:
        OSError: it cannot be opened.
    """
    return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)


def private_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (through a temporary file beside it, then a rename): the file 0600,
    every folder made for it 0700, whatever the umask and whatever a stale temporary file's mode was.

    Raises:
        OSError: it cannot be written.
    """
    private_dirs(os.path.dirname(path) or ".")
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    fd = private_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.fchmod(fd, 0o600)  # a temporary file left by an older version keeps its mode through O_CREAT
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.replace(tmp, path)
