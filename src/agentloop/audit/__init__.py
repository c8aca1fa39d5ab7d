"""Audit tools over transcripts: the RFC 9162 Merkle tree, anchors (signed
checkpoints) and the inclusion and consistency proofs built from them.

They read what the core writes and never change it; the core does not import
them.
"""

from .anchor import (
    Anchor,
    AnchorError,
    anchor_path_for,
    attach_tree,
    load_anchor,
    verify_with_anchor,
    write_anchor,
    write_anchor_for,
)
from .merkle import MerkleTree, merkle_root

__all__ = [
    "Anchor",
    "AnchorError",
    "MerkleTree",
    "anchor_path_for",
    "attach_tree",
    "load_anchor",
    "merkle_root",
    "verify_with_anchor",
    "write_anchor",
    "write_anchor_for",
]
