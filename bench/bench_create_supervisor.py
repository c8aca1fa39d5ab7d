#!/usr/bin/env python3
"""What the creation supervisor costs: N folders and N files made in the real sandbox, supervised and not.

A program inside the sandbox (the workspace, ``workspace-write``) makes ``d0 .. dN-1`` and a file in each
(``mkdir``, then ``open`` with ``O_CREAT``) and times its own loop, so the sandbox's start-up is left out. The
same sandbox is measured with the creation supervisor (record 0025: each of those calls is made by the
supervisor) and without it (``bubblewrap.SUPERVISE = False``: the kernel makes them), alternating, in the same
run, and the ratio printed.

    PYTHONPATH=src .venv/bin/python bench/bench_create_supervisor.py [--n 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from agentloop.agent.sandbox import bubblewrap as sbx

WORK = ("import os, time\n"
        "n = int(os.environ['N'])\n"
        "t = time.perf_counter()\n"
        "for i in range(n):\n"
        "    os.mkdir('d%d' % i)\n"
        "    os.close(os.open('d%d/f' % i, os.O_CREAT | os.O_WRONLY, 0o644))\n"
        "print(time.perf_counter() - t)\n")


def once(n: int, supervised: bool) -> float:
    sbx.SUPERVISE = supervised
    base = tempfile.mkdtemp(prefix="agentloop-bench-create-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
    ws = os.path.join(base, "ws")
    os.mkdir(ws)
    home = sbx.user_home_of(os.environ)
    try:
        settings = sbx.settings_from([], mode=None, cwd=ws, user_home=home)
        sb = sbx.Sandbox.create(settings, roots=[ws], agentloop_home=os.path.join(base, "al"), user_home=home)
        sb.use_runner = False
        assert sb.active, sb.unavailable
        with open(os.path.join(ws, "work.py"), "w") as f:
            f.write(WORK)
        cmd = f"{sys.executable} work.py"
        argv, extra = sb.wrap(["/bin/sh", "-c", cmd], ws, cmd)
        p = subprocess.run(argv, cwd=ws, env={**os.environ, **extra, "N": str(n)}, capture_output=True, text=True, timeout=600)
        sb.close()
        assert p.returncode == 0, p.stderr
        assert "refused" not in p.stderr, p.stderr
        return float(p.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(base, ignore_errors=True)
        sbx.SUPERVISE = True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000, help="folders (and as many files)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    plain: list[float] = []
    supervised: list[float] = []
    for _ in range(args.rounds):
        plain.append(once(args.n, False))
        supervised.append(once(args.n, True))
    per = 1e6 / (2 * args.n)
    mp, ms = statistics.median(plain), statistics.median(supervised)
    print(f"{args.n} folders + {args.n} files, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"  plain (the kernel makes them):  median {mp:.3f} s ({mp * per:.1f} us a creation)")
    print(f"  supervised (record 0025):       median {ms:.3f} s ({ms * per:.1f} us a creation)")
    print(f"  ratio supervised/plain: {ms / mp:.1f}")


if __name__ == "__main__":
    main()
