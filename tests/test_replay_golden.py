"""Golden transcripts: today's code writes them byte for byte, and replays them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from agentloop.replay import replay
from agentloop.transcript import verify_file

GOLDEN = Path(__file__).parent / "golden"


def _scenarios() -> ModuleType:
    spec = importlib.util.spec_from_file_location("golden_scenarios", GOLDEN / "scenarios.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SC = _scenarios()
NAMES = sorted(SC.SCENARIOS)


def test_every_scenario_has_a_committed_file_and_every_file_a_scenario() -> None:
    files = sorted(p.stem[3:] for p in GOLDEN.glob("v1-*.jsonl"))
    assert files == NAMES, "run scripts/update-golden"


@pytest.mark.parametrize("name", NAMES)
def test_todays_code_writes_the_golden_transcript_byte_for_byte(name: str) -> None:
    committed = (GOLDEN / f"v1-{name}.jsonl").read_bytes()
    written = SC.render(name)
    if written != committed:
        a, b = committed.splitlines(), written.splitlines()
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(
            f"v1-{name}.jsonl: today's code writes record {i} differently "
            f"(or {len(b)} records instead of {len(a)}).\n"
            f"  committed: {a[i][:300]!r}\n  written:   {b[i][:300] if i < len(b) else None!r}\n"
            "If the change is meant, run scripts/update-golden and say why in the commit."
        )


@pytest.mark.parametrize("name", NAMES)
def test_the_golden_transcript_verifies_and_replays_in_full_mode_byte_identically(name: str, tmp_path: Path) -> None:
    path = GOLDEN / f"v1-{name}.jsonl"
    assert verify_file(path).ok
    out = tmp_path / "replay.jsonl"
    r = replay(path, mode="full", out=out)
    assert r.equal, r.summary(path.name)
    assert out.read_bytes() == path.read_bytes()
    assert r.warnings == []


@pytest.mark.parametrize("name", NAMES)
def test_the_golden_transcript_replays_with_its_tools_really_running(name: str) -> None:
    path = GOLDEN / f"v1-{name}.jsonl"
    r = replay(path, mode="live-tools", tools=SC.golden_tools(), redaction_salt=SC.SALT)
    assert r.equal, r.summary(path.name)
    assert r.tool_changes == [], "a golden tool changed: run scripts/update-golden"


def test_the_golden_files_cover_every_stop_reason() -> None:
    from agentloop.loop import STOP_REASONS
    from agentloop.transcript import read_records

    seen = {r.payload["reason"] for p in GOLDEN.glob("v1-*.jsonl") for r in read_records(p) if r.kind == "stop"}
    assert set(STOP_REASONS) <= seen


PRE_BOUND = sorted(p.name for p in (GOLDEN / "pre-bound").glob("v1-*.jsonl"))


@pytest.mark.parametrize("name", PRE_BOUND)
def test_files_written_before_the_bound_still_replay_byte_identically(name: str, tmp_path: Path) -> None:
    """Files whose run_start has no ``"reservation": "bound"`` reserve as they were written (characters // 4)."""
    path = GOLDEN / "pre-bound" / name
    assert verify_file(path).ok
    out = tmp_path / "replay.jsonl"
    r = replay(path, mode="full", out=out)
    assert r.equal, r.summary(path.name)
    assert out.read_bytes() == path.read_bytes()
