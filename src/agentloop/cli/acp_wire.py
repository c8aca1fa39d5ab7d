"""ACP: the JSON-RPC 2.0 wire, every message checked before the SDK sees it.

The ACP SDK's own stdio transport trusts what it reads: a JSON array ended the
connection (an ``AttributeError``), a line that is not JSON was dropped
unanswered, and ``"id": 1e400`` was answered with ``"id": Infinity``, which is
not JSON. This transport stands between the pipes and the SDK's connection:

1. One message a line (ACP v1, "Transports": messages are individual requests,
   notifications or responses). A line that is not JSON, or holds ``NaN`` or
   ``Infinity``, is answered ``-32700`` Parse error with ``id: null``.
2. Batches are not supported in ACP v1: any JSON array, ``[]`` included, is
   answered with one ``-32600`` Invalid Request error with ``id: null`` and
   none of its entries is run, as the official ACP SDK (the Rust crate) does.
3. An object is a request (``method`` a string, ``params`` an object or an
   array when present), a notification (the same without ``id``) or a response
   (``id`` and ``result`` or ``error``), with ``"jsonrpc": "2.0"``. Anything
   else is answered ``-32600`` with the request's id when that id is valid,
   else ``id: null`` (JSON-RPC 2.0, section 5).
4. A valid id is a string, null, or an integer JavaScript holds exactly
   (``|id| <= 2**53 - 1``); objects, arrays, booleans, numbers with a fraction
   or an exponent (``1.0``, ``1e400``) are refused, so an id is never echoed
   in a form the client cannot read back.
5. A request whose params hold a number past any double (``1e400``) is
   answered ``-32602`` Invalid params before a handler sees it.
6. What is written is strict JSON: a value with no JSON form (a NaN, an
   infinity) never reaches the pipe; a response that would hold one is
   answered ``-32603`` instead. The connection stays open after every refusal.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from typing import Any

__all__ = ["CheckedTransport", "refusal"]

MAX_SAFE_ID = 2**53 - 1
"""The largest integer id: what a JavaScript client reads back exactly (Number.MAX_SAFE_INTEGER)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def valid_id(v: Any) -> bool:
    """Rule 4: a string, null, or a safe integer (never a boolean, a float, an object or an array)."""
    if v is None or isinstance(v, str):
        return True
    return isinstance(v, int) and not isinstance(v, bool) and -MAX_SAFE_ID <= v <= MAX_SAFE_ID


def refusal(message: Any) -> tuple[Any, str] | None:
    """Rules 2 to 4: why ``message`` (parsed JSON) is not a message this connection takes, with
    the id to answer with; None when it is one."""
    if isinstance(message, list):
        return None, "batch arrays are not supported: send each message on its own line"
    if not isinstance(message, dict):
        return None, "a message is a JSON object"
    has_id = "id" in message
    rid = message.get("id")
    echo = rid if has_id and valid_id(rid) else None
    if message.get("jsonrpc") != "2.0":
        return echo, 'a message has "jsonrpc": "2.0"'
    if has_id and not valid_id(rid):
        return None, "an id is a string, null or an integer of at most 2**53 - 1"
    if "method" in message:
        if not isinstance(message["method"], str):
            return echo, "method is a string"
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return echo, "params is an object or an array"
        return None
    if has_id and ("result" in message) != ("error" in message) and (rid is not None or "error" in message):
        return None  # a response (an error about a message whose id could not be read has id null)
    return echo, "neither a request, a notification nor a response"


def _infinite(v: Any) -> bool:
    """True when ``v`` holds a number no double can hold (``1e400``): JSON that parses but has no value."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, float) and not math.isfinite(x):
            return True
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return False


def _error(rid: Any, code: int, message: str, reason: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": {"reason": reason}}}


class CheckedTransport:
    """An ``acp`` message transport over the stdio byte streams that answers bad messages itself."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        try:
            data = json.dumps(message, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        except (ValueError, TypeError) as exc:  # rule 6: no NaN or Infinity on the wire
            if "id" not in message or "method" in message:
                raise
            data = json.dumps(_error(message["id"], INTERNAL_ERROR, "Internal error", f"the answer has no JSON form: {exc}"),
                              separators=(",", ":"))
        async with self._lock:
            self._writer.write(data.encode("utf-8") + b"\n")
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line, parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                await self._refuse(None, PARSE_ERROR, "Parse error", f"not JSON: {str(exc).splitlines()[0][:200]}")
                continue
            why = refusal(message)
            if why is not None:
                await self._refuse(why[0], INVALID_REQUEST, "Invalid Request", why[1])
            elif "method" in message and _infinite(message.get("params")):
                why_not = "a number in params is past any double (such as 1e400)"
                if "id" in message:
                    await self._refuse(message["id"], INVALID_PARAMS, "Invalid params", why_not)
                else:  # a notification is never answered (JSON-RPC 2.0 section 4.1): dropped, and said here
                    sys.stderr.write(f"agentloop acp: dropped a {message['method']} notification: {why_not}\n")
            else:
                return dict(message)

    async def _refuse(self, rid: Any, code: int, text: str, reason: str) -> None:
        sys.stderr.write(f"agentloop acp: refused a message ({text}): {reason}\n")
        await self.send(_error(rid, code, text, reason))

    async def _read_line(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                chunks.append(await self._reader.readuntil(b"\n"))
                return b"".join(chunks)
            except asyncio.LimitOverrunError as exc:
                chunks.append(await self._reader.readexactly(exc.consumed))
            except asyncio.IncompleteReadError as exc:
                chunks.append(exc.partial)
                return b"".join(chunks)

    async def close(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            pass
