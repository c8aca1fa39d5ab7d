"""Waiting for something to come true, with a generous deadline: on a loaded machine a process starts,
writes or ends late, so a test that looks after a fixed wait fails where nothing is wrong. A wait for
something that must NOT happen stays a fixed wait (it can only pass falsely, never fail falsely)."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(holds: Callable[[], object], timeout: float = 60.0, every: float = 0.05) -> bool:
    """Poll ``holds()`` until it is true or ``timeout`` seconds pass; say whether it came true."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True
