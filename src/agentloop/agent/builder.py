"""One way to build an agent's collaborators: hooks, context manager, sub-agents, MCP servers, their tools, and the session.

``Agent.__init__`` reads its settings, opens its model and sandbox, then calls
``build_parts(agent, resume)`` and takes the frozen ``AgentParts`` it returns
as its own (``hooks``, ``context``, ``extra_tools``, ``mcp_servers``,
``loop_threshold``, ``session``). The session is opened last, so a part that
cannot be built leaves no session file, and MCP servers already started are
stopped when the session cannot be opened. Nothing sets an agent's attributes
from outside ``agent/agent.py``; every method the agent calls on these parts is
declared on the Protocol it holds them as (``agent/protocols.py``), and what
the parts may see of the agent is ``PartsSource``.

The parts read the agent (its settings, model, sandbox, and at call time its
session) but do not change it. Settings they use, from ``AgentSettings``:
``hooks`` (all files, merged), ``loopThreshold`` (default 5; 0 turns it off),
``loopCheckModel`` (default: the provider's cheap model; ``false`` turns it
off), ``contextWindow`` (via ``agent.window``), ``toolResultCap``,
``subagents`` (false turns the Agent tool off), ``subagentIsolation``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..config.settings import ConfigError, user_home
from ..events import ToolCall, ToolResult
from ..run import schedule
from ..tools import Registry, Tool
from .hooks.runner import HookRunner
from .hooks_and_context import AgentContext, ClaudeHooks
from .protocols import AgentError, AgentHooks, ContextManager, NoHooks, PartsSource
from .session.store import Durability, Session
from .tools.builtin import BASH

if TYPE_CHECKING:
    from ..mcp.agent import McpServers
    from .permissions.rules import PermissionPolicy
    from .pipeline import ToolPipeline
    from .subagents.agent_types import AgentType
    from .subagents.parent_budget import ParentBudget
    from .subagents.runner import SubagentRunner
    from .toolbox import Toolbox

__all__ = ["AgentParts", "ChildFactory", "build_parts", "open_session", "with_handlers"]

log = logging.getLogger("agentloop.agent")


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
                                          confine=agent.sandbox.confine)  # a project's hooks: inside the sandbox
        for w in runner.warnings:
            log.warning("%s", w)
        scoped = any(getattr(c, "hooks", None) is not None for c in [*agent.commands.values(), *agent.skills.values()])
        claude = ClaudeHooks(runner) if runner.handlers or scoped else None  # front matter hooks join while active
        ctx = AgentContext(agent, claude)  # context management and the loop check
        from .session_worktree import session_worktree

        tools: list[Tool] = session_worktree(cast(Any, agent)).tools()  # EnterWorktree, ExitWorktree (the Agent itself)
        if agent.settings.subagents:
            ctx.subagents = _subagents(agent, ctx.side_budget)
            tools.append(ctx.subagents.tool())
        from .hooks_and_context import cheap_model
        from .tools.web_tools import web_tools

        tools += web_tools(agent.models, agent.redactor.text, ctx.side_budget, lambda spec: cheap_model(spec, agent.settings.env))
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    try:
        servers = start_servers(agent)  # MCP servers from .mcp.json and mcpServers in settings
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
    return AgentParts(hooks, ctx, tools, servers, agent.settings.loop_threshold, tuple(runner.warnings), session, source)


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
        hooks = cast(Any, self.agent).hooks  # the agent's own (a front end may have added handlers since)
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
        hooks.runner.handlers += tuple(handlers)
        return hooks
    runner = HookRunner(handlers, project_dir=agent.cwd, cwd=agent.cwd, permission_mode=agent.permission_mode, env=agent.child_env)
    claude = ClaudeHooks(runner)
    if isinstance(context, AgentContext):
        context.hooks = context.hooks or claude  # sub-agents read the agent's hooks as each starts (ChildFactory)
    return claude
