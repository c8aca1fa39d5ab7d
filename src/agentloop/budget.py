"""Budgets, prices and money.

Rules:

1. Money is an integer count of micro-dollars (1 USD = 1,000,000). No float
   ever holds an amount: ``usd("0.05")`` parses a decimal string exactly.
2. A budget is required. ``Budget.unlimited()`` is the honest way out, and the
   transcript says when it was used.
3. Reserve, then settle. Before a model call the loop reserves an estimate; if
   it does not fit, the call is not made. The real cost settles it afterwards.
4. A model missing from the price table costs the highest price in the table,
   field by field, never zero.
5. Costs round up to the next micro-dollar, so rounding never lets a run spend
   past its cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from .events import Usage

__all__ = [
    "Budget",
    "Ledger",
    "LocalLedger",
    "Price",
    "PriceTable",
    "cost_micros",
    "estimate_tokens",
    "over_cap",
    "tokens_for_chars",
    "usd",
]

MICROS_PER_USD = 1_000_000


def usd(amount: str | int | Decimal) -> int:
    """Micro-dollars from a decimal amount of dollars: ``usd("0.05") == 50_000``.

    Raises:
        ValueError: the amount is a float, negative, not a number, or finer
            than one micro-dollar.
    """
    if isinstance(amount, float):
        raise ValueError("pass dollars as a string or Decimal, never a float")
    try:
        d = Decimal(amount)
    except (InvalidOperation, TypeError):
        raise ValueError(f"not an amount of dollars: {amount!r}") from None
    if not d.is_finite() or d < 0:
        raise ValueError(f"not a non-negative amount of dollars: {amount!r}")
    micros = d * MICROS_PER_USD
    if micros != micros.to_integral_value():
        raise ValueError(f"{amount!r} is finer than one micro-dollar")
    return int(micros)


def format_usd(micros: int) -> str:
    """``1234567 -> "$1.234567"``: for people, never parsed back."""
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(micros), MICROS_PER_USD)
    return f"{sign}${whole}.{frac:06d}"


def tokens_for_chars(chars: int) -> int:
    """The heuristic when a model reports no usage: four characters a token."""
    return chars // 4


def estimate_tokens(text: str) -> int:
    """``tokens_for_chars(len(text))``."""
    return tokens_for_chars(len(text))


@dataclass(frozen=True)
class Budget:
    """The caps of one run. ``None`` means that dimension is not capped."""

    max_steps: int | None = None
    """Model turns, checked before each turn."""
    max_tokens: int | None = None
    """Tokens in and out, summed over the run."""
    max_usd_micros: int | None = None
    """Spend in micro-dollars."""
    is_unlimited: bool = False
    """True only for ``Budget.unlimited()``; recorded in the transcript."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens", "max_usd_micros"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"Budget.{name} must be a non-negative integer, got {v!r}")
        if not self.is_unlimited and self.max_steps is None and self.max_tokens is None and self.max_usd_micros is None:
            raise ValueError("a Budget needs at least one cap; say Budget.unlimited() if you mean it")

    @classmethod
    def unlimited(cls) -> Budget:
        return cls(is_unlimited=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "max_usd_micros": self.max_usd_micros,
            "unlimited": self.is_unlimited,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Budget:
        if obj.get("unlimited"):
            return cls.unlimited()
        return cls(obj.get("max_steps"), obj.get("max_tokens"), obj.get("max_usd_micros"))


@dataclass(frozen=True)
class Price:
    """Micro-dollars per million tokens."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Price:
        vals = {}
        for k in ("input", "output", "cache_read", "cache_write"):
            v = obj.get(k, 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"price field {k!r} must be a non-negative integer (micro-USD per Mtok), got {v!r}")
            vals[k] = v
        return cls(**vals)


def cost_micros(usage: Usage, price: Price) -> int:
    """The cost of ``usage`` at ``price``, rounded up to a whole micro-dollar."""
    num = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return -(-num // 1_000_000)


def estimate_micros(input_tokens: int, output_tokens: int, price: Price) -> int:
    """``cost_micros(Usage(input_tokens, output_tokens), price)`` without building the Usage (once a turn)."""
    return -(-(input_tokens * price.input + output_tokens * price.output) // 1_000_000)


class PriceTable:
    """Prices per model name. Unknown models cost the highest known price."""

    def __init__(self, prices: Mapping[str, Price]):
        self._prices = dict(prices)

    def __contains__(self, model: object) -> bool:
        return model in self._prices

    def items(self) -> list[tuple[str, Price]]:
        return sorted(self._prices.items())

    def highest(self) -> Price:
        if not self._prices:
            raise ValueError("the price table is empty: no price can be resolved")
        ps = self._prices.values()
        return Price(
            max(p.input for p in ps),
            max(p.output for p in ps),
            max(p.cache_read for p in ps),
            max(p.cache_write for p in ps),
        )

    def resolve(self, model: str) -> Price:
        """The model's price, or the table's highest when it is missing."""
        p = self._prices.get(model)
        return p if p is not None else self.highest()

    def merged(self, other: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self._prices, **other})

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PriceTable:
        if not isinstance(obj, Mapping):
            raise ValueError("a price table is a JSON object of model name to prices")
        return cls({str(k): Price.from_json(v) for k, v in obj.items()})


class Ledger(Protocol):
    """A budget shared by many runs (a batch). Reserve before, settle after."""

    def reserve(self, amount_micros: int, tokens: int) -> bool: ...

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None: ...


def over_cap(used: int, reserved: int, amount: int, cap: int | None) -> bool:
    """True when reserving ``amount`` on top of what is used and held would pass ``cap``."""
    return cap is not None and used + reserved + amount > cap


class LocalLedger:
    """A ledger for one process (thread-safe): the reference that shared ledgers must match."""

    def __init__(self, max_usd_micros: int | None, max_tokens: int | None = None):
        import threading

        self._lock = threading.Lock()
        self.max_usd_micros = max_usd_micros
        self.max_tokens = max_tokens
        self.reserved = 0
        self.spent = 0
        self.reserved_tokens = 0
        self.used_tokens = 0
        self.refusals = 0

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        with self._lock:
            return self._reserve(amount_micros, tokens)

    def _reserve(self, amount_micros: int, tokens: int) -> bool:
        if over_cap(self.spent, self.reserved, amount_micros, self.max_usd_micros) or over_cap(
            self.used_tokens, self.reserved_tokens, tokens, self.max_tokens
        ):
            self.refusals += 1
            return False
        self.reserved += amount_micros
        self.reserved_tokens += tokens
        return True

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        with self._lock:
            self.reserved -= reserved_micros
            self.spent += actual_micros
            self.reserved_tokens -= reserved_tokens
            self.used_tokens += actual_tokens
