"""An MCP server on the SDK's low-level ``Server``, for the wire shapes fastmcp never sends.

- an unknown tool is a JSON-RPC error -32602 (not an ``isError`` result);
- ``passthrough`` has the schema ``{"type": "object"}`` and echoes its arguments;
- ``badschema`` has an input schema that is not valid JSON Schema;
- ``wrongshape`` declares an outputSchema and returns content that breaks it.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

TOOLS = [
    types.Tool(name="passthrough", description="Echo the arguments", input_schema={"type": "object"},
               annotations=types.ToolAnnotations(read_only_hint=True, title="Pass through")),
    types.Tool(name="badschema", description="Schema is broken", input_schema={"type": "object", "properties": {"x": {"type": 5}}}),
    types.Tool(name="wrongshape", description="Breaks its own outputSchema", input_schema={"type": "object"},
               output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    types.Tool(name="dotted.name", description="A name with a dot", input_schema={"type": "object"}),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "passthrough":
        return types.CallToolResult(content=[], structured_content=dict(params.arguments or {}))
    if params.name == "wrongshape":
        return types.CallToolResult(content=[types.TextContent(type="text", text="{}")], structured_content={"n": "x"})
    if params.name == "dotted.name":
        return types.CallToolResult(content=[types.TextContent(type="text", text="dotted ok")])
    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")


server: Server[Any] = Server("lowlevel", version="0.3.0", on_list_tools=list_tools, on_call_tool=call_tool)
