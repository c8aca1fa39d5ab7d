"""Audit tools over transcripts: the RFC 9162 Merkle tree, anchors (signed
checkpoints) and the inclusion and consistency proofs built from them.

They read what the core writes and never change it; the core does not import
them.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_FROM = {"MerkleTree": "merkle", "merkle_root": "merkle"}
"""Where each name lives (the rest in ``anchor``). They load on first use, so a module that needs only
``audit.repair`` (the session store, at every start) does not import the anchors and their signatures."""

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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_FROM.get(name, 'anchor')}", __name__), name)
    globals()[name] = value
    return value
