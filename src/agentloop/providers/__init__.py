"""The providers of models, in one registry: ``open_spec("openai:gpt-4o-mini")``,
``open_spec("anthropic:claude-...")``, ``open_spec("scripted:replies.json")``.

Each provider is declared once, by the ``ProviderRecord`` its own module holds
(``record.py`` says what a record is), and registered by one line below. Code
outside this package asks the registry (``record_for``, ``records``) and never
names a vendor. HTTP lives only in this package. Each adapter is the only place
that knows its vendor's wire format (``openai_compat.py``, ``anthropic.py``);
``base.py`` holds the stream pump and the retry and fallback policy they share;
``opening.py`` how a record's model opens (key, base URL, adapter); ``sse.py``
the event-stream decoder. Keys are scrubbed from every message this package produces.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import anthropic, bedrock, openai_compat, scripted, vertex
from .errors import ProviderConfigError, ProviderError, scrub
from .opening import is_local, open_record
from .record import ModelAlias, ModelFamily, OpenArgs, ProviderRecord

if TYPE_CHECKING:
    import httpx

    from .anthropic import AnthropicModel
    from .base import HTTPModel, RetryPolicy
    from .openai_compat import OpenAIModel

__all__ = [
    "PROVIDERS",
    "AnthropicModel",
    "HTTPModel",
    "ModelAlias",
    "ModelFamily",
    "OpenAIModel",
    "OpenArgs",
    "ProviderConfigError",
    "ProviderError",
    "ProviderRecord",
    "RetryPolicy",
    "bare_provider",
    "default_fallback",
    "is_local",
    "open_http",
    "open_model",
    "open_spec",
    "parse_spec",
    "record_for",
    "records",
    "scrub",
]

# --- the registry: one line per provider --------------------------------------

PROVIDERS: Mapping[str, ProviderRecord] = {r.name: r for r in (
    openai_compat.RECORD,
    anthropic.RECORD,
    scripted.RECORD,
    bedrock.RECORD,
    vertex.RECORD,
)}
"""Each provider a spec may name, by its record. The only place a provider is registered."""

# ------------------------------------------------------------------------------

_LAZY = {"AnthropicModel": "anthropic", "HTTPModel": "base", "RetryPolicy": "base", "Target": "base", "OpenAIModel": "openai_compat"}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


def records() -> tuple[ProviderRecord, ...]:
    """Every registered provider's record, in the registry's order."""
    return tuple(PROVIDERS.values())


def record_for(name_or_spec: str, *, where: str = "") -> ProviderRecord:
    """The record of a provider (``openai``) or of a spec's provider (``openai:gpt-5``).

    Raises:
        ProviderConfigError: no provider of that name, naming the known ones (never another's record).
    """
    name = name_or_spec.partition(":")[0].strip().lower()
    record = PROVIDERS.get(name)
    if record is None:
        at = f" in {where}" if where else ""
        raise ProviderConfigError(f"unknown provider {name!r}{at}: known providers are {', '.join(PROVIDERS)}")
    return record


def _known() -> str:
    return ", ".join(f"{r.name}:<model>" if r.names_models else f"{r.name}:FILE" for r in PROVIDERS.values())


def parse_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini" -> ("openai", "gpt-4o-mini")``.

    Raises:
        ProviderConfigError: no provider, or one not registered (naming the known ones).
    """
    vendor, sep, name = spec.partition(":")
    if not sep:
        guess = bare_provider(spec) or next((r.name for r in PROVIDERS.values() if r.names_models), "")
        raise ProviderConfigError(f"--model {spec!r} needs a provider: say {guess}:{spec} ({_known()})")
    vendor = vendor.strip().lower()
    if vendor not in PROVIDERS:
        raise ProviderConfigError(f"unknown provider {vendor!r} in --model {spec!r}: use {_known()}")
    if not name.strip():
        raise ProviderConfigError(f"--model {spec!r} names no model after {vendor}:")
    return vendor, name.strip()


def bare_provider(name: str) -> str | None:
    """The provider a bare model name belongs to (``ProviderRecord.bare_prefixes``: ``claude-...``), or None."""
    low = name.strip().lower()
    return next((r.name for r in PROVIDERS.values() if r.bare_prefixes and low.startswith(r.bare_prefixes)), None)


def default_fallback(spec: str) -> str | None:
    """The fallback ``spec`` gets on overload when none is given (its record's ``overload_fallbacks``), else None.
    The longest matching name wins (``claude-opus-4-6-20260101`` is ``claude-opus-4-6``)."""
    vendor, _, name = spec.partition(":")
    record = PROVIDERS.get(vendor.strip().lower())
    if record is None:
        return None
    name = name.strip()
    best: tuple[str, str] | None = None
    for model, fb in record.overload_fallbacks:
        if (name == model or name.startswith(model + "-")) and (best is None or len(model) > len(best[0])):
            best = (model, fb)
    return f"{record.name}:{best[1]}" if best else None


def open_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    fallback: str | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
    record_raw: bool = False,
    **options: Any,
) -> HTTPModel:
    """A model for ``spec`` (``<provider>:<name>`` of a provider over HTTP), with an optional fallback.

    Options: ``max_attempts``, ``backoff_base``, ``backoff_max``,
    ``max_retry_after``, ``stall_timeout``, ``call_deadline``, ``connect_timeout`` (the retry
    policy; ``sleep``/``asleep``/``rand`` replace its clock and jitter in tests),
    ``on_notice`` (called with each retry and fallback notice), ``extra_headers``,
    ``temperature``, ``thinking_budget`` (extended thinking's ``budget_tokens``),
    ``reasoning_effort`` (reasoning models' effort), ``max_continuations`` (turns cut at
    max tokens that the loop continues; default 2), ``fallback_on`` (the kinds of failure that
    pass to the fallback, e.g. ``{"overloaded"}``; default any), the provider's own (its
    record's ``options``: ``cache``, ``max_tokens_field``...), ``prices`` (the run's
    ``PriceTable``, default the built-in one: a fallback dearer than the primary is given
    fewer output tokens, so that it costs no more than the call's reservation).

    Raises:
        ProviderConfigError: bad spec, an unknown provider, no key, or an unknown option.
    """
    vendor, name = parse_spec(spec)
    fb: tuple[ProviderRecord, str] | None = None
    if fallback:
        fvendor, fname = parse_spec(fallback)
        fb = (PROVIDERS[fvendor], fname)
    return open_record(PROVIDERS[vendor], name, fallback=fb, base_url=base_url, api_key=api_key, api_key_env=api_key_env,
                       env=env, transport=transport, record_raw=record_raw, **options)


def open_http(record: ProviderRecord, spec: str, a: OpenArgs) -> Any:
    """How a provider over HTTP opens (a record with no ``factory``): ``open_model``, with the default
    fallback for overload when asked (said through ``on_notice``)."""
    fallback, options = a.fallback, dict(a.options)
    if fallback is None and a.default_fallback and (fallback := default_fallback(spec)) is not None:
        options["fallback_on"] = {"overloaded"}
        if a.on_notice is not None:
            a.on_notice(f"{spec} falls back to {fallback} when overloaded (529), by default; --fallback-model to choose another")
    return open_model(spec, base_url=a.base_url, api_key_env=a.api_key_env, fallback=fallback, env=a.env,
                      transport=a.transport, on_notice=a.on_notice, prices=a.prices, **options)


def open_spec(spec: str, args: OpenArgs | None = None) -> Any:
    """A model for ``spec`` (``provider:name``), opened by its provider's factory (``PROVIDERS``).

    Raises:
        ProviderConfigError: no or an unknown provider, or the provider cannot open it (one line).
    """
    vendor = spec.partition(":")[0].strip().lower()
    record = PROVIDERS.get(vendor)
    if record is None:
        parse_spec(spec)  # says what is wrong
        raise ProviderConfigError(f"unknown provider in {spec!r}")
    return (record.factory or open_http)(record, spec, args or OpenArgs())
