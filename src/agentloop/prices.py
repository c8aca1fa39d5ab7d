"""The built-in price table, in micro-dollars per million tokens.

Figures are the vendors' list prices for standard (non-batch) use. Users
override or extend them in their config (``"prices"``); a model missing from
the table costs the highest price in it (see ``budget.PriceTable``).
"""

from __future__ import annotations

from .budget import Price, PriceTable

__all__ = ["BUILTIN_PRICES", "default_prices"]

# input, output, cache read, cache write: micro-USD per 1,000,000 tokens.
BUILTIN_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(2_500_000, 10_000_000, 1_250_000, 0),
    "gpt-4o-mini": Price(150_000, 600_000, 75_000, 0),
    "gpt-4.1": Price(2_000_000, 8_000_000, 500_000, 0),
    "gpt-4.1-mini": Price(400_000, 1_600_000, 100_000, 0),
    "gpt-4.1-nano": Price(100_000, 400_000, 25_000, 0),
    "o3": Price(2_000_000, 8_000_000, 500_000, 0),
    "o4-mini": Price(1_100_000, 4_400_000, 275_000, 0),
    "gpt-5": Price(1_250_000, 10_000_000, 125_000, 0),
    "gpt-5-mini": Price(250_000, 2_000_000, 25_000, 0),
    # Anthropic
    "claude-opus-4-1": Price(15_000_000, 75_000_000, 1_500_000, 18_750_000),
    "claude-opus-4-5": Price(5_000_000, 25_000_000, 500_000, 6_250_000),
    "claude-sonnet-4-5": Price(3_000_000, 15_000_000, 300_000, 3_750_000),
    "claude-sonnet-4": Price(3_000_000, 15_000_000, 300_000, 3_750_000),
    "claude-haiku-4-5": Price(1_000_000, 5_000_000, 100_000, 1_250_000),
    "claude-3-5-haiku-latest": Price(800_000, 4_000_000, 80_000, 1_000_000),
    # the built-in scripted model: priced so that demos and tests spend something
    "scripted": Price(1_000_000, 2_000_000, 100_000, 1_250_000),
}


def default_prices() -> PriceTable:
    return PriceTable(BUILTIN_PRICES)
