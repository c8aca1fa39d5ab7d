"""The shared fixtures of tests/conftest.py do what they promise.

Every test runs with a private ``HOME`` and ``AGENTLOOP_HOME``: an Agent made
in any test reads the user's ``~/.claude/settings.json`` and agentloop's home
from temporary folders, never the real ones, and a test that sets either
variable itself still wins.
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.config.settings import agentloop_home, user_home

REAL_HOME = pwd.getpwuid(os.getuid()).pw_dir


def test_every_test_has_a_private_empty_user_home_and_agentloop_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = str(tmp_path_factory.getbasetemp())
    assert user_home() != REAL_HOME and user_home().startswith(base)
    assert os.listdir(user_home()) == []
    assert agentloop_home().startswith(base) and not agentloop_home().startswith(REAL_HOME)
    assert Path("~").expanduser() == Path(user_home())


def test_two_tests_do_not_share_a_home_first(private_homes: dict[str, Path]) -> None:
    (private_homes["user"] / "left-by-the-first-test").write_text("x")


def test_two_tests_do_not_share_a_home_second(private_homes: dict[str, Path]) -> None:
    assert not (private_homes["user"] / "left-by-the-first-test").exists()


def test_a_test_that_sets_its_own_home_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "mine"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert agentloop_home() == str(tmp_path / "mine") and user_home() == str(tmp_path)


def test_the_agent_reads_the_private_users_claude_settings(proj: Path, scripted: Callable[..., str]) -> None:
    from agentloop.agent.agent import Agent

    user = Path(user_home())
    (user / ".claude").mkdir()
    (user / ".claude" / "settings.json").write_text(json.dumps({"maxSteps": 3}))
    a = Agent(cwd=str(proj), model=scripted([{"text": "hi"}]), managed_settings="")
    try:
        assert a.max_steps == 3
    finally:
        a.close()


def test_proj_is_an_empty_folder_with_agentloop_home_beside_it(proj: Path, home: Path, tmp_path: Path) -> None:
    assert proj == tmp_path / "proj" and proj.is_dir() and list(proj.iterdir()) == []
    assert home == tmp_path / "home" and agentloop_home() == str(home)


def test_scripted_writes_the_replies_and_gives_the_model_spec(scripted: Callable[..., str], tmp_path: Path) -> None:
    spec = scripted([{"text": "a"}])
    assert spec == f"scripted:{tmp_path / 'script.json'}"
    assert json.loads((tmp_path / "script.json").read_text()) == [{"text": "a"}]
    assert scripted([{"text": "b"}], "other.json") == f"scripted:{tmp_path / 'other.json'}"
