"""The terminal in a real pty: coloured diffs in the edit prompt, the working line, 80-column breaks,
compaction's spend, resume and permission rules: pexpect gives the REPL a pty, pyte renders it, the assertions read the screen.

Claude Code's documentation is the reference:
- CLI reference: "--resume, -r | Resume a specific session by ID or name, or show an interactive
  picker to choose a session" (code.claude.com/docs/en/cli-reference, as quoted in
  anthropics/claude-code#42311);
- Settings: the project-local settings file is ``.claude/settings.local.json`` (personal, not
  committed); ``/permissions`` lists the allow, ask and deny rules with the settings file each
  comes from. agentloop's own is ``.agentloop/settings.local.json``, where ``/permissions allow``
  writes by default;
- the permission prompt for a file change shows the change to approve (a diff for an edit).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from agentloop.testing.fakeprovider import FakeProvider

sys.path.insert(0, os.path.dirname(__file__))
from _pty import Term, env_for  # noqa: E402

PROMPT = r"(?m)^>\s*$"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with a text file and a Python file."""
    (proj / "hello.txt").write_text("greetings from hello.txt\n")
    (proj / "app.py").write_text("def one():\n    return 1\n\n\ndef two():\n    return 2\n")
    return proj


def model_args(fp: FakeProvider) -> list[str]:
    return ["--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1"]


def _finish(t: Term) -> None:
    t.type("/exit")
    assert t.wait_exit() == (0, None)
    assert "Traceback" not in t.text()


def test_the_edit_prompt_shows_a_coloured_diff_and_the_write_prompt_the_content(tmp_path: Path, proj: Path) -> None:
    replies = [
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {"file_path": "app.py", "old_string": "return 1", "new_string": "return 100"}}]},
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "notes.md", "content": "first line\nsecond line\n"}}]},
    ]  # a no stops the turn: the model is not called after either question
    with FakeProvider({"replies": replies}) as fp:
        env = env_for(str(tmp_path / "home"))
        env.pop("NO_COLOR")
        t = Term(model_args(fp), cwd=str(proj), env=env)
        try:
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("change it")
            t.wait_for(r"Allow Edit\(app\.py\)\?", after=m)
            shown = t.text(m)
            assert re.search(r"(?m)^--- app\.py$", shown) and re.search(r"(?m)^\+\+\+ app\.py$", shown)
            assert re.search(r"(?m)^@@ -1,5 \+1,5 @@$", shown)
            assert re.search(r"(?m)^ def one\(\):\n-    return 1\n\+    return 100\n\n\n def two\(\):$", shown), shown
            sent = t.raw.decode("utf-8", "replace")
            assert re.search(r"\x1b\[[0-9;]*32m\+    return 100", sent), "the added line is green"
            assert re.search(r"\x1b\[[0-9;]*31m-    return 1", sent), "the removed line is red"
            t.type("n")
            t.wait_for(r"tell the model what to do instead", after=m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("write notes")
            t.wait_for(r"Allow Write\(notes\.md\)\?", after=m)
            shown = t.text(m)
            assert re.search(r"(?m)^create notes\.md \(2 lines\)\n  first line\n  second line$", shown), shown
            t.type("n")
            t.wait_for(r"tell the model what to do instead", after=m)
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()
    assert (proj / "app.py").read_text().count("return 1\n") == 1 and not (proj / "notes.md").exists()


def test_the_working_line_shows_while_an_approved_tool_runs(tmp_path: Path, proj: Path) -> None:
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 3"}}]}, {"text": "Slept well."}]
    with FakeProvider({"replies": replies}) as fp:
        env = env_for(str(tmp_path / "home"))
        env.pop("NO_COLOR")
        t = Term(model_args(fp), cwd=str(proj), env=env)
        try:
            t.wait_for(PROMPT)
            t.type("sleep a little")
            t.wait_for(r"Allow Bash\(sleep 3\)\?")
            asked = len(t.raw)
            t.type("y")
            t.wait_for(r"Slept well\.")
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()
    after = ANSI.sub("", t.raw[asked:].decode("utf-8", "replace"))
    running = re.search(r"running Bash… [12]s · esc to interrupt", after)
    assert running is not None, "the working line came back once the prompt was answered"
    assert running.start() < after.index("Slept well."), "it showed while the command ran"


def _screen_80(t: Term) -> list[str]:
    return [line.rstrip() for line in t.screen.display]


def test_at_80_columns_the_status_bar_cost_line_and_permission_prompt_break_only_between_words(tmp_path: Path, proj: Path) -> None:
    command = "touch the quick brown fox jumps over the lazy dog while everyone watches quietly from afar"  # not read-only: it asks
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": command}}]}, {"text": "Echoed."}]
    with FakeProvider({"replies": replies}) as fp:
        env = env_for(str(tmp_path / "home"), COLUMNS="80")
        t = Term([*model_args(fp), "--max-usd", "5"], cwd=str(proj), env=env, cols=80, rows=30)
        try:
            t.wait_for(PROMPT)
            t.wait_for(r"context 0%")
            status = _screen_80(t)[-1]
            # shortened by whole parts: it ends at the end of one, not inside the session id
            assert re.fullmatch(r" openai:gpt-4o-mini · 0 in / 0 out · context 0% · \$0\.000000 / \$5\.000000 \(0%\)", status), status
            m = t.mark()
            t.type("echo something long")
            t.wait_for(r"\[y\]es / \[a\]lways this exact line this session / \[n\]o:", after=m)
            lines = t.lines()[m + 1 :]
            start = next(i for i, x in enumerate(lines) if x.startswith("Allow Bash("))
            end = next(i for i, x in enumerate(lines) if "[y]es" in x)
            question = " ".join(lines[start : end + 1])
            assert f"Allow Bash({command})?" in question, lines[start : end + 1]
            t.type("y")
            t.wait_for(r"Echoed\.", after=m)
            t.wait_for(r"(?m)^(cost|turn) \$.*context \d+%$", after=m)
            cost = next(x for x in t.lines()[m:] if re.match(r"(cost|turn) \$", x))
            assert re.fullmatch(r"cost \$0\.\d{6} this turn · session \$0\.\d{6} / \$5\.000000 · context \d+%", cost), cost
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()


def test_compact_on_a_short_session_says_so_without_a_model_call(tmp_path: Path, proj: Path) -> None:
    with FakeProvider({"replies": [{"text": "Short answer."}, {"text": "unexpected summary"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(str(tmp_path / "home")))
        try:
            t.wait_for(PROMPT)
            t.type("hi")
            t.wait_for(r"Short answer\.")
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/compact")
            t.wait_for(r"nothing worth compacting: the conversation is still short \(\d+ messages\)", after=m)
            assert "cost" not in t.text(m), "nothing was spent"
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()
        assert len(fp.requests) == 1, "no side call was made"


def test_a_compaction_s_spend_is_counted_in_cost_and_sessions(tmp_path: Path, proj: Path) -> None:
    (proj / "big.txt").write_text("\n".join(f"line {i}: some words of a long file" for i in range(400)))
    replies = [{"text": "Read it."}, {"text": "The user attached big.txt, a long file of numbered lines."}]
    with FakeProvider({"replies": replies}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(str(tmp_path / "home")))
        try:
            t.wait_for(PROMPT)
            t.type("look at @big.txt")
            t.wait_for(r"Read it\.")
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/compact")
            t.wait_for(r"compacted: \d+ messages → \d+", after=m)
            t.wait_for(r"compacted: \d+ messages → \d+ \(it cost \$0\.\d+\)", after=m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/cost")
            spend = t.wait_for(r"spend: (\$0\.\d+)", after=m).group(1)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/sessions")
            listed = t.wait_for(r"\d{8}-\d{6}-[0-9a-f]{6}\s+\S+ \S+\s+1\s+(\$0\.\d+)\s+ok", after=m).group(1)
            assert listed == spend, (listed, spend)
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()
        assert len(fp.requests) == 2


def test_cost_shows_estimated_tokens_when_the_provider_reports_no_usage(tmp_path: Path, proj: Path) -> None:
    with FakeProvider({"replies": [{"text": "An answer without usage.", "usage": "none"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(str(tmp_path / "home")))
        try:
            t.wait_for(PROMPT)
            t.type("hello")
            t.wait_for(r"An answer without usage\.")
            t.wait_for(r"cost \$0\.\d+ this turn \([1-9]\d* in / [1-9]\d* out, estimated\)")
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/cost")
            t.wait_for(r"tokens: [1-9]\d* in / [1-9]\d* out \(estimated: the provider reported no usage\)", after=m)
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()


def test_resume_without_an_id_offers_a_picker_and_shows_the_last_exchange(tmp_path: Path, proj: Path) -> None:
    home = str(tmp_path / "home")
    replies = [{"text": "The file greets you.\nIt says greetings."}, {"text": "Another session."}, {"text": "Back again."}]
    with FakeProvider({"replies": replies}) as fp:
        for prompt in ("what does hello.txt say?", "a second session"):
            t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
            try:
                t.wait_for(PROMPT)
                t.type(prompt)
                t.wait_for(r"(?m)^cost ")
                t.wait_for(PROMPT)
                _finish(t)
            finally:
                t.kill()
        t = Term([*model_args(fp), "-r"], cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(r"resume which\? \[1-2, Enter for a new session\]:")
            shown = t.text()
            assert re.search(r"(?m)^  1  \d{4}-\d\d-\d\d \d\d:\d\d\s+1 turns  a second session$", shown), shown
            assert re.search(r"(?m)^  2  \d{4}-\d\d-\d\d \d\d:\d\d\s+1 turns  what does hello\.txt say\?$", shown), shown
            t.type("2")
            t.wait_for(r"resumed session")
            t.wait_for(r"the last exchange:\n> what does hello\.txt say\?\n⏺ The file greets you\.\n  It says greetings\.")
            t.wait_for(PROMPT)
            t.type("and now?")
            t.wait_for(r"Back again\.")
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()
    last = fp.requests[-1]["body"]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == ["what does hello.txt say?", "and now?"]


def test_permissions_adds_and_removes_rules_in_the_local_settings_file(tmp_path: Path, proj: Path) -> None:
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo allowed-by-rule"}}]}, {"text": "Ran it."}]
    local = proj / ".agentloop" / "settings.local.json"
    with FakeProvider({"replies": replies}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(str(tmp_path / "home")))
        try:
            t.wait_for(PROMPT)
            m = t.mark()
            t.type('/permissions allow "Bash(echo allowed-by-rule)"')
            t.wait_for(r"added allow Bash\(echo allowed-by-rule\) to \.agentloop/settings\.local\.json", after=m)
            assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(echo allowed-by-rule)"]}}
            t.wait_for(PROMPT)
            m = t.mark()
            t.type('/permissions deny "Bash(rm:*)"')
            t.wait_for(r"added deny Bash\(rm:\*\)", after=m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type('/permissions allow "Bash(unclosed"')
            t.wait_for(r"/permissions: .*", after=m)
            assert "Bash(unclosed" not in local.read_text(), "a malformed rule is not written"
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/permissions")
            t.wait_for(r"1  deny  Bash\(rm:\*\)   \(\.agentloop/settings\.local\.json\)", after=m)
            t.wait_for(r"2  allow Bash\(echo allowed-by-rule\)   \(\.agentloop/settings\.local\.json\)", after=m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("run the echo")  # the added rule is in effect at once: no question
            t.wait_for(r"⎿ allowed-by-rule", after=m)
            t.wait_for(r"Ran it\.", after=m)
            assert "Allow Bash" not in t.text(m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("/permissions remove 1")
            t.wait_for(r"removed deny Bash\(rm:\*\) from \.agentloop/settings\.local\.json", after=m)
            assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(echo allowed-by-rule)"], "deny": []}}
            t.wait_for(PROMPT)
            _finish(t)
        finally:
            t.kill()


def test_resume_without_an_id_in_print_mode_is_a_one_line_error(tmp_path: Path, proj: Path) -> None:
    import subprocess

    env = env_for(str(tmp_path / "home"))
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "hi", "-r"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--resume without an id lists sessions to choose from in the REPL only" in p.stderr, p.stderr
