"""What the REPL draws as Claude Code draws it, each in a real 80-column terminal (pexpect + pyte):
a task list, a long command's output, the prompts ``/rewind`` lists, the status line in every mode."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _pty import Term, env_for

COLS = 80
SHIFT_TAB = "\x1b[Z"


def _spec(tmp_path: Path, replies: list[dict[str, object]]) -> str:
    p = tmp_path / "replies.json"
    p.write_text(json.dumps(replies))
    return f"scripted:{p}"


def _term(tmp_path: Path, spec: str) -> tuple[Term, Path]:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS=str(COLS))
    return Term(["--model", spec, "--max-usd", "1"], cwd=str(proj), env=env, cols=COLS, rows=40), proj


def test_a_task_list_is_drawn_as_a_list_under_a_header_without_its_json(tmp_path: Path) -> None:
    """Claude Code shows TodoWrite as its task list (interactive mode: Ctrl+T "Show or hide the task list";
    the Agent SDK's todo-tracking guide draws each todo on its own line with its status), not the call's
    JSON: the header says how many tasks, the list hangs under one ``⎿`` and its lines line up."""
    todos = [{"content": "read the code", "status": "completed", "activeForm": "reading"},
             {"content": "write the fix", "status": "in_progress", "activeForm": "writing"},
             {"content": "run the tests", "status": "pending", "activeForm": "running"}]
    spec = _spec(tmp_path, [{"text": "", "tool_calls": [{"name": "TodoWrite", "arguments": {"todos": todos}}]}, {"text": "planned"}])
    t, _ = _term(tmp_path, spec)
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("plan it")
        t.wait_for(r"(?m)^planned", after=at)
        shown = t.lines()[at:]
        assert "⏺ TodoWrite(3 tasks, 1 done)" in shown
        assert not any('{"todos"' in x or '"status"' in x for x in shown)
        listed = [x for x in shown if "read the code" in x or "write the fix" in x or "run the tests" in x]
        assert len(listed) == 3, shown
        assert listed[0].startswith("  ⎿ ") and all(x.startswith("    ") and "⎿" not in x for x in listed[1:]), listed
    finally:
        t.kill()


def test_a_three_thousand_line_cat_shows_its_first_lines_and_counts_the_rest(tmp_path: Path) -> None:
    """Claude Code shows a few first lines of a command's output under the call and counts the rest
    ("… +N lines"); with a 3,000-line ``cat`` the count is of the whole output (2,997 more), not of the
    preview the tool kept for the model."""
    spec = _spec(tmp_path, [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "cat big.txt"}}]},
                            {"text": "read it"}])
    t, proj = _term(tmp_path, spec)
    (proj / "big.txt").write_text("".join(f"line number {i}\n" for i in range(1, 3001)))
    try:
        t.wait_for(r"(?m)^>")
        at = t.mark()
        t.type("show it")  # cat runs in the sandbox: not asked
        t.wait_for(r"(?m)^read it", after=at)
        shown = t.lines()[at:]
        i = shown.index("  ⎿ line number 1")
        assert shown[i + 1: i + 4] == ["    line number 2", "    line number 3", "    … +2997 lines"], shown[i:i + 5]
        assert not any("195 more lines" in x or "more lines" in x for x in shown)
    finally:
        t.kill()


def test_rewind_lists_a_bang_prompt_as_typed(tmp_path: Path) -> None:
    """Claude Code's Bash mode: ``!`` at the start runs the command and adds it and its output to the
    session (interactive mode, quick commands); the list of prompts to go back to (checkpointing,
    ``/rewind``) shows what the user typed, ``!ls -la``, not the ``<bash-input>`` wrapping the model reads."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "noted"}]))
    try:
        t.wait_for(r"(?m)^>")
        t.type("!ls -la")
        t.wait_for(r"(?m)^total ")
        t.type("what is here?")
        t.wait_for(r"(?m)^noted")
        at = t.mark()
        t.type("/rewind")
        t.wait_for(r"goes back to", after=at)
        shown = t.text(at)
        assert "1  !ls -la · what is here?" in [x.strip() for x in shown.splitlines()]
        assert "bash-input" not in shown and "bash-stdout" not in shown
    finally:
        t.kill()


def test_the_status_line_keeps_the_model_in_accept_edits_and_plan(tmp_path: Path) -> None:
    """Claude Code cycles default, acceptEdits and plan with Shift+Tab (interactive mode; permission
    modes) and the mode is shown beside, not instead of, what the session runs on: at 80 columns the
    status line names the model in every mode."""
    t, _ = _term(tmp_path, _spec(tmp_path, [{"text": "unused"}]))
    try:
        t.wait_for(r"(?m)^>")
        assert t.until(lambda: "scripted" in t.lines()[-1]), t.lines()[-1]
        for mode in ("acceptEdits", "plan"):
            t.child.send(SHIFT_TAB)
            t.wait_for(rf"mode {mode}")
            assert t.until(lambda m=mode: f"mode {m}" in t.lines()[-1] and "scripted" in t.lines()[-1]), t.lines()[-1]
            status = t.lines()[-1]
            assert f"mode {mode}" in status and "scripted" in status and "$" in status, status
            assert len(status) <= COLS
    finally:
        t.kill()


@contextlib.contextmanager
def _repl_on_anthropic(tmp_path: Path, script: dict[str, Any]) -> Iterator[Term]:
    """The REPL in a real terminal on Claude Haiku, served by the local fake speaking Anthropic's wire protocol
    (``script``: its replies), at its first prompt."""
    from agentloop.testing.fakeprovider import FakeProvider

    proj = tmp_path / "proj"
    proj.mkdir()
    with FakeProvider(script) as fp:
        env = env_for(str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS=str(COLS), ANTHROPIC_BASE_URL=fp.url,
                      ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key")
        t = Term(["--model", "anthropic:claude-haiku-4-5", "--max-usd", "1"], cwd=str(proj), env=env, cols=COLS, rows=40)
        try:
            t.wait_for(r"(?m)^>")
            yield t
        finally:
            t.kill()


def test_the_models_thinking_is_shown_collapsed_to_one_line(tmp_path: Path) -> None:
    """Claude Code shows extended thinking collapsed, on one dim line marked ``∴`` (interactive mode: Ctrl+O
    toggles the verbose transcript that holds it whole); the REPL shows each reply's thinking so, its first
    words and how long it was, never the whole of it and never nothing."""
    thought = "The user wants the two options weighed. " * 12 + "\nSecond paragraph of the thought."
    with _repl_on_anthropic(tmp_path, {"replies": [{"thinking": thought, "text": "the answer"}]}) as t:
        at = t.mark()
        t.type("weigh them")
        t.wait_for(r"(?m)^the answer", after=at)
        t.wait_for(r"(?m)^cost ", after=at)  # the turn is over
        shown = [x for x in t.lines()[at:] if x.startswith("∴")]
        assert len(shown) == 1, t.lines()[at:]
        assert shown[0].startswith("∴ Thought: The user wants the two options weighed.")
        assert shown[0].endswith("words)") and len(shown[0]) <= COLS
        assert "Second paragraph" not in t.text(at)


def test_streamed_thinking_is_shown_collapsed_before_the_text_that_follows_it(tmp_path: Path) -> None:
    """Claude Code shows a reply's thinking where it came, before the answer (interactive mode: the
    collapsed ``∴`` line; Ctrl+O shows it whole), not after it. The Anthropic stream sends the thinking block
    first; the REPL prints its collapsed line when the block ends, and the answer streams below it."""
    thought = "Weigh the cost of each option before answering. " * 6
    answer = "First option wins, because it is cheaper and simpler to keep."
    script = {"replies": [{"thinking": thought, "text": answer, "chunk_size": 6, "chunk_delay": 0.05}]}
    with _repl_on_anthropic(tmp_path, script) as t:
        at = t.mark()
        t.type("which one?")
        t.wait_for(r"(?m)^First op", after=at)  # the answer has begun streaming
        seen_then = [x for x in t.lines()[at:] if x.startswith("∴")]
        assert len(seen_then) == 1, t.lines()[at:]  # the thinking is on the screen already
        t.wait_for(r"(?m)^cost ", after=at)  # the turn is over
        lines = t.lines()[at:]
        marks = [i for i, x in enumerate(lines) if x.startswith("∴")]
        first_text = next(i for i, x in enumerate(lines) if x.startswith("First option"))
        assert len(marks) == 1 and marks[0] < first_text, lines  # once, and above the answer
        assert lines[marks[0]].startswith("∴ Thought: Weigh the cost") and lines[marks[0]].endswith("words)")
