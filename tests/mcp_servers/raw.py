"""A raw JSON-RPC MCP server over stdio, written for the tests, for what well-behaved SDK servers never do.

No SDK: it reads one JSON-RPC message a line from stdin and writes its answers
to stdout, so each misbehaviour is exactly what the test asks for.

Environment:
    RAW_GARBAGE=N       print N lines that are not JSON on stdout before answering initialize
    RAW_TOOLS=a,b,...   extra tool names (each echoes its arguments); ``\\x00`` nothing, the empty name allowed
    RAW_RECORD=FILE     append every message received to FILE (one JSON a line)
    RAW_LOG_AFTER=S     S seconds after initialize, send a warning notifications/message unasked (an idle server's log)

Tools:
    big(size, error=false)  a text result of ``size`` characters (``isError`` when ``error``)
    grow()                  adds the tool ``late``, the prompt ``late_prompt`` and the resource
                            ``raw://late``, and sends the three list_changed notifications
    hang()                  never answers
    die()                   exits the process mid-call
    summary()               a text that says something else than its structuredContent
    progress(steps)         sends ``steps`` notifications/progress with the call's progressToken, then answers
    log(level, text)        sends notifications/message at ``level``, then answers
    ask(question)           sends elicitation/create and answers with the client's reply (as JSON)
    roots()                 sends roots/list and answers with the client's reply (as JSON)
    tasky                   declares execution.taskSupport "required"
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

RECORD = os.environ.get("RAW_RECORD")
EXTRA = [n for n in os.environ.get("RAW_TOOLS", "").split(",") if n != "\x00"] if "RAW_TOOLS" in os.environ else []

OBJ: dict[str, Any] = {"type": "object"}
TOOLS: list[dict[str, Any]] = [
    {"name": "big", "description": "A long text", "inputSchema": {
        "type": "object", "properties": {"size": {"type": "integer"}, "error": {"type": "boolean"}}, "required": ["size"]}},
    {"name": "grow", "description": "Adds the tool 'late'", "inputSchema": OBJ},
    {"name": "hang", "description": "Never answers", "inputSchema": OBJ},
    {"name": "die", "description": "Exits mid-call", "inputSchema": OBJ},
    {"name": "summary", "description": "Text and structured content that differ", "inputSchema": OBJ},
    {"name": "progress", "description": "Reports progress", "inputSchema": {
        "type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]}},
    {"name": "log", "description": "Logs a message", "inputSchema": {
        "type": "object", "properties": {"level": {"type": "string"}, "text": {"type": "string"}}}},
    {"name": "ask", "description": "Asks the user", "inputSchema": {
        "type": "object", "properties": {"question": {"type": "string"}}}},
    {"name": "roots", "description": "Lists the client's roots", "inputSchema": OBJ},
    {"name": "tasky", "description": "Runs only as a task", "inputSchema": OBJ, "execution": {"taskSupport": "required"}},
] + [{"name": n, "description": f"echo as {n!r}", "inputSchema": OBJ} for n in EXTRA]
PROMPTS: list[dict[str, Any]] = [{"name": "greet", "description": "Say hello", "arguments": [{"name": "who", "required": True}]}]
RESOURCES: list[dict[str, Any]] = [{"uri": "raw://readme", "name": "readme", "mimeType": "text/plain"}]


_OUT = threading.Lock()


def send(obj: dict[str, Any]) -> None:
    with _OUT:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def _log_later(seconds: float) -> None:
    threading.Timer(seconds, send, args=({"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "warning", "logger": "raw", "data": "disk almost full"}},)).start()


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


WAITING: dict[str, Any] = {}
"""Our own requests to the client, by id: the id of the tools/call waiting for the answer."""
ASK_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "title": "Your name"},
    "count": {"type": "integer", "description": "How many"},
    "sure": {"type": "boolean"},
    "colour": {"type": "string", "enum": ["red", "green"]},
}, "required": ["name", "count"]}


def call(name: str, args: dict[str, Any], rid: Any = None, meta: dict[str, Any] | None = None) -> dict[str, Any] | None:
    if name == "big":
        size = int(args["size"])
        line = "0123456789abcdef" * 4 + "\n"
        text = (line * (size // len(line) + 1))[:size]
        return text_result(text, error=bool(args.get("error")))
    if name == "grow":
        if not any(t["name"] == "late" for t in TOOLS):
            TOOLS.append({"name": "late", "description": "added later", "inputSchema": OBJ})
            PROMPTS.append({"name": "late_prompt", "description": "added later"})
            RESOURCES.append({"uri": "raw://late", "name": "late", "mimeType": "text/plain"})
        for kind in ("tools", "prompts", "resources"):
            send({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})
        return text_result("grown")
    if name == "hang":
        return None
    if name == "die":
        os._exit(3)
    if name == "late" and any(t["name"] == "late" for t in TOOLS):
        return text_result("late ok")
    if name == "progress":
        token = (meta or {}).get("progressToken")
        steps = int(args["steps"])
        for i in range(steps):
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i + 1, "total": steps, "message": f"step {i + 1}"}})
        return text_result(f"token {json.dumps(token)}")
    if name == "log":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": args.get("level", "info"), "logger": "rawlog", "data": args.get("text", "")}})
        return text_result("logged")
    if name in ("ask", "roots"):
        own = f"srv-{len(WAITING) + 1}"
        WAITING[own] = rid
        if name == "ask":
            send({"jsonrpc": "2.0", "id": own, "method": "elicitation/create",
                  "params": {"message": args.get("question", "?"), "requestedSchema": ASK_SCHEMA}})
        else:
            send({"jsonrpc": "2.0", "id": own, "method": "roots/list"})
        return None
    if name == "summary":
        return {"content": [{"type": "text", "text": "3 rows"}], "structuredContent": {"rows": [1, 2, 3]}}
    if name in EXTRA:
        return text_result(f"{name}: {json.dumps(args, sort_keys=True)}")
    return text_result(f"unknown tool {name}", error=True)


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if RECORD:
            with open(RECORD, "a", encoding="utf-8") as f:
                f.write(json.dumps(msg) + "\n")
        method, rid = msg.get("method"), msg.get("id")
        if method is None and rid in WAITING:  # the client's answer to our request: finish the waiting call
            send({"jsonrpc": "2.0", "id": WAITING.pop(rid), "result": text_result(json.dumps(msg.get("result", msg.get("error"))))})
            continue
        if rid is None or method is None:
            continue  # notifications
        params = msg.get("params") or {}
        if method == "initialize":
            for i in range(int(os.environ.get("RAW_GARBAGE", "0"))):
                sys.stdout.write(f"garbage line {i}: this is not JSON\n")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                                 "resources": {"listChanged": True}},
                "serverInfo": {"name": "raw", "version": "0.1.0"}}})
            if os.environ.get("RAW_LOG_AFTER"):
                _log_later(float(os.environ["RAW_LOG_AFTER"]))
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            result = call(params.get("name", ""), params.get("arguments") or {}, rid, params.get("_meta"))
            if result is not None:
                send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "prompts/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"prompts": PROMPTS}})
        elif method == "resources/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resources": RESOURCES}})
        elif method == "prompts/get":
            who = (params.get("arguments") or {}).get("who")
            if params.get("name") != "greet" or not who:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "greet needs 'who'"}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"description": "a greeting", "messages": [
                    {"role": "user", "content": {"type": "text", "text": f"Say hello to {who}."}}]}})
        elif method == "resources/read":
            uri = params.get("uri")
            if uri in {r["uri"] for r in RESOURCES}:
                send({"jsonrpc": "2.0", "id": rid, "result": {"contents": [
                    {"uri": uri, "mimeType": "text/plain", "text": f"the contents of {uri}"}]}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": f"no resource {uri}"}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
