"""The MCP client against the official npm reference servers: everything (stdio, streamable HTTP, SSE) and filesystem."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop import Registry
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, McpToolError, ServerConfig
from mcp_servers.helpers import (
    EVERYTHING,
    FILESYSTEM,
    free_port,
    npm_servers,
    running,
    wait_port,
)

pytestmark = pytest.mark.mcp_npm


@pytest.fixture(autouse=True)
def _need_npm() -> None:
    npm_servers()


def everything_stdio(name: str = "everything") -> ServerConfig:
    return ServerConfig(name, "stdio", command="node", args=(str(EVERYTHING), "stdio"))


def invoke(reg: Registry, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return reg.invoke(ToolCall("c1", name, args)).to_json()


@pytest.fixture(scope="module")
def everything() -> Iterator[McpManager]:
    m = McpManager([everything_stdio()], startup_timeout=60)
    try:
        yield m
    finally:
        m.close()


def test_everything_lists_its_tools_with_annotations_and_version(everything: McpManager) -> None:
    tools = {t.name: t for t in everything.tools()}
    assert {"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image",
            "mcp__everything__get-structured-content"} <= set(tools)
    (st,) = everything.status()
    assert st.status == "connected" and st.server_name == "mcp-servers/everything"
    assert tools["mcp__everything__echo"].fingerprint == f"mcp:mcp-servers/everything@{st.server_version}"
    assert tools["mcp__everything__get-tiny-image"].read_only is True
    assert tools["mcp__everything__get-structured-content"].output_schema is not None


def test_everything_text_structured_and_image_results(everything: McpManager) -> None:
    reg = Registry(everything.tools())
    assert invoke(reg, "mcp__everything__echo", {"message": "hi"})["content"] == "Echo: hi"
    s = invoke(reg, "mcp__everything__get-structured-content", {"location": "New York"})
    assert s["ok"] and set(json.loads(s["content"])) == {"temperature", "conditions", "humidity"}  # structured, sent once
    img = invoke(reg, "mcp__everything__get-tiny-image", {})
    blocks = img["content"]["content"]
    (image,) = [b for b in blocks if b["type"] == "image"]
    assert image["mimeType"] == "image/png" and base64.b64decode(image["data"]).startswith(b"\x89PNG")
    res = invoke(reg, "mcp__everything__get-resource-reference", {})
    assert any(b["type"] == "resource" and b["resource"]["uri"].startswith("demo://") for b in res["content"]["content"])


def test_everything_unknown_tool_and_bad_arguments_are_is_error_results(everything: McpManager) -> None:
    everything.tools()
    with pytest.raises(McpToolError, match="Tool nope not found"):
        everything.call("everything", "nope", {})
    # arguments the core would refuse, sent directly: the server's own isError answer
    with pytest.raises(McpToolError, match="Input validation error"):
        everything.call("everything", "echo", {"message": 5})
    r = invoke(Registry(everything.tools()), "mcp__everything__get-sum", {"a": 1})
    assert r["ok"] is False and "'b' is a required property" in r["error"]


@pytest.fixture
def node_http() -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(mode: str, port: int) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(["node", str(EVERYTHING), mode], env={**os.environ, "PORT": str(port)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(p)
        wait_port(port, 60)
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait(10)


@pytest.mark.parametrize(("mode", "transport", "path"), [("streamableHttp", "http", "/mcp"), ("sse", "sse", "/sse")])
def test_everything_over_http_transports(node_http: Any, mode: str, transport: Any, path: str) -> None:
    port = free_port()
    node_http(mode, port)
    cfg = ServerConfig("web", transport, url=f"http://127.0.0.1:{port}{path}", headers={"X-Test": "${AL_HDR:-yes}"})
    with McpManager([cfg], startup_timeout=30) as m:
        reg = Registry(m.tools())
        assert m.status()[0].status == "connected"
        assert invoke(reg, "mcp__web__echo", {"message": transport})["content"] == f"Echo: {transport}"
        assert invoke(reg, "mcp__web__get-sum", {"a": 2, "b": 3})["ok"]


def test_an_http_server_that_goes_away_fails_clearly_and_is_retried(node_http: Any) -> None:
    port = free_port()
    proc = node_http("streamableHttp", port)
    with McpManager([ServerConfig("web", "http", url=f"http://127.0.0.1:{port}/mcp")], startup_timeout=10, call_timeout=10) as m:
        reg = Registry(m.tools())
        assert invoke(reg, "mcp__web__echo", {"message": "1"})["ok"]
        proc.kill()
        proc.wait(10)
        began = time.monotonic()
        r = invoke(reg, "mcp__web__echo", {"message": "2"})
        assert r["ok"] is False and "'web'" in r["error"]
        r = invoke(reg, "mcp__web__echo", {"message": "3"})  # retried: still down
        assert r["ok"] is False and "unavailable" in r["error"]
        assert time.monotonic() - began < 40
        node_http("streamableHttp", port)
        assert invoke(reg, "mcp__web__echo", {"message": "4"})["content"] == "Echo: 4"


def test_nothing_listening_is_a_clear_start_failure() -> None:
    port = free_port()
    with McpManager([ServerConfig("web", "http", url=f"http://127.0.0.1:{port}/mcp")], startup_timeout=10) as m:
        assert m.tools() == []
        (st,) = m.status()
        assert st.status == "failed" and "it failed to start" in (st.error or "")


@pytest.fixture
def fs_dirs(tmp_path: Path) -> tuple[Path, Path]:
    allowed, secret = tmp_path / "allowed", tmp_path / "secret"
    allowed.mkdir()
    secret.mkdir()
    (allowed / "a.txt").write_text("inside\n")
    (secret / "s.txt").write_text("top secret\n")
    (allowed / "link.txt").symlink_to(secret / "s.txt")
    return allowed, secret


def test_filesystem_confinement_errors_are_clean_tool_errors(fs_dirs: tuple[Path, Path]) -> None:
    allowed, secret = fs_dirs
    cfg = ServerConfig("fs", "stdio", command="node", args=(str(FILESYSTEM), str(allowed)))
    with McpManager([cfg], startup_timeout=60) as m:
        reg = Registry(m.tools())
        assert reg.get("mcp__fs__read_text_file").read_only is True  # type: ignore[union-attr]
        assert reg.get("mcp__fs__write_file").read_only is False  # type: ignore[union-attr]
        ok = invoke(reg, "mcp__fs__read_text_file", {"path": str(allowed / "a.txt")})
        assert ok["ok"] and ok["content"] == "inside\n"  # its structuredContent {"content": text} is the same: sent once
        cases = {
            str(secret / "s.txt"): "Access denied - path outside allowed directories",
            str(allowed / ".." / "secret" / "s.txt"): "Access denied - path outside allowed directories",
            str(allowed / "link.txt"): "Access denied - symlink target outside allowed directories",
        }
        for path, expected in cases.items():
            r = invoke(reg, "mcp__fs__read_text_file", {"path": path})
            assert r["ok"] is False and r["error"].startswith(expected), r
            assert "top secret" not in r["error"]
        w = invoke(reg, "mcp__fs__write_file", {"path": str(secret / "new.txt"), "content": "x"})
        assert w["ok"] is False and "Access denied" in w["error"]
        assert not (secret / "new.txt").exists()
        assert m.status()[0].status == "connected"  # refusals do not hurt the server
        assert running(str(FILESYSTEM))
    assert not running(str(FILESYSTEM))


def test_everything_sees_our_roots_reports_progress_and_its_task_only_tool_is_left_out(tmp_path: Path) -> None:
    """The everything server offers its roots, elicitation and sampling tools only to a client declaring
    those capabilities (its tools: get-roots-list, trigger-elicitation-request, trigger-long-running-operation),
    and marks simulate-research-query as taskSupport "required"."""
    seen: list[tuple[str, str, str]] = []
    with McpManager([everything_stdio("ev")], startup_timeout=60, cwd=str(tmp_path)) as m:
        m.on_progress = lambda *a: seen.append(a)
        reg = Registry(m.tools())
        assert "mcp__ev__get-roots-list" in reg and "mcp__ev__trigger-elicitation-request" in reg
        assert "mcp__ev__simulate-research-query" not in reg
        assert any(s.startswith("simulate-research-query: it can only run as a task") for s in m.status()[0].skipped)
        roots = invoke(reg, "mcp__ev__get-roots-list", {})
        assert roots["ok"] and tmp_path.resolve().as_uri() in json.dumps(roots["content"])
        declined = invoke(reg, "mcp__ev__trigger-elicitation-request", {})
        assert declined["ok"] and "decline" in json.dumps(declined["content"]).lower()
        slow = invoke(reg, "mcp__ev__trigger-long-running-operation", {"duration": 1, "steps": 2})
        assert slow["ok"] and [s[2].split(" ")[0] for s in seen] == ["1/2", "2/2"]
