"""Exact input counts near the cap: now made by the loop itself.

The loop reserves each call from an upper bound of its bill (``budget.input_bound``:
the request's UTF-8 bytes plus stated allowances). When that bound does not
fit what is left and the model can count input exactly (Anthropic's
``/v1/messages/count_tokens``, free and without inference: the adapter sets
``counts_tokens``), the loop asks the driver for a count (``loop.CountInput``),
records a ``token_count`` record and reserves from the count (plus 5% and 64
tokens, since the vendor documents the count as an estimate that may differ
slightly), or refuses the call with a line that gives the bound. So the
decision is the loop's, recorded and replayed like any other.

``count_guard(model, then=prepare)`` is kept for callers that passed it as a
``prepare``: it now only runs ``then``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..loop import State

__all__ = ["count_guard"]

Record = Callable[[str, Any], None]


def count_guard(
    model: object,
    *,
    near: float = 0.5,
    then: Callable[[State, Record], str | None] | None = None,
) -> Callable[[State, Record], str | None]:
    """A ``prepare`` that runs ``then`` (counting near the cap is the loop's own, see the module)."""

    def prepare(state: State, record: Record) -> str | None:
        return then(state, record) if then is not None else None

    return prepare
