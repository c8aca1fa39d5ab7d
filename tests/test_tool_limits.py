"""Tools that cannot hang or blow up: Grep and Glob run in linear time, Read streams.

Each attack on the tools' limits is run for real, in a child process with a
hard timeout, so that code which hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentloop.agent.tools.catalog import builtin_registry
from agentloop.agent.tools.workspace import Workspace
from agentloop.events import ToolCall

_CALL = textwrap.dedent(
    """
    import json, resource, sys
    from agentloop.agent.tools.catalog import builtin_registry
    from agentloop.agent.tools.workspace import Workspace
    from agentloop.events import ToolCall
    root, spill, name, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    reg = builtin_registry(Workspace(root), spill_dir=spill)
    def hwm():  # this process's own peak (ru_maxrss keeps the runner's from before exec)
        try:
            return [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")][0]
        except (OSError, IndexError, ValueError):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before = hwm()
    r = reg.invoke(ToolCall("1", name, args))
    after = hwm()
    print(json.dumps({"ok": r.ok, "content": r.content, "error": r.error,
                      "grew_kib": after - before, "maxrss_kib": after}))
    """
)


def _call_in_child(root: Path, name: str, args: dict[str, object], timeout: float = 10.0) -> dict[str, object]:
    """Run one tool call in a fresh interpreter; a hang past ``timeout`` fails the test."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CALL, str(root), str(root.parent / "spill"), name, json.dumps(args)],
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} {args} did not answer within {timeout:g} s")
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return out


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    r = tmp_path.resolve() / "ws"
    r.mkdir()
    return r


# --- Grep and Glob: linear time --------------------------------------------------


def test_grep_with_a_catastrophically_backtracking_pattern_answers_within_seconds(root: Path) -> None:
    # Issue 16: `(\w+\s*)*\(` on 10 words ran past 60 s at 100% CPU.
    (root / "words.txt").write_text("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron\n")
    (root / "call.py").write_text("print(x)\n")
    got = _call_in_child(root, "Grep", {"pattern": r"(\w+\s*)*\(", "output_mode": "content"})
    assert got["ok"], got
    assert got["content"] == f"{root}/call.py:1:print(x)"


def test_glob_with_many_stars_against_a_long_name_answers_within_seconds(root: Path) -> None:
    # Issue 16: `*a*a*a*a*a*a*a*a*a*b` against a 200-character name ran past 30 s.
    (root / ("a" * 200)).write_text("x")
    (root / ("a" * 20 + "b")).write_text("x")
    got = _call_in_child(root, "Glob", {"pattern": "*a*a*a*a*a*a*a*a*a*b"})
    assert got["ok"], got
    assert got["content"] == f"{root}/{'a' * 20}b"


def test_grep_glob_filter_with_many_stars_is_linear_too(root: Path) -> None:
    (root / ("a" * 200)).write_text("needle\n")
    (root / ("a" * 20 + "b")).write_text("needle\n")
    got = _call_in_child(root, "Grep", {"pattern": "needle", "glob": "*a*a*a*a*a*a*a*a*a*b"})
    assert got["ok"], got
    assert str(got["content"]).splitlines()[1:] == [f"{root}/{'a' * 20}b"]


def test_a_search_past_its_time_limit_stops_with_an_error_naming_what_to_narrow(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second line behind RE2: a whole search (many files) has a hard limit too.
    import agentloop.agent.tools.builtin as bt

    (root / "a.txt").write_text("needle\n")
    monkeypatch.setattr(bt, "GREP_TIME_LIMIT_S", -1.0)
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(root.parent / "s"))
    r = reg.invoke(ToolCall("1", "Grep", {"pattern": "needle"}))
    assert not r.ok and r.error is not None
    assert r.error.startswith("Grep stopped after -1 s (0 files searched)") and "narrow the search" in r.error


def test_grep_lines_never_match_across_a_newline_unless_multiline(root: Path) -> None:
    """Claude Code's Grep tool description: "Content search built on ripgrep ... Full regex
    syntax ... Ripgrep, not grep ... `multiline: true` for patterns that span lines." So
    without multiline, `\\s` and `[^x]` stop at the end of a line, in every output mode."""
    (root / "f.txt").write_text("foo\nbar\n")
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(root.parent / "s"))
    one = reg.invoke(ToolCall("1", "Grep", {"pattern": r"foo\s+bar", "output_mode": "content"}))
    assert one.ok and one.content == "No matches found"
    files = reg.invoke(ToolCall("1", "Grep", {"pattern": r"foo\s+bar"}))
    assert files.ok and files.content == "No matches found"
    many = reg.invoke(ToolCall("1", "Grep", {"pattern": r"foo\s+bar", "output_mode": "content", "multiline": True}))
    assert many.ok and many.content.splitlines() == [f"{root}/f.txt:1:foo", f"{root}/f.txt:2:bar"]


def test_grep_refuses_look_around_with_a_message_naming_the_syntax(root: Path) -> None:
    """Ripgrep's default engine (the syntax Claude Code's Grep documents) has no look-around;
    RE2 neither: the model is told why, in one line, and can rewrite the pattern."""
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(root.parent / "s"))
    r = reg.invoke(ToolCall("1", "Grep", {"pattern": r"foo(?=bar)"}))
    assert not r.ok
    assert "invalid regular expression" in (r.error or "") and "look-around" in (r.error or "")


def test_a_gitignore_line_with_many_stars_does_not_stall_the_walk(root: Path) -> None:
    # A .gitignore comes from the (possibly untrusted) repository; on a
    # backtracking engine this one line stalls Glob on a long name.
    (root / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*b\n")
    (root / ("a" * 200)).write_text("x")
    (root / ("a" * 20 + "b")).write_text("x")
    # Grep honours .gitignore (Glob, as Claude Code's, does not read it)
    got = _call_in_child(root, "Grep", {"pattern": "x"})
    assert got["ok"], got
    assert str(got["content"]).splitlines()[1:] == [f"{root}/{'a' * 200}"]


# --- Read: streamed, bounded, regular files only -----------------------------------

_MIB = 1 << 20


def test_reading_five_lines_of_a_200_mb_file_takes_under_50_mb_of_memory(root: Path) -> None:
    # Issue 16: Read with limit 5 of a 200 MB file took 570 MB.
    line = b"".join(b"%07d the quick brown fox jumps over the lazy dog\n" % i for i in range(20_000))
    path = root / "big.log"
    try:
        with open(path, "wb") as f:
            for _ in range(200 * _MIB // len(line) + 1):
                f.write(line)
        got = _call_in_child(root, "Read", {"file_path": "big.log", "offset": 3, "limit": 5}, timeout=60)
    finally:
        path.unlink()
    assert got["ok"], got
    content = str(got["content"])
    assert content.startswith("     3\t0000002 the quick brown fox")
    assert "     7\t0000006 the quick" in content and "     8\t" not in content
    assert "[showing lines 3-7 of " in content and "call Read with offset=8" in content
    assert int(str(got["grew_kib"])) < 50 * 1024, got["grew_kib"]


def test_one_enormous_line_is_read_truncated_in_bounded_memory(root: Path) -> None:
    # A text head, then a 200 MB hole: its last line is 200 MB of NULs without a newline.
    path = root / "holey.txt"
    with open(path, "wb") as f:
        f.write(b"first\n" * 2000)
        f.truncate(200 * _MIB)
    got = _call_in_child(root, "Read", {"file_path": "holey.txt", "offset": 2000}, timeout=60)
    assert got["ok"], got
    lines = str(got["content"]).splitlines()
    assert lines[0] == "  2000\tfirst"
    assert lines[1].startswith("  2001\t") and lines[1].endswith(f"[line truncated, {200 * _MIB - 12000} characters]")
    assert int(str(got["grew_kib"])) < 50 * 1024, got["grew_kib"]


def test_a_sparse_1_5_gb_file_is_refused_as_binary_at_once(root: Path) -> None:
    # Issue 16: it took 11 s and 1.5 GB before being refused; the first 8 KiB decide.
    with open(root / "sparse.img", "wb") as f:
        f.truncate(1536 * _MIB)
    got = _call_in_child(root, "Read", {"file_path": "sparse.img"})
    assert not got["ok"] and "binary" in str(got["error"])
    assert int(str(got["grew_kib"])) < 50 * 1024, got["grew_kib"]


def test_reading_a_socket_or_a_device_is_refused_before_it_is_opened(root: Path) -> None:
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(root.parent / "s"))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        r = reg.invoke(ToolCall("1", "Read", {"file_path": "sock"}))
    assert not r.ok and (r.error or "").startswith("sock is not a regular file (a socket)")
    try:
        os.mknod(root / "zero", 0o600 | 0o020000, os.makedev(1, 5))  # a /dev/zero of its own
    except PermissionError:
        return  # not root: the socket case above still ran
    r = reg.invoke(ToolCall("1", "Read", {"file_path": "zero"}))
    assert not r.ok and (r.error or "").startswith("zero is not a regular file (a device)")
