"""WebFetch and WebSearch over the Agent Client Protocol: the editor is asked, and sees them as ``fetch`` and ``search`` calls.

The protocol's tool call kinds (agentclientprotocol.com, "Tool Calls": ``read``, ``edit``, ``delete``,
``move``, ``search``, ``execute``, ``think``, ``fetch``, ``other``); ``session/request_permission`` is asked
of the client before a call that needs permission.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

acp = pytest.importorskip("acp")

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import AllowedOutcome, ClientCapabilities, RequestPermissionResponse  # noqa: E402


class EditorClient:
    """An editor that approves what it is asked and keeps every update."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
        self.permissions.append(tool_call)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow"))

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    def on_connect(self, conn: Any) -> None:
        pass


def _env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    return e


class _Page(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"<html><body><h1>Widget</h1><p>version 2.1</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_editor_is_asked_for_webfetch_and_sees_fetch_and_search_calls(tmp_path: Path) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/docs"
    proj = tmp_path / "proj"
    proj.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "WebFetch", "arguments": {"url": url, "prompt": "which version?"}}]},
        {"text": "The page says version 2.1."},  # the scripted model also applies the prompt (no small model of its own)
        {"text": "", "tool_calls": [{"name": "WebSearch", "arguments": {"query": "widget news"}}]},
        {"text": "Version 2.1."},
    ]))
    client = EditorClient()

    async def session() -> None:
        async with spawn_agent_process(client, sys.executable, "-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}",
                                       "--permission-mode", "default", cwd=proj, env=_env(tmp_path)) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            sid = (await conn.new_session(cwd=str(proj))).session_id
            resp = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("what version is widget?")]), 60)
            assert resp.stop_reason == "end_turn"

    try:
        asyncio.run(session())
    finally:
        srv.shutdown()
        srv.server_close()
    starts = [u for u in client.updates if getattr(u, "session_update", None) == "tool_call"]
    assert [s.kind for s in starts] == ["fetch", "search"]
    assert [getattr(p, "kind", None) for p in client.permissions] == ["fetch", "search"]
    done = [u for u in client.updates if getattr(u, "session_update", None) == "tool_call_update" and u.status in ("completed", "failed")]
    by_id = {u.tool_call_id: u for u in done}
    assert by_id[starts[0].tool_call_id].status == "completed"
    assert "The page says version 2.1." in json.dumps([c.model_dump() for c in by_id[starts[0].tool_call_id].content or []])
    assert by_id[starts[1].tool_call_id].status == "failed"  # the scripted model has no server-side search
