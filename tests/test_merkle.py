"""RFC 9162 Merkle trees: the vectors, a recursive oracle, streaming proofs, the frontier."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.audit.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    ProofError,
    consistency_proof,
    consistency_ranges,
    inclusion_proof,
    inclusion_ranges,
    leaf_hash,
    merkle_root,
    node_hash,
    verify_consistency,
    verify_inclusion,
)
from agentloop.transcript import MemoryTranscript, TranscriptWriter

VECTORS = Path(__file__).parent / "data" / "merkle-rfc6962"


def b64(x: str | None) -> bytes:
    return base64.b64decode(x or "")


def vector_files(kind: str) -> list[Path]:
    files = sorted((VECTORS / kind).rglob("*.json"))
    assert len(files) == 98, f"expected the 98 {kind} vectors, found {len(files)}"
    return files


@pytest.mark.parametrize("path", vector_files("inclusion"), ids=lambda p: str(p.relative_to(VECTORS)))
def test_inclusion_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    args = (v["leafIdx"], v["treeSize"], b64(v["leafHash"]), [b64(x) for x in v["proof"] or []], b64(v["root"]))
    if v["wantErr"]:
        with pytest.raises(ProofError):
            verify_inclusion(*args)
    else:
        verify_inclusion(*args)


@pytest.mark.parametrize("path", vector_files("consistency"), ids=lambda p: str(p.relative_to(VECTORS)))
def test_consistency_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    args = (v["size1"], v["size2"], b64(v["root1"]), b64(v["root2"]), [b64(x) for x in v["proof"] or []])
    if v["wantErr"]:
        with pytest.raises(ProofError):
            verify_consistency(*args)
    else:
        verify_consistency(*args)


def test_reference_tree_roots_and_single_hashes_match_the_constants() -> None:
    c = json.loads((VECTORS / "tree-constants.json").read_text())
    leaves = [bytes.fromhex(h) for h in c["leaf_inputs_hex"]]
    for size, want in enumerate(c["root_hashes_hex_by_size"]):
        assert merkle_root(leaves[:size]).hex() == want
    single = {v["desc"]: v for v in c["single_hash_vectors"]}
    assert EMPTY_ROOT.hex() == single["empty tree root"]["want_hex"]
    assert leaf_hash(b"").hex() == single["leaf hash of empty leaf"]["want_hex"]
    assert leaf_hash(b"L123456").hex() == single["leaf hash of ASCII 'L123456'"]["want_hex"]
    assert node_hash(b"N123", b"N456").hex() == single["node hash of children ASCII 'N123' and 'N456'"]["want_hex"]


def mth(d: list[bytes]) -> bytes:
    """RFC 9162 s2.1.1, recursively: the oracle."""
    if not d:
        return EMPTY_ROOT
    if len(d) == 1:
        return leaf_hash(d[0])
    k = 1
    while k * 2 < len(d):
        k *= 2
    return node_hash(mth(d[:k]), mth(d[k:]))


LEAVES = [bytes([i % 256]) * (i % 7) + str(i).encode() for i in range(70)]


def test_incremental_root_equals_the_recursive_definition_at_every_size() -> None:
    t = MerkleTree()
    assert t.root() == EMPTY_ROOT
    for i, leaf in enumerate(LEAVES):
        t.append(leaf)
        assert t.size == i + 1
        assert t.root() == mth(LEAVES[: i + 1])
        assert len(t.frontier) == bin(t.size).count("1")  # O(log n) memory


def test_every_inclusion_and_consistency_proof_up_to_70_leaves_verifies() -> None:
    for n in range(1, 71):
        root = mth(LEAVES[:n])
        for i in range(n):
            data, path, r = inclusion_proof(iter(LEAVES), i, n)
            assert data == LEAVES[i] and r == root
            assert len(path) == len(inclusion_ranges(i, n))
            verify_inclusion(i, n, leaf_hash(data), path, root)
        for m in range(1, n + 1):
            path, r1, r2 = consistency_proof(iter(LEAVES), m, n)
            assert (r1, r2) == (mth(LEAVES[:m]), root)
            verify_consistency(m, n, r1, r2, path)


def test_a_flipped_bit_anywhere_in_a_proof_is_rejected() -> None:
    n, i = 37, 21
    data, path, root = inclusion_proof(iter(LEAVES), i, n)
    for j in range(len(path)):
        bad = list(path)
        bad[j] = bytes([bad[j][0] ^ 1]) + bad[j][1:]
        with pytest.raises(ProofError):
            verify_inclusion(i, n, leaf_hash(data), bad, root)
    with pytest.raises(ProofError):
        verify_inclusion(i, n, leaf_hash(data + b"x"), path, root)
    cpath, r1, r2 = consistency_proof(iter(LEAVES), 13, n)
    for j in range(len(cpath)):
        bad = list(cpath)
        bad[j] = bytes([bad[j][0] ^ 0x80]) + bad[j][1:]
        with pytest.raises(ProofError):
            verify_consistency(13, n, r1, r2, bad)
    # a changed early leaf changes root1: the proof no longer links the two
    changed = [b"forged"] + LEAVES[1:]
    with pytest.raises(ProofError):
        verify_consistency(13, n, mth(changed[:13]), r2, cpath)


def test_proofs_are_built_in_one_pass_over_a_stream() -> None:
    consumed = []

    def once() -> Iterator[bytes]:
        for leaf in LEAVES:
            consumed.append(leaf)
            yield leaf

    data, path, root = inclusion_proof(once(), 5, 64)
    assert root == mth(LEAVES[:64]) and len(consumed) == 64  # never re-read, never past what it needs
    consumed.clear()
    cpath, _, r2 = consistency_proof(once(), 10, 50)
    assert r2 == mth(LEAVES[:50]) and len(consumed) == 50


def test_proof_ranges_are_disjoint_and_inside_the_tree() -> None:
    for n in range(2, 40):
        for m in range(1, n):
            rs = consistency_ranges(m, n)
            covered = sorted(x for a, b in rs for x in range(a, b))
            assert len(covered) == len(set(covered)) and all(0 <= x < n for x in covered)


def test_proofs_for_sizes_out_of_range_are_refused() -> None:
    with pytest.raises(ProofError):
        inclusion_proof(iter(LEAVES[:3]), 3, 3)
    with pytest.raises(ProofError):
        inclusion_proof(iter(LEAVES[:3]), 0, 5)  # fewer leaves than the size
    with pytest.raises(ProofError):
        consistency_proof(iter(LEAVES), 0, 5)
    with pytest.raises(ProofError):
        consistency_proof(iter(LEAVES[:4]), 2, 5)


def test_frontier_state_round_trips_and_resumes_without_the_leaves() -> None:
    t = MerkleTree()
    for leaf in LEAVES[:45]:
        t.append(leaf)
    state = json.loads(json.dumps(t.to_state()))
    r = MerkleTree.from_state(state)
    for leaf in LEAVES[45:]:
        r.append(leaf)
    assert r.root() == mth(LEAVES)
    for bad in ({"size": 45, "frontier": state["frontier"][:-1]}, {"size": -1, "frontier": []},
                {"size": 45, "frontier": ["zz"] * 3}, {"size": 45}, []):
        with pytest.raises(ValueError):
            MerkleTree.from_state(bad)


def test_the_tree_is_a_transcript_listener(tmp_path: Path) -> None:
    mem = MemoryTranscript()
    t1 = MerkleTree()
    mem.listeners.append(t1)
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        t2 = MerkleTree()
        w.listeners.append(t2)
        for i in range(20):
            mem.append("note", {"i": i})
            w.append("note", {"i": i})
    lines = path.read_bytes().splitlines()
    assert t1.root() == t2.root() == mth(lines) == merkle_root(line[:-1] for line in mem.lines)


def test_consistency_proof_hashes_left_of_the_old_size_are_its_frontier() -> None:
    # verify_with_anchor takes those hashes from the anchor-size frontier and
    # reads only the new records: this is what makes that sound.
    for m in range(1, 130):
        known = set(MerkleTree.from_frontier(m, [b"0" * 32] * bin(m).count("1")).subtree_ranges())
        for n in range(m + 1, 140):
            for r in consistency_ranges(m, n):
                assert r in known or r[0] >= m, (m, n, r)
