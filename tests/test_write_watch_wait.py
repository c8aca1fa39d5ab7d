"""The write wall's watch: a look after a change reads only the folders inotify named (its cost follows the
change, not the tree), a name that makes a git directory is reported at once, and where inotify cannot
follow every folder the whole tree is walked every tenth to half a second (four times what a look costs)
(docs/decisions/0014-one-write-wall-for-every-write-path.md; ``bench/bench_write_window.py`` measures the
window this leaves)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.agent.sandbox import wall
from agentloop.agent.sandbox.notify import FolderEvents
from agentloop.agent.sandbox.wall import TreeWalk
from agentloop.agent.sandbox.watch import INTERVAL_S, MIN_INTERVAL_S, next_wait


def test_a_cheap_look_is_repeated_after_the_shortest_wait() -> None:
    assert next_wait(0.001) == MIN_INTERVAL_S == 0.1


def test_a_costly_look_waits_four_times_its_cost_up_to_half_a_second() -> None:
    assert next_wait(0.05) == 0.2
    assert next_wait(0.3) == next_wait(5.0) == INTERVAL_S == 0.5


def test_a_change_in_a_followed_folder_wakes_the_watch_and_none_does_not(tmp_path: Path) -> None:
    """inotify on each folder the walk saw: a name made there (a hook planted) is an event at once."""
    from agentloop.agent.sandbox.notify import FolderEvents

    (tmp_path / "sub" / "hooks").mkdir(parents=True)
    ev = FolderEvents()
    try:
        assert ev.fd >= 0, "inotify is not available here"
        ev.follow([str(tmp_path), str(tmp_path / "sub"), str(tmp_path / "sub" / "hooks")])
        assert ev.drain() is False  # nothing happened yet
        (tmp_path / "sub" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
        assert ev.drain() is True
        assert ev.drain() is False
        ev.follow([str(tmp_path)])  # a folder no longer listed is no longer followed
        (tmp_path / "sub" / "hooks" / "post-commit").write_text("#!/bin/sh\n")
        assert ev.drain() is False
    finally:
        ev.close()


def test_the_watch_takes_no_more_than_its_share_of_the_users_inotify_watches(tmp_path: Path) -> None:
    """Past its share (a quarter of fs.inotify.max_user_watches), folders are left to the timer, so the
    user's editors and file watchers keep theirs."""
    from agentloop.agent.sandbox.notify import FolderEvents

    folders = []
    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
        folders.append(str(tmp_path / f"d{i}"))
    ev = FolderEvents()
    try:
        ev.cap = 3
        ev.follow(folders)
        assert ev.full and len(ev._wds) == 3
    finally:
        ev.close()


def test_a_look_after_a_change_reads_only_the_folders_that_changed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(2000):
        (tmp_path / "tree" / str(i // 50) / str(i)).mkdir(parents=True)
    walk = TreeWalk([str(tmp_path)])
    events = FolderEvents()
    try:
        assert events.fd >= 0, "inotify is not available here"
        walk.before_read = events.add
        walk.walk()
        events.add(walk.folders())
        reads: list[str] = []
        real, real_lstat = wall._read_folder, os.lstat
        monkeypatch.setattr(wall, "_read_folder", lambda d: (reads.append(d), real(d))[1])
        monkeypatch.setattr(os, "lstat", lambda d, **kw: (reads.append(str(d)), real_lstat(d, **kw))[1])
        repo = tmp_path / "tree" / "3" / "170" / "sub"
        (repo / "objects").mkdir(parents=True)
        (repo / "HEAD").write_text("ref: refs/heads/main\n")
        walk.update(events.changes().folders)
        walk.update(events.changes().folders)  # what the first update's watches saw being made
        assert str(repo) in walk.known()[0]
        monkeypatch.undo()
        assert len(reads) <= 20, reads  # the changed folder and what is new below it, not 2,000 folders
    finally:
        events.close()


def test_a_name_that_makes_a_git_directory_is_reported_as_urgent(tmp_path: Path) -> None:
    (tmp_path / "d" / "hooks").mkdir(parents=True)
    ev = FolderEvents()
    try:
        ev.follow([str(tmp_path), str(tmp_path / "d"), str(tmp_path / "d" / "hooks")])
        (tmp_path / "notes.txt").write_text("x")
        got = ev.changes()
        assert got.folders == {str(tmp_path)} and not got.urgent
        (tmp_path / "d" / "HEAD").write_text("ref: refs/heads/main\n")
        assert ev.changes().urgent
        (tmp_path / "d" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
        assert ev.changes().urgent
    finally:
        ev.close()


def test_the_backstop_finds_a_change_no_event_reported_a_slice_at_a_time(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The backstop for lost events looks at a bounded number of folders at a time, so it never holds up a
    look for long, and a round over them finds a repository no event was heard for."""
    for i in range(600):
        (tmp_path / "tree" / str(i // 50) / str(i)).mkdir(parents=True)
    walk = TreeWalk([str(tmp_path)])
    walk.walk()
    repo = tmp_path / "tree" / "7" / "355" / "sub"
    (repo / "objects").mkdir(parents=True)
    (repo / "HEAD").write_text("ref: refs/heads/main\n")
    looked: list[str] = []
    real = os.lstat
    monkeypatch.setattr(os, "lstat", lambda d, **kw: (looked.append(str(d)), real(d, **kw))[1])
    slices = 0
    while str(repo) not in walk.known()[0] and slices < 20:
        before = len(looked)
        walk.recheck(64)
        slices += 1
        assert len(looked) - before <= 64 + 8  # a slice, and the folders a change in it brings
    monkeypatch.undo()
    assert str(repo) in walk.known()[0]
    assert slices > 1
