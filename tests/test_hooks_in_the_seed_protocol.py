"""Hooks written to seed 004's protocol, and output keys of neither protocol.

Seed 004 ("Hook Runner") has hooks answer ``{"allowed": true}``,
``{"allowed": false, "reason": "..."}``, ``{"allowed": true, "updatedInput":
{...}}`` (PreToolUse), ``{"continue": false, "reason": "..."}`` or
``{"updatedOutput": "..."}`` (PostToolUse), ``{"updatedPrompt": "..."}``
(UserPromptSubmit), and reads ``event``, ``tool``, ``inputJson``, ``output``
and ``is_error``. agentloop honours those beside Claude Code's protocol.
``{"allowed": true}`` is "no objection", never a permission grant: seed 004
makes it the fail-open default, so reading it as Claude Code's
``permissionDecision: "allow"`` would approve every call.

An output key that looks like a misspelt key of either protocol is named in a
warning (a misspelt decision must not fail open in silence); a key a hook adds
for itself (``metrics``, as Anthropic's security-guidance plugin prints on every
event) is ignored without a word, as Claude Code ignores what it does not read.
Each test runs twice: settings in ``.agentloop/settings.json`` and in ``.claude/settings.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _hookkit import executable, layout, settings  # noqa: F401 (layout: both settings layouts, autouse)
from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.hooks.runner import parse_hook_output
from agentloop.transcript import read_records


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with one small file."""
    (proj / "notes.txt").write_text("hello notes\n")
    return proj


def bash_call(cmd: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": cmd}}], "usage": [100, 10]}


def final(text: str = "done") -> dict[str, Any]:
    return {"text": text, "usage": [100, 5]}


def tool_results(a: Agent) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def hook(event: str, cmd: str, matcher: str = "*") -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": cmd}]}]}


SEED_GUARD_PY = """#!/usr/bin/env python3
# seed 004 style: reads event/tool/inputJson, answers allowed/reason/updatedInput
import json, sys
ev = json.load(sys.stdin)
assert ev["event"] == "PreToolUse"
cmd = ev["inputJson"].get("command", "")
if "rm -rf" in cmd:
    print(json.dumps({"allowed": False, "reason": "seed guard: no rm -rf"}))
elif cmd.startswith("echo raw"):
    print(json.dumps({"allowed": True, "updatedInput": {"command": "echo rewritten-by-seed-hook"}}))
else:
    print(json.dumps({"allowed": True}))
"""


def test_seed_allowed_false_denies_with_its_reason_even_in_bypass_mode(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    settings(proj, {"hooks": hook("PreToolUse", executable(proj / "guard.py", SEED_GUARD_PY), "Bash")})
    marker = proj / "victim"
    marker.mkdir()
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call(f"rm -rf {marker}"), final()]), permission_mode="bypassPermissions")
    a.ask("clean")
    a.close()
    (r,) = tool_results(a)
    assert not r["ok"] and "seed guard: no rm -rf" in r["error"] and marker.exists()


def test_seed_allowed_true_is_no_objection_not_a_grant_and_updated_input_rewrites(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    settings(proj, {"permissions": {"allow": ["Bash(echo rewritten-by-seed-hook)"]},
                    "hooks": hook("PreToolUse", executable(proj / "guard.py", SEED_GUARD_PY), "Bash")})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo raw"), bash_call("touch other.txt"), final()]))
    a.ask("go")
    a.close()
    rewritten, other = tool_results(a)
    assert rewritten["ok"] and "rewritten-by-seed-hook" in json.dumps(rewritten["content"])
    # {"allowed": true} did not approve Bash: with no terminal the mode's prompt means a refusal
    # (a command that writes: echo alone is read-only and runs unasked)
    assert not other["ok"] and "not granted" in other["error"] and not (proj / "other.txt").exists()


def test_seed_updated_output_replaces_what_the_model_sees(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    body = """#!/usr/bin/env bash
out=$(jq -r .output)
printf '{"updatedOutput": "redacted (%s chars)"}' "${#out}"
"""
    settings(proj, {"hooks": hook("PostToolUse", executable(proj / "post.sh", body), "Read")})
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([read, final()]))
    a.ask("read")
    a.close()
    tool_msgs = [m["content"] for m in a.session.messages if m.get("role") == "tool"]
    assert tool_msgs and tool_msgs[0].startswith("redacted (") and "hello notes" not in tool_msgs[0]


def test_seed_updated_prompt_rewrites_and_allowed_false_blocks_the_prompt(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    body = """#!/usr/bin/env python3
import json, sys
ev = json.load(sys.stdin)
if "password" in ev["prompt"]:
    print(json.dumps({"allowed": False, "reason": "no passwords in prompts"}))
else:
    print(json.dumps({"updatedPrompt": ev["prompt"] + " (answer in French)"}))
"""
    settings(proj, {"hooks": hook("UserPromptSubmit", executable(proj / "prompt.py", body))})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final("bonjour")]))
    with pytest.raises(AgentError, match="no passwords in prompts"):
        a.ask("my password is hunter2")
    a.ask("say hello")
    a.close()
    users = [m["content"] for m in a.session.messages if m.get("role") == "user"]
    assert users == ["say hello (answer in French)"]


def test_seed_continue_false_with_a_reason_stops_the_run(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    body = """#!/usr/bin/env bash
echo '{"continue": false, "reason": "audit quota reached"}'
"""
    settings(proj, {"hooks": hook("PostToolUse", executable(proj / "post.sh", body), "Read")})
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]}
    notices: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=scripted([read, final("never")]))
    a.on_notice = notices.append
    res = a.ask("read")
    a.close()
    assert res.stop_reason == "interrupted" and any("audit quota reached" in n for n in notices)


@pytest.mark.parametrize(
    "output, key",
    [
        ('{"decison": "block", "reason": "typo"}', "'decison'"),
        ('{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permisionDecision": "deny"}}', "hookSpecificOutput.permisionDecision"),
        ('{"allow": false}', "'allow'"),
    ],
)
def test_a_misspelt_output_key_is_named_in_a_warning(tmp_path: Path, proj: Path, output: str, key: str, scripted: Callable[..., str]) -> None:
    settings(proj, {"hooks": hook("PreToolUse", executable(proj / "typo.sh", f"#!/usr/bin/env bash\necho '{output}'\n"), "Bash")})
    notices: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo hi"), final()]), env={**os.environ})
    a.on_notice = notices.append
    a.ask("go")
    a.close()
    assert any(key in n and "typo.sh" in n for n in notices), notices
    (rec,) = [r.payload for r in read_records(a.session.path) if r.kind == "hook" and r.payload["event"] == "PreToolUse"]
    assert any(key in w for w in rec["warnings"])


def test_both_protocols_keys_give_no_warning() -> None:
    for raw in (
        '{"allowed": true, "updatedInput": {"a": 1}, "reason": "r", "continue": true}',
        '{"updatedOutput": "x", "updatedPrompt": "p"}',
        '{"decision": "block", "reason": "r", "systemMessage": "m", "stopReason": "s", "suppressOutput": false,'
        ' "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "r",'
        ' "updatedInput": {}, "additionalContext": "c", "updatedToolOutput": 1}}',
    ):
        assert parse_hook_output(raw).warnings == (), raw


def test_a_key_a_hook_adds_for_itself_gives_no_warning() -> None:
    """Anthropic's security-guidance plugin adds ``metrics`` to its answers; it is nobody's misspelling."""
    assert parse_hook_output('{"metrics": {"ms": 3}, "systemMessage": "ok"}').warnings == ()
    assert parse_hook_output('{"hookSpecificOutput": {"hookEventName": "PostToolUse", "timingInfo": 1}}').warnings == ()
    top = parse_hook_output('{"additionalContext": "ctx"}').warnings
    assert len(top) == 1 and "hookSpecificOutput.additionalContext" in top[0]
