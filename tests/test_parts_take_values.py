"""The agent's parts take values, not the agent, checked on the source and on a live agent.

``agent/builder.py`` is the one module besides ``agent/agent.py`` that reads the agent (its own ``PartsSource``);
every part it builds is handed a small frozen value it made (``ToolboxInputs``, ``HookFacts``, ``ContextFacts``,
``PromptFacts``, ``TurnInputs``, ``CallSource``, ``WorktreePlace``), where what changes during a session is a
callable or its owner object (``ModelChoice``, ``ExtraTools``). So no part is typed against a view of the whole
agent, no part's constructor takes it, and a part cannot write back through what it was given.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent import builder
from agentloop.agent.agent import Agent
from agentloop.agent.toolbox import ExtraTools
from agentloop.budget import Price
from agentloop.events import ModelReply
from agentloop.testing import FunctionModel
from agentloop.tools import tool

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"
AGENT_DIR = SRC / "agent"
MAY_SEE_THE_AGENT = {AGENT_DIR / "agent.py", AGENT_DIR / "builder.py"}

REMOVED_VIEWS = {"HookSubject", "ToolCallSubject", "ContextSubject", "TurnSubject", "PromptSubject", "ToolboxSource",
                 "WorktreeSubject", "PartsSource"}
"""The single-implementation Protocols each part used to see the agent through (``PartsSource`` is the builder's)."""

VIEW_OF_THE_AGENT = 3
"""A Protocol declaring this many of the ``Agent``'s own public names is a view of the agent, whatever its name."""


def _agent_names() -> set[str]:
    """The ``Agent``'s public names: its methods and properties, and what it sets on ``self``."""
    cls = next(n for n in ast.walk(ast.parse((AGENT_DIR / "agent.py").read_text())) if isinstance(n, ast.ClassDef) and n.name == "Agent")
    names: set[str] = set()
    for n in ast.walk(cls):
        if isinstance(n, ast.FunctionDef):
            names.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and isinstance(n.ctx, ast.Store):
            names.add(n.attr)
        elif isinstance(n, ast.Assign) and n in cls.body:
            names.update(t.id for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store))
    return {n for n in names if not n.startswith("_")}


def _protocol_members(c: ast.ClassDef) -> set[str]:
    out = set()
    for n in c.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def _is_protocol(c: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Name) and b.id == "Protocol") or (isinstance(b, ast.Attribute) and b.attr == "Protocol") for b in c.bases)


def _views_of_the_agent(tree: ast.AST, agent_names: set[str]) -> list[str]:
    """What in a part's module sees the whole agent: a removed view's name, a Protocol made of the agent's names,
    a parameter typed ``Agent``, or a constructor that takes an ``agent`` or ``owner``."""
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in REMOVED_VIEWS:
            found.append(f"{n.lineno}: names {n.id}")
        elif isinstance(n, ast.Attribute) and n.attr in REMOVED_VIEWS:
            found.append(f"{n.lineno}: names {n.attr}")
        elif isinstance(n, ast.alias) and n.name in REMOVED_VIEWS:
            found.append(f"{n.lineno}: imports {n.name}")
        elif isinstance(n, ast.ClassDef):
            if n.name in REMOVED_VIEWS:
                found.append(f"{n.lineno}: declares {n.name}")
            elif _is_protocol(n) and len(seen := _protocol_members(n) & agent_names) >= VIEW_OF_THE_AGENT:
                found.append(f"{n.lineno}: Protocol {n.name} is a view of the agent ({', '.join(sorted(seen))})")
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for a in [*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs]:
                typed = a.annotation is not None and any(isinstance(x, ast.Name) and x.id == "Agent" for x in ast.walk(a.annotation))
                if typed or (isinstance(a.annotation, ast.Constant) and "Agent" in str(a.annotation.value).split(".")):
                    found.append(f"{n.lineno}: {n.name}({a.arg}: Agent)")
                if n.name == "__init__" and a.arg in ("agent", "owner"):
                    found.append(f"{n.lineno}: __init__ takes {a.arg!r}")
    return found


def test_no_part_is_typed_against_a_view_of_the_whole_agent() -> None:
    names = _agent_names()
    assert {"session", "cwd", "model_spec", "policy", "build_tools", "hooks"} <= names  # the scan knows the agent
    found = [f"{p.relative_to(SRC)}:{line}" for p in sorted(AGENT_DIR.rglob("*.py")) if p not in MAY_SEE_THE_AGENT
             for line in _views_of_the_agent(ast.parse(p.read_text(), str(p)), names)]
    assert found == []


def test_only_the_builder_reads_the_agent_through_its_parts_source() -> None:
    users = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "PartsSource" in p.read_text())
    assert users == ["agent/builder.py"]


def test_the_view_scan_sees_what_it_forbids() -> None:
    names = {"session", "cwd", "policy", "build_tools"}
    bad = ast.parse(
        "from .protocols import HookSubject\n"
        "class Seen(Protocol):\n    session: Any\n    cwd: str\n    def build_tools(self) -> None: ...\n"
        "class Fine(Protocol):\n    cwd: str\n    def run(self) -> None: ...\n"
        "class Part:\n    def __init__(self, agent: Thing) -> None: ...\n"
        "def f(a: Agent) -> None: ...\n"
        "def g(a: 'Agent') -> None: ...\n")
    found = _views_of_the_agent(bad, names)
    assert len(found) == 5, found
    assert any("Seen" in f for f in found) and not any("Fine" in f for f in found)


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


@pytest.fixture()
def agent(tmp_path: Path) -> Any:
    (tmp_path / "p").mkdir()
    a = Agent(cwd=str(tmp_path / "p"), home=str(tmp_path / "h"), model=FunctionModel(lambda r: ModelReply(text="ok"), name="m"),
              env={"PATH": "/usr/bin:/bin"}, unlimited_usd=True, price=Price(1, 1))
    yield a
    a.close()


def _values(a: Agent) -> dict[str, Any]:
    return {"toolbox": builder.toolbox_inputs(a), "prompt": builder.prompt_facts(a), "turn": builder.turn_inputs(a),
            "hooks": a.hook_facts, "context": a.context_facts, "calls": a.calls.source, "worktree": builder.worktree_place(a)}


def test_a_part_given_a_frozen_value_cannot_write_back(agent: Agent) -> None:
    """Assigning any field of what a part is handed, or adding one, fails (``FrozenInstanceError``), and the
    agent is as it was."""
    before = (agent.cwd, agent.permission_mode, list(agent.add_dirs), agent.session, agent.model_spec)
    for what, value in _values(agent).items():
        assert dataclasses.is_dataclass(value) and not hasattr(value, "__dict__"), what  # frozen, with slots
        fields = [f.name for f in dataclasses.fields(value)]
        assert fields, what
        for name in fields:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(value, name, None)
        with pytest.raises((dataclasses.FrozenInstanceError, AttributeError, TypeError)):
            value.agent = agent  # nor can the agent be hung on it
    assert (agent.cwd, agent.permission_mode, list(agent.add_dirs), agent.session, agent.model_spec) == before


def test_what_a_value_reads_follows_the_agent_without_holding_it(agent: Agent) -> None:
    """What changes during a session is read when it is needed: a mode cycled after the hooks' facts were made."""
    facts = agent.hook_facts
    mode = agent.cycle_mode()
    assert facts.permission_mode() == mode and facts.cwd() == agent.cwd and facts.session() is agent.session
    assert agent not in [getattr(facts, f.name) for f in dataclasses.fields(facts)]


def test_the_tools_beside_the_built_in_ones_change_only_through_their_owner(agent: Agent) -> None:
    """``ExtraTools`` hands out a copy: a part that iterates it cannot add to it behind the toolbox's back, and a
    tool added through it survives the session's next toolbox."""
    extra = agent.extra_tools
    assert isinstance(extra, ExtraTools) and not isinstance(extra, list)
    seen = list(extra)
    seen.append(echo)
    assert "echo" not in extra.names()
    agent.register_tools([echo])
    assert "echo" in extra.names() and "echo" in agent.registry
    agent.build_tools()  # as at /clear: a new toolbox from new inputs, the same tools beside the built-in ones
    assert "echo" in agent.registry
    assert builder.toolbox_inputs(agent).extra_tools is extra


def test_the_mcp_layer_starts_from_a_frozen_value_and_never_probes_the_agent() -> None:
    """``mcp.agent`` gets an ``McpStart`` the builder makes (what a stdio server inherits is the agent's one child
    environment, decided once), and the servers themselves elsewhere: no ``getattr`` on a host, no view of it."""
    from agentloop.mcp import agent as mcp_agent

    src = Path(mcp_agent.__file__).read_text()
    assert "getattr(agent" not in src and "McpHost" not in src
    params = dataclasses.fields(mcp_agent.McpStart)
    assert {f.name for f in params} >= {"inherit", "env", "notice_now"}
    assert mcp_agent.McpStart.__dataclass_params__.frozen  # type: ignore[attr-defined]
