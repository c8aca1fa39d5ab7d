"""The Agent SDK's in-process MCP servers, served over the control channel, played raw on the wire.

The specification is the SDK's own sources and Claude Code's documentation:
an ``--mcp-config`` server of ``"type": "sdk"`` (``McpSdkServerConfig`` in
``sdk.d.ts``; the Python SDK's ``subprocess_cli.py`` passes it without its
``instance``) lives in the SDK's process; the CLI sends it each JSON-RPC
message as a ``control_request`` of subtype ``mcp_message`` (``server_name``,
``message``), and the SDK answers with a ``control_response`` whose
``response`` carries the server's reply as ``mcp_response`` (the Python SDK's
``_internal/query.py``; ``SDKControlMcpMessageRequest``). Its tools are
``mcp__<server>__<tool>``. Here the test plays the SDK and its server, so it
can also answer wrongly, late, or not at all.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]
SDK_START = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
Msg = dict[str, Any]
Answer = Callable[[Msg], "Msg | None"]
"""The test's SDK: the ``control_response.response`` for an ``mcp_message`` request, or None to stay silent."""


def _calc_reply(message: Msg) -> Msg:
    """A well-behaved in-process server ``calc`` with one tool ``add``: its JSON-RPC reply to ``message``."""
    method, rid = message.get("method"), message.get("id")
    if rid is None:
        return {"jsonrpc": "2.0", "result": {}}  # a notification: the Python SDK acknowledges it so
    if method == "initialize":
        result: Msg = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                       "serverInfo": {"name": "calc", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "add", "description": "add two numbers", "inputSchema": {
            "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]}
    elif method == "tools/call":
        a, b = message["params"]["arguments"]["a"], message["params"]["arguments"]["b"]
        result = {"content": [{"type": "text", "text": f"the sum is {a + b}"}]}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def well(message: Msg) -> Msg | None:
    return {"subtype": "success", "response": {"mcp_response": _calc_reply(message)}}


class Sdk:
    """agentloop started as the SDK starts it with one SDK server ``calc``; the test answers its ``mcp_message``s."""

    def __init__(self, base: Path, replies: list[Msg], answer: Answer, *flags: str, env: dict[str, str] | None = None,
                 in_initialize: bool = False):
        d = base / "proj"
        d.mkdir()
        (base / "script.json").write_text(json.dumps(replies))
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "ANTHROPIC_", "OPENAI_", "MCP_"))}
        e.update(AGENTLOOP_HOME=str(base / "home"), HOME=str(base / "user"), NO_COLOR="1", **(env or {}))
        config = [] if in_initialize else ["--mcp-config", json.dumps({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}})]
        self.initialize: Msg = {"subtype": "initialize", **({"sdkMcpServers": ["calc"]} if in_initialize else {})}
        self.p = subprocess.Popen([*AGENTLOOP, *SDK_START, "--model", f"scripted:{base / 'script.json'}", *config,
                                   *flags], cwd=d, env=e, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.answer = answer
        self.asked: list[Msg] = []
        self.seen: list[Msg] = []
        self.lines: queue.Queue[Msg | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, obj: Msg) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(obj) + "\n")
        self.p.stdin.flush()

    def until(self, pred: Callable[[Msg], bool], timeout: float = 90) -> Msg:
        """Read stdout, answering each ``mcp_message`` as ``answer`` says, until a line matches."""
        while True:
            m = self.lines.get(timeout=timeout)
            if m is None:
                raise AssertionError(f"stdout ended first; stderr: {self.finish()[1]}")
            self.seen.append(m)
            req = m.get("request", {}) if m.get("type") == "control_request" else {}
            if req.get("subtype") == "mcp_message":
                self.asked.append(req)
                body = self.answer(req["message"]) if req.get("server_name") == "calc" else {
                    "subtype": "error", "error": f"no server {req.get('server_name')}"}
                if body is not None:
                    self.send({"type": "control_response", "response": {"request_id": m["request_id"], **body}})
            if pred(m):
                return m

    def run(self, prompt: str) -> Msg:
        self.send({"type": "control_request", "request_id": "init", "request": self.initialize})
        self.send({"type": "user", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": None, "session_id": ""})
        return self.until(lambda m: m.get("type") == "result")

    def finish(self) -> tuple[int, str]:
        if self.p.stdin is not None and not self.p.stdin.closed:
            self.p.stdin.close()
        try:
            self.p.wait(60)
        finally:
            if self.p.poll() is None:
                self.p.kill()
        assert self.p.stderr is not None
        return int(self.p.returncode), self.p.stderr.read()

    def tool_result(self, call_id: str) -> Msg:
        for m in self.seen:
            if m.get("type") == "user" and isinstance(m["message"]["content"], list):
                for b in m["message"]["content"]:
                    if b.get("tool_use_id") == call_id:
                        return dict(b)
        raise AssertionError(f"no result for {call_id}")


ADD = [{"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 40}, "id": "t_add"}]}, {"text": "done"}]
ALLOW = ("--allowedTools", "mcp__calc__add")


def test_the_sdk_server_is_spoken_to_in_mcp_message_requests_and_its_reply_is_the_tool_result(tmp_path: Path) -> None:
    sdk = Sdk(tmp_path, ADD, well, *ALLOW)
    result = sdk.run("add")
    code, err = sdk.finish()
    assert code == 0, err
    methods = [r["message"].get("method") for r in sdk.asked]
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"] and "tools/call" in methods
    call = next(r["message"] for r in sdk.asked if r["message"].get("method") == "tools/call")
    assert call["params"] == {"name": "add", "arguments": {"a": 2, "b": 40}} or call["params"]["arguments"] == {"a": 2, "b": 40}
    out = sdk.tool_result("t_add")
    assert not out.get("is_error") and "the sum is 42" in json.dumps(out)
    assert result["subtype"] == "success"
    init = next(m for m in sdk.seen if m.get("subtype") == "init")
    assert "mcp__calc__add" in init["tools"] and {"name": "calc", "status": "connected"} in init["mcp_servers"]


def _broken_call(make: Callable[[Msg], Msg | None]) -> Answer:
    """The server starts well; its answer to ``tools/call`` is ``make(message)`` (None: no answer at all)."""
    def answer(message: Msg) -> Msg | None:
        return make(message) if message.get("method") == "tools/call" else well(message)
    return answer


def _reply(reply: Msg) -> Msg:
    return {"subtype": "success", "response": {"mcp_response": reply}}


@pytest.mark.parametrize("make, named", [
    (lambda m: {"subtype": "error", "error": "the server blew up"}, "the server blew up"),
    (lambda m: {"subtype": "success", "response": {}}, "needs an mcp_response object"),
    (lambda m: _reply("nonsense"), "needs an mcp_response object"),  # type: ignore[arg-type]
    (lambda m: _reply({"jsonrpc": "2.0", "id": 999, "result": {"content": []}}), "not a JSON-RPC response to this request"),
    (lambda m: _reply({"jsonrpc": "2.0", "id": m["id"], "result": {"content": "not a list"}}), "failed during 'add'"),
    (lambda m: _reply({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32000, "message": "tool exploded"}}), "tool exploded"),
], ids=["error-answer", "no-mcp_response", "mcp_response-not-an-object", "wrong-id", "invalid-result", "json-rpc-error"])
def test_a_broken_answer_to_a_tool_call_is_a_tool_error_naming_the_problem(
        tmp_path: Path, make: Callable[[Msg], Msg | None], named: str) -> None:
    sdk = Sdk(tmp_path, ADD, _broken_call(make), *ALLOW, env={"MCP_TOOL_TIMEOUT": "15000"})  # a reply taken wrongly ends too
    result = sdk.run("add")
    sdk.finish()
    out = sdk.tool_result("t_add")
    assert out.get("is_error") and named in json.dumps(out), out
    assert result["subtype"] == "success"  # the turn goes on: the model saw the error


def test_a_tool_call_the_sdk_never_answers_is_a_tool_error_within_the_server_s_timeout(tmp_path: Path) -> None:
    """``timeout`` of an SDK server (milliseconds, ``McpSdkServerConfig``) bounds each call: silence is an error, not a hang."""
    sdk = Sdk(tmp_path, ADD, _broken_call(lambda m: None), *ALLOW, env={"MCP_TOOL_TIMEOUT": "1500"})
    t0 = time.monotonic()
    result = sdk.run("add")
    took = time.monotonic() - t0
    sdk.finish()
    out = sdk.tool_result("t_add")
    assert out.get("is_error") and "1.5" in json.dumps(out), out
    assert result["subtype"] == "success" and took < 30


def test_a_server_the_sdk_does_not_know_is_listed_as_failed_and_has_no_tools(tmp_path: Path) -> None:
    sdk = Sdk(tmp_path, [{"text": "no tools"}], lambda m: {"subtype": "error", "error": "Server 'calc' not found"})
    result = sdk.run("hi")
    sdk.finish()
    init = next(m for m in sdk.seen if m.get("subtype") == "init")
    assert {"name": "calc", "status": "failed"} in init["mcp_servers"]
    assert not any(t.startswith("mcp__calc") for t in init["tools"])
    assert result["subtype"] == "success"


def test_without_the_sdk_driving_an_sdk_server_fails_and_says_why(tmp_path: Path) -> None:
    """``-p`` has no control channel: a ``type: sdk`` server cannot be reached, and the run says so."""
    d = tmp_path / "proj"
    d.mkdir()
    (tmp_path / "script.json").write_text(json.dumps([{"text": "ok"}]))
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "ANTHROPIC_", "OPENAI_"))}
    e.update(AGENTLOOP_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "user"), NO_COLOR="1")
    config = json.dumps({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}})
    p = subprocess.run([*AGENTLOOP, "-p", "hi", "--model", f"scripted:{tmp_path / 'script.json'}", "--mcp-config", config],
                       cwd=d, env=e, text=True, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "calc" in p.stderr and "served only while the Agent SDK drives agentloop" in p.stderr


def test_a_server_named_in_initialize_s_sdk_mcp_servers_is_served_before_the_prompt(tmp_path: Path) -> None:
    """The TypeScript SDK gives its in-process servers by name in ``initialize``'s ``sdkMcpServers`` (not in
    ``--mcp-config``); the first prompt already has their tools."""
    sdk = Sdk(tmp_path, ADD, well, *ALLOW, in_initialize=True)
    result = sdk.run("add")
    code, err = sdk.finish()
    assert code == 0, err
    answer = next(m for m in sdk.seen if m.get("type") == "control_response" and m["response"]["request_id"] == "init")
    assert answer["response"]["subtype"] == "success"
    out = sdk.tool_result("t_add")
    assert not out.get("is_error") and "the sum is 42" in json.dumps(out)
    assert result["subtype"] == "success"


@pytest.mark.parametrize("names, named", [("calc", "must be a list"), (["no spaces allowed"], "no spaces allowed")])
def test_sdk_mcp_servers_that_are_not_server_names_are_an_error_naming_them(tmp_path: Path, names: Any, named: str) -> None:
    sdk = Sdk(tmp_path, [], well, in_initialize=True)
    sdk.initialize["sdkMcpServers"] = names
    sdk.send({"type": "control_request", "request_id": "init", "request": sdk.initialize})
    answer = sdk.until(lambda m: m.get("type") == "control_response")
    sdk.finish()
    assert answer["response"]["subtype"] == "error" and named in answer["response"]["error"]
