"""One write wall for every write path: nothing the agent writes makes the user's git run code.

Each case writes, through one path (a foreground Bash command in the real bubblewrap sandbox, a background
one, Write, apply_patch, a sub-agent's merge-back, ACP's editor write), something git would take for a
repository that runs a program: a bare repository written as plain files (``docs/HEAD``, ``docs/objects``,
``docs/refs``, ``docs/config`` with ``core.fsmonitor``), a new repository with a hook. Then the real git
runs on the host in that folder, as the user would next, and the planted program must not have run.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing, "Filesystem isolation"):
commands write the working directory, nothing that configures the host; git's metadata is what the user's
own git runs without being asked.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import agent, git, planting_ground, sandboxed
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.agent.sandbox import gitguard, notify
from agentloop.agent.sandbox import watch as watch_mod
from agentloop.agent.sandbox.notify import FolderEvents
from agentloop.agent.tools.apply_patch import apply_patch
from agentloop.agent.tools.workspace import Workspace
from agentloop.tools import ToolError

_required = os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") == "1"
_path, _why = sbx.probe()
needs_sandbox = pytest.mark.skipif(_path is None and not _required, reason=f"no sandbox here: {_why}")


@pytest.fixture
def watch_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write watch and the after-check alone, the backstop: with the creation supervisor on (record 0025),
    these plants are refused before they exist (tests/test_create_supervisor.py)."""
    monkeypatch.setattr(sbx, "SUPERVISE", False)


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-wall-test-")


def pwned(base: Path) -> list[str]:
    return sorted(p.name for p in base.glob("pwned-*"))


def bare_config(base: Path) -> str:
    """A bare repository's configuration that makes ``git status`` in it run ``base/fsmon``."""
    return f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = {base}/fsmon\n"


def host_git_runs_nothing(base: Path, where: Path) -> None:
    """The user's git in ``where`` (and, when it is gone, its parent) runs no planted program."""
    for d in (where, where.parent):
        if d.is_dir():
            git(base, "status", cwd=d)
    assert pwned(base) == []


PLANT_BARE = ("mkdir -p docs/objects docs/refs/heads && printf 'ref: refs/heads/main\\n' > docs/HEAD"
              " && printf '{config}' > docs/config; echo planted")


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_bare_repository_written_as_plain_files_by_a_command_is_moved_aside(base: Path) -> None:
    cfg = bare_config(base).replace("\n", "\\n").replace("\t", "\\t")
    outs = sandboxed(base, [PLANT_BARE.format(config=cfg)])
    assert "planted" in outs[0] and "moved" in outs[0] and "fsmonitor" in outs[0]
    assert not (base / "proj" / "docs" / "config").exists()
    host_git_runs_nothing(base, base / "proj" / "docs")


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_plain_folder_named_like_git_parts_is_left_alone(base: Path) -> None:
    """Negative control: HEAD and objects without anything git would run stay where they are."""
    outs = sandboxed(base, ["mkdir -p docs/objects docs/refs && echo 'ref: refs/heads/main' > docs/HEAD"
                            " && printf '[core]\\n\\tbare = true\\n' > docs/config; echo made"])
    assert "made" in outs[0] and "moved" not in outs[0]
    assert (base / "proj" / "docs" / "config").is_file()


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_repository_past_two_hundred_thousand_entries_is_still_seen(base: Path) -> None:
    """No entry limit: the planted repository comes after 210,000 files."""
    many = base / "proj" / "aaa"
    many.mkdir()
    for i in range(210_000):
        (many / str(i)).touch()
    cfg = bare_config(base).replace("\n", "\\n").replace("\t", "\\t")
    outs = sandboxed(base, ["mkdir -p zzz && cd zzz && " + PLANT_BARE.format(config=cfg)])
    assert "moved" in outs[0]
    host_git_runs_nothing(base, base / "proj" / "zzz" / "docs")


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_background_command_planting_a_repository_is_caught_while_it_runs_and_when_it_ends(base: Path) -> None:
    hook = f"#!/bin/sh\\ntouch {base}/pwned-hook\\n"
    a = agent(base, [
        {"command": f"sleep 2; git init -q sub; git -C sub config core.fsmonitor {base}/fsmon; echo x > sub/f;"
                    f" sleep 3; printf '{hook}' > sub2-hook; git init -q sub2; g=.g; g=${{g}}it; cp sub2-hook sub2/$g/hooks/pre-commit;"
                    " chmod +x sub2/$g/hooks/pre-commit; sleep 30", "run_in_background": True},
    ])
    try:
        res = a.ask("go")
        assert "background" in str(res.messages[-2].get("content"))
        deadline = time.monotonic() + 20
        while not list((base / "proj" / "sub").glob(".git.blocked-by-agentloop*")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list((base / "proj" / "sub").glob(".git.blocked-by-agentloop*")), "the watch did not see the new repository"
        host_git_runs_nothing(base, base / "proj" / "sub")
        time.sleep(1)
        assert not (base / "proj" / "sub" / ".git" / "config").exists()  # still running, already caught
    finally:
        a.close()
    sub2 = base / "proj" / "sub2"
    if sub2.is_dir():  # it may have been caught while running, or at the end
        (sub2 / "f").write_text("f\n")
        git(base, "add", "f", cwd=sub2)
        git(base, "commit", "-qm", "x", cwd=sub2)
    assert not (sub2 / ".git" / "hooks" / "pre-commit").exists()
    assert pwned(base) == []


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_background_command_writing_commondir_is_undone(base: Path) -> None:
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    (proj / "a").write_text("a\n")
    git(base, "add", "a", cwd=proj)
    git(base, "commit", "-qm", "a", cwd=proj)
    cfg = bare_config(base).replace("\n", "\\n").replace("\t", "\\t")
    a = agent(base, [{"command": f"sleep 1; mkdir -p evil; printf '{cfg}' > evil/config; g=.g; g=${{g}}it;"
                                 " echo ../evil > $g/commondir; sleep 30", "run_in_background": True}])
    try:
        a.ask("go")
        deadline = time.monotonic() + 15
        while (proj / ".git" / "commondir").exists() or not list((proj / ".git").glob("commondir.blocked*")):
            assert time.monotonic() < deadline, "the commondir a background command wrote stayed"
            time.sleep(0.2)
    finally:
        a.close()
    host_git_runs_nothing(base, proj)


def test_write_refuses_to_complete_a_repository_that_runs_a_program(base: Path) -> None:
    proj = base / "proj"
    ws = Workspace(str(proj))
    ws.write_bytes("docs/config", bare_config(base).encode())  # alone, a config file is nothing to git
    ws.write_bytes("docs/refs/heads/main", b"")
    (proj / "docs" / "objects").mkdir()
    with pytest.raises(ToolError, match="git"):
        ws.write_bytes("docs/HEAD", b"ref: refs/heads/main\n")
    assert not (proj / "docs" / "HEAD").exists()
    host_git_runs_nothing(base, proj / "docs")
    ws.write_bytes("other/objects/keep", b"")  # negative control: no HEAD, no program, no refusal
    ws.write_bytes("other/config", b"[core]\n\tbare = true\n")


def test_write_refuses_a_new_hook_in_an_existing_repository(base: Path) -> None:
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    ws = Workspace(str(proj))
    with pytest.raises(ToolError, match="hooks"):
        ws.write_bytes(".git/hooks/pre-commit", f"#!/bin/sh\ntouch {base}/pwned-hook\n".encode())
    ws.write_bytes(".git/description", b"mine\n")  # not something git runs


def test_apply_patch_refuses_a_patch_that_makes_a_repository_that_runs_a_program(base: Path) -> None:
    proj = base / "proj"
    (proj / "docs" / "objects").mkdir(parents=True)
    lines = "".join(f"+{x}\n" for x in bare_config(base).splitlines())
    patch = ("*** Begin Patch\n*** Add File: docs/HEAD\n+ref: refs/heads/main\n*** Add File: docs/refs/heads/main\n+\n"
             f"*** Add File: docs/config\n{lines}*** End Patch\n")
    with pytest.raises(ToolError, match="git"):
        apply_patch(Workspace(str(proj)), patch, lambda _r: None, lambda _r: None)
    assert not (proj / "docs" / "config").exists() and not (proj / "docs" / "HEAD").exists()
    host_git_runs_nothing(base, proj / "docs")


def test_a_sub_agents_merge_back_does_not_bring_in_a_repository_that_runs_a_program(base: Path) -> None:
    from agentloop.agent.subagents.worktree import Worktree

    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    (proj / "a").write_text("a\n")
    git(base, "add", "a", cwd=proj)
    git(base, "commit", "-qm", "a", cwd=proj)
    wt = Worktree.create(str(proj), "c1")
    try:
        w = Path(wt.path)
        (w / "docs" / "objects" / "aa").mkdir(parents=True)
        (w / "docs" / "objects" / "aa" / "keep").write_text("")
        (w / "docs" / "refs" / "heads").mkdir(parents=True)
        (w / "docs" / "refs" / "heads" / "main").write_text("")
        (w / "docs" / "HEAD").write_text("ref: refs/heads/main\n")
        (w / "docs" / "config").write_text(bare_config(base))
        out = wt.finish("c1")
    finally:
        shutil.rmtree(wt.path, ignore_errors=True)
    assert out["applied"] == "failed" and "git" in out["conflicts"]
    assert not (proj / "docs" / "config").exists()
    host_git_runs_nothing(base, proj / "docs")


def test_the_one_check_judges_by_shape_not_by_name(tmp_path: Path) -> None:
    """A git directory is what git would read as one, whatever the folder is called."""
    d = tmp_path / "anything"
    (d / "objects").mkdir(parents=True)
    (d / "refs").mkdir()
    (d / "HEAD").write_text("ref: refs/heads/main\n")
    why = gitguard.write_refusal({str(d / "config"): b"[core]\n\tfsmonitor = /x\n"}, [str(tmp_path)])
    assert why is not None and "core.fsmonitor" in why
    assert gitguard.write_refusal({str(d / "config"): b"[core]\n\tbare = true\n"}, [str(tmp_path)]) is None
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".git").write_text("gitdir: ../anything\n")
    why = gitguard.write_refusal({str(tmp_path / "w" / ".git"): b"gitdir: /elsewhere\n"}, [str(tmp_path)])
    assert why is not None and "outside" in why
    why = gitguard.write_refusal({str(tmp_path / "v" / ".git"): b"gitdir: ../anything\n"}, [str(tmp_path)])
    assert why is not None and "new .git" in why


def _caught_while_running(base: Path, plant: str) -> None:
    """A background command plants a repository with a hook; it must be moved aside while it still runs."""
    a = agent(base, [{"command": f"sleep 1; {plant}; sleep 30", "run_in_background": True}])
    try:
        a.ask("go")
        deadline = time.monotonic() + 20  # (a loaded machine starts the command late; it runs 31 s)
        while not list((base / "proj").glob("**/.git.blocked-by-agentloop*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list((base / "proj").glob("**/.git.blocked-by-agentloop*")), "the watch did not see the repository"
        host_git_runs_nothing(base, base / "proj" / "deep" / "x" / "sub")
    finally:
        a.close()
    assert pwned(base) == []


HOOK = "#!/bin/sh\\ntouch {base}/pwned-hook\\n"
PLANT = ("git init -q deep/x/sub; g=.g; g=${{g}}it; printf '" + HOOK + "' > deep/x/sub/$g/hooks/pre-commit;"
         " chmod +x deep/x/sub/$g/hooks/pre-commit")


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_repository_planted_in_a_large_tree_is_moved_aside_on_its_events_alone(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No whole walk after the first (the backstop is pushed past the test): the events alone find it."""
    for i in range(1000):
        (base / "proj" / "tree" / str(i // 50) / str(i)).mkdir(parents=True)
    (base / "proj" / "deep" / "x").mkdir(parents=True)
    monkeypatch.setattr(watch_mod, "BACKSTOP_S", 1000.0)
    _caught_while_running(base, PLANT.format(base=base))


@pytest.mark.usefixtures("watch_alone")
@needs_sandbox
def test_a_change_the_kernel_did_not_report_is_found_by_the_backstop_walk(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every event read and thrown away (as if the kernel's queue had overflowed unnoticed), while a
    stream of changes keeps the watch awake: the periodic whole walk still finds the repository."""
    (base / "proj" / "deep" / "x").mkdir(parents=True)
    real = notify.FolderEvents.changes

    def lost(self: FolderEvents) -> notify.Changes:
        got = real(self)
        return notify.Changes(folders={f for f in got.folders if "deep" not in f})  # the plant's are lost

    monkeypatch.setattr(notify.FolderEvents, "changes", lost)
    monkeypatch.setattr(watch_mod, "BACKSTOP_S", 0.5)
    busy = "(for i in $(seq 1 3000); do touch busy; sleep 0.01; done) & "
    _caught_while_running(base, busy + PLANT.format(base=base))
