"""What a parent run has left for its children, measured by its loop (``loop.side_room``), and their holds on it."""

from __future__ import annotations

import threading
from typing import Any

from ...budget import Hold, Ledger, Share
from ...events import Usage
from ...loop import side_room
from ...run import RunResult, SideCosts

__all__ = ["Hold", "ParentBudget", "Share"]


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
    The arithmetic is ``budget.Ledger``'s (integers only): the parent's room
    as a child ledger whose holds are the children's reservations.
    """

    def __init__(self) -> None:
        self.state: Any = None
        self.costs: SideCosts | None = None
        self._lock = threading.Lock()
        self.holds = Ledger()
        """The children's live reservations (``reserved``, ``reserved_tokens``): no cap of its own."""

    def bind(self, state: Any, record: Any = None) -> None:
        self.state = state
        self.costs = record if isinstance(record, SideCosts) else None

    @property
    def held_micros(self) -> int:
        return self.holds.reserved

    @property
    def held_tokens(self) -> int:
        return self.holds.reserved_tokens

    def _room(self) -> Ledger:
        """The parent's room as a ledger: capped at what its loop has left (``side_room``), holding the
        children's reservations, and charged what finished siblings spent that the loop has not taken yet."""
        money, tokens = side_room(self.state)  # the loop's measure of what its run has left (loop rule 6)
        if self.costs is None:  # fail closed: what a child spent could not be charged
            return Ledger(None if money is None else 0, None if tokens is None else 0)
        spent_micros, spent_tokens = self.costs.queued()  # siblings done in this turn, not yet in the loop's state
        return Ledger(
            None if money is None else max(0, money),
            None if tokens is None else max(0, tokens),
            spent=spent_micros,
            used_tokens=spent_tokens,
            reserved=self.holds.reserved,
            reserved_tokens=self.holds.reserved_tokens,
        )

    def left(self) -> Hold:
        """(micro-USD, tokens) the parent has left after live reservations and unsettled spends; None: not capped."""
        if self.state is None:
            return None, None
        return self._room().left()

    def reserve(self, share: Share) -> Hold:
        """Hold ``share`` of what is left for one child (floor division: never more than the share)."""
        return self.reserve_many(share, 1)[0]

    def reserve_many(self, share: Share, n: int) -> list[Hold]:
        """Hold ``n`` equal parts of ``share`` of what is left, at once, for children that start together:
        each gets ``left * num // (den * n)``, so together they hold at most ``share`` of it."""
        with self._lock:
            holds = (self._room() if self.state is not None else Ledger()).split(share, n)
            m, t = holds[0]
            self.holds.hold((m or 0) * n, (t or 0) * n)
            return holds

    def hold(self, micros: int, tokens: int) -> Hold | None:
        """Hold exactly ``micros`` and ``tokens`` of what is left, for a model call a tool makes while the turn's
        tools run (WebFetch's prompt, WebSearch's search); None when it does not fit, or when no loop could be
        charged for it. Settle it with ``settle_side`` (or ``release`` it unused)."""
        with self._lock:
            if self.state is None or self.costs is None:
                return None
            room = self._room()
            if not room.fits(micros, tokens):
                return None
            money, left_tokens = room.left()
            held: Hold = (None if money is None else micros, None if left_tokens is None else tokens)
            self.holds.hold(held[0] or 0, held[1] or 0)
            return held

    def settle_side(self, purpose: str, reserved: Hold, usage: Usage, cost: int, overrun: str | None = None) -> None:
        """What a held tool's model call was billed, handed to the parent's loop (a ``side_cost`` record), then the
        hold freed: in that order, under the lock, as ``settle`` does for a child."""
        with self._lock:
            if self.costs is not None:
                self.costs.settle(purpose, usage, cost, reserved_micros=reserved[0], reserved_tokens=reserved[1], overrun=overrun)
            self.holds.settle(reserved[0] or 0, 0, reserved[1] or 0, 0)

    def release(self, reserved: Hold) -> None:
        """Free a hold whose child never ran (refused before it started)."""
        with self._lock:
            self.holds.settle(reserved[0] or 0, 0, reserved[1] or 0, 0)

    def settle(self, reserved: Hold, result: RunResult | None) -> None:
        """Hand what the child really spent to the parent's loop (queued by the parent's driver until the
        turn's tools are done: never written from this thread), then free the hold: in that order, under
        the lock, so a sibling reserving meanwhile sees one or the other."""
        with self._lock:
            if result is not None and self.costs is not None:
                over = f"a sub-agent was billed past its reservation: {result.error}" if result.stop_reason == "budget_overrun" else None
                self.costs.settle("subagent", result.usage, result.spent_micros, reserved_micros=reserved[0],
                                  reserved_tokens=reserved[1], overrun=over)
            self.holds.settle(reserved[0] or 0, 0, reserved[1] or 0, 0)
