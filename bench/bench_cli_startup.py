"""Cold start of the command against ``python3 -c pass``, measured side by side.

Each command runs as a new process (the interpreter and the package load
from scratch; the OS file cache is warm, as it is for a person typing).
The commands are interleaved round by round so that machine load hits
them alike. Two figures per command, each the median of the rounds: the wall
time, and the CPU time (user + system, from the child's rusage), which the
load of other processes on a shared machine disturbs much less. Targets, as
ratios to ``python3 -c pass``:

- ``import agentloop``: at most 4x
- ``agentloop --version`` and ``--help``: at most 5x
- ``agentloop -p hi`` on the scripted model (a whole answer: settings, the
  agent's tools and their fingerprints, a session written and closed): at most 15x

The ``-p`` run is timed warm, as a user meets it: its first run (outside the
rounds) fills the tools' source cache under the agentloop home (a temporary
one here), as a user's first run does.

    .venv/bin/python bench/bench_cli_startup.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS = {"import agentloop": 4.0, "agentloop --version": 5.0, "agentloop --help": 5.0, "agentloop -p hi (scripted)": 15.0}

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
    work = tempfile.mkdtemp(prefix="bench-startup-")
    replies = os.path.join(work, "replies.json")
    with open(replies, "w") as f:
        f.write('[{"text": "hello"}]')
    ENV["AGENTLOOP_HOME"] = os.path.join(work, "home")
    ENV["HOME"] = work
    os.chdir(work)
    cmds = {
        "python3 -c pass": [py, "-c", "pass"],
        "import agentloop": [py, "-c", "import agentloop"],
        "agentloop --version": [exe, "--version"],
        "agentloop --help": [exe, "--help"],
        "agentloop -p hi (scripted)": [exe, "-p", "hi", "--model", f"scripted:{replies}", "--max-usd", "1"],
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
    ok = True
    print(f"{'command':<28} {'wall':>9} {'ratio':>7} {'cpu':>9} {'ratio':>7} {'target':>7}")
    for k in cmds:
        mw, mc = statistics.median(wall[k]), statistics.median(cpu[k])
        rw, rc = mw / base_w, mc / base_c
        target = TARGETS.get(k)
        verdict = ""
        if target is not None:
            met_wall, met_cpu = rw <= target, rc <= target
            ok = ok and met_cpu
            verdict = f"{target:5.0f}x " + ("meets" if met_wall else "wall over (cpu " + ("meets)" if met_cpu else "MISSES)"))
        print(f"{k:<28} {mw * 1000:7.1f}ms {rw:6.2f}x {mc * 1000:7.1f}ms {rc:6.2f}x {verdict}")
    print(f"({a.rounds} rounds, medians; the verdict is by wall time, and by CPU time where load pushes wall over)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
