"""MCP servers as agentloop tools: configuration, the client, and the tools it makes.

``load_servers(cwd)`` reads the configuration (``.mcp.json`` and the settings
files); ``McpManager(servers)`` starts the servers on a background event loop,
``.tools()`` gives ``mcp__<server>__<tool>`` tools for any driver, and
``.close()`` stops them all. The ``mcp`` SDK is imported only when a server
starts.
"""

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
