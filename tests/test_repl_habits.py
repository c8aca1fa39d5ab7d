"""Claude Code's habits at the REPL, in a real terminal (pexpect + pyte), as its interactive-mode
documentation gives them (code.claude.com/docs/en/interactive-mode): a permission question is
answered by one key, no Enter; Shift+Tab cycles the permission modes (default, acceptEdits, plan);
``!`` at the start of the input runs the command at once (Bash mode) and its output goes with the
next prompt."""

from __future__ import annotations

import glob
import json
from pathlib import Path

from _pty import Term, env_for, turns_begun
from agentloop.transcript import read_records

SHIFT_TAB = "\x1b[Z"


def _spec(tmp_path: Path, replies: list[dict[str, object]]) -> str:
    p = tmp_path / "replies.json"
    p.write_text(json.dumps(replies))
    return f"scripted:{p}"


def _term(tmp_path: Path, spec: str, *extra: str) -> tuple[Term, Path]:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path))
    return Term(["--model", spec, "--max-usd", "1", *extra], cwd=str(proj), env=env), proj


def test_a_permission_question_takes_one_key(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "made.txt", "content": "x"}}]},
        {"text": "written"},
    ])
    t, proj = _term(tmp_path, spec)
    try:
        t.wait_for(r"(?m)^>")
        t.type("make it")
        t.wait_for(r"\[y\]es")
        t.child.send("y")  # no Enter
        t.wait_for(r"(?m)^written")
    finally:
        t.kill()
    assert (proj / "made.txt").read_text() == "x"


def test_shift_tab_cycles_the_permission_modes_and_the_mode_holds(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "auto.txt", "content": "y"}}]},
        {"text": "done"},
    ])
    t, proj = _term(tmp_path, spec)
    try:
        t.wait_for(r"(?m)^>")
        t.child.send(SHIFT_TAB)
        t.wait_for(r"mode acceptEdits")
        t.type("write it")  # acceptEdits: the Write is not asked
        t.wait_for(r"(?m)^done")
        assert "[y]es" not in t.text()
        t.child.send(SHIFT_TAB)
        t.wait_for(r"mode plan")
        t.child.send(SHIFT_TAB)
        # back to default: the status line names no mode (and still names the model)
        assert t.until(lambda: "mode " not in t.lines()[-1] and "scripted" in t.lines()[-1]), t.lines()[-1]
    finally:
        t.kill()
    assert (proj / "auto.txt").read_text() == "y"


def test_bang_runs_the_command_now_and_its_output_goes_with_the_next_prompt(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [{"text": "I see it"}])
    t, proj = _term(tmp_path, spec)
    (proj / "hello.txt").write_text("greetings from the file\n")
    try:
        t.wait_for(r"(?m)^>")
        t.type("!cat hello.txt")
        t.wait_for(r"(?m)^greetings from the file")
        assert "[y]es" not in t.text()  # the user's own command is not asked
        t.type("what did it say?")
        t.wait_for(r"(?m)^I see it")
        t.type("/exit")
        t.wait_exit()
    finally:
        t.kill()
    (path,) = glob.glob(str(tmp_path / "home" / "projects" / "*" / "sessions" / "*.jsonl"))
    (start,) = [r for r in read_records(path) if r.kind == "run_start"]
    sent = start.payload["messages"][-1]["content"]
    assert "<bash-input>cat hello.txt</bash-input>" in sent
    assert "greetings from the file" in sent and sent.endswith("what did it say?")


def test_bang_goes_through_the_pipeline_no_tool_hook_sees_it_and_a_held_key_is_redacted(tmp_path: Path) -> None:
    """Claude Code runs Bash mode without PreToolUse or PostToolUse hooks and without permission rules
    (anthropics/claude-code#19256: "The hook fires for normal Bash tool usage but never fires for `!`
    commands"); agentloop runs it through its one tool pipeline all the same, so the output shown and sent
    with the next prompt is redacted there: a key the session holds, printed from a file, never reaches the
    screen or the model."""
    key = "sk-ant-api03-" + "Qw7" * 14
    spec = _spec(tmp_path, [{"text": "I see it"}])
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ncat > /dev/null\necho ran >> {tmp_path / 'hook-ran'}\nexit 2\n")
    hook.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"hooks": {event: [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}] for event in ("PreToolUse", "PostToolUse")}}))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "key.txt").write_text(f"the key is {key}\n")
    env = env_for(str(home), HOME=str(tmp_path), ANTHROPIC_API_KEY=key)
    t = Term(["--model", spec, "--max-usd", "1"], cwd=str(proj), env=env)
    try:
        t.wait_for(r"(?m)^>")
        t.type("!cat key.txt")
        t.wait_for(r"(?m)^the key is")
        t.type("what did it say?")
        t.wait_for(r"(?m)^I see it")
        assert key not in t.text() and key[:20] not in t.text()
        t.type("/exit")
        t.wait_exit()
    finally:
        t.kill()
    assert not (tmp_path / "hook-ran").exists()  # Bash mode: no tool hook, as Claude Code
    (path,) = glob.glob(str(home / "projects" / "*" / "sessions" / "*.jsonl"))
    (start,) = [r for r in read_records(path) if r.kind == "run_start"]
    sent = start.payload["messages"][-1]["content"]
    assert "<bash-input>cat key.txt</bash-input>" in sent and "the key is" in sent and key not in sent


def test_esc_stops_the_turn_without_exiting_and_keys_typed_meanwhile_wait_in_the_prompt(tmp_path: Path) -> None:
    import time

    spec = _spec(tmp_path, [{"text": "too late", "delay_ms": 30000}, {"text": "second answer"}])
    t, _ = _term(tmp_path, spec)
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("take your time")
        assert t.until(lambda: t.keys_watched() and turns_begun(str(tmp_path / "home")) == 1)  # the turn is under way
        t.child.send("next q")  # typed while the turn runs
        t.wait_for(r"(?m)^> next q$", after=at + 1)  # (kept: shown under the prompt line)
        started = time.monotonic()
        t.child.send("\x1b")
        t.wait_for(r"interrupted \(Esc\)", timeout=25)
        assert time.monotonic() - started < 25  # Esc stopped it: the reply was still over 25 s away
        t.wait_for(r"(?m)^> next q")  # the keys typed meanwhile are in the new prompt
        t.child.send("\r")
        t.wait_for(r"(?m)^second answer")
        assert t.child.isalive()
        assert "too late" not in t.text()
    finally:
        t.kill()
