"""The values that flow through agentloop.

Rules:

1. Everything here is a frozen dataclass or a plain JSON value. The loop never
   mutates what it was given, so a driver can keep a reference to any event
   and trust it later.
2. Messages are plain JSON objects in one neutral shape (see ``Message``),
   never a vendor's wire format. Only ``providers/`` converts them.
3. The model's mistakes are data: a bad tool call ends as a ``ToolResult``
   with ``ok=False``. Exceptions are for the caller's mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar, Union, cast, runtime_checkable

_T = TypeVar("_T")

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]

Message = dict[str, Any]
"""A message in the neutral shape.

``{"role": "system" | "user" | "assistant" | "tool", "content": str}``; an
assistant message may carry ``"tool_calls": [{"id", "name", "arguments"}]``;
a tool message carries ``"tool_call_id"``, ``"name"`` and ``"ok"``. An assistant
message may also carry ``"reasoning"``: the vendor's reasoning blocks as received
(Anthropic's ``thinking`` / ``redacted_thinking`` blocks with their signatures),
sent back unchanged because the API checks them.
"""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call that the model asked for."""

    id: str
    name: str
    arguments: Any
    """Usually a JSON object; anything else is refused by validation."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Usage:
        get = obj.get
        return _make_usage(int(get("input_tokens", 0)), int(get("output_tokens", 0)), int(get("cache_read_tokens", 0)), int(get("cache_write_tokens", 0)))


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What a model returns for one turn."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    """None when the model reported no usage: the loop then estimates len//4."""
    model: str | None = None
    """The model that actually answered (a fallback may differ from the one asked)."""
    finish_reason: str | None = None
    """The provider's own reason, e.g. ``"max_tokens"``; kept for people."""
    raw: Any = None
    """The provider's response as received, kept only when raw recording is on."""
    reasoning: tuple[dict[str, Any], ...] = ()
    """The vendor's reasoning blocks, byte for byte as received (Anthropic's ``thinking`` and
    ``redacted_thinking``, signatures included): recorded, and sent back on the next turns."""
    response_id: str | None = field(default=None, compare=False)
    """The provider's id of this response (``chatcmpl-...``, ``msg_...``), for tracing; not recorded,
    so a replayed reply has none."""

    def to_json(self, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """``tool_calls``: the calls' JSON as recorded (redacted), in place of their own."""
        out: dict[str, Any] = {
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls] if tool_calls is None else tool_calls,
            "usage": None if self.usage is None else self.usage.to_json(),
        }
        if self.model is not None:
            out["model"] = self.model
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.reasoning:
            out["reasoning"] = [dict(b) for b in self.reasoning]
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ModelReply:
        usage = obj.get("usage")
        calls = tuple([_make_call(str(c["id"]), str(c["name"]), c.get("arguments")) for c in obj.get("tool_calls", ())])
        r = obj.get("reasoning")
        reasoning = tuple(dict(b) for b in r if isinstance(b, Mapping)) if isinstance(r, list) else ()
        return _make_reply(
            str(obj.get("text", "")), calls, None if usage is None else Usage.from_json(usage), obj.get("model"), obj.get("finish_reason"), None,
            reasoning,
            None,
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. ``ok=False`` results are data, not crashes."""

    call_id: str
    name: str
    ok: bool
    content: Any = None
    """The JSON value returned by the tool (``ok=True``)."""
    error: str | None = None
    """What the model is told when ``ok=False``: written by the runtime."""
    detail: dict[str, Any] | None = None
    """Kept for people, never shown to the model (exception type and text)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"call_id": self.call_id, "name": self.name, "ok": self.ok}
        if self.ok:
            out["content"] = self.content
        else:
            out["error"] = self.error
            if self.detail is not None:
                out["detail"] = self.detail
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ToolResult:
        get = obj.get
        return _make_result(str(obj["call_id"]), str(obj["name"]), bool(obj["ok"]), get("content"), get("error"), get("detail"))


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is shown of a tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to a model: the messages it sees and the tools it may use."""

    messages: Sequence[Message]
    """Read-only by contract: the loop's own list, not a copy."""
    tools: tuple[ToolSpec, ...]
    max_output_tokens: int
    on_text: Callable[[str], None] | None = field(default=None, compare=False)
    """Streaming models call this with each text delta as it arrives."""
    on_restart: Callable[[], None] | None = field(default=None, compare=False)
    """A model that tries the call again (a retry, a fallback) calls this before the new attempt
    streams: the text sent to ``on_text`` so far is not part of the reply."""
    on_thinking: Callable[[dict[str, Any]], None] | None = field(default=None, compare=False)
    """Streaming models that stream thinking call this with each thinking block when it ends (before the
    text that follows it); the reply's ``reasoning`` holds the same blocks."""


def _maker(cls: type[_T]) -> Callable[..., _T]:
    """A constructor of ``cls`` (a frozen, slotted dataclass) that takes every field, in order.

    It sets the slots directly, as ``cls(...)`` would, at half the cost: a
    frozen dataclass's ``__init__`` goes through ``object.__setattr__`` once a
    field, and replay builds several of these a step from their JSON. The
    source is generated, as dataclasses generates ``__init__``;
    ``tests/test_loop.py`` holds ``_maker(cls)(*values) == cls(*values)``.
    """
    names = [f.name for f in fields(cast(Any, cls))]
    sets = "".join(f"    _set_{n}(o, {n})\n" for n in names)
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, **{f"_set_{n}": getattr(cls, n).__set__ for n in names}}
    exec(f"def make({', '.join(names)}):\n    o = _new(_cls)\n{sets}    return o\n", scope)
    return cast(Callable[..., _T], scope["make"])


_make_call = _maker(ToolCall)
_make_usage = _maker(Usage)
_make_reply = _maker(ModelReply)
_make_result = _maker(ToolResult)


@runtime_checkable
class Model(Protocol):
    """A model is anything with this one method."""

    def complete(self, request: ModelRequest) -> ModelReply: ...


@runtime_checkable
class AsyncModel(Protocol):
    async def acomplete(self, request: ModelRequest) -> ModelReply: ...


# --- what the drivers tell an observer (UI, logs); never part of the transcript ---


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class TextWithdrawn:
    """The model call's text streamed so far is not part of its reply: the call broke off and is
    tried again, and the deltas that follow are the new attempt's, from its start."""


@dataclass(frozen=True, slots=True)
class ThinkingDone:
    """A thinking block of the model call in progress ended (``thinking`` or ``redacted_thinking``, as the
    reply's ``reasoning`` will hold it): shown before the text that follows it."""

    block: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolFinished:
    result: ToolResult


@dataclass(frozen=True, slots=True)
class TurnRecorded:
    step: int
    reply: ModelReply
    spent_micros: int


@dataclass(frozen=True, slots=True)
class Stopped:
    reason: str


Observed = Union[TextDelta, TextWithdrawn, ThinkingDone, ToolStarted, ToolFinished, TurnRecorded, Stopped]
Observer = Callable[[Observed], None]


class ReplayedInterrupt(KeyboardInterrupt):
    """The recorded interrupt raised again by replay, saying whether it came while the model call was made (here,
    not in ``replay.py``: mypyc compiles that module, and a compiled class cannot inherit from a builtin exception)."""

    def __init__(self, in_call: bool):
        super().__init__()
        self.in_call = in_call
