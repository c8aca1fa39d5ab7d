"""The package's layers, checked: no module imports a layer above its own, and no import cycles.

    python scripts/check_layers.py [SRC_DIR]     (default: src/agentloop)

Every ``import`` and ``from ... import`` is read with ``ast``, including those
inside functions (a lazy import is still a dependency). Exit 0 when every
import follows ``ALLOWED`` and the module graph has no cycle; exit 1 with one
line per offence otherwise. ``scripts/check`` runs it, so CI does too.

The layers, from the bottom (docs/DEVELOPING.md, "Layout"):

- core: the modules at the top of the package (events, canonical, transcript,
  tools, budget, loop, run, prices, redact, replay...). They read no clock,
  randomness, environment or network, and import nothing but each other.
- audit, config, telemetry: built on the core only.
- providers, mcp: the core, and config for settings files.
- testing (the test kit): the core and providers (its scripted model is the
  ``scripted`` provider's).
- agent: all of the above but the test kit.
- batch: the core, audit, providers, config, telemetry (not the test kit).
- demo: the core, audit, providers (its scripted model is the ``scripted`` provider's).
- cli: anything but the test kit: no shipped module imports it.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterator

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "audit": frozenset({"core", "audit"}),
    "testing": frozenset({"core", "providers", "testing"}),
    "config": frozenset({"core", "config"}),
    "telemetry": frozenset({"core", "telemetry"}),
    "providers": frozenset({"core", "config", "providers"}),
    "mcp": frozenset({"core", "config", "mcp"}),
    "agent": frozenset({"core", "audit", "config", "telemetry", "providers", "mcp", "agent"}),
    "batch": frozenset({"core", "audit", "config", "telemetry", "providers", "batch"}),
    "demo": frozenset({"core", "audit", "providers", "demo"}),
    "cli": frozenset({"core", "audit", "config", "telemetry", "providers", "mcp", "agent", "batch", "demo", "cli"}),
}

ALIASES = {"agentloop.fakeprovider": "testing", "agentloop.__main__": "cli"}
"""Top-level names that belong to another layer (a compatibility name; `python -m agentloop`)."""

_DECLARED = re.compile(r"agentloop(\.\w+)+:[A-Z_]+")
"""A string naming a module's declaration (``"agentloop.agent.tools.builtin:BASH"``), imported by ``importlib``: read
as an import of that module."""

KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
"""Cycles allowed for now: none (the last, transcript and repair, went when repair moved to audit)."""


def layer_of(module: str) -> str:
    if module in ALIASES:
        return ALIASES[module]
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in ALLOWED and parts[1] != "core":
        return parts[1]
    return "core"


def modules(src: str) -> dict[str, str]:
    """Module name -> file path, for every .py file under ``src`` (the ``agentloop`` folder)."""
    out: dict[str, str] = {}
    root = os.path.dirname(os.path.abspath(src))
    for dirpath, _dirs, files in os.walk(src):
        for f in files:
            # a C extension module is known by its stub (``_linescan.pyi``): an import of it is not one of the package
            if not f.endswith(".py") and not (f.endswith(".pyi") and f[:-1] not in files):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)[: -len(".pyi" if f.endswith(".pyi") else ".py")].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = path
    return out


def imports_of(module: str, path: str, known: dict[str, str]) -> Iterator[tuple[int, str]]:
    """(line, imported agentloop module) for each import in the file, resolved to a known module."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_pkg = os.path.basename(path) == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # "from pkg import mod" imports the module when mod is one; else the name comes from pkg
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DECLARED.fullmatch(node.value):
            names = [node.value.partition(":")[0]]  # a record named as "module:NAME" (agent/tools/catalog.py's DECLARED)
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module and name.startswith("agentloop"):
                yield node.lineno, name


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def check(src: str) -> list[str]:
    known = modules(src)
    problems: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in known}
    for module, path in sorted(known.items()):
        mine = layer_of(module)
        for line, target in imports_of(module, path, known):
            if target == "agentloop" and mine != "core":
                continue  # the package's own names (__version__, run...) come from the core
            graph[module].add(target)
            theirs = layer_of(target)
            if theirs not in ALLOWED[mine]:
                problems.append(f"{path}:{line}: {module} ({mine}) imports {target} ({theirs}), a layer it may not use")
    for comp in cycles(graph):
        if frozenset(comp) not in KNOWN_CYCLES:
            problems.append("import cycle: " + " <-> ".join(comp))
    return problems


def main(argv: list[str]) -> int:
    src = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src", "agentloop")
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(modules(src))} modules, layers and cycles ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
