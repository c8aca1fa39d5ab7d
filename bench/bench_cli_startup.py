"""Cold start of ``agentloop --version`` and ``agentloop --help`` against ``python3 -c pass``.

Each command runs as a new process (the interpreter and the package load
from scratch; the OS file cache is warm, as it is for a person typing).
The three commands are interleaved round by round so that machine load hits
them alike; the figure is the median of the rounds, with the minimum beside
it. Target: each agentloop command at most 5x ``python3 -c pass``.

    .venv/bin/python bench/bench_cli_startup.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TARGET = 5.0


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    py = sys.executable
    exe = os.path.join(os.path.dirname(py), "agentloop")
    cmds = {
        "python3 -c pass": [py, "-c", "pass"],
        "agentloop --version": [exe, "--version"],
        "agentloop --help": [exe, "--help"],
    }
    for c in cmds.values():  # warm the file cache and the bytecode
        timed(c)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(a.rounds):
        for k, c in cmds.items():
            times[k].append(timed(c))
    base = statistics.median(times["python3 -c pass"])
    base_min = min(times["python3 -c pass"])
    worst = 0.0
    print(f"{'command':<22} {'median':>9} {'min':>9} {'ratio (median)':>15} {'ratio (min)':>12}")
    for k, ts in times.items():
        med, lo = statistics.median(ts), min(ts)
        ratio = med / base
        if k != "python3 -c pass":
            worst = max(worst, ratio)
        print(f"{k:<22} {med * 1000:8.1f}ms {lo * 1000:8.1f}ms {ratio:14.2f}x {lo / base_min:11.2f}x")
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"worst ratio {worst:.2f}x: {verdict} the target of {TARGET:.0f}x ({a.rounds} rounds)")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
