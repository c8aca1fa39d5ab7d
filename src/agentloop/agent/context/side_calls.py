"""Model calls the runtime makes for itself (compaction summaries, loop checks) and the model calls tools
make (WebFetch's prompt, WebSearch's server-side search), inside the run's budget: one way for all of them.

Rules:

1. Every such call goes through ``metered``: its bound (a ``budget.CallBound``:
   ``budget.input_bound`` of what it sends at the dearest input rate, the
   ``max_tokens`` it asks at the output price, a server tool's ``max_uses`` at
   their price) is asked of an ``Account`` before the call: the run's loop
   (``LoopAccount``, through ``SideCosts.ask``, ``loop`` rule 6), or, while the
   turn's tools run, what the parent's loop has left (``HeldAccount``, a hold
   on ``ParentBudget``), or, between runs (a manual ``/compact``), the
   session's own ``budget.Ledger`` (``LedgerAccount``). Without room the call
   is not made (``skipped``). Each account asks the budget module, which alone
   decides whether a bound fits.
2. What it was billed is read by the one rule every provider call is settled
   by, the loop's own (``budget.bill``): figures that are negative, or more
   than the request allowed (output past ``max_tokens``, tokens past the
   input's byte bound and the output asked, searches past ``max_uses``), are
   charged the whole reservation as an overrun; a reply without figures is
   charged its input bound and its bytes of output (``budget.unreported_bill``);
   a failure is charged what its error says its attempts were billed, at most
   the reservation (``budget.capped_bill``), and the whole reservation when
   the provider's figures could not be believed (``unaccounted``).
3. The bill is settled with the account, which hands it to the loop (a
   ``side_cost`` record); an overrun stops the run before its next call.
   Nothing here writes the loop's state.
4. A failing model is data (``error``), never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...budget import (
    Bill,
    CallBound,
    Ledger,
    Price,
    bill,
    call_bound,
    capped_bill,
    text_bytes,
    unreported_bill,
)
from ...events import ModelReply, ModelRequest, Usage
from ...run import SideCosts

__all__ = ["Account", "Answer", "HeldAccount", "LedgerAccount", "LoopAccount", "SideCall", "metered", "side_call"]


class Account(Protocol):
    """Where a side call's room is decided and its spend charged."""

    charged_as: str | None
    """The record kind that holds the charge (``side_cost``), or None when the caller's own record does."""

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        """None when the call may be made (reserved), else why not."""

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int,
               overrun: str | None = None) -> None: ...


class LoopAccount:
    """The budget of a running loop, through the ``SideCosts`` its driver gave ``prepare`` (as its ``record``).

    The loop decides and charges. Given anything else (a plain recording
    function: no loop to charge), every ask is refused and says so.
    """

    def __init__(self, record: Any):
        self.costs = record if isinstance(record, SideCosts) else None
        self.charged_as: str | None = "side_cost" if self.costs is not None else None

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        if self.costs is None:
            return "no running loop to charge it to (prepare was not given the run's SideCosts)"
        return self.costs.ask(purpose, micros, tokens)

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int,
               overrun: str | None = None) -> None:
        if self.costs is not None:
            self.costs.settle(purpose, usage, cost, reserved_micros=reserved_micros, reserved_tokens=reserved_tokens,
                              overrun=overrun)


class HeldAccount:
    """What the parent's loop has left while the turn's tools run (a ``ParentBudget``: ``hold``, ``settle_side``):
    a tool's model call holds its bound there, and its bill reaches the loop as a ``side_cost``."""

    charged_as: str | None = "side_cost"

    def __init__(self, budget: Any):
        self.budget = budget
        self.held: Any = None

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        self.held = self.budget.hold(micros, tokens)
        if self.held is None:
            return f"the spend cap has no room for it (its bound: {micros} micro-USD)"
        return None

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int,
               overrun: str | None = None) -> None:
        self.budget.settle_side(purpose, self.held, usage, cost, overrun)


class LedgerAccount:
    """A ``budget.Ledger`` no loop runs against: the session's money between runs (a manual ``/compact``).

    The ledger decides (``reserve``) and charges (``settle``); its owner reads
    ``spent`` after. No loop takes the cost, so the caller's own record holds
    it (``charged_as`` is None).
    """

    charged_as: str | None = None

    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        if self.ledger.reserve(micros, tokens):
            return None
        return f"the budget has no room: needs a reservation of {micros} micro-USD; {self.ledger.left()[0]} are left"

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int,
               overrun: str | None = None) -> None:
        self.ledger.settle(reserved_micros, cost, reserved_tokens, usage.total)


@dataclass(frozen=True)
class SideCall:
    purpose: str
    reply: ModelReply | None = None
    usage: Usage = Usage()
    cost_micros: int = 0
    error: str | None = None
    skipped: str | None = None
    """Why the call was not made (the budget), or None."""
    charged_as: str | None = None
    """The record kind that holds its charge (``side_cost``, written by the loop just before), or None."""

    @property
    def ok(self) -> bool:
        return self.reply is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"purpose": self.purpose, "usage": self.usage.to_json(), "cost_micros": self.cost_micros}
        if self.error is not None:
            out["error"] = self.error
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.charged_as is not None:
            out["charged_as"] = self.charged_as
        return out


@dataclass(frozen=True)
class Answer:
    """What a metered call returned: its value, the usage it reported (None: no figures), the server tool's
    uses it reported, and its output's bytes (what a reply without figures is charged by)."""

    value: Any
    usage: Usage | None
    uses: int = 0
    output_bytes: int = 0


def _failure_bill(bound: CallBound, exc: BaseException, what: str) -> Bill:
    """What a failed call is charged: the reservation when its figures could not be believed; else what its
    error says its attempts were billed, at most the reservation; nothing when it was never answered."""
    if getattr(exc, "unaccounted", False) is True:
        held = Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens)
        return Bill(held, bound.micros, f"{what} was billed with figures that cannot be believed: charged its reservation "
                    f"of {bound.micros} micro-USD", at_reservation=True)
    billed = getattr(exc, "usage", None)
    if isinstance(billed, Usage) and billed.total:
        return capped_bill(bound, billed, what=what)
    return Bill(Usage(), 0)


def metered(call: Callable[[], Answer], bound: CallBound, account: Account, purpose: str) -> tuple[Answer | None, SideCall]:
    """Hold ``bound`` on ``account``, make ``call``, settle its bill by ``budget.bill``: the one way a side call
    or a tool's model call spends. Returns the answer (None when skipped or failed) and the record of the call."""
    why = account.ask(purpose, bound.micros, bound.tokens)
    if why is not None:
        return None, SideCall(purpose, skipped=why, charged_as=account.charged_as)
    what = f"a side call ({purpose})"
    answer: Answer | None = None
    error: str | None = None
    try:
        answer = call()
    except Exception as exc:  # the provider's failure is data, charged what it says it was billed
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        b = _failure_bill(bound, exc, what)
    else:
        if answer.usage is None:
            b = unreported_bill(bound, answer.output_bytes, what=what)
        else:
            b = bill(bound, answer.usage, answer.uses, what=what)
    if b.overrun is not None:
        error = b.overrun if error is None else f"{error}; {b.overrun}"
    account.settle(purpose, bound.micros, bound.tokens, b.usage, b.cost_micros, b.overrun)
    if b.at_reservation:
        answer = None  # figures no provider can have billed: its answer is not believed either
        error = error or "charged its reservation"
    reply = answer.value if answer is not None and isinstance(answer.value, ModelReply) else None
    return answer, SideCall(purpose, reply, b.usage, b.cost_micros, error, charged_as=account.charged_as)


def side_call(model: Any, request: ModelRequest, *, price: Price, account: Account, purpose: str) -> SideCall:
    """Make one budgeted model call for the runtime's own purposes (``metered``)."""
    _, est = call_bound(request.messages, request.tools, request.max_output_tokens, price)
    bound = CallBound(est.input_tokens, est.output_tokens, price)

    def call() -> Answer:
        out = model.complete(request)
        if not isinstance(out, ModelReply):
            raise TypeError(f"the model returned a {type(out).__name__}, not a ModelReply")
        return Answer(out, out.usage, 0, text_bytes(out.text) + 16)

    return metered(call, bound, account, purpose)[1]
