"""The built-in price table, in micro-dollars per million tokens, and the user's additions.

Figures are the vendors' list prices for standard (non-batch, short-context)
use, as published in 2026 (OpenAI's pricing page; Anthropic's: cache writes
are the 5-minute rate, 1.25x input; cache reads 0.1x input). OpenAI does not
charge for cache writes. Users override or extend them in their settings
(``"prices": {"my-model": {"input": 2000000, "output": 8000000,
"cache_read": 200000, "cache_write": 0}}``, micro-USD per million tokens;
``config.settings.prices_from_settings``, at the edge). A model missing from the table costs the highest
price in it, field by field (see ``budget.PriceTable``): that includes the
newest models, whose prices were not published when this table was written,
until the user adds them.

Names resolve as vendors spell them: ``claude-haiku-4-5-20251001`` finds
``claude-haiku-4-5``, ``gpt-4o-2024-08-06`` finds ``gpt-4o``, OpenRouter's
``openai/gpt-4o-mini`` finds ``gpt-4o-mini``. Claude on the cloud platforms
costs what Anthropic lists: Bedrock's ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``
(a cross-region profile's prefix, the ``anthropic.`` vendor and the ``-v1:0``
version dropped) and Vertex's ``claude-sonnet-4-5@20250929`` find ``claude-sonnet-4-5``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .budget import Price, PriceTable

__all__ = [
    "BUILTIN_MAX_OUTPUT",
    "BUILTIN_PRICES",
    "DEFAULT_MAX_OUTPUT",
    "VendorPriceTable",
    "default_prices",
    "documented_max_output",
]

M = 1_000_000  # one dollar per million tokens, in micro-USD per million tokens

# input, output, cache read, cache write
BUILTIN_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5.5": Price(5 * M, 30 * M, M // 2, 0),
    "gpt-5.4": Price(2_500_000, 15 * M, 250_000, 0),
    "gpt-5.4-mini": Price(750_000, 4_500_000, 75_000, 0),
    "gpt-5.4-nano": Price(200_000, 1_250_000, 20_000, 0),
    "gpt-5.2": Price(1_750_000, 14 * M, 175_000, 0),
    "gpt-5.1": Price(1_250_000, 10 * M, 125_000, 0),
    "gpt-5": Price(1_250_000, 10 * M, 125_000, 0),
    "gpt-5-mini": Price(250_000, 2 * M, 25_000, 0),
    "gpt-5-nano": Price(50_000, 400_000, 5_000, 0),
    # the coding models served only by the Responses API (providers/openai_responses.py)
    "gpt-5.1-codex-max": Price(1_250_000, 10 * M, 125_000, 0),
    "gpt-5.1-codex-mini": Price(250_000, 2 * M, 25_000, 0),
    "gpt-5.1-codex": Price(1_250_000, 10 * M, 125_000, 0),
    "gpt-5-codex": Price(1_250_000, 10 * M, 125_000, 0),
    "codex-mini": Price(1_500_000, 6 * M, 375_000, 0),
    "gpt-4.1": Price(2 * M, 8 * M, 500_000, 0),
    "gpt-4.1-mini": Price(400_000, 1_600_000, 100_000, 0),
    "gpt-4.1-nano": Price(100_000, 400_000, 25_000, 0),
    "gpt-4o": Price(2_500_000, 10 * M, 1_250_000, 0),
    "gpt-4o-mini": Price(150_000, 600_000, 75_000, 0),
    "o3": Price(2 * M, 8 * M, 500_000, 0),
    "o3-mini": Price(1_100_000, 4_400_000, 550_000, 0),
    "o4-mini": Price(1_100_000, 4_400_000, 275_000, 0),
    "o1": Price(15 * M, 60 * M, 7_500_000, 0),
    # Anthropic
    "claude-opus-4-6": Price(5 * M, 25 * M, M // 2, 6_250_000),
    "claude-opus-4-5": Price(5 * M, 25 * M, M // 2, 6_250_000),
    "claude-opus-4-1": Price(15 * M, 75 * M, 1_500_000, 18_750_000),
    "claude-opus-4": Price(15 * M, 75 * M, 1_500_000, 18_750_000),
    "claude-sonnet-4-6": Price(3 * M, 15 * M, 300_000, 3_750_000),
    "claude-sonnet-4-5": Price(3 * M, 15 * M, 300_000, 3_750_000),
    "claude-sonnet-4": Price(3 * M, 15 * M, 300_000, 3_750_000),
    "claude-3-7-sonnet": Price(3 * M, 15 * M, 300_000, 3_750_000),
    "claude-haiku-4-5": Price(M, 5 * M, 100_000, 1_250_000),
    "claude-3-5-haiku": Price(800_000, 4 * M, 80_000, M),
    # the built-in scripted model: priced so that demos and tests spend something
    "scripted": Price(M, 2 * M, 100_000, 1_250_000),
}

_PREFIX = re.compile(r"^(?:[a-z][a-z0-9_.\-]*/|(?:(?:us|eu|apac|jp|au|ca|global|us-gov)\.)?anthropic\.)")
"""A router's or gateway's spelling (OpenRouter's ``openai/gpt-4o``, any provider's ``price_prefix``), or Bedrock's
(``us.anthropic.``): the name after it is looked up; a name the table still does not know costs the highest price."""
_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|:[\w.\-]+|-v\d+|@[\w.\-]+)$")


def family_name(model: str) -> str:
    """``model`` without a router's or gateway's prefix or Bedrock's (``_PREFIX``): ``us.anthropic.claude-x`` and
    ``openai/gpt-4o`` name ``claude-x`` and ``gpt-4o``. The one reading of those spellings (prices, windows)."""
    return _PREFIX.sub("", model)


class VendorPriceTable(PriceTable):
    """A price table that finds a model under the names vendors give it."""

    def key(self, model: str) -> str | None:
        """The table's name for ``model``, or None."""
        if model in self._prices:
            return model
        name = family_name(model)
        while True:
            if name in self._prices:
                return name
            shorter = _SUFFIX.sub("", name)
            if shorter == name:
                return None
            name = shorter

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.key(model) is not None

    def resolve(self, model: str) -> Price:
        k = self.key(model)
        return self._prices[k] if k is not None else self.highest()

    def merged(self, other: Mapping[str, Price]) -> VendorPriceTable:
        return VendorPriceTable({**self._prices, **other})


def default_prices() -> PriceTable:
    """The built-in table (a ``VendorPriceTable``: vendor spellings resolve)."""
    return VendorPriceTable(BUILTIN_PRICES)


# The most output tokens one reply may have, as each vendor's model page documents it.
# Anthropic: each model's page, "Max output" (platform.claude.com/docs/en/models/opus-4-6/overview:
# 128K; .../sonnet-4-6/overview: 128K; .../opus-4-5/overview: 64K), and the models overview's
# table of legacy models (platform.claude.com/docs/en/about-claude/models/overview: Sonnet 4.5,
# Haiku 4.5, Sonnet 4 and Sonnet 3.7 64K; Opus 4.1 and Opus 4 32K; Haiku 3.5 8K).
# OpenAI: platform.openai.com/docs/models/<model>, "Max output tokens" (the GPT-5 family
# 128,000; GPT-4.1 32,768; GPT-4o 16,384; o1, o3, o3-mini, o4-mini 100,000).
# The terminal agent asks for this much by default (agent/model_options.py); the loop
# reserves it under the spend cap like any other max_tokens.
BUILTIN_MAX_OUTPUT: dict[str, int] = {
    # OpenAI
    "gpt-5.5": 128_000,
    "gpt-5.4": 128_000,
    "gpt-5.4-mini": 128_000,
    "gpt-5.4-nano": 128_000,
    "gpt-5.2": 128_000,
    "gpt-5.1": 128_000,
    "gpt-5": 128_000,
    "gpt-5-mini": 128_000,
    "gpt-5-nano": 128_000,
    "gpt-5.1-codex-max": 128_000,
    "gpt-5.1-codex-mini": 128_000,
    "gpt-5.1-codex": 128_000,
    "gpt-5-codex": 128_000,
    "codex-mini": 100_000,
    "gpt-4.1": 32_768,
    "gpt-4.1-mini": 32_768,
    "gpt-4.1-nano": 32_768,
    "gpt-4o": 16_384,
    "gpt-4o-mini": 16_384,
    "o3": 100_000,
    "o3-mini": 100_000,
    "o4-mini": 100_000,
    "o1": 100_000,
    # Anthropic
    "claude-opus-4-6": 128_000,
    "claude-opus-4-5": 64_000,
    "claude-opus-4-1": 32_000,
    "claude-opus-4": 32_000,
    "claude-sonnet-4-6": 128_000,
    "claude-sonnet-4-5": 64_000,
    "claude-sonnet-4": 64_000,
    "claude-3-7-sonnet": 64_000,
    "claude-haiku-4-5": 64_000,
    "claude-3-5-haiku": 8_192,
    # the built-in scripted model: what run() has always reserved
    "scripted": 4_096,
}

DEFAULT_MAX_OUTPUT = 4_096
"""A model missing from ``BUILTIN_MAX_OUTPUT`` (a local server's, a name not yet listed) is asked
for this much: small enough that any server accepts it; ``maxOutputTokens`` raises it."""


_MAX_OUTPUT_NAMES = VendorPriceTable({n: Price(0, 0) for n in BUILTIN_MAX_OUTPUT})


def documented_max_output(model: str) -> int | None:
    """The documented maximum output of ``model`` under any vendor spelling, or None when unknown."""
    k = _MAX_OUTPUT_NAMES.key(model)
    return None if k is None else BUILTIN_MAX_OUTPUT[k]


