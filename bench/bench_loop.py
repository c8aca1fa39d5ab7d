#!/usr/bin/env python3
"""Loop overhead: µs per step of agentloop vs a plain-Python chain writer, same run.

agentloop: the scripted model asks for a trivial validated tool every turn;
the transcript is written to a file without fsync (run_start, then per step a
model_turn, a budget and a tool_result record, then stop).

baseline: a plain loop that writes the same three records per step as a
SHA-256 chain with ``json.dumps(sort_keys=True)``, the way a hand-written
logger would.

Targets: agentloop <= 3x the baseline at 1,000 steps, and per-step
cost at 10,000 steps within 1.5x of the cost at 100.

    .venv/bin/python bench/bench_loop.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop import Budget, run, tool  # noqa: E402
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage  # noqa: E402
from agentloop.transcript import TranscriptWriter  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Counter:
    name = "scripted"

    def __init__(self, steps: int):
        self.left = steps
        self.n = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        self.n += 1
        if self.n > self.left:
            return ModelReply("done", usage=Usage(10, 2))
        return ModelReply("", (ToolCall(f"c{self.n}", "add", {"a": self.n, "b": 1}),), usage=Usage(10, 2))


def agentloop_us_per_step(steps: int, path: str) -> float:
    if os.path.exists(path):
        os.remove(path)
    model = Counter(steps)
    gc.collect()
    t0 = time.perf_counter()
    with TranscriptWriter(path) as w:
        r = run(model, [add], "count", Budget(max_steps=steps + 1), transcript=w)
    dt = time.perf_counter() - t0
    assert r.steps == steps + 1, r
    return dt / steps * 1e6


def baseline_us_per_step(steps: int, path: str) -> float:
    gc.collect()
    t0 = time.perf_counter()
    prev = "0" * 64
    seq = 0
    with open(path, "wb") as f:
        def write(kind: str, payload: object) -> None:
            nonlocal prev, seq
            body = json.dumps({"kind": kind, "payload": payload, "prev": prev, "seq": seq}, sort_keys=True, separators=(",", ":"))
            h = hashlib.sha256(body.encode()).hexdigest()
            f.write(('{"hash":"' + h + '",' + body[1:] + "\n").encode())
            f.flush()
            prev, seq = h, seq + 1

        write("run_start", {"model": "scripted", "messages": [{"role": "user", "content": "count"}]})
        total = 0
        for i in range(1, steps + 1):
            args = {"a": i, "b": 1}
            write("model_turn", {"step": i, "reply": {"text": "", "tool_calls": [{"id": f"c{i}", "name": "add", "arguments": args}],
                                                      "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0}},
                                 "usage_estimated": False})
            total += 14
            write("budget", {"step": i, "reserved_micros": 8200, "cost_micros": 14, "spent_micros": total, "tokens": 12 * i})
            write("tool_result", {"step": i, "call_id": f"c{i}", "name": "add", "ok": True, "content": args["a"] + args["b"]})
        write("stop", {"reason": "no_tool_calls", "steps": steps})
    return (time.perf_counter() - t0) / steps * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="best of N for each figure")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.jsonl")
        rows = {}
        for steps in (100, 1_000, 10_000):
            reps = args.repeat if steps < 10_000 else max(2, args.repeat // 2)
            a = min(agentloop_us_per_step(steps, p) for _ in range(reps))
            b = min(baseline_us_per_step(steps, p) for _ in range(reps))
            rows[steps] = (a, b)
    print(f"{'steps':>7} {'agentloop µs/step':>18} {'baseline µs/step':>17} {'ratio':>6}")
    for steps, (a, b) in rows.items():
        print(f"{steps:>7} {a:>18.1f} {b:>17.1f} {a / b:>6.2f}x")
    r1000 = rows[1_000][0] / rows[1_000][1]
    growth = rows[10_000][0] / rows[100][0]
    print(f"ratio to baseline at 1,000 steps: {r1000:.2f}x (target <= 3x): {'ok' if r1000 <= 3 else 'MISSED'}")
    print(f"per-step cost at 10,000 vs 100 steps: {growth:.2f}x (target <= 1.5x): {'ok' if growth <= 1.5 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
