"""Model calls the runtime makes for itself (compaction summaries, loop checks), inside the run's budget.

Rules:

1. A side call is reserved like a turn: its bound (``budget.input_bound`` of
   what it sends at the dearest input rate, ``max_output_tokens`` at the
   output price) is asked of the run's loop (``SideCosts.ask``, ``loop``
   rule 6), which grants it only when it fits what the run has left and the
   shared ledger grants it; else the call is not made (``skipped``, with the
   loop's reason). A bill past the bound is an ``overrun`` (its error says
   so), as for a turn.
2. What it really cost is settled with the loop (``SideCosts.settle``), which
   charges it to the run's own totals and records it (``side_cost``), so the
   next budget check sees it and a child or a later turn can never spend it
   twice. Nothing here writes the loop's state.
3. A failing model is data (``error``), never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...budget import Price, call_bound, cost_micros, overrun, text_bytes
from ...events import ModelReply, ModelRequest, Usage
from ...run import SideCosts

__all__ = ["Account", "LoopAccount", "SideCall", "side_call"]


class Account(Protocol):
    """Where a side call's room is decided and its spend charged."""

    charged_as: str | None
    """The record kind that holds the charge (``side_cost``), or None when the caller's own record does."""

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        """None when the call may be made (reserved), else why not."""

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int) -> None: ...


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

    def settle(self, purpose: str, reserved_micros: int, reserved_tokens: int, usage: Usage, cost: int) -> None:
        if self.costs is not None:
            self.costs.settle(purpose, usage, cost, reserved_micros=reserved_micros, reserved_tokens=reserved_tokens)


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


def side_call(model: Any, request: ModelRequest, *, price: Price, account: Account, purpose: str) -> SideCall:
    """Make one budgeted model call for the runtime's own purposes."""
    amount, est = call_bound(request.messages, request.tools, request.max_output_tokens, price)
    why = account.ask(purpose, amount, est.total)
    if why is not None:
        return SideCall(purpose, skipped=why, charged_as=account.charged_as)
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
    if overrun(cost, amount):
        over = f"overrun: billed {cost} micro-USD for a side call reserved at {amount}"
        error = over if error is None else f"{error}; {over}"
    account.settle(purpose, amount, est.total, usage, cost)
    return SideCall(purpose, reply, usage, cost, error, charged_as=account.charged_as)
