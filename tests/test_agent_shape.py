"""The agent's shape, checked on the source: a short ``Agent``, no ``Any`` standing for it, no reach into privates.

``agent/agent.py`` holds the ``Agent`` and what cannot yet live elsewhere; its parts are modules of their
own (settings, builder, toolbox, pipeline, commands, prompt...). A part is handed a frozen value the builder
made, not the agent (``tests/test_parts_take_values.py``); still, no parameter or attribute named ``agent`` or
``owner`` is typed ``Any``, and no module reads another object's private names through it (``agent._x``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"
AGENT = SRC / "agent" / "agent.py"

MAX_LINES = 400

ANY_AGENT = re.compile(r"\b(agent|owner): Any\b")


def test_the_agent_module_stays_short() -> None:
    assert len(AGENT.read_text().splitlines()) < MAX_LINES


def test_nothing_types_the_agent_as_any() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if ANY_AGENT.search(line):
                found.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert found == []


def _names_agent_or_owner(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("agent", "owner")
    return isinstance(node, ast.Attribute) and node.attr in ("agent", "owner")


def _private_reads(tree: ast.AST) -> list[ast.Attribute]:
    """``agent._x`` / ``owner._x`` (and ``self.agent._x``): a private name read through the agent."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("_")
            and not n.attr.startswith("__") and _names_agent_or_owner(n.value)]


def test_no_module_reads_an_agents_private_names() -> None:
    found = [f"{path.relative_to(SRC)}:{node.lineno}: .{node.attr}"
             for path in sorted(SRC.rglob("*.py")) for node in _private_reads(ast.parse(path.read_text(), str(path)))]
    assert found == []


def test_the_scan_sees_what_it_forbids() -> None:
    """The checks above would catch each thing they look for (so an empty list means something)."""
    assert len(_private_reads(ast.parse("agent._open(x)\nself.owner._pipeline\nagent.__class__\n"))) == 2
    assert ANY_AGENT.search("def f(agent: Any) -> None:") and not ANY_AGENT.search("def f(agent: Agent) -> None:")


def _any_names(tree: ast.AST) -> list[int]:
    """Lines where ``Any`` is named (an annotation, a cast, an import)."""
    return sorted({n.lineno for n in ast.walk(tree) if (isinstance(n, ast.Name) and n.id == "Any")
                   or (isinstance(n, ast.alias) and n.name == "Any")})


def test_background_children_are_handed_exact_types() -> None:
    """What the background module is handed (the runner's parts, the run's budget and result, the messages) is
    typed as what it is: a newcomer reads the types to learn what a background child may touch."""
    path = SRC / "agent" / "subagents" / "background.py"
    assert _any_names(ast.parse(path.read_text())) == []
    assert _any_names(ast.parse("from typing import Any\ndef f(a: Any) -> None: ...\n")) == [1, 2]
