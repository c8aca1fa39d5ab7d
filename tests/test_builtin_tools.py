"""The built-in tools, run for real: files on disk, real subprocesses, real process groups."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop.agent.tools.builtin import (
    READ_MAX_CHARS,
    SPILL_THRESHOLD,
    RunningProcesses,
)
from agentloop.agent.tools.catalog import builtin_registry
from agentloop.agent.tools.workspace import Workspace
from agentloop.events import ToolCall
from mcp_servers.helpers import alive as _alive


@pytest.fixture
def env(tmp_path):
    base = tmp_path.resolve()
    root = base / "ws"
    root.mkdir()
    spill = base / "spill"
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle secret\n")
    procs = RunningProcesses()
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(spill), shell_timeout_s=30, processes=procs)

    def call(name, **args):
        return reg.invoke(ToolCall("c1", name, args))

    return type("Env", (), {"root": root, "spill": spill, "outside": outside, "reg": reg, "call": staticmethod(call), "procs": procs})


def ok(result):
    assert result.ok, result.error
    return result.content


def err(result):
    assert not result.ok, result.content
    return result.error


def test_tools_have_claude_code_names_and_argument_names(env):
    names = env.reg.names()[:14]  # a tool added later is appended (DEVELOPING.md, "Adding a built-in tool")
    assert names == ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "LS", "NotebookEdit", "BashOutput", "KillShell",
                     "TodoWrite", "ExitPlanMode", "AskUserQuestion", "apply_patch"]
    props = {t.name: set(t.parameters["properties"]) for t in env.reg}
    assert {"command", "timeout", "description"} <= props["Bash"]
    assert props["Read"] == {"file_path", "offset", "limit", "pages"}
    assert props["Write"] == {"file_path", "content"}
    assert props["Edit"] == {"file_path", "old_string", "new_string", "replace_all"}
    assert props["Glob"] == {"pattern", "path"}
    assert {"pattern", "path", "glob", "output_mode", "-i", "-n", "-A", "-B", "-C"} <= props["Grep"]


def read(env, path):
    """Read a file first, as Edit and Write of an existing file require."""
    return ok(env.call("Read", file_path=path))


def test_only_the_reading_tools_are_marked_read_only(env):
    assert {t.name for t in env.reg if t.read_only} == {"Read", "Glob", "Grep", "LS", "BashOutput"}


# --- Read / Write / Edit ------------------------------------------------------


def test_read_numbers_lines_like_cat_n_and_honours_offset_and_limit(env):
    (env.root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert ok(env.call("Read", file_path="f.txt")).startswith("     1\tline 1\n     2\tline 2\n")
    out = ok(env.call("Read", file_path=str(env.root / "f.txt"), offset=3, limit=2))
    assert out.startswith("     3\tline 3\n     4\tline 4\n")
    assert "line 5" not in out.split("[")[0]
    assert "offset=5" in out


def test_read_pages_instead_of_spilling_so_a_spilled_file_can_be_read_back(env):
    (env.root / "big.txt").write_text("".join(f"{'x' * 70} {i}\n" for i in range(3000)))
    out = ok(env.call("Read", file_path="big.txt"))
    assert len(out) <= READ_MAX_CHARS
    assert "call Read with offset=" in out
    assert not env.spill.exists()


def test_read_refuses_binary_files_directories_and_missing_files(env):
    (env.root / "b.bin").write_bytes(b"\x00\x01\x02")
    (env.root / "d").mkdir()
    assert "binary" in err(env.call("Read", file_path="b.bin"))
    assert "directory" in err(env.call("Read", file_path="d"))
    assert "not found" in err(env.call("Read", file_path="nope.txt"))


def test_file_tools_refuse_paths_outside_and_symlinks_leading_out(env):
    os.symlink(env.outside / "secret.txt", env.root / "leak")
    os.symlink(env.outside, env.root / "leakdir")
    assert "outside the workspace" in err(env.call("Read", file_path="leak"))
    assert "outside the workspace" in err(env.call("Read", file_path="../outside/secret.txt"))
    assert "outside the workspace" in err(env.call("Write", file_path="leakdir/x.txt", content="x"))
    assert "outside the workspace" in err(env.call("Edit", file_path="leak", old_string="needle", new_string="pin"))
    assert "outside the workspace" in err(env.call("Grep", pattern="needle", path="leakdir"))
    assert (env.outside / "secret.txt").read_text() == "needle secret\n"
    assert not (env.outside / "x.txt").exists()


def test_write_creates_directories_and_replaces_content(env):
    assert "Created" in ok(env.call("Write", file_path="a/b/c.txt", content="one\n"))
    assert (env.root / "a" / "b" / "c.txt").read_text() == "one\n"
    assert "Updated" in ok(env.call("Write", file_path="a/b/c.txt", content="two\n"))
    assert (env.root / "a" / "b" / "c.txt").read_text() == "two\n"


def test_edit_replaces_a_unique_match_and_shows_the_lines_around_it(env):
    (env.root / "m.py").write_text("def f():\n    return 1\n")
    read(env, "m.py")
    out = ok(env.call("Edit", file_path="m.py", old_string="return 1", new_string="return 2"))
    assert (env.root / "m.py").read_text() == "def f():\n    return 2\n"
    assert "     2\t    return 2" in out


def test_edit_refuses_a_match_that_is_not_unique_unless_replace_all(env):
    (env.root / "m.txt").write_text("a x a x a\n")
    read(env, "m.txt")
    message = err(env.call("Edit", file_path="m.txt", old_string="a", new_string="b"))
    assert "3 times" in message and "replace_all" in message
    assert (env.root / "m.txt").read_text() == "a x a x a\n"
    ok(env.call("Edit", file_path="m.txt", old_string="a", new_string="b", replace_all=True))
    assert (env.root / "m.txt").read_text() == "b x b x b\n"


def test_edit_refuses_missing_text_and_no_op_edits_and_creates_with_empty_old_string(env):
    (env.root / "m.txt").write_text("hello\n")
    read(env, "m.txt")
    assert "not found" in err(env.call("Edit", file_path="m.txt", old_string="bye", new_string="x"))
    assert "same" in err(env.call("Edit", file_path="m.txt", old_string="hello", new_string="hello"))
    ok(env.call("Edit", file_path="new.txt", old_string="", new_string="fresh\n"))
    assert (env.root / "new.txt").read_text() == "fresh\n"
    assert "already has content" in err(env.call("Edit", file_path="m.txt", old_string="", new_string="x"))


def test_edit_keeps_the_file_mode(env):
    p = env.root / "run.sh"
    p.write_text("echo a\n")
    p.chmod(0o755)
    read(env, "run.sh")
    ok(env.call("Edit", file_path="run.sh", old_string="a", new_string="b"))
    assert (p.stat().st_mode & 0o777) == 0o755


# --- Glob / Grep / LS with .gitignore -------------------------------------------


@pytest.fixture
def repo(env):
    r = env.root
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (r / "build").mkdir()
    (r / "build" / "gen.py").write_text("needle = 1\n")
    (r / "src").mkdir()
    (r / "src" / "app.py").write_text("import os\nneedle = 2\nNEEDLE = 3\n")
    (r / "src" / "util.ts").write_text("const needle = 4;\n")
    (r / "src" / ".gitignore").write_text("local_*.py\n")
    (r / "src" / "local_cfg.py").write_text("needle = 5\n")
    (r / "debug.log").write_text("needle in log\n")
    (r / "keep.log").write_text("needle kept\n")
    (r / "README.md").write_text("no match here\n")
    os.symlink(env.outside / "secret.txt", r / "src" / "secret_link.py")
    return env


def test_grep_skips_files_git_ignores_and_honours_negation_and_nested_gitignore(repo):
    out = ok(repo.call("Grep", pattern="needle"))
    files = set(out.splitlines()[1:])
    r = str(repo.root)
    assert files == {f"{r}/src/app.py", f"{r}/src/util.ts", f"{r}/keep.log"}
    # cross-check against git itself
    listed = subprocess.run(
        ["git", "-C", r, "ls-files", "--others", "--exclude-standard"], capture_output=True, text=True, check=True
    ).stdout.split()
    for f in ("build/gen.py", "debug.log", "src/local_cfg.py"):
        assert f not in listed
    for f in ("src/app.py", "keep.log"):
        assert f in listed


def test_grep_never_follows_a_symlink_out_of_the_workspace(repo):
    out = ok(repo.call("Grep", pattern="secret", output_mode="content"))
    assert out == "No matches found"


def test_grep_content_mode_gives_path_line_number_and_text(repo):
    out = ok(repo.call("Grep", pattern="needle", path="src", output_mode="content", glob="*.py"))
    assert out == f"{repo.root}/src/app.py:2:needle = 2"
    out = ok(repo.call("Grep", pattern="needle", path="src", output_mode="content", glob="*.py", **{"-i": True}))
    assert out.splitlines() == [f"{repo.root}/src/app.py:2:needle = 2", f"{repo.root}/src/app.py:3:NEEDLE = 3"]
    out = ok(repo.call("Grep", pattern="NEEDLE", path="src/app.py", output_mode="content", **{"-B": 1}))
    assert out.splitlines() == [f"{repo.root}/src/app.py-2-needle = 2", f"{repo.root}/src/app.py:3:NEEDLE = 3"]


def test_grep_count_mode_type_filter_and_invalid_regex(repo):
    assert ok(repo.call("Grep", pattern="needle", output_mode="count", type="ts")) == (
        f"{repo.root}/src/util.ts:1\nFound 1 match in 1 file")
    assert "invalid regular expression" in err(repo.call("Grep", pattern="(unclosed"))


def test_glob_matches_recursive_patterns_and_includes_ignored_files_as_claude_code_does(repo):
    """Claude Code's tools reference: Glob finds files by name pattern, ignored ones included
    (it lists with ripgrep's --no-ignore); .git is never walked, links out are not followed."""
    out = ok(repo.call("Glob", pattern="**/*.py"))
    r = repo.root
    assert set(out.splitlines()) == {f"{r}/src/app.py", f"{r}/build/gen.py", f"{r}/src/local_cfg.py"}
    out = ok(repo.call("Glob", pattern="src/*.{py,ts}"))
    assert set(out.splitlines()) == {f"{r}/src/app.py", f"{r}/src/util.ts", f"{r}/src/local_cfg.py"}
    assert ok(repo.call("Glob", pattern="*.md")) == f"{repo.root}/README.md"


def test_glob_lists_the_most_recently_changed_first(repo):
    old = time.time() - 1000
    os.utime(repo.root / "src" / "app.py", (old, old))
    out = ok(repo.call("Glob", pattern="src/*"))
    assert out.splitlines()[-1] == f"{repo.root}/src/app.py"


def test_a_visible_callback_hides_paths_from_searches(tmp_path):
    root = tmp_path.resolve() / "w"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("needle\n")
    (root / "open.txt").write_text("needle\n")
    reg = builtin_registry(
        Workspace(str(root)),
        spill_dir=str(tmp_path / "s"),
        visible=lambda p: "/secrets" not in p,
    )
    out = reg.invoke(ToolCall("1", "Grep", {"pattern": "needle"})).content
    assert out.splitlines()[1:] == [f"{root}/open.txt"]
    out = reg.invoke(ToolCall("1", "Glob", {"pattern": "**/*.txt"})).content
    assert out.splitlines() == [f"{root}/open.txt"]


def test_ls_lists_one_directory_marking_directories_and_outward_links(repo):
    out = ok(repo.call("LS", path="src"))
    lines = [x.strip() for x in out.splitlines()[1:]]
    assert "app.py" in lines
    assert any(x.startswith("secret_link.py -> ") and "outside the workspace" in x for x in lines)
    top = [x.strip() for x in ok(repo.call("LS")).splitlines()[1:]]
    assert "src/" in top and ".git/" not in top and ".git" not in top


# --- Bash ----------------------------------------------------------------------




def _wait_dead(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _pid_written(pidfile: Path) -> int:
    """The pid a command wrote to ``pidfile``, once it is there (up to 30 s)."""
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, f"{pidfile} was never written"
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_bash_runs_in_the_workspace_and_reports_exit_codes(env):
    assert ok(env.call("Bash", command="pwd")) == str(env.root)
    assert ok(env.call("Bash", command="echo out; echo err >&2")) == "out\nerr"
    assert err(env.call("Bash", command="echo bad; exit 3")) == "bad\n[exit code 3]"


def test_a_non_zero_exit_is_an_error_unless_it_is_a_commands_answer(env):
    """Claude Code marks a Bash call that exits non-zero as an error ("Error: Exit code N" with the output),
    except where status 1 is the command's answer (grep found nothing, diff found a difference)."""
    (env.root / "f.txt").write_text("hay\n")
    assert err(env.call("Bash", command="false")) == "[exit code 1]"
    assert ok(env.call("Bash", command="grep needle f.txt")) == "[exit code 1]"
    assert ok(env.call("Bash", command="cat f.txt | LC_ALL=C grep -c needle")) == "0\n[exit code 1]"
    assert ok(env.call("Bash", command="diff f.txt /dev/null")).endswith("[exit code 1]")
    assert err(env.call("Bash", command="false && grep needle f.txt")) == "[exit code 1]"  # the status is false's
    assert err(env.call("Bash", command="grep needle missing.txt")).endswith("[exit code 2]")


def test_bash_timeout_kills_the_whole_process_group(env):
    pidfile = env.root / "child.pid"
    started = time.monotonic()
    result = env.call("Bash", command=f"sleep 60 & echo $! > {pidfile}; sleep 60", timeout=3000)
    elapsed = time.monotonic() - started
    assert "timed out" in err(result)
    assert elapsed < 30  # (not the 60 s of the commands)
    child = int(pidfile.read_text())
    assert _wait_dead(child), "a background child survived the timeout"


def test_negative_control_killing_only_the_shell_leaves_its_child_running(tmp_path):
    pidfile = tmp_path / "child.pid"
    shell = subprocess.Popen(["bash", "-c", f"sleep 60 & echo $! > {pidfile}; sleep 60"])
    child = _pid_written(pidfile)
    shell.kill()  # what subprocess.run(timeout=...) does: the shell only
    shell.wait()
    try:
        assert _alive(child)
    finally:
        os.kill(child, signal.SIGKILL)


def test_kill_all_ends_a_running_command_and_its_children(env):
    pidfile = env.root / "c.pid"
    results = []
    t = threading.Thread(target=lambda: results.append(env.call("Bash", command=f"sleep 60 & echo $! > {pidfile}; wait")))
    t.start()
    _pid_written(pidfile)
    assert env.procs.kill_all() == 1
    t.join(timeout=10)
    assert not t.is_alive()
    assert "killed" in err(results[0])
    assert _wait_dead(int(pidfile.read_text()))


def test_bash_returns_when_a_background_child_keeps_the_output_open(env):
    pidfile = env.root / "bg.pid"
    started = time.monotonic()
    out = ok(env.call("Bash", command=f"(sleep 60; echo late) & echo $! > {pidfile}; echo done"))
    assert time.monotonic() - started < 30  # (not the 60 s of the child)
    assert out == "done"
    assert _wait_dead(int(pidfile.read_text()))


def test_long_output_spills_to_a_file_that_read_can_page_through(env):
    content = ok(env.call("Bash", command="seq 1 20000"))
    assert len(content) < SPILL_THRESHOLD
    path = content.rsplit("The full output is in ", 1)[1].split(" : ")[0]
    assert os.path.dirname(path) == str(env.spill)
    with open(path) as f:
        assert f.read() == "\n".join(str(i) for i in range(1, 20001))
    assert content.startswith("1\n2\n3\n")
    page = ok(env.call("Read", file_path=path, offset=19999, limit=5))
    assert page.startswith(" 19999\t19999\n 20000\t20000\n")
    assert "outside the workspace" in err(env.call("Write", file_path=path, content="x"))


def test_output_under_the_threshold_is_returned_whole(env):
    content = ok(env.call("Bash", command=f"head -c {SPILL_THRESHOLD - 10} /dev/zero | tr '\\0' a"))
    assert content == "a" * (SPILL_THRESHOLD - 10)
    assert not env.spill.exists()


def test_bash_output_is_capped_in_memory_keeping_head_and_tail(env):
    content = ok(env.call("Bash", command="head -c 5000000 /dev/zero | tr '\\0' a; echo; echo THE-END"))
    path = content.rsplit("The full output is in ", 1)[1].split(" : ")[0]
    size = os.path.getsize(path)
    assert size < 1_100_000
    with open(path) as f:
        text = f.read()
    assert "bytes of output dropped" in text
    assert text.rstrip().endswith("THE-END")


def test_an_empty_command_is_refused(env):
    assert "empty" in err(env.call("Bash", command="   "))


def test_reading_a_fifo_is_refused_instead_of_hanging(env):
    os.mkfifo(env.root / "pipe")
    started = time.monotonic()
    assert "not a regular file" in err(env.call("Read", file_path="pipe"))
    assert time.monotonic() - started < 5


def test_bash_in_a_workspace_that_vanished_is_a_clear_error(tmp_path):
    root = tmp_path / "gone"
    root.mkdir()
    reg = builtin_registry(Workspace(str(root)), spill_dir=str(tmp_path / "s"))
    root.rmdir()
    r = reg.invoke(ToolCall("1", "Bash", {"command": "true"}))
    assert not r.ok and "cannot start the shell" in r.error


def test_a_directory_swapped_for_a_link_during_a_search_is_not_listed(tmp_path):
    base = tmp_path.resolve()
    root = base / "w"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "in.txt").write_text("needle inside\n")
    outside = base / "out"
    outside.mkdir()
    (outside / "leaked-name.txt").write_text("needle outside\n")

    def swap_when_seen(path):
        if path == str(root / "sub") and not (root / "sub.away").exists():
            os.rename(root / "sub", root / "sub.away")
            os.symlink(outside, root / "sub")
        return True

    reg = builtin_registry(Workspace(str(root)), spill_dir=str(base / "s"), visible=swap_when_seen)
    out = reg.invoke(ToolCall("1", "Glob", {"pattern": "**/*"})).content
    assert "leaked-name" not in out
    assert (root / "sub").is_symlink()  # the swap really happened


def test_text_that_cannot_be_utf8_is_a_clear_error(env):
    assert "UTF-8" in err(env.call("Write", file_path="s.txt", content="bad \ud800"))
    (env.root / "e.txt").write_text("x\n")
    read(env, "e.txt")
    assert "UTF-8" in err(env.call("Edit", file_path="e.txt", old_string="x", new_string="\ud800"))


def test_fingerprints_do_not_depend_on_the_workspace_so_replay_matches(tmp_path):
    a = builtin_registry(Workspace(str(tmp_path)), spill_dir=str(tmp_path / "a"))
    b = builtin_registry(Workspace("/"), spill_dir=str(tmp_path / "b"))
    fa = {t.name: t.fingerprint for t in a}
    assert fa == {t.name: t.fingerprint for t in b}
    assert len(set(fa.values())) == len(fa)


def test_a_file_used_as_a_directory_is_named_as_such(env):
    (env.root / "f.txt").write_text("x")
    assert err(env.call("Write", file_path="f.txt/x", content="y")).endswith("f.txt is a file, not a directory")


_PATHS = st.one_of(
    st.sampled_from(["f.txt", "d", "d/", "link_out", "link_out/x", "../x", "/", "~", "~/x", ".", "", "a\0b", "f.txt/x", "d/new/deep.txt", "pipe"]),
    st.text(alphabet="ad./~\0 *[{", max_size=12),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["Read", "Write", "Edit", "Glob", "Grep", "LS"]),
    path=_PATHS,
    text=st.text(max_size=8),
)
def test_every_file_tool_failure_is_a_message_for_the_model(env, name, path, text):
    if not (env.root / "f.txt").exists():
        (env.root / "f.txt").write_text("hello\n")
        (env.root / "d").mkdir()
        os.symlink(env.outside, env.root / "link_out")
        os.mkfifo(env.root / "pipe")
    args = {
        "Read": {"file_path": path},
        "Write": {"file_path": path, "content": text},
        "Edit": {"file_path": path, "old_string": text or "x", "new_string": text + "!"},
        "Glob": {"pattern": text or "*", "path": path},
        "Grep": {"pattern": text or "x", "path": path, "glob": text or "*"},
        "LS": {"path": path},
    }[name]
    r = env.call(name, **args)
    assert r.ok or "failed while running" not in r.error, (name, args, r.detail)
    assert sorted(os.listdir(env.outside)) == ["secret.txt"]


def test_the_walk_sees_exactly_the_files_git_sees(tmp_path):
    from agentloop.agent.tools.walk import walk_files

    root = tmp_path.resolve() / "r"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [
        "a.py", "a.pyc", "build/out.js", "src/build/keep.txt", "logs/x.log", "logs/keep.log",
        "docs/api/index.md", "docs/api/gen.md", "deep/er/x.tmp", "deep/er/y.txt", "top.tmp",
        "only_root.txt", "sub/only_root.txt", "node_modules/m/index.js", "sub/node_modules/n.js",
        "sub/local.secret", "sub/inner/z.secret", "sub/inner/keep.secret", "space name.txt",
        "excluded_by_info.txt", "dir_only/f", "file_named_dir_only",
    ]
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x")
    (root / ".gitignore").write_text(
        "*.pyc\n/build/\nlogs/*\n!logs/keep.log\ndocs/**/gen.md\n*.tmp\n!deep/**/x.tmp\n"
        "/only_root.txt\nnode_modules/\ndir_only/\nfile_named_dir_only/\n# comment\n\\#not_comment\n"
    )
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / ".gitignore").write_text("*.secret\n")
    (root / "sub" / "inner" / ".gitignore").write_text("!keep.secret\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("excluded_by_info.txt\n")
    git = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--others", "--cached", "--exclude-standard", "-z"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    expected = {f for f in git if f}
    got = {os.path.relpath(p, root) for p in walk_files(Workspace(str(root)), str(root))}
    assert got == expected
    assert "logs/keep.log" in got and "deep/er/x.tmp" in got and "sub/inner/keep.secret" in got
    assert "file_named_dir_only" in got and "dir_only/f" not in got


def test_lines_are_counted_at_newlines_only_like_cat_n(env):
    (env.root / "ff.txt").write_text("one\x0cstill one\r\ntwo\u2028still two\nthree needle\n")
    out = ok(env.call("Read", file_path="ff.txt"))
    assert out.split("\n")[:3] == ["     1\tone\x0cstill one", "     2\ttwo\u2028still two", "     3\tthree needle"]
    assert "     3\tthree needle" in out
    grep = ok(env.call("Grep", pattern="needle", path="ff.txt", output_mode="content"))
    assert grep == f"{env.root}/ff.txt:3:three needle"
    multi = ok(env.call("Grep", pattern="two.still", path="ff.txt", output_mode="content", multiline=True))
    assert multi == f"{env.root}/ff.txt:2:two\u2028still two"


def test_cd_carries_over_to_the_next_bash_call_within_the_workspace(env):
    (env.root / "sub" / "deeper").mkdir(parents=True)
    assert ok(env.call("Bash", command="cd sub")) == "(no output)"
    assert ok(env.call("Bash", command="pwd")) == str(env.root / "sub")
    assert err(env.call("Bash", command="cd deeper; exit 4")).endswith("[exit code 4]")
    assert ok(env.call("Bash", command="pwd")) == str(env.root / "sub" / "deeper")
    out = ok(env.call("Bash", command=f"cd {env.outside}"))
    assert "outside the workspace" in out and str(env.root) in out
    assert ok(env.call("Bash", command="pwd")) == str(env.root)


def test_a_removed_working_directory_falls_back_to_the_root(env):
    (env.root / "tmpdir").mkdir()
    ok(env.call("Bash", command="cd tmpdir"))
    (env.root / "tmpdir").rmdir()
    assert ok(env.call("Bash", command="pwd")) == str(env.root)
