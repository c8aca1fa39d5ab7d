"""The session's model: which one, with what options, at what price, and for one turn another.

Rules:

1. A spec opens through the provider registry (``providers.PROVIDERS``:
   ``scripted:PATH``, ``openai:NAME``, ``anthropic:NAME``); what the drivers
   must know of the model they read from its description (``describe``), never
   attribute by attribute.
2. The price table is the built-in one with each settings file's ``prices``
   laid over it; ``--price`` gives the model given a price of its own. A model
   (or a fallback) with no price is billed at the highest known one, said once.
3. With no fallback given, the provider's default for overload applies (seed
   004: an Opus model falls back to the Sonnet of its generation), said once.
4. A command's or skill's front matter ``model`` holds for the turn it starts:
   ``for_turn`` switches and gives back what ``restore`` puts back after the
   turn; both switches are recorded as ``model_change`` with a ``why``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..budget import PriceTable, format_usd
from ..config.settings import ConfigError, SettingsSource
from ..model_description import describe
from .errors import AgentError
from .model_options import ModelOptions, OptionError, resolve_options

if TYPE_CHECKING:
    from .key_helper import KeyHelper

__all__ = ["ModelChoice", "Saved", "context_window", "open_model_spec", "scripted_model"]

log = logging.getLogger("agentloop.agent")

Saved = tuple[Any, str, ModelOptions, int]
"""What ``for_turn`` replaced (model, spec, options, window), for ``restore``."""


def context_window(model_name: str, override: int | None = None) -> int:
    """The settings' "contextWindow" when given, else the model family's (``context.context_window``, the one table)."""
    if override:
        return override
    from .context.compaction import context_window as family_window

    return family_window(model_name)


def open_model_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    fallback: str | None = None,
    env: Mapping[str, str] | None = None,
    on_notice: Callable[[str], None] | None = None,
    prices: PriceTable | None = None,
    options: Mapping[str, Any] | None = None,
    default_fallback: bool = False,
    chosen_by_project: Mapping[str, str] | None = None,
    key_helper: Callable[[], str] | None = None,
) -> Any:
    """A model from a spec, opened by its provider (rule 1).

    ``prices`` (the session's table, built-in plus settings) prices the model and
    its fallback, so a dearer fallback gets only the output tokens the call's
    reservation pays for. ``options`` are more provider options (thinking, effort).
    ``default_fallback``: with no ``fallback``, the provider's default for overload (``providers.default_fallback``).

    Raises:
        AgentError: the spec cannot be opened (the provider's message, one line).
    """
    from ..providers import OpenArgs, ProviderConfigError, is_spec, open_spec, record_for

    # a model's options (thinking, effort) are for a provider whose spec names a model (not ``scripted:FILE``)
    named = not is_spec(spec) or record_for(spec).names_models
    args = OpenArgs(base_url=base_url, api_key_env=api_key_env, fallback=fallback, env=env, on_notice=on_notice,
                    prices=prices, options=dict(options or {}) if named else {},
                    default_fallback=default_fallback, chosen_by_project=dict(chosen_by_project or {}),
                    key_helper=key_helper)
    try:
        return open_spec(spec, args)
    except ProviderConfigError as exc:
        raise AgentError(str(exc)) from None


def scripted_model(path: str) -> Any:
    """An offline model that answers from a script file, in order (the ``scripted`` provider).

    Raises:
        AgentError: the file is unreadable or not a script, naming the place.
    """
    from ..providers.scripted import RECORD as SCRIPTED

    return open_model_spec(f"{SCRIPTED.name}:{path}")


class ModelChoice:
    """The session's model and what goes with it. ``AgentError`` for a model that cannot be opened or priced."""

    def __init__(self, *, setting: Callable[[str], Any], price_sources: Sequence[SettingsSource], env: Mapping[str, str],
                 permission_mode: str, base_url: str | None, api_key_env: str | None, option_flags: tuple[Any, Any, Any],
                 cap_micros: int | None, window_override: int | None, on_notice: Callable[[str], None],
                 project_env: Mapping[str, str] | None = None, key_helper: tuple[str, str, bool] | None = None,
                 host_env: Mapping[str, str] | None = None):
        self.setting, self.env, self.permission_mode = setting, env, permission_mode
        """``setting(key)``: a model option's key as the settings give it (``AgentSettings.model_setting``)."""
        self.base_url, self.api_key_env, self.option_flags = base_url, api_key_env, option_flags
        self.cap_micros, self.window_override, self.on_notice = cap_micros, window_override, on_notice
        self.project_env: Mapping[str, str] = project_env or {}
        """The variables a project's settings set (name -> file): a base URL among them gets no key of the user's;
        ``apiKeyHelper`` among them when a project's file set it (its key is the project's)."""
        self.key_helper: KeyHelper | None = None
        if key_helper is not None:
            from .key_helper import KeyHelper

            # a user's helper runs on the host: without a project's env (``AgentSettings.host_env``)
            self.key_helper = KeyHelper(key_helper[0], key_helper[1], key_helper[2],
                                        env if key_helper[2] or host_env is None else host_env)
            if key_helper[2]:
                self.project_env = {**self.project_env, "apiKeyHelper": key_helper[1]}
        self.prices = _prices(price_sources)
        self.price_notices: list[str] = []
        """Lines to show once: a model billed at the highest known price because it has none (rule 2)."""
        self.model: Any = None
        self.model_spec = ""
        self.fallback: Any = None
        self.window = 0

    def choose(self, model: str | Any | None, price: Any, fallback: str | None, fallback_setting: Any = None) -> None:
        """The model given (opened), its price and its fallback (rules 2, 3): ``fallback`` is the flag's,
        ``fallback_setting`` the settings' ``fallbackModel`` (``AgentSettings``)."""
        from .trust import resolve_model

        spec = model
        if spec is None:
            from ..providers import records

            keys = " or ".join(r.key_env[0] for r in records() if r.default_model and r.key_env)
            raise AgentError(f"no model configured: pass --model (e.g. scripted:replies.json), set \"model\" in settings, "
                             f"or export {keys} to start on that provider's default model")
        if isinstance(spec, str):
            spec = resolve_model(spec, env=self.env, permission_mode=self.permission_mode)
        if price is not None:  # a model object (the scripted, or rewind's that calls nothing) is priced by its name
            self.prices = self.prices.merged({spec.split(":", 1)[-1] if isinstance(spec, str) else describe(spec).name: price})
        self.model_spec = spec if isinstance(spec, str) else describe(spec).name
        self.fallback = fallback if fallback is not None else fallback_setting
        if isinstance(self.fallback, str):
            self.fallback = resolve_model(self.fallback, env=self.env, permission_mode=self.permission_mode)
        self.options: ModelOptions = self.resolve_options(self.model_spec)
        self.model = self.open(spec) if isinstance(spec, str) else spec
        if self.fallback is None and describe(self.model).fallbacks:  # the provider's default, for overload only
            self.price_notices.append(f"{spec} falls back to {describe(self.model).fallbacks[0].name} when overloaded (529), "
                                      f"by default; --fallback-model (or \"fallbackModel\" in settings) to choose another")
        self.check_price()
        self.window = context_window(self.name, self.window_override)

    @property
    def name(self) -> str:
        return describe(self.model, self.model_spec).name

    def resolve_options(self, spec: str) -> ModelOptions:
        """The output budget, thinking and effort for ``spec`` (``agent/model_options.py``)."""
        mot, thinking, effort = self.option_flags
        try:
            return resolve_options(
                spec, max_output_tokens=mot, thinking=thinking, effort=effort, setting=self.setting,
                env=self.env, cap_micros=self.cap_micros, output_price=self.prices.resolve(spec.split(":", 1)[-1]).output,
            )
        except OptionError as exc:
            raise AgentError(str(exc)) from None

    def open(self, spec: str) -> Any:
        """``spec`` opened as the session opens its own models (its fallback, prices, options, notices)."""
        return open_model_spec(spec, base_url=self.base_url, api_key_env=self.api_key_env, fallback=self.fallback, env=self.env,
                               on_notice=self.on_notice, prices=self.prices, options=self.options.provider_options(),
                               default_fallback=True, chosen_by_project=self.project_env, key_helper=self.key_helper)

    def check_price(self) -> None:
        """A line for each model (the fallbacks too) that has no price: it is billed at the highest one (rule 2)."""
        for name in [self.name, *(f.name for f in describe(self.model).fallbacks)]:
            if name in self.prices:
                continue
            top = self.prices.highest()
            line = (
                f"model {name} has no price: it is billed at the highest known price, "
                f"{format_usd(top.input)} input / {format_usd(top.output)} output per million tokens; "
                f"give it one with --price INPUT,OUTPUT (dollars per million tokens) or \"prices\" in settings"
            )
            if line not in self.price_notices:
                self.price_notices.append(line)
                log.warning("%s", line)

    def child_output(self, spec: str, cap_micros: int | None) -> int:
        """A sub-agent's output budget: the session's rule (flag, variable, setting, else the model's documented
        maximum) for the child's model, limited by the child's reservation as the session's is by its cap."""
        try:
            return resolve_options(
                spec, max_output_tokens=self.option_flags[0], setting=self.setting, env=self.env,
                cap_micros=cap_micros, output_price=self.prices.resolve(spec.split(":", 1)[-1]).output,
            ).max_output_tokens
        except OptionError:  # the flag passes the child's model's maximum: that maximum
            from ..prices import DEFAULT_MAX_OUTPUT, documented_max_output

            return documented_max_output(spec.split(":", 1)[-1]) or DEFAULT_MAX_OUTPUT

    def take_notices(self) -> list[str]:
        out, self.price_notices = self.price_notices, []  # each is shown once
        return out

    def set_thinking(self, flag: str | None) -> None:
        """``--thinking``'s value (on, off, N; None: the default) for the models opened from now on (``switch``)."""
        self.option_flags = (self.option_flags[0], flag, self.option_flags[2])

    def switch(self, spec: str) -> None:
        """Another model for the next turns; what was in force stays when it cannot be opened."""
        options = self.resolve_options(spec)
        saved_options, self.options = self.options, options
        try:
            model = self.open(spec)
        except AgentError:
            self.options = saved_options
            raise
        self.model, self.model_spec = model, spec
        self.check_price()
        self.window = context_window(self.name, self.window_override)

    @property
    def provider(self) -> str | None:
        """The session's provider (``openai`` for ``openai:gpt-4o``), or None for a model given as an object."""
        return self.model_spec.split(":", 1)[0] if ":" in self.model_spec else None

    def for_turn(self, wanted: tuple[str, str] | None, note: Callable[[str], None]) -> Saved | None:
        """A command's or skill's front matter ``model`` (``wanted``: the spec, and what asked for it) for the
        turn it starts (rule 4): what to put back after it, or None when the turn runs on the session's model.
        ``note(why)`` records the switch.

        Raises:
            AgentError: the model cannot be opened (nothing was sent).
        """
        if wanted is None:
            return None
        from .trust import resolve_model

        spec = resolve_model(wanted[0], env=self.env, permission_mode=self.permission_mode, provider=self.provider)
        if spec == self.model_spec:
            return None
        saved: Saved = (self.model, self.model_spec, self.options, self.window)
        try:
            self.switch(spec)
        except AgentError as exc:
            raise AgentError(f"{wanted[1]}: model {wanted[0]!r}: {exc}") from None
        note(f"front matter of {wanted[1]}, for this turn")
        return saved

    def restore(self, saved: Saved | None, note: Callable[[str], None]) -> None:
        """After a turn that ran on a command's model: the session's model again, recorded."""
        if saved is None:
            return
        self.model, self.model_spec, self.options, self.window = saved
        note("the command's turn ended")


def _prices(price_sources: Sequence[SettingsSource]) -> PriceTable:
    """The built-in table with each settings file's ``"prices"`` laid over it (user, project, local)."""
    from ..config.settings import prices_from_settings

    try:
        return prices_from_settings(price_sources)
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
