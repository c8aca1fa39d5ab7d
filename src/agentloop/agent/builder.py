"""One way to build an agent's collaborators: hooks, context manager, sub-agents, MCP servers and their tools.

``Agent.__init__`` reads its settings, opens its model and sandbox, then calls
``build_parts(agent)`` and takes what it returns as its own attributes
(``hooks``, ``context``, ``extra_tools``, ``mcp_servers``, ``loop_threshold``)
before it opens its session. Nothing sets an agent's attributes from outside
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

__all__ = ["AgentParts", "build_parts"]


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


def build_parts(agent: Any) -> AgentParts:
    """The hooks, context manager, ``Agent`` tool and MCP servers for ``agent`` (from its settings).

    Raises:
        AgentError: a ``hooks`` section or an MCP configuration file is malformed (one line).
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
            parts.tools += servers.tools()
        except BaseException:
            servers.close()
            raise
        parts.mcp_servers = servers
    return parts
