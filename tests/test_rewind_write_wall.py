"""A rewind writes files back through the write wall's one check, like every other write path.

Rewinding puts back the files the file tools changed, as they were; what sandboxed commands made since stays.
So an earlier state can be a new repository among today's files: a folder of the user's held ``HEAD`` and a
configuration with a program (a test fixture) but no ``objects``; the agent removed ``HEAD`` with a patch,
a command then made ``objects`` there (allowed: no ``HEAD``), and putting ``HEAD`` back would have made a
repository whose ``core.fsmonitor`` the user's next ``git status`` runs. Claude Code's checkpointing page
(https://code.claude.com/docs/en/checkpointing) restores the file tools' edits, not what commands did.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import git, planting_ground
from agentloop.agent.session.checkpoints import Checkpoints, RewindPlan, apply_rewind


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-rewind-wall-test-")


def test_a_rewind_that_would_complete_a_repository_that_runs_a_program_is_refused(base: Path) -> None:
    proj, store = base / "proj", Checkpoints(str(base / "alhome"))
    fixture = proj / "fixture"
    (fixture / "refs").mkdir(parents=True)
    (fixture / "config").write_text(f"[core]\n\tworktree = .\n\tfsmonitor = {base}/fsmon\n")
    (fixture / "objects").mkdir()  # made by a command after the agent removed HEAD
    plan = RewindPlan(turn=1, restore={str(fixture / "HEAD"): store.put(b"ref: refs/heads/main\n")})
    with pytest.raises(ValueError, match="git runs"):
        apply_rewind(plan, store, [str(proj)])
    assert not (fixture / "HEAD").exists()
    git(base, "status", cwd=fixture)
    assert not (base / "pwned-fsmonitor").exists()


def test_negative_control_a_rewind_of_plain_files_puts_them_back(base: Path) -> None:
    proj, store = base / "proj", Checkpoints(str(base / "alhome"))
    plan = RewindPlan(turn=1, restore={str(proj / "a.txt"): store.put(b"old\n"), str(proj / "new.txt"): None})
    (proj / "new.txt").write_text("made\n")
    restored, left = apply_rewind(plan, store, [str(proj)])
    assert (proj / "a.txt").read_text() == "old\n" and not (proj / "new.txt").exists() and not left
