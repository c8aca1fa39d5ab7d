"""The replay test kit as a pytest plugin (registered through the ``pytest11`` entry point).

A project records a run once, commits the transcript, and replays it in its
test suite::

    def test_the_agent_still_decides_the_same(agentloop_replay):
        agentloop_replay("tests/transcripts/refund.jsonl", tools=my_tools(), record=record_refund)

The test fails with a readable diff (the first differing record, recorded vs
replayed) when the loop's decisions change, and when a tool's fingerprint
changed (pass ``allow_warnings=True`` to accept that). ``record`` is a
function of the path that writes the transcript: it is called under
``pytest --agentloop-record``; without that flag a missing file is a failure,
never silently recorded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..replay import ReplayResult

Check = Callable[..., "ReplayResult"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentloop")
    group.addoption(
        "--agentloop-record", action="store_true", default=False,
        help="write the transcripts that agentloop_replay checks again, with their record= functions",
    )


@pytest.fixture
def agentloop_replay(request: pytest.FixtureRequest) -> Check:
    """``agentloop_replay(path, *, tools=None, mode="full", record=None, redaction_salt=None, allow_warnings=False)``."""
    recording = bool(request.config.getoption("--agentloop-record"))

    def check(
        path: str | os.PathLike[str],
        *,
        tools: Any = None,
        mode: str = "full",
        record: Callable[[Path], Any] | None = None,
        redaction_salt: bytes | str | None = None,
        allow_warnings: bool = False,
    ) -> ReplayResult:
        # imported here, so that loading the plugin costs every pytest run nothing
        from ..replay import assert_replays

        p = Path(path)
        if recording and record is not None:
            if p.exists():
                p.unlink()
            p.parent.mkdir(parents=True, exist_ok=True)
            record(p)
        if not p.exists():
            how = "run pytest --agentloop-record to write it" if record is not None else "record a run into it first"
            pytest.fail(f"{p}: no transcript to replay; {how}", pytrace=False)
        try:
            return assert_replays(p, tools=tools, mode=mode, redaction_salt=redaction_salt, allow_warnings=allow_warnings)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)

    return check
