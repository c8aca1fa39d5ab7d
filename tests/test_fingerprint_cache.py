"""The tools' source cache: fingerprints served from it equal those computed afresh,
and a changed source is never served stale text."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import stat
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop import tools
from agentloop.agent.tools.catalog import builtin_registry
from agentloop.agent.tools.workspace import Workspace
from agentloop.config.source_cache import DiskSourceCache
from agentloop.tools import fingerprint

SOURCE = """
class Engine:
    def run(self, x):
        return x + 1

ENGINE = Engine()

def helper(x):
    return x * 2

def tool_fn(x: int) -> int:
    return helper(ENGINE.run(x))
"""


@pytest.fixture(autouse=True)
def _no_cache_left_behind() -> Iterator[None]:
    yield
    tools.use_source_cache(None)


def _load(path: Path, name: str, source: str) -> Any:
    """Import ``source`` from ``path`` under ``name`` (replacing an earlier import of it)."""
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _uncached(fn: Any) -> str:
    tools.use_source_cache(None)
    return fingerprint(fn)


def _cached(fn: Any, cache_file: Path) -> str:
    """A fingerprint as a new process computes it: a cache loaded from disk, saved after."""
    cache = DiskSourceCache(str(cache_file))
    tools.use_source_cache(cache)
    try:
        return fingerprint(fn)
    finally:
        cache.save()
        tools.use_source_cache(None)


def test_a_fingerprint_from_the_cache_equals_the_one_computed_afresh(tmp_path: Path) -> None:
    mod = _load(tmp_path / "fpc_same.py", "fpc_same", SOURCE)
    cache_file = tmp_path / "cache.json"
    first = _cached(mod.tool_fn, cache_file)  # fills the cache
    assert json.loads(cache_file.read_text())
    assert _cached(mod.tool_fn, cache_file) == first == _uncached(mod.tool_fn)
    ws = Workspace(str(tmp_path))
    for t in builtin_registry(ws, spill_dir=str(tmp_path / "spill")):
        assert _cached(t.fn, cache_file) == _cached(t.fn, cache_file) == _uncached(t.fn), t.name


def test_a_hit_is_served_without_reading_the_source_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _load(tmp_path / "fpc_hit.py", "fpc_hit", SOURCE)
    cache_file = tmp_path / "cache.json"
    expected = _cached(mod.tool_fn, cache_file)

    def no_reading(obj: Any) -> str:
        raise AssertionError(f"source of {obj!r} read although it is cached")

    monkeypatch.setattr(inspect, "getsource", no_reading)
    assert _cached(mod.tool_fn, cache_file) == expected


@pytest.mark.parametrize("same_size_and_mtime", [False, True], ids=["edited", "edited-same-size-and-mtime"])
def test_an_edited_source_is_never_served_its_old_text(tmp_path: Path, same_size_and_mtime: bool) -> None:
    path = tmp_path / "fpc_edit.py"
    cache_file = tmp_path / "cache.json"
    mod = _load(path, "fpc_edit", SOURCE)
    before = _cached(mod.tool_fn, cache_file)
    old = os.stat(path)
    edited = SOURCE.replace("return x * 2", "return x * 3")  # the same size, the same lines
    mod = _load(path, "fpc_edit", edited)
    if same_size_and_mtime:
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
        assert os.stat(path).st_size == old.st_size
    after = _cached(mod.tool_fn, cache_file)
    assert after != before
    assert after == _uncached(mod.tool_fn)


def test_a_damaged_cache_file_is_read_as_empty_and_replaced(tmp_path: Path) -> None:
    mod = _load(tmp_path / "fpc_bad.py", "fpc_bad", SOURCE)
    cache_file = tmp_path / "cache.json"
    for junk in (b"\x00\xff not json", b"[1, 2]", b'{"k": 5}'):
        cache_file.write_bytes(junk)
        assert _cached(mod.tool_fn, cache_file) == _uncached(mod.tool_fn)
        assert isinstance(json.loads(cache_file.read_text()), dict)


def test_the_cache_file_is_private(tmp_path: Path) -> None:
    mod = _load(tmp_path / "fpc_mode.py", "fpc_mode", SOURCE)
    cache_file = tmp_path / "sub" / "cache.json"
    _cached(mod.tool_fn, cache_file)
    assert stat.S_IMODE(os.stat(cache_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cache_file.parent).st_mode) == 0o700


def test_a_schema_found_valid_once_is_not_checked_again_but_an_invalid_one_always_is(tmp_path: Path) -> None:
    cache = DiskSourceCache(str(tmp_path / "cache.json"))
    tools.use_source_cache(cache)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools.Tool("ok_tool", "d", schema, lambda n: n)
    assert any(k.startswith("schema:") for k in cache._load())
    with pytest.raises(tools.InvalidToolSchema, match="invalid schema"):
        tools.Tool("bad_tool", "d", {"type": "object", "properties": {"n": {"type": 5}}}, lambda n: n)


def test_without_a_cache_an_agents_process_reads_each_source_once_and_never_serves_an_edit_its_old_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cache installed (a library user's process): the text read is kept in the process under the
    file's hash, so the next run does not parse the module again, and an edited file is a new key."""
    path = tmp_path / "fpc_mem.py"
    mod = _load(path, "fpc_mem", SOURCE)
    before = _uncached(mod.tool_fn)
    real = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda obj: (_ for _ in ()).throw(AssertionError(f"{obj!r} read again")))
    assert _uncached(mod.tool_fn) == before
    monkeypatch.setattr(inspect, "getsource", real)
    old = os.stat(path)
    mod = _load(path, "fpc_mem", SOURCE.replace("return x * 2", "return x * 3"))  # the same size and lines
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    after = _uncached(mod.tool_fn)
    assert after != before
    tools._in_process.entries.clear()
    assert _uncached(mod.tool_fn) == after  # what a fresh process computes
