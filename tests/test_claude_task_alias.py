"""``Task``, the Agent tool's old name, still names it: in deny rules, ``--disallowedTools``, a command's
``disallowed-tools`` and hook matchers.

Claude Code's sub-agents page, "Restrict which subagents can be spawned": "In version 2.1.63, the Task tool was renamed
to Agent. Existing ``Task(...)`` references in settings and agent definitions still work as aliases."
(https://code.claude.com/docs/en/sub-agents#restrict-which-subagents-can-be-spawned)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.transcript import read_records

CALL_AGENT = [{"text": "", "tool_calls": [{"name": "Agent", "arguments": {
    "description": "look", "prompt": "find the tests", "subagent_type": "Explore"}}]}, {"text": "done"}]


def _results(a: Agent) -> list[dict[str, object]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def test_disallowed_tools_task_removes_the_agent_tool(proj: Path, scripted: Callable[..., str]) -> None:
    """``--disallowedTools Task``: a bare-name deny, so the tool leaves the model's view and a call is denied."""
    a = Agent(cwd=str(proj), model=scripted(CALL_AGENT), cli_rules=[("deny", "Task")])
    try:
        assert "Agent" in a.policy.removed_tools(["Agent", "Read"])
        assert a.ask("look around").answer == "done"
        [r] = _results(a)
        assert r["ok"] is False and "Task" in str(r["error"])
    finally:
        a.close()


def test_a_deny_rule_task_with_a_type_blocks_that_sub_agent_only(proj: Path) -> None:
    policy = PermissionPolicy(cwd=str(proj))
    policy.add_rule("deny", "Task(Explore)", source=".claude/settings.json")
    assert policy.decide("Agent", {"prompt": "x", "subagent_type": "Explore"}).behavior == "deny"
    assert policy.decide("Agent", {"prompt": "x", "subagent_type": "general-purpose"}).behavior == "allow"


def test_a_commands_disallowed_tools_task_blocks_agent_for_its_turn(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "solo.md").write_text("---\ndisallowed-tools: Task\n---\nDo it yourself.\n")
    a = Agent(cwd=str(proj), model=scripted(CALL_AGENT), trust=True)
    try:
        expanded = a.slash.expand("/solo")
        assert expanded is not None
        assert a.ask(expanded[0]).answer == "done"
        [r] = _results(a)
        assert r["ok"] is False
    finally:
        a.close()


def test_a_hook_matcher_task_runs_for_agent_calls(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, PreToolUse: the matcher is the tool's name; settings written for the old name keep working."""
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Task", "hooks": [
        {"type": "command", "command": "echo 'no sub-agents here' >&2; exit 2"}]}]}}))
    a = Agent(cwd=str(proj), model=scripted(CALL_AGENT), trust=True)
    try:
        assert a.ask("look around").answer == "done"
        [r] = _results(a)
        assert r["ok"] is False and "no sub-agents here" in str(r["error"])
    finally:
        a.close()
