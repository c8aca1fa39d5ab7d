"""What the user types while a turn runs, on a terminal the working line does not draw on (``NO_COLOR``).

Rules:

1. It is one line, ``> `` and the keys typed so far, drawn where the next
   output would start, and only there: between ``start`` (a line start where
   the working line would show) and ``stop`` (before anything else is
   written, or a question is asked). Keys typed meanwhile are drawn at the
   next ``start``.
2. It uses no escape sequence: a carriage return, and spaces over what was
   drawn, take it away; so the plain terminal gets no colour and no cursor
   movement it did not have already.
3. It never fills the line (so it never wraps): what does not fit is its
   start, shown as ``…``. Control characters typed are shown escaped.
4. Drawn from the key-watching thread and taken away from the REPL's: one
   lock orders the two, and ``stop`` returns with the line gone.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable

from .terminal_text import neutral

__all__ = ["TypedEcho"]


class TypedEcho:
    def __init__(self, write: Callable[[str], None], *,
                 columns: Callable[[], int] = lambda: shutil.get_terminal_size().columns):
        self._write = write
        self._columns = columns
        self._lock = threading.Lock()
        self._typed = ""
        self._active = False
        self._drawn = 0
        """Cells on the screen now (0: nothing drawn)."""

    @property
    def typed(self) -> str:
        return self._typed

    @typed.setter
    def typed(self, text: str) -> None:
        with self._lock:
            self._typed = text
            if self._active:
                self._draw()

    def start(self) -> None:
        """The cursor is at a line start where nothing else is being written: show what was typed."""
        with self._lock:
            self._active = True
            self._draw()

    def stop(self) -> None:
        """Take the line away (rule 2); the cursor is back at the start of that line."""
        with self._lock:
            self._active = False
            self._erase()

    def _erase(self) -> None:
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _draw(self) -> None:
        from rich.cells import cell_len

        self._erase()
        typed = neutral(self._typed)
        if not typed:
            return
        room = max(1, self._columns() - 3)  # "> " and a cell left free at the end (rule 3)
        if cell_len(typed) > room:
            while typed and cell_len(typed) > room - 1:
                typed = typed[1:]
            typed = "…" + typed
        line = "> " + typed
        self._write(line)
        self._drawn = cell_len(line)
