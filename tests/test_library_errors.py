"""Every library error reaches the user as agentloop's one line.

A library's own log lines (RE2 writes "DFA out of memory" to the process's
stderr through its C++ logger) and its raw messages (``b'invalid perl
operator: (?='``) are not agentloop's to show: the user, or the model, gets
one line that says what is wrong with what they gave. Claude Code's Grep
documentation ("Tools available to Claude": Grep searches with ripgrep's
regular expressions) is the syntax; the limits are agentloop's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_GREP = textwrap.dedent(
    """
    import json, sys
    from agentloop.agent.tools.catalog import builtin_registry
    from agentloop.agent.tools.workspace import Workspace
    from agentloop.events import ToolCall
    root, pattern = sys.argv[1], open(sys.argv[2]).read()
    reg = builtin_registry(Workspace(root), spill_dir=root + "-spill")
    r = reg.invoke(ToolCall("1", "Grep", {"pattern": pattern, "output_mode": "count"}))
    print(json.dumps({"ok": r.ok, "content": r.content, "error": r.error}))
    """
)


def _grep(tmp_path: Path, pattern: str) -> tuple[dict[str, object], str]:
    """Grep ``pattern`` over a workspace in a fresh interpreter: (its result, what reached fd 2)."""
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("a" * 200_000 + "\nhello world\n")
    pat = tmp_path / "pattern.txt"
    pat.write_text(pattern)
    # a refusal takes well under a second; a pattern searched anyway runs on and is cut here
    p = subprocess.run([sys.executable, "-c", _GREP, str(root), str(pat)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1]), p.stderr


@pytest.mark.parametrize(
    "pattern, says",
    [
        ("a" * 1_000_000, "too large: 1000000 characters"),
        ("(a|b)" * 2_000, "too large: it compiles to"),
        ("x.*" * 1_500, "too large: it compiles to"),
        ("a" * 5_000, "too large: it compiles to"),
    ],
    ids=["a 1 MB literal", "a long alternation", "many stars", "a 5,000 character literal"],
)
def test_a_giant_grep_pattern_is_one_line_and_nothing_raw_reaches_stderr(tmp_path: Path, pattern: str, says: str) -> None:
    got, stderr = _grep(tmp_path, pattern)
    assert stderr == ""
    assert got["ok"] is False
    err = str(got["error"])
    assert says in err and "\n" not in err


def test_a_large_pattern_below_the_limit_searches_without_a_library_line(tmp_path: Path) -> None:
    got, stderr = _grep(tmp_path, "a" * 2_900)
    assert stderr == ""  # RE2 may run out of DFA memory here; it must say nothing of it
    assert got["ok"] is True, got


def test_an_invalid_pattern_is_named_in_words_not_as_library_bytes(tmp_path: Path) -> None:
    got, stderr = _grep(tmp_path, "foo(?=bar)")
    err = str(got["error"])
    assert stderr == "" and got["ok"] is False
    assert "b'" not in err and "invalid perl operator: (?=" in err and "look-around" in err


SETTINGS_INPUTS = {
    "not UTF-8": (lambda d: (d / "s.json").write_bytes(b"\xff{}"), "s.json", "not UTF-8 text: byte 0xff at offset 0"),
    "a FIFO": (lambda d: __import__("os").mkfifo(d / "s.json"), "s.json", "is not a regular file"),
    "nested 100,000 deep": (lambda d: (d / "s.json").write_text("[" * 100_000), "s.json", "nested too deeply"),
    "missing": (lambda d: None, "s.json", "no such file"),
}


@pytest.mark.parametrize("what", list(SETTINGS_INPUTS))
def test_a_bad_settings_file_on_the_command_line_is_one_line_of_agentloop_s_words(tmp_path: Path, what: str) -> None:
    make, name, says = SETTINGS_INPUTS[what]
    make(tmp_path)
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "--settings", name, "-p", "hi", "--model", "scripted:none.json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert says in p.stderr
    for raw in ("Traceback", "codec", "recursion", "Errno"):
        assert raw not in p.stderr


def test_a_settings_file_that_is_not_utf8_is_named_with_the_byte_and_offset(tmp_path: Path) -> None:
    from agentloop.config.settings import ConfigError, read_json_object

    f = tmp_path / "settings.json"
    f.write_bytes(b'{"model": "a\xe9"}')
    with pytest.raises(ConfigError) as info:
        read_json_object(str(f))
    assert str(info.value) == f"{f}: not UTF-8 text: byte 0xe9 at offset 12"
