"""list_changed: a server that adds tools, prompts or resources later is listed again, and the next run offers the new tools.

MCP specification (2025-06-18), server features: a server that declares
``listChanged`` sends ``notifications/tools/list_changed`` (and the prompts and
resources ones) when the list changes; the client lists again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloop import Registry
from agentloop.conversation import tool_list
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from agentloop.transcript import read_records
from mcp_servers.helpers import PY, RAW


def test_tools_prompts_and_resources_are_listed_again_after_list_changed() -> None:
    with McpManager([ServerConfig("raw", "stdio", command=PY, args=(RAW,))], startup_timeout=30, environ={}) as m:
        before = m.generation
        reg = Registry(m.tools())
        assert "mcp__raw__late" not in reg
        assert [p.name for p in m.prompts()["raw"]] == ["greet"]
        assert [str(r.uri) for r in m.resources()["raw"]] == ["raw://readme"]
        assert reg.invoke(ToolCall("c", "mcp__raw__grow", {})).ok
        m.settle()
        assert m.generation > before
        reg = Registry(m.tools())
        res = reg.invoke(ToolCall("c", "mcp__raw__late", {"x": 1}))
        assert "mcp__raw__late" in reg and res.ok and res.content == "late ok"
        assert [p.name for p in m.prompts()["raw"]] == ["greet", "late_prompt"]
        assert [str(r.uri) for r in m.resources()["raw"]] == ["raw://readme", "raw://late"]


def test_the_agents_next_run_offers_a_tool_the_server_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__raw"]}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "mcp__raw__grow", "arguments": {}}], "usage": [10, 2]},
        {"text": "grown", "usage": [10, 2]},
        {"text": "", "tool_calls": [{"name": "mcp__raw__late", "arguments": {}}], "usage": [10, 2]},
        {"text": "done", "usage": [10, 2]},
    ]))
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}")
    try:
        a.ask("grow")
        a.ask("use the new tool")
    finally:
        a.close("prompt_input_exit")
    recs = list(read_records(a.session.path))
    starts = [r.payload for r in recs if r.kind == "run_start"]
    # the second run's tools are the list the first run changed to: recorded once, referred to after
    assert starts[1]["config"]["tools"] == {"same_as": next(r.seq for r in recs if r.kind == "tools_changed")}
    lists = [s["config"]["tools"] if "same_as" not in s["config"]["tools"] else tool_list(recs[s["config"]["tools"]["same_as"]].payload, "tools_changed")
             for s in starts]
    names = [{t["name"] for t in ts} for ts in lists]
    assert "mcp__raw__late" not in names[0] and "mcp__raw__late" in names[1]
    results = [r.payload for r in recs if r.kind == "tool_result"]
    assert results[1]["name"] == "mcp__raw__late" and results[1]["ok"] and results[1]["content"] == "late ok"


def test_a_tool_the_server_adds_during_a_run_is_called_in_the_next_turn_of_that_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentloop.agent.agent import Agent
    from agentloop.replay import replay

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__raw"]}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "mcp__raw__grow", "arguments": {}}], "usage": [10, 2]},
        {"text": "", "tool_calls": [{"name": "mcp__raw__late", "arguments": {}}], "usage": [10, 2]},
        {"text": "done", "usage": [10, 2]},
    ]))
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}")
    try:
        r = a.ask("grow, then use the new tool")
    finally:
        a.close("prompt_input_exit")
    assert (r.stop_reason, r.answer) == ("no_tool_calls", "done")
    recs = list(read_records(a.session.path))
    starts = [r.payload for r in recs if r.kind == "run_start"]
    assert len(starts) == 1 and "mcp__raw__late" not in {t["name"] for t in starts[0]["config"]["tools"]}
    kinds = [r.kind for r in recs if r.kind in ("model_turn", "tool_result", "tools_changed")]
    assert kinds == ["model_turn", "tool_result", "tools_changed", "model_turn", "tool_result", "model_turn"]
    changed = next(r.payload for r in recs if r.kind == "tools_changed")
    assert changed["step"] == 1 and "mcp__raw__late" in {t["name"] for t in changed["tools"]}
    results = [r.payload for r in recs if r.kind == "tool_result"]
    assert results[1]["name"] == "mcp__raw__late" and results[1]["ok"] and results[1]["content"] == "late ok"
    res = replay(a.session.path)
    assert res.equal, res.summary()
