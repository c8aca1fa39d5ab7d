"""Opening a model over HTTP from its provider's record: the key, the base URL, the adapter.

Rules:

1. The record is given (``providers.open_model`` finds it in the registry; this
   module knows no registry, so no provider's module depends on it).
2. The key: the ``api_key`` argument, else the variable ``api_key_env`` names,
   else the record's ``key_env``; none and no base URL: the record's ``no_key``
   message. A server of the user's own (a base URL) may need no key. A gateway's
   token (the record's ``token_env``: Claude Code's ``ANTHROPIC_AUTH_TOKEN``) goes
   as ``Authorization: Bearer``; the record's ``header_vars`` and ``headers_env``
   add headers (``env_headers``). Keys, tokens and secret-named headers' values
   are scrubbed from every message (``Target.secrets``).
3. The adapter is the record's, or the one its model family's wire format names.
   What the model is sent (the output-token field) follows its family
   (``ProviderRecord.family``) unless an option says otherwise.
4. A key goes only to the host it was configured for: a base URL set by a
   project's settings (``chosen_by_project``: variable -> the file) never
   receives a key the project did not set too; that is an error naming both,
   never a silent send (``_check_host``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..budget import PriceTable
from .errors import ProviderConfigError
from .record import ProviderRecord

if TYPE_CHECKING:
    import httpx

    from .base import HTTPModel, RetryPolicy, Target

__all__ = ["env_headers", "is_local", "open_record"]

_POLICY_OPTIONS = {"max_attempts", "backoff_base", "backoff_max", "max_retry_after", "stall_timeout", "call_deadline", "connect_timeout",
                   "sleep", "asleep", "rand"}
_MODEL_OPTIONS = {"on_notice", "extra_headers", "temperature", "thinking_budget", "reasoning_effort"}


def is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.endswith(".local")


def _key(record: ProviderRecord, base_url: str | None, api_key: str | None, api_key_env: str | None,
         env: Mapping[str, str], helper: Callable[[], str] | None = None) -> tuple[str | None, str | None, str | None]:
    """(key, token, the variable the credential came from) for ``record`` (rule 2): a gateway's token
    (``token_env``) when its variable is set, beside the key or instead of it; with neither, the settings'
    ``apiKeyHelper`` when the record takes one (Claude Code: below both; sent as the key and as a bearer token)."""
    token = record.first_set(record.token_env, env)
    if api_key:
        return api_key, token[1] if token else None, None
    if api_key_env:
        k = env.get(api_key_env)
        if k:
            return k, token[1] if token else None, api_key_env
        if base_url is None and token is None:
            raise ProviderConfigError(f"the config names {api_key_env} for the {record.name} key, but {api_key_env} is not set: export {api_key_env}=...")
    found = record.first_set(record.key_env, env)
    if found or token:
        return (found[1] if found else None), (token[1] if token else None), (found or token or ("", ""))[0]
    if helper is not None and record.key_helper:
        k = helper()
        return k, k, "apiKeyHelper"
    if base_url is not None:
        return None, None, None  # a server of the user's own (Ollama, vLLM, llama.cpp, LM Studio) needs no key
    raise ProviderConfigError(record.no_key or f"no API key for {record.name}")


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def env_headers(record: ProviderRecord, env: Mapping[str, str]) -> dict[str, str]:
    """The headers the environment adds to ``record``'s requests: its ``header_vars`` (``OPENAI_ORG_ID`` as
    ``OpenAI-Organization``), then its ``headers_env`` (Claude Code's ``ANTHROPIC_CUSTOM_HEADERS``: ``Name: Value``
    lines, split at the first colon).

    Raises:
        ProviderConfigError: a line that is not ``Name: Value`` with a valid header name, naming the variable and line.
    """
    out: dict[str, str] = {}
    for var, header in record.header_vars:
        v = env.get(var, "").strip()
        if v:
            out[header] = v
    raw = env.get(record.headers_env, "") if record.headers_env else ""
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not _HEADER_NAME.match(name) or any(ord(c) < 32 or ord(c) == 127 for c in value if c != "\t"):
            raise ProviderConfigError(f"{record.headers_env} line {n}: not a 'Name: Value' header (one a line)")
        out[name] = value
    return out


def _host(url: str) -> str:
    u = urlsplit(url)
    return f"{(u.hostname or '').lower()}:{u.port or (443 if u.scheme == 'https' else 80)}"


def _check_host(record: ProviderRecord, url: str | None, url_var: str | None, key_var: str | None,
                chosen_by_project: Mapping[str, str]) -> None:
    """A key goes only to the host it was configured for (rule 4): a base URL a project's settings chose
    never receives a key of the user's (their environment, their settings, ``--api-key-env``).

    Raises:
        ProviderConfigError: the project chose the URL, the key is the user's, and the host is not the provider's own.
    """
    if url is None or url_var is None or url_var not in chosen_by_project or key_var is None or key_var in chosen_by_project:
        return
    if record.default_base and _host(url) == _host(record.default_base):
        return
    raise ProviderConfigError(
        f"{chosen_by_project[url_var]} sets {url_var}={url}, but the {key_var} that would go there is yours, not the project's: "
        f"agentloop sends a key only to the host it was set for. Set {url_var} in your own environment or settings, "
        "or pass --base-url, to send it there")


def _target(record: ProviderRecord, name: str, *, base_url: str | None, api_key: str | None, api_key_env: str | None,
            env: Mapping[str, str], chosen_by_project: Mapping[str, str], helper: Callable[[], str] | None = None) -> Target:
    """Where model ``name`` of ``record`` is called, with which credentials and headers (rules 2 and 4)."""
    from .base import Target

    url_var = None if base_url else next((v for v in record.base_env if env.get(v)), None)
    url = base_url or (env[url_var] if url_var else None)
    key, token, key_var = _key(record, url, api_key, api_key_env, env, helper)
    if api_key:
        key_var = None  # given by the caller, for this call: the caller chose where it goes
    _check_host(record, url, url_var, key_var, chosen_by_project)
    source = helper if key_var == "apiKeyHelper" else None  # asked again before each request, and after a 401
    return Target(record.name, name, url or _default_base(record), key, token, env_headers(record, env), key_source=source)


def _endpoint_target(record: ProviderRecord, name: str, base_url: str | None, env: Mapping[str, str],
                     chosen_by_project: Mapping[str, str]) -> tuple[Target, dict[str, Any]]:
    """A cloud platform's model: where its own variables say and with the credentials its chain finds
    (``ProviderRecord.endpoint``, which also keeps them from a host a project chose: rule 4)."""
    from .base import Target

    assert record.endpoint is not None
    url, key, own = record.endpoint(name, base_url, env, chosen_by_project)
    return Target(record.name, name, url, key), own


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
    chosen_by_project: Mapping[str, str] | None = None,
    key_helper: Callable[[], str] | None = None,
    **options: Any,
) -> HTTPModel:
    """Model ``name`` of ``record`` (a provider over HTTP), with an optional fallback: ``providers.open_model``'s work.

    Raises:
        ProviderConfigError: no key, an unknown option, or a provider not over HTTP.
    """
    from .base import RetryPolicy

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

    chosen = chosen_by_project or {}
    own: dict[str, Any] = {}
    if record.endpoint is not None:  # a cloud platform: its own variables and credential chain
        target, own = _endpoint_target(record, name, base_url, e, chosen)
    else:
        target = _target(record, name, base_url=base_url, api_key=api_key, api_key_env=api_key_env, env=e, chosen_by_project=chosen,
                         helper=key_helper)
    fb: HTTPModel | None = None
    if fallback:
        frecord, fname = fallback
        if frecord.adapter is None:
            raise ProviderConfigError(f"fallback {frecord.name}:{fname} is not a model over HTTP")
        fkw = {k: v for k, v in options.items() if k in frecord.options}
        if frecord is record:
            ftarget = dataclasses.replace(target, model=fname)
            fkw.update(own)
        elif frecord.endpoint is not None:
            ftarget, fown = _endpoint_target(frecord, fname, None, e, chosen)
            fkw.update(fown)
        else:
            ftarget = _target(frecord, fname, base_url=None, api_key=None, api_key_env=None, env=e, chosen_by_project=chosen,
                              helper=key_helper)
        fb = _make(frecord, ftarget, transport, policy, record_raw, model_kw, fkw, None)
    vendor_kw = {**{k: v for k, v in options.items() if k in record.options}, **own}
    m = _make(record, target, transport, policy, record_raw, model_kw, vendor_kw, fb)
    m.max_continuations = int(max_cont)
    m.fallback_on = None if fallback_on is None else frozenset(fallback_on)
    table = _table(prices)
    m.price = table.resolve(name)
    if fb is not None:
        fb.price = table.resolve(fb.target.model)
    return m


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
