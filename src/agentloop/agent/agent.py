"""The terminal agent: settings, model, tools, permissions, memory and a session, wired.

``Agent.ask(prompt)`` runs one user turn through ``agentloop.run.run`` with
the session's messages, the session as the transcript sink, and an executor
that checks permissions before ``Registry.invoke``. The REPL, ``-p`` and
``agentloop run`` are all thin drivers of this one class.

Extension points (the hooks and context layers plug in here, nowhere else;
``agent/builder.py`` makes them and the constructor takes them as its own, so
nothing sets them from outside; their methods are declared in ``agent/protocols.py``):

- ``Agent.hooks`` is an ``AgentHooks`` (default ``NoHooks``). Its methods are
  called at SessionStart (``session_start``), UserPromptSubmit
  (``user_prompt_submit``, may rewrite or block the prompt), PreToolUse
  (``pre_tool_use``, may deny or rewrite a call; permission rules still apply
  after a hook's allow), PostToolUse (``post_tool_use``, may replace the
  result), Stop (``stop``) and SessionEnd (``session_end``). Hooks may append
  their own records through ``agent.record(kind, payload)``.
- ``Agent.context`` is a ``ContextManager`` (default ``NoContext``):
  ``prepare(messages)`` returns what the next run starts from (masking, auto
  compaction) and ``compact(messages, instructions)`` serves ``/compact``.
- ``Agent.extra_tools`` (a list of ``Tool``) is merged into the registry when
  the registry is (re)built: MCP tools and sub-agents register there.
- Every tool call, the agent's and its sub-agents', goes through one
  ``ToolPipeline`` (``agent/pipeline.py``).

Rules:

1. Every fact about the session goes into its chain: ``session_start`` (model,
   memory files loaded, permission mode), each run's records, ``session_cost``
   after each turn, ``session_end``.
2. ``ask`` never raises for the model's or a tool's failure: they are the
   run's stop reason. Ctrl+C in a turn ends it as ``interrupted``.
3. Without a way to ask (no terminal), ``ask`` permissions mean deny.
"""

from __future__ import annotations

import contextvars
import logging
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast

from ..budget import Budget, PriceTable, session_budget
from ..config.settings import ConfigError, SettingsSource, agentloop_home, merged, user_home
from ..conversation import close_dangling_calls
from ..events import (
    Message,
    Observed,
    Observer,
    ToolCall,
    ToolFinished,
    ToolResult,
    ToolStarted,
    TurnRecorded,
)
from ..run import RunResult
from ..tools import Registry, Tool
from .pipeline import ToolPipeline
from .protocols import (
    AgentError,
    AgentHooks,
    AskPermission,
    ContextManager,
    NoContext,
    NoHooks,
    PermissionAnswer,
    PromptDecision,
)
from .session.store import Durability, Session, SessionError, latest_id
from .system_prompt import STATIC_PROMPT

if TYPE_CHECKING:
    from ..mcp.agent import McpServers
    from .builder import AgentParts
    from .model_options import ModelOptions

__all__ = [
    "Agent",
    "AgentError",
    "AgentHooks",
    "ContextManager",
    "NoContext",
    "NoHooks",
    "PermissionAnswer",
    "PromptDecision",
    "current_session_id",
]

log = logging.getLogger("agentloop.agent")

DEFAULT_MAX_USD_MICROS = 5_000_000
"""A session's spend cap when neither --max-usd nor maxUsd in settings gives one ($5, as seed 004's cost controller)."""

current_session_id: contextvars.ContextVar[str] = contextvars.ContextVar("agentloop_session_id", default="-")
"""The session every log line is tagged with (see ``SessionLogFilter``)."""


MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")

WARN_LEVELS = (0.80, 0.95)

SYSTEM_PROMPT = STATIC_PROMPT
"""The static part of the system prompt (``agent/system_prompt.py``): the same bytes in every session."""


def merged_env(sources: Sequence[SettingsSource]) -> dict[str, str]:
    """Claude Code's ``env`` key of every source, the higher overriding the lower name by name."""
    out: dict[str, str] = {}
    for s in sources:
        e = s.data.get("env")
        if isinstance(e, dict):
            out.update({str(k): str(v) for k, v in e.items()})
    return out


# --- the agent -----------------------------------------------------------------


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


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
) -> Any:
    """A model from a spec, opened by its provider (``providers.PROVIDERS``: ``scripted:PATH``,
    ``openai:NAME``, ``anthropic:NAME``).

    ``prices`` (the session's table, built-in plus settings) prices the model and
    its fallback, so a dearer fallback gets only the output tokens the call's
    reservation pays for. ``options`` are more provider options (thinking, effort).
    ``default_fallback``: with no ``fallback``, the provider's default for overload (``providers.default_fallback``).

    Raises:
        AgentError: the spec cannot be opened (the provider's message, one line).
    """
    from ..providers import OpenArgs, ProviderConfigError, open_spec

    args = OpenArgs(base_url=base_url, api_key_env=api_key_env, fallback=fallback, env=env, on_notice=on_notice,
                    prices=prices, options=dict(options or {}) if not spec.startswith("scripted:") else {},
                    default_fallback=default_fallback)
    try:
        return open_spec(spec, args)
    except ProviderConfigError as exc:
        raise AgentError(str(exc)) from None


def scripted_model(path: str) -> Any:
    """An offline model that answers from a script file, in order (the ``scripted`` provider).

    Raises:
        AgentError: the file is unreadable or not a script, naming the place.
    """
    return open_model_spec(f"scripted:{path}")


def _cli_json(value: str, flag: str, warnings: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """A command-line settings value: a JSON object, or the path of a file holding one (a key given
    twice: a line in ``warnings``, as for a settings file)."""
    import json

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
    sources: list[SettingsSource], settings: Sequence[str], mcp_configs: Sequence[str], strict: bool, warnings: list[str] | None = None
) -> list[SettingsSource]:
    """The settings with Claude Code's command-line layer added: ``--settings`` (a file or JSON) and
    ``--mcp-config`` (``{"mcpServers": ...}`` files or JSON) sit above the project's files and below
    managed settings, as the user's own (so folder trust does not apply to them). With
    ``--strict-mcp-config`` only the ``--mcp-config`` servers are used."""
    if not settings and not mcp_configs and not strict:
        return sources
    from .trust import sanitize

    extra: list[SettingsSource] = []
    said: list[str] = [] if warnings is None else warnings
    for v in settings:
        where, data = _cli_json(v, "--settings", said)
        clean, notes = sanitize(SettingsSource(where, "user", data))
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


class SessionLogFilter(logging.Filter):
    """Stamps each log record with the current session id (``%(session_id)s``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "session_id"):
            record.session_id = current_session_id.get()
        return True


def setup_logging(home: str, *, verbose: bool = False) -> None:
    """Log to ``<home>/logs/agentloop.log`` (and stderr when verbose), every line with its session id."""
    root = logging.getLogger("agentloop")
    if getattr(root, "_agentloop_configured", False):
        return
    fmt = logging.Formatter("%(asctime)s %(levelname)s session=%(session_id)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    from ..config.private import private_dirs, private_file, private_home

    tightened = private_home(home)  # 0700, said when it was open to others
    try:
        log_path = os.path.join(home, "logs", "agentloop.log")
        private_dirs(os.path.dirname(log_path))
        os.close(private_file(log_path))  # created 0600 before the handler opens it
        handlers.append(logging.FileHandler(log_path, encoding="utf-8"))
    except OSError:
        pass
    if verbose:
        handlers.append(logging.StreamHandler())
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(SessionLogFilter())
        root.addHandler(h)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    root._agentloop_configured = True  # type: ignore[attr-defined]
    if tightened:
        root.warning(tightened)


@dataclass
class UsageWarning:
    """A threshold crossed: ``what`` ("budget" or "context window") at ``level`` (0.8, 0.95)."""

    what: str
    level: float
    text: str


class Agent:
    """One terminal-agent session: ask it prompts, read its stats, close it.

    Raises (from the constructor):
        AgentError: a bad model spec, settings file, mode or budget.
        SessionError / SessionBusy: the session cannot be opened.
    """

    def __init__(
        self,
        *,
        cwd: str,
        model: str | Any | None = None,
        home: str | None = None,
        env: Mapping[str, str] | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        fallback: str | None = None,
        max_usd_micros: int | None = None,
        max_steps: int | None = None,
        permission_mode: str | None = None,
        add_dirs: Sequence[str] = (),
        resume: str | None = None,
        continue_last: bool = False,
        durability: Durability | None = None,
        ask_permission: AskPermission | None = None,
        shell_timeout_s: float | None = None,
        registry: Registry | None = None,
        trust: bool | None = None,
        ask_trust: Callable[[Any], bool] | None = None,
        ask_mcp_server: Callable[[str, str], bool] | None = None,
        ask_imports: Callable[[list[str]], bool] | None = None,
        managed_settings: str | None = None,
        cli_rules: Sequence[tuple[str, str]] = (),
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        tracing: Any = None,
        sandbox: str | None = None,
        unlimited_usd: bool = False,
        price: Any = None,
        cli_settings: Sequence[str] = (),
        mcp_configs: Sequence[str] = (),
        strict_mcp_config: bool = False,
        mcp_in_background: bool = False,
        max_output_tokens: int | None = None,
        thinking: str | None = None,
        effort: str | None = None,
    ):
        self.cwd = os.path.realpath(cwd)
        self.mcp_in_background = mcp_in_background
        """Start MCP servers without waiting for them (the REPL); their tools join as each comes up."""
        self._init_front_end(env, home, ask_permission, cli_rules, system_prompt, append_system_prompt, tracing)
        self._load_settings(trust, ask_trust, ask_mcp_server, managed_settings, cli_settings, mcp_configs, strict_mcp_config)
        managed = [s for s in self.sources if s.scope == "managed"]
        self._init_limits(max_steps, max_usd_micros, unlimited_usd)
        self._init_mode(permission_mode, managed)
        self._init_dirs(add_dirs)
        self.base_url = base_url
        self.api_key_env = api_key_env
        self._init_bash_timeouts(shell_timeout_s)
        self._option_flags = (max_output_tokens, thinking, effort)
        """--max-output-tokens, --thinking, --effort as given: resolved again when the model changes."""
        self._init_model(self._managed_model(model, managed), price, fallback)
        self._init_secrets()
        self.sandbox_mode = sandbox
        self._init_sandbox()
        self._check_price()
        self.window = context_window(self.model_name, self._setting("contextWindow", None))
        self._given_registry = registry
        self.ask_imports = ask_imports
        """Asks once whether memory files may import from outside the workspace (the REPL); None: refused."""
        self._init_files()
        # The session, last: everything above can fail without leaving a file.
        self.durability: Durability = self._durability(durability)
        if continue_last and resume is None:
            resume = latest_id(self.cwd, self.home)  # none yet: a new session, as Claude Code's -c starts one
            if resume is None:
                self.startup_notices.append("-c: no earlier session in this directory to continue; starting a new one")
        from .builder import build_parts

        self._take(build_parts(self, resume))  # hooks, context management, loop check, the Agent tool, MCP servers, session
        self._build_tools()

    def _init_front_end(
        self,
        env: Mapping[str, str] | None,
        home: str | None,
        ask_permission: AskPermission | None,
        cli_rules: Sequence[tuple[str, str]],
        system_prompt: str | None,
        append_system_prompt: str | None,
        tracing: Any,
    ) -> None:
        """What the front end gives (environment, home, prompts, tracing) and the per-session state that starts empty."""
        self.cli_rules = list(cli_rules)
        """(behavior, rule) from --allowedTools / --disallowedTools: added after the settings' rules."""
        self.system_override = system_prompt
        self.system_append = append_system_prompt
        self.tracing = tracing
        """An ``agentloop.telemetry.Tracing``, or None: each run (and sub-agent run) is traced into it."""
        self.permission_denials: list[dict[str, Any]] = []
        """Calls the permission system refused (Claude Code's ``permission_denials``)."""
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.home = home or agentloop_home(self.env)
        from ..config.private import private_home

        self.home_notice = private_home(self.home)
        """Said once at start when agentloop's home was open to others (it is 0700 from here on)."""
        self.ask_permission = ask_permission
        self._unreported = 0
        """Replies of the current run that reported no usage (their tokens are the loop's estimate)."""
        self.last_usage_estimated = False
        """The last turn's tokens include such an estimate (the cost line says so)."""
        self.hooks: AgentHooks = NoHooks()
        self.context: ContextManager = NoContext()
        self.extra_tools: list[Tool] = []
        self.warned: set[tuple[str, float]] = set()
        self.session_allow: set[str] = set()
        """Rules the user added for the rest of this session ("always")."""
        self.stop_hook_active = False
        """While ``hooks.stop`` runs: True when the turn is already going on because of a Stop hook."""
        self.on_notice: Callable[[str], None] | None = None
        """Where provider notices (retries, a fallback taking over) are shown; they are always logged."""
        self.elicit: Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None = None
        """Set by a front end that can ask the user an MCP server's question (the REPL); else they are declined."""
        self.on_mcp_progress: Callable[[str, str, str], None] | None = None
        """Set by a front end that shows an MCP tool's progress notifications."""
        self._turn_grants: list[Any] = []
        self._next_denies: tuple[str, ...] = ()
        self._next_model: tuple[str, str] | None = None
        """A command's front matter ``model`` and what asked for it, for the turn it starts."""
        """A command's ``disallowed-tools``, set by ``expand_command``: deny rules for the next turn only."""
        self._current_call: str | None = None
        self._git_facts: tuple[str | None] | None = None
        """The environment block's git snapshot, taken once a session (None: not yet)."""
        from .tools.session_tools import SessionLink

        self.session_link = SessionLink(
            ask=lambda: self.elicit, plan_mode=lambda: self.policy.mode == "plan", leave_plan=self._leave_plan_mode
        )
        """What TodoWrite, ExitPlanMode and AskUserQuestion reach: the form prompt, the mode, the task list (``todos``)."""

    def _load_settings(
        self,
        trust: bool | None,
        ask_trust: Callable[[Any], bool] | None,
        ask_mcp_server: Callable[[str, str], bool] | None,
        managed_settings: str | None,
        cli_settings: Sequence[str],
        mcp_configs: Sequence[str],
        strict_mcp_config: bool,
    ) -> None:
        """The settings files as folder trust lets them apply, the command line's beside them, and their ``env``."""
        from .trust import load_for_agent

        try:
            loaded = load_for_agent(
                self.cwd, self.home, self.env, trust=trust, ask=ask_trust, ask_server=ask_mcp_server, managed=managed_settings
            )
        except ConfigError as exc:
            raise AgentError(str(exc)) from None
        read = [w for s in loaded.sources for w in s.warnings]  # keys given twice in a settings file
        self.sources: list[SettingsSource] = _with_cli_sources(loaded.sources, cli_settings, mcp_configs, strict_mcp_config, read)
        self.price_sources = loaded.price_sources
        self.config_warnings: list[str] = read + loaded.warnings
        """Every entry skipped and every key not honoured, one line each (the CLI shows them)."""
        self.trust = loaded.decision
        """Folder trust: ``trust.notice()`` is the one line saying what was left out."""
        self.mcp_json_approved = set(loaded.decision.mcp_approved) if not strict_mcp_config else set()
        for w in self.config_warnings:
            log.warning("settings: %s", w)
        settings_env = merged_env(self.sources)
        if settings_env:  # Claude Code's "env": for the model's provider, hooks and MCP servers
            self.env = {**self.env, **settings_env}

    def _init_bash_timeouts(self, given: float | None) -> None:
        """Bash's default and longest timeouts: ``given``, else Claude Code's ``BASH_DEFAULT_TIMEOUT_MS`` and
        ``BASH_MAX_TIMEOUT_MS`` (the environment, or the settings' ``env``), else 2 and 10 minutes."""

        def ms(name: str) -> float | None:
            raw = self.env.get(name)
            if raw is None or raw == "":
                return None
            try:
                v = int(str(raw).strip())
            except ValueError:
                v = 0
            if v <= 0:
                self.config_warnings.append(f"env {name}={raw!r} is not a positive number of milliseconds; ignored")
                log.warning("settings: env %s=%r is not a positive number of milliseconds; ignored", name, raw)
                return None
            return v / 1000

        longest = ms("BASH_MAX_TIMEOUT_MS")
        default = given if given is not None else (ms("BASH_DEFAULT_TIMEOUT_MS") or 120.0)
        self.shell_max_timeout_s: float | None = longest
        self.shell_timeout_s = min(default, longest) if longest is not None else default

    def _init_limits(self, max_steps: int | None, max_usd_micros: int | None, unlimited_usd: bool) -> None:
        """The step limit and the spend cap, and where the cap came from."""
        self.max_steps = max_steps if max_steps is not None else int(self._setting("maxSteps", 50))
        self.cap_source = "--max-usd"
        """Where the spend cap came from: --max-usd, settings, the default, or unlimited (on purpose)."""
        if unlimited_usd:
            self.max_usd_micros: int | None = None
            self.cap_source = "unlimited"
        elif max_usd_micros is not None:
            self.max_usd_micros = max_usd_micros
        else:
            self.max_usd_micros, self.cap_source = self._setting_usd()

    def _init_mode(self, permission_mode: str | None, managed: list[SettingsSource]) -> None:
        """The permission mode: managed settings, else the command line, else the settings, else ``default``."""
        forced_mode = self._setting_mode(managed)  # managed settings beat the command line
        if forced_mode is not None and permission_mode not in (None, forced_mode):
            self.config_warnings.append(f"{managed[-1].path}: permissions.defaultMode {forced_mode} is managed; --permission-mode {permission_mode} ignored")
        mode = forced_mode or permission_mode or self._setting_mode() or "default"
        if mode not in MODES:
            raise AgentError(f"unknown permission mode {mode!r} (use one of: {', '.join(MODES)})")
        if mode == "bypassPermissions":  # Claude Code's permissions.disableBypassPermissionsMode: "disable"
            off = [s.path for s in self.sources if isinstance(s.data.get("permissions"), dict)
                   and s.data["permissions"].get("disableBypassPermissionsMode") == "disable"]
            if off:
                raise AgentError(f"bypassPermissions mode is disabled by {off[-1]} (permissions.disableBypassPermissionsMode)")
        self.permission_mode = mode
        self._mode_managed = forced_mode is not None
        self._cycle = ("default", "acceptEdits", "plan", *(("bypassPermissions",) if mode == "bypassPermissions" else ()))
        """What Shift+Tab goes through: bypassPermissions only when the session started in it, as Claude Code does."""

    def cycle_mode(self) -> str:
        """The next permission mode of Shift+Tab's cycle, now in force (a managed mode stays as it is)."""
        if self._mode_managed:
            return self.permission_mode
        cur = self.permission_mode
        nxt = self._cycle[(self._cycle.index(cur) + 1) % len(self._cycle)] if cur in self._cycle else "default"
        self.policy.set_mode(nxt)
        self.permission_mode = nxt
        return nxt

    def _managed_model(self, model: str | Any | None, managed: list[SettingsSource]) -> str | Any | None:
        """The model given, unless managed settings name another (said in a warning)."""
        forced_model = merged(managed, "model")
        if isinstance(forced_model, str) and model is not None and model != forced_model:
            self.config_warnings.append(f"{managed[-1].path}: model {forced_model} is managed; --model ignored")
            return forced_model
        return model

    def _init_dirs(self, add_dirs: Sequence[str]) -> None:
        self.add_dirs = [os.path.realpath(os.path.join(self.cwd, os.path.expanduser(d))) for d in add_dirs]
        for d in self.add_dirs:
            if not os.path.isdir(d):
                raise AgentError(f"--add-dir {d}: not a directory")

    def _init_model(self, model: str | Any | None, price: Any, fallback: str | None) -> None:
        """The price table, the model (opened) and its fallback."""
        from ..model_description import describe
        from .trust import resolve_model

        self.prices = self._prices()
        spec = model if model is not None else (merged(self.sources, "model") or self.env.get("AGENTLOOP_MODEL"))
        if spec is None:
            raise AgentError("no model configured: pass --model (e.g. scripted:replies.json) or set \"model\" in settings")
        if isinstance(spec, str):
            spec = resolve_model(spec, env=self.env, permission_mode=self.permission_mode)
        self.price_given = price
        """A ``Price`` from ``--price`` for the model given (it replaces the table's, or gives one to an unknown model)."""
        if price is not None:  # a model object (the scripted, or rewind's that calls nothing) is priced by its name
            self.prices = self.prices.merged({spec.split(":", 1)[-1] if isinstance(spec, str) else describe(spec).name: price})
        self.price_notices: list[str] = []
        """Lines to show once: a model billed at the highest known price because it has none."""
        self.model_spec = spec if isinstance(spec, str) else describe(spec).name
        self.fallback = fallback if fallback is not None else merged(self.sources, "fallbackModel")
        if isinstance(self.fallback, str):
            self.fallback = resolve_model(self.fallback, env=self.env, permission_mode=self.permission_mode)
        self.model_options: ModelOptions = self._resolve_options(self.model_spec)
        self.model = self._open(spec) if isinstance(spec, str) else spec
        if self.fallback is None and describe(self.model).fallbacks:  # the provider's default, for overload only
            self.price_notices.append(f"{spec} falls back to {describe(self.model).fallbacks[0].name} when overloaded (529), "
                                      f"by default; --fallback-model (or \"fallbackModel\" in settings) to choose another")

    def _resolve_options(self, spec: str) -> ModelOptions:
        """The output budget, thinking and effort for ``spec`` (``agent/model_options.py``)."""
        from .model_options import OptionError, resolve_options

        mot, thinking, effort = self._option_flags
        name = spec.split(":", 1)[-1]
        try:
            return resolve_options(
                spec, max_output_tokens=mot, thinking=thinking, effort=effort, setting=lambda k: merged(self.sources, k),
                env=self.env, cap_micros=self.max_usd_micros, output_price=self.prices.resolve(name).output,
            )
        except OptionError as exc:
            raise AgentError(str(exc)) from None

    def _init_files(self) -> None:
        """Memory files, custom commands and skills: read once at start."""
        self.memory_files: list[str] = []
        self.memory_text = ""
        self._load_memory()
        self.commands: dict[str, Any] = {}
        self.skills: dict[str, Any] = {}
        self.load_warnings: list[str] = []
        """What could not be honoured as written in the files read at start (shown by the CLI)."""
        self._load_commands()

    def _durability(self, given: Durability | None) -> Durability:
        d = given or self._setting("sessionDurability", "flush")
        if d not in ("flush", "fsync"):
            raise AgentError(f"sessionDurability must be \"flush\" or \"fsync\", not {d!r}")
        return cast(Durability, d)

    def _take(self, parts: AgentParts) -> None:
        """The parts ``agent/builder.py`` made, as this agent's own (nothing else sets them); the session started."""
        self.hooks = parts.hooks
        self.context = parts.context
        self.extra_tools = parts.tools
        self.loop_threshold = parts.loop_threshold
        self.mcp_servers: McpServers | None = parts.mcp_servers
        """The MCP servers (``agentloop.mcp.agent.McpServers``), or None when none is configured."""
        self.mcp = None if self.mcp_servers is None else self.mcp_servers.manager
        """Their ``McpManager`` (sign-in, prompts, resources), or None."""
        for w in parts.warnings:
            if w not in self.config_warnings:  # shown with the settings' other warnings
                self.config_warnings.append(w)
        assert parts.session is not None  # build_parts opens it or raises
        if parts.session.repaired is not None:
            self._notice(parts.session.repaired.describe())
        self._start_session(parts.session, parts.session_source)

    # -- secrets and the sandbox --

    def _held_keys(self) -> dict[str, str]:
        """The provider keys this agent holds: ``{what: value}``."""
        out: dict[str, str] = {}
        m: Any = self.model
        seen = 0
        while m is not None and seen < 4:
            key = getattr(getattr(m, "target", None), "api_key", None)
            if isinstance(key, str) and key:
                out.setdefault(key, f"{getattr(m, 'vendor', 'provider')} API key")
            m = getattr(m, "fallback", None)
            seen += 1
        if self.api_key_env and self.env.get(self.api_key_env):
            out.setdefault(self.env[self.api_key_env], self.api_key_env)
        return {name: key for key, name in out.items()}

    def _init_secrets(self) -> None:
        """What children get (``child_env``) and what tool output hides (``redactor``). See ``sandbox.child_env``."""
        from . import spawn
        from .sandbox.child_env import Redactor, secret_env_values

        held = self._held_keys()
        self.redactor = Redactor(secret_env_values(self.env))
        self.redactor.add(held)
        self.allowed_env, self.env_warnings = spawn.allowed_names(self.sources)
        """Secret-named variables the user's settings hand to children (``allowedEnvVars``), and what was not honoured."""
        self.child_env: spawn.ChildEnv = spawn.environment(
            self.env, allowed=self.allowed_env, drop=[self.api_key_env] if self.api_key_env else [], held=held.values()
        )

    def _init_sandbox(self) -> None:
        from .sandbox import bubblewrap as sbx

        try:
            self.sandbox_settings: sbx.SandboxSettings = sbx.settings_from(
                self.sources, mode=self.sandbox_mode, cwd=self.cwd, user_home=sbx.user_home_of(self.env)
            )
            self.sandbox: sbx.Sandbox = sbx.Sandbox.create(
                self.sandbox_settings, roots=[self.cwd, *self.add_dirs], agentloop_home=self.home,
                user_home=sbx.user_home_of(self.env), runtime_dir=self.env.get("XDG_RUNTIME_DIR"),
            )
        except (ValueError, sbx.SandboxUnavailable) as exc:
            raise AgentError(str(exc)) from None
        self.startup_notices: list[str] = [f"sandbox: {w}" for w in self.sandbox_settings.warnings]
        self.startup_notices += self.env_warnings
        if self.home_notice:
            self.startup_notices.append(self.home_notice)
        """Said once when the agent starts (sandbox settings not honoured, no sandbox available)."""
        notice = self.sandbox.unavailable_notice()
        if notice:
            self.startup_notices.append(notice)
        for n in self.startup_notices:
            log.warning(n)

    def _redact_result(self, r: ToolResult) -> ToolResult:
        red = self.redactor
        if not len(red):
            return r
        content, error = red.value(r.content), (red.text(r.error) if isinstance(r.error, str) else r.error)
        if content is r.content and error == r.error:
            return r
        return ToolResult(r.call_id, r.name, r.ok, content=content, error=error, detail=r.detail)

    def _note_secret_args(self, t: Tool, call: ToolCall) -> None:
        """Values of a call's secret arguments: hidden from every later tool output too."""
        if not (t.sensitive or t.secret_args):
            return
        from ..redact import Policy

        found: list[str] = []
        try:
            Policy.from_manifest([t.manifest_entry()], None, 1 << 30).call_arguments(call.name, call.arguments, found)
        except ValueError:
            return
        self.redactor.add_values(f"secret argument of {call.name}", found)

    # -- settings helpers --

    def _setting(self, key: str, default: Any) -> Any:
        v = merged(self.sources, key)
        return default if v is None else v

    def _setting_usd(self) -> tuple[int | None, str]:
        """The cap from settings (``maxUsd``: dollars, or ``"unlimited"``), else the default."""
        v = merged(self.sources, "maxUsd")
        if v is None:
            return DEFAULT_MAX_USD_MICROS, "default"
        if v == "unlimited":
            return None, "unlimited"
        from ..budget import usd

        try:
            return usd(str(v)), "settings"
        except ValueError as exc:
            raise AgentError(f'settings maxUsd: {exc} (dollars, e.g. "5", or "unlimited")') from None

    def cap_text(self) -> str:
        """The spend cap in force, for the banner, /cost and -p's stderr."""
        from ..budget import format_usd

        if self.max_usd_micros is None:
            return "no spend cap (unlimited, on purpose)"
        how = {
            "default": "the default; --max-usd X or \"maxUsd\" in settings to change, unlimited for none",
            "settings": "maxUsd in settings",
            "--max-usd": "--max-usd",
        }.get(self.cap_source, self.cap_source)
        return f"spend cap {format_usd(self.max_usd_micros)} ({how})"

    def _check_price(self) -> None:
        """A line for each model (the fallback too) that has no price: it is billed at the highest one."""
        from ..budget import format_usd
        from ..model_description import describe

        for name in [self.model_name, *(f.name for f in describe(self.model).fallbacks)]:
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

    def take_price_notices(self) -> list[str]:
        """The unknown-price lines not shown yet (each is shown once)."""
        out, self.price_notices = self.price_notices, []
        return out

    def _setting_mode(self, sources: list[SettingsSource] | None = None) -> str | None:
        """``permissions.defaultMode`` of the highest source that sets it (a file's ``permissions``
        without one does not hide a lower file's: Claude Code merges settings key by key)."""
        mode = None
        for s in self.sources if sources is None else sources:
            perms = s.data.get("permissions")
            if isinstance(perms, dict) and isinstance(perms.get("defaultMode"), str):
                mode = str(perms["defaultMode"])
        return mode

    def _prices(self) -> PriceTable:
        """The built-in table with each settings file's ``"prices"`` laid over it (user, project, local)."""
        from ..config.settings import prices_from_settings

        try:
            return prices_from_settings(self.price_sources)
        except ConfigError as exc:
            raise AgentError(str(exc)) from None

    def _open(self, spec: str) -> Any:
        return open_model_spec(
            spec,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            fallback=self.fallback,
            env=self.env,
            on_notice=self._notice,
            prices=self.prices,
            options=self.model_options.provider_options(),
            default_fallback=True,
        )

    def _notice(self, text: str) -> None:
        log.warning("provider: %s", text)
        if self.on_notice is not None:
            self.on_notice(text)

    @property
    def model_name(self) -> str:
        from ..model_description import describe

        return describe(self.model, self.model_spec).name

    # -- sibling modules, loaded when present --

    def _load_memory(self) -> None:
        from .session.memory import load_memory, render_memory

        files = load_memory(self.cwd, self.home, user_home=self.env.get("HOME") or os.path.expanduser("~"),
                            roots=self.add_dirs, external=self._external_imports)
        self.memory_files = [f.path for f in files if f.text]
        self.memory_text = render_memory(files)
        for f in files:
            if not f.text and ("never read" in f.reason or "not a regular file" in f.reason):
                n = f"memory: {f.path}: {f.reason.rsplit('skipped: ', 1)[-1]}; skipped"
                self.startup_notices.append(n)
                log.warning(n)
        waiting = [f.path for f in files if not f.text and "not approved" in f.reason]
        if waiting:
            n = f"memory: {len(waiting)} import(s) from outside the workspace not loaded ({', '.join(waiting[:3])}"
            n += ", ...)" if len(waiting) > 3 else ")"
            n += "; approve them once in the REPL" if self.ask_imports is None else ""
            self.startup_notices.append(n)
            log.warning(n)

    def _external_imports(self, paths: list[str]) -> bool:
        """Whether this folder's memory files may import ``paths`` from outside: the answer given once, kept per folder.

        Claude Code asks once per project whether to allow external imports
        of CLAUDE.md files and keeps the answer; so does agentloop, in
        ``AGENTLOOP_HOME/memory-imports.json``. Without a way to ask (``-p``,
        ACP) they stay out until the user said yes once.
        """
        import json

        path = os.path.join(self.home, "memory-imports.json")
        try:
            with open(path, encoding="utf-8") as f:
                known = json.load(f)
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        if isinstance(known.get(self.cwd), bool):
            return bool(known[self.cwd])
        if self.ask_imports is None:
            return False
        answer = bool(self.ask_imports(paths))
        known[self.cwd] = answer
        try:
            os.makedirs(self.home, mode=0o700, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(known, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("cannot remember the answer about memory imports in %s: %s", path, exc)
        return answer

    def _load_commands(self) -> None:
        from .commands import load_commands, load_skills

        uh = self.env.get("HOME") or os.path.expanduser("~")
        warnings: list[str] = []
        self.commands = dict(load_commands(self.cwd, self.home, uh, warnings))
        self.skills = dict(load_skills(self.cwd, self.home, uh, warnings))
        if not self.trust.trusted:  # an untrusted folder's commands and skills are text: their allowed-tools grant nothing
            from .trust import without_grants

            self.commands = without_grants(self.commands, self.home, uh)
            self.skills = without_grants(self.skills, self.home, uh)
        for w in warnings:
            log.warning(w)
        self.load_warnings.extend(warnings)

    def _build_tools(self) -> None:
        """The workspace, registry and policy; rebuilt when the session (and so its spill dir) changes."""
        from .commands import skill_tool
        from .permissions.rules import ModeError, PermissionPolicy
        from .tools.builtin import RunningProcesses, builtin_registry
        from .tools.session_tools import SESSION_TOOLS
        from .tools.workspace import Workspace

        try:
            self.policy = PermissionPolicy.from_settings(
                self.sources, mode=self.permission_mode, cwd=self.cwd, user_home=user_home(self.env)
            )
            for behavior, text in self.cli_rules:
                self.policy.add_rule(behavior, text, source="cliArg")  # type: ignore[arg-type]
        except (ConfigError, ModeError) as exc:
            raise AgentError(str(exc)) from None
        except ValueError as exc:  # a malformed --allowedTools / --disallowedTools rule
            raise AgentError(f"--allowedTools/--disallowedTools: {exc}") from None
        self.policy.protected_roots = [os.path.realpath(self.home)]  # sessions, keys, user settings
        # the scripts trusted hooks run: an edit of one asks in every mode, as Bash cannot write them either
        self.policy.protected_roots += list(getattr(getattr(self, "sandbox_settings", None), "hook_files", ()))
        self.policy.read_only_agent_types = self.context.read_only_agent_types()  # plan mode may launch these: their tools change nothing
        for d in self.policy.additional_directories:
            if d not in self.add_dirs:
                self.add_dirs.append(d)
        spill = os.path.join(self.session.dir, self.session.id, "tool-results")
        mcp = self.mcp
        if mcp is not None:
            mcp.output.spill_dir = spill  # capped MCP outputs go beside the built-in tools' (Read may read there)
            self.policy.mcp_servers = mcp.server_of  # rules name a server exactly: mcp__a__* never covers server a__b
            from ..mcp.agent import RESOURCE_TOOLS

            self.policy.read_only_tools = self.policy.read_only_tools | frozenset(RESOURCE_TOOLS)  # as in Claude Code: no permission
        # the session tools change no file: no permission, and plan mode lets them run (ExitPlanMode is how it ends)
        self.policy.read_only_tools = self.policy.read_only_tools | SESSION_TOOLS
        self.workspace = Workspace(self.cwd, self.add_dirs, on_write=self._file_changed)
        self.sandbox.roots = [os.path.realpath(d) for d in (self.cwd, *self.add_dirs)]
        self.processes = RunningProcesses()
        from .tools.background import BackgroundShells

        self.background = BackgroundShells(spill)
        self.policy.read_only_tools = self.policy.read_only_tools | {"BashOutput", "KillShell"}  # as in Claude Code: no permission
        if self._given_registry is not None:
            self.registry = self._given_registry
        else:
            self.registry = builtin_registry(
                self.workspace, spill_dir=spill, shell_timeout_s=int(self.shell_timeout_s),
                processes=self.processes, visible=self.policy.visible(),
                sandbox=self.sandbox, env=self.child_env, redact=self.redactor.text, shell_max_timeout_s=self.shell_max_timeout_s,
                session=self.session_link, patch_guard=self._patch_guard,
                background=self.background,
            )
            if self.skills:
                self.registry.register(skill_tool(self.skills, on_load=self._skill_loaded, preprocess=self._skill_tool_bangs))
        for t in self.extra_tools:
            if t.name not in self.registry:
                self.registry.register(t)

    def shown_tools(self) -> Registry:
        """The tools the model is shown: all but those a bare-name deny rule removes.

        As in Claude Code, ``"deny": ["Bash"]`` or ``"mcp__db__*"`` takes the
        tool out of the model's view; a call to it anyway is still denied.
        Read at each turn, so rules added during the session count.
        """
        removed = set(self.policy.removed_tools(self.registry.names()))
        if self._claude_model():  # apply_patch is for models trained on Codex's patch format; Claude's use Edit
            removed.add("apply_patch")
        return Registry([t for t in self.registry if t.name not in removed]) if removed else self.registry

    def _claude_model(self) -> bool:
        spec = self.model_spec.lower()
        return spec.startswith("anthropic:") or "claude" in spec.split(":", 1)[-1]

    def _patch_guard(self, real: str) -> str | None:
        """Why apply_patch may not change ``real``: an Edit deny rule covers it, or it is a protected path
        (only Edit changes those, after asking). The call itself was already allowed as ``apply_patch``."""
        d = self.policy.decide("Edit", {"file_path": real})
        if d.behavior == "deny":
            return d.reason
        if self.policy.protected_target("Edit", {"file_path": real}) is not None:
            return "it is a protected path; change it with Edit, which asks first"
        return None

    def _leave_plan_mode(self) -> str:
        """ExitPlanMode approved by the user: plan mode ends and the default mode (asking before changes) begins."""
        self.permission_mode = "default"
        self.policy.mode = "default"  # the tool's result, in the transcript, says the mode changed
        return "default"

    def mcp_status(self) -> str:
        """``/mcp``: try failed servers again, add any tools they bring, and list every server."""
        from ..mcp.agent import format_status

        if self.mcp_servers is None:
            return format_status([])
        text, fresh = self.mcp_servers.status({t.name for t in self.extra_tools})
        if fresh:
            self.register_tools(fresh)
        return text

    def _sync_mcp(self) -> bool:
        """Before each run and after each tool batch: take in the tools an MCP server added or removed
        (``list_changed``). True when they changed."""
        if self.mcp_servers is None:
            return False
        fresh = self.mcp_servers.changed_tools()
        if fresh is None:
            return False
        owns = self.mcp_servers.owns
        self.extra_tools[:] = [t for t in self.extra_tools if not owns(t)] + fresh
        # the MCP tools are swapped in a new registry: the built-in tools (and the workspace and background
        # shells they share) stay as they are, since a run may be in progress
        kept = [t for t in self.registry if not owns(t)]
        names = {t.name for t in kept}
        self.registry = Registry([*kept, *(t for t in fresh if t.name not in names)])
        return True

    def register_tools(self, tools: Sequence[Tool]) -> None:
        """Add tools (MCP, sub-agents) now and whenever the registry is rebuilt."""
        for t in tools:
            self.extra_tools.append(t)
            if t.name not in self.registry:
                self.registry.register(t)

    # -- the session --

    def _start_session(self, s: Session, source: str) -> None:
        current_session_id.set(s.id)
        self.session = s
        self._git_facts = None  # the git snapshot is taken again for each session
        # the system prompt as it was (one message in older sessions; two, the first marked, now): replaced whole
        msgs = s.messages
        head = 1 if msgs and msgs[0].get("role") == "system" else 0
        if head and msgs[0].get("cache_boundary") and len(msgs) > 1 and msgs[1].get("role") == "system":
            head = 2
        msgs[:head] = self.system_messages()
        s.note(
            "session_start",
            {
                "session_id": s.id,
                "source": source,
                "started_at": _now_iso(),
                "cwd": self.cwd,
                "model": self.model_spec,
                "permission_mode": self.permission_mode,
                "model_options": self._options_fact(),
                "memory_files": list(self.memory_files),
                "additional_directories": list(self.add_dirs),
                "agentloop_version": _version(),
            },
        )
        log.info("session %s (%s) in %s with model %s", s.id, source, self.cwd, self.model_spec)
        extra = self.hooks.session_start(self, source)
        if extra:
            s.messages.append({"role": "user", "content": extra})

    def system_messages(self) -> list[Message]:
        """The system prompt as two messages: the static part (instructions, tool guidance), marked as the
        cache boundary, then the dynamic part (working directory, date, memory files). A provider's prompt
        cache then keeps the static prefix whatever the day, the directory or the memory files are
        (Anthropic: a ``cache_control`` breakpoint on it; OpenAI caches the longest common prefix)."""
        static = self.system_override if self.system_override is not None else SYSTEM_PROMPT
        dynamic = self.dynamic_prompt()
        out: list[Message] = [{"role": "system", "content": static, "cache_boundary": True}]
        if dynamic:
            out.append({"role": "system", "content": dynamic})
        return out

    def system_prompt(self) -> str:
        """The whole system prompt as one text (static part, then dynamic part)."""
        return "\n\n".join(str(m["content"]) for m in self.system_messages() if m.get("content"))

    def dynamic_prompt(self) -> str:
        if self.system_override is not None:  # --system-prompt replaces the built-in prompt: only --append-system-prompt stays
            return self.system_append or ""
        parts = [self.environment()]
        if self.memory_text:
            parts.append(self.memory_text)
        if self.skills:
            from .commands import render_skill_index

            parts.append(render_skill_index(self.skills))
        if self.system_append:
            parts.append(self.system_append)
        return "\n\n".join(parts)

    def environment(self) -> str:
        """The environment block of the system prompt (``agent/system_prompt.py``); git is asked once a session."""
        from .system_prompt import EnvFacts, environment_block, git_snapshot, shell_name

        if self._git_facts is None:
            self._git_facts = (git_snapshot(self.cwd, self.child_env),)
        return environment_block(EnvFacts(
            cwd=self.cwd, platform=f"{platform.system()} {platform.release()}", shell=shell_name(self.env),
            date=f"{datetime.now(timezone.utc):%Y-%m-%d}", model=self.model_spec, permission_mode=self.permission_mode,
            sandbox=self._sandbox_fact(), cap=self._cap_fact(), git=self._git_facts[0], add_dirs=self.add_dirs,
            max_output_tokens=self.model_options.max_output_tokens,
        ))

    def _options_fact(self) -> dict[str, Any]:
        """What the model is asked for each turn (``agent/model_options.py``), as the session records it."""
        o = self.model_options
        out: dict[str, Any] = {"max_output_tokens": o.max_output_tokens, "source": o.source}
        if o.thinking_budget is not None:
            out["thinking_budget"] = o.thinking_budget
        if o.effort is not None:
            out["reasoning_effort"] = o.effort
        return out

    def _cap_fact(self) -> str:
        from ..budget import format_usd

        if self.max_usd_micros is None:
            return "none (the user chose no cap)"
        return f"{format_usd(self.max_usd_micros)} for the whole session"

    def _sandbox_fact(self) -> str:
        """One line on what a Bash command can reach."""
        s = self.sandbox_settings
        if s.mode == "danger-full-access":
            return "off (danger-full-access): commands run with the user's full access"
        if not self.sandbox.active:
            return "unavailable: every Bash command asks the user first"
        net = "network on" if s.network else ("network only to " + ", ".join(s.allowed_domains) if s.allowed_domains else "no network")
        where = "nothing writable" if s.mode == "read-only" else "writes only in the working directories and a private /tmp"
        return f"on ({s.mode}): {where}; {net}"

    def record(self, kind: str, payload: Any) -> None:
        """Append a record of another layer (hooks, compaction...) to the session's chain."""
        self.session.append(kind, payload)

    def switch_session(self, resume: str | None, reason: str) -> None:
        """Close this session (``reason`` goes to session_end) and open another, or a new one."""
        from .builder import open_session

        new = open_session(self.cwd, self.home, resume, self.durability)[0] if resume else None
        self.close(reason)
        if new is None:
            new = open_session(self.cwd, self.home, None, self.durability)[0]
        self.warned.clear()
        self.session_allow.clear()
        self._start_session(new, "resume" if resume else "clear")
        self._build_tools()

    def set_model(self, spec: str, *, why: str | None = None) -> None:
        """Switch the model for the next turns (the session goes on). ``why``: recorded with the change."""
        self.model_options = self._resolve_options(spec)
        self.model = self._open(spec)
        self.model_spec = spec
        self._check_price()
        self.window = context_window(self.model_name, self._setting("contextWindow", None))
        fact: dict[str, Any] = {"model": spec, "model_options": self._options_fact()}
        self.session.note("model_change", fact if why is None else {**fact, "why": why})

    def _turn_model(self, wanted: tuple[str, str] | None) -> tuple[Any, str, ModelOptions, int] | None:
        """A command's or skill's front matter ``model`` (``wanted``: the spec, and what asked for it):
        the turn it starts runs on that model. What to put back after the turn (``_session_model``),
        or None when the turn runs on the session's model.

        Raises:
            AgentError: the model cannot be opened (nothing was sent).
        """
        if wanted is None:
            return None
        from .trust import resolve_model

        spec = resolve_model(wanted[0], env=self.env, permission_mode=self.permission_mode)
        if spec == self.model_spec:
            return None
        saved = (self.model, self.model_spec, self.model_options, self.window)
        try:
            self.set_model(spec, why=f"front matter of {wanted[1]}, for this turn")
        except AgentError as exc:
            self.model, self.model_spec, self.model_options, self.window = saved
            raise AgentError(f"{wanted[1]}: model {wanted[0]!r}: {exc}") from None
        return saved

    def _session_model(self, saved: tuple[Any, str, ModelOptions, int] | None) -> None:
        """After a turn that ran on a command's model: the session's model again, recorded."""
        if saved is None:
            return
        self.model, self.model_spec, self.model_options, self.window = saved
        self.session.note("model_change", {"model": self.model_spec, "model_options": self._options_fact(),
                                           "why": "the command's turn ended"})

    def compact(self, instructions: str = "") -> None:
        """``/compact``: summarise the conversation. The context manager fires PreCompact,
        PostCompact and SessionStart with ``source: "compact"`` (as for automatic compaction)."""
        msgs = self.context.compact(self, self.session.messages, instructions)
        self.session.messages = msgs

    # -- one user turn --

    def budget(self) -> Budget:
        """The next run's caps: the steps per turn, and what is left of the session's money."""
        return session_budget(self.max_steps, self.max_usd_micros, self.stats.spent_micros)

    @property
    def stats(self) -> Any:
        return self.session.stats

    def ask(self, prompt: str, *, observer: Observer | None = None, allowed_tools: Sequence[str] = ()) -> RunResult:
        """Run one user turn to its stop. See rule 2.

        ``allowed_tools``: permission rules that hold for this turn only (a
        command's ``allowed-tools``); a skill loaded during the turn adds its
        own, which end with the turn too.

        Raises:
            AgentError: a hook blocked the prompt (nothing was run).
        """
        wanted, self._next_model = self._next_model, None
        try:
            saved = self._turn_model(wanted)  # a command's front matter model: this turn only
        except AgentError:
            self._next_denies = ()  # nothing of the command's turn outlives it
            raise
        self._turn_grants += self._grant(allowed_tools)
        denies, self._next_denies = self._next_denies, ()
        self._turn_grants += self._grant(denies, "deny")
        try:
            return self._ask(prompt, observer=observer)
        finally:
            self._revoke(self._turn_grants)
            self._turn_grants = []
            self._session_model(saved)

    def _grant(self, rules: Sequence[str], behavior: Literal["allow", "deny"] = "allow") -> list[Any]:
        """Allow ``rules`` for now (deny and ask rules still come first), or deny them (``disallowed-tools``);
        the bound rules, to revoke."""
        before = list(self.policy.rules)
        for text in rules:
            try:
                self.policy.add_rule(behavior, text, source="command")
            except ValueError as exc:
                log.warning("allowed-tools: %s", exc)
                self._notice(f"allowed-tools: {exc}")
        return [b for b in self.policy.rules if not any(b is x for x in before)]

    def _revoke(self, bound: Sequence[Any]) -> None:
        self.policy.rules = [b for b in self.policy.rules if not any(b is x for x in bound)]

    def _skill_loaded(self, skill: Any) -> None:
        """The model loaded a skill: its ``allowed-tools`` hold for the rest of the turn."""
        if getattr(skill, "allowed_tools", ()):
            self._turn_grants += self._grant(skill.allowed_tools)
        if getattr(skill, "disallowed_tools", ()):
            self._turn_grants += self._grant(skill.disallowed_tools, "deny")

    def expand_command(self, text: str) -> tuple[str, tuple[str, ...]] | None:
        """``/name args`` of a custom command or skill: the prompt to send and the rules its turn
        may use, or None when ``text`` names neither. A command's ``!`cmd``` lines and ```` ```! ````
        blocks run now, through permissions and hooks as a Bash call of the model's would, with its
        ``allowed-tools`` in force; each one's output takes its place. Its ``@path`` mentions attach
        the files, as a prompt's do (inside the workspace, unless Read is denied).

        Raises:
            AgentError: a ``!`` line failed (refused, or exited non-zero): Claude Code's
                "Bash command failed for pattern ..." and nothing is sent.
        """
        if not text.startswith("/"):
            return None
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        if name in self.commands:
            cmd = self.commands[name]
            body = cmd.render(rest)
            rules = tuple(cmd.allowed_tools)
            attached = self._attach_mentions(body)
            if "!`" in body or "```!" in body:
                body = self._run_bangs(body, rules)
            self._next_denies = cmd.disallowed_tools  # its disallowed-tools hold for the turn it starts
            self._next_model = None if cmd.model is None else (cmd.model, f"the command /{name}")
            return body + attached, rules
        if name in self.skills:
            sk = self.skills[name]
            body = self._skill_bangs(sk, sk.render(rest))
            self._next_denies = tuple(sk.disallowed_tools)
            self._next_model = None if sk.model is None else (sk.model, f"the skill /{name}")
            return f"Use the skill {name!r}. Its instructions:\n\n{body}", tuple(sk.allowed_tools)
        return None

    def _skill_bangs(self, skill: Any, body: str) -> str:
        """A skill's ``!`` lines run as a command's do (skills reference, "Inject dynamic context"), under
        its ``allowed-tools``. Raises ``AgentError`` (``/name``) or, in the Skill tool, ``ToolError``."""
        if "!`" not in body and "```!" not in body:
            return body
        return self._run_bangs(body, tuple(getattr(skill, "allowed_tools", ())))

    def _skill_tool_bangs(self, skill: Any, body: str) -> str:
        """``_skill_bangs`` for the Skill tool: a failed ``!`` line is the tool's error, which the model reads."""
        from ..tools import ToolError

        try:
            return self._skill_bangs(skill, body)
        except AgentError as exc:
            raise ToolError(str(exc)) from None

    def _attach_mentions(self, body: str) -> str:
        """The files a command's body names with ``@path`` (its ``!`` lines aside), as blocks to append."""
        from .commands import BANG, expand_mentions

        def refuse(real: str) -> str | None:
            d = self.policy.decide("Read", {"file_path": real})
            return f"reading it is denied ({d.reason})" if d.behavior == "deny" else None

        text = BANG.sub("", body)
        out, _attached, refused = expand_mentions(text, self.cwd, list(self.workspace.roots), refuse=refuse)
        for r in refused:
            self._notice(f"command: {r}")
        return out[len(text):]

    def _run_bangs(self, body: str, rules: Sequence[str]) -> str:
        from .commands import BANG, bang_command, command_failed
        from .hooks.payloads import bash_failure

        granted = self._grant(rules)
        try:
            n = [0]

            def run_one(m: Any) -> str:
                n[0] += 1
                command, pattern = bang_command(m)
                r = self._run_one(ToolCall(f"bang_{n[0]}", "Bash", {"command": command}))
                text = str(r.content if isinstance(r.content, str) else r.content) if r.ok else ""
                exited = bash_failure("Bash", text if r.ok else (r.error or ""))  # Bash's non-zero exit, ok or not
                if exited is not None and not r.ok:
                    text = (r.error or "").rstrip()  # the output, ending with [exit code N]
                failed = exited or ((r.error or "refused") if not r.ok else None)
                if failed is not None:
                    raise AgentError(command_failed(pattern, f"{failed}\n{text}" if text else failed))
                return text.rstrip("\n")

            return BANG.sub(run_one, body)
        finally:
            self._revoke(granted)

    def _ask(self, prompt: str, *, observer: Observer | None = None) -> RunResult:
        """One user turn, with the turn's grants already in force (``ask``).

        A Stop hook that blocks continues the same turn (no second
        UserPromptSubmit): its reason goes to the model as the next user
        message and another run starts, under what is left of the turn's
        budget, with ``stop_hook_active`` true for the next Stop call, at most
        ``MAX_STOP_BLOCKS`` blocks in a row (``agent/hooks/stop_gate.py``). The
        result holds the turn's totals and its last run's answer and stop.

        Raises:
            AgentError: a hook blocked the prompt (nothing was run).
        """
        from .hooks.stop_gate import StopGate

        self._sync_mcp()  # MCP tools a server added or dropped since the last run (list_changed)
        decision = self.hooks.user_prompt_submit(self, prompt)
        if decision.blocked is not None:
            raise AgentError(f"prompt blocked by a hook: {decision.blocked}")
        s = self.session
        content = decision.prompt if not decision.context else f"{decision.prompt}\n\n{decision.context}"
        obs = self._observer(observer)
        n = s.stats.turns + 1
        gate = StopGate(self.budget())
        left: Budget | None = gate.budget
        while left is not None:
            messages = [*self.context.prepare(self, s.messages), {"role": "user", "content": content}]
            last = self._run(messages, left, obs, n, gate.runs)
            total = gate.add(last)
            s.messages = list(last.messages)
            close_dangling_calls(s.messages)
            s.stats.spent_micros += last.spent_micros
            self.stop_hook_active = gate.active
            again = self.hooks.stop(self, last) if last.stop_reason != "interrupted" else None
            left = None
            if again:
                why = gate.why_not(last)
                if why is None:
                    content, left = again, gate.remaining()
                else:
                    self._notice(f"a Stop hook asked to keep going; the turn ends anyway: {why}")
        self.stop_hook_active = False
        st = s.stats
        st.turns += 1
        s.append("session_cost", st.to_json())
        log.info("turn %d: %s, %d steps, %d micro-USD (session %d)", n, total.stop_reason, total.steps, total.spent_micros, st.spent_micros)
        return total

    def _run(self, messages: list[Message], budget: Budget, obs: Observer, n: int, part: int) -> RunResult:
        """One run of the loop for turn ``n`` (``part`` > 0: continued by a Stop hook)."""
        from ..run import run

        s = self.session

        def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
            return self._execute(calls, obs)

        meta: dict[str, Any] = {"session_id": s.id, "turn": n, "started_at": _now_iso(), "cwd": self.cwd}
        if part:
            meta["stop_hook_continuation"] = part
        run_id = f"{s.id}/{n}" if not part else f"{s.id}/{n}.{part}"
        model, sink, traced = self.model, cast(Any, s), None
        reported = (s.stats.input_tokens, s.stats.output_tokens)
        self._unreported = 0
        if self.tracing is not None:
            model, traced, obs = self.tracing.wrap(self.model, s, obs, model_name=self.model_spec, run_id=run_id, conversation_id=s.id)
            sink = traced
        result = run(
            model,
            self.shown_tools(),
            messages,
            budget,
            transcript=sink,
            prices=self.prices,
            model_name=self.model_name,
            run_id=run_id,
            meta=meta,
            observer=obs,
            executor=self.context.wrap_executor(self, execute),
            prepare=self.context.run_prepare(self),
            loop_threshold=self.loop_threshold,
            max_output_tokens=self.model_options.max_output_tokens,
            continues=s.continuation(),
            tools_changed=self._tools_changed,
        )
        if traced is not None:
            traced.finish()
        st = s.stats
        # tokens the provider did not report: the loop's estimate is in result.usage, not in the replies
        est_in = max(0, result.usage.input_tokens - (st.input_tokens - reported[0])) if self._unreported else 0
        est_out = max(0, result.usage.output_tokens - (st.output_tokens - reported[1])) if self._unreported else 0
        st.input_tokens += est_in
        st.output_tokens += est_out
        st.estimated_tokens += est_in + est_out
        self.last_usage_estimated = est_in + est_out > 0
        return result

    def _tools_changed(self) -> Registry | None:
        """After each tool batch: the tools now shown, when an MCP server changed its list (list_changed)."""
        return self.shown_tools() if self._sync_mcp() else None

    def _observer(self, outer: Observer | None) -> Observer:
        st = self.session.stats

        def observe(ev: Observed) -> None:
            if isinstance(ev, TurnRecorded):
                u = ev.reply.usage
                st.add_turn(u.to_json() if u is not None else {})
                if u is None:
                    self._unreported += 1
            if outer is not None:
                outer(ev)

        return observe

    def _execute(self, calls: Sequence[ToolCall], emit: Observer) -> list[ToolResult]:
        if len(calls) > 1 and all(self._may_run_alongside(c) for c in calls):
            return self._execute_parallel(calls, emit)
        results = []
        for c in calls:
            emit(ToolStarted(c))
            try:
                r = self._run_one(c)
            except KeyboardInterrupt:
                # Ctrl+C in a tool: end what it started, count it, and let the
                # run record ``interrupted`` (the call gets no tool_result).
                if self.processes is not None:
                    self.processes.kill_all()
                self.session.stats.count_tool(c.name, False)
                emit(ToolFinished(ToolResult(c.id, c.name, False, error="interrupted by the user")))
                raise
            self.session.stats.count_tool(r.name, r.ok)
            emit(ToolFinished(r))
            results.append(r)
        return results

    def _may_run_alongside(self, call: ToolCall) -> bool:
        """A read-only call that no rule asks about and no tool hook sees: it may run beside the turn's others."""
        t = self.registry.get(call.name)
        if t is None or not t.read_only or not isinstance(call.arguments, dict):
            return False
        if self.hooks.sees_tool_calls():
            return False
        return getattr(self.policy.decide(call.name, call.arguments), "behavior", "deny") == "allow"

    def _execute_parallel(self, calls: Sequence[ToolCall], emit: Observer) -> list[ToolResult]:
        """Read-only calls at the same time (at most 10), recorded in call order (agentloop.run.run_parallel)."""
        from ..run import run_parallel

        try:
            results = run_parallel(calls, self._run_one, emit=emit)
        except KeyboardInterrupt:
            for c in calls:
                self.session.stats.count_tool(c.name, False)
            raise
        for r in results:
            self.session.stats.count_tool(r.name, r.ok)
        return results

    def allow_for_session(self, call: ToolCall) -> str:
        """"Always" at a prompt: a session rule allowing exactly what was approved.

        For Bash, the exact command line, with any ``*`` in it taken literally (so
        approving ``rm tmpd/*.tmp`` does not approve ``rm tmpd/../x tmpd/y.tmp``); for a
        write to a protected path, that one file; for WebFetch, the URL's domain
        (``WebFetch(domain:HOST)``); for other tools, the tool. Deny and ask
        rules still come first, as for any allow rule.
        """
        args = call.arguments if isinstance(call.arguments, dict) else {}
        cmd = args.get("command")
        if call.name == "Bash":
            if not isinstance(cmd, str):
                return ""  # nothing to remember: the next call asks again
            text = self.policy.add_exact("allow", "Bash", cmd, source="session").text
        elif call.name == "WebFetch":  # Claude Code: "don't ask again" for that domain, not for every fetch
            from .tools.web_fetch import remembered_domain_rule

            text = remembered_domain_rule(args.get("url"))
            if not text:
                return ""
            self.policy.add_rule("allow", text, source="session")
        elif self.policy.protected_target(call.name, args) is not None:
            path = next((args[k] for k in ("file_path", "notebook_path", "path") if isinstance(args.get(k), str)), None)
            if path is None:
                return ""
            text = self.policy.add_exact("allow", call.name, path, source="session").text
        else:
            text = call.name
            self.policy.add_rule("allow", text, source="session")
        self.session_allow.add(text)
        return text

    def _file_changed(self, path: str, before: bytes | None, after: bytes) -> None:
        """A built-in tool is about to write ``path``: keep both contents and record the change
        (``checkpoints`` rule 1), so ``/rewind`` can put it back."""
        from .session.checkpoints import Checkpoints

        store = Checkpoints(self.home)
        payload = {
            "path": path,
            "before": None if before is None else store.put(before),
            "after": store.put(after),
            "turn": self.stats.turns + 1,
        }
        if self._current_call is not None:
            payload["tool_call_id"] = self._current_call
        self.session.append("file_change", payload)

    def rewind(self, turn: int, *, files: bool = True, conversation: bool = True, force: bool = False) -> dict[str, Any]:
        """Go back to before prompt ``turn`` (``checkpoints`` rule 3): the files the built-in tools
        changed since, the conversation, or both. Recorded as a ``rewind`` record.

        Returns:
            What was done: ``restored`` and ``left`` (changed by hand since) paths, ``conversation``.
        Raises:
            AgentError: no such prompt, or a checkpoint is missing or was changed.
        """
        from ..conversation import Conversation
        from ..transcript import TranscriptError, read_records
        from .session.checkpoints import Checkpoints, apply_rewind, plan_rewind

        s = self.session
        roots = self.workspace.roots  # nothing outside them is touched, whatever a record says
        try:
            plan = plan_rewind(read_records(s.path) if s.written else [], turn, roots)  # streamed, not held
            restored, left = apply_rewind(plan, Checkpoints(self.home), roots, force=force) if files else ([], [])
        except (ValueError, TranscriptError) as exc:
            raise AgentError(str(exc)) from None
        if conversation and plan.conversation_seq is not None:
            conv = Conversation()
            for r in read_records(s.path):
                if r.seq > plan.conversation_seq:
                    break
                conv.feed(r.kind, r.payload)
            msgs = conv.messages if conv.started else [m for m in s.messages[:1] if m.get("role") == "system"]
            s.messages = msgs
        out: dict[str, Any] = {"turn": turn, "files": files, "conversation": conversation, "restored": restored, "left": left}
        if plan.outside:
            out["outside"] = plan.outside
        if conversation:
            out["messages"] = s.messages  # what resume and replay rebuild from (conversation rule 1)
        s.append("rewind", out)
        out.pop("messages", None)
        return out

    def _denied(self, call: ToolCall) -> None:
        self.permission_denials.append({"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.arguments})

    def _run_one(self, call: ToolCall) -> ToolResult:
        """One call through the tool-call pipeline (``agent/pipeline.py``), with what the agent holds now."""
        return self._pipeline()(call)

    def _pipeline(self, registry: Registry | None = None, *, child: bool = False) -> ToolPipeline:
        """The tool-call pipeline over ``registry`` (default: the agent's): a sub-agent's when ``child``."""
        if child:
            return ToolPipeline(registry or self.registry, self.hooks, self, self.policy, self.sandbox,
                                self._redact_result, self._note_secret_args, child=True)
        return ToolPipeline(
            registry or self.registry, self.hooks, self, self.policy, self.sandbox, self._redact_result, self._note_secret_args,
            ask=self.ask_permission, on_always=self.allow_for_session, on_denied=self._denied, on_invoke=self._invoking,
        )

    def _invoking(self, call_id: str | None) -> None:
        self._current_call = call_id

    # -- warnings and the end --

    def warnings(self) -> list[UsageWarning]:
        """Thresholds crossed since the last call: 80% and 95% of the budget, and of the
        context window (measured by the last call's input) unless a context
        manager is installed, which warns from its own estimate before each call."""
        out = []
        fills: list[tuple[str, float]] = []
        if not self.context.warns_of_window():  # else the context manager warns, before each call
            fills.append(("context window", self.stats.last_input_tokens / self.window if self.window else 0.0))
        if self.max_usd_micros:
            fills.append(("budget", self.stats.spent_micros / self.max_usd_micros))
        for what, frac in fills:
            for lvl in WARN_LEVELS:
                if frac >= lvl and (what, lvl) not in self.warned:
                    self.warned.add((what, lvl))
                    text = f"{what} is {frac:.0%} used (warning at {lvl:.0%})"
                    if what == "context window":
                        text += "; /compact to make room"
                    log.warning(text)
                    out.append(UsageWarning(what, lvl, text))
        return [w for w in out if w.level == max(x.level for x in out if x.what == w.what)]

    def close(self, reason: str = "other") -> None:
        """Record ``session_end`` (if the session ran a turn) and release the session."""
        s = self.session
        if s.closed:
            return
        try:
            self.hooks.session_end(self, reason)
        finally:
            if s.written:
                try:
                    s.append("session_end", {"reason": reason, "ended_at": _now_iso(), **s.stats.to_json()})
                except Exception as exc:  # the lock must be released even then
                    log.error("could not record session_end: %s", exc)
            s.close()
            log.info("session closed (%s)", reason)
            bg = getattr(self, "background", None)
            if bg is not None:
                bg.close()  # background shells end with the session (on /clear and /resume too: the sandbox stays)
            if self.mcp_servers is not None and reason not in ("clear", "resume"):  # switch_session keeps the servers
                self.mcp_servers.close()
            if reason not in ("clear", "resume"):
                self.sandbox.close()


def _version() -> str:
    from .. import __version__

    return __version__


__all__ += ["SessionError", "context_window", "open_model_spec", "scripted_model", "setup_logging"]
