#!/usr/bin/env python3
"""Negative controls: sabotage a guard, run the tests that guard it, expect them to FAIL.

A suite that cannot be shown to fail proves nothing. Each sabotage below
copies the tree to a temporary folder, breaks one integrity check there, and
runs the tests that claim to guard it. The script exits 0 only if every
sabotage made its tests fail (and the untouched copy passes).

    .venv/bin/python scripts/negative_control.py [-v] [--only TEXT]   (TEXT: part of a name or path)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Sabotage:
    name: str
    path: str
    old: str | None
    """Text to replace; None appends ``new`` to the file."""
    new: str
    tests: list[str]


PB = ["tests/test_permissions.py", "tests/test_permissions_bash.py"]

SABOTAGES = [
    Sabotage(
        "the verifier accepts everything",
        "src/agentloop/transcript.py",
        None,
        "\n\ndef verify_lines(lines, **_):  # SABOTAGED\n    r = VerifyReport()\n    r.count = sum(1 for _ in lines)\n    return r\n\n\n"
        "def verify_records(records, **_):  # SABOTAGED\n    r = VerifyReport()\n    r.count = sum(1 for _ in records)\n    return r\n",
        ["tests/test_transcript.py"],
    ),
    Sabotage(
        "the cost reservation is skipped",
        "src/agentloop/loop.py",
        "if b.max_usd_micros is not None and state.spent_micros + amount > b.max_usd_micros:",
        "if False:  # SABOTAGED",
        ["tests/test_loop.py"],
    ),
    Sabotage(
        "the step budget is not checked",
        "src/agentloop/loop.py",
        "if b.max_steps is not None and state.steps >= b.max_steps:",
        "if False:  # SABOTAGED",
        ["tests/test_loop.py"],
    ),
    Sabotage(
        "the canonical fast path trusts orjson with floats and enums",
        "src/agentloop/canonical.py",
        "            if t is dict or t is list or t is tuple:\n                push(x)\n            else:\n                return False",
        "            if t is dict or t is list or t is tuple:\n                push(x)  # SABOTAGED: no else",
        ["tests/test_canonical.py"],
    ),
    Sabotage(
        "keys past U+FFFF keep orjson's code-point order",
        "src/agentloop/canonical.py",
        "if out.isascii() or _ASTRAL(out) is None or not _astral_key(value):",
        "if True:  # SABOTAGED",
        ["tests/test_canonical.py"],
    ),
    # --- Bash rules and protected paths (issue 16 points 2, 5, 6; issue 18 point 6) ---
    Sabotage(
        "a line whose commands cannot all be known is decided like a known one",
        "src/agentloop/agent/permissions.py",
        "if bash is not None and bash.opaque and self._has_bash_rules():",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "a pattern allow rule approves an opaque line",
        "src/agentloop/agent/permissions.py",
        "if bash is None or bash.units is None or not bash.units or bash.opaque:",
        "if bash is None or bash.units is None or not bash.units:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "an escaped \\} ends ${...} (the reader stops early, as before issue 16)",
        "src/agentloop/agent/_shell.py",
        'if c == "\\\\":\n                j += 2\n                continue\n            if c == "\'":\n                if in_double:',
        'if c == "\\\\":  # SABOTAGED\n                j += 1\n                continue\n            if c == "\'":\n                if in_double:',
        PB,
    ),
    Sabotage(
        "arithmetic and -v tests evaluating unknown text are not opaque",
        "src/agentloop/agent/_shell.py",
        "if ctx.evals and ctx.taint:",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "interpreters' inline code (python3 -c, perl -e) is not opaque",
        "src/agentloop/agent/_shell.py",
        "if _INTERPRETER.match(head):",
        "if False:  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "flock is not known as a wrapper",
        "src/agentloop/agent/_shell.py",
        '"flock": _Wrap(',
        '"flock-sabotaged": _Wrap(',
        PB,
    ),
    Sabotage(
        "'always' stores a pattern (a * in the approved line becomes a wildcard)",
        "src/agentloop/agent/core.py",
        'text = self.policy.add_exact("allow", "Bash", cmd, source="session").text',
        'text = self.policy.add_rule("allow", f"Bash({cmd})", source="session").text  # SABOTAGED',
        ["tests/test_agent.py"],
    ),
    Sabotage(
        "protected paths are compared case-sensitively (.GIT/config slips through)",
        "src/agentloop/agent/permissions.py",
        "low = part.lower()",
        "low = part  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "protected paths ask only in bypassPermissions (acceptEdits writes .agentloop/ unasked)",
        "src/agentloop/agent/permissions.py",
        "        if protected is not None:",
        '        if protected is not None and self.mode == "bypassPermissions":  # SABOTAGED',
        [*PB, "tests/test_agent.py"],
    ),
    Sabotage(
        "read-only Bash ignores Read deny rules (cat secrets/key runs unasked)",
        "src/agentloop/agent/permissions.py",
        "denied = self._read_denied_argument(bash)",
        "denied = False  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "Bash naming a protected path (> .agentloop/settings.local.json) runs unasked in bypass",
        "src/agentloop/agent/permissions.py",
        "named = self._bash_protected(bash)",
        "named = None  # SABOTAGED",
        PB,
    ),
    Sabotage(
        "read-only Bash ignores redirections that write files",
        "src/agentloop/agent/permissions.py",
        "if any(_writes(op, target) for op, target in simple.redirects):",
        "if False:  # SABOTAGED",
        PB,
    ),
]


def run_tests(tree: str, tests: list[str], verbose: bool) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=tree, env=env, capture_output=True, text=True, timeout=900,
    )
    tail = [ln for ln in proc.stdout.splitlines() if ln.strip()][-1:] or ["(no output)"]
    return proc.returncode, tail[0]


def copy_tree(dst: str) -> None:
    for name in ("src", "tests", "pyproject.toml"):
        s = os.path.join(ROOT, name)
        d = os.path.join(dst, name)
        if os.path.isdir(s):
            shutil.copytree(s, d, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(s, d)


def main() -> int:
    verbose = "-v" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[:-1] else None
    sabotages = [s for s in SABOTAGES if only is None or only in s.name or only in s.path]
    all_caught = True
    with tempfile.TemporaryDirectory(prefix="agentloop-neg-") as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(clean)
        tests = sorted({t for s in sabotages for t in s.tests})
        code, tail = run_tests(clean, tests, verbose)
        print(f"control (untouched copy): exit {code}: {tail}")
        if code != 0:
            print("the untouched copy fails: fix the suite first")
            return 2
        for i, sab in enumerate(sabotages):
            tree = os.path.join(tmp, f"sab{i}")
            copy_tree(tree)
            target = os.path.join(tree, sab.path)
            with open(target, encoding="utf-8") as f:
                text = f.read()
            if sab.old is None:
                text += sab.new
            else:
                if sab.old not in text:
                    print(f"SABOTAGE STALE: {sab.name}: the guarded line is gone from {sab.path}")
                    all_caught = False
                    continue
                text = text.replace(sab.old, sab.new)
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            code, tail = run_tests(tree, sab.tests, verbose)
            caught = code != 0
            all_caught &= caught
            print(f"{'caught ' if caught else 'MISSED '} {sab.name}: exit {code}: {tail}")
    print("every sabotage was caught" if all_caught else "SOME SABOTAGE WENT UNNOTICED")
    return 0 if all_caught else 1


if __name__ == "__main__":
    sys.exit(main())
