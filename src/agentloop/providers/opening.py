"""Opening a model over HTTP from its provider's record: the key, the base URL, the adapter.

Rules:

1. The record is given (``providers.open_model`` finds it in the registry; this
   module knows no registry, so no provider's module depends on it).
2. The key: the ``api_key`` argument, else the variable ``api_key_env`` names,
   else the record's ``key_env``; none and no base URL: the record's ``no_key``
   message. A server of the user's own (a base URL) may need no key.
3. The adapter is the record's, or the one its model family's wire format names.
   What the model is sent (the output-token field) follows its family
   (``ProviderRecord.family``) unless an option says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..budget import PriceTable
from .errors import ProviderConfigError
from .record import ProviderRecord

if TYPE_CHECKING:
    import httpx

    from .base import HTTPModel, RetryPolicy, Target

__all__ = ["is_local", "open_record"]

_POLICY_OPTIONS = {"max_attempts", "backoff_base", "backoff_max", "max_retry_after", "stall_timeout", "call_deadline", "connect_timeout",
                   "sleep", "asleep", "rand"}
_MODEL_OPTIONS = {"on_notice", "extra_headers", "temperature", "thinking_budget", "reasoning_effort"}


def is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.endswith(".local")


def _key(record: ProviderRecord, base_url: str | None, api_key: str | None, api_key_env: str | None, env: Mapping[str, str]) -> str | None:
    if api_key:
        return api_key
    if api_key_env:
        k = env.get(api_key_env)
        if k:
            return k
        if base_url is None:
            raise ProviderConfigError(f"the config names {api_key_env} for the {record.name} key, but {api_key_env} is not set: export {api_key_env}=...")
    found = record.first_set(record.key_env, env)
    if found:
        return found[1]
    if base_url is not None:
        return None  # a server of the user's own (Ollama, vLLM, llama.cpp, LM Studio) needs no key
    raise ProviderConfigError(record.no_key or f"no API key for {record.name}")


def open_record(
    record: ProviderRecord,
    name: str,
    *,
    fallback: tuple[ProviderRecord, str] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
    record_raw: bool = False,
    **options: Any,
) -> HTTPModel:
    """Model ``name`` of ``record`` (a provider over HTTP), with an optional fallback: ``providers.open_model``'s work.

    Raises:
        ProviderConfigError: no key, an unknown option, or a provider not over HTTP.
    """
    from .base import RetryPolicy, Target

    e: Mapping[str, str] = os.environ if env is None else env
    if record.adapter is None:
        raise ProviderConfigError(f"{record.name}:{name} is not a model over HTTP: open it with open_spec")
    max_cont = options.pop("max_continuations", 2)
    fallback_on = options.pop("fallback_on", None)
    prices = options.pop("prices", None)
    allowed = _POLICY_OPTIONS | _MODEL_OPTIONS | record.options
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ProviderConfigError(f"unknown option {unknown[0]!r} for {record.name} models; known: {', '.join(sorted(allowed))}")
    policy = RetryPolicy(**{k: v for k, v in options.items() if k in _POLICY_OPTIONS})
    model_kw = {k: v for k, v in options.items() if k in _MODEL_OPTIONS}

    url: str | None
    if record.endpoint is not None:  # a cloud platform: its own variables and credential chain
        url, key, own = record.endpoint(name, base_url, e)
    else:
        url, own = base_url or _first(record.base_env, e), {}
        key = _key(record, url, api_key, api_key_env, e)
    fb: HTTPModel | None = None
    if fallback:
        frecord, fname = fallback
        if frecord.adapter is None:
            raise ProviderConfigError(f"fallback {frecord.name}:{fname} is not a model over HTTP")
        fkw = {k: v for k, v in options.items() if k in frecord.options}
        if frecord is record:
            ftarget = Target(frecord.name, fname, url or _default_base(frecord), key)
            fkw.update(own)
        elif frecord.endpoint is not None:
            fbase, fkey, fown = frecord.endpoint(fname, None, e)
            ftarget = Target(frecord.name, fname, fbase, fkey)
            fkw.update(fown)
        else:
            furl = _first(frecord.base_env, e)
            ftarget = Target(frecord.name, fname, furl or _default_base(frecord), _key(frecord, furl, None, None, e))
        fb = _make(frecord, ftarget, transport, policy, record_raw, model_kw, fkw, None)
    vendor_kw = {**{k: v for k, v in options.items() if k in record.options}, **own}
    m = _make(record, Target(record.name, name, url or _default_base(record), key), transport, policy, record_raw, model_kw, vendor_kw, fb)
    m.max_continuations = int(max_cont)
    m.fallback_on = None if fallback_on is None else frozenset(fallback_on)
    table = _table(prices)
    m.price = table.resolve(name)
    if fb is not None:
        fb.price = table.resolve(fb.target.model)
    return m


def _first(names: tuple[str, ...], env: Mapping[str, str]) -> str | None:
    for n in names:
        v = env.get(n)
        if v:
            return v
    return None


def _default_base(record: ProviderRecord) -> str:
    if not record.default_base:
        raise ProviderConfigError(f"the {record.name} provider has no default endpoint: set {' or '.join(record.base_env) or '--base-url'}")
    return record.default_base


def _table(prices: Any) -> PriceTable:
    if prices is None:
        from ..prices import default_prices

        return default_prices()
    if isinstance(prices, PriceTable):
        return prices
    if isinstance(prices, Mapping):
        return PriceTable(prices)
    raise ProviderConfigError("prices must be a PriceTable or a mapping of model name to Price")


def _make(
    record: ProviderRecord,
    target: Target,
    transport: httpx.BaseTransport | None,
    policy: RetryPolicy,
    record_raw: bool,
    model_kw: dict[str, Any],
    vendor_kw: dict[str, Any],
    fallback: HTTPModel | None,
) -> HTTPModel:
    wire = record.wire_for(target.model)
    if wire == record.wire:
        cls = record.adapter
    else:
        loader = record.adapters.get(wire)
        if loader is None:
            raise ProviderConfigError(f"{record.name}:{target.model} is served over the {wire} API, which agentloop's {record.name} provider does not speak")
        cls = loader()
    assert cls is not None
    family = record.family(target.model)
    if family is not None and family.token_field and "max_tokens_field" in record.options:
        vendor_kw = {"max_tokens_field": family.token_field, **vendor_kw}
    model: HTTPModel = cls(target, fallback=fallback, transport=transport, policy=policy, record_raw=record_raw, **model_kw, **vendor_kw)
    model.record = record
    return model
