"""The agent's settings, read once: every source parsed into one frozen ``AgentSettings``.

``read_settings`` loads the settings files as folder trust lets them apply
(``agent/trust.py`` filters each source first), adds the command line's layer
(``--settings``, ``--mcp-config``), lays the command-line flags over them, and
parses every key the agent itself decides on: the step limit, the spend cap and
where it came from, the permission mode (and whether managed settings force it),
the session's durability, Bash's timeouts, the context window, the loop check.
Nothing reads a raw key of these afterwards; the parts that own a section of
their own (permission rules, the sandbox, hooks, MCP servers, the model's
options) get ``sources``, the filtered list, from here.

Rules:

1. Managed settings beat the command line, which beats the other files
   (``permissions.defaultMode``, ``model``); a flag a managed setting overrides
   is named in a warning.
2. A bad value stops the agent with one line (``AgentError``) naming the key
   and the source; nothing falls back to a wider default.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..config.settings import ConfigError, Scope, SettingsSource, merged, written_by_commands
from .errors import AgentError
from .permissions.modes import MODES
from .session.store import Durability
from .trust import TrustDecision, TrustQuestion

__all__ = ["DEFAULT_MAX_USD_MICROS", "AgentSettings", "SettingsFlags", "cap_text", "model_text", "read_settings"]

log = logging.getLogger("agentloop.agent")

DEFAULT_MAX_USD_MICROS = 5_000_000
"""A session's spend cap when neither --max-usd nor maxUsd in settings gives one ($5, as seed 004's cost controller)."""

CYCLE = ("default", "acceptEdits", "plan")
"""What Shift+Tab goes through (and bypassPermissions after them when the session started in it)."""


@dataclass(frozen=True, kw_only=True)
class SettingsFlags:
    """What the command line (or a front end) says about settings; None: not given. Built by keyword only:
    fifteen fields of like types are never matched by position."""

    trust: bool | None = None
    ask_trust: Callable[[TrustQuestion], bool] | None = None
    ask_mcp_server: Callable[[str, str], bool] | None = None
    managed_settings: str | None = None
    cli_settings: Sequence[str] = ()
    mcp_configs: Sequence[str] = ()
    strict_mcp_config: bool = False
    max_steps: int | None = None
    max_usd_micros: int | None = None
    unlimited_usd: bool = False
    permission_mode: str | None = None
    model: str | Any | None = None
    add_dirs: Sequence[str] = ()
    shell_timeout_s: float | None = None
    durability: Durability | None = None


@dataclass(frozen=True)
class AgentSettings:
    """Every setting the agent runs with, parsed once (see the module's rules)."""

    sources: tuple[SettingsSource, ...]
    """The sources in effect, lowest precedence first: folder trust applied, the command line's layer added."""
    price_sources: tuple[SettingsSource, ...]
    """The user's and managed files only: prices never come from a folder."""
    env: Mapping[str, str]
    """The environment with the settings' ``env`` laid over it (for the provider, hooks and MCP servers)."""
    project_env: Mapping[str, str]
    """The variables of ``env`` whose value a project's settings file gave (name -> the file): a base URL among
    them receives no key of the user's (``providers/opening.py``, rule 4)."""
    host_env: Mapping[str, str]
    """The environment with only the user's and managed settings' ``env`` laid over it: what a process that runs
    on the host starts from (a user's hook, status line or ``apiKeyHelper``). A project's ``env`` is the
    project's; set on the host it would choose what the user's own programs run (``BASH_ENV``, ``PATH``,
    ``NODE_OPTIONS``... naming a file the model can rewrite), so it reaches only what runs in the sandbox."""
    trust: TrustDecision
    mcp_json_approved: frozenset[str]
    max_steps: int
    max_usd_micros: int | None
    cap_source: str
    """Where the spend cap came from: --max-usd, settings, default, or unlimited (on purpose)."""
    permission_mode: str
    mode_managed: bool
    """Managed settings force the mode: Shift+Tab leaves it as it is."""
    model: str | Any | None
    """The model given, unless managed settings name another; else a provider's model variable
    (``ANTHROPIC_MODEL``), else the settings' ``model``, else ``AGENTLOOP_MODEL``, else the default of a
    provider whose key is set (``providers.default_spec``); None when none is (the agent says so)."""
    api_key_helper: tuple[str, str, bool] | None
    """Claude Code's ``apiKeyHelper``: (the command, the file that set it, whether that file is a project's)."""
    model_source: str
    """Why that model: ``--model``, the variable or file that named it, or the provider whose key chose its default."""
    fallback_model: Any
    """``fallbackModel`` as written (the model choice resolves it, as ``--fallback-model``)."""
    model_settings: Mapping[str, Any]
    """The model options' keys (``MODEL_OPTION_KEYS``) as the settings give them, read once."""
    add_dirs: tuple[str, ...]
    durability: Durability
    shell_timeout_s: float
    shell_max_timeout_s: float | None
    context_window: int | None
    loop_threshold: int | None
    loop_check_model: Any
    """``loopCheckModel`` as written (``context.loop_check`` decides what it names)."""
    tool_result_cap: int
    subagents: bool
    subagent_isolation: str
    max_parallel_agents: int = 10  # MAX_PARALLEL_AGENTS (declared below the class)
    """Agent calls of one reply run at once, at most: Claude Code's ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY``."""
    warnings: tuple[str, ...] = field(default=())
    """Every entry skipped and every key not honoured, one line each (the CLI shows them)."""

    def mode_cycle(self) -> tuple[str, ...]:
        """Shift+Tab's modes: bypassPermissions only when the session started in it, as Claude Code does."""
        return CYCLE + (("bypassPermissions",) if self.permission_mode == "bypassPermissions" else ())

    def next_mode(self, mode: str) -> str:
        """The mode after ``mode`` in Shift+Tab's cycle (a managed mode stays as it is)."""
        if self.mode_managed:
            return mode
        cycle = self.mode_cycle()
        return cycle[(cycle.index(mode) + 1) % len(cycle)] if mode in cycle else "default"

    def model_setting(self, key: str) -> Any:
        """One of the model options' keys as the settings give it (``agent/model_options.py`` checks it)."""
        return self.model_settings.get(key)


def read_env(sources: Sequence[SettingsSource]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Claude Code's ``env`` key, read once from every source: the variables (the higher source overriding the
    lower name by name), those whose final value a project's file gave (name -> its path), and the variables of
    the user's own sources alone (what a process on the host starts with: no project's ``env``)."""
    merged: dict[str, str] = {}
    by_project: dict[str, str] = {}
    users: dict[str, str] = {}
    for s in sources:
        e = s.data.get("env")
        if not isinstance(e, dict):
            continue
        for k, v in e.items():
            merged[str(k)] = str(v)
            if s.in_project:
                by_project[str(k)] = s.path
            else:
                by_project.pop(str(k), None)
                users[str(k)] = str(v)
    return merged, by_project, users


def read_settings(cwd: str, home: str, env: Mapping[str, str], flags: SettingsFlags) -> AgentSettings:
    """The settings of an agent in ``cwd`` (see the module's rules).

    Raises:
        AgentError: a settings file, a command-line value or a setting is bad (one line).
    """
    from .trust import load_for_agent

    try:
        loaded = load_for_agent(
            cwd, home, env, trust=flags.trust, ask=flags.ask_trust, ask_server=flags.ask_mcp_server, managed=flags.managed_settings
        )
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    said = [w for s in loaded.sources for w in s.warnings]  # keys given twice in a settings file
    sources = _with_cli_sources(loaded.sources, flags.cli_settings, flags.mcp_configs, flags.strict_mcp_config, said,
                                writable=[cwd, *flags.add_dirs])
    said += loaded.warnings
    for w in said:
        log.warning("settings: %s", w)
    extra_env, env_by_project, users_env = read_env(sources)
    host_env = {**env, **users_env}
    if extra_env:  # Claude Code's "env": for the model's provider, hooks and MCP servers
        env = {**env, **extra_env}
    managed = [s for s in sources if s.scope == "managed"]
    max_usd, cap_source = _cap(flags, sources)
    mode, forced = _mode(flags.permission_mode, sources, managed, said)
    add_dirs = _add_dirs(cwd, flags.add_dirs)
    timeout, longest = _bash_timeouts(flags.shell_timeout_s, env, said)
    cap = merged(sources, "toolResultCap")
    threshold = merged(sources, "loopThreshold")
    return AgentSettings(
        sources=tuple(sources), price_sources=tuple(loaded.price_sources), env=env, project_env=env_by_project,
        host_env=host_env,
        trust=loaded.decision,
        mcp_json_approved=frozenset(loaded.decision.mcp_approved) if not flags.strict_mcp_config else frozenset(),
        max_steps=flags.max_steps if flags.max_steps is not None else _steps(merged(sources, "maxSteps")),
        max_usd_micros=max_usd, cap_source=cap_source, permission_mode=mode, mode_managed=forced,
        **_model(flags.model, managed, sources, env, said), api_key_helper=_key_helper(sources),
        fallback_model=merged(sources, "fallbackModel"), add_dirs=add_dirs,
        model_settings={k: v for k in MODEL_OPTION_KEYS if (v := merged(sources, k)) is not None},
        durability=_durability(flags.durability or merged(sources, "sessionDurability") or "flush"),
        shell_timeout_s=timeout, shell_max_timeout_s=longest, context_window=merged(sources, "contextWindow") or None,
        loop_threshold=5 if threshold is None else (int(threshold) if isinstance(threshold, int) and threshold > 0 else None),
        loop_check_model=merged(sources, "loopCheckModel"),
        tool_result_cap=cap if isinstance(cap, int) and cap > 0 else 400_000,
        subagents=merged(sources, "subagents") is not False,
        subagent_isolation="none" if merged(sources, "subagentIsolation") == "none" else "worktree",
        max_parallel_agents=_max_parallel(env, said),
        warnings=tuple(said),
    )


def model_text(model_spec: str, source: str) -> str | None:
    """Which model the session runs on and why (``AgentSettings.model_source``), for the banner and ``-p``'s
    stderr; None when ``--model`` named it (the user knows) or a front end gave a model object."""
    return None if source in ("--model", "none") else f"model {model_spec} ({source})"


def cap_text(max_usd_micros: int | None, cap_source: str) -> str:
    """The spend cap in force, for the banner, /cost and -p's stderr."""
    from ..budget import format_usd

    if max_usd_micros is None:
        return "no spend cap (unlimited, on purpose)"
    how = {
        "default": "the default; --max-usd X or \"maxUsd\" in settings to change, unlimited for none",
        "settings": "maxUsd in settings",
        "--max-usd": "--max-usd",
    }.get(cap_source, cap_source)
    return f"spend cap {format_usd(max_usd_micros)} ({how})"


def _cap(flags: SettingsFlags, sources: list[SettingsSource]) -> tuple[int | None, str]:
    """The spend cap and where it came from: unlimited on purpose, --max-usd, ``maxUsd``, else the default."""
    if flags.unlimited_usd:
        return None, "unlimited"
    if flags.max_usd_micros is not None:
        return flags.max_usd_micros, "--max-usd"
    v = merged(sources, "maxUsd")
    if v is None:
        return DEFAULT_MAX_USD_MICROS, "default"
    from ..config.settings import max_usd_micros

    try:
        return max_usd_micros(v), ("unlimited" if v == "unlimited" else "settings")
    except ValueError as exc:
        raise AgentError(f'settings maxUsd: {exc} (dollars, e.g. "5", or "unlimited")') from None


def _steps(v: Any) -> int:
    return 50 if v is None else int(v)


def _setting_mode(sources: Sequence[SettingsSource]) -> str | None:
    from .permissions.rules import default_mode

    try:
        mode: str | None = default_mode(sources)
        return mode
    except ConfigError as exc:
        raise AgentError(str(exc)) from None


def _mode(given: str | None, sources: list[SettingsSource], managed: list[SettingsSource], said: list[str]) -> tuple[str, bool]:
    """The permission mode: managed settings, else the command line, else the settings, else ``default``."""
    forced = _setting_mode(managed)  # managed settings beat the command line
    if forced is not None and given not in (None, forced):
        said.append(f"{managed[-1].path}: permissions.defaultMode {forced} is managed; --permission-mode {given} ignored")
    mode = forced or given or _setting_mode(sources) or "default"
    if mode not in MODES:
        raise AgentError(f"unknown permission mode {mode!r} (use one of: {', '.join(MODES)})")
    if mode == "bypassPermissions":  # Claude Code's permissions.disableBypassPermissionsMode: "disable"
        from .permissions.rules import bypass_disabled_by

        off = bypass_disabled_by(sources)
        if off is not None:
            raise AgentError(f"bypassPermissions mode is disabled by {off} (permissions.disableBypassPermissionsMode)")
    return mode, forced is not None


def _managed_model(model: str | Any | None, managed: list[SettingsSource], said: list[str]) -> str | Any | None:
    """The model given, unless managed settings name another (said in a warning)."""
    forced_model = merged(managed, "model")
    if isinstance(forced_model, str) and model is not None and model != forced_model:
        said.append(f"{managed[-1].path}: model {forced_model} is managed; --model ignored")
        return forced_model
    return model


MODEL_OPTION_KEYS = ("maxOutputTokens", "alwaysThinkingEnabled", "maxThinkingTokens", "effortLevel")
"""The settings keys ``agent/model_options.py`` reads (through ``AgentSettings.model_setting``)."""


def _key_helper(sources: Sequence[SettingsSource]) -> tuple[str, str, bool] | None:
    """The ``apiKeyHelper`` in force (the last source naming one wins) and where it was set."""
    for s in reversed(sources):
        v = s.data.get("apiKeyHelper")
        if isinstance(v, str) and v.strip():
            return v, s.path, s.in_project
    return None


def _model(flag: str | Any | None, managed: list[SettingsSource], sources: list[SettingsSource], env: Mapping[str, str],
           said: list[str]) -> dict[str, Any]:
    """``model`` and ``model_source``, in Claude Code's order (code.claude.com/docs/en/model-config, "Setting
    your model": the ``--model`` flag, then ``ANTHROPIC_MODEL``, then the settings' ``model``), managed settings
    above all, then agentloop's ``AGENTLOOP_MODEL``, then a default from the keys the environment holds."""
    from ..providers import default_spec, env_model

    given = _managed_model(flag, managed, said)
    forced = merged(managed, "model")
    if given is not None:
        return {"model": given, "model_source": "managed settings" if given is not flag else "--model"}
    if isinstance(forced, str) and forced:
        return {"model": forced, "model_source": f"managed settings ({managed[-1].path})"}
    found = env_model(env)
    if found is not None:
        return {"model": found[0], "model_source": found[1]}
    setting = merged(sources, "model")
    if setting:
        where = next((s.path for s in reversed(sources) if s.data.get("model")), "settings")
        return {"model": setting, "model_source": f"\"model\" in {where}"}
    if env.get("AGENTLOOP_MODEL"):
        return {"model": env["AGENTLOOP_MODEL"], "model_source": "AGENTLOOP_MODEL is set"}
    found = default_spec(env)
    return {"model": found[0] if found else None, "model_source": found[1] if found else "none"}


def _add_dirs(cwd: str, given: Sequence[str]) -> tuple[str, ...]:
    out = tuple(os.path.realpath(os.path.join(cwd, os.path.expanduser(d))) for d in given)
    for d in out:
        if not os.path.isdir(d):
            raise AgentError(f"--add-dir {d}: not a directory")
    return out


def _durability(d: Any) -> Durability:
    if d not in ("flush", "fsync"):
        raise AgentError(f"sessionDurability must be \"flush\" or \"fsync\", not {d!r}")
    return cast(Durability, d)


MAX_PARALLEL_AGENTS = 10
"""Agent calls of one reply run at once by default, as in Claude Code."""


def _positive_env(env: Mapping[str, str], name: str, said: list[str], unit: str) -> int | None:
    """A variable of the environment (or the settings' ``env``) read as a positive whole number; None when it is
    unset, and when it is something else (then said, naming it and ``unit``)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        v = int(str(raw).strip())
    except ValueError:
        v = 0
    if v <= 0:
        said.append(f"env {name}={raw!r} is not a positive {unit}; ignored")
        log.warning("settings: env %s=%r is not a positive %s; ignored", name, raw, unit)
        return None
    return v


def _max_parallel(env: Mapping[str, str], said: list[str]) -> int:
    """How many Agent calls of one reply run at once: ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY``, else 10."""
    return _positive_env(env, "CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", said, "whole number") or MAX_PARALLEL_AGENTS


def _bash_timeouts(given: float | None, env: Mapping[str, str], said: list[str]) -> tuple[float, float | None]:
    """Bash's default and longest timeouts: ``given``, else Claude Code's ``BASH_DEFAULT_TIMEOUT_MS`` and
    ``BASH_MAX_TIMEOUT_MS`` (the environment, or the settings' ``env``), else 2 and 10 minutes."""

    def ms(name: str) -> float | None:
        v = _positive_env(env, name, said, "number of milliseconds")
        return None if v is None else v / 1000

    longest = ms("BASH_MAX_TIMEOUT_MS")
    default = given if given is not None else (ms("BASH_DEFAULT_TIMEOUT_MS") or 120.0)
    return (min(default, longest) if longest is not None else default), longest


def _cli_json(value: str, flag: str, warnings: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """A command-line settings value: a JSON object, or the path of a file holding one (a key given
    twice: a line in ``warnings``, as for a settings file)."""
    from ..config.settings import check_max_usd, duplicate_keys_hook, read_config_bytes

    text, where = value, f"{flag} (the JSON given)"
    if not value.lstrip().startswith("{"):
        where = value
        try:  # a FIFO, a device or a giant is refused before it is read
            raw = read_config_bytes(value)
        except ConfigError as exc:
            raise AgentError(f"{flag} {exc}") from None
        if raw is None:
            raise AgentError(f"{flag} {value}: cannot read it: no such file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AgentError(f"{flag} {value}: not UTF-8 text: byte {raw[exc.start]:#04x} at offset {exc.start}") from None
    try:
        data = json.loads(text, object_pairs_hook=duplicate_keys_hook(where, warnings))
    except json.JSONDecodeError as exc:
        raise AgentError(f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise AgentError(f"{where}: not usable JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. a 5,000-digit integer, longer than Python will convert
        raise AgentError(f"{where}: not usable JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise AgentError(f"{where}: must be a JSON object")
    try:
        check_max_usd(where, data)
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    return where, data


def _with_cli_sources(
    sources: list[SettingsSource], settings: Sequence[str], mcp_configs: Sequence[str], strict: bool, warnings: list[str] | None = None,
    *, writable: Sequence[str] = (),
) -> list[SettingsSource]:
    """The settings with Claude Code's command-line layer added: ``--settings`` (a file or JSON) and
    ``--mcp-config`` (``{"mcpServers": ...}`` files or JSON) sit above the project's files and below
    managed settings, as the user's own (so folder trust does not apply to them). With
    ``--strict-mcp-config`` only the ``--mcp-config`` servers are used.

    A ``--settings`` file in a ``writable`` folder (the workspace, an added directory) is one the model and
    sandboxed commands may have written since the user last looked: it counts as a project's file (scope
    ``local``), so what it starts runs as a project's does (hooks, status line and key helper confined, its
    ``env`` kept from the host, its ``UnsandboxedBash`` rules ignored), and a line says so."""
    if not settings and not mcp_configs and not strict:
        return sources
    from .trust import sanitize

    extra: list[SettingsSource] = []
    said: list[str] = [] if warnings is None else warnings
    for v in settings:
        where, data = _cli_json(v, "--settings", said)
        scope: Scope = "user"
        if not v.lstrip().startswith("{") and written_by_commands(v, writable):
            scope = "local"
            said.append(f"{where}: --settings names a file inside the workspace, which sandboxed commands can write: "
                        "what it starts runs as a project's settings do (in the sandbox, without your keys)")
        clean, notes = sanitize(SettingsSource(where, scope, data))
        said += notes
        if "prices" in clean.data:
            said.append(f"{where}: prices: prices come from your own settings files and --price, not from --settings; ignored")
        extra.append(clean)
    servers: dict[str, Any] = {}
    for v in mcp_configs:
        where, data = _cli_json(v, "--mcp-config", said)
        got = data.get("mcpServers")
        if not isinstance(got, dict):
            raise AgentError(f"{where}: an --mcp-config file holds {{\"mcpServers\": {{...}}}}")
        servers.update(got)
    base = list(sources)
    if strict:
        base = [SettingsSource(s.path, s.scope, {k: v for k, v in s.data.items() if k != "mcpServers"}, s.origin) for s in base]
    if servers:
        extra.append(SettingsSource("--mcp-config", "user", {"mcpServers": servers}))
    managed = [s for s in base if s.scope == "managed"]
    return [s for s in base if s.scope != "managed"] + extra + managed
