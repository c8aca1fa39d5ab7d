"""Cold start of ``agentloop --version`` and ``agentloop --help`` against ``python3 -c pass``.

Each command runs as a new process (the interpreter and the package load
from scratch; the OS file cache is warm, as it is for a person typing).
The three commands are interleaved round by round so that machine load hits
them alike. Two figures per command, each the median of the rounds: the wall
time, and the CPU time (user + system, from the child's rusage), which the
load of other processes on a shared machine disturbs much less. Target: each
agentloop command at most 5x ``python3 -c pass``.

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

# As installed: bytecode is cached (pip compiles it). A shell that sets
# PYTHONDONTWRITEBYTECODE would make every start compile every module.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} exited {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime


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
    for c in cmds.values():  # warm the file cache and write the bytecode
        timed(c)
    wall: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(a.rounds):
        for k, c in cmds.items():
            w, u = timed(c)
            wall[k].append(w)
            cpu[k].append(u)
    base_w = statistics.median(wall["python3 -c pass"])
    base_c = statistics.median(cpu["python3 -c pass"])
    worst_w = worst_c = 0.0
    print(f"{'command':<22} {'wall':>9} {'ratio':>7} {'cpu':>9} {'ratio':>7}")
    for k in cmds:
        mw, mc = statistics.median(wall[k]), statistics.median(cpu[k])
        rw, rc = mw / base_w, mc / base_c
        if k != "python3 -c pass":
            worst_w, worst_c = max(worst_w, rw), max(worst_c, rc)
        print(f"{k:<22} {mw * 1000:7.1f}ms {rw:6.2f}x {mc * 1000:7.1f}ms {rc:6.2f}x")
    ok = worst_c <= TARGET
    print(f"worst ratio: {worst_w:.2f}x wall, {worst_c:.2f}x cpu ({a.rounds} rounds, medians); "
          f"{'meets' if ok else 'MISSES'} the target of {TARGET:.0f}x by CPU time"
          f"{'' if worst_w <= TARGET else ' (wall time over it: machine load)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
