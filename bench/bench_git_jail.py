#!/usr/bin/env python3
"""The cost of running agentloop's own git in the git jail (decision 0013), and of the restart without the keys.

- one git call: ``git rev-parse HEAD`` through ``spawn.git`` (in the jail)
  against plain git, alternated so both see the same load;
- the session-start snapshot (``git_snapshot``: status and log);
- ``agentloop --version`` with a provider key in the environment (the
  command restarts itself without it) against without one.

    .venv/bin/python bench/bench_git_jail.py [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _ms(f, n: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    n = ap.parse_args().calls
    from agentloop.agent import spawn
    from agentloop.agent.system_prompt import git_snapshot

    with tempfile.TemporaryDirectory() as d:
        for args in (["init", "-q"], ["-c", "user.email=b@e", "-c", "user.name=b", "commit", "-q", "--allow-empty", "-m", "x"]):
            subprocess.run(["git", *args], cwd=d, check=True)
        spawn.git(["status"], cwd=d)
        jailed = _ms(lambda: spawn.git(["rev-parse", "HEAD"], cwd=d), n)
        plain = _ms(lambda: subprocess.run(["git", "rev-parse", "HEAD"], cwd=d, capture_output=True), n)
        snap = _ms(lambda: git_snapshot(d, dict(os.environ)), n)
    print(f"git rev-parse: {jailed:.1f} ms in the jail, {plain:.1f} ms plain (median of {n})")
    print(f"git_snapshot (session start): {snap:.1f} ms")
    cmd = [sys.executable, "-m", "agentloop", "--version"]
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    with_key = _ms(lambda: subprocess.run(cmd, env={**base, "ANTHROPIC_API_KEY": "sk-bench"}, capture_output=True), n // 2 or 1)
    without = _ms(lambda: subprocess.run(cmd, env=base, capture_output=True), n // 2 or 1)
    print(f"agentloop --version: {with_key:.0f} ms with a key (restarted without it), {without:.0f} ms without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
