"""What a driver knows about a model beyond its one method: a frozen ``ModelDescription``.

A model is anything with ``complete(request) -> ModelReply`` (``events.Model``),
or, as the first version of this package had it, a plain callable
``(messages, manifest) -> ModelReply`` (``as_model`` wraps it). What else the
drivers and the agent need to know (the name it is priced and recorded by,
the models it falls back to, how many cuts at max tokens its turns may be
continued by, what an image may cost with it, whether it counts input tokens
exactly) is declared once, by the model, as its ``description`` attribute,
and read here, in ``describe``, and nowhere else. A model that declares none
is described by its ``name`` alone (or its type's name) with the defaults.

The fallback chain is walked once, here (``ModelDescription.chain``); the
dearest price over a chain is ``budget.dearest``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .budget import IMAGE_TOKENS, Price
from .events import Message, ModelReply, ModelRequest

__all__ = ["CallableModel", "ModelDescription", "as_model", "describe"]

MAX_CHAIN = 8
"""At most this many models in a chain (the model and its fallbacks): a chain is declared, never grown at run time."""


@dataclass(frozen=True)
class ModelDescription:
    """One model, as the drivers see it: declared once (``describe`` reads it)."""

    name: str
    """The name it is priced and recorded by (the provider's model name, without the vendor)."""
    vendor: str | None = None
    """``anthropic``, ``openai``, ``scripted``...; None for a model of the caller's own."""
    fallbacks: tuple[ModelDescription, ...] = ()
    """The models tried after this one fails for good, in order."""
    max_continuations: int = 0
    """How many cuts at max tokens a turn may be continued by (the loop asks the model to go on)."""
    max_image_tokens: int = IMAGE_TOKENS
    """At most how many tokens one image costs with this model."""
    counts_tokens: bool = False
    """The model has ``count_tokens(request) -> int | None`` that counts input exactly."""
    price: Price | None = None
    """The price the model was opened with (a provider's, for its own retries); the run's table prices the run."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a model description needs a name")
        if len(self.fallbacks) >= MAX_CHAIN:
            raise ValueError(f"a model falls back to at most {MAX_CHAIN - 1} others")

    @property
    def chain(self) -> tuple[ModelDescription, ...]:
        """This model, then its fallbacks in the order they are tried."""
        return (self, *self.fallbacks)

    @property
    def chain_image_tokens(self) -> int:
        """The most an image may cost with any model of the chain (any of them may answer)."""
        return max(max(1, m.max_image_tokens) for m in self.chain)

    @property
    def can_count(self) -> bool:
        """Counts input exactly and has no fallback (whose count would differ)."""
        return self.counts_tokens and not self.fallbacks

    def then(self, *fallbacks: ModelDescription) -> ModelDescription:
        """This description with ``fallbacks`` (each flattened: a fallback's own chain follows it)."""
        flat: list[ModelDescription] = []
        for f in fallbacks:
            flat += [replace(m, fallbacks=()) for m in f.chain]
        return replace(self, fallbacks=tuple(flat[: MAX_CHAIN - 1]))


def describe(model: object, default_name: str | None = None) -> ModelDescription:
    """The model's declared description; else one from its ``name`` (else ``default_name``, else its
    type's name), with the defaults. The one place a model is asked what it is."""
    d = getattr(model, "description", None)
    if isinstance(d, ModelDescription):
        return d
    name = getattr(model, "name", None)
    return ModelDescription(name if isinstance(name, str) and name else default_name or type(model).__name__)


Manifest = list[dict[str, Any]]
PlainModel = Callable[[Sequence[Message], Manifest], ModelReply]
"""The first version's model: a callable of the messages and the tools' manifest."""


class CallableModel:
    """A plain callable ``(messages, manifest) -> ModelReply`` as a ``Model``.

    ``messages`` is the loop's list (read-only by contract); ``manifest`` is the
    tools the model may call, each ``{"name", "description", "parameters"}``.
    """

    def __init__(self, fn: PlainModel):
        self.fn = fn
        name = getattr(fn, "__name__", None)
        self.name = name if isinstance(name, str) and name and name != "<lambda>" else type(fn).__name__
        self.__name__ = self.name

    def complete(self, request: ModelRequest) -> ModelReply:
        return self.fn(request.messages, [t.to_json() for t in request.tools])


def as_model(model: Any) -> Any:
    """``model`` as a driver calls it: a ``Model`` or ``AsyncModel`` as it is; a plain callable wrapped."""
    if hasattr(model, "complete") or hasattr(model, "acomplete") or not callable(model):
        return model
    return CallableModel(model)
