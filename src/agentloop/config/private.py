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

__all__ = ["private_dirs", "private_file", "private_home"]


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
    return f"{home}: agentloop's home was open to others ({stat.S_IMODE(st.st_mode):o}); it is 0700 now"


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
