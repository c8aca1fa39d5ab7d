"""A turn that a Stop (or SubagentStop) hook keeps going: budgets, the block cap, totals.

Claude Code's hooks reference (Stop input): ``stop_hook_active`` is true
"when Claude Code is already continuing as a result of a stop hook", and
"Claude Code overrides the hook and ends the turn after 8 consecutive
blocks". A block (``decision: "block"`` with a ``reason``, exit 2 with
stderr, or ``hookSpecificOutput.additionalContext`` as non-error feedback)
keeps the same turn going: the reason goes to the model as the next user
message and the run continues.

Here the turn is a sequence of runs of the loop, one after another in the
same transcript, never a recursion: ``StopGate`` adds their totals, and says
whether one more may start. It may when the last run ended because the model
finished (not on a budget, an error or an interrupt), fewer than
``max_blocks`` blocks came in a row, and the turn's budget (steps, tokens,
money, counted over all its runs) has room left for another run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...budget import Budget, Ledger
from ...events import Usage
from ...run import RunResult
from .runner import HookOutcome

__all__ = ["MAX_STOP_BLOCKS", "StopGate", "stop_feedback"]

MAX_STOP_BLOCKS = 8
"""Claude Code ends the turn after this many consecutive Stop hook blocks."""

CONTINUABLE = frozenset(("no_tool_calls", "sentinel"))
"""Stop reasons after which a Stop hook may keep the turn going: the model finished."""


@dataclass
class StopGate:
    """The runs of one turn, and whether a Stop hook's block may start another."""

    budget: Budget
    """The whole turn's caps: every run of the turn counts against them."""
    max_blocks: int = MAX_STOP_BLOCKS
    blocks: int = 0
    """Consecutive blocks so far in this turn."""
    total: RunResult | None = None
    runs: int = 0
    refusals: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """``stop_hook_active`` for the next Stop hook call."""
        return self.blocks > 0

    def add(self, result: RunResult) -> RunResult:
        """Count one run of the turn; returns the turn's totals so far (the last run's answer and stop)."""
        self.runs += 1
        t = self.total
        if t is None:
            self.total = result
        else:
            self.total = replace(
                result,
                steps=t.steps + result.steps,
                usage=_add(t.usage, result.usage),
                tokens=t.tokens + result.tokens,
                spent_micros=t.spent_micros + result.spent_micros,
                records=t.records + result.records,
            )
        return self.total

    def remaining(self) -> Budget | None:
        """The caps left for another run of this turn, or None when one of them is used up (the turn's
        ``budget.Ledger``: every run of the turn counted against its caps)."""
        t = self.total
        turn = Ledger.of(self.budget, t.spent_micros, t.tokens, t.steps) if t is not None else Ledger.of(self.budget)
        return turn.remaining(self.budget.is_unlimited)

    def why_not(self, last: RunResult) -> str | None:
        """Why a block after ``last`` cannot continue the turn (None: it can). Counts the block when it can."""
        if last.stop_reason not in CONTINUABLE:
            why = f"the run ended with {last.stop_reason}"
        elif self.blocks >= self.max_blocks:
            why = f"{self.max_blocks} blocks in a row (Claude Code's cap)"
        elif self.remaining() is None:
            why = "the turn's budget is used up"
        else:
            self.blocks += 1
            return None
        self.refusals.append(why)
        return why


def _add(a: Usage, b: Usage) -> Usage:
    return a + b


def stop_feedback(out: HookOutcome) -> str | None:
    """What a Stop or SubagentStop outcome tells the model to go on with, or None to let it stop.

    Claude Code's hooks reference, Stop decision control: ``decision:
    "block"`` (or exit 2) "prevents Claude from stopping" and ``reason``
    "tells Claude why it should continue"; ``additionalContext`` is
    "non-error feedback for Claude. The conversation continues so Claude can
    act on it". ``continue: false`` takes precedence over both.
    """
    if out.stop:
        return None
    parts: list[str] = []
    if out.blocked:
        parts.append(out.reason or f"A {out.event} hook asked you to keep going.")
    parts += [c for c in out.additional_context if c]
    return "\n\n".join(parts) if parts else None
