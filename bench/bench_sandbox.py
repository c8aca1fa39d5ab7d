#!/usr/bin/env python3
"""The cost of the Bash sandbox per call, and of output redaction per KB, in the same run.

Bash calls go through the built-in Bash tool exactly as the agent runs them
(``builtin_registry`` with the agent's ``Sandbox``, child environment and
``Redactor``), alternating sandboxed and unsandboxed calls so that both see
the same machine load:

- trivial: ``true``, sandboxed (workspace-write: the session's bubblewrap,
  each command forked inside it by the runner) against
  unsandboxed (danger-full-access); the difference is the sandbox's cost per
  call (target: under 30 ms);
- 100 ms: ``sleep 0.1``, the same two ways; the difference as a share of the
  unsandboxed time (target: under 5%).

For comparison it also times a bubblewrap started for each call (what the
agent falls back to when the session's runner cannot start).

Redaction: ``Redactor.text`` over tool output of 1, 64 and 1024 KB holding no
secret and holding one, with the secrets of a typical environment (20
values), in microseconds per KB.

    .venv/bin/python bench/bench_sandbox.py [--calls 40]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop.agent.sandbox.bubblewrap import Sandbox, probe, settings_from  # noqa: E402
from agentloop.agent.sandbox.child_env import Redactor, child_env  # noqa: E402
from agentloop.agent.tools.catalog import builtin_registry  # noqa: E402
from agentloop.agent.tools.workspace import Workspace  # noqa: E402
from agentloop.events import ToolCall  # noqa: E402


def _timed_calls(regs: dict[str, object], command: str, n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in regs}
    for i in range(n + 2):
        for name, reg in regs.items():
            t0 = time.perf_counter()
            r = reg.invoke(ToolCall(f"c{i}", "Bash", {"command": command}))  # type: ignore[attr-defined]
            dt = time.perf_counter() - t0
            assert r.ok, r.error
            if i >= 2:  # warm-up
                times[name].append(dt)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()
    path, why = probe()
    if path is None:
        print(f"no sandbox here: {why}")
        return 1
    tmp = tempfile.mkdtemp(prefix="bench-sandbox-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
    try:
        ws_dir = os.path.join(tmp, "ws")
        home = os.path.join(tmp, "home")
        os.makedirs(ws_dir)
        os.makedirs(home)
        env = child_env(os.environ)
        red = Redactor({f"VAR{i}_TOKEN": f"secret-value-{i:04d}-abcdefgh" for i in range(20)})
        regs = {}
        boxes = []
        for name, mode in (("sandboxed", "workspace-write"), ("per-call bwrap", "workspace-write"),
                           ("unsandboxed", "danger-full-access")):
            st = settings_from([], mode=mode, cwd=ws_dir, user_home=os.environ.get("HOME", "/"))
            box = Sandbox.create(st, roots=[ws_dir], agentloop_home=home, user_home=os.environ.get("HOME", "/"))
            box.use_runner = name != "per-call bwrap"
            boxes.append(box)
            regs[name] = builtin_registry(Workspace(ws_dir), spill_dir=os.path.join(tmp, "spill"), sandbox=box,
                                          env=env, redact=red.text)
        print(f"bubblewrap: {path}; {args.calls} calls each, alternating")
        for label, cmd in (("trivial (true)", "true"), ("100 ms (sleep 0.1)", "sleep 0.1")):
            t = _timed_calls(regs, cmd, args.calls)
            sb, un, pc = (statistics.median(t[k]) for k in ("sandboxed", "unsandboxed", "per-call bwrap"))
            print(f"{label:<20} sandboxed {sb * 1000:7.2f} ms   unsandboxed {un * 1000:7.2f} ms   "
                  f"cost {(sb - un) * 1000:6.2f} ms/call   ratio {sb / un:5.3f}   (+{(sb - un) / un:.1%})"
                  f"   [a bubblewrap per call: {pc * 1000:7.2f} ms, +{(pc - un) * 1000:.2f} ms]")
        print(f"one sandbox per session (runner): {boxes[0].use_runner}")
        for b in boxes:
            b.close()
        line = "2024-01-01 12:00:00 INFO build step finished in 0.42 s, 17 files changed, nothing to report\n"
        for kb in (1, 64, 1024):
            clean = (line * (kb * 1024 // len(line) + 1))[: kb * 1024]
            dirty = clean[: len(clean) // 2] + "secret-value-0007-abcdefgh" + clean[len(clean) // 2:]
            for what, text in (("no secret", clean), ("one secret", dirty)):
                reps = max(9, 2000 // kb)
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    red.text(text)
                    ts.append(time.perf_counter() - t0)
                dt = statistics.median(ts)
                print(f"redaction {kb:>5} KB, {what:<10} {dt * 1e6:9.1f} us   {dt * 1e6 / kb:7.2f} us/KB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
