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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config.credentials import register_provider_keys
from .errors import ProviderConfigError, ProviderError, scrub
from .opening import is_local, open_record
from .record import ModelAlias, ModelFamily, OpenArgs, ProviderRecord, env_flag

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
    "cheap_spec",
    "default_spec",
    "edit_format",
    "env_model",
    "has_web_search",
    "default_fallback",
    "is_local",
    "is_spec",
    "model_record",
    "open_http",
    "open_model",
    "open_spec",
    "parse_spec",
    "record_for",
    "records",
    "scrub",
    "serving_record",
    "spec_for",
]

# --- the registry: one line per provider --------------------------------------

DECLARED: tuple[str, ...] = (
    "agentloop.providers.anthropic:RECORD",
    "agentloop.providers.openai_compat:RECORD",
    "agentloop.providers.scripted:RECORD",
    "agentloop.providers.openai_responses:RECORD",
    "agentloop.providers.bedrock:RECORD",
    "agentloop.providers.vertex:RECORD",
)
"""Where each provider's record is declared (``module:RECORD``), one line a provider: the only place a provider is
registered (no import beside it: ``scripts/check_layers.py`` reads each line as the import it is). The order is
the order of preference when the environment offers several (``default_spec``), as Claude Code starts on
Anthropic's models when their key is set."""


def _load(declared: str) -> ProviderRecord:
    module, _, name = declared.partition(":")
    record = getattr(importlib.import_module(module), name)
    if not isinstance(record, ProviderRecord):
        raise TypeError(f"providers: {declared} is not a ProviderRecord")
    return record


PROVIDERS: Mapping[str, ProviderRecord] = {r.name: r for r in map(_load, DECLARED)}
"""Each provider a spec may name, by its record, in ``DECLARED``'s order."""
for _r in PROVIDERS.values():  # its key, token and header variables never reach a child (config.credentials)
    register_provider_keys((*_r.key_env, *_r.token_env, _r.headers_env or ""))
del _r

# ------------------------------------------------------------------------------

_LAZY = {"AnthropicModel": "anthropic", "HTTPModel": "base", "RetryPolicy": "base", "Target": "base", "OpenAIModel": "openai_compat",
         "ResponsesModel": "openai_responses"}


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
        # a name no provider claims by its prefix is guessed to be the catch-all's (one with no bare prefixes)
        guess = bare_provider(spec) or next((r.name for r in PROVIDERS.values() if r.names_models and not r.bare_prefixes), "")
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


def is_spec(name: str) -> bool:
    """``name`` starts with a registered provider and a colon (``openai:gpt-5``; not Bedrock's ``...-v1:0``)."""
    head, sep, _ = name.partition(":")
    return bool(sep) and head.strip().lower() in PROVIDERS


def _preferred(provider: str | None, env: Mapping[str, str]) -> list[ProviderRecord]:
    """The records in the order a name is looked up: the session's provider, those the environment selects
    (``selected_by``: ``CLAUDE_CODE_USE_BEDROCK=1``), then the registry's order."""
    out: list[ProviderRecord] = []
    own = PROVIDERS.get(provider) if provider else None
    first = [own] if own is not None else []
    selected = [r for r in PROVIDERS.values() if r.selected_by and env_flag(env, r.selected_by)]
    for r in (*first, *selected, *PROVIDERS.values()):
        if r not in out:
            out.append(r)
    return out


def _named(record: ProviderRecord, name: str, env: Mapping[str, str]) -> str:
    """``name`` (an alias of ``record``'s, its override variable honoured, or a model id) as a spec."""
    a = record.alias(name)
    if a is not None:
        name = (env.get(a.env, "").strip() if a.env else "") or a.model
    return name if is_spec(name) else f"{record.name}:{name}"


def spec_for(name: str, *, env: Mapping[str, str], provider: str | None = None) -> str | None:
    """A bare model name or alias as a spec, or None when no provider claims it.

    An alias (Claude Code's ``sonnet``, its ``ANTHROPIC_DEFAULT_SONNET_MODEL`` honoured) or a name with a
    provider's bare prefix (``claude-...``) is looked up in the session's provider first, then in those the
    environment selects, then in the registry's order; any other bare name (no colon: ``gemini:pro`` names an
    unknown provider) is the session's provider's when that provider names models (``scripted:`` takes a file)."""
    s = name.strip()
    for r in _preferred(provider, env):
        if r.alias(s) is not None or (r.bare_prefixes and s.lower().startswith(r.bare_prefixes)):
            return _named(r, s, env)
    own = PROVIDERS.get(provider) if provider else None
    if s and ":" not in s and own is not None and own.names_models:
        return f"{own.name}:{s}"
    return None


def model_record(spec: str) -> tuple[ProviderRecord, str] | None:
    """(record, model name) of a spec naming a model of a registered provider, else None (a model object, ``scripted:FILE``)."""
    if not is_spec(spec):
        return None
    head, _, name = spec.partition(":")
    record = PROVIDERS[head.strip().lower()]
    return (record, name.strip()) if record.names_models else None


def edit_format(spec: str) -> str | None:
    """The one edit tool a model is offered and told of (``edit`` or ``apply_patch``), or None for both.

    Its family's or provider's (``ProviderRecord.edit_format_for``); a provider that does not say, serving a
    model another provider claims by its bare prefix (``openai:anthropic/claude-sonnet-4`` through a router),
    gets what that provider says of it."""
    found = model_record(spec)
    if found is None:
        return None
    record, name = found
    fmt = record.edit_format_for(name)
    if fmt is None:
        owner = bare_provider(name.rsplit("/", 1)[-1])
        fmt = PROVIDERS[owner].edit_format_for(name) if owner is not None else None
    return fmt


def serving_record(spec: str) -> ProviderRecord | None:
    """The record whose wire serves ``spec``'s model: its provider's, unless the model's family is served over
    another wire that a registered provider speaks natively (``ProviderRecord.wire_providers``: ``openai:gpt-5-codex``,
    served only by the Responses API, is ``openai-responses``'s). None for a spec of no registered provider."""
    record = PROVIDERS.get(spec.partition(":")[0].strip().lower()) if is_spec(spec) else None
    if record is None:
        return None
    name = spec.partition(":")[2].strip()
    wire = record.wire_for(name) if record.names_models else record.wire
    native = PROVIDERS.get(record.wire_providers.get(wire, "")) if wire != record.wire else None
    return native if native is not None and native.wire == wire else record


def has_web_search(spec: str) -> bool | None:
    """The wire serving the spec's model (``serving_record``) runs a server-side search (True), has none (False),
    or does not say (None)."""
    record = serving_record(spec) if model_record(spec) is not None else None
    return record.web_search if record is not None else None


def cheap_spec(spec: str, env: Mapping[str, str]) -> str | None:
    """The small, fast model of the provider serving ``spec``'s model (``serving_record``: a Responses-only family's
    is served over Responses too) — its ``cheap_model_env``, else ``cheap_model`` — or None."""
    record = serving_record(spec)
    if record is None:
        return None
    found = record.first_set(record.cheap_model_env, env)
    name = found[1] if found else record.cheap_model
    return _named(record, name, env) if name else None


def env_model(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(spec, why) of the model a provider's model variable names (Claude Code's ``ANTHROPIC_MODEL``: an alias or
    an id), looked up in the order of ``_preferred``; None when none is set."""
    for r in _preferred(None, env):
        found = r.first_set(r.model_env, env)
        if found:
            return _named(r, found[1], env), f"{found[0]} is set"
    return None


def default_spec(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(spec, why) of the model a session opens when nothing names one: the ``default_model`` of the first
    provider (``_preferred``'s order) the environment selects or holds a key or token for, as Claude Code starts
    on its default Sonnet with only ``ANTHROPIC_API_KEY`` set; None when the environment offers none."""
    for r in _preferred(None, env):
        if r.default_model is None:
            continue
        if r.selected_by and env_flag(env, r.selected_by):
            return _named(r, r.default_model, env), f"the {r.name} provider's default, as {r.selected_by} is set"
        held = r.first_set((*r.key_env, *r.token_env), env)
        if held:
            return _named(r, r.default_model, env), f"the {r.name} provider's default, as {held[0]} is set"
    return None


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
    chosen_by_project: Mapping[str, str] | None = None,
    key_helper: Callable[[], str] | None = None,
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
    ``chosen_by_project``: the variables of ``env`` a project's settings set (name -> file); a base URL
    among them receives no key of the user's. ``key_helper``: runs the settings' ``apiKeyHelper`` (asked only by a
    provider that takes one, when no key or token variable is set).

    Raises:
        ProviderConfigError: bad spec, an unknown provider, no key, a key for a host a project chose, or an unknown option.
    """
    vendor, name = parse_spec(spec)
    fb: tuple[ProviderRecord, str] | None = None
    if fallback:
        fvendor, fname = parse_spec(fallback)
        fb = (PROVIDERS[fvendor], fname)
    return open_record(PROVIDERS[vendor], name, fallback=fb, base_url=base_url, api_key=api_key, api_key_env=api_key_env,
                       env=env, transport=transport, record_raw=record_raw, chosen_by_project=chosen_by_project,
                       key_helper=key_helper, **options)


def open_http(record: ProviderRecord, spec: str, a: OpenArgs) -> Any:
    """How a provider over HTTP opens (a record with no ``factory``): ``open_model``, with the default
    fallback for overload when asked (said through ``on_notice``)."""
    fallback, options = a.fallback, dict(a.options)
    if fallback is None and a.default_fallback and (fallback := default_fallback(spec)) is not None:
        options["fallback_on"] = {"overloaded"}
        if a.on_notice is not None:
            a.on_notice(f"{spec} falls back to {fallback} when overloaded (529), by default; --fallback-model to choose another")
    return open_model(spec, base_url=a.base_url, api_key_env=a.api_key_env, fallback=fallback, env=a.env,
                      transport=a.transport, on_notice=a.on_notice, prices=a.prices, chosen_by_project=a.chosen_by_project,
                      key_helper=a.key_helper, **options)


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
