"""One event loop on a background thread, where every MCP session lives.

MCP sessions (anyio task groups, subprocess pipes, HTTP streams) belong to the
event loop they were opened on. agentloop's ``run()`` is synchronous and
``arun()`` runs on the caller's loop, so the sessions get a loop of their own
and callers submit coroutines to it from any thread, with a timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running an asyncio loop until ``stop()``."""

    def __init__(self, name: str = "agentloop-mcp"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = threading.Event()
        self._thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        self.loop.run_forever()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the future can be waited on or cancelled from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``coro`` on the loop and wait for it; cancel it when the wait ends early.

        Raises:
            TimeoutError: it did not finish within ``timeout`` seconds.
        """
        fut = self.submit(coro)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:  # in slices, so that a KeyboardInterrupt lands at once
                left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
                if left <= 0:
                    raise concurrent.futures.TimeoutError
                try:
                    return fut.result(left)
                except concurrent.futures.TimeoutError:
                    if fut.done():
                        raise
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except BaseException:
            fut.cancel()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join the thread. Pending tasks are cancelled first."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.stop() called from its own thread")

        async def _cancel_rest() -> None:
            me = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not me]
            for t in rest:
                t.cancel()
            if rest:
                await asyncio.wait(rest, timeout=timeout)

        if self._thread.is_alive():
            try:
                self.submit(_cancel_rest()).result(timeout + 1)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError):
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
