"""Model calls the runtime makes for itself (compaction summaries, loop checks), inside the run's budget.

Rules:

1. A side call is reserved like a turn: its bound (``budget.input_bound`` of
   what it sends at the dearest input rate, ``max_output_tokens`` at the
   output price) must fit what the run has left, and the shared ledger must
   grant it, or the call is not made (``skipped``). A bill past the bound is
   an ``overrun`` (its error says so), as for a turn.
2. What it really cost is charged to the run's own totals (``spent_micros``,
   ``tokens``, ``usage``), so the loop's next budget check sees it and a
   child or a later turn can never spend it twice.
3. A failing model is data (``error``), never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...budget import (
    Budget,
    Ledger,
    Price,
    cost_micros,
    input_bound,
    reservation_micros,
    text_bytes,
)
from ...events import ModelReply, ModelRequest, Usage

__all__ = ["Account", "SideCall", "StateAccount", "side_call"]


class Account(Protocol):
    """Where a side call's spend is checked and charged."""

    def room(self, micros: int, tokens: int) -> str | None:
        """None when the amount fits, else why not."""

    def reserve(self, micros: int, tokens: int) -> bool: ...

    def settle(self, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int) -> None: ...


class StateAccount:
    """The budget of a running loop (its ``State``), and its shared ledger if any."""

    def __init__(self, state: Any, ledger: Ledger | None = None):
        self.state = state
        self.ledger = ledger

    def room(self, micros: int, tokens: int) -> str | None:
        st = self.state
        b: Budget = st.config.budget
        held = st.spent_micros + st.reserved_micros  # the turn about to be made is reserved already
        if b.max_usd_micros is not None and held + micros > b.max_usd_micros:
            return f"needs a reservation of {micros} micro-USD (its bound); {b.max_usd_micros - held} are left"
        if b.max_tokens is not None and st.tokens + tokens > b.max_tokens:
            return f"needs {tokens} tokens; {b.max_tokens - st.tokens} are left"
        return None

    def reserve(self, micros: int, tokens: int) -> bool:
        return self.ledger is None or bool(self.ledger.reserve(micros, tokens))

    def settle(self, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int) -> None:
        if self.ledger is not None:
            self.ledger.settle(reserved_micros, cost, reserved_tokens, usage.total)
        st = self.state
        if cost > reserved_micros and (st.config.budget.max_usd_micros is not None or st.config.shared_cap):
            st.overrun = f"a side call was billed {cost} micro-USD, past its reservation of {reserved_micros}"
        st.spent_micros += cost
        st.tokens += usage.total
        st.usage = st.usage + usage


@dataclass(frozen=True)
class SideCall:
    purpose: str
    reply: ModelReply | None = None
    usage: Usage = Usage()
    cost_micros: int = 0
    error: str | None = None
    skipped: str | None = None
    """Why the call was not made (the budget), or None."""

    @property
    def ok(self) -> bool:
        return self.reply is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"purpose": self.purpose, "usage": self.usage.to_json(), "cost_micros": self.cost_micros}
        if self.error is not None:
            out["error"] = self.error
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


def side_call(model: Any, request: ModelRequest, *, price: Price, account: Account, purpose: str) -> SideCall:
    """Make one budgeted model call for the runtime's own purposes."""
    est = Usage(input_tokens=input_bound(request.messages, request.tools), output_tokens=request.max_output_tokens)
    amount = reservation_micros(est.input_tokens, est.output_tokens, price)
    why = account.room(amount, est.total)
    if why is not None:
        return SideCall(purpose, skipped=f"the budget has no room: {why}")
    if not account.reserve(amount, est.total):
        return SideCall(purpose, skipped=f"the shared ledger refused a reservation of {amount} micro-USD")
    reply: ModelReply | None = None
    error: str | None = None
    try:
        out = model.complete(request)
        if isinstance(out, ModelReply):
            reply = out
        else:
            error = f"the model returned a {type(out).__name__}, not a ModelReply"
    except Exception as exc:  # the model's failure is data
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if reply is None:
        usage = Usage()
    elif reply.usage is not None:
        usage = reply.usage
    else:
        usage = Usage(input_tokens=est.input_tokens, output_tokens=min(est.output_tokens, text_bytes(reply.text) + 16))
    cost = cost_micros(usage, price)
    if cost > amount:
        over = f"overrun: billed {cost} micro-USD for a side call reserved at {amount}"
        error = over if error is None else f"{error}; {over}"
    account.settle(amount, est.total, usage, cost)
    return SideCall(purpose, reply, usage, cost, error)
