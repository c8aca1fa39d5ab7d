"""The write wall's watch: while any sandboxed command runs (a foreground one, or a background one that
outlives its call), what commands write is looked at every ``MIN_INTERVAL_S`` to ``INTERVAL_S`` seconds
(``next_wait``: four times what the last look cost), not only when a foreground command ends (docs/decisions/0014-one-write-wall-for-every-write-path.md).

A background command was never looked at before: it could make a git directory with a hook, or write
``.git/commondir``, after its call had returned. The watch runs the same ``gitguard`` checks as the end of
a command (``check``'s missing-name watches and pinned links for each command still running, then
``sweep``), on a walk that re-reads only the folders that changed, and once more when the session's
sandbox closes. Its lines reach the model with the next command's result.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable, Sequence

from . import gitguard
from .notify import FolderEvents
from .wall import TreeWalk

__all__ = ["INTERVAL_S", "MIN_INTERVAL_S", "WriteWatch", "next_wait"]

INTERVAL_S = 0.5
"""The longest the watch waits between looks while commands run (a tree whose look costs an eighth of this
or more)."""

MIN_INTERVAL_S = 0.1
"""The shortest wait between looks (a small tree): a planted repository is visible to the host for at most
about this long, plus the look itself."""

LOOK_SHARE = 4
"""The wait is at least this many times what the last look cost: the watch takes at most a fifth of a core."""


def next_wait(cost_s: float) -> float:
    """The wait before the next look, from what the last one cost: as short as the tree allows."""
    return min(INTERVAL_S, max(MIN_INTERVAL_S, LOOK_SHARE * cost_s))

_log = logging.getLogger("agentloop.sandbox")


class WriteWatch:
    """The walk of one set of writable roots, and a thread that sweeps it while commands run."""

    def __init__(self, roots: Sequence[str], foreground: Callable[[], list[gitguard.GitPlan]]):
        self.walk = TreeWalk(roots)
        self.lock = threading.Lock()
        """Held while anything is moved aside (the watch and the end of a command never race)."""
        self._foreground = foreground
        self._background: list[tuple[gitguard.GitPlan, Callable[[], bool]]] = []
        self._notes: list[str] = []
        self._stop = threading.Event()
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

    def once(self) -> list[str]:
        """One look: the names each running command must not create, then every git directory that is
        not in all of their plans (one made since the oldest of them started is judged again)."""
        plans = [p for p in self._live() if p.roots == self.walk.roots]
        if not plans:
            return []
        before = set.intersection(*(set(p.gitdirs) for p in plans))
        notes: list[str] = []
        with self.lock:
            for p in plans:
                notes += gitguard.check_names(p)
            notes += gitguard.sweep(gitguard.GitPlan(roots=self.walk.roots, gitdirs=before), self.walk)
        if notes:
            with self._state:
                self._notes += notes
            for n in notes:
                _log.warning("sandbox: %s", n)
        return notes

    def _run(self) -> None:
        events = FolderEvents()  # wakes the watch when a name changes in a folder it saw (inotify)
        wait, spacing, last = MIN_INTERVAL_S, 0.0, 0.0
        try:
            while not self._woken(events, wait, spacing - (time.monotonic() - last)):
                start = time.monotonic()
                try:
                    self.once()
                except Exception:  # the watch must not die on one odd tree; the end of each command still checks
                    _log.exception("sandbox: the write watch failed once")
                last = time.monotonic()
                wait, spacing = next_wait(last - start), min(INTERVAL_S, LOOK_SHARE * (last - start))
                events.follow(self.walk.folders())
        finally:
            events.close()

    def _woken(self, events: FolderEvents, wait: float, rest: float) -> bool:
        """Wait for the next look: a change in a watched folder (but no sooner than ``rest`` from now, so a
        look takes at most a fifth of a core), or ``wait`` seconds. True when the watch is to stop."""
        if events.fd < 0:
            return self._stop.wait(wait)
        ready, _, _ = select.select([events.fd], [], [], wait)
        if ready:
            events.drain()
            if rest > 0:
                return self._stop.wait(rest)
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)

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
