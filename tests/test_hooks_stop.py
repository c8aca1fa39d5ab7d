"""Stop and SubagentStop hooks as Claude Code runs them: a block continues the same turn, within its budgets.

Claude Code's hooks reference (https://code.claude.com/docs/en/hooks, "Stop"):

- Stop input: "The ``stop_hook_active`` field is ``true`` when Claude Code is
  already continuing as a result of a stop hook. [...] Claude Code overrides
  the hook and ends the turn after 8 consecutive blocks."
- Stop decision control: ``decision: "block"`` "prevents Claude from
  stopping"; ``reason`` "tells Claude why it should continue";
  ``hookSpecificOutput.additionalContext`` is non-error feedback: "The
  conversation continues so Claude can act on it", under "the same loop
  protections as ``decision: "block"``".
- Exit code 2 on Stop: "Prevents Claude from stopping, continues the conversation."
- SubagentStop: "Returning ``decision: "block"`` with a ``reason`` keeps the
  subagent running and delivers ``reason`` to the subagent as its next instruction."

Each test runs twice: settings in ``.agentloop/settings.json`` and in ``.claude/settings.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _hookkit import executable, layout, settings  # noqa: F401 (layout: both settings layouts, autouse)
from agentloop.agent.agent import Agent
from agentloop.agent.hooks.stop_gate import MAX_STOP_BLOCKS
from agentloop.transcript import read_records, verify_file


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with one small file."""
    (proj / "notes.txt").write_text("hello notes\n")
    return proj


@pytest.fixture(autouse=True)
def runaway_guard() -> Any:
    """A turn that never ends (the old recursion: hundreds of Stop calls) fails here in 60 s instead of hanging."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise TimeoutError("the turn did not end within 60 s: Stop hook continuations are unbounded")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 60)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def answer(i: int) -> dict[str, Any]:
    return {"text": f"done {i}", "usage": [100, 5]}


ALWAYS_BLOCK_BASH = """#!/usr/bin/env bash
# logs every Stop event it gets, then refuses to let the agent stop (exit 2, reason on stderr)
cat >> "$LOG"; echo >> "$LOG"
echo "keep working: the tests are not green" >&2
exit 2
"""

BLOCK_ONCE_PY = """#!/usr/bin/env python3
# the documented guard: block unless Claude Code is already continuing because of a Stop hook
import json, os, sys
event = json.load(sys.stdin)
with open(os.environ["LOG"], "a") as f:
    f.write(json.dumps(event) + "\\n")
if event.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
"""

PROMPT_LOG = """#!/usr/bin/env bash
cat >> "$PLOG"; echo >> "$PLOG"
"""


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []


def hooks_with(proj: Path, stop_cmd: str, *, event: str = "Stop") -> None:
    prompt = executable(proj / "prompt-log.sh", PROMPT_LOG)
    settings(proj, {"hooks": {
        event: [{"hooks": [{"type": "command", "command": stop_cmd}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt}]}],
    }})


def agent_env(proj: Path) -> dict[str, str]:
    import os

    return {**os.environ, "LOG": str(proj / "stop.log"), "PLOG": str(proj / "prompt.log")}


def test_a_stop_hook_that_always_blocks_ends_within_the_step_budget(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Issue 15: such a hook ran 950 model calls and ended in RecursionError with --max-steps 5."""
    hooks_with(proj, executable(proj / "always.sh", ALWAYS_BLOCK_BASH))
    a = Agent(cwd=str(proj), trust=True, model=scripted([answer(i) for i in range(40)]), max_steps=5, env=agent_env(proj))
    res = a.ask("fix it")
    a.close()
    stops = events(proj / "stop.log")
    assert res.steps <= 5 and a.stats.turns == 1
    assert 2 <= len(stops) <= 5  # one Stop call per model answer, bounded by the turn's steps
    assert [s["stop_hook_active"] for s in stops] == [False] + [True] * (len(stops) - 1)
    assert len(events(proj / "prompt.log")) == 1  # the same turn: UserPromptSubmit fired once
    # the block's reason reached the model as the next user message of the turn
    users = [m["content"] for m in a.session.messages if m.get("role") == "user"]
    assert users[0] == "fix it" and users[1:] == ["keep working: the tests are not green"] * (len(users) - 1)
    assert verify_file(a.session.path).ok


def test_a_stop_hook_that_always_blocks_is_overridden_after_eight_blocks_in_a_row(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    hooks_with(proj, executable(proj / "always.sh", ALWAYS_BLOCK_BASH))
    notices: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=scripted([answer(i) for i in range(40)]), max_steps=50, env=agent_env(proj))
    a.on_notice = notices.append
    res = a.ask("fix it")
    a.close()
    stops = events(proj / "stop.log")
    assert len(stops) == MAX_STOP_BLOCKS + 1 == 9  # the first stop, then 8 blocked continuations
    assert res.steps == 9 and res.stop_reason == "no_tool_calls" and res.answer == "done 8"
    assert any("8 blocks in a row" in n for n in notices)
    # the next prompt is a new turn: the count starts again, stop_hook_active false at first
    (proj / "stop.log").unlink()
    a2 = Agent(cwd=str(proj), trust=True, model=scripted([answer(i) for i in range(40)]), max_steps=2, env=agent_env(proj), continue_last=True)
    a2.ask("again")
    a2.close()
    assert [s["stop_hook_active"] for s in events(proj / "stop.log")] == [False, True]


def test_a_stop_hook_that_always_blocks_ends_within_the_money_budget(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    hooks_with(proj, executable(proj / "always.sh", ALWAYS_BLOCK_BASH))
    home = tmp_path / "home"  # prices come from the user's file only, never from a folder
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"prices": {"scripted": {"input": 10_000_000, "output": 10_000_000}}}))
    replies = [{"text": f"done {i}", "usage": [1000, 10]} for i in range(40)]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_steps=50, max_usd_micros=35_000, env=agent_env(proj))
    res = a.ask("fix it")
    a.close()
    assert a.stats.spent_micros <= 35_000 and res.spent_micros == a.stats.spent_micros
    assert 1 <= len(events(proj / "stop.log")) <= 4


def test_a_stop_hook_that_blocks_once_then_allows_continues_the_turn_once(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    hooks_with(proj, executable(proj / "once.py", BLOCK_ONCE_PY))
    a = Agent(cwd=str(proj), trust=True, model=scripted([answer(1), answer(2), answer(3)]), max_steps=5, env=agent_env(proj))
    res = a.ask("fix it")
    a.close()
    stops = events(proj / "stop.log")
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert [s["last_assistant_message"] for s in stops] == ["done 1", "done 2"]
    assert res.answer == "done 2" and res.stop_reason == "no_tool_calls" and res.steps == 2
    assert a.stats.turns == 1 and len(events(proj / "prompt.log")) == 1
    runs = [r.payload for r in read_records(a.session.path) if r.kind == "run_start"]
    assert runs[-1]["messages"][-1] == {"role": "user", "content": "run the tests before you stop"}
    assert [h["blocked"] for h in (r.payload for r in read_records(a.session.path) if r.kind == "hook") if h["event"] == "Stop"] == [True, False]


def test_stop_additional_context_reaches_the_model_and_continues_the_turn(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Stop decision control: ``hookSpecificOutput.additionalContext`` continues the conversation."""
    body = """#!/usr/bin/env bash
input=$(cat)
if [ "$(echo "$input" | jq -r .stop_hook_active)" = "true" ]; then exit 0; fi
echo '{"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"The lint step has not run yet."}}'
"""
    hooks_with(proj, executable(proj / "ctx.sh", body))
    a = Agent(cwd=str(proj), trust=True, model=scripted([answer(1), answer(2)]), max_steps=5, env=agent_env(proj))
    res = a.ask("fix it")
    a.close()
    assert res.answer == "done 2"
    assert a.session.messages[-2] == {"role": "user", "content": "The lint step has not run yet."}


def test_a_subagent_stop_hook_that_blocks_once_keeps_the_child_going(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    once = executable(proj / "once.py", BLOCK_ONCE_PY)
    settings(proj, {"permissions": {"allow": ["Agent"]}, "hooks": {"SubagentStop": [{"matcher": "Explore", "hooks": [{"type": "command", "command": once}]}]}})
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "what is in notes.txt?", "subagent_type": "Explore"}}], "usage": [100, 10]},
        {"text": "child first answer", "usage": [50, 5]},
        {"text": "child checked again", "usage": [50, 5]},
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=1_000_000, env=agent_env(proj))
    res = a.ask("delegate")
    a.close()
    assert res.answer == "parent done"
    stops = events(proj / "stop.log")
    assert [(s["hook_event_name"], s["stop_hook_active"]) for s in stops] == [("SubagentStop", False), ("SubagentStop", True)]
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    assert sub["answer"] == "child checked again" and sub["steps"] == 2
    child = [r for r in read_records(sub["transcript"]) if r.kind == "run_start"]
    assert child[-1].payload["messages"][-1] == {"role": "user", "content": "run the tests before you stop"}


def test_a_subagent_stop_hook_that_always_blocks_is_bounded(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    always = executable(proj / "always.sh", ALWAYS_BLOCK_BASH)
    settings(proj, {"permissions": {"allow": ["Agent"]}, "hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": always}]}]}})
    child = [{"text": f"child {i}", "usage": [10, 1]} for i in range(MAX_STOP_BLOCKS + 1)]
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "p", "subagent_type": "Explore"}}], "usage": [100, 10]},
        *child,
        {"text": "parent done", "usage": [100, 5]},
    ]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=1_000_000, env=agent_env(proj))
    res = a.ask("delegate")
    a.close()
    assert res.answer == "parent done"
    assert len(events(proj / "stop.log")) == MAX_STOP_BLOCKS + 1
