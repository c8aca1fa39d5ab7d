"""A record's line: its canonical body, the body's SHA-256, and the hash spliced in front.

Kept apart from ``transcript.py`` so that it is compiled with the core
(``_native.MODULES``): every record written or replayed passes here. The
format itself is documented in ``transcript.py`` and PRODUCT.md.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .canonical import canonical

__all__ = ["make_line"]


def make_line(seq: int, prev: str, kind: str, payload: Any) -> tuple[str, bytes]:
    """The hash and the full line (with ``\\n``) of a record.

    Raises:
        NotCanonicalizable: the payload is not JSON.
    """
    body = canonical({"kind": kind, "payload": payload, "prev": prev, "seq": seq})
    digest = hashlib.sha256(body).hexdigest()
    return digest, b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n"
