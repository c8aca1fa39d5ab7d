"""A sub-agent keeps every guard its parent has: its tools are made by the same factory, under the parent's
rules re-rooted at its worktree, and what it changes is recorded for rewind.

Claude Code's sub-agents inherit the parent's permission rules (code.claude.com/docs/en/sub-agents: a
subagent's tool calls go through the same permission system). A child in a worktree works on a copy of
the repository at another path, so a rule written for the project (``Edit(secret/**)``) must cover the
copy's ``secret/`` too, or the merge-back would bring the forbidden change home.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.budget import usd
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

SPEC = "anthropic:claude-sonnet-4-5"
PATCH = "*** Begin Patch\n*** Add File: {path}\n+planted\n*** End Patch"

# How Claude Code's writing tools write a new file at a path, MultiEdit included (agentloop has none: refused as
# unknown). Every writing tool agentloop has is also tried from its record, in a child in its parent's folder
# and in a worktree (tests/test_child_tool_guards.py), so a new tool needs no line here.
WRITES: dict[str, Any] = {
    "Write": lambda p: {"file_path": p, "content": "planted\n"},
    "Edit": lambda p: {"file_path": p, "old_string": "", "new_string": "planted\n"},
    "MultiEdit": lambda p: {"file_path": p, "edits": [{"old_string": "", "new_string": "planted\n"}]},
    "NotebookEdit": lambda p: {"notebook_path": p, "new_source": "planted", "edit_mode": "insert", "cell_type": "code"},
    "apply_patch": lambda p: {"input": PATCH.format(path=p)},
}


def _repo(tmp_path: Path) -> Path:
    cwd = tmp_path / "proj"
    (cwd / "secret").mkdir(parents=True)
    (cwd / "secret" / "key.txt").write_text("the parent's secret\n")
    (cwd / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return cwd


def _run(tmp_path: Path, cwd: Path, child_calls: list[dict[str, Any]], isolation: str | None = None) -> tuple[Agent, list[Any]]:
    args: dict[str, Any] = {"description": "work", "prompt": "work"}
    if isolation:
        args["isolation"] = isolation
    replies = [{"tool_calls": [{"name": "Agent", "arguments": args}]}, {"tool_calls": child_calls}, {"text": "child done"},
               {"text": "parent done"}]
    with FakeProvider({"replies": replies}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=SPEC, base_url=fp.url, env={"PATH": "/usr/bin:/bin"},
                  permission_mode="bypassPermissions", max_usd_micros=usd("3"),
                  cli_rules=(("deny", "Edit(secret/**)"), ("deny", "Read(secret/**)")))
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        results = [b for b in fp.requests[2]["body"]["messages"][-1]["content"] if b.get("type") == "tool_result"]
    return a, results


@pytest.mark.parametrize("isolation", ["worktree", "none"])
def test_a_childs_writing_tools_keep_the_parents_deny_rules_and_protected_paths(tmp_path: Path, isolation: str) -> None:
    cwd = _repo(tmp_path)
    calls = [{"name": tool, "arguments": make(f"secret/by-{tool}.txt" if tool != "NotebookEdit" else "secret/nb.ipynb")}
             for tool, make in WRITES.items()]
    calls.append({"name": "apply_patch", "arguments": WRITES["apply_patch"](".git/hooks/post-commit")})
    calls.append({"name": "Read", "arguments": {"file_path": "secret/key.txt"}})
    a, results = _run(tmp_path, cwd, calls, isolation)
    assert len(results) == len(calls)
    for call, result in zip(calls, results, strict=True):
        assert result.get("is_error"), (call, result)
        assert "the parent's secret" not in str(result["content"])
    assert sorted(p.name for p in (cwd / "secret").iterdir()) == ["key.txt"]
    assert not (cwd / ".git" / "hooks" / "post-commit").exists()


@pytest.mark.parametrize("isolation", ["worktree", "none"])
def test_what_a_child_changes_is_recorded_so_rewind_can_undo_it(tmp_path: Path, isolation: str) -> None:
    cwd = _repo(tmp_path)
    a, results = _run(tmp_path, cwd, [{"name": "Write", "arguments": {"file_path": "b.txt", "content": "from the child\n"}}],
                      isolation)
    assert not results[0].get("is_error"), results
    assert (cwd / "b.txt").read_text() == "from the child\n"
    changes = [r.payload for r in read_records(a.session.path) if r.kind == "file_change"]
    assert [Path(c["path"]).name for c in changes] == ["b.txt"], changes
    assert Path(changes[0]["path"]).resolve() == (cwd / "b.txt").resolve()


@pytest.mark.parametrize(("value", "expected", "warned"), [(None, 10, False), ("3", 3, False), ("0", 10, True), ("many", 10, True)])
def test_how_many_agent_calls_run_at_once_follows_claude_codes_variable(
        proj: Path, scripted: Any, value: str | None, expected: int, warned: bool) -> None:
    """Claude Code's ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY`` bounds how many tool calls run at once (10 unless set);
    a value that is not a positive whole number is named in a warning and the default holds."""
    env = {"PATH": "/usr/bin:/bin"} if value is None else {"PATH": "/usr/bin:/bin", "CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY": value}
    a = Agent(cwd=str(proj), model=scripted([{"text": "ok"}]), env=env)
    try:
        assert a.settings.max_parallel_agents == expected
        assert any("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY" in w for w in a.settings.warnings) is warned
    finally:
        a.close()


def _dummy(schema: dict[str, Any]) -> Any:
    """Arguments the schema accepts, made from its required properties alone (what a call needs to reach the hooks)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _dummy(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return [_dummy(schema.get("items", {})) for _ in range(int(schema.get("minItems", 0)))]
    return {"integer": 1, "number": 1, "boolean": False}.get(str(kind), "x" * max(1, int(schema.get("minLength", 1))))


def test_a_childs_tool_calls_fire_the_parents_tool_hooks_naming_the_child(proj: Path, scripted: Any) -> None:
    """Every built-in tool a child has (enumerated from the tool records) fires the parent's PreToolUse hooks in
    the child as in the parent, and each one that runs (the read-only ones; the hook denies the others, so
    nothing here writes or reaches the network) fires PostToolUse or PostToolUseFailure in both. A child's events
    carry ``agent_id`` and ``agent_type``: Claude Code's hook input has them "when the hook fires from within a
    subagent (e.g., a tool called by an AgentTool worker)", and not for the main thread (the Agent SDK's
    ``BaseHookInput``). The child's hooks come from the parent's factory (``builder.ChildFactory``)."""
    import json

    from agentloop.agent.hooks.runner import HandlerOutput, HookHandler
    from agentloop.agent.tools.catalog import RECORDS

    seen: list[dict[str, Any]] = []

    def log(data: bytes, timeout: float) -> HandlerOutput:
        payload = json.loads(data)
        seen.append(payload)
        if payload["hook_event_name"] != "PreToolUse" or payload["tool_name"] in runs | {"Agent"}:
            return HandlerOutput(returncode=0)
        deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                  "permissionDecisionReason": "not here"}}).encode()
        return HandlerOutput(returncode=0, stdout=deny, stdout_total=len(deny))

    child_tools = [r for r in RECORDS if r.for_children]
    runs = {r.name for r in child_tools if r.read_only}
    calls = [{"name": r.name, "arguments": _dummy(r.schema)} for r in child_tools]
    replies = [{"text": "", "usage": [100, 10], "tool_calls": [*calls, {"name": "Agent", "arguments": {
                   "description": "same", "prompt": "same", "subagent_type": "general-purpose", "isolation": "none"}}]},
               {"text": "", "usage": [50, 5], "tool_calls": calls},
               {"text": "child done", "usage": [50, 5]},
               {"text": "parent done", "usage": [100, 5]}]
    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=usd("3"), permission_mode="bypassPermissions")
    try:
        a.add_hook_handlers([HookHandler(event=e, matcher="*", command="test:log", call=log)
                             for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure")])
        assert a.ask("go").answer == "parent done"
        have = set(a.shown_tools().names())  # the built-in tools this session has (no skills, no search here)
    finally:
        a.close()
    child_tools = [r for r in child_tools if r.name in have]
    runs &= have
    assert len(child_tools) >= 15, have
    (child,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    parent_events = {(p["hook_event_name"].removesuffix("Failure"), p["tool_name"]) for p in seen if "agent_id" not in p}
    child_events = {(p["hook_event_name"].removesuffix("Failure"), p["tool_name"]) for p in seen if "agent_id" in p}
    expected = {("PreToolUse", r.name) for r in child_tools} | {("PostToolUse", n) for n in runs}
    assert parent_events - {("PreToolUse", "Agent"), ("PostToolUse", "Agent")} == expected
    assert child_events == expected
    assert all(p["agent_id"] == child["agent_id"] and p["agent_type"] == "general-purpose" for p in seen if "agent_id" in p)
    assert all("agent_type" not in p for p in seen if "agent_id" not in p)
    assert {p["session_id"] for p in seen} == {a.session.id}  # one session, as Claude Code's sub-agents share it
