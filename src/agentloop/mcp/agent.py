"""The terminal agent's MCP servers: started with the agent, listed by ``/mcp``, stopped at exit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .client import McpManager, ServerStatus
from .config import load_servers

__all__ = ["attach", "format_status"]


def attach(agent: Any) -> McpManager | None:
    """Start the servers configured for ``agent.cwd`` and add their tools to ``agent.extra_tools``.

    Sets ``agent.mcp`` (the manager) and ``agent.mcp_status()`` (what ``/mcp``
    prints; it also tries failed servers again and registers the tools they
    bring). Servers start at the same time; one that fails is listed as
    failed, with its reason, and does not stop the agent.

    Returns:
        The manager, or None when no server is configured.
    Raises:
        ConfigError: a configuration file is malformed (naming it and the place).
    """
    servers = load_servers(
        agent.cwd, agent.home, sources=agent.sources,
        project_servers=getattr(agent, "mcp_json_approved", set()), warnings=[],
    )
    agent.mcp = None
    if not servers:
        return None
    manager = McpManager(servers, cwd=agent.cwd, environ=agent.env)
    try:
        tools = manager.tools()
    except BaseException:
        manager.close()
        raise
    agent.extra_tools.extend(tools)
    agent.mcp = manager

    def mcp_status() -> str:
        """``/mcp``: try failed servers again, add any tools they bring, and list every server."""
        known = {t.name for t in agent.extra_tools}
        fresh = [t for t in manager.tools(retry_failed=True) if t.name not in known]
        if fresh:
            agent.register_tools(fresh)
        return format_status(manager.status())

    agent.mcp_status = mcp_status
    return manager


def format_status(statuses: Iterable[ServerStatus], *, show_tools: bool = True) -> str:
    """The lines ``/mcp`` and ``agentloop mcp list`` print: each server, its state, its tools."""
    out: list[str] = []
    for s in statuses:
        where = s.transport if s.scope == "memory" else f"{s.transport}, {s.scope}: {s.source}"
        who = f" {s.server_name} {s.server_version}" if s.server_name else ""
        n = len(s.tools)
        count = f", {n} tool{'s' if n != 1 else ''}" if s.status == "connected" or n else ""
        out.append(f"{s.name}: {s.status}{who} ({where}){count}")
        if s.error:
            out.append(f"  error: {s.error}")
        if show_tools:
            for t in s.tools:
                out.append(f"  {t}")
        for k in s.skipped:
            out.append(f"  skipped {k}")
    return "\n".join(out) if out else "no MCP servers (configure them in .mcp.json or with `agentloop mcp add`)"
