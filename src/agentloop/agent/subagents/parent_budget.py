"""What a parent run has left for its children, measured by its loop (``loop.side_room``), and their holds on it."""

from __future__ import annotations

import threading
from typing import Any

from ...events import Usage
from ...loop import side_room
from ...run import RunResult, SideCosts

__all__ = ["ParentBudget", "Share"]

Share = tuple[int, int]
"""A part of what is left, as (numerator, denominator): integers, so no micro-dollar is ever rounded up."""

Hold = tuple[int | None, int | None]


class ParentBudget:
    """What the parent run has left, and the children's reservations against it.

    Bind it to the parent's loop with ``bind`` as (part of) the run's
    ``prepare``: it is refreshed before every parent turn, and keeps the
    run's ``SideCosts`` (what ``prepare`` records with), through which a
    child's spend enters the parent's loop (``loop`` rule 6). Bound without
    them (no loop to charge), it grants children nothing when the parent is
    capped: a spend the parent's loop cannot see could pass its cap.

    What is left for a child is the loop's ``side_room`` less the holds of
    the children running now and less what the children already finished in
    this turn spent (their costs wait in ``SideCosts`` until the turn's tools
    are done): siblings started in one turn each reserve from what the ones
    before them left, so together they never pass the parent's cap.
    All arithmetic is on integers.
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

    def left(self) -> Hold:
        """(micro-USD, tokens) the parent has left after live reservations and unsettled spends; None: not capped."""
        st = self.state
        if st is None:
            return None, None
        money, tokens = side_room(st)  # the loop's measure of what its run has left (loop rule 6)
        if self.costs is None:  # fail closed: what a child spent could not be charged
            return (None if money is None else 0), (None if tokens is None else 0)
        spent_micros, spent_tokens = self.costs.queued()  # siblings done in this turn, not yet in the loop's state
        money = None if money is None else max(0, money - self.held_micros - spent_micros)
        tokens = None if tokens is None else max(0, tokens - self.held_tokens - spent_tokens)
        return money, tokens

    def reserve(self, share: Share) -> Hold:
        """Hold ``share`` of what is left for one child (floor division: never more than the share)."""
        return self.reserve_many(share, 1)[0]

    def reserve_many(self, share: Share, n: int) -> list[Hold]:
        """Hold ``n`` equal parts of ``share`` of what is left, at once, for children that start together:
        each gets ``left * num // (den * n)``, so together they hold at most ``share`` of it."""
        num, den = share
        if not (isinstance(num, int) and isinstance(den, int) and isinstance(n, int)) or den <= 0 or n <= 0 or not 0 <= num <= den:
            raise ValueError(f"a child's share must be a fraction of integers between 0 and 1 over n >= 1, not {num}/{den} over {n}")
        with self._lock:
            money, tokens = self.left()
            m = None if money is None else money * num // (den * n)
            t = None if tokens is None else tokens * num // (den * n)
            self.held_micros += (m or 0) * n
            self.held_tokens += (t or 0) * n
            return [(m, t)] * n

    def hold(self, micros: int, tokens: int) -> Hold | None:
        """Hold exactly ``micros`` and ``tokens`` of what is left, for a model call a tool makes while the turn's
        tools run (WebFetch's prompt, WebSearch's search); None when it does not fit, or when no loop could be
        charged for it. Settle it with ``settle_side`` (or ``release`` it unused)."""
        with self._lock:
            if self.state is None or self.costs is None:
                return None
            money, left_tokens = self.left()
            if (money is not None and micros > money) or (left_tokens is not None and tokens > left_tokens):
                return None
            held: Hold = (None if money is None else micros, None if left_tokens is None else tokens)
            self.held_micros += held[0] or 0
            self.held_tokens += held[1] or 0
            return held

    def settle_side(self, purpose: str, reserved: Hold, usage: Usage, cost: int, overrun: str | None = None) -> None:
        """What a held tool's model call was billed, handed to the parent's loop (a ``side_cost`` record), then the
        hold freed: in that order, under the lock, as ``settle`` does for a child."""
        with self._lock:
            if self.costs is not None:
                self.costs.settle(purpose, usage, cost, reserved_micros=reserved[0], reserved_tokens=reserved[1], overrun=overrun)
            self.held_micros -= reserved[0] or 0
            self.held_tokens -= reserved[1] or 0

    def release(self, reserved: Hold) -> None:
        """Free a hold whose child never ran (refused before it started)."""
        with self._lock:
            self.held_micros -= reserved[0] or 0
            self.held_tokens -= reserved[1] or 0

    def settle(self, reserved: Hold, result: RunResult | None) -> None:
        """Hand what the child really spent to the parent's loop (queued by the parent's driver until the
        turn's tools are done: never written from this thread), then free the hold: in that order, under
        the lock, so a sibling reserving meanwhile sees one or the other."""
        with self._lock:
            if result is not None and self.costs is not None:
                over = f"a sub-agent was billed past its reservation: {result.error}" if result.stop_reason == "budget_overrun" else None
                self.costs.settle("subagent", result.usage, result.spent_micros, reserved_micros=reserved[0],
                                  reserved_tokens=reserved[1], overrun=over)
            self.held_micros -= reserved[0] or 0
            self.held_tokens -= reserved[1] or 0
