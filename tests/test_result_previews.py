"""What the REPL shows under a finished call says what happened: lines added and removed by an
edit (never a bare "+5 lines"), how many lines a Read gave (not the first numbered line), the text
of an MCP result (not its JSON), and for other output the first line and how many more follow."""

from __future__ import annotations

import json
from pathlib import Path

from _pty import Term, env_for
from agentloop.cli.preview import result_summary


def test_an_edit_is_summarised_as_lines_added_and_removed() -> None:
    args = {"file_path": "a.py", "old_string": "x = 1\ny = 2\n", "new_string": "x = 1\ny = 3\nz = 4\n"}
    assert result_summary("Edit", args, "ok") == "Updated a.py: 2 lines added, 1 removed"
    multi = {"file_path": "b.py", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c\nd", "new_string": ""}]}
    assert result_summary("MultiEdit", multi, "ok") == "Updated b.py: 1 line added, 3 removed"
    assert result_summary("Write", {"file_path": "c.txt", "content": "1\n2\n3\n"}, "ok") == "Wrote 3 lines to c.txt"


def test_a_read_is_summarised_by_its_line_count() -> None:
    content = "".join(f"{i:>6}\tline {i}\n" for i in range(1, 43))
    assert result_summary("Read", {"file_path": "x"}, content) == "Read 42 lines"


def test_an_mcp_result_shows_its_text_not_json() -> None:
    content = {"content": [{"type": "text", "text": "forecast: sunny\nwind: light"}, {"type": "image", "data": "..."}]}
    assert result_summary("mcp__weather__get", {}, content) == "forecast: sunny … 2 more lines"


def test_other_output_is_its_first_line_and_a_count_of_the_rest() -> None:
    assert result_summary("Bash", {"command": "ls"}, "a\nb\nc") == "a … 2 more lines"
    assert result_summary("Bash", {"command": "true"}, "done") == "done"


def test_the_repl_shows_an_edits_lines_added_and_removed(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "f.txt").write_text("one\ntwo\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": str(proj / "f.txt")}}]},
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {
            "file_path": str(proj / "f.txt"), "old_string": "two\n", "new_string": "2\n3\n"}}]},
        {"text": "edited"},
    ]))
    t = Term(["--model", f"scripted:{script}", "--permission-mode", "acceptEdits"], cwd=str(proj),
             env=env_for(str(tmp_path / "home"), HOME=str(tmp_path)))
    try:
        t.wait_for(r"(?m)^>")
        t.type("edit it")
        t.wait_for(r"(?m)^edited")
        text = t.text()
        assert "⎿ Read 2 lines" in text
        assert "2 lines added, 1 removed" in text
    finally:
        t.kill()
