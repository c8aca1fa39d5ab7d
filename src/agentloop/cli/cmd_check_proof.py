"""``agentloop check-proof PROOF [--file FILE]``: check an inclusion or consistency proof."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, EXIT_PROBLEMS, UserError

HELP = "check a proof written by 'agentloop prove' (exit 0 holds, 1 fails, 2 unreadable); --file also ties it to a file"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("proof", metavar="PROOF", help="the proof (JSON)")
    p.add_argument("--file", metavar="FILE", help="also check that the proof is about this transcript")


def main(args: argparse.Namespace) -> int:
    import orjson

    from agentloop.audit.anchor import AnchorError
    from agentloop.audit.merkle import ProofError
    from agentloop.audit.proofs import check_proof

    try:
        with open(args.proof, "rb") as f:
            doc = orjson.loads(f.read())
    except OSError as exc:
        raise UserError(f"{args.proof}: cannot read the proof: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise UserError(f"{args.proof}: the proof is not JSON: {exc}") from None
    try:
        what = check_proof(doc, args.file)
    except AnchorError as exc:
        raise UserError(f"{args.proof}: {exc}") from None
    except ProofError as exc:
        print(f"{args.proof}: FAILED: {exc}")
        return EXIT_PROBLEMS
    print(f"{args.proof}: ok: {what}")
    return EXIT_OK
