"""The REPL's keys and lines as Claude Code has them, each in a real 80-column terminal (pexpect + pyte).

The authority is Claude Code's interactive-mode reference (code.claude.com/docs/en/interactive-mode)
and its permissions page (code.claude.com/docs/en/permissions); each test quotes the part it holds to."""

from __future__ import annotations

import json
import time
from pathlib import Path

from _pty import Term, env_for, turns_begun

COLS = 80


def _spec(tmp_path: Path, replies: list[dict[str, object]]) -> str:
    p = tmp_path / "replies.json"
    p.write_text(json.dumps(replies))
    return f"scripted:{p}"


def _term(tmp_path: Path, spec: str, *extra: str, colour: bool = False) -> tuple[Term, Path]:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS=str(COLS))
    if colour:  # the working line is drawn on a colour terminal only
        env.pop("NO_COLOR")
        env["TERM"] = "xterm-256color"
    t = Term(["--model", spec, "--max-usd", "1", *extra], cwd=str(proj), env=env, cols=COLS, rows=30)
    return t, proj


def test_ctrl_c_with_text_clears_it_and_only_ctrl_c_on_an_empty_input_arms_the_exit(tmp_path: Path) -> None:
    """Claude Code's interactive mode, general controls: Ctrl+C "Interrupt or clear input": with nothing
    running, the first press clears the prompt input and a second press exits. So Ctrl+C over typed text
    clears it and says nothing of exiting; Ctrl+C on the empty input then arms the exit."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "unused"}]))
    try:
        t.wait_for(r"(?m)^>")
        t.child.send("half a thought")
        t.wait_for(r"(?m)^> half a thought")
        t.child.send("\x03")
        assert t.until(lambda: "half a thought" not in t.text()), t.text()  # cleared
        t.pump(0.5)
        assert "to exit" not in t.text() and t.child.isalive()  # and the exit is not armed
        t.child.send("\x03")  # on the empty input: armed
        t.wait_for(r"Ctrl\+C again or Ctrl\+D to exit")
        assert t.child.isalive()
        t.child.send("\x03")
        assert t.wait_exit()[0] == 0
    finally:
        t.kill()


def test_ctrl_c_during_a_turn_stops_it_without_arming_the_exit(tmp_path: Path) -> None:
    """Claude Code's interactive mode, general controls: Ctrl+C "Cancel current input or generation"
    (docs.anthropic.com/docs/claude-code/interactive-mode); it interrupts what runs, and only when nothing
    runs does the first press clear the input and the second exit (code.claude.com/docs/en/interactive-mode).
    So Ctrl+C during a turn stops the turn and says nothing of exiting, and the first Ctrl+C on the empty
    prompt afterwards only arms the exit, as it would had no turn run."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "too late", "delay_ms": 30000}, {"text": "second answer"}]))
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("take your time")
        assert t.until(lambda: t.keys_watched() and turns_begun(str(tmp_path / "home")) == 1)  # the turn runs
        t.child.send("\x03")
        t.wait_for(r"⏹ interrupted", after=at, timeout=25)
        t.wait_for(r"(?m)^>\s*$", after=at + 1)
        t.pump(0.5)
        assert "too late" not in t.text(at)
        assert "to exit" not in t.text(at) and t.child.isalive()  # the press stopped the turn, no more
        t.child.send("\x03")  # nothing runs now: this one is the first towards an exit, and only arms it
        t.wait_for(r"Ctrl\+C again or Ctrl\+D to exit", after=at)
        t.pump(0.5)
        assert t.child.isalive()
        t.child.send("\x03")
        assert t.wait_exit()[0] == 0
    finally:
        t.kill()


def test_esc_says_interrupted_on_one_line(tmp_path: Path) -> None:
    """Claude Code's interactive mode: Esc stops Claude mid-turn and the conversation goes on; the
    transcript says so once (one interrupted line, not one from the run and another from the REPL)."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "too late", "delay_ms": 30000}, {"text": "second answer"}]))
    try:
        t.wait_for(r"(?m)^>")
        t.type("take your time")
        assert t.until(lambda: t.keys_watched() and turns_begun(str(tmp_path / "home")) == 1)  # the turn runs
        t.child.send("\x1b")
        t.wait_for(r"interrupted \(Esc\)", timeout=25)
        t.wait_for(r"(?m)^>", after=t.mark())
        t.pump(0.5)
        said = [ln for ln in t.lines() if ln.lstrip().startswith(("⏹", "interrupted"))]
        assert said == ["⏹ interrupted (Esc)"], said
    finally:
        t.kill()


def test_the_working_line_says_esc_to_interrupt(tmp_path: Path) -> None:
    """Claude Code's working line ends with its hint "esc to interrupt" (Esc stops a turn: interactive
    mode); agentloop's says the same, at 80 columns."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "done", "delay_ms": 3000}]), colour=True)
    try:
        t.wait_for(r"(?m)^>")
        t.type("think")
        t.wait_for(r"thinking… \d+s · esc to interrupt")
        t.wait_for(r"(?m)^done")
        assert b"Ctrl+C to stop" not in t.raw
    finally:
        t.kill()


def test_help_names_bash_mode_esc_and_shift_tab(tmp_path: Path) -> None:
    """Claude Code's interactive mode lists, besides the slash commands: ``!`` at the start (Bash mode:
    "Run commands directly and add execution output to the session"), Esc to stop a turn, and Shift+Tab
    to cycle the permission modes. ``/help`` names all three."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "unused"}]))
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("/help")
        t.wait_for(r"Ctrl\+D exits", after=at)
        shown = t.text(at)
        assert "!command" in shown and "Bash mode" in shown
        assert "Esc" in shown and "Shift+Tab" in shown
        assert all(len(line) <= COLS for line in t.lines())
    finally:
        t.kill()


def _refused_turn(tmp_path: Path, key: str) -> None:
    spec = _spec(tmp_path, [
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "made.txt", "content": "x"}},
                                    {"name": "Write", "arguments": {"file_path": "also.txt", "content": "y"}}]},
        {"text": "carried on regardless"},
        {"text": "doing it your way"},
    ])
    t, proj = _term(tmp_path, spec)
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("make it")
        t.wait_for(r"\[y\]es", after=at)
        t.child.send(key)  # one key, no Enter
        t.wait_for(r"tell the model what to do instead", after=at, timeout=20)
        t.wait_for(r"(?m)^>\s*$", after=at)  # the prompt is back: the user says what to do instead
        t.pump(0.5)
        shown = t.text(at)
        assert "carried on regardless" not in shown  # the model was not called again
        assert shown.count("[y]es") == 1  # the turn's other call was not asked (nor run)
        assert "(Ctrl+C again" not in shown and t.child.isalive()
        t.type("use a different name")
        t.wait_for(r"(?m)^carried on regardless", after=at)  # the next reply answers the user's new prompt
    finally:
        t.kill()
    assert not (proj / "made.txt").exists() and not (proj / "also.txt").exists()
    import glob

    from agentloop.transcript import read_records

    (path,) = glob.glob(str(tmp_path / "home" / "projects" / "*" / "sessions" / "*.jsonl"))
    records = list(read_records(path))
    results = [json.dumps(r.payload) for r in records if r.kind == "tool_result"]
    assert any("the user refused permission to use Write" in x for x in results), [r.kind for r in records]
    assert [r.payload["reason"] for r in records if r.kind == "stop"][:1] == ["interrupted"]


def test_no_at_a_permission_question_stops_the_turn_and_asks_what_to_do_instead(tmp_path: Path) -> None:
    """Claude Code's permission question offers "No, and tell Claude what to do differently": the call is
    refused, the turn stops there (the model is not called again and the reply's other calls do not run),
    and the prompt is back for the user to say what to do instead. The model reads the refusal in the call's
    result with the user's next prompt."""
    _refused_turn(tmp_path, "n")


def test_esc_at_a_permission_question_cancels_it_as_no(tmp_path: Path) -> None:
    """Claude Code's permission question takes Esc as its "No, and tell Claude what to do differently
    (esc)" answer (interactive mode: Esc cancels the current operation): the question is answered no at
    once and the turn stops, without starting an exit."""
    _refused_turn(tmp_path, "\x1b")


def test_text_typed_during_a_turn_is_shown_before_the_prompt_returns(tmp_path: Path) -> None:
    """Claude Code keeps its input box under the working line, so what is typed while Claude works is
    seen at once (interactive mode: the prompt is edited while a turn runs, and is sent after it). The
    keys typed meanwhile show under the working line, Backspace takes one back, and when the answer comes
    they wait in the prompt, drawn once."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "answered", "delay_ms": 4000}]), colour=True)
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("slow one")
        t.wait_for(r"esc to interrupt", after=at)
        assert t.until(t.keys_watched)  # (the working line is drawn just before the keys are watched)
        t.child.send("next qx")
        time.sleep(0.2)
        t.child.send("\x7f")  # Backspace
        t.wait_for(r"(?m)^> next q$", after=at + 1)  # under the working line, before the answer
        assert "answered" not in t.text(at)
        t.wait_for(r"(?m)^answered", after=at)
        t.wait_for(r"(?m)^> next q", after=t.mark())
        t.pump(0.5)
        assert [x for x in t.lines()[at:] if "next q" in x] == ["> next q"], t.lines()[at:]
    finally:
        t.kill()


def test_with_no_color_text_typed_during_a_turn_is_shown_plainly_before_the_prompt_returns(tmp_path: Path) -> None:
    """Claude Code keeps its input box under its output while it works (interactive mode: what is typed
    while Claude works is sent after the turn), so typing ahead is seen at once. With ``NO_COLOR`` there is
    no working line to sit under; the keys typed still show, as ``> `` and the text where the next output
    starts, with no escape sequence (a carriage return and spaces take it away); Backspace takes one back,
    and when the answer comes they wait in the prompt, drawn once."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "answered", "delay_ms": 4000}]))
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("slow one")
        assert t.until(t.keys_watched)  # the turn is running (its keys are watched)
        seen = -1
        while seen != len(t.raw):  # and the prompt's own redraw, written before that, is all read
            seen = len(t.raw)
            t.pump(0.3)
        before = len(t.raw)
        t.child.send("next qx")
        time.sleep(0.2)
        t.child.send("\x7f")  # Backspace
        t.wait_for(r"(?m)^> next q$", after=at + 1)  # before the answer, not in the prompt yet
        assert "answered" not in t.text(at)
        t.wait_for(r"(?m)^answered", after=at)
        t.wait_for(r"(?m)^> next q", after=t.mark())
        t.pump(0.5)
        assert [x for x in t.lines()[at:] if "next q" in x] == ["> next q"], t.lines()[at:]
        during = t.raw[before:t.raw.index(b"answered", before)]
        assert b"\x1b" not in during, during  # plain: no colour, no cursor movement
    finally:
        t.kill()


def test_no_at_a_question_a_hook_asked_for_stops_the_turn_too(tmp_path: Path) -> None:
    """Claude Code's hooks reference: a PreToolUse hook's ``"ask"`` shows the user the permission question;
    it is the same question, so its no stops the turn as the permission system's own does."""
    hook = tmp_path / "ask.sh"
    hook.write_text('#!/bin/sh\ncat > /dev/null\necho \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
                    '"permissionDecision": "ask", "permissionDecisionReason": "a hook wants a person"}}\'\n')
    hook.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": str(hook)}]}]}}))
    spec = _spec(tmp_path, [{"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
                            {"text": "carried on regardless"}])
    t, proj = _term(tmp_path, spec)
    (proj / "notes.txt").write_text("private\n")
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("read it")
        t.wait_for(r"\[y\]es", after=at)
        t.child.send("n")
        t.wait_for(r"tell the model what to do instead", after=at, timeout=20)
        t.wait_for(r"(?m)^>\s*$", after=at)
        t.pump(0.5)
        assert "carried on regardless" not in t.text(at)
    finally:
        t.kill()


def test_esc_at_the_trust_question_answers_its_safe_no(tmp_path: Path) -> None:
    """Claude Code's keybindings reference puts permission and confirmation dialogs in one context
    (Confirmation), and Escape cancels the current operation (interactive mode). Esc at a question that takes
    a line (here: trust this folder?) answers its safe "no" at once: the folder's configuration is left out."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": {"command": "true"}}}))
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "unused"}]))
    try:
        t.wait_for(r"\[t\]rust this folder / \[d\]on't trust:")
        t.child.send("\x1b")
        t.wait_for(r"this folder is not trusted; left out: MCP server srv")
        t.wait_for(r"(?m)^>\s*$")
        assert t.child.isalive()
    finally:
        t.kill()


def test_keys_typed_right_after_enter_are_kept_for_the_next_prompt(tmp_path: Path) -> None:
    """Claude Code sends what is typed while it works after the turn (interactive mode), so keys typed at once
    after Enter, before the turn has begun to watch the keyboard, are kept too: switching the terminal to the
    watcher's mode must not flush input that is waiting (``tty.setcbreak`` does, unless told not to)."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "answered", "delay_ms": 2500}]))
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.child.send("slow one\rkept keys")  # one write: the keys wait in the terminal before the turn starts
        t.wait_for(r"(?m)^answered", after=at)
        t.wait_for(r"(?m)^> kept keys", after=t.mark())
    finally:
        t.kill()
