"""One way to build an agent, checked on the source.

``agent/builder.py`` makes the hooks, context manager, sub-agents and MCP servers and
the ``Agent`` takes them as its own: no other module sets an agent's attributes after
it is made (only a front end's callbacks, declared in ``Agent.__init__``), and every
method the agent calls on its hooks and context manager is on the Protocol it holds
them as, never probed with ``getattr``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from agentloop.agent.protocols import AgentHooks, ContextManager, NoContext, NoHooks

SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"
CORE = SRC / "agent" / "agent.py"

FRONT_END_CALLBACKS = {"on_notice", "elicit", "on_mcp_progress", "ask_permission"}
"""What a front end (REPL, -p, ACP) may set on an agent it made: where to show and ask things."""


def _names_an_agent(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "agent") or (isinstance(node, ast.Attribute) and node.attr == "agent")


def _attribute_writes(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript):
                t = t.value  # agent.extra_tools[:] = ... changes the agent too
            if isinstance(t, ast.Attribute) and _names_an_agent(t.value):
                out.append((node.lineno, t.attr))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args and _names_an_agent(node.args[0]):
            out.append((node.lineno, "setattr"))
        if isinstance(node, ast.Attribute) and node.attr == "__dict__" and _names_an_agent(node.value):
            out.append((node.lineno, "__dict__"))  # agent.__dict__.setdefault(...) sets an attribute too
    return out


def test_no_module_but_the_agent_itself_sets_an_agents_attributes() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == CORE:
            continue
        for line, attr in _attribute_writes(ast.parse(path.read_text(), str(path))):
            if attr not in FRONT_END_CALLBACKS:
                found.append(f"{path.relative_to(SRC)}:{line}: sets agent.{attr}")
    assert found == []


def test_front_end_callbacks_are_declared_by_the_agent() -> None:
    """Declared while the agent is built: in ``__init__`` or a method of the agent that it calls."""
    agent = next(n for n in ast.walk(ast.parse(CORE.read_text())) if isinstance(n, ast.ClassDef) and n.name == "Agent")
    methods = {n.name: n for n in agent.body if isinstance(n, ast.FunctionDef)}
    init = methods["__init__"]
    called = {n.func.attr for n in ast.walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
    declared = {t.attr for m in [init, *(methods[c] for c in called if c in methods)] for n in ast.walk(m)
                if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    assert FRONT_END_CALLBACKS <= declared


def test_every_method_the_agent_calls_on_its_hooks_and_context_is_on_their_protocols() -> None:
    tree = ast.parse(CORE.read_text())
    called: dict[str, set[str]] = {"hooks": set(), "context": set()}
    probed = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr in called \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "self":
            called[node.value.attr].add(node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and node.args:
            target = node.args[0]
            if isinstance(target, ast.Attribute) and target.attr in called:
                probed.append(f"agent.py:{node.lineno}: {node.func.id}(self.{target.attr}, ...)")
    assert probed == []
    assert called["hooks"] and called["context"]
    for proto, default, names in ((AgentHooks, NoHooks, called["hooks"]), (ContextManager, NoContext, called["context"])):
        missing = sorted(n for n in names if not hasattr(proto, n) or not hasattr(default, n))
        assert missing == [], f"{proto.__name__} lacks {missing}"


_VIEWS = {"PartsSource", "ToolboxInputs", "HookFacts", "ContextFacts", "PromptFacts", "TurnInputs", "CallSource",
          "WorktreePlace"}
"""What a part is handed of the agent (the builder's own ``PartsSource``, and the frozen values it makes)."""

_MUTATORS = {"append", "extend", "insert", "remove", "clear", "update", "pop", "add", "discard", "setdefault", "sort"}


def _root(e: ast.expr) -> ast.expr:
    while isinstance(e, (ast.Attribute, ast.Subscript)):
        e = e.value
    return e


def _writes_through_views(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for f in ast.walk(tree):
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        views = {a.arg for a in [*f.args.args, *f.args.kwonlyargs] if a.annotation is not None
                 and any(isinstance(x, ast.Name) and x.id in _VIEWS for x in ast.walk(a.annotation))}
        for n in ast.walk(f) if views else ():
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                if isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(r := _root(t), ast.Name) and r.id in views:
                    out.append((n.lineno, ast.unparse(t)))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS \
                    and isinstance(n.func.value, (ast.Attribute, ast.Subscript)) \
                    and isinstance(r := _root(n.func.value), ast.Name) and r.id in views:
                out.append((n.lineno, ast.unparse(n.func)))
    return out


def test_no_part_writes_into_the_agent_through_the_value_it_is_given() -> None:
    """A part reads what it is handed (a frozen value the builder made) and gives back values: it neither assigns
    through it (``src.sandbox.roots = ...``) nor changes what it holds (``src.add_dirs.append``); the agent takes
    what the part made (``Toolbox.add_dirs``) and the objects it holds change themselves (``Sandbox.work_in``,
    ``ExtraTools.add``)."""
    defined = {n.name for p in (SRC / "agent").rglob("*.py") for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef)}
    assert _VIEWS <= defined  # the scan below looks for names that exist
    found = [f"{p.relative_to(SRC)}:{line}: {what}" for p in sorted((SRC / "agent").rglob("*.py")) if p != CORE
             for line, what in _writes_through_views(ast.parse(p.read_text(), str(p)))]
    assert found == []


def test_the_write_scan_sees_what_it_forbids() -> None:
    tree = ast.parse("def build(src: ToolboxInputs) -> None:\n    src.add_dirs.append('x')\n    src.sandbox.roots = []\n")
    assert sorted(w for _, w in _writes_through_views(tree)) == ["src.add_dirs.append", "src.sandbox.roots"]
