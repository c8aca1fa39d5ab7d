"""``agentloop keygen [--name NAME]``: an Ed25519 key pair for signing anchors."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, UserError

HELP = "make an Ed25519 key pair under $AGENTLOOP_HOME/keys for signing anchors"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="default", help="the key's name (default: default): NAME.key and NAME.pub")


def main(args: argparse.Namespace) -> int:
    from agentloop.audit.anchor import AnchorError, generate_keys, key_id, load_public_key

    from ._keys import keys_dir

    try:
        priv, pub = generate_keys(keys_dir(), args.name)
        from cryptography.hazmat.primitives import serialization

        raw = load_public_key(pub).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    except AnchorError as exc:
        raise UserError(str(exc)) from None
    print(f"private key: {priv} (mode 0600; sign with: agentloop anchor FILE --sign {args.name})")
    print(f"public key:  {pub} (verify with: agentloop verify FILE --anchor A --public-key {pub})")
    print(f"key id:      {key_id(raw)}")
    return EXIT_OK
