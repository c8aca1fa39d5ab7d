"""What a parent run has left for its children, measured by its loop (``loop.side_room``), and their holds on it."""

from __future__ import annotations

import threading
from typing import Any

from ...loop import side_room
from ...run import RunResult, SideCosts

__all__ = ["ParentBudget"]


class ParentBudget:
    """What the parent run has left, and the children's reservations against it.

    Bind it to the parent's loop with ``bind`` as (part of) the run's
    ``prepare``: it is refreshed before every parent turn, and keeps the
    run's ``SideCosts`` (what ``prepare`` records with), through which a
    child's spend enters the parent's loop (``loop`` rule 6). Bound without
    them (no loop to charge), it grants children nothing when the parent is
    capped: a spend the parent's loop cannot see could pass its cap.
    """

    def __init__(self) -> None:
        self.state: Any = None
        self.costs: SideCosts | None = None
        self._lock = threading.Lock()
        self.held_micros = 0
        self.held_tokens = 0

    def bind(self, state: Any, record: Any = None) -> None:
        self.state = state
        self.costs = record if isinstance(record, SideCosts) else None

    def left(self) -> tuple[int | None, int | None]:
        """(micro-USD, tokens) the parent has left after live reservations; None: not capped."""
        st = self.state
        if st is None:
            return None, None
        money, tokens = side_room(st)  # the loop's measure of what its run has left (loop rule 6)
        money = None if money is None else max(0, money - self.held_micros)
        tokens = None if tokens is None else max(0, tokens - self.held_tokens)
        if self.costs is None:  # fail closed: what a child spent could not be charged
            money, tokens = (None if money is None else 0), (None if tokens is None else 0)
        return money, tokens

    def reserve(self, share: float) -> tuple[int | None, int | None]:
        with self._lock:
            money, tokens = self.left()
            m = None if money is None else int(money * share)
            t = None if tokens is None else int(tokens * share)
            self.held_micros += m or 0
            self.held_tokens += t or 0
            return m, t

    def settle(self, reserved: tuple[int | None, int | None], result: RunResult | None) -> None:
        """Free the reservation and hand what the child really spent to the parent's loop (queued by the
        parent's driver until the turn's tools are done: never written from this thread)."""
        with self._lock:
            self.held_micros -= reserved[0] or 0
            self.held_tokens -= reserved[1] or 0
        if result is None or self.costs is None:
            return
        over = f"a sub-agent was billed past its reservation: {result.error}" if result.stop_reason == "budget_overrun" else None
        self.costs.settle("subagent", result.usage, result.spent_micros, reserved_micros=reserved[0], reserved_tokens=reserved[1], overrun=over)
