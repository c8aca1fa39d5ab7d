"""What a parent run has left for its children, measured by its loop (``loop.side_room``), and their holds on it."""

from __future__ import annotations

import threading
from typing import Any

from ...budget import Hold, Ledger, Share
from ...events import ToolCall, ToolResult, Usage
from ...loop import side_room
from ...run import RunResult, SideCosts

__all__ = ["ChildLedger", "Hold", "ParentBudget", "ParentLedger", "Share"]


class ParentBudget:
    """What the parent run has left, and the children's reservations against it.

    Bind it to the parent's loop with ``bind`` as (part of) the run's
    ``prepare``: it is refreshed before every parent turn, and keeps the
    run's ``SideCosts`` (what ``prepare`` records with), through which a
    child's spend enters the parent's loop (``loop`` rule 6). Bound without
    them (no loop to charge), it grants children nothing when the parent is
    capped: a spend the parent's loop cannot see could pass its cap.

    Children draw from the parent's room call by call (``draw``, through each
    child's ``ChildLedger``), as the parent's own turns do: what is left is
    the loop's ``side_room`` less the live holds (children's calls in flight,
    tools' side calls), less what running children's calls were already
    billed (``drawn``), less what children finished in this turn spent (their
    costs wait in ``SideCosts`` until the turn's tools are done). Any number of
    children at once each make progress, and together they never pass the
    parent's cap. The arithmetic is ``budget.Ledger``'s (integers only).

    A background child outlives the turn that started it: what its calls were
    billed waits in ``pending`` (still counted against the room) until the
    next run of the session binds, which hands it to that run's loop
    (``bind``); and while it runs, the parent's own model calls reserve
    through ``ParentLedger`` (``run(..., ledger=)``), which refuses a
    reservation that, with what the children hold, drew and left pending,
    would pass the room.
    """

    def __init__(self) -> None:
        self.state: Any = None
        self.costs: SideCosts | None = None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        """Told whenever a hold is freed or a child's call is settled: a child waiting for room looks again."""
        self.holds = Ledger()
        """The live reservations (``reserved``, ``reserved_tokens``): children's model calls, tools' side calls.
        No cap of its own."""
        self.drawn = Ledger()
        """What running children's calls were billed (``spent``, ``used_tokens``), not yet handed to the loop."""
        self.pending: list[tuple[Hold, Usage, int, str | None]] = []
        """Finished background children's bills (their caps, usage, cost, overrun) waiting for a live run."""

    def bind(self, state: Any, record: Any = None) -> None:
        """The run now calling (its ``prepare``): its state, its ``SideCosts``, and the background children's
        bills handed to its loop (on its own thread, before its call), each taken out of ``pending`` as it lands."""
        with self._changed:
            self.state = state
            self.costs = record if isinstance(record, SideCosts) else None
            while self.pending and self.costs is not None:
                allowed, usage, cost, over = self.pending[0]
                # settled from prepare for its bill, which the room was kept for (ParentLedger): its starting caps
                # would not fit beside this run's own turn, live or replayed (replay reads it as asked there)
                tokens = 0 if allowed[1] is None else usage.total
                self.costs.settle("subagent", usage, cost, reserved_micros=cost, reserved_tokens=tokens, overrun=over)
                self.pending.pop(0)
            self._changed.notify_all()

    def take_pending(self) -> int:
        """The session ends with background children's bills that no run will take: their total, in micro-USD,
        taken out of ``pending`` (the session counts it in its spend)."""
        with self._changed:
            left, self.pending = self.pending, []
        return sum(p[2] for p in left)

    def admit(self, call: ToolCall) -> ToolResult | None:
        """The scheduler's ``admit`` (``run.schedule``): a call to a tool whose record ``spends`` starts only while
        the run has room left for it; else its refusal, and it never starts. Other calls always start.

        It holds nothing: a spending call's cost is not known when it starts (a child's calls, a fetch's prompt),
        so each model call it makes holds its own bound before it is sent (``draw``, ``hold``, under the one
        lock) and settles after. That, not ``admit``, keeps calls running side by side under the cap together
        (``tests/test_one_scheduler.py``)."""
        from ..tools.catalog import record_of

        rec = record_of(call.name)
        if rec is None or not rec.spends:
            return None
        money, tokens = self.room_for_child()
        if money != 0 and tokens != 0:
            return None
        what = "money" if money == 0 else "tokens"
        return ToolResult(call.id, call.name, False,
                          error=f"{call.name} was not started: the run's budget has no {what} left for the model calls it makes")

    def for_run(self, budget: Any) -> ParentLedger:
        """A new run of the session is about to start with ``budget``: until its ``prepare`` binds it, the room is
        that budget's, untouched (its first reservation comes before its first ``prepare``). Returns the view
        its own calls reserve through."""
        with self._changed:
            self.state = _Fresh(budget)
            self.costs = None
        return ParentLedger(self)

    @property
    def held_micros(self) -> int:
        return self.holds.reserved

    @property
    def held_tokens(self) -> int:
        return self.holds.reserved_tokens

    def _room(self, with_holds: bool = True) -> Ledger:
        """The parent's room as a ledger: capped at what its loop has left (``side_room``), holding the
        children's reservations, and charged what finished siblings spent that the loop has not taken yet."""
        money, tokens = _side_room(self.state)  # the loop's measure of what its run has left (loop rule 6)
        if self.costs is None and not isinstance(self.state, _Fresh):  # fail closed: what a child spent could not be charged
            return Ledger(None if money is None else 0, None if tokens is None else 0)
        spent_micros, spent_tokens = self.costs.queued() if self.costs is not None else (0, 0)  # siblings done in this turn, not yet in the loop's state
        return Ledger(
            None if money is None else max(0, money),
            None if tokens is None else max(0, tokens),
            spent=spent_micros + self.drawn.spent + sum(p[2] for p in self.pending),
            used_tokens=spent_tokens + self.drawn.used_tokens + sum(p[1].total for p in self.pending),
            reserved=self.holds.reserved if with_holds else 0,
            reserved_tokens=self.holds.reserved_tokens if with_holds else 0,
        )

    def left(self) -> Hold:
        """(micro-USD, tokens) the parent has left after live reservations and unsettled spends; None: not capped."""
        if self.state is None:
            return None, None
        return self._room().left()

    def room_for_child(self) -> Hold:
        """A starting child's caps: what the parent has left, not counting the reservations of calls in flight
        (siblings' calls hold them only for the moment); None where the parent is not capped."""
        if self.state is None:
            return None, None
        with self._changed:
            return self._room(with_holds=False).left()

    def draw(self, micros: int, tokens: int) -> bool:
        """Hold one model call of a child (its reservation, as its loop computed it) from what the parent has left
        now: the children of a turn draw from the one room call by call, as the parent's own turns do. When the
        call does not fit only because other calls hold reservations, wait until they settle; when it could not
        fit even then, refuse (the child stops as on its own cap). Unbound (no parent loop), every call fits."""
        with self._changed:
            while True:
                if self.state is None or self._room().fits(micros, tokens):
                    self.holds.hold(micros, tokens)
                    return True
                if not (self.holds.reserved or self.holds.reserved_tokens or _parent_calling(self.state)):
                    return False  # nothing in flight will free room
                if not self._room(with_holds=False).fits(micros, tokens) and not _parent_calling(self.state):
                    return False
                self._changed.wait(timeout=1.0)

    def settle_draw(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        """A child's call was billed: free its hold and count the bill against the room at once (siblings see it)."""
        with self._changed:
            self.holds.settle(reserved_micros, 0, reserved_tokens, 0)
            self.drawn.settle(0, actual_micros, 0, actual_tokens)
            self._changed.notify_all()

    def child_ledger(self) -> ChildLedger:
        """The shared ledger a child's run reserves each call against (``run(..., ledger=)``)."""
        return ChildLedger(self)

    def hold(self, micros: int, tokens: int) -> Hold | None:
        """Hold exactly ``micros`` and ``tokens`` of what is left, for a model call a tool makes while the turn's
        tools run (WebFetch's prompt, WebSearch's search); None when it does not fit, or when no loop could be
        charged for it. Settle it with ``settle_side`` (or ``release`` it unused)."""
        with self._changed:
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
        with self._changed:
            if self.costs is not None:
                self.costs.settle(purpose, usage, cost, reserved_micros=reserved[0], reserved_tokens=reserved[1], overrun=overrun)
            self.holds.settle(reserved[0] or 0, 0, reserved[1] or 0, 0)
            self._changed.notify_all()

    def release(self, reserved: Hold) -> None:
        """Free a hold that was never used."""
        with self._changed:
            self.holds.settle(reserved[0] or 0, 0, reserved[1] or 0, 0)
            self._changed.notify_all()

    def settle(self, allowed: Hold, ledger: ChildLedger, result: RunResult | None, later: bool = False) -> None:
        """Hand what a finished child's calls were billed (its ledger's total, whether or not its run returned)
        to the parent's loop as one side cost (queued by the parent's driver until the turn's tools are done:
        never written from this thread), and take it out of the running children's total: in that order,
        under the lock, so a sibling drawing meanwhile counts it once. ``allowed``: the room the child
        started with (its budget's caps). ``later``: a background child, whose turn may be over: its bill waits in
        ``pending`` for the next run that binds (still counted against the room meanwhile)."""
        with self._changed:
            if later:
                over = None
                if result is not None and result.stop_reason == "budget_overrun":
                    over = f"a sub-agent was billed past its reservation: {result.error}"
                self.pending.append((allowed, result.usage if result is not None else Usage(), ledger.spent, over))
            elif self.costs is not None:
                over = None
                if result is not None and result.stop_reason == "budget_overrun":
                    over = f"a sub-agent was billed past its reservation: {result.error}"
                usage = result.usage if result is not None else Usage()
                self.costs.settle("subagent", usage, ledger.spent, reserved_micros=allowed[0],
                                  reserved_tokens=allowed[1], overrun=over)
            self.drawn.settle(0, -ledger.spent, 0, -ledger.tokens)
            self._changed.notify_all()


class ChildLedger:
    """One child's view of its parent's room (``budget.SharedLedger``): each call drawn and settled there, and
    the child's own total kept, which is what its parent's loop is handed when it ends."""

    def __init__(self, parent: ParentBudget):
        self.parent = parent
        self.billed = Ledger()
        """What this child's calls were billed (``spent``, ``used_tokens``): no cap of its own, its parent's room decides."""

    @property
    def spent(self) -> int:
        return self.billed.spent

    @property
    def tokens(self) -> int:
        return self.billed.used_tokens

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        return self.parent.draw(amount_micros, tokens)

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        self.billed.settle(0, actual_micros, 0, actual_tokens)
        self.parent.settle_draw(reserved_micros, actual_micros, reserved_tokens, actual_tokens)


class ParentLedger:
    """The parent run's own view of the room (``budget.SharedLedger``, ``run(..., ledger=)``): a reservation of the
    parent's is granted only when, with what children hold, drew and left pending, the room still holds it;
    while children's calls in flight might free room, it waits for them. The parent's turn reservation is in its
    loop's state when it asks (``side_room`` already counts it); a side call's is not yet."""

    def __init__(self, parent: ParentBudget):
        self.parent = parent

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        p = self.parent
        with p._changed:
            while True:
                state = p.state
                in_state = not isinstance(state, _Fresh) and not getattr(state, "side_waiting", False)
                need = (0, 0) if in_state else (amount_micros, tokens)
                if state is None or p._room().fits(*need):
                    return True
                if not (p.holds.reserved or p.holds.reserved_tokens) or not p._room(with_holds=False).fits(*need):
                    return False
                p._changed.wait(timeout=1.0)

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        with self.parent._changed:
            self.parent._changed.notify_all()  # the parent's call settled: a child waiting for room looks again


class _Fresh:
    """A run about to start, as ``side_room`` reads a loop's state: its budget, nothing spent or held yet."""

    def __init__(self, budget: Any):
        self.config = self
        self.budget = budget
        self.spent_micros = self.reserved_micros = self.tokens = self.reserved_tokens = 0


def _side_room(state: Any) -> tuple[int | None, int | None]:
    """``loop.side_room`` of the parent's state; for a run about to start (``_Fresh``), its budget's caps whole
    (the compiled loop takes only its own ``State``)."""
    if isinstance(state, _Fresh):
        b = state.budget
        return b.max_usd_micros, b.max_tokens
    return side_room(state)


def _parent_calling(state: Any) -> bool:
    """The parent's loop holds a reservation for a model call in flight: it settles soon (room may come back)."""
    return bool(state is not None and not isinstance(state, _Fresh) and (state.reserved_micros or state.reserved_tokens))
