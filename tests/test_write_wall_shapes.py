"""The host's write paths judge every folder git could take for a repository, in every shape git accepts.

Git takes a folder for a repository when it holds ``HEAD``, ``refs`` and an ``objects`` it can enter
(``access(objects, X_OK)``: a symbolic link to another repository's objects passes), so the write wall must
not ask for ``objects`` to be a real folder. And since a sandboxed command may run beside a Write (a
background command), a folder is judged as a repository as soon as it holds ``HEAD``: ``objects`` could be
linked in between the check and the write, while the creation supervisor refuses any name in a folder that
already holds ``HEAD``.

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


def a_repository_with_linked_objects(base: Path) -> Path:
    """The user's own repository, and ``docs`` beside it with ``refs`` and ``objects`` a link to the user's
    objects, as a sandboxed ``ln -s`` could make it before any ``HEAD`` is there."""
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    (proj / "docs" / "refs").mkdir(parents=True)
    os.symlink("../.git/objects", proj / "docs" / "objects")
    return proj


def test_write_refuses_a_repository_whose_objects_is_a_symbolic_link(base: Path) -> None:
    proj = a_repository_with_linked_objects(base)
    ws = Workspace(str(proj))
    ws.write_bytes("docs/HEAD", b"ref: refs/heads/main\n")
    with pytest.raises(ToolError, match="git"):
        ws.write_bytes("docs/config", planted_config(base))
    assert not (proj / "docs" / "config").exists()
    assert host_git_ran_nothing(base, proj / "docs")


def test_apply_patch_refuses_a_repository_whose_objects_is_a_symbolic_link(base: Path) -> None:
    proj = a_repository_with_linked_objects(base)
    lines = "".join(f"+{x}\n" for x in planted_config(base).decode().splitlines())
    patch = f"*** Begin Patch\n*** Add File: docs/HEAD\n+ref: refs/heads/main\n*** Add File: docs/config\n{lines}*** End Patch\n"
    with pytest.raises(ToolError, match="git"):
        apply_patch(Workspace(str(proj)), patch, lambda _r: None, lambda _r: None)
    assert not (proj / "docs" / "HEAD").exists()
    assert host_git_ran_nothing(base, proj / "docs")


def test_a_folder_holding_head_is_judged_before_it_has_objects(base: Path) -> None:
    """Either order: a program in ``config`` then ``HEAD``, or ``HEAD`` then the program, is refused while
    ``objects`` is still missing (a command beside the write could link it in at any moment)."""
    proj = base / "proj"
    ws = Workspace(str(proj))
    ws.write_bytes("a/config", planted_config(base))  # alone, a config file is nothing to git
    with pytest.raises(ToolError, match="git"):
        ws.write_bytes("a/HEAD", b"ref: refs/heads/main\n")
    ws.write_bytes("b/HEAD", b"ref: refs/heads/main\n")
    with pytest.raises(ToolError, match="git"):
        ws.write_bytes("b/config", planted_config(base))
    for d in ("a", "b"):  # what the racing command would then add
        (proj / d / "refs").mkdir()
        os.symlink(f"{base}/proj/.git/objects", proj / d / "objects")
    git(base, "init", "-q", cwd=proj)
    assert host_git_ran_nothing(base, proj / "a") and host_git_ran_nothing(base, proj / "b")


def test_negative_control_a_folder_holding_head_with_a_plain_config_is_written(base: Path) -> None:
    """Negative control: ``HEAD``, a link named ``objects`` and a configuration that runs nothing are all
    written (the wall refuses programs, not shapes)."""
    proj = a_repository_with_linked_objects(base)
    ws = Workspace(str(proj))
    ws.write_bytes("docs/HEAD", b"ref: refs/heads/main\n")
    ws.write_bytes("docs/config", b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
    assert (proj / "docs" / "config").exists()
