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
5. The state outlives its owner. With a journal (``DIR/ledger.jsonl``), every
   grant is appended and flushed to the file before the worker hears it, so
   before the call it pays for, as the loop's records are; settles, forfeits
   and the start and end of each attempt follow. Whoever opens the journal
   next (the next run of the command, or the Ray actor restarted) replays it
   and forfeits every reservation still open: a call in flight when the driver,
   a worker or the actor was killed is counted at its reservation, never lost.
   The replayed state is then written back as one ``state`` line (renamed into
   place), so the journal stays small over any number of kills.
6. Attempts are numbered across runs of the command: the journal keeps the
   highest attempt of each task and which attempts began and never ended
   (their task is marked ``retried`` when it is redone).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from ..budget import Ledger, overrun

__all__ = ["FleetLedger", "Journal", "JournalError", "JournalState", "LedgerBackend", "TaskLedger", "read_journal"]


class JournalError(ValueError):
    """The journal cannot be read as one: ``str()`` names the file and line."""


def _split_key(key: str) -> tuple[str, int]:
    task, _, attempt = key.rpartition("#")
    try:
        return task, int(attempt)
    except ValueError:
        return key, 0


@dataclass
class JournalState:
    """What a journal says, replayed: the figures, the open reservations, the attempts."""

    spent: int = 0
    used_tokens: int = 0
    forfeited: int = 0
    overrun: int = 0
    reservations: int = 0
    refusals: int = 0
    open: dict[str, list[int]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    """The highest attempt that began, by task."""
    unended: set[str] = field(default_factory=set)
    """``task#attempt`` keys that began and did not end (cut short by a kill)."""
    lost: set[str] = field(default_factory=set)
    """Tasks that lost an attempt to a kill in an earlier run (carried in ``state``)."""

    def apply(self, rec: dict[str, Any]) -> None:
        op = rec.get("op")
        key = str(rec.get("key", ""))
        if op == "reserve":
            held = self.open.setdefault(key, [0, 0])
            held[0] += int(rec["micros"])
            held[1] += int(rec["tokens"])
            self.reservations += 1
        elif op == "settle":
            self._settle(key, int(rec["reserved"]), int(rec["actual"]), int(rec["rtokens"]), int(rec["atokens"]))
        elif op == "forfeit":
            self.forfeit(key)
        elif op == "begin":
            task, n = _split_key(key)
            self.attempts[task] = max(self.attempts.get(task, 0), n)
            self.unended.add(key)
        elif op == "end":
            self.unended.discard(key)
        elif op == "state":
            self._load(rec)

    def _settle(self, key: str, reserved: int, actual: int, rtokens: int, atokens: int) -> None:
        held = self.open.get(key)
        if held is None:
            return
        reserved, rtokens = min(reserved, held[0]), min(rtokens, held[1])
        held[0] -= reserved
        held[1] -= rtokens
        if held == [0, 0]:
            del self.open[key]
        self.spent += actual
        self.used_tokens += atokens
        if actual > reserved:
            self.overrun += actual - reserved

    def forfeit(self, key: str) -> int:
        held = self.open.pop(key, None)
        if held is None:
            return 0
        self.spent += held[0]
        self.used_tokens += held[1]
        self.forfeited += held[0]
        return held[0]

    def _load(self, rec: dict[str, Any]) -> None:
        self.spent = int(rec["spent_micros"])
        self.used_tokens = int(rec["used_tokens"])
        self.forfeited = int(rec["forfeited_micros"])
        self.overrun = int(rec["overrun_micros"])
        self.reservations = int(rec["reservations"])
        self.refusals = int(rec["refusals"])
        self.attempts = {str(k): int(v) for k, v in rec["attempts"].items()}
        self.lost = {str(t) for t in rec["lost"]}

    def close_cut_attempts(self) -> None:
        """Forfeit every open reservation and mark every attempt that never ended as lost."""
        for key in list(self.open):
            self.forfeit(key)
        for key in self.unended:
            self.lost.add(_split_key(key)[0])
        self.unended.clear()

    def state_record(self) -> dict[str, Any]:
        return {
            "op": "state", "spent_micros": self.spent, "used_tokens": self.used_tokens,
            "forfeited_micros": self.forfeited, "overrun_micros": self.overrun, "reservations": self.reservations,
            "refusals": self.refusals, "attempts": self.attempts, "lost": sorted(self.lost),
        }


def read_journal(path: str) -> JournalState | None:
    """Replay a journal, its open reservations forfeited; None when there is none.

    A line cut by a kill (the last one) is skipped: its grant was never heard.

    Raises:
        JournalError: a line that parses but does not say what a journal says, or an unreadable file.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise JournalError(f"{path}: cannot read the ledger journal: {exc.strerror or exc}") from None
    state = JournalState()
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        try:
            state.apply(rec)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalError(f"{path}:{n}: not a ledger journal line ({type(exc).__name__}: {exc})") from None
    state.close_cut_attempts()
    return state


class Journal:
    """The ledger's journal: lines appended with one ``write`` each (no buffer: a kill loses none)."""

    def __init__(self, path: str, state: JournalState):
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(state.state_record()) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def write(self, rec: dict[str, Any]) -> None:
        os.write(self.fd, orjson.dumps(rec) + b"\n")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _figure(name: str) -> Any:
    """A figure of the fleet's ``Ledger``, read and written through the ledger (its journal replays set them)."""
    return property(lambda self: getattr(self.figures, name), lambda self, v: setattr(self.figures, name, v))


class FleetLedger:
    """The accounting itself: plain, single-threaded, picklable. Its arithmetic is a ``budget.Ledger``'s."""

    max_usd_micros: int | None = _figure("max_usd_micros")
    max_tokens: int | None = _figure("max_tokens")
    spent: int = _figure("spent")
    used_tokens: int = _figure("used_tokens")
    reserved: int = _figure("reserved")
    reserved_tokens: int = _figure("reserved_tokens")
    refusals: int = _figure("refusals")

    def __init__(
        self,
        max_usd_micros: int | None,
        max_tokens: int | None = None,
        *,
        spent_micros: int = 0,
        used_tokens: int = 0,
        check: bool = True,
        journal: str | None = None,
    ):
        self.figures = Ledger(max_usd_micros, max_tokens, spent=spent_micros, used_tokens=used_tokens)
        """The figures (``budget.Ledger``, the one budget type): settled spend, including earlier runs of a
        resumed batch and forfeits, what is held, and the refusals."""
        self.reservations = 0
        self.forfeited_micros = 0
        self.overrun_micros = 0
        self.check = check
        """False only in tests: the negative control that grants every reservation."""
        self._open: dict[str, list[int]] = {}
        self._running: dict[str, Any] = {}
        self._begun: set[str] = set()
        self.journal: Journal | None = None
        if journal is not None:
            self.attach_journal(journal)

    def attach_journal(self, path: str) -> None:
        """Take over the journal at ``path``: its figures (open reservations forfeited), then write through."""
        state = read_journal(path) or JournalState(spent=self.spent, used_tokens=self.used_tokens)
        self.spent, self.used_tokens = state.spent, state.used_tokens
        self.forfeited_micros, self.overrun_micros = state.forfeited, state.overrun
        self.reservations, self.refusals = state.reservations, state.refusals
        self.journal = Journal(path, state)

    def _log(self, rec: dict[str, Any]) -> None:
        if self.journal is not None:
            self.journal.write(rec)

    def reserve(self, key: str, amount_micros: int, tokens: int, where: Any = None) -> bool:
        """Grant or refuse. ``where`` (a pid, a node) marks ``key`` as running, as ``begin`` does."""
        if where is not None:
            self._running[key] = where
        if self.check and not self.figures.fits(amount_micros, tokens):
            self.figures.refusals += 1
            return False
        self._log({"op": "reserve", "key": key, "micros": amount_micros, "tokens": tokens})  # before the grant is heard
        self.figures.hold(amount_micros, tokens)
        self.reservations += 1
        held = self._open.setdefault(key, [0, 0])
        held[0] += amount_micros
        held[1] += tokens
        return True

    def settle(self, key: str, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        held = self._open.get(key)
        if held is None:
            return  # forfeited already: its reservation was counted as spent
        self._log({"op": "settle", "key": key, "reserved": reserved_micros, "actual": actual_micros,
                   "rtokens": reserved_tokens, "atokens": actual_tokens})
        reserved_micros = min(reserved_micros, held[0])
        reserved_tokens = min(reserved_tokens, held[1])
        held[0] -= reserved_micros
        held[1] -= reserved_tokens
        if held == [0, 0]:
            del self._open[key]
        self.figures.settle(reserved_micros, actual_micros, reserved_tokens, actual_tokens)
        if overrun(actual_micros, reserved_micros):
            self.overrun_micros += actual_micros - reserved_micros

    def forfeit(self, key: str) -> int:
        """The holder of ``key`` died: count what it still holds as spent. Returns the micros."""
        self._running.pop(key, None)
        held = self._open.pop(key, None)
        if held is None:
            return 0
        self._log({"op": "forfeit", "key": key})
        self.figures.forfeit(held[0], held[1])
        self.forfeited_micros += held[0]
        return held[0]

    def begin(self, key: str, where: Any) -> None:
        """A task attempt started (``where`` says where: a pid, a node); journaled the first time."""
        if key not in self._begun:
            self._begun.add(key)
            self._log({"op": "begin", "key": key})
        if where is not None or key not in self._running:
            self._running[key] = where

    def end(self, key: str, forfeit: bool = True) -> int:
        """The attempt ended (finished, or its worker is known dead): what it still held is forfeited,
        unless ``forfeit`` is False (on Ray a finished task's last settle may reach the actor after this)."""
        lost = self.forfeit(key) if forfeit else 0
        self._running.pop(key, None)
        if key in self._begun:
            self._begun.discard(key)
            self._log({"op": "end", "key": key})
        return lost

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

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
    """The ``SharedLedger`` one run sees: the fleet ledger, under this attempt's key.

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
