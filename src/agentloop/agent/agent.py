"""The terminal agent: one session's settings, model, parts and turns, held together.

``Agent.ask(prompt)`` runs one user turn through ``agentloop.run.run`` with the
session's messages, the session as the transcript sink, and every tool call
through the one tool-call pipeline. The REPL, ``-p``, ACP and ``agentloop run`` are thin drivers of
this class. Its parts, each in a module of its own: the settings (``agent_settings``), hooks, context
manager, Agent tool, MCP servers and session (``builder``), the tools (``toolbox``), the calls (``pipeline``),
commands and skills (``slash_commands``), the system prompt (``session_prompt``). No part is handed the agent:
``builder`` makes each the frozen value it reads (``HookFacts``, ``ToolboxInputs``, ``TurnInputs``...).

Rules:

1. Every fact about the session goes into its chain: ``session_start``, each
   run's records, ``session_cost`` after each turn, ``session_end``.
2. ``ask`` never raises for the model's or a tool's failure: they are the
   run's stop reason. Ctrl+C in a turn ends it as ``interrupted``.
3. Without a way to ask (no terminal), ``ask`` permissions mean deny.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import __version__
from ..budget import Budget, Ledger, session_budget
from ..config.private import home_notice as private_notice
from ..config.settings import agentloop_home
from ..conversation import close_dangling_calls
from ..events import Message, Observer, ToolCall, ToolResult
from ..run import RunResult
from ..tools import Registry, Tool
from . import builder
from .agent_settings import AgentSettings, SettingsFlags, cap_text, read_settings
from .builder import AgentParts, build_parts, open_session, with_handlers
from .logs import SessionLogFilter, current_session_id, setup_logging
from .model_choice import ModelChoice, context_window, open_model_spec, scripted_model
from .output_styles import session_output_style
from .pipeline import ToolCalls, ToolPipeline
from .plugins import extension_folders, find_plugins, plugin_commands_and_skills, plugin_sources
from .protocols import (
    AgentError,
    AgentHooks,
    AskPermission,
    ContextManager,
    HookFacts,
    NoContext,
    NoHooks,
    PermissionAnswer,
    PromptDecision,
)
from .secret_guard import SecretGuard
from .session.store import Durability, Session, SessionError, SessionStats, latest_id
from .session_history import record_end, record_file_change, record_start
from .session_history import rewind as rewind_session
from .session_prompt import SessionPrompt, options_fact
from .slash_commands import SlashCommands
from .startup_files import read_startup_files
from .system_prompt import STATIC_PROMPT
from .toolbox import ExtraTools, Toolbox, open_sandbox
from .tools.session_tools import SessionLink
from .turn import keep_going, run_once, stop_children
from .usage_warnings import UsageWarning, UsageWarnings

if TYPE_CHECKING:
    from ..mcp.agent import McpServers
    from .permissions.rules import PermissionPolicy
    from .tools.workspace import Workspace

__all__ = ["Agent", "AgentError", "AgentHooks", "ContextManager", "NoContext", "NoHooks", "PermissionAnswer", "PromptDecision",
           "SessionError", "SessionLogFilter", "UsageWarning", "context_window", "current_session_id", "open_model_spec",
           "scripted_model", "setup_logging"]

log = logging.getLogger("agentloop.agent")

SYSTEM_PROMPT = STATIC_PROMPT
"""The static part of the system prompt (``agent/system_prompt.py``): the same bytes in every session."""


class Agent:
    """One terminal-agent session: ask it prompts, read its stats, close it. The constructor raises
    ``AgentError`` (a bad model spec, settings file, mode or budget) or ``SessionError`` / ``SessionBusy``."""

    def __init__(
        self, *, cwd: str, model: str | Any | None = None, home: str | None = None, env: Mapping[str, str] | None = None,
        base_url: str | None = None, api_key_env: str | None = None, fallback: str | None = None,
        max_usd_micros: int | None = None, max_steps: int | None = None, permission_mode: str | None = None,
        add_dirs: Sequence[str] = (), resume: str | None = None, continue_last: bool = False, durability: Durability | None = None,
        ask_permission: AskPermission | None = None, shell_timeout_s: float | None = None, registry: Registry | None = None, trust: bool | None = None,
        ask_trust: Callable[[Any], bool] | None = None, ask_mcp_server: Callable[[str, str], bool] | None = None,
        ask_imports: Callable[[list[str]], bool] | None = None, managed_settings: str | None = None,
        cli_rules: Sequence[tuple[str, str]] = (), system_prompt: str | None = None, append_system_prompt: str | None = None,
        tracing: Any = None, sandbox: str | None = None, unlimited_usd: bool = False, price: Any = None,
        cli_settings: Sequence[str] = (), mcp_configs: Sequence[str] = (), strict_mcp_config: bool = False, mcp_in_background: bool = False,
        max_output_tokens: int | None = None, thinking: str | None = None, effort: str | None = None, plugin_dirs: Sequence[str] = (),
        session_id: str | None = None,
    ):
        self.cwd = os.path.realpath(cwd)
        self.mcp_in_background = mcp_in_background  # the REPL: MCP tools join as each server comes up
        self._init_front_end(ask_permission, cli_rules, tracing, system_prompt, append_system_prompt)
        given_env = os.environ if env is None else env
        self.home = home or agentloop_home(given_env)
        home_notice = private_notice(self.home)  # agentloop's home was open to others (0700 now): said once
        self.settings: AgentSettings = read_settings(self.cwd, self.home, given_env, SettingsFlags(
            trust=trust, ask_trust=ask_trust, ask_mcp_server=ask_mcp_server, managed_settings=managed_settings, cli_settings=cli_settings,
            mcp_configs=mcp_configs, strict_mcp_config=strict_mcp_config, max_steps=max_steps, max_usd_micros=max_usd_micros, durability=durability,
            unlimited_usd=unlimited_usd, permission_mode=permission_mode, model=model, add_dirs=add_dirs, shell_timeout_s=shell_timeout_s))
        s = self.settings
        self.env, self.trust, self.durability, self.permission_mode = s.env, s.trust, s.durability, s.permission_mode
        self.sources, self.price_sources, self.cap_source = list(s.sources), list(s.price_sources), s.cap_source
        self.config_warnings, self.mcp_json_approved = list(s.warnings), set(s.mcp_json_approved)
        self.plugins = find_plugins(self.cwd, plugin_dirs, s.sources, trusted=self.trust.trusted, warnings=self.config_warnings)
        self.sources += plugin_sources(self.plugins, self.config_warnings)  # their hooks and MCP servers
        self.max_steps, self.max_usd_micros, self.add_dirs = s.max_steps, s.max_usd_micros, list(s.add_dirs)
        self.shell_timeout_s, self.shell_max_timeout_s = s.shell_timeout_s, s.shell_max_timeout_s
        self.models = ModelChoice(setting=s.model_setting, price_sources=s.price_sources, env=s.env, permission_mode=s.permission_mode,
                                  base_url=base_url, api_key_env=api_key_env, option_flags=(max_output_tokens, thinking, effort), project_env=s.project_env, key_helper=s.api_key_helper, host_env=s.host_env,
                                  cap_micros=s.max_usd_micros, window_override=s.context_window, on_notice=self._notice)
        self.models.choose(s.model, price, fallback, s.fallback_model)
        self.secrets = SecretGuard.create(self.model, self.env, api_key_env, s.sources, s.host_env)
        self.redactor, self.child_env, self.allowed_env = self.secrets.redactor, self.secrets.child_env, self.secrets.allowed_env
        self.sandbox_settings, self.sandbox, self.startup_notices = open_sandbox(s, sandbox, self.cwd, self.add_dirs, self.home,
                                                                                 [*self.secrets.env_warnings, home_notice])
        files = read_startup_files(self.cwd, self.home, self.env, self.add_dirs, trusted=self.trust.trusted, ask_imports=ask_imports)
        self.memory_files, self.memory_text, self.load_warnings = files.memory_files, files.memory_text, files.load_warnings
        self.startup_notices += files.notices
        self.commands, self.skills = plugin_commands_and_skills(files.commands, files.skills, self.plugins, self.load_warnings)
        self.load_warnings += self.sandbox.show_extensions(extension_folders(self.plugins, self.skills), self.home)  # read-only
        self.prompt.style = session_output_style(self.sources, self.env, self.cwd, self.plugins, self.load_warnings)
        self.slash = SlashCommands(self.commands, self.skills, policy=lambda: self.policy, run_tool=self.run_tool, cwd=self.cwd, roots=lambda: list(
            self.workspace.roots), notice=self._notice, scoped_hooks=lambda v, w, r: self.hooks.scoped_hooks(self.hook_facts, v, w, r, self.trust.trusted))
        if continue_last and resume is None and (resume := latest_id(self.cwd, self.home)) is None:  # none yet: a new
            self.startup_notices.append("-c: no earlier session in this directory to continue; starting a new one")  # session, as -c
        self.given_registry = registry  # used as is instead of the built-in tools (tests, embedding)
        self.new_session_id = session_id if resume is None else None  # the first new session's id, when the caller names it
        self._take(build_parts(self, resume))  # hooks, context management, loop check, the Agent tool, MCP servers, session
        self.build_tools()

    def _init_front_end(self, ask_permission: AskPermission | None, cli_rules: Sequence[tuple[str, str]], tracing: Any, system_prompt: str | None, append_system_prompt: str | None) -> None:
        """What the front end gives (where to ask and tell the user, rules, tracing) and the state that starts empty."""
        self.ask_permission = ask_permission
        self.on_notice: Callable[[str], None] | None = None  # where notices are shown (they are always logged)
        self.elicit: Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None = None  # an MCP server's question
        self.on_mcp_progress: Callable[[str, str, str], None] | None = None
        self.cli_rules, self.tracing = list(cli_rules), tracing  # --allowedTools / --disallowedTools; a telemetry Tracing
        self.prompt = SessionPrompt(system_prompt, append_system_prompt)
        self.hooks, self.context = cast(AgentHooks, NoHooks()), cast(ContextManager, NoContext())
        self.hook_facts: HookFacts = builder.hook_facts(self)  # what hooks see of the agent; its tool calls' own, next
        self.calls, self.usage = ToolCalls(builder.call_source(self)), UsageWarnings()
        self.permission_denials = self.calls.denials
        self.stop_hook_active = False  # while hooks.stop runs: the turn already goes on because of a Stop hook
        self.last_usage_estimated = False  # the last turn's tokens include the loop's estimate (the cost line says so)
        self.session_link = SessionLink(ask=lambda: self.elicit, plan_mode=lambda: self.policy.mode == "plan", leave_plan=self._leave_plan_mode)

    # -- the model (``agent/model_choice.py``) --

    model = property(lambda self: self.models.model, lambda self, m: setattr(self.models, "model", m), doc="The model.")
    model_spec = property(lambda self: self.models.model_spec, doc="The spec the session's model was opened from.")
    model_options, model_name = property(lambda self: self.models.options), property(lambda self: self.models.name)
    prices, window = property(lambda self: self.models.prices), property(lambda self: self.models.window)

    def set_model(self, spec: str, *, why: str | None = None) -> None:
        """Switch the model for the next turns (the session goes on). ``why``: recorded with the change."""
        self.models.switch(spec)
        self._note_model(why)

    def add_hook_handlers(self, handlers: Sequence[Any]) -> None:  # beside the settings' own (the Agent SDK's callbacks)
        self.hooks = with_handlers(self.hooks, self.context, handlers, self)

    def _note_model(self, why: str | None) -> None:
        self.session.note("model_change", {"model": self.model_spec, "model_options": self._options_fact(), **({} if why is None else {"why": why})})

    def _take(self, parts: AgentParts) -> None:
        """The parts ``agent/builder.py`` made, as this agent's own (nothing else sets them); the session started."""
        self.hooks, self.context, self.loop_threshold, self.context_facts = parts.hooks, parts.context, parts.loop_threshold, parts.context_facts
        self.extra_tools = ExtraTools(parts.tools)  # the Agent tool, MCP servers' tools: they stay across sessions
        self.mcp_servers: McpServers | None = parts.mcp_servers
        self.config_warnings += [w for w in parts.warnings if w not in self.config_warnings]
        if parts.session.repaired is not None:
            self._notice(parts.session.repaired.describe())
        self._start_session(parts.session, parts.session_source)

    def move_to(self, cwd: str, also_read: Sequence[str] = ()) -> None:  # EnterWorktree, ExitWorktree (session_worktree)
        self.cwd, self.sandbox.also_read = cwd, tuple(also_read)  # the sandbox's read-only extra roots
        self.build_tools()  # workspace, sandbox roots and permission rules at the new place

    def build_tools(self) -> None:
        """The policy, workspace and registry (``agent/toolbox.py``); rebuilt when the session (and so its spill dir) changes."""
        self.toolbox: Toolbox = Toolbox.build(builder.toolbox_inputs(self))
        self.policy: PermissionPolicy = self.toolbox.policy
        said = self.policy.check_names(self.toolbox.registry.names())  # a rule that can never match is named
        self.config_warnings += [w for w in [*said, *self.policy.notes] if w not in self.config_warnings]  # + managed-only
        self.workspace: Workspace = self.toolbox.workspace
        self.processes, self.background, self.add_dirs = self.toolbox.processes, self.toolbox.background, list(self.toolbox.add_dirs)

    registry = property(lambda self: self.toolbox.registry, doc="The session's tools now (``agent/toolbox.py``).")

    mcp = property(lambda self: None if self.mcp_servers is None else self.mcp_servers.manager,
                   doc="The MCP servers' ``McpManager`` (sign-in, prompts, resources), or None.")

    @property
    def stats(self) -> SessionStats:
        return self.session.stats

    def cap_text(self) -> str:
        return cap_text(self.max_usd_micros, self.cap_source)

    def cycle_mode(self) -> str:
        """The next permission mode of Shift+Tab's cycle, now in force (a managed mode stays as it is)."""
        before, self.permission_mode = self.permission_mode, self.settings.next_mode(self.permission_mode)
        self.policy.set_mode(self.permission_mode)
        if self.permission_mode != before:  # recorded: a session loaded again comes back in it
            self.session.note("mode_change", {"permission_mode": self.permission_mode})
        return self.permission_mode

    def _leave_plan_mode(self) -> str:
        """ExitPlanMode approved by the user: plan mode ends and the default mode (asking before changes) begins."""
        self.permission_mode = self.policy.mode = "default"  # the tool's result, in the transcript, says the mode changed
        self.session.note("mode_change", {"permission_mode": "default"})
        return "default"

    def take_price_notices(self) -> list[str]:
        return self.models.take_notices()

    def open_model(self, spec: str) -> Any:  # as the agent opens its own: the loop check's, a sub-agent's
        return self.models.open(spec)

    def _notice(self, text: str) -> None:
        log.warning("provider: %s", text)
        if self.on_notice is not None:
            self.on_notice(text)

    # -- tools --

    def shown_tools(self) -> Registry:
        return self.toolbox.shown(self.model_spec)

    def mcp_status(self) -> str:
        return self.toolbox.mcp_status(self.mcp_servers)

    def register_tools(self, tools: Sequence[Tool]) -> None:
        self.toolbox.register(tools)

    def tools_changed(self) -> Registry | None:
        """After each tool batch: the tools now shown, when an MCP server changed its list (list_changed)."""
        return self.shown_tools() if self.toolbox.sync_mcp(self.mcp_servers) else None

    def file_changed(self, path: str, before: bytes | None, after: bytes) -> None:
        """A tool (or the editor, over ACP) is about to write ``path``: both contents kept, the change recorded."""
        record_file_change(self.session, self.home, path, before, after, self.calls.current)

    def tool_pipeline(self, registry: Registry | None = None, *, child: bool = False, policy: PermissionPolicy | None = None) -> ToolPipeline:
        return self.calls.pipeline(registry, child=child, policy=policy)

    def run_tool(self, call: ToolCall) -> ToolResult:
        return self.calls.run(call)

    # -- the session --

    def _start_session(self, s: Session, source: str) -> None:
        current_session_id.set(s.id)
        self.session = s
        self.prompt.new_session()  # the git snapshot is taken again for each session
        record_start(s, source, self.system_messages(), {
            "cwd": self.cwd, "model": self.model_spec, "permission_mode": self.permission_mode, "model_options": self._options_fact(),
            "memory_files": list(self.memory_files), "additional_directories": list(self.add_dirs), "agentloop_version": __version__})
        log.info("session %s (%s) in %s with model %s", s.id, source, self.cwd, self.model_spec)
        if extra := self.hooks.session_start(self.hook_facts, source):
            s.messages.append({"role": "user", "content": extra})

    def system_messages(self) -> list[Message]:
        return self.prompt.messages(builder.prompt_facts(self))

    def child_system_prompt(self, cwd: str) -> str:  # a sub-agent's rules and environment
        return self.prompt.for_child(builder.prompt_facts(self), cwd)

    def system_prompt(self) -> str:
        """The whole system prompt as one text (static part, then dynamic part)."""
        return "\n\n".join(str(m["content"]) for m in self.system_messages() if m.get("content"))

    def dynamic_prompt(self) -> str:
        return self.prompt.dynamic(builder.prompt_facts(self))

    def _options_fact(self) -> dict[str, Any]:
        return options_fact(self.model_options)

    def record(self, kind: str, payload: Any) -> None:
        """Append a record of another layer (hooks, compaction...) to the session's chain."""
        self.session.append(kind, payload)

    def switch_session(self, resume: str | None, reason: str) -> None:
        """Close this session (``reason`` goes to session_end) and open another, or a new one."""
        new = open_session(self.cwd, self.home, resume, self.durability)[0] if resume else None
        self.close(reason)
        if new is None:
            new = open_session(self.cwd, self.home, None, self.durability)[0]
        self.usage.clear()
        self._start_session(new, "resume" if resume else "clear")
        self.build_tools()

    def rewind(self, turn: int, *, files: bool = True, conversation: bool = True, force: bool = False) -> dict[str, Any]:
        return rewind_session(self.session, self.home, self.workspace.roots, turn, files=files, conversation=conversation, force=force)

    def serve_mcp(self, servers: McpServers | None) -> None:  # an MCP manager made later (the Agent SDK's in-process servers)
        self.mcp_servers = servers

    def compact(self, instructions: str = "") -> None:  # between runs: the session's ledger (budget.py) decides and charges
        room = Ledger(self.max_usd_micros, spent=self.stats.spent_micros)
        self.session.messages, self.stats.spent_micros = self.context.compact(self.context_facts, self.session.messages, instructions, room), room.spent

    def budget(self) -> Budget:
        """The next run's caps: the steps per turn, and what is left of the session's money."""
        return session_budget(self.max_steps, self.max_usd_micros, self.stats.spent_micros)

    # -- one user turn --

    def expand_command(self, text: str) -> tuple[str, tuple[str, ...]] | None:
        """``/name args``: its prompt and turn's rules, or None (UserPromptSubmit, then ``!`` lines; ``AgentError``: nothing sent)."""
        return self.slash.submit_and_expand(text, lambda typed: self.hooks.user_prompt_submit(self.hook_facts, typed))

    def ask(self, prompt: str, *, observer: Observer | None = None, allowed_tools: Sequence[str] = ()) -> RunResult:
        """Run one user turn to its stop (rule 2); ``allowed_tools``: this turn's (a command's). ``AgentError``: a hook blocked it."""
        try:
            saved = self.models.for_turn(self.slash.take_model(), self._note_model)  # a command's model: this turn only
        except AgentError:
            self.slash.drop_turn()
            raise
        self.slash.begin_turn(allowed_tools)
        try:
            return self._ask(prompt, observer=observer)
        finally:
            self.slash.end_turn()
            self.models.restore(saved, self._note_model)

    def _ask(self, prompt: str, *, observer: Observer | None = None) -> RunResult:
        """One user turn. A Stop hook that blocks continues it: its reason is the next user message of another run, under
        what is left of the turn's budget (``hooks/stop_gate.py``). The result: the turn's totals, its last answer and stop."""
        from .hooks.stop_gate import StopGate

        self.toolbox.sync_mcp(self.mcp_servers)  # MCP tools a server added or dropped since the last run (list_changed)
        decision = self.slash.take_submitted(prompt) or self.hooks.user_prompt_submit(self.hook_facts, prompt)  # a command's ran already
        if decision.blocked is not None:
            raise AgentError(f"prompt blocked by a hook: {decision.blocked}")
        s = self.session
        content = decision.prompt if not decision.context else f"{decision.prompt}\n\n{decision.context}"
        n = s.stats.turns + 1
        gate = StopGate(self.budget())
        left: Budget | None = gate.budget
        while left is not None:
            messages = [*self.context.prepare(self.context_facts, s.messages), {"role": "user", "content": content}]
            self.calls.stopping = False
            turn = builder.turn_inputs(self)  # what this run is handed (and where its background children are found)
            last, self.last_usage_estimated = run_once(turn, messages, left, observer, n, gate.runs, self.calls.execute,
                                                       stop=self.calls.check_stop)
            total = gate.add(last)
            s.messages = list(last.messages)
            close_dangling_calls(s.messages)
            s.stats.spent_micros += last.spent_micros
            self.stop_hook_active = gate.active
            again = (self.hooks.stop(self.hook_facts, last) or keep_going(turn.context.backgrounds(), last)) if last.stop_reason != "interrupted" else None
            left = None
            if again:
                why = gate.why_not(last)
                if why is None:
                    content, left = again, gate.remaining()
                else:
                    self._notice(f"a Stop hook asked to keep going; the turn ends anyway: {why}")
        self.stop_hook_active, st = False, s.stats
        st.turns += 1
        s.append("session_cost", st.to_json())
        log.info("turn %d: %s, %d steps, %d micro-USD (session %d)", n, total.stop_reason, total.steps, total.spent_micros, st.spent_micros)
        return total

    # -- warnings and the end --

    def warnings(self) -> list[UsageWarning]:
        """Thresholds crossed since the last call (``usage_warnings``); a context manager warns of the window itself."""
        window = None if self.context.warns_of_window() else (self.stats.last_input_tokens / self.window if self.window else 0.0)
        spent = self.stats.spent_micros / self.max_usd_micros if self.max_usd_micros else None
        return self.usage.crossed(window_fill=window, budget_fill=spent)

    def close(self, reason: str = "other") -> None:
        """Record ``session_end`` (if the session ran a turn) and release the session."""
        s = self.session
        if s.closed:
            return
        s.stats.spent_micros += stop_children(self.context)  # background sub-agents stop (records written while it is open): their bills
        try:
            self.hooks.session_end(self.hook_facts, reason)
        finally:
            record_end(s, reason)  # and the session released
            self.background.close()  # background shells end with the session (on /clear and /resume too)
            if reason not in ("clear", "resume"):  # switch_session keeps the servers and the sandbox
                if self.mcp_servers is not None:
                    self.mcp_servers.close()
                self.sandbox.close()

