"""What the hook test files share: both settings layouts, and executable hook scripts.

Importing ``layout`` into a test module makes it that module's autouse
fixture: every test there runs once with its settings in agentloop's
``.agentloop/settings.json`` and once in Claude Code's ``.claude/settings.json``.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LAYOUT = [".agentloop"]


@pytest.fixture(autouse=True, params=[".agentloop", ".claude"])
def layout(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs with its settings in agentloop's ``.agentloop/settings.json`` and again in
    Claude Code's ``.claude/settings.json`` (the same shape; both are read)."""
    LAYOUT[0] = request.param
    yield request.param
    LAYOUT[0] = ".agentloop"


def settings(proj: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as the project's settings file in the layout under test."""
    (proj / LAYOUT[0]).mkdir(exist_ok=True)
    (proj / LAYOUT[0] / "settings.json").write_text(json.dumps(data))


def executable(path: Path, body: str) -> str:
    """Write a hook script and make it executable; its path."""
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)
