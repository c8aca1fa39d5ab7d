"""The REPL does not wait for MCP servers: the prompt is up at once, each server starts in the
background, its state is on the status line, its tools join when it is up, and a prompt sent
before then says which servers are not there yet. Driven in a real terminal (pexpect + pyte)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from _pty import Term, env_for
from mcp_servers.helpers import HERE, PY

SLOW = str(HERE / "slowstart.py")
DELAY_S = 8.0


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "slow": {"command": PY, "args": [SLOW, str(DELAY_S)]},
        "missing": {"command": "/nonexistent/agentloop-test-server"},
    }}))
    return proj


def _script(tmp_path: Path) -> str:
    p = tmp_path / "replies.json"
    p.write_text(json.dumps([
        {"text": "first answer"},
        {"text": "", "tool_calls": [{"name": "mcp__slow__echo", "arguments": {"text": "from-the-slow-server"}}]},
        {"text": "second answer"},
    ]))
    return f"scripted:{p}"


def test_the_prompt_is_up_before_a_slow_server_and_its_tools_join_when_it_is(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path))
    started = time.monotonic()
    t = Term(["--trust", "--model", _script(tmp_path), "--max-usd", "1"], cwd=str(proj), env=env)
    try:
        t.wait_for(r"(?m)^>", timeout=DELAY_S)
        up_after = time.monotonic() - started
        # the prompt does not wait for the server that takes DELAY_S to start (process start and
        # agent set-up included, on a loaded machine: far under the delay)
        assert up_after < DELAY_S / 2, up_after
        t.wait_for(r"mcp 0/2 starting")  # the status line
        t.wait_for(r"notice: the MCP server 'missing' is not available \(failed\)")
        mark = t.mark()
        t.type("hello")
        t.wait_for(r"notice: MCP server 'slow' still starting", after=mark)
        t.wait_for(r"first answer", after=mark)
        t.wait_for(r"mcp 1/2(?! starting)", timeout=DELAY_S * 4)  # slow is up, missing stays down
        mark = t.mark()
        t.type("use the slow server")
        t.wait_for(r"\[y\]es", after=mark, timeout=60)  # MCP tools ask in the default mode
        t.type("y")
        t.wait_for(r"second answer", after=mark, timeout=60)
        assert "still starting" not in t.text(mark)
        assert "from-the-slow-server" in t.text(mark)
    finally:
        t.kill()


def test_a_notice_from_a_server_thread_prints_above_the_prompt_not_over_it(tmp_path: Path) -> None:
    from mcp_servers.helpers import RAW

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "noisy": {"command": PY, "args": [RAW], "env": {"RAW_LOG_AFTER": "3"}}}}))
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path))
    t = Term(["--trust", "--model", _script(tmp_path), "--max-usd", "1"], cwd=str(proj), env=env)
    try:
        t.wait_for(r"(?m)^>")
        t.child.send("typed but not sent")
        t.wait_for(r"logged warning: disk almost full", timeout=40)
        deadline = time.monotonic() + 20  # the redraw of the input may come in a later chunk than the notice
        while True:
            t.pump(0.2)
            lines = [ln for ln in t.lines()[:-1] if ln.strip()]  # the last line is the status line
            at = max(i for i, ln in enumerate(lines) if "disk almost full" in ln)
            if lines[at + 1:] or time.monotonic() > deadline:
                break
        assert lines[at + 1:] == ["> typed but not sent"], lines[-6:]  # the input redrawn below it, intact
    finally:
        t.kill()
