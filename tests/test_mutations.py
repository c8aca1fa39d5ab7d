"""The mutation corpus: random single and double corruptions of demo transcripts.

Each corrupted file is checked by both verifiers (Python and the independent
Node one) against a signed anchor of the clean file. Every corruption must be
detected, at the right record, and the two verifiers must report the same
problems (index and kind) in the same order.

"The right record" is the first line where the corrupted file differs from the
clean one (or the first missing record), call it d. The first problem must be
at d, except in two cases where no verifier can say more:

- ``prev_mismatch`` at d + 1: record d was edited and its own hash recomputed,
  so the break shows in the link from d to d + 1 (the message names record d);
- ``anchor_mismatch`` over a range containing d: the whole chain from d on was
  re-forged, and the anchor's Merkle frontier narrows it to one range;
- a later problem ("cut"), when the chain was re-forged from d and the file also
  lost records inside the anchor's range that holds d, so that range cannot be
  compared at all: the first visible break is all any verifier can report.

The default run checks CORPUS_SIZE corruptions; AGENTLOOP_LONG=1 runs 10,000.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop.audit.anchor import (
    Anchor,
    anchor_file,
    sign_anchor,
    verify_with_anchor,
    write_anchor,
)
from agentloop.audit.merkle import MerkleTree
from agentloop.demo import run_demo
from agentloop.transcript import GENESIS, TranscriptWriter, make_line, read_records

ROOT = Path(__file__).resolve().parent.parent
NODE_VERIFIER = ROOT / "verifiers" / "node" / "agentloop-verify.mjs"
LONG = os.environ.get("AGENTLOOP_LONG") == "1"
CORPUS_SIZE = 10_000 if LONG else 1_200
CHUNK = 500


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed: the independent verifier runs in CI (see .ci/run)")
    return exe


# --- the clean transcripts ------------------------------------------------------------


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Anchor, list[bytes]]]:
    """The demo's transcripts, plus one long file of all their records chained together."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    d = tmp_path_factory.mktemp("bases")
    runs = run_demo(str(d / "demo"))
    paths = [Path(r.path) for r in runs]
    long_path = d / "long.jsonl"
    with TranscriptWriter(long_path) as w:
        for p in paths:
            for rec in read_records(p):
                w.append(rec.kind, rec.payload)
    paths.append(long_path)
    key = Ed25519PrivateKey.generate()
    from cryptography.hazmat.primitives import serialization

    pub = d / "key.pub"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    out = []
    for p in paths:
        anchor = sign_anchor(anchor_file(p), key)
        write_anchor(anchor, str(p) + ".anchor.json")
        out.append((p, anchor, p.read_bytes().splitlines(keepends=True)))
    return out


# --- corruptions --------------------------------------------------------------------------


def _edit_record(rng: random.Random, line: bytes) -> dict[str, Any]:
    rec = orjson.loads(line)
    how = rng.randrange(4)
    if how == 0:
        rec["kind"] = rec["kind"] + rng.choice(["_", "x", " "])
    elif how == 1:
        payload = rec["payload"]
        if isinstance(payload, dict) and payload:
            k = rng.choice(sorted(payload))
            payload[k] = rng.choice([None, 0, 1, "tampered", [], {"a": 1}, True, 2.5])
            if orjson.loads(line)["payload"] == payload:
                payload["tampered"] = rng.randrange(1 << 30)
        else:
            rec["payload"] = {"tampered": rng.randrange(1 << 30)}
    elif how == 2:
        rec["payload"] = {"replaced": True, "n": rng.randrange(1 << 30)}
    else:
        rec["payload"] = [rec["payload"], "appended"]
    return rec  # type: ignore[no-any-return]


def mutate_once(rng: random.Random, lines: list[bytes]) -> tuple[str, list[bytes]]:
    data = b"".join(lines)
    kinds = ["flip", "flip", "edit", "edit_rehash", "edit_rechain", "edit_seq", "edit_prev",
             "swap", "move", "delete", "truncate", "duplicate", "junk", "junk_line"]
    kind = rng.choice(kinds)
    n = len(lines)
    if n == 0:
        kind = "junk"
    k = rng.randrange(n) if n else 0
    if kind == "flip":
        pos = rng.randrange(len(data))
        mask = 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        b = bytearray(data)
        b[pos] ^= mask
        return kind, bytes(b).splitlines(keepends=True)
    if kind.startswith("edit") and not lines[k].endswith(b"\n"):
        kind = "flip_tail"
        b = bytearray(data)
        b[-1] ^= 1
        return kind, bytes(b).splitlines(keepends=True)
    if kind in ("edit", "edit_rehash", "edit_rechain", "edit_seq", "edit_prev"):
        try:
            orig = orjson.loads(lines[k])
        except orjson.JSONDecodeError:
            kind = "junk_line"
        else:
            if not isinstance(orig, dict) or set(orig) != {"seq", "prev", "kind", "payload", "hash"}:
                kind = "junk_line"
    if kind == "edit":
        rec = _edit_record(rng, lines[k])
        new = lines[:]
        new[k] = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS) + b"\n"
        return kind, new
    if kind in ("edit_rehash", "edit_seq", "edit_prev"):
        rec = _edit_record(rng, lines[k]) if kind == "edit_rehash" else orjson.loads(lines[k])
        if kind == "edit_seq":
            rec["seq"] = rec["seq"] + rng.choice([-2, -1, 1, 2, 100])
        if kind == "edit_prev":
            rec["prev"] = rng.choice([GENESIS, f"{rng.getrandbits(256):064x}"])
        try:
            _, line = make_line(rec["seq"], rec["prev"], rec["kind"], rec["payload"])
        except Exception:
            return kind, lines[:k] + lines[k + 1:]
        return kind, lines[:k] + [line] + lines[k + 1:]
    if kind == "edit_rechain":
        rec = _edit_record(rng, lines[k])
        new = lines[:k]
        prev = rec["prev"]
        for i in range(k, n):
            try:
                r = rec if i == k else orjson.loads(lines[i])
                digest, line = make_line(r["seq"], prev, r["kind"], r["payload"])
            except (orjson.JSONDecodeError, TypeError, KeyError, ValueError):
                new.extend(lines[i:])  # an earlier corruption: the forger stops here
                break
            new.append(line if lines[i].endswith(b"\n") else line[:-1])
            prev = digest
        return kind, new
    if kind == "swap" and n >= 2:
        i, j = sorted(rng.sample(range(n), 2))
        new = lines[:]
        new[i], new[j] = new[j], new[i]
        return kind, new
    if kind == "move" and n >= 2:
        new = lines[:]
        line = new.pop(k)
        new.insert(rng.randrange(n), line)
        return kind, new
    if kind == "delete":
        return kind, lines[:k] + lines[k + 1:]
    if kind == "truncate":
        if rng.random() < 0.5:
            return kind, lines[:k]
        cut = rng.randrange(len(data))
        return kind, data[:cut].splitlines(keepends=True)
    if kind == "duplicate":
        new = lines[:]
        new.insert(rng.randrange(k, n + 1), lines[k])
        return kind, new
    if kind == "junk_line":
        junk = rng.choice([b"{}", b"[]", b"null", b"\"x\"", b"{\"seq\":1}", b"", b"garbage", orjson.dumps({"hash": "0" * 64})])
        new = lines[:]
        new.insert(rng.randrange(n + 1), junk + b"\n")
        return kind, new
    # junk appended at the end, with or without a final newline
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if rng.random() < 0.5:
        junk += b"\n"
    joined = data if data.endswith(b"\n") or not data else data + b"\n"
    return "junk", (joined + junk).splitlines(keepends=True)


def first_difference(orig: list[bytes], new: list[bytes]) -> int | None:
    for i, (a, b) in enumerate(zip(orig, new)):
        if a != b:
            return i
    if len(orig) == len(new):
        return None
    return min(len(orig), len(new))


def make_corpus(bases: list[tuple[Path, Anchor, list[bytes]]], count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        bi = rng.randrange(len(bases))
        _, _, lines = bases[bi]
        double = rng.random() < 0.4
        kind1, new = mutate_once(rng, lines)
        kinds = [kind1]
        if double:
            kind2, new = mutate_once(rng, new)
            kinds.append(kind2)
        d = first_difference(lines, new)
        if d is None:
            continue  # the corruptions cancelled out: not a corruption
        cases.append({"base": bi, "kinds": kinds, "data": b"".join(new), "d": d})
    return cases


FORGERIES = ("edit_rechain", "edit_rehash")
"""Corruptions that recompute hashes, as a forger would: only these may be located by range or cut."""


def located(problems: list[dict[str, Any]], d: int, anchor_size: int, leaves: int, forged: bool = True) -> str | None:
    """How the first problem locates the corruption at d, or None when it does not."""
    first = problems[0]
    if first["index"] == d:
        return "exact"
    if first["index"] == d + 1 and any(p["index"] == d + 1 and p["kind"] == "prev_mismatch" for p in problems):
        return "link"
    if first["kind"] == "anchor_mismatch" and first["index"] <= d < first.get("end", -1):
        if forged:
            return "range"
        # Not a forgery: the chain itself must still pin the record down.
        inner = located(problems[1:], d, anchor_size, leaves, forged) if len(problems) > 1 else None
        return "range" if inner in ("exact", "link") else None
    if forged and first["index"] > d and leaves < anchor_size:
        # The chain was re-forged from d, and the file lost records (cut or
        # deleted) inside the anchor's frontier range that holds d: nothing the
        # anchor commits to is left to compare there, so the first thing anyone
        # can see is the chain's next break or the truncation.
        for a, b in MerkleTree.from_frontier(anchor_size, [b"\0" * 32] * bin(anchor_size).count("1")).subtree_ranges():
            if a <= d < b:
                return "cut" if b > leaves else None
    return None


def run_corpus(bases: list[tuple[Path, Anchor, list[bytes]]], cases: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    exe = node()
    pub = bases[0][0].parent / "key.pub"
    if not pub.exists():
        pub = bases[-1][0].parent / "key.pub"
    stats: Counter[str] = Counter()
    failures: list[str] = []
    widths: list[int] = []
    py_seconds = node_seconds = 0.0
    for start in range(0, len(cases), CHUNK):
        chunk = cases[start:start + CHUNK]
        jobs = []
        for i, case in enumerate(chunk):
            p = work / f"case-{start + i}.jsonl"
            p.write_bytes(case["data"])
            base = bases[case["base"]][0]
            jobs.append({"file": str(p), "anchor": str(base) + ".anchor.json", "public_key": str(pub)})
        t0 = time.perf_counter()
        proc = subprocess.run([exe, str(NODE_VERIFIER), "batch"], input="\n".join(json.dumps(j) for j in jobs),
                              capture_output=True, text=True, timeout=600)
        node_seconds += time.perf_counter() - t0
        assert proc.returncode == 0, proc.stderr
        node_out = [json.loads(x) for x in proc.stdout.splitlines()]
        assert len(node_out) == len(chunk), proc.stderr
        from agentloop.audit.anchor import load_public_key

        key = load_public_key(pub)
        for i, case in enumerate(chunk):
            n = start + i
            anchor = bases[case["base"]][1]
            t0 = time.perf_counter()
            py = verify_with_anchor(work / f"case-{n}.jsonl", anchor, key)
            py_seconds += time.perf_counter() - t0
            js = node_out[i]
            label = f"case {n} ({'+'.join(case['kinds'])} of base {case['base']}, d={case['d']})"
            py_probs = [(p.index, p.kind) for p in py.problems]
            js_probs = [(p["index"], p["kind"]) for p in js["problems"]]
            if py_probs != js_probs or py.count != js["records"] or py.last_hash != js["last_hash"]:
                failures.append(f"{label}: the verifiers disagree: python {py_probs[:4]} node {js_probs[:4]}")
                continue
            if py.anchor_json() != js["anchor"]:
                failures.append(f"{label}: anchor findings differ: {py.anchor_json()} vs {js['anchor']}")
                continue
            if py.ok:
                failures.append(f"{label}: NOT DETECTED")
                continue
            first = py.problems[0].to_json()
            forged = any(k in FORGERIES for k in case["kinds"])
            how = located([p.to_json() for p in py.problems], case["d"], anchor.size, py.leaves, forged)
            if how is None:
                failures.append(f"{label}: detected at the wrong record: {first}")
                continue
            stats[how] += 1
            stats["kind:" + first["kind"]] += 1
            if how == "range" and forged:
                stats["range_forged"] += 1
                widths.append(first["end"] - first["index"])
            (work / f"case-{n}.jsonl").unlink()
    return {"stats": stats, "failures": failures, "widths": widths, "py_seconds": py_seconds, "node_seconds": node_seconds}


def test_every_corruption_is_detected_at_the_right_record_by_both_verifiers(bases, tmp_path: Path) -> None:
    cases = make_corpus(bases, CORPUS_SIZE, seed=20261129)
    doubles = sum(1 for c in cases if len(c["kinds"]) == 2)
    result = run_corpus(bases, cases, tmp_path)
    stats, failures = result["stats"], result["failures"]
    detected = len(cases) - sum(1 for f in failures if "NOT DETECTED" in f)
    summary = (
        f"{len(cases)} corruptions ({doubles} double): detected {detected} "
        f"({100.0 * detected / len(cases):.2f}%), right record {len(cases) - len(failures)}; "
        f"first problem: exact {stats['exact']}, link {stats['link']}, range {stats['range']} "
        f"(of which {stats['range_forged']} re-forged chains located only by range, mean width "
        f"{sum(result['widths']) / max(1, len(result['widths'])):.1f} records; the rest also exact by the chain), "
        f"cut {stats['cut']}; first kinds: "
        + ", ".join(f"{k[5:]} {v}" for k, v in sorted(stats.items()) if k.startswith("kind:"))
        + f"; python {result['py_seconds']:.1f} s, node {result['node_seconds']:.1f} s"
    )
    print(summary)
    report = os.environ.get("AGENTLOOP_MUTATION_REPORT")
    if report:
        Path(report).write_text(summary + "\n" + "\n".join(failures) + "\n")
    assert not failures, "\n".join(failures[:20])
    # every class of corruption was exercised
    seen = Counter(k for c in cases for k in c["kinds"])
    for k in ("flip", "edit", "edit_rehash", "edit_rechain", "swap", "move", "delete", "truncate", "duplicate", "junk"):
        assert seen[k] > 0, k
    assert stats["exact"] > 0 and stats["link"] > 0 and stats["range"] > 0


def test_the_oracle_rejects_a_verifier_that_misses_or_misplaces(bases) -> None:
    # Negative controls for the oracle itself: a silent verifier and a verifier
    # that blames the wrong record must both fail it.
    def loc(problems: list[dict[str, Any]], d: int, m: int = 16, leaves: int = 16) -> str | None:
        return located(problems, d, m, leaves)

    assert loc([{"index": 3, "kind": "hash_mismatch"}], 3) == "exact"
    assert loc([{"index": 4, "kind": "hash_mismatch"}], 3) is None
    assert loc([{"index": 4, "kind": "seq_gap"}, {"index": 4, "kind": "prev_mismatch"}], 3) == "link"
    assert loc([{"index": 4, "kind": "seq_gap"}], 3) is None
    assert loc([{"index": 5, "kind": "prev_mismatch"}], 3) is None
    assert loc([{"index": 0, "kind": "anchor_mismatch", "end": 8}], 3, 12) == "range"
    assert loc([{"index": 4, "kind": "anchor_mismatch", "end": 8}], 3, 12) is None
    # m = 12 = [0, 8) + [8, 12): a cut at 10 leaves [0, 8) whole, so a forgery at 3 must be found there
    assert loc([{"index": 10, "kind": "truncated", "end": 12}], 3, 12, 10) is None
    assert loc([{"index": 10, "kind": "truncated", "end": 12}], 9, 12, 10) == "cut"
    # without a forgery, a range is not enough: the chain must name the record too
    assert located([{"index": 0, "kind": "anchor_mismatch", "end": 8}], 3, 12, 12, forged=False) is None
    assert located([{"index": 0, "kind": "anchor_mismatch", "end": 8}, {"index": 3, "kind": "hash_mismatch"}], 3, 12, 12, forged=False) == "range"
    assert located([{"index": 10, "kind": "truncated", "end": 12}], 9, 12, 10, forged=False) is None
    # the chain alone misses a clean cut at a record boundary; the anchor is what catches it
    path, anchor, lines = bases[-1]
    cut = path.parent / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:-3]))
    from agentloop.transcript import verify_file

    assert verify_file(cut).ok
    r = verify_with_anchor(cut, anchor)
    assert not r.ok and loc([p.to_json() for p in r.problems], len(lines) - 3, anchor.size, r.leaves) == "exact"
    assert r.problems[0].kind == "truncated"
