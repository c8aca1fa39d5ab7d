"""Tool fingerprints: what they cover, and that replay warns when one changed."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, MemoryTranscript, Registry, Tool, run, tool
from agentloop.replay import replay
from agentloop.testing import ScriptedModel, reply
from agentloop.tools import fingerprint

_counter = 0


def _load(tmp_path: Path, source: str) -> Any:
    """Import ``source`` as a fresh module (a new name each time, so nothing is cached)."""
    global _counter
    _counter += 1
    name = f"fp_mod_{_counter}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


BASE = """
import functools

def unrelated():
    return "unrelated v1"

def deep():
    return 1

def helper(x):
    return x + deep()

@functools.lru_cache(maxsize=None)
def cached(x):
    return x * 2

class Engine:
    def run(self, x):
        return self._inner(x)

    def _inner(self, x):
        return x + 1

ENGINE = Engine()

def direct(x: int) -> int:
    return helper(x)

def via_cache(x: int) -> int:
    return cached(x)

def via_instance(x: int) -> int:
    return ENGINE.run(x)

def make_closure():
    def local_helper(x):
        return x - 1
    def tool_fn(x: int) -> int:
        return local_helper(x)
    return tool_fn

closure_tool = make_closure()

def with_default(x: int, _f=helper) -> int:
    return _f(x)

method_tool = Engine().run
"""


def _fp(mod: Any, name: str) -> str:
    return fingerprint(getattr(mod, name))


@pytest.mark.parametrize(
    ("tool_name", "old", "new"),
    [
        ("direct", "return helper(x)", "return helper(x) + 0"),
        ("direct", "return x + deep()", "return x + deep() + 0"),
        ("direct", "return 1\n", "return 2\n"),
        ("via_cache", "return x * 2", "return x * 3"),
        ("via_instance", "return x + 1", "return x + 2"),
        ("closure_tool", "return x - 1", "return x - 2"),
        ("with_default", "return x + deep()", "return x + deep() + 0"),
        ("method_tool", "return x + 1", "return x + 2"),
    ],
    ids=["body", "helper", "helper-of-helper", "decorated-helper", "method-of-global-instance",
         "closure-helper", "default-argument-helper", "bound-method-sibling"],
)
def test_a_change_in_code_the_tool_reaches_changes_its_fingerprint(tmp_path: Path, tool_name: str, old: str, new: str) -> None:
    before = _fp(_load(tmp_path, BASE), tool_name)
    assert BASE.count(old) >= 1
    after = _fp(_load(tmp_path, BASE.replace(old, new, 1)), tool_name)
    assert before != after


@pytest.mark.parametrize("tool_name", ["direct", "via_cache", "via_instance", "closure_tool", "with_default", "method_tool"])
def test_a_change_in_code_the_tool_does_not_reach_keeps_its_fingerprint(tmp_path: Path, tool_name: str) -> None:
    # the negative control: the same module, a function no tool reaches
    before = _fp(_load(tmp_path, BASE), tool_name)
    after = _fp(_load(tmp_path, BASE.replace('"unrelated v1"', '"unrelated v2"')), tool_name)
    assert before == after


def test_the_fingerprint_is_stable_across_imports_of_the_same_code(tmp_path: Path) -> None:
    assert _fp(_load(tmp_path, BASE), "direct") == _fp(_load(tmp_path, BASE), "direct")
    assert _fp(_load(tmp_path, BASE), "direct").startswith("sha256:")


def test_an_mcp_tool_is_fingerprinted_by_its_override() -> None:
    t = Tool("mcp__files__read", "read", {"type": "object"}, fn=lambda: None, fingerprint_override="mcp:files@1.2.0")
    assert t.fingerprint == "mcp:files@1.2.0"
    assert t.manifest_entry()["fingerprint"] == "mcp:files@1.2.0"


# --- replay warns ------------------------------------------------------------


def _record(tmp_path: Path, tools: list[Tool]) -> Path:
    model = ScriptedModel([reply("", [("calc", {"x": 1})], step=1), reply("done")])
    path = tmp_path / "run.jsonl"
    t = MemoryTranscript()
    run(model, tools, "go", Budget(max_steps=5), transcript=t)
    path.write_bytes(t.getvalue())
    return path


def test_replay_warns_naming_a_tool_whose_code_changed_and_both_fingerprints(tmp_path: Path) -> None:
    v1 = _load(tmp_path, "def calc(x: int) -> int:\n    return x + 1\n")
    v2 = _load(tmp_path, "def calc(x: int) -> int:\n    return x + 100\n")
    path = _record(tmp_path, [tool(v1.calc)])
    old, new = fingerprint(v1.calc), fingerprint(v2.calc)
    for mode in ("full", "live-tools", "dry-run"):
        r = replay(path, tools=[tool(v2.calc)], mode=mode)
        assert len(r.tool_changes) == 1, mode
        assert r.tool_changes[0].name == "calc"
        [w] = [w for w in r.warnings if "calc" in w]
        assert old in w and new in w and "'calc'" in w
    full = replay(path, tools=[tool(v2.calc)], mode="full")
    assert full.equal  # full mode does not run the tool: the same bytes, but never a silent pass
    live = replay(path, tools=[tool(v2.calc)], mode="live-tools")
    assert not live.equal
    assert live.first_difference is not None and live.first_difference.kind == "tool_result"
    assert "$.content: 2 -> 101" in live.first_difference.changes


def test_replay_with_the_same_tool_gives_no_warning(tmp_path: Path) -> None:
    v1 = _load(tmp_path, "def calc(x: int) -> int:\n    return x + 1\n")
    path = _record(tmp_path, [tool(v1.calc)])
    r = replay(path, tools=[tool(v1.calc)], mode="live-tools")
    assert r.equal and r.warnings == [] and r.tool_changes == []


def test_replay_warns_when_an_mcp_server_version_changed(tmp_path: Path) -> None:
    def mk(version: str) -> Tool:
        return Tool("calc", "c", {"type": "object", "properties": {"x": {"type": "integer"}}},
                    fn=lambda x: x + 1, fingerprint_override=f"mcp:calc-server@{version}")

    path = _record(tmp_path, [mk("1.0.0")])
    r = replay(path, tools=[mk("1.1.0")], mode="live-tools")
    assert r.equal
    assert any("mcp:calc-server@1.0.0" in w and "mcp:calc-server@1.1.0" in w for w in r.warnings)
    assert replay(path, tools=[mk("1.0.0")], mode="live-tools").warnings == []


def test_live_tools_warns_for_a_recorded_tool_that_is_missing(tmp_path: Path) -> None:
    v1 = _load(tmp_path, "def calc(x: int) -> int:\n    return x + 1\n")
    path = _record(tmp_path, [tool(v1.calc)])
    r = replay(path, tools=Registry(), mode="live-tools")
    assert not r.equal
    assert any("'calc'" in w and "not among the tools given" in w for w in r.warnings)


# --- helpers in other modules of the user's project ---------------------


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], tag: str) -> Any:
    """A small project (the package ``proj_fp``) in its own folder, imported fresh; returns its ``tools`` module.

    Every version has the same module names, so two versions print alike unless their code differs.
    """
    root = tmp_path / tag
    pkg = root / "proj_fp"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name, src in files.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(src))
    for name in [m for m in sys.modules if m == "proj_fp" or m.startswith("proj_fp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    return importlib.import_module("proj_fp.tools")


PROJECT = {
    "tools": """
        import json
        from . import shapes
        from .helpers import area

        def by_name(w: int, h: int) -> int:
            return area(w, h)

        def by_module(w: int) -> int:
            return shapes.square(w)

        def stdlib_only(x: int) -> str:
            return json.dumps(x)
    """,
    "helpers": """
        from .deeper import scale

        def area(w, h):
            return scale(w * h)
    """,
    "shapes": """
        def square(w):
            return w * w
    """,
    "deeper": """
        from .deepest import unit

        def scale(v):
            return v * unit()
    """,
    "deepest": """
        from .bottom import one

        def unit():
            return one()
    """,
    "bottom": """
        def one():
            return 1
    """,
}


def _changed(files: dict[str, str], module: str, old: str, new: str) -> dict[str, str]:
    assert old in files[module]
    return {**files, module: files[module].replace(old, new)}


@pytest.mark.parametrize(
    ("tool_name", "module", "old", "new"),
    [
        ("by_name", "helpers", "scale(w * h)", "scale(w * h) + 0"),
        ("by_module", "shapes", "w * w", "w * w + 0"),
        ("by_name", "deeper", "v * unit()", "v * unit() + 0"),
        ("by_name", "deepest", "return one()", "return one() + 0"),
    ],
    ids=["imported-by-name", "used-as-module-attribute", "two-modules-away", "three-modules-away"],
)
def test_a_change_in_a_helper_in_another_module_of_the_project_changes_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool_name: str, module: str, old: str, new: str
) -> None:
    before = fingerprint(getattr(_project(tmp_path, monkeypatch, PROJECT, "a"), tool_name))
    after = fingerprint(getattr(_project(tmp_path, monkeypatch, _changed(PROJECT, module, old, new), "b"), tool_name))
    assert before != after


def test_the_fingerprint_stops_at_the_stated_module_depth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # bottom.py is four module boundaries from tools.py: past MODULE_DEPTH (3), so not followed
    before = fingerprint(_project(tmp_path, monkeypatch, PROJECT, "a").by_name)
    after = fingerprint(_project(tmp_path, monkeypatch, _changed(PROJECT, "bottom", "return 1", "return 2"), "b").by_name)
    assert before == after


def test_the_standard_library_and_installed_packages_are_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.tools import _is_user_module

    mod = _project(tmp_path, monkeypatch, PROJECT, "a")
    assert _is_user_module(mod.__name__) and _is_user_module("proj_fp.helpers")
    assert not _is_user_module("json") and not _is_user_module("jsonschema") and not _is_user_module("agentloop.tools")
    # the same project at another path prints the same: the keys are module names, not paths
    same = _project(tmp_path, monkeypatch, PROJECT, "c")
    assert fingerprint(mod.by_name) == fingerprint(same.by_name) and fingerprint(mod.stdlib_only) == fingerprint(same.stdlib_only)
