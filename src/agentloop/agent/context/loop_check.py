"""The optional model check for loops: after turn 30, every 10 turns, ask a cheap model if the run is stuck.

The heuristic lives in the loop itself (``loop_threshold``: the same tool
calls, by name and canonical arguments, for N turns in a row). This check
catches what it cannot (cycles of several calls, retries that vary
slightly). It goes through the same provider layer (any ``Model``) and the
same budget (``side_calls``): when the budget has no room, the check is
skipped and recorded as such. Each check is a ``loop_check`` record; a
"LOOPING" verdict adds ``loop_detected`` (``method: "model"``) and stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...budget import Price
from ...canonical import canonical
from ...events import Message, ModelRequest
from ...model_description import describe
from .side_calls import LoopAccount, side_call

__all__ = ["LoopCheck", "chain", "parse_verdict"]

PROBE = (
    "Here are the recent turns of an AI agent's run.\n\n{turns}\n\n"
    "Is the agent stuck in a loop, repeating the same actions without making progress? "
    "Reply with exactly one word: LOOPING or NOT_LOOPING."
)

Record = Callable[[str, Any], None]
Prepare = Callable[[Any, Record], "str | None"]


def parse_verdict(text: str) -> str:
    """``LOOPING``, ``NOT_LOOPING`` or ``unknown`` (which never stops a run)."""
    t = text.strip().upper().lstrip("*`\"' ")
    if t.startswith(("NOT_LOOPING", "NOT LOOPING")):
        return "NOT_LOOPING"
    if t.startswith("LOOPING"):
        return "LOOPING"
    return "unknown"


def _summarise(messages: Sequence[Message], n: int) -> str:
    lines: list[str] = []
    for m in messages[-n:]:
        role = m.get("role")
        text = str(m.get("content", ""))[:160].replace("\n", " ")
        line = f"{role}: {text}" if text else f"{role}:"
        for c in m.get("tool_calls", ()):
            try:
                args = canonical(c.get("arguments")).decode()[:120]
            except (ValueError, TypeError):
                args = "?"
            line += f" [calls {c.get('name')}({args})]"
        lines.append(line)
    return "\n".join(lines)


@dataclass
class LoopCheck:
    model: Any
    """A cheap model (a provider's ``Model``)."""
    model_name: str = ""
    price: Price | None = None
    """Its price; resolved from the built-in table by ``model_name`` when None (the highest when unknown)."""
    after: int = 30
    every: int = 10
    recent: int = 20
    """How many recent messages the probe shows."""
    max_output_tokens: int = 10
    ledger: Any = None
    """Unused: a side call reserves with the run's own ledger, through its loop (kept for callers that pass it)."""
    checks: int = 0
    _last_step: int = -1

    def due(self, step: int) -> bool:
        return step >= self.after and (step - self.after) % self.every == 0 and step != self._last_step

    def _price(self) -> Price:
        if self.price is None:
            from ...prices import default_prices

            self.price = default_prices().resolve(self.model_name or describe(self.model).name)
        return self.price

    def prepare(self, state: Any, record: Record) -> str | None:
        """``run(..., prepare=check.prepare)``: before the model call that would make turn ``steps + 1``."""
        step = int(state.steps)
        if not self.due(step):
            return None
        self._last_step = step
        self.checks += 1
        req = ModelRequest(
            messages=[{"role": "user", "content": PROBE.format(turns=_summarise(state.messages, self.recent))}],
            tools=(),
            max_output_tokens=self.max_output_tokens,
        )
        call = side_call(self.model, req, price=self._price(), account=LoopAccount(record), purpose="loop_check")
        verdict = parse_verdict(call.reply.text) if call.reply is not None else "unknown"
        name = self.model_name or describe(self.model).name
        rec: dict[str, Any] = {"step": step, "method": "model", "model": name, "verdict": verdict, **call.to_json()}
        if call.reply is not None:
            rec["answer"] = call.reply.text[:200]
        record("loop_check", rec)
        if verdict == "LOOPING":
            record("loop_detected", {"step": step, "method": "model", "model": name})
            return "loop_detected"
        return None


def chain(*prepares: Prepare | None) -> Prepare:
    """One ``prepare`` that runs several in order; the first stop reason wins."""
    parts = [p for p in prepares if p is not None]

    def prepare(state: Any, record: Record) -> str | None:
        for p in parts:
            reason = p(state, record)
            if reason is not None:
                return reason
        return None

    return prepare
