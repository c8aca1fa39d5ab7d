"""The write wall's watch looks as often as the tree allows: a small tree every tenth of a second, a large
one no more often than four times what a look costs, and never less often than every half second
(docs/decisions/0014-one-write-wall-for-every-write-path.md; ``bench/bench_write_window.py`` measures the
window this leaves)."""

from __future__ import annotations

from pathlib import Path

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
