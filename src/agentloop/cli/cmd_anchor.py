"""``agentloop anchor FILE [--out A] [--sign KEY]``: checkpoint a transcript."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, UserError

HELP = "write an anchor (size, last hash, Merkle root; optionally Ed25519-signed) for a transcript"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the transcript (JSON Lines)")
    p.add_argument("--out", metavar="A", help="where the anchor goes (default: FILE.anchor.json)")
    p.add_argument("--sign", metavar="KEY", help="sign with this private key: a path, or a name under $AGENTLOOP_HOME/keys")


def main(args: argparse.Namespace) -> int:
    from agentloop.audit.anchor import (
        AnchorError,
        anchor_file,
        anchor_path_for,
        load_private_key,
        write_anchor,
    )

    from ._keys import resolve_key

    try:
        key = load_private_key(resolve_key(args.sign, ".key")) if args.sign else None
        anchor = anchor_file(args.file, private_key=key)
        out = args.out or anchor_path_for(args.file)
        write_anchor(anchor, out)
    except AnchorError as exc:
        raise UserError(str(exc)) from None
    signed = f", signed by key {anchor.signature.key_id}" if anchor.signature else ""
    print(f"{args.file}: anchored {anchor.size} records, Merkle root {anchor.root}{signed}; written to {out}")
    return EXIT_OK
