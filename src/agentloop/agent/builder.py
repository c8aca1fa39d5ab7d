"""One way to build an agent's collaborators: hooks, context manager, sub-agents, MCP servers, their tools, and the session.

``Agent.__init__`` reads its settings, opens its model and sandbox, then calls
``build_parts(agent, resume)`` and takes what it returns as its own attributes
(``hooks``, ``context``, ``extra_tools``, ``mcp_servers``, ``loop_threshold``,
``session``). The session is opened last, so a part that cannot be built leaves
no session file, and MCP servers already started are stopped when the session
cannot be opened. Nothing sets an agent's attributes from outside
``agent/agent.py``; every method the agent calls on these parts is declared on
the Protocol it holds them as (``agent/protocols.py``).

The parts read the agent (its settings, model, sandbox, and at call time its
session) but do not change it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config.settings import ConfigError
from ..tools import Tool
from .extensions import loop_threshold, make_extensions
from .protocols import AgentError, AgentHooks, ContextManager, NoHooks
from .session.store import Durability, Session

__all__ = ["AgentParts", "build_parts", "open_session"]


@dataclass
class AgentParts:
    """What ``build_parts`` makes: the ``Agent`` holds each of these as is."""

    hooks: AgentHooks
    context: ContextManager
    tools: list[Tool] = field(default_factory=list)
    """Tools beside the built-in ones: the ``Agent`` tool, then the MCP servers' tools."""
    mcp_servers: Any = None
    """An ``agentloop.mcp.agent.McpServers``, or None when no server is configured."""
    loop_threshold: int | None = None
    warnings: list[str] = field(default_factory=list)
    """Settings not honoured (the ``hooks`` section's), one line each."""
    session: Session | None = None
    """The session, opened (not yet started: the agent records ``session_start`` and runs SessionStart hooks)."""
    session_source: str = "startup"
    """``startup`` (a new session) or ``resume``, as Claude Code's SessionStart ``source``."""


def open_session(cwd: str, home: str, resume: str | None, durability: Durability) -> tuple[Session, str]:
    """A session of ``cwd``'s project: the one named ``resume``, else a new one; and its SessionStart source.

    Raises:
        SessionError / SessionBusy: the session cannot be read or is held by another process.
    """
    if resume is not None:
        return Session.resume(cwd, resume, home, durability=durability), "resume"
    return Session.create(cwd, home, durability=durability), "startup"


def build_parts(agent: Any, resume: str | None = None) -> AgentParts:
    """The hooks, context manager, ``Agent`` tool, MCP servers and session for ``agent`` (from its settings).

    ``resume``: the id of the session to go on with, or None for a new one.

    Raises:
        AgentError: a ``hooks`` section or an MCP configuration file is malformed (one line).
        SessionError / SessionBusy: the session cannot be opened (MCP servers started are stopped first).
    """
    from ..mcp.agent import start_servers

    try:
        ext = make_extensions(agent)  # Claude Code hooks, context management, loop check, the Agent tool
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    hooks: AgentHooks = ext.hooks if ext.hooks is not None else NoHooks()
    parts = AgentParts(hooks, ext.context, list(ext.tools), loop_threshold=loop_threshold(agent), warnings=ext.warnings)
    try:
        servers = start_servers(agent)  # MCP servers from .mcp.json and mcpServers in settings
    except ConfigError as exc:
        raise AgentError(str(exc)) from None
    if servers is not None:
        try:
            # the REPL: nothing waits; it starts them once its prompt is drawn, and tools join as servers come up
            servers.background = bool(getattr(agent, "mcp_in_background", False))
            parts.tools += servers.tools()
        except BaseException:
            servers.close()
            raise
        parts.mcp_servers = servers
    try:
        parts.session, parts.session_source = open_session(agent.cwd, agent.home, resume, agent.durability)
    except BaseException:
        if servers is not None:
            servers.close()
        raise
    return parts
