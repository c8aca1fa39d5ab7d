"""Scripted models for tests and the demo.

``ScriptedModel`` answers from a list and fails loudly both ways: a call past
the end of its script is an ``UnexpectedModelCall`` (the run then stops with
``model_error`` naming it), and ``check()`` (or leaving a ``with`` block)
raises ``UnconsumedModelSteps`` when steps are left over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union

from ..events import ModelReply, ModelRequest, ToolCall, Usage
from .script import ScriptedReply, ScriptError, load_script, parse_replies

__all__ = ["FunctionModel", "ScriptError", "ScriptedModel", "ScriptedReply", "UnconsumedModelSteps", "UnexpectedModelCall", "assert_replays", "load_script", "parse_replies", "reply"]


class UnexpectedModelCall(AssertionError):
    """The model was called after its script ran out."""


class UnconsumedModelSteps(AssertionError):
    """The run ended with steps of the script never used."""


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


Step = Union[ModelReply, BaseException, Callable[[ModelRequest], ModelReply]]


class ScriptedModel:
    """Replies from a script, one step a call. A step may be a reply, an
    exception to raise, or a function of the request.

    ``stream="words"`` sends the text to ``request.on_text`` word by word (as a
    provider streams), ``"whole"`` in one piece. ``delays_ms`` waits before the
    reply of the same index (a provider's latency). ``from_script`` makes one
    from the script format of ``testing.script`` (``scripted:FILE``, batch
    tasks).
    """

    def __init__(
        self, steps: Sequence[Step], *, name: str = "scripted", stream: str = "whole", delays_ms: Sequence[int] = (),
    ):
        self.steps = list(steps)
        self.name = name
        self.stream = stream
        self.delays_ms = list(delays_ms)
        self.calls = 0
        self.requests: list[ModelRequest] = []
        self.overrun = False

    @classmethod
    def from_script(cls, script: Sequence[ScriptedReply], *, name: str = "scripted", stream: str = "whole") -> ScriptedModel:
        return cls([s.reply for s in script], name=name, stream=stream, delays_ms=[s.delay_ms for s in script])

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.calls >= len(self.steps):
            self.overrun = True
            raise UnexpectedModelCall(f"the scripted model has {len(self.steps)} replies and was called {self.calls + 1} times")
        s = self.steps[self.calls]
        delay = self.delays_ms[self.calls] if self.calls < len(self.delays_ms) else 0
        self.calls += 1
        self.requests.append(request)
        if delay:
            time.sleep(delay / 1000)
        if isinstance(s, BaseException):
            raise s
        out = s(request) if callable(s) and not isinstance(s, ModelReply) else s
        if request.on_text is not None and isinstance(out, ModelReply) and out.text:
            if self.stream == "words":
                words = out.text.split(" ")
                for j, w in enumerate(words):
                    request.on_text(w if j == len(words) - 1 else w + " ")
            else:
                request.on_text(out.text)
        return out

    @property
    def remaining(self) -> int:
        return len(self.steps) - self.calls

    def check(self) -> None:
        """Raise if the script was overrun or not used up."""
        if self.overrun:
            raise UnexpectedModelCall(f"the scripted model was called past the end of its {len(self.steps)} steps")
        if self.remaining:
            raise UnconsumedModelSteps(f"{self.remaining} of {len(self.steps)} scripted steps were never used")

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.check()


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
