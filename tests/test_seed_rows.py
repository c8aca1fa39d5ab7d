"""Rows of the seeds where agentloop once did something else than the seed said, silently.

Seed 001: ``new Budget(usd(0.15))`` is a money cap. agentloop's ``Budget`` has three
caps, so a bare positional number cannot say which one it is: it is a ``TypeError``
naming the keywords, never ``max_steps=150000``. Seed 004 ("Hook Runner"): a Stop
hook's output is ignored ("Expected stdout: {} (output ignored)"), so a handler
written to its protocol that exits 1 there must not keep the agent going; the
session-end event is ``"event": "SessionStop"``. A PreToolUse hook's block is
said on stderr in ``-p`` text mode, as Claude Code's ``-p`` reports what it did not
do (its ``permission_denials``). docs/seed-differences.md lists every row where
agentloop still differs, and why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, usd
from agentloop.agent.agent import Agent
from agentloop.transcript import read_records

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.mark.parametrize("args", [(usd("0.15"),), (150_000,), (5, 100, 1_000), (None,)])
def test_a_budget_given_positionally_is_a_type_error_naming_the_keywords(args: tuple[Any, ...]) -> None:
    with pytest.raises(TypeError, match=r"by name, not position.*max_usd_micros=usd"):
        Budget(*args)


def test_a_budget_by_name_holds_the_cap_it_names() -> None:
    b = Budget(max_usd_micros=usd("0.15"))
    assert (b.max_usd_micros, b.max_steps, b.max_tokens) == (150_000, None, None)
    assert Budget.from_json(b.to_json()) == b
    with pytest.raises(ValueError, match="at least one cap"):
        Budget()


def _hook(proj: Path, name: str, body: str) -> str:
    path = proj / name
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def _settings(proj: Path, hooks: dict[str, Any]) -> None:
    (proj / ".agentloop").mkdir(exist_ok=True)
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def _seed(event: str, cmd: str) -> dict[str, Any]:
    """A handler in seed 004's form: no ``type`` (Claude Code requires one)."""
    return {event: [{"hooks": [{"command": cmd}]}]}


def test_a_seed_stop_hook_that_exits_1_does_not_keep_the_agent_going(proj: Path, scripted: Callable[..., str]) -> None:
    calls = proj / "stop-calls"
    cmd = _hook(proj, "stop.sh", f"#!/bin/sh\ncat > /dev/null\necho x >> {calls}\necho 'not today' >&2\nexit 1\n")
    _settings(proj, _seed("Stop", cmd))
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "done"}]))  # one reply: a second call would fail
    result = a.ask("hi")
    a.close()
    assert result.answer == "done" and calls.read_text() == "x\n"
    turns = [r for r in read_records(a.session.path) if r.kind == "model_turn"]
    assert len(turns) == 1


def test_a_seed_pre_tool_use_hook_that_exits_1_still_blocks(proj: Path, scripted: Callable[..., str]) -> None:
    """The negative control of the row above: where seed 004 reads the answer, exit 1 blocks."""
    cmd = _hook(proj, "guard.sh", "#!/bin/sh\ncat > /dev/null\necho 'seed guard says no' >&2\nexit 1\n")
    _settings(proj, _seed("PreToolUse", cmd))
    a = Agent(cwd=str(proj), trust=True, permission_mode="bypassPermissions", model=scripted([
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "touch made.txt"}}]}, {"text": "done"}]))
    a.ask("go")
    a.close()
    (r,) = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert not r["ok"] and "seed guard says no" in r["error"] and not (proj / "made.txt").exists()


def test_session_stop_handlers_get_event_session_stop_and_claude_code_handlers_session_end(
    proj: Path, scripted: Callable[..., str]
) -> None:
    seed_out, cc_out = proj / "seed.json", proj / "cc.json"
    seed = _hook(proj, "seed.sh", f"#!/bin/sh\ncat > {seed_out}\n")
    cc = _hook(proj, "cc.sh", f"#!/bin/sh\ncat > {cc_out}\n")
    _settings(proj, {**_seed("SessionStop", seed), "SessionEnd": [{"hooks": [{"type": "command", "command": cc}]}]})
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "done"}]))
    a.ask("hi")
    a.close("prompt_input_exit")
    got_seed, got_cc = json.loads(seed_out.read_text()), json.loads(cc_out.read_text())
    assert got_seed["event"] == "SessionStop" and "total_cost_usd" in got_seed and "turn_count" in got_seed
    assert got_cc["hook_event_name"] == "SessionEnd" and got_cc["reason"] == "prompt_input_exit"


def test_a_hooks_block_is_said_on_stderr_in_print_text_mode(proj: Path, scripted: Callable[..., str]) -> None:
    guard = _hook(proj, "guard.sh", "#!/bin/sh\ncat > /dev/null\necho 'no Bash today' >&2\nexit 2\n")
    _settings(proj, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]})
    model = scripted([{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "ls"}}]}, {"text": "did it"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    p = subprocess.run([*AGENTLOOP, "--trust", "-p", "list", "--model", model], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "did it\n"
    assert "agentloop: blocked by a PreToolUse hook Bash: no Bash today" in p.stderr.splitlines()


def test_a_stop_hook_that_keeps_the_turn_going_is_said_in_print_text_mode(proj: Path, scripted: Callable[..., str]) -> None:
    """Claude Code's Stop hook: exit 2 blocks stopping, and stderr is fed back to the model."""
    once = proj / "once"
    stop = _hook(proj, "stop.sh", f"#!/bin/sh\ncat > /dev/null\n[ -e {once} ] && exit 0\ntouch {once}\necho 'run the tests too' >&2\nexit 2\n")
    _settings(proj, {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]})
    model = scripted([{"text": "done"}, {"text": "tests pass, done"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    p = subprocess.run([*AGENTLOOP, "--trust", "-p", "fix it", "--model", model], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith("tests pass, done\n")
    assert "agentloop: a Stop hook kept the turn going: run the tests too" in p.stderr.splitlines()
