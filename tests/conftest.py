"""Fixtures shared by every test file.

- Every test runs with ``HOME`` and ``AGENTLOOP_HOME`` in fresh temporary
  folders (``private_homes``, automatic), so no test reads or writes the real
  ``~/.claude/settings.json``, ``~/.claude/CLAUDE.md`` or agentloop's real home.
  A test that sets either variable itself (``monkeypatch.setenv``) or passes an
  ``env=`` of its own still wins: this fixture runs first.
- ``home``: agentloop's home for a test that looks inside it (``tmp_path/"home"``,
  made the ``AGENTLOOP_HOME``; not created, agentloop makes what it needs).
- ``proj``: an empty project folder, ``tmp_path/"proj"``, with ``home`` set. A
  test file that needs files in it overrides ``proj`` by asking for this one
  (``def proj(proj): (proj / "notes.txt").write_text(...); return proj``).
- ``scripted``: writes a scripted model's replies to a file and returns its
  ``scripted:FILE`` spec, for ``Agent(model=...)`` and ``agentloop --model``.

Spread over processes (scripts/test: pytest-xdist, ``--dist loadfile``), the
files go out longest first (``LONGEST_FIRST``, then by number of tests), so no
long file starts last and keeps one process busy after the others are done.
The order is all it changes: a stale list costs time, never a result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

LONGEST_FIRST = (
    # the files that took longest, longest first (a CI run's --durations; Ray, fuzzing, tsc, the write watch's
    # big tree, the trust REPL sessions...)
    "test_batch_ray.py", "test_fuzz.py", "test_trust.py", "test_print_sdk_types.py", "test_write_wall.py",
    "test_permissions_bash.py", "test_mcp_client.py", "test_negative_controls_apply.py", "test_repl_pty.py",
    "test_telemetry_phoenix.py", "test_mcp_prompts_resources.py", "test_layers.py", "test_batch.py", "test_replay.py",
    "test_working_line_fits.py", "test_repl_diffs_compaction_resume_and_rules.py", "test_batch_keys.py",
    "test_batch_faults.py", "test_repl_mcp_background.py", "test_conformance.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the files longest first, then the others by their number of tests (the order
    ``--dist loadfile`` hands them out in); within a file, the tests keep their order."""
    if not hasattr(config, "workerinput"):
        return
    count: dict[str, int] = {}
    for item in items:
        count[item.path.name] = count.get(item.path.name, 0) + 1
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: (rank.get(it.path.name, len(rank)), -count[it.path.name], str(it.path)))  # (stable)


Scripted = Callable[..., str]
"""``scripted(replies, name="script.json") -> "scripted:FILE"``."""


@pytest.fixture(autouse=True)
def private_homes(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The user's home and agentloop's home, both temporary, for every test.

    They live outside ``tmp_path`` so a test's own ``tmp_path/"home"`` or
    ``tmp_path/"user"`` stays free for it to make.
    """
    base = tmp_path_factory.mktemp("homes")
    user = base / "user"
    user.mkdir()
    agentloop_home = base / "agentloop"
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("AGENTLOOP_HOME", str(agentloop_home))
    return {"user": user, "agentloop": agentloop_home}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """agentloop's home for this test, ``tmp_path/"home"``, set as ``AGENTLOOP_HOME`` (not created)."""
    h = tmp_path / "home"
    monkeypatch.setenv("AGENTLOOP_HOME", str(h))
    return h


@pytest.fixture()
def proj(tmp_path: Path, home: Path) -> Path:
    """An empty project folder, ``tmp_path/"proj"``, with agentloop's home at ``tmp_path/"home"``."""
    d = tmp_path / "proj"
    d.mkdir()
    return d


@pytest.fixture()
def scripted(tmp_path: Path) -> Scripted:
    """``scripted(replies, name="script.json")`` writes ``replies`` (the scripted model's JSON list)
    to ``tmp_path/name`` and returns the ``scripted:FILE`` model spec. The same name again overwrites."""

    def write(replies: list[dict[str, Any]], name: str = "script.json") -> str:
        p = tmp_path / name
        p.write_text(json.dumps(replies))
        return f"scripted:{p}"

    return write
