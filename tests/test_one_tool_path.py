"""Every tool call runs through the one tool-call pipeline (``agent/pipeline.py``): a turn's calls one at a
time, read-only calls side by side, sub-agents started side by side, and a sub-agent's own calls.

So the registry's schema check and the pipeline's redaction apply to each. Claude Code's sub-agents
documentation ("Subagents": several Agent calls in one reply run in parallel) describes the batch; the
Agent tool's input schema requires ``description`` and ``prompt``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.events import ToolCall
from agentloop.tools import Registry, Tool, tool
from agentloop.transcript import read_records


def test_an_agent_call_without_its_prompt_in_a_parallel_batch_gets_the_schema_error(proj: Path, scripted: Callable[..., str]) -> None:
    replies = [
        {"text": "", "usage": [100, 10], "tool_calls": [
            {"name": "Agent", "arguments": {"description": "look", "prompt": "say hi", "subagent_type": "Explore"}},
            {"name": "Agent", "arguments": {"description": "no prompt", "subagent_type": "Explore"}},
        ]},
        {"text": "child says hi", "usage": [50, 5]},
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=1_000_000, cli_rules=[("allow", "Agent")])
    try:
        res = a.ask("look around, twice")
    finally:
        a.close()
    records = list(read_records(a.session.path))
    assert [r.payload["agent_type"] for r in records if r.kind == "subagent"] == ["Explore"]  # the good call ran, alone
    results = [r.payload for r in records if r.kind == "tool_result"]
    assert [r["ok"] for r in results] == [True, False], results
    error = json.dumps(results[1]["error"])
    assert "invalid arguments for 'Agent'" in error and "prompt" in error, error  # the schema's refusal, naming the field
    assert "while running" not in error
    assert res.answer == "parent done"


def test_a_turns_calls_and_a_childs_calls_go_through_the_agents_pipeline(proj: Path, scripted: Callable[..., str]) -> None:
    """A call the schema refuses gets the same refusal wherever it is made: in the parent's turn and in a child's."""
    bad_read = {"name": "Read", "arguments": {"path": "notes.txt"}}  # Read's field is file_path
    replies = [
        {"text": "", "usage": [100, 10], "tool_calls": [
            bad_read,
            {"name": "Agent", "arguments": {"description": "look", "prompt": "read it", "subagent_type": "Explore"}},
        ]},
        {"text": "", "usage": [50, 5], "tool_calls": [bad_read]},  # the child's turn
        {"text": "child done", "usage": [50, 5]},
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=1_000_000, cli_rules=[("allow", "Agent")])
    try:
        a.ask("read notes")
    finally:
        a.close()
    records = list(read_records(a.session.path))
    parent = [r.payload for r in records if r.kind == "tool_result" and r.payload["name"] == "Read"]
    (sub,) = [r.payload for r in records if r.kind == "subagent"]
    child = [r.payload for r in read_records(sub["transcript"]) if r.kind == "tool_result"]
    assert len(parent) == 1 and len(child) == 1
    for r in (parent[0], child[0]):
        assert not r["ok"] and "invalid arguments for 'Read'" in json.dumps(r["error"]), r


def test_a_command_the_user_typed_is_redacted_by_the_pipeline_and_no_tool_hook_sees_it(
        proj: Path, home: Path, scripted: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The REPL's ``!`` line runs through the pipeline (``ToolCalls.run_typed``): even a Bash that does not redact
    its own output has a key the session holds taken out. Claude Code fires no PreToolUse or PostToolUse hook for
    Bash mode (anthropics/claude-code#19256: "The hook fires for normal Bash tool usage but never fires for `!`
    commands"), so a hook that refuses every Bash call does not stop it."""
    key = "sk-ant-api03-" + "Zr4" * 14
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    marker = proj.parent / "hook-ran"
    hook = proj.parent / "refuse.sh"
    hook.write_text(f"#!/bin/sh\ncat > /dev/null\necho ran >> {marker}\necho no >&2\nexit 2\n")
    hook.chmod(0o755)
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"hooks": {event: [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}] for event in ("PreToolUse", "PostToolUse")}}))
    a = Agent(cwd=str(proj), model=scripted([{"text": "unused"}]), max_usd_micros=1_000_000)
    try:
        @tool
        def Bash(command: str) -> str:
            """A Bash that prints what it holds, unredacted."""
            return f"ran {command}: {key}"

        a.registry.replace(Bash)
        typed = a.calls.run_typed(ToolCall("user_bang", "Bash", {"command": "printenv"}))
        by_model = a.calls.run(ToolCall("c1", "Bash", {"command": "printenv"}))
    finally:
        a.close()
    assert typed.ok and "ran printenv" in str(typed.content) and key not in str(typed.content), typed
    assert not by_model.ok and marker.read_text() == "ran\n"  # the same hook refuses the model's call


def test_no_module_of_the_agent_or_the_cli_runs_a_tool_but_the_pipeline() -> None:
    """``registry.invoke`` is called in ``agent/pipeline.py`` only (the library's own drivers, ``run`` and
    ``replay``, are below the agent): the REPL's ``!`` line included."""
    import re

    import agentloop

    src = Path(agentloop.__file__).parent
    found = [str(p.relative_to(src)) for folder in ("agent", "cli") for p in sorted((src / folder).rglob("*.py"))
             if re.search(r"\.invoke\(", p.read_text(encoding="utf-8")) and p.name != "pipeline.py"]
    assert found == []


def _overlap_tools() -> tuple[Registry, Callable[[], int]]:
    """A read-only ``look`` and a writing ``put`` that count how many of their calls run at once."""
    import threading
    import time

    lock, state = threading.Lock(), {"active": 0, "most": 0}

    def work(i: int) -> int:
        with lock:
            state["active"] += 1
            state["most"] = max(state["most"], state["active"])
        time.sleep(0.2)
        with lock:
            state["active"] -= 1
        return i

    schema = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}
    reg = Registry([Tool("look", "reads", schema, work, read_only=True), Tool("put", "writes", schema, work)])
    return reg, lambda: state["most"]


@pytest.mark.parametrize(("names", "most"), [(["look", "look", "look"], 3), (["look", "put", "look"], 1)])
def test_the_agents_turn_runs_read_only_calls_side_by_side_and_any_batch_with_a_writer_one_at_a_time(
        proj: Path, scripted: Callable[..., str], names: list[str], most: int) -> None:
    """The agent's turn and ``run()``'s share one scheduler (``run.schedule``): read-only tools' allowed calls
    run at the same time, a batch with a writing tool one call at a time."""
    reg, seen = _overlap_tools()
    calls = [{"name": n, "arguments": {"i": k}} for k, n in enumerate(names)]
    a = Agent(cwd=str(proj), model=scripted([{"text": "", "tool_calls": calls}, {"text": "done"}]), registry=reg,
              cli_rules=[("allow", "look"), ("allow", "put")])
    try:
        res = a.ask("go")
    finally:
        a.close()
    assert res.stop_reason == "no_tool_calls" and seen() == most


def test_a_sub_agents_read_only_calls_run_side_by_side_by_the_same_scheduler(proj: Path, scripted: Callable[..., str]) -> None:
    """A child's batch goes through the parent's scheduler with the pipeline's rule for side by side: three
    allowed calls of a read-only tool (here an MCP-named one the child is given) run at the same time."""
    reg, seen = _overlap_tools()
    look = reg.get("look")
    assert look is not None
    mcp_look = Tool("mcp__t__look", look.description, look.parameters, look.fn, read_only=True)
    replies = [
        {"text": "", "usage": [100, 10], "tool_calls": [
            {"name": "Agent", "arguments": {"description": "look", "prompt": "look thrice", "subagent_type": "general-purpose"}}]},
        {"text": "", "usage": [50, 5], "tool_calls": [{"name": "mcp__t__look", "arguments": {"i": k}} for k in range(3)]},
        {"text": "child done", "usage": [50, 5]},
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=1_000_000,
              cli_rules=[("allow", "Agent"), ("allow", "mcp__t__look")])
    try:
        a.register_tools([mcp_look])
        res = a.ask("look around")
    finally:
        a.close()
    assert res.answer == "parent done" and seen() == 3
