"""The agent's shape, checked on the source: a short ``Agent``, no ``Any`` standing for it, no reach into privates.

``agent/agent.py`` holds the ``Agent`` and what cannot yet live elsewhere; its parts are modules of their
own (settings, builder, toolbox, pipeline, commands, prompt...). What a part may see of the agent is a
Protocol (``agent/protocols.py``), so no parameter or attribute named ``agent`` or ``owner`` is typed
``Any``, and no module reads another object's private names through it (``agent._x``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"
AGENT = SRC / "agent" / "agent.py"

MAX_LINES = 400

MOVING_OUT: set[str] = set()
"""Functions whose lines are not counted (none: the model's part is ``agent/model_choice.py``)."""


def _counted_lines(path: Path) -> int:
    text = path.read_text()
    tree = ast.parse(text)
    out = len(text.splitlines())
    nodes = list(tree.body) + [m for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "Agent" for m in c.body]
    for n in nodes:
        if isinstance(n, ast.FunctionDef) and n.name in MOVING_OUT:
            start = min([d.lineno for d in n.decorator_list] + [n.lineno])
            assert n.end_lineno is not None
            out -= n.end_lineno - start + 1
    return out


def test_the_agent_module_stays_short() -> None:
    assert _counted_lines(AGENT) < MAX_LINES


def test_nothing_types_the_agent_as_any() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\b(agent|owner): Any\b", line):
                found.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert found == []


def _names_agent_or_owner(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("agent", "owner")
    return isinstance(node, ast.Attribute) and node.attr in ("agent", "owner")


def test_no_module_reads_an_agents_private_names() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and _names_agent_or_owner(node.value):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: .{node.attr}")
    assert found == []


def test_the_scan_sees_what_it_forbids() -> None:
    """The checks above would catch each thing they look for (so an empty list means something)."""
    tree = ast.parse("agent._open(x)\nself.owner._pipeline\n")
    hits = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("_") and _names_agent_or_owner(n.value)]
    assert len(hits) == 2
    assert re.search(r"\b(agent|owner): Any\b", "def f(agent: Any) -> None:")
