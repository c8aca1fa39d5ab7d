"""Scripted models for tests and the demo.

``ScriptedModel`` (the ``scripted`` provider's, ``providers/scripted.py``)
answers from a list and fails loudly both ways: a call past the end of its
script is an ``UnexpectedModelCall`` (the run then stops with ``model_error``
naming it), and ``check()`` (or leaving a ``with`` block) raises
``UnconsumedModelSteps`` when steps are left over. ``reply()`` writes a
reply in one line; ``FunctionModel`` answers from a function of the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..events import ModelReply, ModelRequest, ToolCall, Usage
from ..providers.scripted import (
    ScriptedModel,
    ScriptedReply,
    ScriptError,
    UnconsumedModelSteps,
    UnexpectedModelCall,
    load_script,
    parse_replies,
)

__all__ = ["FunctionModel", "ScriptError", "ScriptedModel", "ScriptedReply", "UnconsumedModelSteps", "UnexpectedModelCall", "assert_replays", "load_script", "parse_replies", "reply"]


def reply(
    text: str = "",
    calls: Iterable[tuple[str, Any]] = (),
    *,
    usage: Usage | tuple[int, int] | None = None,
    step: int | None = None,
    model: str | None = None,
    finish_reason: str | None = None,
) -> ModelReply:
    """A ``ModelReply`` in one line: ``reply("ok", [("add", {"a": 1, "b": 2})])``.

    Call ids are ``call_<step>_<i>`` when ``step`` is given, else ``call_<i>``.
    """
    prefix = f"call_{step}_" if step is not None else "call_"
    tcs = tuple(ToolCall(f"{prefix}{i}", name, args) for i, (name, args) in enumerate(calls))
    u = Usage(*usage) if isinstance(usage, tuple) else usage
    return ModelReply(text=text, tool_calls=tcs, usage=u, model=model, finish_reason=finish_reason)


class FunctionModel:
    """A model backed by a function of the request: for retries and branching scripts."""

    def __init__(self, fn: Callable[[ModelRequest], ModelReply], *, name: str = "scripted"):
        self.fn = fn
        self.name = name
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        return self.fn(request)


def assert_replays(path: Any, **kw: Any) -> Any:
    """Replay a committed transcript (``full`` mode by default) and fail with a
    readable diff if the loop's decisions changed. See ``agentloop.replay.assert_replays``;
    the ``agentloop_replay`` pytest fixture wraps it."""
    from ..replay import assert_replays as check

    return check(path, **kw)
