"""The host's write paths hold the creation supervisor's invariant: no write makes a new repository shape.

Git takes a folder for a repository when it holds ``HEAD``, ``refs`` and an ``objects`` it can enter
(``access(objects, X_OK)``: a symbolic link to another repository's objects passes). Judging only what a new
repository would run left two ways through: a sandboxed ``ln -s ../.git/objects docs/objects`` next to a Write
of ``docs/HEAD`` and ``docs/config`` (the check wanted ``objects`` to be a real folder), and a background
command started before the Write, whose mounts did not make that folder's ``config`` read-only, rewriting it
once the Write had made the folder a repository. So Write, Edit, apply_patch, a merge-back and ACP's editor
writes now refuse, as the supervisor does for commands, a new ``HEAD`` or ``.git`` outside an existing git
directory, any new name in a folder holding ``HEAD``, and inside a git directory's sub-folders the names
that would make one of them a repository; what exists is judged by what it would run, as before.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing, "Filesystem isolation"):
commands and edits write the working directory, nothing that configures the host; git's metadata is what the
user's own git runs without being asked.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import git, planting_ground
from agentloop.agent.tools.apply_patch import apply_patch
from agentloop.agent.tools.workspace import Workspace
from agentloop.tools import ToolError


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-shapes-test-")


def planted_config(base: Path) -> bytes:
    """A bare repository's configuration whose worktree is itself: ``git status`` in it runs ``fsmon``."""
    return f"[core]\n\trepositoryformatversion = 0\n\tworktree = .\n\tfsmonitor = {base}/fsmon\n".encode()


def host_git_ran_nothing(base: Path, where: Path) -> bool:
    git(base, "status", cwd=where)
    return not (base / "pwned-fsmonitor").exists()


def the_users_repository(base: Path) -> Path:
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    return proj


def test_no_write_makes_a_new_head_or_git_entry_outside_a_git_directory(base: Path) -> None:
    proj = the_users_repository(base)
    (proj / "docs" / "refs").mkdir(parents=True)
    os.symlink("../.git/objects", proj / "docs" / "objects")  # as a sandboxed ln -s could make it
    ws = Workspace(str(proj))
    ws.write_bytes("docs/config", planted_config(base))  # alone, a config file is nothing to git
    for name, data in (("docs/HEAD", b"ref: refs/heads/main\n"), ("fresh/HEAD", b"ref: refs/heads/main\n"),
                       ("sub/.git", b"gitdir: ../docs\n")):
        with pytest.raises(ToolError, match="git repository"):
            ws.write_bytes(name, data)
        assert not (proj / name).exists()
    patch = "*** Begin Patch\n*** Add File: docs/HEAD\n+ref: refs/heads/main\n*** End Patch\n"
    with pytest.raises(ToolError, match="git repository"):
        apply_patch(ws, patch, lambda _r: None, lambda _r: None)
    (proj / "notes").write_text("ref: refs/heads/main\n")
    patch = "*** Begin Patch\n*** Update File: notes\n*** Move to: docs/HEAD\n@@\n ref: refs/heads/main\n*** End Patch\n"
    with pytest.raises(ToolError, match="git repository"):
        apply_patch(ws, patch, lambda _r: None, lambda _r: None)
    assert not (proj / "docs" / "HEAD").exists()
    assert host_git_ran_nothing(base, proj / "docs")


def test_a_folder_holding_head_gains_no_new_name_and_no_program(base: Path) -> None:
    """A folder the user has with a ``HEAD`` and no ``objects``: nothing new may be made in it (``objects``
    would make it a repository), and its existing ``config`` takes no program."""
    proj = base / "proj"
    (proj / "a").mkdir()
    (proj / "a" / "HEAD").write_text("ref: refs/heads/main\n")
    (proj / "a" / "config").write_text("[core]\n\tbare = true\n")
    ws = Workspace(str(proj))
    for name in ("a/objects/pack/x", "a/refs/heads/main", "a/commondir"):
        with pytest.raises(ToolError, match="holds HEAD"):
            ws.write_bytes(name, b"")
    with pytest.raises(ToolError, match="fsmonitor"):
        ws.write_bytes("a/config", planted_config(base))
    ws.write_bytes("a/HEAD", b"ref: refs/heads/other\n")  # its own files, rewritten with nothing to run: fine


def test_inside_a_git_directory_no_sub_folder_becomes_a_repository(base: Path) -> None:
    proj = the_users_repository(base)
    ws = Workspace(str(proj))
    ws.write_bytes(".git/refs/remotes/origin/HEAD", b"ref: refs/remotes/origin/main\n")  # as git itself makes it
    for name in (".git/refs/remotes/origin/objects/x", ".git/refs/remotes/origin/config", ".git/logs/commondir"):
        with pytest.raises(ToolError, match="inside the git directory"):
            ws.write_bytes(name, b"")
    ws.write_bytes(".git/description", b"mine\n")  # the top of the user's git directory: judged by content


def test_negative_control_folders_without_head_are_written_freely(base: Path) -> None:
    proj = base / "proj"
    ws = Workspace(str(proj))
    ws.write_bytes("docs/objects/keep", b"")
    ws.write_bytes("docs/refs/heads/main", b"")
    ws.write_bytes("docs/config", planted_config(base))
    ws.write_bytes("docs/HEAD.md", b"# a file about HEAD\n")
    assert (proj / "docs" / "config").exists()


def test_a_program_the_users_repository_already_configures_is_not_rewritten(base: Path) -> None:
    """``git lfs install --local`` puts ``filter.lfs.clean`` in the repository's configuration, and a repository
    may have its own hooks. Rewriting that value, or a hook's bytes, kept the same keys and hook names, so the
    check that compared those lists let it through and the next ``git add`` ran the new program."""
    proj = the_users_repository(base)
    git(base, "config", "filter.lfs.clean", "git-lfs clean -- %f", cwd=proj)
    (proj / ".gitattributes").write_text("*.bin filter=lfs\n")
    (proj / "a.bin").write_text("x\n")
    (proj / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    ws = Workspace(str(proj))
    config = (proj / ".git" / "config").read_text()
    with pytest.raises(ToolError, match="user's to"):
        ws.write_bytes(".git/config", config.replace("git-lfs clean -- %f", f"touch {base}/pwned-filter && cat").encode())
    with pytest.raises(ToolError, match="user's to"):
        ws.write_bytes(".git/hooks/pre-commit", f"#!/bin/sh\ntouch {base}/pwned-hook\n".encode())
    git(base, "add", "a.bin", cwd=proj)
    assert not (base / "pwned-filter").exists() and "touch" not in (proj / ".git" / "hooks" / "pre-commit").read_text()


def test_negative_control_a_repository_that_runs_nothing_takes_a_plain_configuration_change(base: Path) -> None:
    proj = the_users_repository(base)
    config = (proj / ".git" / "config").read_text()
    Workspace(str(proj)).write_bytes(".git/config", (config + "[user]\n\tname = someone\n").encode())
    assert "someone" in (proj / ".git" / "config").read_text()


def test_the_hook_folder_a_repository_names_is_not_written(base: Path) -> None:
    """``core.hooksPath = .husky`` (husky before v9, and any project that keeps its hooks in the tree): git
    runs those files on commit without asking; commands see them read-only, and the file tools do not write
    them either. A user's executable hook rewritten by Edit kept its mode and ran at the next commit."""
    proj = the_users_repository(base)
    git(base, "config", "core.hooksPath", ".husky", cwd=proj)
    (proj / ".husky").mkdir()
    (proj / ".husky" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    (proj / ".husky" / "pre-commit").chmod(0o755)
    (proj / "f").write_text("x\n")
    git(base, "add", "f", cwd=proj)
    ws = Workspace(str(proj))
    with pytest.raises(ToolError, match="runs or reads for programs"):
        ws.write_bytes(".husky/pre-commit", f"#!/bin/sh\ntouch {base}/pwned-hook\n".encode())
    with pytest.raises(ToolError, match="runs or reads for programs"):
        ws.write_bytes(".husky/post-checkout", f"#!/bin/sh\ntouch {base}/pwned-hook\n".encode())
    ws.write_bytes("src/main.py", b"print('the project itself is written')\n")  # negative control
    git(base, "commit", "-qm", "x", cwd=proj)
    assert not (base / "pwned-hook").exists()
