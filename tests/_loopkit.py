"""What the tests that drive the loop by hand share: a small config and a run waiting for its model."""

from __future__ import annotations

from typing import Any

from agentloop.budget import Budget, Price
from agentloop.events import ToolSpec
from agentloop.loop import Append, LoopConfig, Reserved, State, start, step

ECHO = ToolSpec("echo", "Echo the text.", {"type": "object", "properties": {"text": {"type": "string"}}}, True)


def cfg(**budget: Any) -> LoopConfig:
    """Five steps and $1 unless ``budget`` says otherwise; input $1/M tokens, output $2/M; one tool."""
    b = Budget(**{"max_steps": 5, "max_usd_micros": 1_000_000, **budget})
    return LoopConfig(model="m", budget=b, price=Price(1_000_000, 2_000_000), tools=(ECHO,), manifest=({"name": "echo"},))


def kinds(out: list[Any]) -> list[str]:
    """Each outbound request by its record kind (an ``Append``) or its type's name."""
    return [o.kind if isinstance(o, Append) else type(o).__name__ for o in out]


def to_call(c: LoopConfig) -> State:
    """A run started and its first reservation granted: the loop waits for the model (where ``prepare`` runs)."""
    state, out = start(c, [{"role": "user", "content": "hi"}])
    assert kinds(out) == ["run_start", "Reserve"]
    state, out = step(state, Reserved(True))
    assert kinds(out) == ["CallModel"]
    return state
