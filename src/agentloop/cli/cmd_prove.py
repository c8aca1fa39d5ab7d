"""``agentloop prove FILE --record N | --from-size M [--size S] [--out P]``: a Merkle proof."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import EXIT_OK, UserError

HELP = "write an inclusion proof (--record N) or a consistency proof (--from-size M) for a transcript"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the transcript (JSON Lines); it must verify")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--record", type=int, metavar="N", help="prove that record N (0-based) is in the transcript")
    which.add_argument("--from-size", type=int, metavar="M", help="prove that the first M records are unchanged")
    p.add_argument("--size", type=int, metavar="S", help="prove against the first S records (default: all of them)")
    p.add_argument("--out", metavar="P", help="write the proof here (default: standard output)")


def main(args: argparse.Namespace) -> int:
    from agentloop.audit.anchor import AnchorError
    from agentloop.audit.proofs import prove_consistency, prove_inclusion

    try:
        if args.record is not None:
            doc = prove_inclusion(args.file, args.record, args.size)
        else:
            doc = prove_consistency(args.file, args.from_size, args.size)
    except AnchorError as exc:
        raise UserError(str(exc)) from None
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UserError(f"{args.out}: cannot write the proof: {exc.strerror or exc}") from None
        print(f"{args.file}: {doc['type']} written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
