"""The compiled core (scripts/build-native) is the same code as its source, and never a stale copy of it.

The suite runs on whatever the checkout has: the mypyc build after
``scripts/setup``. These tests also run the core's byte-pinning tests (RFC 8785
vectors, golden transcripts, the loop and transcript suites) on the pure
sources, in a copy of the tree with no build, so both paths are held to the
same bytes on every run.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import agentloop
import agentloop.loop as loop_mod
from agentloop import _native

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(agentloop.__file__).resolve().parents[1]
"""The tree the package was imported from: a copy of it, in the pure-source run below."""
BUILT = (SRC / "agentloop" / "native.sha256").exists()


def _copy_src(dst: Path, with_build: bool) -> Path:
    def ignore(d: str, names: list[str]) -> set[str]:
        skip = {"__pycache__", "build"}
        if not with_build:
            skip |= {n for n in names if n.endswith((".so", ".pyd")) or n == "native.sha256"}
        return {n for n in names if n in skip or n.endswith(".egg-info")}

    shutil.copytree(SRC, dst / "src", ignore=ignore)
    return dst / "src"


def _probe(src: Path) -> dict[str, str]:
    code = (
        "import importlib, json, sys\n"
        "from agentloop import _native\n"
        "for m in _native.MODULES: importlib.import_module('agentloop.' + m)\n"
        "files = {m: sys.modules['agentloop.' + m].__file__ for m in _native.MODULES}\n"
        "print(json.dumps({'status': _native.status(), **files}))"
    )
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=str(src))
    assert p.returncode == 0, p.stderr
    return dict(json.loads(p.stdout))


def test_the_package_reports_how_its_core_runs() -> None:
    assert _native.status() == "compiled" or _native.status().startswith("source (")
    if os.environ.get("AGENTLOOP_EXPECT_SOURCE"):  # set by the pure-source run below
        assert _native.status() == "source (not built)" and str(loop_mod.__file__).endswith("loop.py")
    elif BUILT:
        assert _native.status() == "compiled", "scripts/build-native ran but its build is not in use"
        assert str(loop_mod.__file__).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
        import agentloop.line as line_mod

        assert line_mod._scan is not None, "the C scanner (_linescan.c) is built but the verifier's fast path does not use it"


@pytest.mark.skipif(not BUILT, reason="no compiled build in this checkout (scripts/build-native)")
def test_an_edited_source_is_run_instead_of_its_stale_build(tmp_path: Path) -> None:
    src = _copy_src(tmp_path, with_build=True)
    assert _probe(src)["status"] == "compiled"
    edited = src / "agentloop" / "redact.py"
    edited.write_text(edited.read_text() + "\n# an edit after the build\n")
    got = _probe(src)
    assert got["status"].startswith("source (a source changed")
    # all or none: the compiled modules call each other natively
    assert all(got[m].endswith(f"agentloop/{m}.py") for m in _native.MODULES), got


@pytest.mark.skipif(not BUILT, reason="no compiled build in this checkout (scripts/build-native)")
def test_an_edited_c_source_is_never_run_from_its_stale_build(tmp_path: Path) -> None:
    """_linescan.c has no Python twin of its own name: its importer (line.py) falls back on its Python checks."""
    src = _copy_src(tmp_path, with_build=True)
    code = (
        "import json\n"
        "from agentloop import _native, line\n"
        "try:\n"
        "    import agentloop._linescan as m\n"
        "    c = m.__file__\n"
        "except ImportError:\n"
        "    c = None\n"
        "print(json.dumps({'status': _native.status(), 'c': c, 'scan': line._scan is not None}))"
    )
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")

    def probe() -> dict[str, object]:
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=str(src))
        assert p.returncode == 0, p.stderr
        return dict(json.loads(p.stdout))

    assert probe() == {"status": "compiled", "c": str(src / "agentloop" / f"_linescan{importlib.machinery.EXTENSION_SUFFIXES[0]}"),
                       "scan": True}
    edited = src / "agentloop" / "_linescan.c"
    edited.write_text(edited.read_text() + "\n/* an edit after the build */\n")
    got = probe()
    assert str(got["status"]).startswith("source (a source changed") and got["c"] is None and got["scan"] is False, got


def test_with_no_build_every_module_runs_from_source(tmp_path: Path) -> None:
    src = _copy_src(tmp_path, with_build=False)
    got = _probe(src)
    assert got["status"] == "source (not built)"
    assert all(got[m].endswith(f"agentloop/{m}.py") for m in _native.MODULES), got


PINNING = [  # one test each, so that pytest-xdist spreads the 30-odd seconds they take together
    ["tests/test_native.py::test_the_package_reports_how_its_core_runs", "tests/test_canonical.py", "tests/test_budget.py"],
    ["tests/test_replay_golden.py", "tests/test_replay.py"],
    ["tests/test_loop.py"],
    ["tests/test_transcript.py"],
]


@pytest.mark.skipif(not BUILT, reason="no compiled build: the suite already runs on the sources")
@pytest.mark.parametrize("tests", PINNING, ids=[t[-1].split("/")[-1] for t in PINNING])
def test_the_pure_sources_pass_the_byte_pinning_tests_too(tmp_path: Path, tests: list[str]) -> None:
    src = _copy_src(tmp_path, with_build=False)
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1", AGENTLOOP_EXPECT_SOURCE="1")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:]


def test_an_extension_file_left_by_an_older_build_never_shadows_its_source(tmp_path: Path) -> None:
    src = _copy_src(tmp_path, with_build=BUILT)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (src / "agentloop" / f"budget{suffix}").write_bytes(b"not a shared object")  # loading it would fail
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    code = "import agentloop.budget as b; print(b.__file__)"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=str(src))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("agentloop/budget.py")
