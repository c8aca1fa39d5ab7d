#!/usr/bin/env python3
"""Verify throughput on a 100,000-record transcript against the floor, same run.

floor: SHA-256 of every line plus ``json.loads`` of every line, the least any
verifier that parses and hashes must do. agentloop's ``verify_file`` also
checks the canonical form, the chain and every field.

Target (issue 2): verify at >= 70% of the floor's throughput.

    .venv/bin/python bench/bench_verify.py [--records 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop.transcript import TranscriptWriter, verify_file  # noqa: E402


def build(path: str, n: int) -> None:
    with TranscriptWriter(path) as w:
        for i in range(n):
            kind = ("model_turn", "budget", "tool_result")[i % 3]
            w.append(kind, {
                "step": i // 3,
                "reply": {"text": f"thinking about step {i}", "tool_calls": [{"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": 1}}]},
                "usage": {"input_tokens": 100 + i, "output_tokens": 20},
                "content": "x" * 200,
            })


def floor(path: str) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            hashlib.sha256(line).digest()
            json.loads(line)
    return time.perf_counter() - t0


def ours(path: str, n: int) -> float:
    t0 = time.perf_counter()
    report = verify_file(path)
    dt = time.perf_counter() - t0
    assert report.ok and report.count == n, report.problems[:3]
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.jsonl")
        build(p, args.records)
        mb = os.path.getsize(p) / 1e6
        f = min(floor(p) for _ in range(args.repeat))
        o = min(ours(p, args.records) for _ in range(args.repeat))
    n = args.records
    print(f"transcript: {n} records, {mb:.1f} MB")
    print(f"floor (sha256 + json.loads): {n / f:>10,.0f} records/s {mb / f:7.1f} MB/s")
    print(f"agentloop verify_file:       {n / o:>10,.0f} records/s {mb / o:7.1f} MB/s")
    share = f / o
    print(f"verify at {share:.0%} of the floor (target >= 70%): {'ok' if share >= 0.7 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
