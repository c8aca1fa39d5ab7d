"""RFC 9162 Merkle trees over transcripts: incremental roots, inclusion and consistency proofs.

Normative text: docs/transcript-format.md ("Merkle tree", "Proofs"). A leaf is
one record line without its final ``\\n``.

Rules:

1. ``leaf_hash(d) = SHA-256(0x00 || d)``; ``node_hash(l, r) = SHA-256(0x01 || l || r)``;
   the root of the empty tree is ``SHA-256("")``.
2. The tree of ``n`` leaves splits at ``k``, the largest power of two below
   ``n`` (RFC 9162 s2.1.1). ``MerkleTree`` keeps only the *frontier*: the
   roots of the perfect subtrees that the binary digits of ``n`` cut the
   leaves into, biggest first. Appending merges them like a binary counter,
   so memory is O(log n) and each append costs one leaf hash plus, on
   average, one node hash.
3. A proof is a list of subtree hashes over disjoint ranges of leaves
   (``inclusion_ranges``, ``consistency_ranges``). A proof is built by one
   streaming pass over the leaves that feeds each range its own small tree
   (``range_roots``): a file is never held in memory.
4. Verification follows RFC 9162 s2.1.3.2 and s2.1.4.2 word for word, plus
   the edge cases pinned by the transparency-dev vectors in
   tests/data/merkle-rfc6962: sizes must be in range, every hash must be 32
   bytes, the tree of size 0 has exactly one root, and a consistency proof
   from size 0 to a larger size is meaningless and refused.

The core reads no clock, environment or randomness.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

__all__ = [
    "EMPTY_ROOT",
    "MerkleTree",
    "ProofError",
    "consistency_proof",
    "consistency_ranges",
    "inclusion_proof",
    "inclusion_ranges",
    "iter_leaves",
    "leaf_hash",
    "merkle_root",
    "node_hash",
    "range_roots",
    "root_from_inclusion",
    "verify_consistency",
    "verify_inclusion",
]

EMPTY_ROOT = hashlib.sha256(b"").digest()
_sha256 = hashlib.sha256
HASH_SIZE = 32


class ProofError(ValueError):
    """A proof does not verify, or cannot be built for the sizes asked."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _fold(frontier: Sequence[bytes]) -> bytes:
    """The root from a frontier (biggest subtree first)."""
    if not frontier:
        return EMPTY_ROOT
    r = frontier[-1]
    for h in reversed(frontier[:-1]):
        r = node_hash(h, r)
    return r


class MerkleTree:
    """An append-only RFC 9162 tree that keeps O(log n) hashes.

    It is a transcript listener: ``writer.listeners.append(tree)`` hashes each
    line (without ``\\n``) as it is written.
    """

    __slots__ = ("_frontier", "_size")

    def __init__(self) -> None:
        self._frontier: list[bytes] = []
        self._size = 0

    @property
    def size(self) -> int:
        return self._size

    @property
    def frontier(self) -> tuple[bytes, ...]:
        """The perfect subtrees' roots, biggest first: one per 1-bit of ``size``."""
        return tuple(self._frontier)

    def append(self, leaf_data: bytes) -> None:
        # append_hash inlined: this runs once per record written.
        h = _sha256(b"\x00" + leaf_data).digest()
        n = self._size
        f = self._frontier
        while n & 1:
            h = _sha256(b"\x01" + f.pop() + h).digest()
            n >>= 1
        f.append(h)
        self._size += 1

    __call__ = append

    def append_hash(self, h: bytes) -> None:
        """Append a leaf by its leaf hash (already ``leaf_hash``-ed)."""
        n = self._size
        f = self._frontier
        while n & 1:
            h = hashlib.sha256(b"\x01" + f.pop() + h).digest()
            n >>= 1
        f.append(h)
        self._size += 1

    def root(self) -> bytes:
        return _fold(self._frontier)

    def copy(self) -> MerkleTree:
        t = MerkleTree()
        t._frontier = list(self._frontier)
        t._size = self._size
        return t

    def subtree_ranges(self) -> list[tuple[int, int]]:
        """The leaf range ``[start, end)`` of each frontier hash, in order."""
        out = []
        start = 0
        for bit in reversed(range(self._size.bit_length())):
            if self._size >> bit & 1:
                out.append((start, start + (1 << bit)))
                start += 1 << bit
        return out

    def to_state(self) -> dict[str, Any]:
        """What to persist to resume without rehashing: ``{"size", "frontier"}`` (hex)."""
        return {"size": self._size, "frontier": [h.hex() for h in self._frontier]}

    @classmethod
    def from_frontier(cls, size: int, frontier: Sequence[bytes]) -> MerkleTree:
        """Restore a tree from its size and frontier.

        Raises:
            ValueError: the frontier does not fit the size (one 32-byte hash per 1-bit).
        """
        if type(size) is not int or size < 0:
            raise ValueError(f"a tree size must be a non-negative integer, not {size!r}")
        if len(frontier) != bin(size).count("1"):
            raise ValueError(f"a tree of size {size} has {bin(size).count('1')} frontier hashes, not {len(frontier)}")
        if any(not isinstance(h, bytes) or len(h) != HASH_SIZE for h in frontier):
            raise ValueError("every frontier hash must be 32 bytes")
        t = cls()
        t._frontier = list(frontier)
        t._size = size
        return t

    @classmethod
    def from_state(cls, state: Any) -> MerkleTree:
        """The inverse of ``to_state``.

        Raises:
            ValueError: the state is malformed.
        """
        if not isinstance(state, dict) or set(state) != {"size", "frontier"} or not isinstance(state["frontier"], list):
            raise ValueError('a Merkle state is {"size": N, "frontier": [hex, ...]}')
        try:
            hashes = [bytes.fromhex(h) for h in state["frontier"]]
        except (TypeError, ValueError):
            raise ValueError("a frontier hash is not hex") from None
        return cls.from_frontier(state["size"], hashes)


def merkle_root(leaves: Iterable[bytes]) -> bytes:
    """The RFC 9162 root of the given leaf data (not hashes)."""
    t = MerkleTree()
    for leaf in leaves:
        t.append(leaf)
    return t.root()


MAX_LEAF_BYTES = 64 << 20
"""The longest line read as a leaf: ``transcript.MAX_LINE_BYTES``, which verification stops at."""


def iter_leaves(f: BinaryIO, max_line: int = MAX_LEAF_BYTES) -> Iterator[bytes]:
    """The leaves of a transcript file: every complete line without its ``\\n``.

    A last line with no ``\\n`` is a torn write, not a record, and is not a leaf.
    Reading stops before a line longer than ``max_line`` bytes (the
    verifier's own bound), so memory stays bounded whatever the file holds.
    """
    readline = f.readline
    while True:
        line = readline(max_line + 1)
        if not line.endswith(b"\n"):
            return  # the end, a torn last line, or a line too long to be a record
        yield line[:-1]


# --- proofs as ranges -----------------------------------------------------------


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose roots make up PATH(index, D[0:size]), leaf side first (RFC 9162 s2.1.3.1)."""
    if not 0 <= index < size:
        raise ProofError(f"record {index} is not in a tree of size {size}")
    out: list[tuple[int, int]] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:
        k = _split(hi - lo)
        if m < k:
            out.append((lo + k, hi))
            hi = lo + k
        else:
            out.append((lo, lo + k))
            lo, m = lo + k, m - k
    out.reverse()
    return out


def consistency_ranges(m: int, n: int) -> list[tuple[int, int]]:
    """The leaf ranges whose roots make up PROOF(m, D[0:n]) (RFC 9162 s2.1.4.1), 0 < m < n."""
    if not 0 < m < n:
        raise ProofError(f"a consistency proof needs 0 < first size < second size, not {m} and {n}")
    out: list[tuple[int, int]] = []
    lo, hi, mm, complete = 0, n, m, True
    while True:
        size = hi - lo
        if mm == size:
            if not complete:
                out.append((lo, hi))
            break
        k = _split(size)
        if mm <= k:
            out.append((lo + k, hi))
            hi = lo + k
        else:
            out.append((lo, lo + k))
            lo, mm, complete = lo + k, mm - k, False
    out.reverse()
    return out


def range_roots(leaves: Iterable[bytes], ranges: Sequence[tuple[int, int]], *, first_index: int = 0) -> list[bytes]:
    """The root of each (disjoint) leaf range, in one pass over ``leaves``.

    ``leaves`` yields leaf data starting at leaf number ``first_index``.
    Memory is O(log n) per range.

    Raises:
        ProofError: the leaves ran out before a range was complete.
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    trees: dict[int, MerkleTree] = {}
    results: list[bytes | None] = [None] * len(ranges)
    pos = 0
    i = first_index
    end_all = max((e for _, e in ranges), default=first_index)
    for leaf in leaves:
        if i >= end_all:
            break
        while pos < len(order) and ranges[order[pos]][1] <= i:
            pos += 1
        if pos < len(order):
            ri = order[pos]
            s, e = ranges[ri]
            if s <= i < e:
                t = trees.setdefault(ri, MerkleTree())
                t.append(leaf)
                if i == e - 1:
                    results[ri] = t.root()
                    del trees[ri]
        i += 1
    if any(r is None for r in results):
        raise ProofError(f"the leaves ran out at {i}; the proof needs {end_all}")
    return [r for r in results if r is not None]


def _one_pass(
    leaves: Iterator[bytes], size: int, ranges: Sequence[tuple[int, int]], *, capture: int = -1, mark: int = -1
) -> tuple[MerkleTree, dict[tuple[int, int], bytes], bytes | None, bytes | None]:
    """Read exactly ``size`` leaves, hashing each once for the whole tree and for the range that holds it.

    Returns the whole tree, each range's root, leaf ``capture``'s data and the
    root at size ``mark``.

    Raises:
        ProofError: there are fewer than ``size`` leaves.
    """
    order = sorted(ranges)
    roots: dict[tuple[int, int], bytes] = {}
    tree = MerkleTree()
    cur: MerkleTree | None = None
    captured: bytes | None = None
    marked: bytes | None = None
    j = 0
    for i in range(size):
        leaf = next(leaves, None)
        if leaf is None:
            raise ProofError(f"there are only {i} records; the proof needs {size}")
        if i == capture:
            captured = leaf
        h = _sha256(b"\x00" + leaf).digest()
        tree.append_hash(h)
        if i + 1 == mark:
            marked = tree.root()
        while j < len(order) and order[j][1] <= i:
            j += 1
        if j < len(order) and order[j][0] <= i:
            if cur is None:
                cur = MerkleTree()
            cur.append_hash(h)
            if i == order[j][1] - 1:
                roots[order[j]] = cur.root()
                cur = None
    return tree, roots, captured, marked


def inclusion_proof(leaves: Iterable[bytes], index: int, size: int) -> tuple[bytes, list[bytes], bytes]:
    """Leaf ``index``'s data, its audit path in the tree of the first ``size`` leaves, and that tree's root.

    One pass over the first ``size`` leaves (never further), one hash per leaf
    plus the tree's nodes, O(log n) memory.

    Raises:
        ProofError: ``index`` is out of range or there are fewer than ``size`` leaves.
    """
    ranges = inclusion_ranges(index, size)
    tree, roots, data, _ = _one_pass(iter(leaves), size, ranges, capture=index)
    assert data is not None
    return data, [roots[r] for r in ranges], tree.root()


def consistency_proof(leaves: Iterable[bytes], m: int, n: int) -> tuple[list[bytes], bytes, bytes]:
    """The proof that the first ``m`` leaves are a prefix of the first ``n``, with both roots.

    One pass over the first ``n`` leaves, O(log n) memory. ``m == n`` gives an
    empty proof.

    Raises:
        ProofError: the sizes are out of order or there are fewer than ``n`` leaves.
    """
    if not 0 < m <= n:
        raise ProofError(f"a consistency proof needs 0 < first size <= second size, not {m} and {n}")
    ranges = consistency_ranges(m, n) if m < n else []
    tree, roots, _, root1 = _one_pass(iter(leaves), n, ranges, mark=m)
    assert root1 is not None
    return [roots[r] for r in ranges], root1, tree.root()


# --- verification (RFC 9162 s2.1.3.2, s2.1.4.2) ----------------------------------


def _check_hashes(what: str, hashes: Sequence[bytes]) -> None:
    for i, h in enumerate(hashes):
        if not isinstance(h, bytes) or len(h) != HASH_SIZE:
            raise ProofError(f"{what} {i} is {len(h) if isinstance(h, bytes) else type(h).__name__} bytes, not 32")


def root_from_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes]) -> bytes:
    """The root that an inclusion proof implies (RFC 9162 s2.1.3.2 steps 1-4).

    Raises:
        ProofError: the proof has the wrong shape for ``index`` and ``size``.
    """
    if type(index) is not int or type(size) is not int or not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not inside a tree of size {size}")
    if not isinstance(leaf, bytes) or len(leaf) != HASH_SIZE:
        raise ProofError("the leaf hash is not 32 bytes")
    _check_hashes("proof hash", path)
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ProofError("the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the tree is deep")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> None:
    """Check that ``leaf`` (a leaf hash) is leaf ``index`` of the tree of ``size`` with ``root``.

    Raises:
        ProofError: it is not.
    """
    if root_from_inclusion(index, size, leaf, path) != root:
        raise ProofError("the inclusion proof leads to a different root")


def verify_consistency(size1: int, size2: int, root1: bytes, root2: bytes, path: Sequence[bytes]) -> None:
    """Check that the tree of ``size1`` with ``root1`` is a prefix of the tree of ``size2`` with ``root2``.

    Raises:
        ProofError: it is not, or the proof is malformed.
    """
    if type(size1) is not int or type(size2) is not int or size1 < 0 or size2 < 0:
        raise ProofError("tree sizes must be non-negative integers")
    if size2 < size1:
        raise ProofError(f"the second size {size2} is smaller than the first {size1}")
    if size1 == size2:
        if path:
            raise ProofError("equal sizes need an empty proof")
        if root1 != root2:
            raise ProofError("equal sizes but different roots")
        if size1 == 0 and root1 != EMPTY_ROOT:
            raise ProofError("the root of the empty tree is SHA-256 of nothing")
        return
    if size1 == 0:
        raise ProofError("a consistency proof from the empty tree proves nothing")
    if not path:
        raise ProofError("the proof is empty")
    _check_hashes("proof hash", path)
    if len(root1) != HASH_SIZE or len(root2) != HASH_SIZE:
        raise ProofError("a root is not 32 bytes")
    p = list(path)
    if size1 & (size1 - 1) == 0:  # an exact power of two
        p.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = p[0]
    for c in p[1:]:
        if sn == 0:
            raise ProofError("the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the tree is deep")
    if fr != root1:
        raise ProofError("the proof does not lead to the first root: the first records were changed")
    if sr != root2:
        raise ProofError("the proof does not lead to the second root")
