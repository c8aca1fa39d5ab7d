"""Read-only tools of one turn, in parallel, against the same calls one after another, in the same run.

    .venv/bin/python bench/bench_parallel.py [--calls 10] [--wait-ms 100] [--repeat 5]

A scripted model asks, in one turn, for ``--calls`` calls of a tool that waits
``--wait-ms`` (as an I/O-bound tool does: a file read, an HTTP request, an MCP
server). The baseline is the same run with the tool marked as writing, so the
driver runs the calls one after another. Prints the median wall time of each
and their ratio (target: >= 7x for 10 calls of 100 ms), for both drivers
(``run`` on threads, ``arun`` on the event loop), and checks the two
transcripts' tool results are identical.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop import Budget, MemoryTranscript, Tool, arun, run  # noqa: E402
from agentloop.testing import ScriptedModel, reply  # noqa: E402

SCHEMA = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}


def tools(wait_s: float, read_only: bool) -> list[Tool]:
    def wait_sync(i: int) -> int:
        time.sleep(wait_s)
        return i

    async def wait_async(i: int) -> int:
        await asyncio.sleep(wait_s)
        return i

    return [Tool("wait", "wait", SCHEMA, wait_sync, read_only=read_only),
            Tool("await", "await", SCHEMA, wait_async, read_only=read_only)]


def once(driver: str, calls: int, wait_s: float, read_only: bool) -> tuple[float, list[Any]]:
    name = "wait" if driver == "run" else "await"
    model = ScriptedModel([reply("", [(name, {"i": i}) for i in range(calls)], usage=(10, 10)), reply("ok", usage=(10, 10))])
    t = MemoryTranscript()
    began = time.perf_counter()
    if driver == "run":
        run(model, tools(wait_s, read_only), "go", Budget(max_steps=3), transcript=t)
    else:
        asyncio.run(arun(model, tools(wait_s, read_only), "go", Budget(max_steps=3), transcript=t))
    took = time.perf_counter() - began
    return took, [r.payload for r in t.records if r.kind == "tool_result"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--wait-ms", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    wait_s = args.wait_ms / 1000
    print(f"{args.calls} calls of {args.wait_ms} ms in one turn; median of {args.repeat} runs")
    worst = float("inf")
    for driver in ("run", "arun"):
        seq, par = [], []
        for _ in range(args.repeat):
            s, seq_results = once(driver, args.calls, wait_s, read_only=False)
            p, par_results = once(driver, args.calls, wait_s, read_only=True)
            assert seq_results == par_results, "parallel results differ from sequential ones"
            seq.append(s)
            par.append(p)
        ms, mp_ = statistics.median(seq), statistics.median(par)
        ratio = ms / mp_
        worst = min(worst, ratio)
        print(f"  {driver:<5} one after another (baseline): {ms * 1000:7.1f} ms   in parallel: {mp_ * 1000:6.1f} ms   "
              f"speed-up {ratio:4.1f}x")
    print(f"worst speed-up {worst:.1f}x (target >= 7x): {'ok' if worst >= 7 else 'BELOW TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
