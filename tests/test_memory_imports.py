"""Memory files bring in only what the user allowed.

Claude Code's memory documentation ("Import additional files"): ``@path``
imports resolve relative to the importing file, ``~/`` for the home; the
first time a project's memory imports files from outside it, Claude Code
asks once whether to allow those external imports, and keeps the answer
(declined, they stay off; ``claude -p`` does not ask). agentloop does the
same, and never reads ``/proc``, devices, FIFOs or credential paths, approved
or not, with every symlink resolved before the check.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.memory import load_memory, render_memory

SECRET = "BEGIN-PLANTED-PRIVATE-KEY-0123456789"


@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Path]:
    """A user's home with credentials, a workspace inside it, and a file beside the workspace."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(SECRET)
    (home / ".claude").mkdir()
    ws = home / "work" / "proj"
    (ws / ".git").mkdir(parents=True)
    (home / "work" / "outside.txt").write_text("OUTSIDE-TEXT")
    return {"home": home, "ws": ws, "al": tmp_path / "al", "managed": tmp_path / "none" / "CLAUDE.md"}


def _load(w: dict[str, Path], external: object = False) -> list:  # type: ignore[type-arg]
    return load_memory(str(w["ws"]), str(w["al"]), user_home=str(w["home"]), managed=str(w["managed"]), external=external)  # type: ignore[arg-type]


def _text(files: list) -> str:  # type: ignore[type-arg]
    return render_memory(files)


@pytest.mark.parametrize("target", ["/proc/self/environ", "~/.ssh/id_rsa", "~/.aws/credentials", "/dev/zero"])
def test_a_credential_or_system_path_is_never_imported_even_when_external_imports_are_approved(world: dict[str, Path], target: str) -> None:
    os.environ["AGENTLOOP_TEST_PLANTED_KEY"] = SECRET  # in this process's environ: /proc/self/environ would hold it
    try:
        (world["ws"] / "CLAUDE.md").write_text(f"rules @{target}\n")
        files = _load(world, external=True)
    finally:
        del os.environ["AGENTLOOP_TEST_PLANTED_KEY"]
    text = _text(files)
    assert SECRET not in text and "rules" in text
    skipped = [f for f in files if not f.text]
    assert skipped and "never read as memory" in skipped[0].reason


def test_an_import_from_outside_the_workspace_waits_for_approval_asked_once_with_the_list(world: dict[str, Path]) -> None:
    (world["ws"] / "CLAUDE.md").write_text("see @../outside.txt and @~/.ssh/id_rsa\n")
    assert "OUTSIDE-TEXT" not in _text(_load(world))
    asked: list[list[str]] = []

    def ask(paths: list[str]) -> bool:
        asked.append(paths)
        return True

    text = _text(_load(world, external=ask))
    assert "OUTSIDE-TEXT" in text and SECRET not in text
    assert asked == [[str((world["home"] / "work" / "outside.txt").resolve())]]  # the credential is never even offered
    assert "OUTSIDE-TEXT" not in _text(_load(world, external=lambda paths: False))


def test_a_symlink_is_resolved_before_the_check(world: dict[str, Path]) -> None:
    ws = world["ws"]
    os.symlink(world["home"] / "work" / "outside.txt", ws / "notes.md")
    os.symlink(world["home"] / ".ssh" / "id_rsa", ws / "AGENTS.md")  # a memory file that is a symlink to a key
    (ws / "CLAUDE.md").write_text("@notes.md\n")
    text = _text(_load(world))
    assert "OUTSIDE-TEXT" not in text and SECRET not in text
    assert SECRET not in _text(_load(world, external=True))
    assert "OUTSIDE-TEXT" in _text(_load(world, external=True))


def test_imports_inside_the_workspace_added_directories_and_the_users_memory_folders_load(world: dict[str, Path], tmp_path: Path) -> None:
    ws = world["ws"]
    extra = tmp_path / "added"
    extra.mkdir()
    (extra / "shared.md").write_text("ADDED-DIR")
    (ws / "docs").mkdir()
    (ws / "docs" / "style.md").write_text("IN-WORKSPACE")
    (world["home"] / ".claude" / "mine.md").write_text("USERS-OWN")
    (ws / "CLAUDE.md").write_text(f"@docs/style.md @~/.claude/mine.md @{extra}/shared.md\n")
    files = load_memory(str(ws), str(world["al"]), user_home=str(world["home"]), managed=str(world["managed"]), roots=[str(extra)])
    text = _text(files)
    assert "IN-WORKSPACE" in text and "USERS-OWN" in text and "ADDED-DIR" in text


def test_a_fifo_is_skipped_at_once_and_never_blocks(world: dict[str, Path]) -> None:
    ws = world["ws"]
    os.mkfifo(ws / "pipe.md")
    os.mkfifo(ws / "CLAUDE.local.md")
    (ws / "CLAUDE.md").write_text("@pipe.md\n")
    t0 = time.monotonic()
    files = _load(world)
    assert time.monotonic() - t0 < 5
    reasons = [f.reason for f in files if not f.text]
    assert len(reasons) == 2 and all("not a regular file" in r for r in reasons)


def test_a_rules_folder_that_links_to_the_root_is_walked_within_bounds(world: dict[str, Path]) -> None:
    (world["ws"] / ".claude").mkdir()
    os.symlink("/", world["ws"] / ".claude" / "rules")
    t0 = time.monotonic()
    files = _load(world)
    assert time.monotonic() - t0 < 30
    assert all(not f.text for f in files if not f.path.startswith(str(world["ws"])))  # nothing from outside loaded


def _agent(w: dict[str, Path], ask: object = None) -> Agent:
    script = w["ws"].parent / "s.json"
    script.write_text("[]")
    env = {"HOME": str(w["home"]), "AGENTLOOP_HOME": str(w["al"]), "PATH": os.environ.get("PATH", "/bin")}
    return Agent(cwd=str(w["ws"]), home=str(w["al"]), model=f"scripted:{script}", env=env, ask_imports=ask)  # type: ignore[arg-type]


def test_the_agent_without_a_way_to_ask_leaves_external_imports_out_and_says_so(world: dict[str, Path]) -> None:
    (world["ws"] / "CLAUDE.md").write_text("PROJECT-RULES @../outside.txt\n")
    a = _agent(world)
    try:
        prompt = a.system_prompt()
        assert "PROJECT-RULES" in prompt and "OUTSIDE-TEXT" not in prompt
        assert any("outside the workspace not loaded" in n for n in a.startup_notices)
    finally:
        a.close()


def test_the_agent_asks_once_per_folder_and_keeps_the_answer_private(world: dict[str, Path]) -> None:
    (world["ws"] / "CLAUDE.md").write_text("PROJECT-RULES @../outside.txt\n")
    asked: list[list[str]] = []

    def yes(paths: list[str]) -> bool:
        asked.append(paths)
        return True

    for _ in range(2):
        a = _agent(world, yes)
        try:
            assert "OUTSIDE-TEXT" in a.system_prompt()
        finally:
            a.close()
    assert len(asked) == 1
    kept = world["al"] / "memory-imports.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    a = _agent(world)  # -p after the user said yes once: loaded
    try:
        assert "OUTSIDE-TEXT" in a.system_prompt()
    finally:
        a.close()


def test_a_memory_file_that_is_a_device_is_one_line_at_start(world: dict[str, Path]) -> None:
    os.symlink("/dev/zero", world["ws"] / "CLAUDE.md")
    a = _agent(world)
    try:
        (line,) = [n for n in a.startup_notices if n.startswith("memory:")]
    finally:
        a.close()
    assert line == (f"memory: /dev/zero: a credential or system path is never read as memory "
                    f"({world['ws'] / 'CLAUDE.md'} points there); skipped")
