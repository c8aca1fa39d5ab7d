"""No function in the package is longer than 80 lines, except the ones named here (and in DEVELOPING.md).

    python scripts/check_function_size.py [SRC_DIR]     (default: src/agentloop)

A parser's dispatch may be long: it reads as one table of cases, and cut
into pieces it would hide the grammar. Each such exception is listed in
``EXCEPTIONS`` with why, and docs/DEVELOPING.md names the same ones; a new
long function fails the check (exit 1, one line each).
"""

from __future__ import annotations

import ast
import os
import sys

LIMIT = 80

EXCEPTIONS: dict[str, str] = {
    "agent/permissions/bash_reader.py:_Parser.parse": "the Bash reader's dispatch: one case a token kind, as bash's grammar reads",
    "agent/permissions/bash_reader.py:unit_views": (
        "the Bash reader's dispatch over a command's first word: one case a command that runs other code; "
        "each decides what permission rules see, so they read side by side"
    ),
    "agent/permissions/bash_reader.py:_unwrap": "a wrapper's option parser: one case an option shape (long, bundled short, a command string anywhere)",
}
"""``file:qualified name`` -> why it may be longer than ``LIMIT`` lines."""


def long_functions(src: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for root, _dirs, files in os.walk(src):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)

            def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        name = f"{prefix}{child.name}"
                        n = (child.end_lineno or child.lineno) - child.lineno + 1
                        if n > LIMIT:
                            out.append((f"{rel}:{name}", n))
                        visit(child, f"{name}.", rel)
                    elif isinstance(child, ast.ClassDef):
                        visit(child, f"{prefix}{child.name}.", rel)

            visit(tree, "")
    return sorted(out)


def main(argv: list[str]) -> int:
    src = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src", "agentloop")
    bad = [(name, n) for name, n in long_functions(src) if name not in EXCEPTIONS]
    for name, n in bad:
        print(f"{name}: {n} lines (more than {LIMIT}; split it, or name it in EXCEPTIONS and DEVELOPING.md with why)")
    if bad:
        return 1
    print(f"check_function_size: no function over {LIMIT} lines but the {len(EXCEPTIONS)} named")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
