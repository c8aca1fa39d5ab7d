"""docs/DEVELOPING.md's Layout lists every module of the package once, under the layer it is in.

Issue 15, point 10: a newcomer reads the architecture from that list, so a
module added, moved or removed without its line fails here. The layers are
the ones scripts/check_layers.py enforces (its ``layer_of``).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentloop"
DOC = ROOT / "docs" / "DEVELOPING.md"

LINE = re.compile(r"^([\w/]+\.py)\s{2,}\S")
GROUP = re.compile(r"^\*\*(\w+)/?\*\*")
ALSO = re.compile(r"\*\*(\w+)/?\*\*")


def _check_layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", ROOT / "scripts" / "check_layers.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _layout(text: str) -> list[tuple[str, set[str]]]:
    """(module path, the layers of the group it is listed under), for each module line of the Layout section."""
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    out: list[tuple[str, set[str]]] = []
    group: set[str] = set()
    for line in section.splitlines():
        if GROUP.match(line):
            group = set(ALSO.findall(line))
        m = LINE.match(line)
        if m:
            out.append((m.group(1), group))
    return out


def _modules() -> set[str]:
    return {p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")}


def _module_name(path: str) -> str:
    parts = ["agentloop", *path[: -len(".py")].split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_the_layout_lists_every_module_of_the_package_exactly_once() -> None:
    listed = [p for p, _ in _layout(DOC.read_text(encoding="utf-8"))]
    twice = sorted({p for p in listed if listed.count(p) > 1})
    assert twice == []
    assert sorted(_modules() - set(listed)) == [], "modules without a line in docs/DEVELOPING.md's Layout"
    assert sorted(set(listed) - _modules()) == [], "lines in docs/DEVELOPING.md's Layout for modules that do not exist"


def _misplaced(text: str) -> list[tuple[str, str, list[str]]]:
    layer_of = _check_layers().layer_of
    return [(p, layer_of(_module_name(p)), sorted(g)) for p, g in _layout(text) if layer_of(_module_name(p)) not in g]


def test_each_module_is_listed_under_the_layer_check_layers_puts_it_in() -> None:
    assert _misplaced(DOC.read_text(encoding="utf-8")) == []


def test_a_module_added_without_its_line_is_named() -> None:
    text = DOC.read_text(encoding="utf-8")
    listed = {p for p, _ in _layout(text)}
    assert "agent/hooks/runner.py" in listed
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("agent/hooks/runner.py "))
    assert sorted(_modules() - {p for p, _ in _layout(cut)}) == ["agent/hooks/runner.py"]


def test_a_module_listed_under_another_layer_is_named() -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    hooks = next(i for i, line in enumerate(lines) if line.startswith("agent/hooks/runner.py "))
    moved = lines.pop(hooks)
    lines.insert(next(i for i, line in enumerate(lines) if line.startswith("events.py ")), moved)
    assert [(p, layer) for p, layer, _ in _misplaced("\n".join(lines))] == [("agent/hooks/runner.py", "agent")]


def test_no_two_public_classes_of_the_package_share_a_name() -> None:
    """Issue 15, point 1: names explain themselves ("no two classes called ContextManager").

    A Protocol and the class that implements it, or a REPL command and a user's
    command file, get names of their own, so a reader (and an import) never
    takes one for the other.
    """
    import ast

    seen: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(path.relative_to(SRC).as_posix())
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
