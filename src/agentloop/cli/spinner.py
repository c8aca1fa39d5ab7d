"""The REPL's "working" line: shown while the model or a tool is busy and nothing else is printed.

Rules:

1. Only on a colour terminal, and only at the start of a line; it draws after
   a short grace period, so a quick answer never flickers.
2. ``stop`` returns only when the line is gone: the thread has ended and the
   line is erased. The REPL stops it before it writes anything else, so the
   two never interleave.
3. It shows what is happening and for how long, and how to stop it: "esc to
   interrupt", Claude Code's own hint on its working line.
4. It is one line (and a second, ``> `` and what the user typed meanwhile,
   while there is some: ``typed``), never wider than the terminal (measured at
   each redraw), so ``\r`` and erase-line take all of it away. What does not fit goes, least
   needed first: the hint, then the detail, then the end of the label. Text from
   a server (an MCP tool's progress) is shown with its control characters escaped.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable

from .terminal_text import neutral

__all__ = ["Spinner"]

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
HINT = "esc to interrupt"
"""How to stop the turn, as Claude Code words it on its working line (Esc stops a turn, ``esc_watch.py``)."""


class Spinner:
    def __init__(self, write: Callable[[str], None], *, grace_s: float = 0.4, interval_s: float = 0.1,
                 columns: Callable[[], int] = lambda: shutil.get_terminal_size().columns):
        self._write = write
        self._columns = columns
        self._grace = grace_s
        self._interval = interval_s
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._drawn = False
        self._below = False
        """The line under it (what was typed) is drawn."""
        self.detail = ""
        """Shown after the label while it spins (an MCP tool's progress); cleared by ``start``."""
        self.typed = ""
        """What the user typed while the turn runs, shown on a line under it (kept across ``start``)."""

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, label: str) -> None:
        """Show ``label`` (e.g. "thinking") with a spinner and the seconds since now; restarts if running."""
        self.stop()
        self._stop.clear()
        self.detail = ""
        t0 = time.monotonic()

        def spin() -> None:
            if self._stop.wait(self._grace):
                return
            i = 0
            while True:
                secs = int(time.monotonic() - t0)
                cols = self._columns() - 1
                text = fitted(FRAMES[i % len(FRAMES)], label, neutral(self.detail), secs, cols)
                self._write(f"\r\x1b[2K\x1b[2m{text}\x1b[0m" + self._typed_line(cols))
                self._drawn = True
                i += 1
                if self._stop.wait(self._interval):
                    return

        self._thread = threading.Thread(target=spin, name="agentloop-spinner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and erase (see rule 2); does nothing when not running."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._drawn:
            self._write("\r\x1b[2K" + ("\n\x1b[2K\x1b[1A\r" if self._below else ""))
            self._drawn = self._below = False
        self.detail = ""
        """Shown after the label while it spins (an MCP tool's progress); cleared by ``start``."""


    def _typed_line(self, cols: int) -> str:
        """The writes that draw (or erase) the line under the working line, the cursor back where it was."""
        typed = neutral(self.typed)
        if not typed and not self._below:
            return ""
        self._below = bool(typed)
        from rich.cells import cell_len

        if cell_len(typed) > cols - 2:  # its end, where the user is typing
            while typed and cell_len(typed) > cols - 3:
                typed = typed[1:]
            typed = "…" + typed
        return f"\n\x1b[2K{'> ' + typed if typed else ''}\x1b[1A\r"


def fitted(frame: str, label: str, detail: str, secs: int, cols: int) -> str:
    """The working line in at most ``cols`` cells (rule 4)."""
    from rich.cells import cell_len, set_cell_size

    tail = f" {secs}s"
    for hint in (f" · {HINT}", ""):
        line = f"{frame} {label}…{f' · {detail}' if detail else ''}{tail}{hint}"
        if cell_len(line) <= cols:
            return line
    if detail:  # the detail cut to what is left
        room = cols - cell_len(f"{frame} {label}… · …{tail}")
        if room > 8:
            return f"{frame} {label}… · {set_cell_size(detail, room)}…{tail}"
    if cell_len(line := f"{frame} {label}…{tail}") <= cols:
        return line
    head = f"{frame} {label}"
    return set_cell_size(head, max(1, cols - cell_len(f"…{tail}"))) + f"…{tail}"
