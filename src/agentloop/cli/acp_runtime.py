"""The ACP server's runtime pieces: the main thread's job queue and the SDK's logged errors.

1. ``Jobs``: the agent's work runs on the main thread, one job at a time (so a
   cancel can interrupt it as Ctrl+C does); the connection's loop submits
   jobs and awaits their results.
2. ``OneLineErrors``: what the ACP SDK logs when a handler fails unexpectedly
   (it answers -32603) is one line on stderr; the traceback goes to
   agentloop's log file only.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sys
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["Jobs", "OneLineErrors"]


class Jobs:
    """Work for the main thread (rule 1): each job's result goes back to the loop that asked."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self.running: str | None = None
        """The session whose turn is running (the one a cancel interrupts)."""

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        self.q.put((fn, fut))
        return fut

    def serve(self) -> None:
        while True:
            try:
                item = self.q.get()
            except KeyboardInterrupt:  # a cancel that came as the turn ended: nothing to stop
                continue
            if item is None:
                return
            fn, fut = item
            try:
                fut.set_result(fn())
            except KeyboardInterrupt:
                fut.set_exception(asyncio.CancelledError())
            except BaseException as exc:
                fut.set_exception(exc)


class OneLineErrors(logging.Handler):
    """What the ACP SDK logs (an unexpected error in a handler, answered -32603): one line on stderr,
    the traceback in agentloop's log file only (rule 2)."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if not record.name.startswith("agentloop"):  # agentloop's own records come here only before its log is set up
            logging.getLogger("agentloop.acp").error("%s", record.getMessage(), exc_info=record.exc_info)
        line = record.getMessage().splitlines()[0] if record.getMessage() else "error"
        reason = f": {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}" if exc is not None else ""
        sys.stderr.write(f"agentloop acp: {line}{reason}\n")
