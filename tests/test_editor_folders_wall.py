"""A sandboxed command cannot change or make the editor settings at the top of the workspace.

Claude Code's Bash sandbox (sandbox-runtime's ``DANGEROUS_DIRECTORIES``: ``.vscode`` and ``.idea``, denied to
writes even inside the writable folders) keeps them read-only: an editor that trusts the folder applies
``.vscode/settings.json`` on opening without looking (``git.path``, the terminal's profile and environment, the
interpreter), runs ``tasks.json``'s folder-open tasks and JetBrains' startup tasks; Helix and Zed start the
language servers their workspace files name (helix-editor/helix#9514, in a trusted workspace since its trust). Here they are read-only
mounts where they exist, and where they do not the creation supervisor refuses the name (a ``mkdir``, a rename
of a folder made beside, a link), while the user's own editor may still make them on the host.

The command lines reach the sandbox base64-encoded: the permission layer asks for a line naming ``.vscode``
(in every mode), and the point here is that the sandbox holds by itself."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import planting_ground, sandboxed
from agentloop.agent.sandbox import supervisor


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "al-editor-")


def _hidden(line: str) -> str:
    """``line`` run by bash from a file, so the permission layer sees no protected name in it."""
    enc = base64.b64encode(line.encode()).decode()
    return f"echo {enc} | base64 -d > /tmp/line.sh; bash /tmp/line.sh 2>&1; echo rc=$?"


def test_existing_editor_settings_are_read_only_to_commands(base: Path) -> None:
    proj = base / "proj"
    (proj / ".vscode").mkdir()
    (proj / ".vscode" / "settings.json").write_text("{}\n")
    (proj / "ide").mkdir()
    (proj / "ide" / "workspace.xml").write_text("<project/>\n")
    (proj / ".idea").symlink_to("ide")  # a link: its target is what the editor reads
    out = sandboxed(base, [_hidden(
        "echo '{\"git.path\": \"./tools/git\"}' > .vscode/settings.json; echo '{}' > .vscode/tasks.json;"
        " echo x > .idea/workspace.xml; echo y > ide/workspace.xml; mv .vscode gone; rm -rf .idea; mkdir .idea")])
    assert (proj / ".vscode" / "settings.json").read_text() == "{}\n", out
    assert not (proj / ".vscode" / "tasks.json").exists(), out
    assert (proj / "ide" / "workspace.xml").read_text() == "<project/>\n", out
    assert not (proj / "gone").exists(), out
    # the link may go (that runs nothing), but no folder of that name comes in its place
    assert (proj / ".idea").is_symlink() or not (proj / ".idea").exists(), out


@pytest.mark.skipif(supervisor.unavailable() is not None, reason="no creation supervisor on this machine")
def test_a_command_cannot_make_editor_settings_at_the_top(base: Path) -> None:
    proj = base / "proj"
    out = sandboxed(base, [
        _hidden("mkdir .vscode"),
        _hidden("mkdir prep && echo '{}' > prep/settings.json && mv prep .vscode"),
        _hidden("ln -s prep .idea"),
        _hidden("python3 -c \"import os; os.makedirs('.idea/runConfigurations')\""),
        _hidden("mkdir -p .helix .zed; echo '[language-server.x]' > .helix/languages.toml"),
    ])
    assert not (proj / ".helix").exists() and not (proj / ".zed").exists(), out
    assert not (proj / ".vscode").exists(), out
    assert not (proj / ".idea").exists() and not (proj / ".idea").is_symlink(), out
    assert "Operation not permitted" in out[0], out[0]


def test_negative_control_editor_folders_deeper_down_and_look_alikes_are_written(base: Path) -> None:
    """What packages ship (a dependency's own ``.vscode``) and names that only look alike stay writable."""
    proj = base / "proj"
    out = sandboxed(base, [_hidden(
        "mkdir -p node_modules/pkg/.vscode && echo '{}' > node_modules/pkg/.vscode/settings.json;"
        " mkdir vscode-notes .vscode-test && echo x > vscode-notes/a")])
    assert (proj / "node_modules" / "pkg" / ".vscode" / "settings.json").exists(), out
    assert (proj / "vscode-notes" / "a").exists() and (proj / ".vscode-test").is_dir(), out


def test_the_users_editor_may_make_its_folder_while_a_command_runs(base: Path) -> None:
    """The refusal is the supervisor's, for commands: the write watch, which looks while a command runs, does
    not move aside a ``.vscode`` the user's editor makes on the host meanwhile."""
    proj = base / "proj"

    def editor() -> None:  # once the command runs (its plan made without a .vscode), as an editor would
        deadline = time.monotonic() + 30
        while not (proj / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        (proj / ".vscode").mkdir()
        (proj / ".vscode" / "launch.json").write_text("{}\n")

    user = threading.Thread(target=editor)
    user.start()
    try:
        out = sandboxed(base, ["touch started; sleep 4; echo slept"])
    finally:
        user.join()
    assert "slept" in out[0], out
    assert (proj / ".vscode" / "launch.json").read_text() == "{}\n", sorted(p.name for p in proj.iterdir())
