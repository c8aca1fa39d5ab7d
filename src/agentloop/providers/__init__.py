"""The providers of models, in one registry: ``open_spec("openai:gpt-4o-mini")``,
``open_spec("anthropic:claude-...")``, ``open_spec("scripted:replies.json")``.

``PROVIDERS`` maps a spec's provider to what opens it: ``openai`` and
``anthropic`` are real models over HTTP (``open_model``); ``scripted`` answers
from a script file, offline (``scripted.py``). HTTP lives only in this package. Each adapter is the only place that knows its
vendor's wire format (``openai_compat.py``, ``anthropic.py``); ``base.py`` holds
the stream pump and the retry and fallback policy they share; ``sse.py`` the
event-stream decoder. Keys come from the arguments, a named environment
variable, or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, and are scrubbed from
every message this package produces.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..budget import PriceTable
from .errors import ProviderConfigError, ProviderError, scrub

if TYPE_CHECKING:  # the HTTP adapters load httpx: imported when first used (the scripted provider needs none)
    import httpx

    from .anthropic import AnthropicModel
    from .base import HTTPModel, RetryPolicy, Target
    from .openai_compat import OpenAIModel

__all__ = [
    "PROVIDERS",
    "AnthropicModel",
    "HTTPModel",
    "OpenAIModel",
    "OpenArgs",
    "ProviderConfigError",
    "ProviderError",
    "RetryPolicy",
    "default_fallback",
    "open_model",
    "open_spec",
    "parse_spec",
    "scrub",
]

_LAZY = {"AnthropicModel": "anthropic", "HTTPModel": "base", "RetryPolicy": "base", "Target": "base", "OpenAIModel": "openai_compat"}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)

DEFAULT_BASE = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BASE_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}

DEFAULT_FALLBACKS = (
    ("anthropic", "claude-opus-4-6", "claude-sonnet-4-6"),
    ("anthropic", "claude-opus-4-5", "claude-sonnet-4-5"),
    ("anthropic", "claude-opus-4-1", "claude-sonnet-4"),
    ("anthropic", "claude-opus-4", "claude-sonnet-4"),
)
"""A model's fallback when none is given, and only for overload (HTTP 529): an Opus model goes on on
the Sonnet of its generation (the seed's production checklist: "Opus -> Sonnet, with notice").
The longest matching name wins (``claude-opus-4-6-20260101`` is ``claude-opus-4-6``)."""


def default_fallback(spec: str) -> str | None:
    """The fallback ``spec`` gets on overload when none is given (``DEFAULT_FALLBACKS``), else None."""
    vendor, _, name = spec.partition(":")
    name = name.strip()
    for v, model, fb in DEFAULT_FALLBACKS:  # longest first within a vendor: the table is in that order
        if v == vendor.strip().lower() and (name == model or name.startswith(model + "-")):
            return f"{v}:{fb}"
    return None


_POLICY_OPTIONS = {"max_attempts", "backoff_base", "backoff_max", "max_retry_after", "stall_timeout", "call_deadline", "connect_timeout",
                   "sleep", "asleep", "rand"}
_MODEL_OPTIONS = {"on_notice", "extra_headers", "temperature", "thinking_budget", "reasoning_effort"}
_VENDOR_OPTIONS = {"openai": {"max_tokens_field"}, "anthropic": {"cache"}, "bedrock": {"cache"}, "vertex": {"cache"}}
CLOUD = ("bedrock", "vertex")
"""Claude on a cloud platform (``bedrock.py``, ``vertex.py``): its endpoint and credentials come from Claude Code's
variables (``AWS_REGION``, ``CLOUD_ML_REGION``...) and the platform's own credential chain, never from an API key."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini" -> ("openai", "gpt-4o-mini")``.

    Raises:
        ProviderConfigError: no provider, or one we do not know.
    """
    vendor, sep, name = spec.partition(":")
    if not sep:
        guess = "anthropic" if spec.startswith("claude") else "openai"
        raise ProviderConfigError(f"--model {spec!r} needs a provider: say {guess}:{spec} (openai:<model> or anthropic:<model>)")
    vendor = vendor.strip().lower()
    if vendor not in PROVIDERS:
        raise ProviderConfigError(f"unknown provider {vendor!r} in --model {spec!r}: use openai:<model>, anthropic:<model> or scripted:FILE")
    if not name.strip():
        raise ProviderConfigError(f"--model {spec!r} names no model after {vendor}:")
    return vendor, name.strip()


def is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.endswith(".local")


def _key(vendor: str, base_url: str | None, api_key: str | None, api_key_env: str | None, env: Mapping[str, str]) -> str | None:
    if api_key:
        return api_key
    if api_key_env:
        k = env.get(api_key_env)
        if k:
            return k
        if base_url is None:
            raise ProviderConfigError(f"the config names {api_key_env} for the {vendor} key, but {api_key_env} is not set: export {api_key_env}=...")
    k = env.get(KEY_ENV[vendor])
    if k:
        return k
    if base_url is not None:
        return None  # a server of the user's own (Ollama, vLLM, llama.cpp, LM Studio) needs no key
    if vendor == "openai":
        raise ProviderConfigError(
            "no API key for openai: export OPENAI_API_KEY=sk-..., or point --base-url at a local "
            "OpenAI-compatible server (e.g. --base-url http://localhost:11434/v1 for Ollama)"
        )
    raise ProviderConfigError(
        "no API key for anthropic: export ANTHROPIC_API_KEY=sk-ant-..., or use an OpenAI-compatible "
        "local server with --model openai:<name> --base-url URL"
    )


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
    """A model for ``spec`` (``openai:<name>`` or ``anthropic:<name>``), with an optional fallback.

    Options: ``max_attempts``, ``backoff_base``, ``backoff_max``,
    ``max_retry_after``, ``stall_timeout``, ``call_deadline``, ``connect_timeout`` (the retry
    policy; ``sleep``/``asleep``/``rand`` replace its clock and jitter in tests),
    ``on_notice`` (called with each retry and fallback notice), ``extra_headers``,
    ``temperature``, ``thinking_budget`` (Anthropic: extended thinking's
    ``budget_tokens``), ``reasoning_effort`` (OpenAI's reasoning models),
    ``max_continuations`` (turns cut at max tokens that the
    loop continues; default 2), ``fallback_on`` (the kinds of failure that
    pass to the fallback, e.g. ``{"overloaded"}``; default any), ``cache`` (Anthropic breakpoints, default on),
    ``max_tokens_field`` (OpenAI: ``max_tokens`` or ``max_completion_tokens``),
    ``prices`` (the run's ``PriceTable``, default the built-in one: a fallback
    dearer than the primary is given fewer output tokens, so that it costs no
    more than the call's reservation).

    Raises:
        ProviderConfigError: bad spec, no key, or an unknown option.
    """
    from .base import RetryPolicy

    e: Mapping[str, str] = os.environ if env is None else env
    vendor, name = parse_spec(spec)
    if vendor not in DEFAULT_BASE and vendor not in CLOUD:
        raise ProviderConfigError(f"{spec!r} is not a model over HTTP: open it with open_spec")
    max_cont = options.pop("max_continuations", 2)
    fallback_on = options.pop("fallback_on", None)
    prices = options.pop("prices", None)
    allowed = _POLICY_OPTIONS | _MODEL_OPTIONS | _VENDOR_OPTIONS[vendor]
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ProviderConfigError(f"unknown option {unknown[0]!r} for {vendor} models; known: {', '.join(sorted(allowed))}")
    policy = RetryPolicy(**{k: v for k, v in options.items() if k in _POLICY_OPTIONS})
    model_kw = {k: v for k, v in options.items() if k in _MODEL_OPTIONS}
    vendor_kw = {k: v for k, v in options.items() if k in _VENDOR_OPTIONS[vendor]}

    target, auth = _target(vendor, name, base_url, api_key, api_key_env, e)
    fb: HTTPModel | None = None
    if fallback:
        fvendor, fname = parse_spec(fallback)
        same = fvendor == vendor  # the same endpoint and key; another vendor's come from its own variables
        ftarget, fauth = _target(fvendor, fname, base_url if same else None, api_key if same else None, api_key_env if same else None, e)
        fkw = {k: v for k, v in options.items() if k in _VENDOR_OPTIONS[fvendor]}
        fb = _make(fvendor, ftarget, transport, policy, record_raw, model_kw, {**fkw, **fauth}, None)
    m = _make(vendor, target, transport, policy, record_raw, model_kw, {**vendor_kw, **auth}, fb)
    m.max_continuations = int(max_cont)
    m.fallback_on = None if fallback_on is None else frozenset(fallback_on)
    table = _table(prices)
    m.price = table.resolve(name)
    if fb is not None:
        fb.price = table.resolve(fb.target.model)
    return m


def _target(vendor: str, name: str, base_url: str | None, api_key: str | None, api_key_env: str | None,
            env: Mapping[str, str]) -> tuple[Target, dict[str, Any]]:
    """Where ``vendor``'s model ``name`` is called and with what credentials (the model's ``auth``, for a cloud platform)."""
    from .base import Target

    if vendor == "bedrock":
        from .bedrock import bedrock_target

        t, bauth = bedrock_target(name, env, base_url)
        return t, {"auth": bauth}
    if vendor == "vertex":
        from .vertex import vertex_target

        t, vauth = vertex_target(name, env, base_url)
        return t, {"auth": vauth}
    url = base_url or env.get(BASE_ENV[vendor]) or None
    key = _key(vendor, url, api_key, api_key_env, env)
    return Target(vendor, name, url or DEFAULT_BASE[vendor], key), {}


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
    vendor: str,
    target: Target,
    transport: httpx.BaseTransport | None,
    policy: RetryPolicy,
    record_raw: bool,
    model_kw: dict[str, Any],
    vendor_kw: dict[str, Any],
    fallback: HTTPModel | None,
) -> HTTPModel:
    from .anthropic import AnthropicModel
    from .openai_compat import OpenAIModel

    cls: Callable[..., HTTPModel] = OpenAIModel if vendor == "openai" else AnthropicModel
    if vendor == "bedrock":
        from .bedrock import BedrockModel as cls
    elif vendor == "vertex":
        from .vertex import VertexModel as cls
    return cls(target, fallback=fallback, transport=transport, policy=policy, record_raw=record_raw, **model_kw, **vendor_kw)


# --- the registry ----------------------------------------------------------


@dataclass(frozen=True)
class OpenArgs:
    """What a provider may be given to open a model; each provider takes what applies to it."""

    base_url: str | None = None
    api_key_env: str | None = None
    fallback: str | None = None
    env: Mapping[str, str] | None = None
    on_notice: Callable[[str], None] | None = None
    prices: PriceTable | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """More of the provider's own options (``open_model``'s; ``scripted``: ``stream``)."""
    transport: Any = None
    script: Sequence[Any] | None = None
    """``scripted``: the replies themselves (a batch task's inline script) instead of a file."""
    default_fallback: bool = False
    """No ``fallback`` given: take ``default_fallback(spec)``, for overload only, and say so through ``on_notice``."""


def _open_http(spec: str, a: OpenArgs) -> Any:
    fallback, options = a.fallback, dict(a.options)
    if fallback is None and a.default_fallback and (fallback := default_fallback(spec)) is not None:
        options["fallback_on"] = {"overloaded"}
        if a.on_notice is not None:
            a.on_notice(f"{spec} falls back to {fallback} when overloaded (529), by default; --fallback-model to choose another")
    return open_model(spec, base_url=a.base_url, api_key_env=a.api_key_env, fallback=fallback, env=a.env,
                      transport=a.transport, on_notice=a.on_notice, prices=a.prices, **options)


def _open_scripted(spec: str, a: OpenArgs) -> Any:
    """``scripted:FILE`` (or a ``script`` given): a model answering from the script, in order."""
    from .scripted import ScriptedModel, ScriptError, load_script, parse_replies

    try:
        script = parse_replies(list(a.script)) if a.script is not None else load_script(spec.partition(":")[2])
    except ScriptError as exc:
        raise ProviderConfigError(str(exc)) from None
    return ScriptedModel.from_script(script, stream=str(a.options.get("stream", "words")))


PROVIDERS: dict[str, Callable[[str, OpenArgs], Any]] = {"openai": _open_http, "anthropic": _open_http, "scripted": _open_scripted,
                                                       "bedrock": _open_http, "vertex": _open_http}
"""Each provider a spec may name, and what opens its models. The only place a provider is known."""


def open_spec(spec: str, args: OpenArgs | None = None) -> Any:
    """A model for ``spec`` (``provider:name``), opened by its provider (``PROVIDERS``).

    Raises:
        ProviderConfigError: no or an unknown provider, or the provider cannot open it (one line).
    """
    vendor = spec.partition(":")[0].strip().lower()
    opener = PROVIDERS.get(vendor)
    if opener is None:
        parse_spec(spec)  # says what is wrong
        raise ProviderConfigError(f"unknown provider in {spec!r}")
    return opener(spec, args or OpenArgs())
