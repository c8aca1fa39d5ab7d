"""What the Merkle tree, proofs and anchors cost, each against a baseline measured in the same run.

1. Append: records appended to a ``TranscriptWriter`` with an incremental
   ``MerkleTree`` listener against the same records without it, in turns (best
   of --repeat). Prints µs per record for both and the ratio.
2. Proofs at --records (default 1,000,000) records: generating an inclusion
   proof and a consistency proof (each one streaming pass over the file)
   against a plain ``verify_file`` pass over the same file, and checking each
   proof (microseconds: log n hashes).
3. Anchor verify against plain verify on the same file: equal size, and a file
   grown past the anchor (checked by consistency proof).

Times are CPU seconds of this process (other work on a shared machine does not
inflate them); wall time is printed beside.

    .venv/bin/python bench/bench_merkle.py [--records N] [--append N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from agentloop.audit.anchor import anchor_file, verify_with_anchor
from agentloop.audit.merkle import (
    MerkleTree,
    consistency_proof,
    inclusion_proof,
    iter_leaves,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from agentloop.transcript import GENESIS, TranscriptWriter, make_line, verify_file


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - t0, out


def payload(i: int) -> dict[str, Any]:
    """A model_turn-sized record (about 400 bytes of JSON)."""
    return {
        "step": i,
        "reply": {"text": f"step {i}: reading the file and deciding what to do next", "tool_calls": [
            {"id": f"call_{i}", "name": "read", "arguments": {"path": f"src/module_{i % 97}.py", "limit": 200}}],
            "usage": {"input_tokens": 1200 + i % 13, "output_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0}},
        "usage_estimated": False,
    }


def bench_append(d: str, n: int, repeat: int) -> None:
    payloads = [payload(i) for i in range(n)]

    def write(with_tree: bool) -> None:
        p = os.path.join(d, "append.jsonl")
        if os.path.exists(p):
            os.remove(p)
        with TranscriptWriter(p) as w:
            if with_tree:
                w.listeners.append(MerkleTree())
            for pl in payloads:
                w.append("model_turn", pl)

    plain, tree = [], []
    for _ in range(repeat):
        plain.append(timed(lambda: write(False))[:2])
        tree.append(timed(lambda: write(True))[:2])
    bp, bt = min(plain), min(tree)
    us_p, us_t = bp[0] / n * 1e6, bt[0] / n * 1e6
    print(f"append ({n} records of ~400 B, best of {repeat}, CPU):")
    print(f"  without the tree  {us_p:8.2f} µs/record   (wall {bp[1] / n * 1e6:.2f})")
    print(f"  with the tree     {us_t:8.2f} µs/record   (wall {bt[1] / n * 1e6:.2f})")
    print(f"  the tree costs    {us_t - us_p:8.2f} µs/record   ratio {us_t / us_p:.3f}x the plain append")


def make_big(path: str, n: int) -> None:
    prev = GENESIS
    with open(path, "wb") as f:
        buf = []
        for i in range(n):
            prev, line = make_line(i, prev, "note", {"i": i, "text": "x" * 40})
            buf.append(line)
            if len(buf) == 10_000:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))


def bench_proofs(d: str, n: int, repeat: int) -> None:
    path = os.path.join(d, "big.jsonl")
    t0 = time.perf_counter()
    make_big(path, n)
    size_mb = os.path.getsize(path) / 1e6
    print(f"\nproofs at {n} records ({size_mb:.0f} MB, written in {time.perf_counter() - t0:.1f} s):")
    c_anchor, w_anchor, anchor = timed(lambda: anchor_file(path))
    # plain verify and anchor verify in turns, best of each: the machine is shared
    verifies, anchored = [], []
    for _ in range(repeat):
        c, w, rep = timed(lambda: verify_file(path))
        assert rep.ok and rep.count == n
        verifies.append((c, w))
        c, w, r = timed(lambda: verify_with_anchor(path, anchor))
        assert r.ok and r.consistency == "equal"
        anchored.append((c, w))
    c_verify, w_verify = min(verifies)
    c_av, w_av = min(anchored)

    def incl() -> Any:
        with open(path, "rb") as f:
            return inclusion_proof(iter_leaves(f), n // 3, n)

    def cons() -> Any:
        with open(path, "rb") as f:
            return consistency_proof(iter_leaves(f), n // 2, n)

    c_incl, w_incl, (data, ipath, root) = timed(incl)
    c_cons, w_cons, (cpath, r1, r2) = timed(cons)
    reps = 1000
    c_ichk, _, _ = timed(lambda: [verify_inclusion(n // 3, n, leaf_hash(data), ipath, root) for _ in range(reps)])
    c_cchk, _, _ = timed(lambda: [verify_consistency(n // 2, n, r1, r2, cpath) for _ in range(reps)])
    print(f"  baseline: verify_file             {c_verify:7.2f} s CPU (wall {w_verify:.2f})")
    print(f"  inclusion proof, record {n // 3}: {c_incl:7.2f} s CPU (wall {w_incl:.2f})  = {c_incl / c_verify:.2f}x verify; {len(ipath)} hashes")
    print(f"  consistency proof from {n // 2}:  {c_cons:7.2f} s CPU (wall {w_cons:.2f})  = {c_cons / c_verify:.2f}x verify; {len(cpath)} hashes")
    print(f"  checking the inclusion proof      {c_ichk / reps * 1e6:7.1f} µs")
    print(f"  checking the consistency proof    {c_cchk / reps * 1e6:7.1f} µs")

    print(f"\nanchor verify against plain verify ({n} records, best of {repeat} in turns):")
    print(f"  plain verify                      {c_verify:7.2f} s CPU")
    print(f"  anchor the file                   {c_anchor:7.2f} s CPU = {c_anchor / c_verify:.2f}x")
    print(f"  verify with the anchor            {c_av:7.2f} s CPU = {c_av / c_verify:.2f}x (wall {w_av:.2f})")
    half = os.path.join(d, "half.jsonl")
    with open(path, "rb") as src, open(half, "wb") as dst:
        for i, line in enumerate(src):
            if i == n // 2:
                break
            dst.write(line)
    old = anchor_file(half)
    os.remove(half)
    c_grow, w_grow, r = timed(lambda: verify_with_anchor(path, old))
    assert r.ok and r.consistency == "proved"
    print(f"  grown file, anchor at {n // 2}:   {c_grow:7.2f} s CPU = {c_grow / c_verify:.2f}x (consistency proof checked; wall {w_grow:.2f})")
    os.remove(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--append", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-merkle-") as d:
        bench_append(d, args.append, args.repeat)
        bench_proofs(d, args.records, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
