"""The terminal agent with MCP servers: started from .mcp.json, permission rules, /mcp, the session replays, clean exit."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.replay import replay
from agentloop.transcript import read_records, verify_file
from mcp_servers.helpers import PY, PYSERVER, running


@pytest.fixture
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with a Python MCP server it allows."""
    d = proj
    (d / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "py": {"command": PY, "args": [PYSERVER], "env": {"PYSERVER_VERSION": "${AL_PYSERVER_VERSION:-1.2.3}"}},
    }}))
    (d / ".agentloop").mkdir()
    (d / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__py__*"], "deny": ["mcp__py__fail"]}}))
    return d


def test_agent_starts_mcp_servers_applies_rules_lists_them_and_stops_them(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    spec = scripted([
        {"text": "", "tool_calls": [{"name": "mcp__py__echo", "arguments": {"text": "hi"}},
                                    {"name": "mcp__py__add", "arguments": {"a": 1, "b": 2}}], "usage": [100, 10]},
        {"text": "", "tool_calls": [{"name": "mcp__py__fail", "arguments": {"message": "x"}}], "usage": [150, 10]},
        {"text": "1 + 2 = 3", "usage": [200, 5]},
    ])
    a = Agent(cwd=str(proj), trust=True, model=spec)
    try:
        assert {"mcp__py__echo", "mcp__py__add"} <= set(a.registry.names())
        status = a.mcp_status()
        assert status.startswith("py: connected pyserver 1.2.3 (stdio, project: ") and "  mcp__py__echo" in status
        res = a.ask("add 1 and 2")
        assert res.stop_reason == "no_tool_calls" and res.answer == "1 + 2 = 3"
    finally:
        a.close("prompt_input_exit")
    assert not running(PYSERVER), "an MCP server outlived the agent"
    path = a.session.path
    recs = list(read_records(path))
    results = [r.payload for r in recs if r.kind == "tool_result"]
    assert [r["ok"] for r in results] == [True, True, False]
    assert json.loads(results[1]["content"]) == {"total": 3.0, "terms": 2}  # structured content sent once
    assert "denied" in results[2]["error"]
    start = next(r.payload for r in recs if r.kind == "run_start")
    fps = {t["name"]: t["fingerprint"] for t in start["config"]["tools"]}
    assert fps["mcp__py__echo"] == "mcp:pyserver@1.2.3"
    assert verify_file(path).ok
    again = replay(path, mode="full")  # no server is running now
    assert again.equal, again.summary()


def test_a_malformed_mcp_json_server_is_skipped_with_one_warning_and_the_agent_starts(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    # Claude Code skips an .mcp.json server it cannot use, with a warning, and loads the rest.
    (proj / ".mcp.json").write_text('{"mcpServers": {"py": {"type": "http"}}}')
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    a.close()
    (w,) = a.config_warnings
    assert re.search(r"\.mcp\.json: mcpServers\.py: a http server needs a 'url'; skipped$", w)
    assert a.mcp is None


def test_a_server_that_fails_to_start_does_not_stop_the_agent_and_mcp_tries_it_again(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    later = tmp_path / "later_server.py"
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"late": {"command": PY, "args": [str(later)]}}}))
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "fine", "usage": [1, 1]}]))
    try:
        status = a.mcp_status()
        assert "late: failed" in status and "stderr ends" in status and "mcp__late__" not in " ".join(a.registry.names())
        assert a.ask("hello").answer == "fine"
        later.write_text(Path(PYSERVER).read_text())  # the server's program appears: /mcp connects it
        status = a.mcp_status()
        assert "late: connected" in status and "mcp__late__echo" in a.registry.names()
    finally:
        a.close("prompt_input_exit")



def test_the_agent_runs_a_turns_cleared_read_only_calls_at_the_same_time(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    import threading

    from agentloop import Tool
    from agentloop.events import ToolFinished, ToolStarted

    (proj / ".mcp.json").unlink()
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["meet", "where", "solo"]}}))
    barrier = threading.Barrier(3, timeout=20)
    schema = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}

    def meet(i: int) -> int:
        barrier.wait()  # fails unless all three run at once
        return i

    def where(i: int) -> str:
        return "driver" if threading.current_thread() is threading.main_thread() else "worker"

    spec = scripted([
        {"text": "", "tool_calls": [{"name": "meet", "arguments": {"i": i}} for i in range(3)], "usage": [10, 10]},
        {"text": "", "tool_calls": [{"name": "solo", "arguments": {"i": 0}}, {"name": "where", "arguments": {"i": 1}}], "usage": [10, 10]},
        {"text": "", "tool_calls": [{"name": "where", "arguments": {"i": 2}}, {"name": "where", "arguments": {"i": 3}}], "usage": [10, 10]},
        {"text": "done", "usage": [10, 10]},
    ])
    a = Agent(cwd=str(proj), trust=True, model=spec)
    a.register_tools([
        Tool("meet", "meet", schema, meet, read_only=True),
        Tool("where", "which thread", schema, where, read_only=True),
        Tool("solo", "writes", schema, lambda i: i, read_only=False),
    ])
    seen: list[Any] = []
    try:
        assert a.ask("go", observer=seen.append).stop_reason == "no_tool_calls"
    finally:
        a.close("prompt_input_exit")
    results = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert [r["content"] for r in results] == [0, 1, 2, 0, "driver", "worker", "worker"]
    assert sum(isinstance(e, ToolStarted) for e in seen) == 7 and sum(isinstance(e, ToolFinished) for e in seen) == 7
    assert a.session.stats.to_json()["tools"]["meet"] == {"ok": 3, "failed": 0}


def test_mcp_servers_are_stopped_when_the_session_cannot_be_opened(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """The builder opens the session last: when that fails (the session is
    held by another agent), the MCP servers it already started do not outlive the error."""
    from agentloop.agent.session.store import SessionBusy

    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "x"}]))
    try:
        a.ask("go")
        with pytest.raises(SessionBusy):
            Agent(cwd=str(proj), trust=True, model=scripted([]), resume=a.session.id)
    finally:
        a.close("prompt_input_exit")
    assert not running(PYSERVER), "an MCP server outlived the agent that could not open its session"
