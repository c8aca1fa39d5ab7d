"""What a provider is, declared once: the ``ProviderRecord`` each provider's module holds.

Rules:

1. Everything agentloop knows of a provider is a field here: how its models open,
   which variables hold its key and base URL, the options it takes, its model
   aliases, its cheap and default models, what each model family is sent (token
   field, thinking or effort, wire format, edit format), its price-table prefix,
   its telemetry name and its error messages. Code outside ``providers/`` reads
   the record (``providers.record_for``); it never names a vendor.
2. A record holds no secret: key *variables* are named here, their values are read
   when a model opens and stay in the adapter's ``Target``.
3. A model's facts come from the longest ``ModelFamily.prefix`` matching its name
   (``family``); a model no family names gets the provider's defaults.
4. The module that declares a record imports its HTTP or SDK library inside
   functions only: the registry imports every provider's module at start, and a
   scripted run loads no HTTP client (``tests/test_provider_record.py`` checks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EDIT_FORMAT", "PATCH_FORMAT", "Endpoint", "Factory", "ModelAlias", "ModelFamily", "OpenArgs", "ProviderRecord", "env_flag"]


PATCH_FORMAT = "apply_patch"
"""The edit format of models trained on Codex's patches (``ModelFamily.edit_format``): they are offered the
``apply_patch`` tool alone and told of it. The one spelling of the format's name."""
EDIT_FORMAT = "edit"
"""The edit format of the other models that name one: Edit (and MultiEdit), find and replace."""

@dataclass(frozen=True)
class OpenArgs:
    """What a provider may be given to open a model; each provider takes what applies to it."""

    base_url: str | None = None
    api_key_env: str | None = None
    fallback: str | None = None
    env: Mapping[str, str] | None = None
    on_notice: Callable[[str], None] | None = None
    prices: Any = None
    """The run's ``PriceTable`` (None: the built-in one)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """More of the provider's own options (``open_model``'s; ``scripted``: ``stream``)."""
    transport: Any = None
    script: Sequence[Any] | None = None
    """``scripted``: the replies themselves (a batch task's inline script) instead of a file."""
    default_fallback: bool = False
    """No ``fallback`` given: take the provider's default for overload, and say so through ``on_notice``."""
    key_helper: Callable[[], str] | None = None
    """Runs the settings' ``apiKeyHelper`` and gives its key (asked only when no key or token variable is set)."""
    chosen_by_project: Mapping[str, str] = field(default_factory=dict)
    """Variables of ``env`` a project's settings set (name -> the file): a base URL among them receives no key of
    the user's (``providers/opening.py``, rule 4)."""


Factory = Callable[["ProviderRecord", str, OpenArgs], Any]
"""How a provider opens a model: ``factory(record, spec, args) -> model``."""

Endpoint = Callable[[str, "str | None", Mapping[str, str], Mapping[str, str]], "tuple[str, str | None, dict[str, Any]]"]
"""``endpoint(model, base_url, env, chosen_by_project) -> (base URL, key, adapter arguments)``: ``ProviderRecord.endpoint``.
``chosen_by_project`` names the variables a project's settings set: the user's credentials never go to a host
a project chose."""


@dataclass(frozen=True)
class ModelFamily:
    """What the models whose name starts with ``prefix`` are sent (the longest matching prefix wins)."""

    prefix: str
    token_field: str | None = None
    """The request field holding the output budget (``max_completion_tokens`` for OpenAI's reasoning
    models, wherever they are served); None: the provider's ``token_field``."""
    thinking: bool = False
    """Takes an extended-thinking budget (the provider's ``reasoning == "budget"``); on by default."""
    effort: str | None = None
    """Takes a reasoning effort (the provider's ``reasoning == "effort"``); this is its default."""
    wire: str | None = None
    """A wire format other than the provider's (a model served only by the Responses API)."""
    edit_format: str | None = None
    """The one file-editing tool offered and named in the system prompt (``apply_patch`` for models
    trained on it); None: the provider's ``edit_format``."""


@dataclass(frozen=True)
class ModelAlias:
    """A short name (Claude Code's ``sonnet``) for a model id, and the variable that overrides it."""

    name: str
    model: str
    env: str | None = None


@dataclass(frozen=True)
class ProviderRecord:
    """One provider, declared once (rule 1). Registered by one line in ``providers/__init__.py``."""

    name: str
    """The spec's prefix: ``openai`` in ``openai:gpt-5``."""
    wire: str
    """The wire format: ``chat_completions``, ``messages``, ``responses``, ``bedrock``, ``scripted``..."""
    adapter: Callable[..., Any] | None = None
    """The adapter class (an ``HTTPModel``) ``providers.open_model`` builds; None for a provider with its own factory."""
    factory: Factory | None = None
    """How a model of this provider opens when not as an adapter over HTTP (``scripted``); None: ``providers.open_http``."""
    endpoint: Endpoint | None = None
    """Where a model is called and with what credentials, when a platform's own variables and credential chain say
    it (Bedrock's ``AWS_REGION`` and SigV4, Vertex's ``CLOUD_ML_REGION`` and Google's tokens) instead of ``key_env``
    and ``base_env``: ``endpoint(model, base_url, env, chosen_by_project) -> (base URL, key or None, the adapter's own
    arguments)``."""
    adapters: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    """Adapters for other wire formats a family may name (``ModelFamily.wire``): wire -> loader of the class."""
    wire_providers: Mapping[str, str] = field(default_factory=dict)
    """For each wire of ``adapters``, the registered provider speaking it natively (``responses`` ->
    ``openai-responses``): a family on that wire takes that provider's cheap model and web search, so that its side
    calls are served over the same wire as it is (``providers.serving_record``)."""
    key_env: tuple[str, ...] = ()
    """Variables holding the API key, first set wins."""
    token_env: tuple[str, ...] = ()
    """Variables holding a bearer token for a gateway (Claude Code's ``ANTHROPIC_AUTH_TOKEN``), sent as
    ``Authorization: Bearer`` (a key set too goes as the adapter's key header beside it)."""
    base_env: tuple[str, ...] = ()
    """Variables holding the base URL."""
    default_base: str | None = None
    """The vendor's own endpoint: where a key from ``key_env`` may be sent without a base URL."""
    headers_env: str | None = None
    """A variable of newline-separated ``Name: Value`` headers sent with every request (``ANTHROPIC_CUSTOM_HEADERS``)."""
    header_vars: tuple[tuple[str, str], ...] = ()
    """(variable, header) pairs: a set variable's value is sent as that header (``OPENAI_ORG_ID`` -> ``OpenAI-Organization``)."""
    options: frozenset[str] = frozenset()
    """The options only this provider's adapter takes (beside the retry policy's and every model's)."""
    names_models: bool = True
    """The spec after the colon is a model's name (``scripted:`` takes a file)."""
    bare_prefixes: tuple[str, ...] = ()
    """Model names that are this provider's when written bare (``claude-`` in a ``--model claude-...``)."""
    aliases: tuple[ModelAlias, ...] = ()
    default_model: str | None = None
    """The model a session opens when only this provider's key is set (Claude Code: its default Sonnet)."""
    model_env: tuple[str, ...] = ()
    """Variables naming the session's model when no flag or setting does (``ANTHROPIC_MODEL``)."""
    cheap_model: str | None = None
    """The small, fast model for side calls (loop check, WebFetch's prompt)."""
    cheap_model_env: tuple[str, ...] = ()
    """Variables naming the cheap model (``ANTHROPIC_SMALL_FAST_MODEL``)."""
    key_helper: bool = False
    """Takes Claude Code's ``apiKeyHelper`` (a command's output as the key, after ``key_env`` and ``token_env``,
    sent both as the key and as a bearer token)."""
    selected_by: str | None = None
    """A variable that, set to a true value, makes this the default provider (``CLAUDE_CODE_USE_BEDROCK``)."""
    reasoning: str | None = None
    """How its models think harder: ``budget`` (extended thinking's tokens), ``effort`` (a level), or None."""
    token_field: str = "max_tokens"
    """The request field holding the output budget, unless a family says otherwise."""
    families: tuple[ModelFamily, ...] = ()
    edit_format: str | None = None
    """The file-editing tool its models are offered unless a family says otherwise: ``edit`` (Edit) or
    ``apply_patch``; None: both (the provider does not say which its models were trained on)."""
    web_search: bool | None = None
    """The provider runs a server-side web search the WebSearch tool can use (True), has none (False: the
    tool is not offered), or does not say (None: offered, and it answers that no search is there)."""
    price_prefix: str | None = None
    """How a router spells this provider's models (``openai/`` in OpenRouter's ``openai/gpt-4o``)."""
    telemetry_name: str = ""
    """``gen_ai.provider.name`` when the host does not say better."""
    no_key: str = ""
    """The error when no key is found and no base URL is given."""
    overload_fallbacks: tuple[tuple[str, str], ...] = ()
    """(model, fallback) pairs: a model's fallback when none is given, for overload (HTTP 529) only."""

    def family(self, model: str) -> ModelFamily | None:
        """The family of ``model`` (its longest matching prefix), or None (rule 3)."""
        best: ModelFamily | None = None
        name = model.lower().rsplit("/", 1)[-1]  # a router's or gateway's name (``openai/gpt-5``) is the model's
        for f in self.families:
            if name.startswith(f.prefix) and (best is None or len(f.prefix) > len(best.prefix)):
                best = f
        return best

    def token_field_for(self, model: str) -> str:
        f = self.family(model)
        return f.token_field if f is not None and f.token_field else self.token_field

    def wire_for(self, model: str) -> str:
        f = self.family(model)
        return f.wire if f is not None and f.wire else self.wire

    def edit_format_for(self, model: str) -> str | None:
        f = self.family(model)
        return f.edit_format if f is not None and f.edit_format else self.edit_format

    def thinks(self, model: str) -> bool:
        """The model takes an extended-thinking budget (and has it on by default)."""
        f = self.family(model)
        return self.reasoning == "budget" and f is not None and f.thinking

    def default_effort(self, model: str) -> str | None:
        """The model takes a reasoning effort: its default; None when it takes none."""
        f = self.family(model)
        return f.effort if self.reasoning == "effort" and f is not None else None

    def alias(self, name: str) -> ModelAlias | None:
        return next((a for a in self.aliases if a.name == name.lower()), None)

    def first_set(self, names: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, str] | None:
        """(variable, value) of the first of ``names`` set and not blank in ``env``, or None."""
        for n in names:
            v = env.get(n, "").strip()
            if v:
                return n, v
        return None


def env_flag(env: Mapping[str, str], name: str) -> bool:
    """Whether variable ``name`` is switched on, as Claude Code reads its flags (``CLAUDE_CODE_USE_BEDROCK=1``,
    ``true``, ``yes``, ``on``, any case)."""
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")
