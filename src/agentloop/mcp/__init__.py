"""MCP servers as agentloop tools: configuration, the client, and the tools it makes.

``load_servers(cwd)`` reads the configuration (``.mcp.json`` and the settings
files); ``McpManager(servers)`` starts the servers on a background event loop,
``.tools()`` gives ``mcp__<server>__<tool>`` tools for any driver, and
``.close()`` stops them all. The ``mcp`` SDK is imported only when a server
starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (
        McpManager,
        McpTool,
        McpToolError,
        ServerStatus,
        model_names,
        result_value,
        tool_name,
    )
    from .config import (
        ConfigError,
        ServerConfig,
        add_server,
        expand,
        load_servers,
        remove_server,
        scope_path,
    )

_HOME = {
    "McpManager": "client", "McpTool": "client", "McpToolError": "client", "ServerStatus": "client",
    "model_names": "client", "result_value": "client", "tool_name": "client",
    "ConfigError": "config", "ServerConfig": "config", "add_server": "config", "expand": "config",
    "load_servers": "config", "remove_server": "config", "scope_path": "config",
}


def __getattr__(name: str) -> Any:
    """The package's names, each loaded on first use: reading the configuration never loads the client."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'agentloop.mcp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ConfigError",
    "McpManager",
    "McpTool",
    "McpToolError",
    "ServerConfig",
    "ServerStatus",
    "add_server",
    "expand",
    "load_servers",
    "model_names",
    "remove_server",
    "result_value",
    "scope_path",
    "tool_name",
]
