"""MCP failures are seen: in `-p` on stderr (once), in stream-json's init, in the REPL under the banner; 401 names authentication; no tracebacks for a server's garbage.

Claude Code's stream-json ``init`` message lists ``mcp_servers`` as
``[{"name", "status"}]`` (Claude Agent SDK reference, ``SDKSystemMessage``;
statuses ``connected``, ``failed``, ``needs-auth``, ``pending``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop import Registry
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from mcp_servers.helpers import HERE, PY, RAW, free_port, wait_port

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")
HTTPSERVER = str(HERE / "httpserver.py")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    e["NO_COLOR"] = "1"
    return e


def project(tmp_path: Path, servers: dict[str, Any]) -> Path:
    d = tmp_path / "proj"
    d.mkdir(exist_ok=True)
    (d / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return d


def answer_only(tmp_path: Path) -> str:
    p = tmp_path / "s.json"
    p.write_text(json.dumps([{"text": "the answer", "usage": [10, 2]}]))
    return f"scripted:{p}"


def agentloop(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90)


SERVERS = {"missing": {"command": "/nonexistent/agentloop-test-server"}, "raw": {"command": PY, "args": [RAW]}}


def test_print_mode_says_once_on_stderr_which_server_failed_to_start(tmp_path: Path, env: dict[str, str]) -> None:
    proj = project(tmp_path, SERVERS)
    p = agentloop(["-p", "hi", "--trust", "--model", answer_only(tmp_path)], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "the answer\n"
    lines = [ln for ln in p.stderr.splitlines() if "'missing'" in ln]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("notice: the MCP server 'missing' is not available (failed)")
    assert "no such program: /nonexistent/agentloop-test-server" in lines[0]
    assert "'raw'" not in p.stderr


def test_stream_json_init_lists_each_mcp_server_with_its_status(tmp_path: Path, env: dict[str, str]) -> None:
    proj = project(tmp_path, SERVERS)
    p = agentloop(["-p", "hi", "--trust", "--model", answer_only(tmp_path), "--output-format", "stream-json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    events = [json.loads(ln) for ln in p.stdout.splitlines()]
    init = events[0]
    assert init["subtype"] == "init"
    assert init["mcp_servers"] == [{"name": "missing", "status": "failed"}, {"name": "raw", "status": "connected"}]
    assert "mcp__raw__big" in init["tools"]
    notices = [e["content"] for e in events if e.get("subtype") == "informational" and "'missing'" in e.get("content", "")]
    assert len(notices) == 1


def test_the_repl_shows_a_failed_server_under_the_banner(tmp_path: Path, env: dict[str, str]) -> None:
    from _pty import Term

    proj = project(tmp_path, SERVERS)
    t = Term(["--trust", "--model", answer_only(tmp_path)], cwd=str(proj), env=env)
    try:
        t.wait_for(r"notice: the MCP server 'missing' is not available \(failed\)")
        text = t.text()
        assert text.index("agentloop ·") < text.index("'missing' is not available")
    finally:
        t.child.terminate(force=True)


@pytest.fixture
def guarded_http() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([PY, HTTPSERVER, str(port), "right-token"])
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_401_says_authentication_failed_and_how_to_sign_in(guarded_http: str) -> None:
    bad = ServerConfig("web", "http", url=guarded_http, headers={"Authorization": "Bearer wrong-token"})
    good = ServerConfig("ok", "http", url=guarded_http, headers={"Authorization": "Bearer right-token"})
    with McpManager([bad, good], startup_timeout=20, environ={}) as m:
        names = [t.name for t in m.tools()]
        assert "mcp__ok__echo" in names and not any(n.startswith("mcp__web__") for n in names)
        web = next(s for s in m.status() if s.name == "web")
        assert web.public_status == "needs-auth"
        assert "authentication failed (HTTP 401 Unauthorized)" in (web.error or "")
        assert "Authorization" in (web.error or "") and "/mcp" in (web.error or "")
        assert "Server returned an error response" not in (web.error or "")
        assert next(s for s in m.status() if s.name == "ok").public_status == "connected"


def test_garbage_on_a_servers_stdout_is_one_warning_line_and_no_traceback(tmp_path: Path, env: dict[str, str]) -> None:
    proj = project(tmp_path, {"noisy": {"command": PY, "args": [RAW], "env": {"RAW_GARBAGE": "5"}}})
    p = agentloop(["-p", "hi", "--trust", "--model", answer_only(tmp_path)], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "ValidationError" not in p.stderr, p.stderr
    noisy = [ln for ln in p.stderr.splitlines() if "not JSON-RPC" in ln]
    assert len(noisy) == 1 and "'noisy'" in noisy[0] and "garbage line 0" in noisy[0], p.stderr


def test_a_server_that_drops_is_reported_once(tmp_path: Path) -> None:
    notices: list[str] = []
    with McpManager([ServerConfig("raw", "stdio", command=PY, args=(RAW,))], startup_timeout=20, environ={},
                    notify=notices.append) as m:
        reg = Registry(m.tools())
        res = reg.invoke(ToolCall("c", "mcp__raw__die", {}))
        assert not res.ok
        dropped = [n for n in notices if "stopped" in n]
        assert len(dropped) == 1 and dropped[0].startswith("the MCP server 'raw' stopped"), notices
        assert reg.invoke(ToolCall("c", "mcp__raw__big", {"size": 3})).ok  # started again
