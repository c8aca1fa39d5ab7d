"""The fleet ledger: one budget that every model call of a batch reserves against.

Rules:

1. One owner, serial. The accounting (``FleetLedger``) lives in exactly one
   place and handles one request at a time: in the driver process for the
   local pool (workers ask over their pipe), in one Ray actor on a cluster
   (a Ray actor runs its methods one at a time). No lock is shared with a
   worker, so a worker killed at any instant cannot leave the ledger locked.
2. Reserve, then settle. A reservation is granted only if the settled spend,
   plus every outstanding reservation, plus this one fits the cap. So the
   settled spend never passes the cap as long as each call costs at most what
   it reserved (the loop reserves the input estimate plus ``max_output_tokens``;
   a provider that bills more is counted in ``overrun_micros``).
3. A reservation whose holder died is forfeited: counted as spent, since the
   call may have been made and billed. This errs toward stopping early, never
   toward overspending.
4. Each reservation is keyed by ``task_id#attempt`` so a retried task never
   settles its earlier attempt's reservation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..budget import over_cap

__all__ = ["FleetLedger", "LedgerBackend", "TaskLedger"]


class FleetLedger:
    """The accounting itself: plain, single-threaded, picklable."""

    def __init__(
        self,
        max_usd_micros: int | None,
        max_tokens: int | None = None,
        *,
        spent_micros: int = 0,
        used_tokens: int = 0,
        check: bool = True,
    ):
        self.max_usd_micros = max_usd_micros
        self.max_tokens = max_tokens
        self.spent = spent_micros
        """Settled spend, including earlier runs of a resumed batch and forfeits."""
        self.used_tokens = used_tokens
        self.reserved = 0
        self.reserved_tokens = 0
        self.reservations = 0
        self.refusals = 0
        self.forfeited_micros = 0
        self.overrun_micros = 0
        self.check = check
        """False only in tests: the negative control that grants every reservation."""
        self._open: dict[str, list[int]] = {}
        self._running: dict[str, Any] = {}

    def reserve(self, key: str, amount_micros: int, tokens: int, where: Any = None) -> bool:
        """Grant or refuse. ``where`` (a pid, a node) marks ``key`` as running, as ``begin`` does."""
        if where is not None:
            self._running[key] = where
        if self.check:
            if over_cap(self.spent, self.reserved, amount_micros, self.max_usd_micros) or over_cap(
                self.used_tokens, self.reserved_tokens, tokens, self.max_tokens
            ):
                self.refusals += 1
                return False
        self.reserved += amount_micros
        self.reserved_tokens += tokens
        self.reservations += 1
        held = self._open.setdefault(key, [0, 0])
        held[0] += amount_micros
        held[1] += tokens
        return True

    def settle(self, key: str, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        held = self._open.get(key)
        if held is None:
            return  # forfeited already: its reservation was counted as spent
        reserved_micros = min(reserved_micros, held[0])
        reserved_tokens = min(reserved_tokens, held[1])
        held[0] -= reserved_micros
        held[1] -= reserved_tokens
        if held == [0, 0]:
            del self._open[key]
        self.reserved -= reserved_micros
        self.reserved_tokens -= reserved_tokens
        self.spent += actual_micros
        self.used_tokens += actual_tokens
        if actual_micros > reserved_micros:
            self.overrun_micros += actual_micros - reserved_micros

    def forfeit(self, key: str) -> int:
        """The holder of ``key`` died: count what it still holds as spent. Returns the micros."""
        self._running.pop(key, None)
        held = self._open.pop(key, None)
        if held is None:
            return 0
        self.reserved -= held[0]
        self.reserved_tokens -= held[1]
        self.spent += held[0]
        self.used_tokens += held[1]
        self.forfeited_micros += held[0]
        return held[0]

    def begin(self, key: str, where: Any) -> None:
        """A task attempt started (``where`` says where: a pid, a node)."""
        self._running[key] = where

    def end(self, key: str) -> None:
        self._running.pop(key, None)

    def running(self) -> dict[str, Any]:
        return dict(self._running)

    def snapshot(self) -> dict[str, Any]:
        return {
            "spent_micros": self.spent,
            "reserved_micros": self.reserved,
            "used_tokens": self.used_tokens,
            "reserved_tokens": self.reserved_tokens,
            "reservations": self.reservations,
            "refusals": self.refusals,
            "forfeited_micros": self.forfeited_micros,
            "overrun_micros": self.overrun_micros,
            "max_usd_micros": self.max_usd_micros,
            "max_tokens": self.max_tokens,
        }


class LedgerBackend(Protocol):
    """How a worker reaches the fleet ledger (a pipe to the driver, a Ray actor)."""

    def reserve(self, key: str, amount_micros: int, tokens: int) -> bool: ...

    def settle(self, key: str, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None: ...


@dataclass
class TaskLedger:
    """The ``Ledger`` one run sees: the fleet ledger, under this attempt's key.

    A refused reservation is also written to the run's transcript (a
    ``ledger_refusal`` record before the loop's ``stop``), with the amount asked.
    """

    backend: LedgerBackend
    key: str
    sink: Any = None
    reservations: int = 0
    refusals: int = 0

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        granted = bool(self.backend.reserve(self.key, amount_micros, tokens))
        if granted:
            self.reservations += 1
        else:
            self.refusals += 1
            if self.sink is not None:
                self.sink.append("ledger_refusal", {"scope": "fleet", "amount_micros": amount_micros, "tokens": tokens})
        return granted

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        self.backend.settle(self.key, reserved_micros, actual_micros, reserved_tokens, actual_tokens)
