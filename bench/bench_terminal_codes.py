"""Bytes a coloured test run costs the model, with and without its escape codes.

A project whose pytest configuration forces colour (``addopts = "--color=yes"``)
prints its results with SGR codes around every status word. This bench makes
such a project (TESTS passing tests, ``-v`` so every test has its own coloured
line), runs the real pytest in it once, and measures what the Bash tool sends the
model: the raw output's bytes against the bytes after ``strip_terminal_codes``.

It also times the stripping at n, 2n and 4n copies of that output, against a
baseline measured in the same run on the same bytes (``str.replace`` of a
character that is not there: one pass that changes nothing), and prints the
ratios. Targets: at least 10 % of the raw bytes saved on the coloured run, and
stripping linear (the 4n/n time ratio within 1.5x of the baseline's).

    .venv/bin/python bench/bench_terminal_codes.py [--tests 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

SAVED_TARGET = 0.10
LINEAR_SLACK = 1.5


def _coloured_run(tests: int) -> str:
    with tempfile.TemporaryDirectory(prefix="al-bench-codes-") as root:
        with open(os.path.join(root, "pyproject.toml"), "w") as f:
            f.write('[tool.pytest.ini_options]\naddopts = "--color=yes -v -p no:cacheprovider"\n')
        with open(os.path.join(root, "test_many.py"), "w") as f:
            f.write(f"import pytest\n\n@pytest.mark.parametrize('n', range({tests}))\ndef test_n(n):\n    assert n >= 0\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NO_COLOR", "FORCE_COLOR"))}
        p = subprocess.run([sys.executable, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
        return p.stdout + p.stderr


def _best(fn: Callable[[str], str], text: str, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    from agentloop.agent.tools.terminal_codes import strip_terminal_codes

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", type=int, default=200)
    args = ap.parse_args()
    raw = _coloured_run(args.tests)
    plain = strip_terminal_codes(raw)
    rb, pb = len(raw.encode()), len(plain.encode())
    saved = 1 - pb / rb
    print(f"coloured pytest run, {args.tests} tests: {rb} bytes raw, {pb} bytes to the model ({saved:.1%} saved)")
    assert "\x1b" in raw, "pytest printed no colour: the bench measures nothing"

    def baseline(t: str) -> str:
        return t.replace("\x00", "")

    rows = []
    for k in (8, 16, 32):
        text = raw * k
        rows.append((k, _best(strip_terminal_codes, text), _best(baseline, text)))
    print(f"{'copies':>7} {'strip ms':>9} {'baseline ms':>12}")
    for k, s, b in rows:
        print(f"{k:>7} {s * 1000:>9.2f} {b * 1000:>12.2f}")
    strip_growth, base_growth = rows[-1][1] / rows[0][1], rows[-1][2] / rows[0][2]
    print(f"time at 4n / n: strip {strip_growth:.2f}x, baseline {base_growth:.2f}x (ratio {strip_growth / base_growth:.2f})")
    ok = saved >= SAVED_TARGET and strip_growth <= base_growth * LINEAR_SLACK
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
