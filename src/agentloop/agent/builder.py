"""One way to build an agent's collaborators: hooks, context manager, sub-agents, MCP servers, their tools, and the session.

``Agent.__init__`` reads its settings, opens its model and sandbox, then calls
``build_parts(agent, resume)`` and takes the frozen ``AgentParts`` it returns
as its own (``hooks``, ``context``, ``extra_tools``, ``mcp_servers``,
``loop_threshold``, ``session``). The session is opened last, so a part that
cannot be built leaves no session file, and MCP servers already started are
stopped when the session cannot be opened. Nothing sets an agent's attributes
from outside ``agent/agent.py``; every method the agent calls on these parts is
declared on the Protocol it holds them as (``agent/protocols.py``).

This module is the only one besides ``agent/agent.py`` that reads the agent
(``PartsSource``, its own). No part is handed the agent: each gets a small
frozen value made here (``toolbox_inputs``, ``hook_facts``, ``context_facts``,
``call_source``, ``prompt_facts``, ``turn_inputs``, ``worktree_place``), where
what changes during a session is a callable read when it is needed, or the
object that owns it (``ModelChoice``, ``ExtraTools``); a change to the agent is
one of its own methods (``move_to``). Settings the parts use, from ``AgentSettings``:
``hooks`` (all files, merged), ``loopThreshold`` (default 5; 0 turns it off),
``loopCheckModel`` (default: the provider's cheap model; ``false`` turns it
off), ``contextWindow`` (via ``ModelChoice.window``), ``toolResultCap``,
``subagents`` (false turns the Agent tool off), ``subagentIsolation``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..config.settings import ConfigError, user_home
from ..events import ToolCall, ToolResult
from ..run import schedule
from ..tools import Registry, Tool
from .hooks.runner import HookRunner
from .hooks_and_context import AgentContext, ClaudeHooks
from .protocols import (
    AgentError,
    AgentHooks,
    AskPermission,
    ContextFacts,
    ContextManager,
    HookFacts,
    NoHooks,
)
from .session.store import Durability, Session
from .tools.builtin import BASH

if TYPE_CHECKING:
    from ..budget import PriceTable
    from ..config.settings import SettingsSource
    from ..mcp.agent import McpServers, McpStart
    from .agent_settings import AgentSettings
    from .model_choice import ModelChoice
    from .model_options import ModelOptions
    from .permissions.rules import PermissionPolicy
    from .pipeline import CallSource, ToolCalls, ToolPipeline
    from .plugins import Plugin
    from .sandbox.bubblewrap import Sandbox, SandboxSettings
    from .sandbox.child_env import Redactor
    from .secret_guard import SecretGuard
    from .session.store import SessionStats
    from .session_prompt import PromptFacts
    from .session_worktree import WorktreePlace
    from .slash_commands import SlashCommands
    from .spawn import ChildEnv
    from .subagents.agent_types import AgentType
    from .subagents.parent_budget import ParentBudget
    from .subagents.runner import SubagentRunner
    from .toolbox import ExtraTools, Toolbox, ToolboxInputs
    from .tools.builtin import RunningProcesses
    from .tools.session_tools import SessionLink
    from .trust import TrustDecision
    from .turn import TurnInputs

__all__ = ["AgentParts", "ChildFactory", "PartsSource", "build_parts", "call_source", "context_facts", "hook_facts", "mcp_start", "open_session",
           "prompt_facts", "toolbox_inputs", "turn_inputs", "with_handlers", "worktree_place"]

log = logging.getLogger("agentloop.agent")


class PartsSource(Protocol):
    """What the builder reads of the agent, and only the builder (``agent.py`` cannot be imported here): the
    parts it makes are handed frozen values (``ToolboxInputs``, ``HookFacts``, ``ContextFacts``,
    ``PromptFacts``, ``TurnInputs``), never the agent."""

    @property
    def session(self) -> Session: ...
    @property
    def cwd(self) -> str: ...
    @property
    def permission_mode(self) -> str: ...
    @property
    def model_spec(self) -> str: ...
    @property
    def stop_hook_active(self) -> bool: ...
    @property
    def on_notice(self) -> Callable[[str], None] | None: ...
    @property
    def elicit(self) -> Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None: ...
    @property
    def on_mcp_progress(self) -> Callable[[str, str, str], None] | None: ...
    @property
    def mcp_json_approved(self) -> set[str]: ...
    @property
    def allowed_env(self) -> frozenset[str]: ...
    @property
    def ask_permission(self) -> AskPermission | None: ...
    def record(self, kind: str, payload: Any) -> None: ...
    @property
    def hooks(self) -> AgentHooks: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def policy(self) -> PermissionPolicy: ...
    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def secrets(self) -> SecretGuard: ...
    @property
    def stats(self) -> SessionStats: ...
    @property
    def processes(self) -> RunningProcesses: ...
    @property
    def model(self) -> Any: ...
    @property
    def model_name(self) -> str: ...
    @property
    def prices(self) -> PriceTable: ...
    @property
    def max_usd_micros(self) -> int | None: ...
    @property
    def settings(self) -> AgentSettings: ...
    def run_tool(self, call: ToolCall) -> ToolResult: ...
    def tool_pipeline(self, registry: Registry | None = None, *, child: bool = False, policy: PermissionPolicy | None = None) -> Callable[[ToolCall], ToolResult]: ...
    def open_model(self, spec: str) -> Any: ...
    @property
    def context(self) -> ContextManager: ...
    @property
    def tracing(self) -> Any: ...
    @property
    def loop_threshold(self) -> int | None: ...
    @property
    def model_options(self) -> ModelOptions: ...
    def shown_tools(self) -> Registry: ...
    def move_to(self, cwd: str, also_read: Sequence[str] = ()) -> None: ...
    def tools_changed(self) -> Registry | None: ...
    def child_system_prompt(self, cwd: str) -> str: ...
    def file_changed(self, path: str, before: bytes | None, after: bytes) -> None: ...
    @property
    def home(self) -> str: ...
    @property
    def new_session_id(self) -> str | None: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def sources(self) -> list[SettingsSource]: ...
    @property
    def plugins(self) -> list[Plugin]: ...
    @property
    def commands(self) -> Mapping[str, Any]: ...
    @property
    def skills(self) -> Mapping[str, Any]: ...
    @property
    def trust(self) -> TrustDecision: ...
    @property
    def durability(self) -> Durability: ...
    @property
    def mcp_in_background(self) -> bool: ...
    @property
    def child_env(self) -> ChildEnv: ...
    @property
    def add_dirs(self) -> list[str]: ...
    @property
    def shell_timeout_s(self) -> float: ...
    @property
    def shell_max_timeout_s(self) -> float | None: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def extra_tools(self) -> ExtraTools: ...
    @property
    def load_warnings(self) -> list[str]: ...
    @property
    def models(self) -> ModelChoice: ...
    @property
    def cli_rules(self) -> list[tuple[str, str]]: ...
    @property
    def session_link(self) -> SessionLink: ...
    @property
    def given_registry(self) -> Registry | None: ...
    @property
    def slash(self) -> SlashCommands: ...
    @property
    def mcp_servers(self) -> McpServers | None: ...
    @property
    def memory_text(self) -> str: ...
    @property
    def sandbox_settings(self) -> SandboxSettings: ...
    @property
    def calls(self) -> ToolCalls: ...
    @property
    def hook_facts(self) -> HookFacts: ...
    @property
    def context_facts(self) -> ContextFacts: ...


@dataclass(frozen=True)
class AgentParts:
    """What ``build_parts`` makes: the ``Agent`` holds each of these as is."""

    hooks: AgentHooks
    context: ContextManager
    tools: list[Tool]
    """Tools beside the built-in ones: the ``Agent`` tool, then the MCP servers' tools."""
    mcp_servers: McpServers | None
    """The MCP servers, or None when no server is configured."""
    loop_threshold: int | None
    warnings: tuple[str, ...]
    """Settings not honoured (the ``hooks`` section's), one line each."""
    session: Session
    """The session, opened (not yet started: the agent records ``session_start`` and runs SessionStart hooks)."""
    session_source: str
    """``startup`` (a new session) or ``resume``, as Claude Code's SessionStart ``source``."""
    context_facts: ContextFacts
    """What the context manager is handed of the agent (``context_facts``)."""


def open_session(cwd: str, home: str, resume: str | None, durability: Durability, sid: str | None = None) -> tuple[Session, str]:
    """A session of ``cwd``'s project: the one named ``resume``, else a new one; and its SessionStart source.

    Raises:
        SessionError / SessionBusy: the session cannot be read or is held by another process.
    """
    if resume is not None:
        return Session.resume(cwd, resume, home, durability=durability), "resume"
    return Session.create(cwd, home, durability=durability, sid=sid), "startup"


def build_parts(agent: PartsSource, resume: str | None = None) -> AgentParts:
    """The hooks, context manager, ``Agent`` tool, MCP servers and session for ``agent`` (from its settings).

    ``resume``: the id of the session to go on with, or None for a new one.

    Raises:
        AgentError: a ``hooks`` section or an MCP configuration file is malformed (one line).
        SessionError / SessionBusy: the session cannot be opened (MCP servers started are stopped first).
    """
    from ..mcp.agent import start_servers

    try:
        runner = HookRunner.from_settings(agent.sources, project_dir=agent.cwd, cwd=agent.cwd,
                                          permission_mode=agent.permission_mode, env=agent.child_env,
                                          confine=agent.sandbox.confine,  # a project's hooks: inside the sandbox
                                          host_env=agent.secrets.host_env)  # the others: no project env
        for w in runner.warnings:
            log.warning("%s", w)
        scoped = any(getattr(c, "hooks", None) is not None for c in [*agent.commands.values(), *agent.skills.values()])
        claude = ClaudeHooks(runner) if runner.handlers or scoped else None  # front matter hooks join while active
        facts = context_facts(agent)
        ctx = AgentContext(facts, claude)  # context management and the loop check
        from .session_worktree import session_worktree

        tools: list[Tool] = session_worktree(agent, worktree_place(agent)).tools()  # EnterWorktree, ExitWorktree
        if agent.settings.subagents:
            ctx.subagents = _subagents(agent, ctx.side_budget)
            tools.append(ctx.subagents.tool())
        from .hooks_and_context import cheap_model
        from .tools.web_tools import web_tools

        tools += web_tools(agent.models, agent.redactor.text, ctx.side_budget, lambda spec: cheap_model(spec, agent.settings.env))
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    try:
        servers = start_servers(mcp_start(agent))  # MCP servers from .mcp.json and mcpServers in settings
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    if servers is not None:
        try:
            # the REPL: nothing waits; it starts them once its prompt is drawn, and tools join as servers come up
            servers.background = agent.mcp_in_background
            tools += servers.tools()
        except BaseException:
            servers.close()
            raise
    try:
        session, source = open_session(agent.cwd, agent.home, resume, agent.durability, agent.new_session_id)
    except BaseException:
        if servers is not None:
            servers.close()
        raise
    hooks: AgentHooks = claude if claude is not None else NoHooks()
    return AgentParts(hooks, ctx, tools, servers, agent.settings.loop_threshold, tuple(runner.warnings), session, source, facts)


@dataclass(frozen=True)
class ChildFactory:
    """The one place a sub-agent's parts are made, all from the parent's own: its tools with every guard
    (``ToolSetup.for_child``: deny rules, protected paths, patch guard, sandbox, the recording of writes for
    rewind), its calls' pipeline (the same permission rules, re-rooted at its worktree, and the same hooks,
    whose events name the child: ``ClaudeHooks.for_child``), and the hooks its start and stop fire. Each is
    read as the child starts, so a session's new toolbox or a front end's hook handlers reach it too. Only
    what an agent type declares differs (its tools, read-only Bash: ``SubagentRunner._tools_for``)."""

    agent: PartsSource
    worktrees: Callable[[], dict[str, tuple[str, str]]]
    """The running children's worktrees (``SubagentRunner.worktrees``): where the rules are re-rooted."""

    def policy_for(self, cwd: str) -> PermissionPolicy:
        """The parent's rules for a child working in ``cwd``: re-rooted at its worktree when it has one."""
        roots = self.worktrees().get(cwd)
        return self.agent.policy.rooted_at(*roots) if roots is not None else self.agent.policy

    def tools(self, cwd: str) -> Registry:
        """The parent's own setup (its toolbox's, read as the child starts), with only what a child changes."""
        from .tools.catalog import record_of

        toolbox: Toolbox = cast(Any, self.agent).toolbox
        reg = toolbox.setup.for_child(cwd, self.policy_for(cwd)).registry()
        # the parent's tools beside the built-in ones that a child may use: MCP tools (read when a child starts:
        # servers attach after this, and /mcp may add more; its calls to them pass the same permission rules),
        # and those whose record allows children (WebFetch, WebSearch: their model calls hold from the parent's
        # loop, side_budget); never the Agent tool or one that moves the parent's session
        for t in self.agent.extra_tools:
            rec = record_of(t.name)
            shared = rec.for_children if rec is not None else t.name.startswith("mcp__")
            if shared and t.name not in reg:
                reg.register(t)
        return reg

    def hooks(self) -> HookRunner | None:
        """The parent's hook runner as it is now (a front end's handlers included), or None without hooks."""
        hooks = self.agent.hooks  # the agent's own (a front end may have added handlers since)
        return hooks.runner if isinstance(hooks, ClaudeHooks) else None

    def executor(self, registry: Registry, cwd: str, agent_id: str, agent_type: str) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
        """A child's calls through the parent's tool-call pipeline (``agent/pipeline.py``): the same hooks (its
        events naming the child) and permission rules (re-rooted at its worktree), and no one to ask; its
        batches through the same scheduler (``run.schedule``), side by side when the pipeline says each may."""
        policy = self.policy_for(cwd)
        agent = self.agent

        def calls(batch: Sequence[ToolCall]) -> list[ToolResult]:
            one = cast("ToolPipeline", agent.tool_pipeline(registry, child=True, policy=policy))  # the agent's is one
            if isinstance(one.hooks, ClaudeHooks):
                one = dataclasses.replace(one, hooks=one.hooks.for_child(agent_id, agent_type))
            return schedule(batch, one, None, alongside=one.alongside)

        return calls


def _subagents(agent: PartsSource, side_budget: ParentBudget) -> SubagentRunner:
    """The ``Agent`` tool's runner: children on the agent's model, and on what ``ChildFactory`` makes them."""
    from .plugins import plugin_agent_types
    from .subagents.agent_types import load_agent_types
    from .subagents.runner import SubagentRunner

    worktrees: dict[str, tuple[str, str]] = {}
    child = ChildFactory(agent, lambda: worktrees)
    return SubagentRunner(
        parent=side_budget,
        model=agent.model,
        make_tools=child.tools,
        make_executor=child.executor,
        hooks_from=child.hooks,
        worktrees=worktrees,
        cwd=agent.cwd,
        transcript_dir=os.path.join(agent.home, "subagents"),
        prices=agent.prices,
        model_name=agent.model_name,
        model_spec=agent.model_spec,
        max_output_for=agent.models.child_output,
        context_for=agent.child_system_prompt,
        read_only_line=lambda cwd, command: dataclasses.replace(child.policy_for(cwd), mode="plan").decide(
            BASH.name, {"command": command}).behavior == "allow",
        open_model=agent.open_model,
        tracing=agent.tracing,
        default_isolation=agent.settings.subagent_isolation,
        on_file_change=agent.file_changed,
        types=_with_aliases(agent, load_agent_types(agent.cwd, agent.home, user_home(agent.env),
                                                    agent.load_warnings, trusted=agent.trust.trusted)
                            | plugin_agent_types(agent.plugins, agent.load_warnings)),
    )


def _with_aliases(agent: PartsSource, types: dict[str, AgentType]) -> dict[str, AgentType]:
    """Agent files' ``model: opus`` (Claude Code's aliases) as the model ids they name."""
    import dataclasses

    from .trust import resolve_model

    out = {}
    for name, t in types.items():
        if t.model:
            t = dataclasses.replace(t, model=resolve_model(t.model, env=agent.env, permission_mode=agent.permission_mode,
                                                           provider=agent.models.provider))
        out[name] = t
    return out


def with_handlers(hooks: AgentHooks, context: ContextManager, handlers: Sequence[Any], agent: PartsSource) -> AgentHooks:
    """``hooks`` with ``handlers`` added (a front end's own, e.g. the Agent SDK's callbacks): they join the settings'
    runner, or, in a session without hooks, a runner of their own that the context manager and sub-agents use too.
    ``agent`` gives the folder, mode and environment hooks run with."""
    if isinstance(hooks, ClaudeHooks):
        hooks.add_handlers(handlers)
        return hooks
    runner = HookRunner(handlers, project_dir=agent.cwd, cwd=agent.cwd, permission_mode=agent.permission_mode, env=agent.child_env)
    claude = ClaudeHooks(runner)
    if isinstance(context, AgentContext):
        context.adopt_hooks(claude)  # sub-agents read the agent's hooks as each starts (ChildFactory)
    return claude


def mcp_start(agent: PartsSource) -> McpStart:
    """What the agent's MCP servers start from (``mcp.agent.start_servers``): a frozen value; the front end's
    callbacks are read through it when a server needs them, as the front end may set them later."""
    from ..mcp.agent import McpStart

    def roots() -> list[str]:
        return [agent.cwd, *[d for d in agent.add_dirs if d != agent.cwd]]

    return McpStart(cwd=agent.cwd, home=agent.home, env=agent.env, inherit=agent.child_env, sources=tuple(agent.sources),
                    project_servers=frozenset(agent.mcp_json_approved), allow_env=tuple(sorted(agent.allowed_env)),
                    roots=roots, notice_now=lambda: agent.on_notice, elicit_now=lambda: agent.elicit,
                    progress_now=lambda: agent.on_mcp_progress,
                    host_env=agent.settings.host_env, host_inherit=agent.secrets.host_env)


def toolbox_inputs(agent: PartsSource) -> ToolboxInputs:
    """What the agent's tools are built from now (``Toolbox.build``): a frozen value, so the toolbox reads
    these and never the agent, and changes nothing of it."""
    from .toolbox import ToolboxInputs

    slash, secrets = agent.slash, agent.secrets
    return ToolboxInputs(
        sources=tuple(agent.settings.sources), permission_mode=agent.permission_mode, cwd=agent.cwd, home=agent.home,
        env=agent.env, cli_rules=tuple(agent.cli_rules), hook_files=tuple(agent.sandbox_settings.hook_files),
        sandbox=agent.sandbox, read_only_agent_types=agent.context.read_only_agent_types(), add_dirs=tuple(agent.add_dirs),
        spill_dir=agent.session.spill_dir, child_env=secrets.child_env, redact=secrets.redactor.text,
        shell_timeout_s=agent.shell_timeout_s, shell_max_timeout_s=agent.shell_max_timeout_s,
        session_link=agent.session_link, given_registry=agent.given_registry, skills=slash.skills,
        skill_loaded=slash.skill_loaded, skill_bangs=slash.skill_tool_bangs, extra_tools=agent.extra_tools,
        mcp_servers=agent.mcp_servers, file_changed=agent.file_changed)


def prompt_facts(agent: PartsSource) -> PromptFacts:
    """What the system prompt says of the session now (``session_prompt``): a frozen value, never the agent."""
    from .session_prompt import PromptFacts, cap_fact, sandbox_fact
    from .system_prompt import shell_name

    return PromptFacts(
        cwd=agent.cwd, shell=shell_name(agent.env), child_env=agent.child_env, model_spec=agent.model_spec,
        permission_mode=agent.permission_mode, memory_text=agent.memory_text, skills=agent.skills,
        add_dirs=tuple(agent.add_dirs), max_output_tokens=agent.model_options.max_output_tokens,
        sandbox=sandbox_fact(agent.sandbox_settings, agent.sandbox), cap=cap_fact(agent.max_usd_micros))


def hook_facts(agent: PartsSource) -> HookFacts:
    """What hooks see of ``agent`` (``protocols.HookFacts``): made once; what changes is read when a hook runs."""

    return HookFacts(
        record=agent.record, session=lambda: agent.session, cwd=lambda: agent.cwd,
        permission_mode=lambda: agent.permission_mode, model_spec=lambda: agent.model_spec,
        stop_hook_active=lambda: agent.stop_hook_active, on_notice=lambda: agent.on_notice,
        ask_permission=lambda: agent.ask_permission, stop_turn=lambda: agent.calls.stop_turn(),
        carry_env=lambda exports, where: agent.secrets.carry_exports(exports, where))


def context_facts(agent: PartsSource) -> ContextFacts:
    """What the context manager sees of ``agent`` (``protocols.ContextFacts``): made once, when it is built."""
    return ContextFacts(models=agent.models, settings=agent.settings, session=lambda: agent.session, record=agent.record,
                        policy=lambda: agent.policy, run_tool=agent.run_tool, hooks=agent.hook_facts)


def call_source(agent: PartsSource) -> CallSource:
    """What the agent's tool calls run with (``pipeline.CallSource``), each read as a call's pipeline is built."""
    from .pipeline import CallSource

    return CallSource(
        registry=lambda: agent.registry, hooks=lambda: agent.hooks, policy=lambda: agent.policy,
        sandbox=lambda: agent.sandbox, secrets=lambda: agent.secrets, ask=lambda: agent.ask_permission,
        facts=agent.hook_facts, count_tool=lambda name, ok: agent.stats.count_tool(name, ok),
        kill_all=lambda: agent.processes.kill_all())


def turn_inputs(agent: PartsSource) -> TurnInputs:
    """What one run of a turn is handed (``turn.run_once``), as it is when the run starts."""
    from .session_worktree import moved_tools
    from .turn import TurnInputs

    return TurnInputs(
        session=agent.session, cwd=agent.cwd, model=agent.model, model_spec=agent.model_spec, model_name=agent.model_name,
        prices=agent.prices, tools=agent.shown_tools(), context=agent.context, facts=agent.context_facts,
        tracing=agent.tracing, loop_threshold=agent.loop_threshold,
        max_output_tokens=agent.model_options.max_output_tokens,
        tools_changed=lambda: moved_tools(agent) or agent.tools_changed())  # the session entered or left a worktree


def worktree_place(agent: PartsSource) -> WorktreePlace:
    """What ``EnterWorktree`` and ``ExitWorktree`` move (``session_worktree.WorktreePlace``); the agent moves itself."""
    from .session_worktree import WorktreePlace

    return WorktreePlace(cwd=lambda: agent.cwd, session_id=lambda: agent.session.id,
                         subagents=lambda: getattr(agent.context, "subagents", None), move_to=agent.move_to,
                         shown_tools=agent.shown_tools)
