"""The transport of an Agent SDK's in-process MCP server: the SDK's control channel.

A program using the Claude Agent SDK can define MCP servers in its own process
(Python ``create_sdk_mcp_server``, TypeScript ``createSdkMcpServer``) and hands
them to the CLI as servers of ``"type": "sdk"``. The CLI speaks MCP to such a
server by sending the SDK ``mcp_message`` control requests (``server_name``,
``message``: one JSON-RPC message), and the SDK's answer carries the server's
JSON-RPC reply as ``mcp_response``.

Rules:

1. The MCP client session runs over a pair of in-memory streams, as over any
   other transport: each message it writes becomes one ``mcp_message`` request
   (``send(server, message, timeout)``, a blocking call run on a worker
   thread); the reply of a request is read back as the server's message.
2. Every wait is bounded (``timeout`` seconds). A request whose answer is
   missing, late, an error, or not the JSON-RPC reply to that request gets a
   JSON-RPC error naming the problem in its place, so the session fails that
   one call with a clear message and never waits for ever.
3. A notification's answer (the SDK acknowledges it) is read and dropped.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

__all__ = ["SdkSend", "sdk_transport"]

SdkSend = Callable[[str, dict[str, Any], float], dict[str, Any]]
"""``(server, message, timeout)``: the server's JSON-RPC reply (``mcp_response``); raises with the reason."""


def reply_for(request: dict[str, Any], answer: dict[str, Any] | None, problem: str | None, server: str) -> dict[str, Any]:
    """The JSON-RPC message the session reads for ``request``: the SDK's reply if it answers it, else an error (rule 2)."""
    rid = request.get("id")
    if problem is None and answer is not None:
        if answer.get("id") == rid and ("result" in answer or "error" in answer):
            return answer
        if answer.get("id") is None and ("result" in answer or "error" in answer):
            return {**answer, "id": rid}  # a reply without its id: it can only answer this request
        problem = "its reply is not a JSON-RPC response to this request"
    method = request.get("method")
    return {"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32603, "message": f"the Agent SDK's MCP server {server!r} did not answer {method}: {problem}"}}


@contextlib.asynccontextmanager
async def sdk_transport(server: str, send: SdkSend, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    """An MCP client transport whose writes are ``mcp_message`` requests to the SDK (rules 1 to 3)."""
    import anyio
    from mcp import types
    from mcp.shared.message import SessionMessage

    to_client_w, to_client_r = anyio.create_memory_object_stream[Any](16)
    from_client_w, from_client_r = anyio.create_memory_object_stream[Any](16)

    async def one(message: dict[str, Any]) -> None:
        answer: dict[str, Any] | None = None
        problem: str | None = None
        try:
            answer = await anyio.to_thread.run_sync(send, server, message, timeout, abandon_on_cancel=True)
        except Exception as exc:  # the channel says why: an error answer, a malformed one, a late one, stdin closed
            problem = str(exc) or type(exc).__name__
        if "method" not in message or "id" not in message:
            return  # rule 3: a notification (or our reply to the server) is acknowledged, nothing to read
        reply = reply_for(message, answer, problem, server)
        try:
            parsed = types.jsonrpc_message_adapter.validate_python(reply, by_name=False)
        except ValueError as exc:
            parsed = types.jsonrpc_message_adapter.validate_python(
                reply_for(message, None, f"its reply is not valid JSON-RPC ({type(exc).__name__})", server), by_name=False)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_client_w.send(SessionMessage(parsed))

    async def pump() -> None:
        async with anyio.create_task_group() as tg:
            async for item in from_client_r:
                body = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                tg.start_soon(one, body)

    async with anyio.create_task_group() as tg, to_client_w, to_client_r, from_client_w, from_client_r:
        tg.start_soon(pump)
        try:
            yield to_client_r, from_client_w
        finally:
            tg.cancel_scope.cancel()
