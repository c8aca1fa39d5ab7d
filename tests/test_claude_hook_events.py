"""Hook events and decisions where Claude Code's hooks reference puts them, with real hook scripts.

Claude Code's hooks reference (https://code.claude.com/docs/en/hooks):

- PreToolUse decision control: ``permissionDecision: "allow"`` "skips the permission prompt";
  under ``dontAsk`` (permissions reference, "Permission modes": tools are denied unless
  pre-approved) a hook's allow is that pre-approval, while deny rules still hold.
- PostToolUseFailure: "Runs when a tool execution fails"; its input example is a Bash ``npm test``
  with ``"error": "Command exited with non-zero status code 1"``: a command that exits non-zero
  is a failed call, and PostToolUse (which runs after success) does not fire for it.
- Common input fields: ``transcript_path`` is the conversation's JSON Lines, one compact object a
  line (``{"type":"assistant",...,"message":{"role":"assistant",...}}``) that Stop hooks grep.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _hookkit import executable, layout, settings  # noqa: F401 (layout: both settings layouts, autouse)
from agentloop.agent.agent import Agent
from agentloop.transcript import read_records


def bash_call(cmd: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": cmd}}], "usage": [100, 10]}


def final(text: str = "done") -> dict[str, Any]:
    return {"text": text, "usage": [100, 5]}


def hook(event: str, cmd: str, matcher: str = "*") -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": cmd}]}]}


def tool_results(a: Agent) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


ALLOW_PY = """#!/usr/bin/env python3
import json, sys
ev = json.load(sys.stdin)
if ev["tool_input"].get("command", "").startswith("touch allowed"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"""


def test_a_pre_tool_use_allow_lets_a_call_through_under_dont_ask(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, PreToolUse decision control: ``"allow"`` pre-approves the call; dontAsk refuses the rest."""
    settings(proj, {"permissions": {"defaultMode": "dontAsk", "deny": ["Bash(touch allowed-but-denied*)"]},
                    "hooks": hook("PreToolUse", executable(proj / "allow.py", ALLOW_PY), "Bash")})
    a = Agent(cwd=str(proj), trust=True,
              model=scripted([bash_call("touch allowed.txt"), bash_call("touch other.txt"), bash_call("touch allowed-but-denied.txt"), final()]))
    try:
        assert a.permission_mode == "dontAsk"
        a.ask("go")
    finally:
        a.close()
    allowed, other, denied = tool_results(a)
    assert allowed["ok"] and (proj / "allowed.txt").exists()
    assert not other["ok"] and "dontAsk" in other["error"] and not (proj / "other.txt").exists()
    assert not denied["ok"] and not (proj / "allowed-but-denied.txt").exists()  # a deny rule still wins


LOG_SH = """#!/usr/bin/env bash
cat >> "$CLAUDE_PROJECT_DIR/events.jsonl"
echo >> "$CLAUDE_PROJECT_DIR/events.jsonl"
"""


def test_a_bash_command_that_exits_non_zero_fires_post_tool_use_failure(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, PostToolUseFailure: a Bash command exiting non-zero is a failed call, with the documented ``error``."""
    log = executable(proj / "log.sh", LOG_SH)
    settings(proj, {"permissions": {"allow": ["Bash"]}, "hooks": {**hook("PostToolUse", log), **hook("PostToolUseFailure", log)}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo fine"), bash_call("echo bad; exit 3"), final()]))
    try:
        a.ask("go")
    finally:
        a.close()
    events = [json.loads(line) for line in (proj / "events.jsonl").read_text().splitlines() if line.strip()]
    assert [e["hook_event_name"] for e in events] == ["PostToolUse", "PostToolUseFailure"]
    fail = events[1]
    assert fail["error"] == "Command exited with non-zero status code 3" and fail["is_interrupt"] is False
    assert fail["tool_input"] == {"command": "echo bad; exit 3"} and "tool_response" not in fail
    assert fail["is_error"] is True and fail["input"] == {"command": "echo bad; exit 3"}  # seed 004's names beside them
    # the model still sees the command's output and its exit code
    r = tool_results(a)[1]  # a failed call now (ok false), its output and exit code in the error
    assert "[exit code 3]" in json.dumps(r.get("content", r.get("error")))


STOP_LOOP_SH = """#!/usr/bin/env bash
# a Stop-hook loop as people write them for Claude Code: count the assistant turns in the transcript
path=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["transcript_path"])')
n=$(grep -c '"role":"assistant"' "$path")
echo "$n" >> "$CLAUDE_PROJECT_DIR/counts.txt"
if [ "$n" -lt 2 ]; then echo "one more round please" >&2; exit 2; fi
exit 0
"""


def test_a_stop_hook_that_greps_the_transcript_finds_the_assistant_turns(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, common input fields: ``transcript_path`` holds compact JSON lines with ``"role":"assistant"``."""
    settings(proj, {"hooks": hook("Stop", executable(proj / "loop.sh", STOP_LOOP_SH))})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final("first round"), final("second round")]))
    try:
        res = a.ask("go")
    finally:
        a.close()
    assert (proj / "counts.txt").read_text().split() == ["1", "2"]
    assert res.answer == "second round"
    path = Path(a.session.path).parent / a.session.id / "claude-transcript.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["type"] for x in lines][:2] == ["user", "assistant"] and lines[1]["message"]["role"] == "assistant"
    assert ", " not in path.read_text().splitlines()[1]  # compact, as Claude Code writes it


SUB_STOP_SH = """#!/usr/bin/env bash
path=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["agent_transcript_path"])')
echo "$path" > "$CLAUDE_PROJECT_DIR/sub-path.txt"
grep -c '"role":"assistant"' "$path" > "$CLAUDE_PROJECT_DIR/sub-count.txt"
exit 0
"""


def test_subagent_stop_gets_the_childs_conversation_as_claude_code_lines(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, SubagentStop input: ``agent_transcript_path`` is the sub-agent's own transcript, in the same lines."""
    settings(proj, {"permissions": {"allow": ["Agent"]}, "hooks": hook("SubagentStop", executable(proj / "sub.sh", SUB_STOP_SH))})
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "say hi", "subagent_type": "Explore"}}],
         "usage": [100, 10]},
        {"text": "child says hi", "usage": [50, 5]},
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=1_000_000)
    try:
        a.ask("delegate")
    finally:
        a.close()
    path = Path((proj / "sub-path.txt").read_text().strip())
    assert (proj / "sub-count.txt").read_text().strip() == "1"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[-1]["message"] == {"role": "assistant", "content": [{"type": "text", "text": "child says hi"}]}
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    assert path != Path(sub["transcript"]) and path.name == Path(sub["transcript"]).name  # beside the hash-chained file


PRE_COMPACT_SH = """#!/usr/bin/env bash
cat > "$CLAUDE_PROJECT_DIR/pre-compact.json"
"""


def test_compact_on_a_short_conversation_still_fires_pre_compact(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, PreCompact: it runs before a compact operation; ``trigger`` is ``manual`` for /compact."""
    settings(proj, {"hooks": hook("PreCompact", executable(proj / "pre.sh", PRE_COMPACT_SH), "manual")})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final("hello")]))
    try:
        a.ask("hi")
        before = list(a.session.messages)
        a.compact("keep the names")
        assert a.session.messages == before  # too short to be worth a summary: nothing is spent
    finally:
        a.close()
    ev = json.loads((proj / "pre-compact.json").read_text())
    assert ev["hook_event_name"] == "PreCompact" and ev["trigger"] == "manual" and ev["custom_instructions"] == "keep the names"


REQUEST_PY = """#!/usr/bin/env python3
import json, sys
ev = json.load(sys.stdin)
cmd = ev["tool_input"].get("command", "")
assert ev["hook_event_name"] == "PermissionRequest" and "permission_suggestions" in ev and "tool_use_id" not in ev
if "yes" in cmd:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}))
elif "no" in cmd:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                      "decision": {"behavior": "deny", "message": "not on this machine"}}}))
"""


def test_a_permission_request_hook_answers_the_ask_in_the_users_place(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, PermissionRequest: runs when a permission dialog would appear; ``decision.behavior`` allows or denies."""
    log = executable(proj / "log.sh", LOG_SH)
    settings(proj, {"hooks": {**hook("PermissionRequest", executable(proj / "req.py", REQUEST_PY), "Bash"),
                              **hook("Notification", log, "permission_prompt")}})
    asked: list[str] = []

    def ask(call: Any, decision: Any) -> str:
        asked.append(call.arguments["command"])
        return "deny"

    a = Agent(cwd=str(proj), trust=True, ask_permission=ask,
              model=scripted([bash_call("touch yes.txt"), bash_call("touch no.txt"), bash_call("touch maybe.txt"), final()]))
    try:
        a.ask("go")
    finally:
        a.close()
    yes, no, maybe = tool_results(a)
    assert yes["ok"] and (proj / "yes.txt").exists()
    assert not no["ok"] and "not on this machine" in no["error"] and not (proj / "no.txt").exists()
    assert not maybe["ok"] and asked == ["touch maybe.txt"]  # no answer from the hook: the user was asked
    (note,) = [json.loads(x) for x in (proj / "events.jsonl").read_text().splitlines() if x.strip()]
    assert note["hook_event_name"] == "Notification" and note["notification_type"] == "permission_prompt" and "Bash" in note["message"]


def test_a_setup_hook_is_named_in_a_warning_with_the_reason(proj: Path, scripted: Callable[..., str], caplog: pytest.LogCaptureFixture) -> None:
    """Hooks reference, Setup: fired for ``--init``/``--maintenance``; agentloop has neither, and says so."""
    settings(proj, {"hooks": hook("Setup", "true")})
    with caplog.at_level("WARNING", logger="agentloop"):
        a = Agent(cwd=str(proj), trust=True, model=scripted([]))
        a.close()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "agentloop does not fire Setup hooks (Claude Code fires it only for --init" in text


SEED_EXIT_SH = """#!/usr/bin/env bash
# seed 004 style: read the event, refuse by exiting 1 with the reason on stderr
ev=$(cat)
case "$ev" in *"rm -rf"*) echo "seed guard says no rm -rf" >&2; exit 1;; esac
exit 0
"""


def test_a_seed_format_hook_blocks_by_exiting_non_zero_with_stderr_as_the_reason(proj: Path, scripted: Callable[..., str]) -> None:
    """Seed 004, Hook Runner: ``returncode != 0`` is a block whose reason is stderr; a handler without Claude
    Code's required ``type`` is written to that protocol, and its default timeout is the seed's 10 s."""
    guard = executable(proj / "guard.sh", SEED_EXIT_SH)
    settings(proj, {"permissions": {"allow": ["Bash"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": guard}]}]}})
    victim = proj / "victim"
    victim.mkdir()
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call(f"rm -rf {victim}"), bash_call("echo fine"), final()]))
    try:
        (h,) = a.hooks.runner.handlers  # type: ignore[attr-defined]
        assert h.seed and h.timeout == 10.0
        a.ask("go")
    finally:
        a.close()
    denied, fine = tool_results(a)
    assert not denied["ok"] and "seed guard says no rm -rf" in denied["error"] and victim.exists()
    assert fine["ok"]


def test_a_claude_code_hook_that_fails_open_says_so(proj: Path, scripted: Callable[..., str]) -> None:
    """Hooks reference, exit codes: another code than 0 or 2 is a non-blocking error and the call proceeds;
    agentloop names it (a guard that crashed must not look like one that approved)."""
    guard = executable(proj / "guard.sh", SEED_EXIT_SH)
    settings(proj, {"permissions": {"allow": ["Bash"]}, "hooks": hook("PreToolUse", guard, "Bash")})
    notices: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("rm -rf nothing-here"), final()]))
    a.on_notice = notices.append
    try:
        a.ask("go")
    finally:
        a.close()
    (r,) = tool_results(a)
    assert r["ok"]
    assert any("failed and did not stop anything: exited with 1: seed guard says no rm -rf" in n for n in notices)


def test_seed_payload_names_session_start_event_post_tool_use_input_object_and_stop_reasons(
    proj: Path, scripted: Callable[..., str]
) -> None:
    """Seed 004, hook payloads: SessionStart has ``event``; PostToolUse's ``input`` is the arguments object;
    Stop's ``stop_reason`` is ``end_turn`` (seeds 001 and 004), agentloop's own reason beside it."""
    log = executable(proj / "log.sh", LOG_SH)
    settings(proj, {"permissions": {"allow": ["Bash"]},
                    "hooks": {**hook("SessionStart", log), **hook("PostToolUse", log), **hook("Stop", log)}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo hi"), final()]))
    try:
        a.ask("go")
    finally:
        a.close()
    start, post, stop = [json.loads(x) for x in (proj / "events.jsonl").read_text().splitlines() if x.strip()]
    assert start["event"] == "SessionStart" and start["hook_event_name"] == "SessionStart"
    assert post["input"] == {"command": "echo hi"} and post["inputJson"] == {"command": "echo hi"}
    assert stop["stop_reason"] == "end_turn" and stop["agentloop_stop_reason"] == "no_tool_calls"
