"""``agentloop mcp list|get|add|remove`` and the /mcp listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.cli.main import main
from agentloop.mcp.agent import format_status
from agentloop.mcp.client import ServerStatus
from mcp_servers.helpers import PY, PYSERVER, running


@pytest.fixture
def proj(proj: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared project folder (conftest.py), made the current directory."""
    monkeypatch.chdir(proj)
    return proj


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["mcp", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_writes_each_scope_in_claude_code_format(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "add", "files", "--scope", "project", "-e", "ROOT=${HOME}", "--", "npx", "-y", "srv", "--flag")
    assert code == 0 and "to " + str(proj / ".mcp.json") in out
    assert json.loads((proj / ".mcp.json").read_text()) == {
        "mcpServers": {"files": {"command": "npx", "args": ["-y", "srv", "--flag"], "env": {"ROOT": "${HOME}"}}}
    }
    assert cli(capsys, "add", "api", "-t", "http", "-H", "Authorization: Bearer ${KEY}", "https://h.example/mcp")[0] == 0
    local = json.loads((proj / ".agentloop/settings.local.json").read_text())
    assert local["mcpServers"]["api"] == {"type": "http", "url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${KEY}"}}
    assert cli(capsys, "add", "old", "--scope", "user", "--transport", "sse", "http://127.0.0.1:9/sse")[0] == 0
    user = json.loads((proj.parent / "home/settings.json").read_text())
    assert user["mcpServers"]["old"]["type"] == "sse"
    code, out, _ = cli(capsys, "list")
    assert code == 0
    assert [ln.split(":")[0] for ln in out.splitlines()] == ["old", "files", "api"]
    code, out, _ = cli(capsys, "list", "--json")
    assert {s["name"]: s["scope"] for s in json.loads(out)} == {"old": "user", "files": "project", "api": "local"}


def test_list_starts_nothing_without_check(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = proj / "ran"
    cli(capsys, "add", "evil", "--scope", "project", "--", PY, "-c", f"open({str(marker)!r}, 'w')")
    assert cli(capsys, "list")[0] == 0
    assert not marker.exists()


def test_get_starts_the_server_and_lists_its_tools(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli(capsys, "add", "py", "-e", "PYSERVER_VERSION=4.5.6", "--", PY, PYSERVER)
    code, out, _ = cli(capsys, "get", "py")
    assert code == 0
    assert "py: connected pyserver 4.5.6" in out and "  mcp__py__echo" in out
    code, out, _ = cli(capsys, "get", "py", "--json")
    (st,) = json.loads(out)
    assert st["status"] == "connected" and {"name": "mcp__py__echo", "read_only": True, "description": "Say the text back."} in st["tools"]
    assert not running(PYSERVER)


def test_list_check_exits_1_naming_the_failed_server(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli(capsys, "add", "broken", "--", "/nonexistent/server")
    code, out, _ = cli(capsys, "list", "--check")
    assert code == 1 and "broken: failed" in out and "no such program" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["get", "nope"], "no MCP server named 'nope' (configured: none)"),
    (["remove", "nope"], "no MCP server named 'nope' in any scope"),
    (["add", "bad name", "--", "x"], "mcpServers.bad name: a server name may use only"),
    (["add", "x", "-e", "NOEQUALS", "--", "cmd"], "--env 'NOEQUALS' must look like NAME=VALUE"),
    (["add", "x", "-t", "http", "ftp://h"], "mcpServers.x.url: must start with http"),
    (["add", "x", "-t", "http", "http://a", "http://b"], "a http server takes one URL"),
    (["add", "x", "-H", "A: b", "--", "cmd"], "--header is for http and sse servers"),
])
def test_user_mistakes_are_one_line_and_exit_2(proj: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert err.startswith("agentloop: error: ") and message in err and err.count("\n") == 1


def test_adding_twice_needs_force_and_remove_needs_a_scope_when_ambiguous(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "add", "dup", "--", "a")[0] == 0
    code, _, err = cli(capsys, "add", "dup", "--", "b")
    assert code == 2 and "mcpServers.dup: already exists" in err
    assert cli(capsys, "add", "dup", "--force", "--", "b")[0] == 0
    assert cli(capsys, "add", "dup", "--scope", "project", "--", "c")[0] == 0
    code, _, err = cli(capsys, "remove", "dup")
    assert code == 2 and "in several scopes (local, project): pass --scope" in err
    assert cli(capsys, "remove", "dup", "--scope", "local")[0] == 0
    code, out, _ = cli(capsys, "list")
    assert out.startswith("dup: c (stdio, project")


def test_a_malformed_config_file_is_one_line_naming_it(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / ".mcp.json").write_text('{"mcpServers": {"x": {"command": "a", "args": "b"}}}')
    code, _, err = cli(capsys, "list")
    assert code == 2 and err == f"agentloop: error: {proj / '.mcp.json'}: mcpServers.x.args: must be an array of strings, not a string\n"


def test_the_command_runs_as_a_program(proj: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "mcp", "add", "z", "--", "cmd"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "z" in json.loads((proj / ".agentloop/settings.local.json").read_text())["mcpServers"]


def test_format_status_lists_servers_state_errors_and_tools() -> None:
    statuses: list[Any] = [
        ServerStatus("py", "stdio", "connected", None, "pyserver", "1.0.0", ("mcp__py__echo", "mcp__py__add"), "/p/.mcp.json", "project"),
        ServerStatus("db", "http", "failed", "it failed to start: ConnectError", None, None, (), "/h/settings.json", "user",
                     skipped=()),
        ServerStatus("low", "in-process", "connected", None, "lowlevel", "0.3.0", ("mcp__low__x",), "<memory>", "memory",
                     skipped=("badschema: invalid schema",)),
    ]
    assert format_status(statuses) == "\n".join([
        "py: connected pyserver 1.0.0 (stdio, project: /p/.mcp.json), 2 tools",
        "  mcp__py__echo",
        "  mcp__py__add",
        "db: failed (http, user: /h/settings.json)",
        "  error: it failed to start: ConnectError",
        "low: connected lowlevel 0.3.0 (in-process), 1 tool",
        "  mcp__low__x",
        "  skipped badschema: invalid schema",
    ])
    assert "no MCP servers" in format_status([])
