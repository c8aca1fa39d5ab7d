"""The write wall's watch: while any sandboxed command runs (a foreground one, or a background one that
outlives its call), what commands write is looked at as soon as inotify reports it, not only when a
foreground command ends (docs/decisions/0014-one-write-wall-for-every-write-path.md,
docs/decisions/0024-the-write-watch-reads-what-inotify-names.md).

A background command was never looked at before: it could make a git directory with a hook, or write
``.git/commondir``, after its call had returned. The watch runs the same ``gitguard`` checks as the end of
a command (``check``'s missing-name watches and pinned links for each command still running, then
``sweep``) and once more when the session's sandbox closes. Its lines reach the model with the next
command's result.

A look re-reads only the folders inotify named (and what is new below them), so its cost follows the
change, not the tree. As a backstop for lost events, every folder's stamp is looked at once every
``BACKSTOP_S`` or more, ``BACKSTOP_SLICE`` folders at a time between looks. The whole tree is walked at the
first look, after the kernel's queue overflowed or a look failed, and on every look when some folders are
not followed (inotify missing or its share used up: then every ``next_wait(cost)`` as well).
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable, Sequence

from . import gitguard
from .notify import Changes, FolderEvents
from .wall import TreeWalk

__all__ = ["BACKSTOP_S", "BACKSTOP_SLICE", "INTERVAL_S", "MIN_INTERVAL_S", "WriteWatch", "next_wait"]

INTERVAL_S = 0.5
"""Where inotify cannot follow every folder: the longest wait between whole walks (a tree whose walk costs
an eighth of this or more)."""

MIN_INTERVAL_S = 0.1
"""Where inotify cannot follow every folder: the shortest wait between whole walks (a small tree)."""

LOOK_SHARE = 4
"""The wait is at least this many times what the last look cost: the watch takes at most a fifth of a core
(a change to a name that makes a git directory is looked at sooner: at most half a core)."""

BACKSTOP_S = 2.0
"""When inotify follows every folder: every folder's stamp is still looked at once in this long (or longer,
see ``BACKSTOP_SHARE``), for events the kernel lost."""

BACKSTOP_SLICE = 256
"""The backstop looks at this many folders at a time, between looks, so it never holds one up for long."""

BACKSTOP_SHARE = 10
"""The backstop takes at most a tenth of a core."""


def next_wait(cost_s: float) -> float:
    """The wait before the next look, from what the last one cost: as short as the tree allows."""
    return min(INTERVAL_S, max(MIN_INTERVAL_S, LOOK_SHARE * cost_s))

_log = logging.getLogger("agentloop.sandbox")


class WriteWatch:
    """The walk of one set of writable roots, and a thread that sweeps it while commands run."""

    whole_tree_every_look = False
    """Walk the whole tree at every look, as the watch did before it read only the folders inotify names
    (``bench/bench_write_window.py``'s baseline)."""

    def __init__(self, roots: Sequence[str], foreground: Callable[[], list[gitguard.GitPlan]]):
        self.walk = TreeWalk(roots)
        self.lock = threading.Lock()
        """Held while anything is moved aside (the watch and the end of a command never race)."""
        self._foreground = foreground
        self._background: list[tuple[gitguard.GitPlan, Callable[[], bool]]] = []
        self._notes: list[str] = []
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        """Written by ``stop`` so a watch waiting on inotify ends at once."""
        self._thread: threading.Thread | None = None
        self._state = threading.Lock()

    def background(self, plan: gitguard.GitPlan, alive: Callable[[], bool]) -> None:
        """A background command started with ``plan``'s mounts: watched while ``alive()`` and once after."""
        with self._state:
            self._background.append((plan, alive))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentloop-write-watch", daemon=True)
                self._thread.start()

    def ensure_running(self) -> None:
        """Start the watch (a foreground command is about to run)."""
        with self._state:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="agentloop-write-watch", daemon=True)
                self._thread.start()

    def take_notes(self) -> list[str]:
        """What the watch moved aside since the last call."""
        with self._state:
            out, self._notes = self._notes, []
        return out

    def _live(self) -> list[gitguard.GitPlan]:
        """The plans of the commands running now; background commands that ended are dropped (after one
        last look, which this sweep is)."""
        with self._state:
            plans = [p for p, _ in self._background]
            self._background = [(p, alive) for p, alive in self._background if alive()]
        return [*self._foreground(), *plans]

    def once(self, changed: Changes | None = None, recheck: int = 0) -> list[str]:
        """One look: the names each running command must not create, then every git directory that is
        not in all of their plans (one made since the oldest of them started is judged again).

        ``changed``: the folders inotify named since the last look (only those are read again); None to
        walk the whole tree. ``recheck``: this many more folders, the next in the backstop's round, are
        looked at too (read again when their stamp moved)."""
        if changed is not None:
            with self.lock:
                self.walk.update(changed.folders)  # kept current even while nothing runs
                if recheck:
                    self.walk.recheck(recheck)
        plans = [p for p in self._live() if p.roots == self.walk.roots]
        if not plans:
            return []
        before = set.intersection(*(set(p.gitdirs) for p in plans))
        notes: list[str] = []
        with self.lock:
            for p in plans:
                notes += gitguard.check_names(p)
            notes += gitguard.sweep(gitguard.GitPlan(roots=self.walk.roots, gitdirs=before), self.walk,
                                    walked=changed is not None)
        if notes:
            with self._state:
                self._notes += notes
            for n in notes:
                _log.warning("sandbox: %s", n)
        return notes

    def _run(self) -> None:
        events = FolderEvents()  # which folders changed, at once (inotify)
        self.walk.before_read = events.add  # followed before it is read: nothing made meanwhile is missed
        events.add(self.walk.folders())  # those an earlier walk read (the first look walks the whole tree)
        changed: Changes | None = None  # None: walk the whole tree (the first look, after a failed one)
        slice_at, cost = time.monotonic(), 0.0
        try:
            while True:
                start = time.monotonic()
                covered = events.fd >= 0 and not events.full and not self.whole_tree_every_look
                whole = changed is None or changed.lost or not covered
                due = covered and start >= slice_at  # the backstop, even while events never stop coming
                failed = False
                try:
                    self.once(None if whole else changed, BACKSTOP_SLICE if due else 0)
                except Exception:  # the watch must not die on one odd tree; the end of each command still checks
                    _log.exception("sandbox: the write watch failed once")
                    failed = True  # what it read may be half done: the next look walks everything
                end = time.monotonic()
                events.forget(self.walk.take_forgotten())
                if whole:
                    events.add(self.walk.folders())  # any a failed look did not reach
                if not whole or not covered:  # a rare whole walk's cost does not space the looks after it
                    cost = end - start
                if due or whole:  # the next slice: a round over every folder takes BACKSTOP_S or more
                    share = BACKSTOP_SLICE / max(1, self.walk.size())
                    slice_at = end + max(BACKSTOP_S * min(1.0, share), BACKSTOP_SHARE * (end - start))
                wait = slice_at - end if covered else next_wait(end - start)
                got = self._woken(events, wait, min(INTERVAL_S, LOOK_SHARE * cost), cost)
                if got is None:
                    return
                changed = None if failed else got
        finally:
            self.walk.before_read = None
            events.close()

    def _woken(self, events: FolderEvents, wait: float, spacing: float, cost: float) -> Changes | None:
        """Wait for the next look: a change in a followed folder (but no sooner than ``spacing`` after the
        last look, or its ``cost`` for a name that makes a git directory), or ``wait`` seconds (then
        no change: the backstop is due). None when the watch is to stop."""
        begun = time.monotonic()
        if events.fd < 0 or self._wake_r < 0:
            return None if self._stop.wait(max(0.0, wait)) else Changes()
        ready, _, _ = select.select([events.fd, self._wake_r], [], [], max(0.0, wait))
        if self._stop.is_set():
            return None
        if not ready:
            return None if self._stop.is_set() else Changes()
        got = events.changes()
        while not self._stop.is_set():  # the spacing, cut short when a name that makes a git directory comes
            rest = (cost if got.urgent and not self.whole_tree_every_look else spacing) - (time.monotonic() - begun)
            if rest <= 0:
                break
            ready, _, _ = select.select([events.fd, self._wake_r], [], [], rest)
            if events.fd in ready:
                more = events.changes()
                got.folders |= more.folders
                got.lost, got.urgent = got.lost or more.lost, got.urgent or more.urgent
        return None if self._stop.is_set() else got

    def stop(self) -> None:
        self._stop.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)
        if (t is None or not t.is_alive()) and self._wake_r >= 0:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1

    def final(self) -> list[str]:
        """The last look, once the sandbox has closed (every command, background ones too, has ended)."""
        with self._state:
            plans = [p for p, _ in self._background]
            self._background = []
        if not plans:
            return []
        before = set.intersection(*(set(p.gitdirs) for p in plans))
        with self.lock:
            notes = [n for p in plans for n in gitguard.check_names(p)]
            notes += gitguard.sweep(gitguard.GitPlan(roots=self.walk.roots, gitdirs=before), self.walk)
        for n in notes:
            _log.warning("sandbox: %s", n)
        return notes
