"""The bubblewrap probe is remembered per machine, under the agentloop home, while its key holds.

The key is the bwrap binary's path, size and mtime, the kernel release and the user: a change of any
of them probes again. Only a probe that started a sandbox is remembered. A wrapper script stands in
for the binary so the test can count the runs and change the key; it runs the real bwrap.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agentloop.agent.sandbox import bubblewrap as sbx

REAL = shutil.which("bwrap")
pytestmark = pytest.mark.skipif(REAL is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason="bubblewrap is not installed")


@pytest.fixture
def bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(a bwrap that logs each run, its log); the process's own memo of probes starts empty."""
    monkeypatch.setattr(sbx, "_probed", {})
    log = tmp_path / "runs.log"
    w = tmp_path / "bin" / "bwrap"
    w.parent.mkdir()
    w.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{REAL}" "$@"\n')
    w.chmod(0o755)
    return w, log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def again(w: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str | None, str | None]:
    monkeypatch.setattr(sbx, "_probed", {})  # a new process
    return sbx.probe(str(w), cache_dir=str(cache))


def test_a_successful_probe_is_remembered_and_a_changed_binary_probes_again(
    bwrap: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w, log = bwrap
    cache = tmp_path / "home" / "cache"
    assert sbx.probe(str(w), cache_dir=str(cache)) == (str(w), None) and runs(log) == 1
    assert json.loads((cache / sbx.PROBE_CACHE).read_text()) == sbx.probe_key(str(w))
    assert again(w, cache, monkeypatch) == (str(w), None) and runs(log) == 1  # not run again
    st = w.stat()
    os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a new bwrap: its mtime moved
    assert again(w, cache, monkeypatch) == (str(w), None) and runs(log) == 2
    assert again(w, cache, monkeypatch) == (str(w), None) and runs(log) == 2


def test_another_kernel_or_a_missing_cache_probes_again(bwrap: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w, log = bwrap
    cache = tmp_path / "cache"
    sbx.probe(str(w), cache_dir=str(cache))
    key = json.loads((cache / sbx.PROBE_CACHE).read_text())
    (cache / sbx.PROBE_CACHE).write_text(json.dumps({**key, "kernel": "0.0.1-other"}))
    assert again(w, cache, monkeypatch) == (str(w), None) and runs(log) == 2
    assert sbx.probe_key(str(w)) == json.loads((cache / sbx.PROBE_CACHE).read_text())  # the new key replaced it
    (cache / sbx.PROBE_CACHE).write_text("not json")
    again(w, cache, monkeypatch)
    assert runs(log) == 3


def test_a_failed_probe_is_never_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sbx, "_probed", {})
    log = tmp_path / "runs.log"
    w = tmp_path / "bwrap"
    w.write_text(f'#!/bin/sh\necho run >> "{log}"\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n')
    w.chmod(0o755)
    cache = tmp_path / "cache"
    path, why = sbx.probe(str(w), cache_dir=str(cache))
    assert path is None and why is not None and "No permissions" in why
    assert not (cache / sbx.PROBE_CACHE).exists()
    assert again(w, cache, monkeypatch)[0] is None and runs(log) == 2


def test_the_agent_keeps_the_probe_under_its_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sbx, "_probed", {})
    home = tmp_path / "agentloop"
    settings = sbx.settings_from([], mode=None, cwd=str(tmp_path), user_home=str(tmp_path))
    box = sbx.Sandbox.create(settings, roots=[str(tmp_path)], agentloop_home=str(home), user_home=str(tmp_path))
    assert box.active
    assert json.loads((home / "cache" / sbx.PROBE_CACHE).read_text()) == sbx.probe_key(str(REAL))
    box.close()
