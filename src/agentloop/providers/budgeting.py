"""Count before sending: near the cap, ask the provider for the exact input tokens.

The loop reserves each call from an estimate (characters // 4). Far from the
cap that is good enough; near it, a wrong estimate either lets a call pass
the cap (the loop then stops after spending) or stops a run that would have
fit. ``count_guard(model)`` is a ``prepare`` for ``run``/``arun``: when the
reservation is at least ``near`` of what is left, it asks the model's
``count_tokens`` (Anthropic's ``/v1/messages/count_tokens``; free, no
inference) for the exact input, records a ``token_count`` record, and stops
the run with ``cost_budget`` before a call whose exact cost would pass the
cap. Models that cannot count (OpenAI-compatible) answer None and the
estimate stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..budget import cost_micros
from ..events import ModelRequest, Usage
from ..loop import State
from .errors import ProviderError

__all__ = ["count_guard"]

Record = Callable[[str, Any], None]


def count_guard(
    model: object,
    *,
    near: float = 0.5,
    then: Callable[[State, Record], str | None] | None = None,
) -> Callable[[State, Record], str | None]:
    """A ``prepare`` that counts exactly near the cap. ``then`` runs first (another synchronous prepare)."""
    counter = getattr(model, "count_tokens", None)

    def prepare(state: State, record: Record) -> str | None:
        if then is not None:
            reason = then(state, record)
            if reason is not None:
                return reason
        cfg = state.config
        cap = cfg.budget.max_usd_micros
        if cap is None or counter is None:
            return None
        left = cap - state.spent_micros
        if state.reserved_micros < near * left:
            return None  # far from the cap: the estimate will do
        step = state.steps + 1
        estimated = (state.chars + state.tool_chars) // 4
        try:
            counted = counter(ModelRequest(state.messages, cfg.tools, cfg.max_output_tokens))
        except ProviderError as exc:
            record("token_count", {"step": step, "estimated": estimated, "error": str(exc)})
            return None  # counting is advice: the reservation still holds
        if not isinstance(counted, int):
            return None
        need = cost_micros(Usage(input_tokens=counted, output_tokens=cfg.max_output_tokens), cfg.price)
        record("token_count", {"step": step, "estimated": estimated, "counted": counted, "needed_micros": need, "left_micros": left})
        if need > left:
            state.error = (
                f"the next call needs {need} micro-USD by an exact count of {counted} input tokens "
                f"(estimated {estimated}); {left} are left"
            )
            return "cost_budget"
        return None

    return prepare
