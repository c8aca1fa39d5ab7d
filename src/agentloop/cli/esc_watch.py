"""Esc during a turn stops it, as Ctrl+C does (Claude Code's habit).

While a turn runs the REPL reads no input, so a thread watches the terminal:
stdin in cbreak mode (no echo, no line buffering), and a lone Esc byte (one no
other byte follows within ``_SEQUENCE_S``: an arrow key is Esc ``[`` ``A``)
sends the process SIGINT, the very path Ctrl+C takes. Other keys typed during
the turn are kept (``typed``, Backspace taking the last one back) for the next
prompt instead of being lost, and each change is told to ``on_typed`` (the
REPL shows them under its working line, as Claude Code's input box shows what
is typed while it works).

A question asked inside the turn (a permission, an MCP server's form) reads the
terminal itself: ``paused()`` hands the terminal back, in its own mode, until
the question is answered.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["EscWatch"]

_ESC = 0x1B
_SEQUENCE_S = 0.04
_POLL_S = 0.05


class EscWatch:
    """A context manager around one turn: Esc sends SIGINT; ``typed`` holds the other keys."""

    def __init__(self, fd: int, on_typed: Callable[[str], None] | None = None) -> None:
        self.fd = fd
        self.typed = ""
        self._on_typed = on_typed
        self.pressed = False
        """Esc stopped the turn (so the REPL does not take it as a first Ctrl+C towards exiting)."""
        self._stop = threading.Event()
        self._pause = threading.Event()
        self._idle = threading.Event()
        self._saved: Any = None
        self._thread = threading.Thread(target=self._run, name="agentloop-esc", daemon=True)

    def __enter__(self) -> EscWatch:
        import termios

        try:
            self._saved = termios.tcgetattr(self.fd)
        except termios.error:
            return self  # not a terminal: nothing to watch
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(1.0)
        self._restore()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The terminal back in its own mode, unread, while a question inside the turn is asked."""
        if not self._thread.is_alive():
            yield
            return
        self._idle.clear()
        self._pause.set()
        self._idle.wait(1.0)
        try:
            yield
        finally:
            self._pause.clear()

    def _cbreak(self) -> None:
        import tty

        with contextlib.suppress(Exception):
            tty.setcbreak(self.fd)

    def _restore(self) -> None:
        import termios

        if self._saved is not None:
            with contextlib.suppress(Exception):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def _run(self) -> None:
        self._cbreak()
        cooked = False
        while not self._stop.is_set():
            if self._pause.is_set():
                if not cooked:
                    self._restore()
                    cooked = True
                self._idle.set()
                self._stop.wait(_POLL_S)
                continue
            if cooked:
                self._cbreak()
                cooked = False
            ready, _, _ = select.select([self.fd], [], [], _POLL_S)
            if ready and not self._pause.is_set():
                self._take(os.read(self.fd, 64))

    def _take(self, data: bytes) -> None:
        if data == bytes([_ESC]):
            more, _, _ = select.select([self.fd], [], [], _SEQUENCE_S)
            if not more:  # a lone Esc, not the start of a key's sequence
                self.pressed = True
                os.kill(os.getpid(), signal.SIGINT)
                return
            data += os.read(self.fd, 64)
        if data.startswith(bytes([_ESC])):
            return  # an arrow or function key: nothing to keep
        text = data.decode("utf-8", "ignore")
        typed = self.typed
        for c in text:
            if c in ("\x7f", "\b"):
                typed = typed[:-1]
            elif c.isprintable():
                typed += c
        if typed != self.typed:
            self.typed = typed
            if self._on_typed is not None:
                self._on_typed(typed)
