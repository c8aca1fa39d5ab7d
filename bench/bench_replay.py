"""Replay speed in full mode against the original run's speed, measured in the same process.

The original: a scripted model makes N steps (default 10,000), each calling a
read-only tool whose arguments are validated, then answers; the transcript is
written to a file. The replay: ``replay(file, mode="full")``, which reads the
file, drives the same loop from it, writes the new transcript in memory,
compares it byte for byte (and so verifies the original). Both figures are
records per second; the target is a ratio >= 1.0 (replay no slower).

The two are measured in turns (original, replay, original, replay...). Each
replay is compared with the original just before it, so that the machine's
drift (a third within minutes here) falls on both sides of a ratio; the
verdict is the median of these paired ratios, by CPU time of this process.
The best of each side, and wall time, are printed beside it.

    .venv/bin/python bench/bench_replay.py [--steps N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time

from agentloop import Budget, TranscriptWriter, run
from agentloop.demo import demo_tools
from agentloop.replay import replay
from agentloop.testing import ScriptedModel, reply


def original(path: str, steps: int) -> tuple[float, float, int]:
    script = [reply("", [("echo", {"text": f"step {i}"})], usage=(100 + i % 7, 10), step=i) for i in range(1, steps + 1)]
    script.append(reply("done", usage=(100, 2)))
    model = ScriptedModel(script)
    tools = demo_tools()
    if os.path.exists(path):
        os.remove(path)
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    with TranscriptWriter(path) as w:
        res = run(model, tools, "Echo many times.", Budget(max_steps=steps + 1), transcript=w)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    assert res.stop_reason == "no_tool_calls" and res.steps == steps + 1, res
    return dt, dc, res.records


def replayed(path: str) -> tuple[float, float, int]:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    r = replay(path, mode="full")
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    assert r.equal, r.summary(path)
    return dt, dc, r.records


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5, help="pairs (original, replay) measured")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.jsonl")
        origs, reps = [], []
        for _ in range(a.repeat):
            origs.append(original(path, a.steps))
            reps.append(replayed(path))
    n = origs[0][2]
    assert all(x[2] == n for x in origs + reps)
    wo, co = min(x[0] for x in origs), min(x[1] for x in origs)
    wr, cr = min(x[0] for x in reps), min(x[1] for x in reps)
    print(f"transcript: {a.steps} steps, {n} records (best of {a.repeat}, measured in turns)")
    print(f"{'':52} {'CPU s':>8} {'records/s':>11} {'wall s':>8} {'records/s':>11}")
    print(f"{'original run (scripted model, tools, file written)':52} {co:8.3f} {n / co:11,.0f} {wo:8.3f} {n / wo:11,.0f}")
    print(f"{'full replay (read, re-derive, compare)':52} {cr:8.3f} {n / cr:11,.0f} {wr:8.3f} {n / wr:11,.0f}")
    paired = sorted(o[1] / r[1] for o, r in zip(origs, reps))
    ratio = statistics.median(paired)
    print(f"paired ratios (CPU, original / replay): {', '.join(f'{x:.2f}' for x in paired)}")
    print(f"replay / original speed: {ratio:.2f}x by CPU time, median of {len(paired)} pairs "
          f"({co / cr:.2f}x best to best, {wo / wr:.2f}x by wall time) "
          f"(target >= 1.00: {'met' if ratio >= 1 else 'NOT met'})")
    return 0 if ratio >= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
