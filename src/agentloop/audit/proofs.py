"""Proof documents: what ``agentloop prove`` writes and ``agentloop check-proof`` checks.

Normative text: docs/transcript-format.md, section 8.5. Proofs are built by one
streaming pass over a transcript that verifies (``merkle.inclusion_proof``,
``merkle.consistency_proof``) and checked by RFC 9162's algorithms; given the
transcript too, the checker recomputes its roots at the proof's sizes.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from .anchor import _HEX64, _MAX_SIZE, FORMAT_VERSION, AnchorError, _hash_of_line
from .merkle import EMPTY_ROOT, MerkleTree, ProofError, iter_leaves, verify_consistency

__all__ = ["CONSISTENCY_TYPE", "INCLUSION_TYPE", "check_proof", "prove_consistency", "prove_inclusion"]


INCLUSION_TYPE = "agentloop-inclusion-proof"
CONSISTENCY_TYPE = "agentloop-consistency-proof"


def _verified_leaves(path: str) -> int:
    """The record count of a file that verifies; AnchorError otherwise."""
    from ..transcript import verify_file

    report = verify_file(path)
    if not report.ok:
        pr = report.problems[0]
        if pr.kind == "unreadable":
            raise AnchorError(pr.message)
        raise AnchorError(f"{path}: fails verification at record {pr.index} ({pr.kind}: {pr.message}); no proof is made for a broken transcript")
    return report.count


def prove_inclusion(path: str | os.PathLike[str], index: int, size: int | None = None) -> dict[str, Any]:
    """An inclusion proof document: record ``index`` is in the first ``size`` records (default: all).

    Raises:
        AnchorError: the file does not verify, or the record or size is out of range.
    """
    from .merkle import inclusion_proof

    p = os.fspath(path)
    count = _verified_leaves(p)
    s = count if size is None else size
    if not 0 < s <= count:
        raise AnchorError(f"{p}: has {count} records; cannot prove against a tree of size {s}")
    if not 0 <= index < s:
        raise AnchorError(f"{p}: record {index} is not among records 0..{s - 1}")
    with open(p, "rb") as f:
        try:
            data, path_hashes, root = inclusion_proof(iter_leaves(f), index, s)
        except ProofError as exc:
            raise AnchorError(f"{p}: {exc}") from None
    from .merkle import leaf_hash

    return {
        "format": FORMAT_VERSION,
        "index": index,
        "leaf_hash": leaf_hash(data).hex(),
        "path": [h.hex() for h in path_hashes],
        "record": data.decode("utf-8"),
        "root": root.hex(),
        "tree_size": s,
        "type": INCLUSION_TYPE,
    }


def prove_consistency(path: str | os.PathLike[str], size1: int, size2: int | None = None) -> dict[str, Any]:
    """A consistency proof document: the first ``size1`` records are a prefix of the first ``size2`` (default: all).

    Raises:
        AnchorError: the file does not verify, or the sizes are out of range.
    """
    from .merkle import consistency_proof

    p = os.fspath(path)
    count = _verified_leaves(p)
    s2 = count if size2 is None else size2
    if not 0 < size1 <= s2 <= count:
        raise AnchorError(f"{p}: has {count} records; a consistency proof needs 0 < from-size ({size1}) <= size ({s2}) <= {count}")
    with open(p, "rb") as f:
        try:
            path_hashes, root1, root2 = consistency_proof(iter_leaves(f), size1, s2)
        except ProofError as exc:
            raise AnchorError(f"{p}: {exc}") from None
    return {
        "format": FORMAT_VERSION,
        "path": [h.hex() for h in path_hashes],
        "root1": root1.hex(),
        "root2": root2.hex(),
        "size1": size1,
        "size2": s2,
        "type": CONSISTENCY_TYPE,
    }


def _hex32(obj: dict[str, Any], key: str) -> bytes:
    v = obj.get(key)
    if not isinstance(v, str) or not _HEX64.match(v):
        raise AnchorError(f"the proof's {key} is not 64 lowercase hex characters")
    return bytes.fromhex(v)


def _hex_list(obj: dict[str, Any]) -> list[bytes]:
    v = obj.get("path")
    if not isinstance(v, list) or not all(isinstance(h, str) and _HEX64.match(h) for h in v):
        raise AnchorError("the proof's path is not a list of 64-hex-character hashes")
    return [bytes.fromhex(h) for h in v]


def _size(obj: dict[str, Any], key: str) -> int:
    v = obj.get(key)
    if type(v) is not int or not 0 <= v <= _MAX_SIZE:
        raise AnchorError(f"the proof's {key} is not a record count")
    return v


def _roots_at(path: str, sizes: set[int]) -> tuple[int, dict[int, bytes]]:
    tree = MerkleTree()
    roots = {0: EMPTY_ROOT} if 0 in sizes else {}
    top = max(sizes)
    try:
        with open(path, "rb") as f:
            for leaf in iter_leaves(f):
                if tree.size >= top:
                    break
                tree.append(leaf)
                if tree.size in sizes:
                    roots[tree.size] = tree.root()
    except OSError as exc:
        raise AnchorError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return tree.size, roots


def check_proof(doc: Any, file: str | os.PathLike[str] | None = None) -> str:
    """Check a proof document, and with ``file``, that it is about that file.

    Returns:
        What was proved, for people.
    Raises:
        AnchorError: the document is malformed (a usage error).
        ProofError: the proof fails (the finding).
    """
    from .merkle import leaf_hash, verify_inclusion

    if not isinstance(doc, dict):
        raise AnchorError("a proof is a JSON object")
    kind = doc.get("type")
    if doc.get("format") != FORMAT_VERSION or type(doc.get("format")) is not int:
        raise AnchorError(f"the proof is for format {doc.get('format')!r}; this checker reads format {FORMAT_VERSION}")
    if kind == INCLUSION_TYPE:
        want = {"type", "format", "index", "tree_size", "record", "leaf_hash", "path", "root"}
        if set(doc) != want:
            raise AnchorError(f"an inclusion proof has exactly the keys {', '.join(sorted(want))}")
        index, size = _size(doc, "index"), _size(doc, "tree_size")
        leaf, root, path_hashes = _hex32(doc, "leaf_hash"), _hex32(doc, "root"), _hex_list(doc)
        if not isinstance(doc["record"], str):
            raise AnchorError("the proof's record is not a string")
        try:
            data = doc["record"].encode("utf-8")
        except UnicodeEncodeError:
            raise AnchorError("the proof's record is not valid text") from None
        if leaf_hash(data) != leaf:
            raise ProofError("the record's leaf hash is not leaf_hash: the record was changed")
        rec = _hash_of_line(data)
        seq = orjson.loads(data).get("seq") if rec is not None else None
        if seq != index:
            raise ProofError(f"the record's seq is {seq!r}, not the proof's index {index}")
        verify_inclusion(index, size, leaf, path_hashes, root)
        what = f"record {index} is in the transcript of {size} records with Merkle root {root.hex()}"
        if file is not None:
            have, roots = _roots_at(os.fspath(file), {size})
            if size not in roots:
                raise ProofError(f"{os.fspath(file)} has {have} records, fewer than the proof's {size}")
            if roots[size] != root:
                raise ProofError(f"the first {size} records of {os.fspath(file)} have another Merkle root: the file is not the proved transcript")
            what += f", and {os.fspath(file)} is that transcript"
        return what
    if kind == CONSISTENCY_TYPE:
        want = {"type", "format", "size1", "size2", "root1", "root2", "path"}
        if set(doc) != want:
            raise AnchorError(f"a consistency proof has exactly the keys {', '.join(sorted(want))}")
        s1, s2 = _size(doc, "size1"), _size(doc, "size2")
        r1, r2, path_hashes = _hex32(doc, "root1"), _hex32(doc, "root2"), _hex_list(doc)
        verify_consistency(s1, s2, r1, r2, path_hashes)
        what = f"the first {s1} records (root {r1.hex()}) are unchanged in the transcript of {s2} records (root {r2.hex()})"
        if file is not None:
            have, roots = _roots_at(os.fspath(file), {s1, s2})
            if s2 not in roots:
                raise ProofError(f"{os.fspath(file)} has {have} records, fewer than the proof's {s2}")
            if roots.get(s1) != r1 or roots[s2] != r2:
                raise ProofError(f"{os.fspath(file)} has other Merkle roots at sizes {s1} and {s2}: the file is not the proved transcript")
            what += f", and {os.fspath(file)} is that transcript"
        return what
    raise AnchorError(f"the proof's type is {kind!r}, not {INCLUSION_TYPE!r} or {CONSISTENCY_TYPE!r}")
