"""Money is decided in the loop and the budget module: nowhere else compares an amount or adds to a spend.

Decision 0003 (reserve, then settle, in micro-dollars): a reservation is granted by ``budget.over_cap``'s
one comparison, made by the loop (``loop.py``) or a ``budget.Ledger``; a part that owns a room of its own
(the sub-agents' ``ParentBudget``, the fleet's ``FleetLedger``, a child's bill) keeps its figures in a
``Ledger`` and asks it. What is left elsewhere is named below with its reason: tallies of what a run already
settled (the session's totals, read back from its records) and figures shown to the user.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentloop"
HOMES = {"budget.py", "loop.py"}
MONEY = re.compile(r"micros|spent|usd|cost", re.IGNORECASE)

TALLIES: dict[str, str] = {
    "agent/agent.py": "the session's total: each run's spent_micros as the loop settled it, and background "
                      "children's bills that no run took (ParentBudget.take_pending)",
    "agent/session/store.py": "SessionStats: the session's totals, added up from the records the loop wrote",
    "batch/ledger.py": "JournalState replays the fleet ledger's journal (its grants are FleetLedger's, a Ledger's)",
    "batch/runner.py": "a resumed batch adds up what its finished tasks' files say they spent",
    "cli/claude_format.py": "the cost shown in Claude Code's result message, split across its models",
}
"""Files that add to a figure named as money, and why that decides nothing."""

SHOWN: dict[str, str] = {
    "batch/tasks.py": "a task file's figure checked to be a whole number in range (bad input, not a budget)",
    "cli/agent_entry.py": "the spend of a Stop hook's run shown from its start",
    "cli/cmd_batch.py": "how many decimals a dollar figure is printed with",
    "demo/__init__.py": "the demo checks, for the viewer, that the cap held",
}
"""Files that compare a figure named as money, and why that decides nothing."""


def _names(node: ast.AST) -> list[str]:
    return [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))]


def money_sites(tree: ast.AST) -> list[tuple[str, int]]:
    """("compare" | "add", line) for each ordering comparison or augmented assignment naming money."""
    out = []
    for n in ast.walk(tree):
        if (isinstance(n, ast.Compare) and any(isinstance(o, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for o in n.ops)
                and any(MONEY.search(x) for x in _names(n))):
            out.append(("compare", n.lineno))
        elif isinstance(n, ast.AugAssign) and any(MONEY.search(x) for x in _names(n.target)):
            out.append(("add", n.lineno))
    return sorted(out, key=lambda s: s[1])


def test_the_scan_sees_what_it_forbids() -> None:
    code = "if cost_micros <= left:\n    pass\nself.spent += c\nx += 1\nif n < 3:\n    pass\n"
    assert money_sites(ast.parse(code)) == [("compare", 1), ("add", 3)]


def test_no_module_but_the_loop_and_the_budget_decides_money() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in HOMES:
            continue
        for kind, line in money_sites(ast.parse(path.read_text(encoding="utf-8"))):
            if rel not in (TALLIES if kind == "add" else SHOWN):
                found.append(f"{rel}:{line}: {kind}s money outside budget.py and loop.py")
    assert found == [], "ask a budget.Ledger (or the loop) instead:\n" + "\n".join(found)


def test_every_named_exception_is_still_there() -> None:
    """An exception whose reason went away is taken off the lists (they name what the scan must pass, no more)."""
    for listed, kind in ((TALLIES, "add"), (SHOWN, "compare")):
        for rel in listed:
            assert any(k == kind for k, _ in money_sites(ast.parse((SRC / rel).read_text(encoding="utf-8")))), rel
