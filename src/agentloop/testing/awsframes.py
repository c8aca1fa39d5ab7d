"""Bedrock's wire for the fake provider: AWS event-stream frames written, SigV4 signatures checked.

botocore reads event streams (``botocore.eventstream.EventStreamBuffer``) but
has no writer, so ``encode_message`` writes one frame as AWS documents the
format ("Amazon S3 / Transcribe event stream encoding"; the same framing
Bedrock's InvokeModelWithResponseStream answers in):

- a 12-byte prelude: the total length and the headers' length (big-endian
  uint32 each), then the CRC-32 of those 8 bytes;
- the headers, each: name length (uint8), name (UTF-8), value type (7 for a
  string), value length (uint16), value;
- the payload;
- the CRC-32 of everything before it.

The tests prove the writer by reading its frames back with botocore's
buffer (CRCs included). ``verify_sigv4`` recomputes a request's signature
with botocore's signer from the secret the test set, at the request's own
``X-Amz-Date``, and compares.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any

from ..providers.bedrock import SERVICE

__all__ = ["chunk_frame", "encode_message", "exception_frame", "parse_authorization", "verify_sigv4"]

_STRING = 7


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack(">B", len(n)) + n + struct.pack(">BH", _STRING, len(v)) + v


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude, string headers, payload and the two CRCs."""
    hb = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack(">II", 12 + len(hb) + len(payload) + 4, len(hb))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    msg = prelude + hb + payload
    return msg + struct.pack(">I", zlib.crc32(msg))


def chunk_frame(event: bytes) -> bytes:
    """A ``chunk`` event carrying one Anthropic stream event (its JSON bytes), base64 in ``bytes`` as Bedrock
    sends it, with the padding field ``p`` Bedrock adds."""
    pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[: 1 + len(event) % 40]
    payload = json.dumps({"bytes": base64.b64encode(event).decode("ascii"), "p": pad}).encode()
    return encode_message({":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}, payload)


def exception_frame(kind: str, message: str) -> bytes:
    """An exception in the stream (``throttlingException``...), as Bedrock sends one after a 200."""
    return encode_message({":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
                          json.dumps({"message": message}).encode())


def parse_authorization(value: str) -> dict[str, Any] | None:
    """``AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX``
    as its parts; None when it does not have that shape."""
    scheme, _, rest = value.partition(" ")
    if scheme != "AWS4-HMAC-SHA256":
        return None
    parts = dict(p.strip().split("=", 1) for p in rest.split(",") if "=" in p)
    cred = parts.get("Credential", "").split("/")
    sig = parts.get("Signature", "")
    if len(cred) != 5 or cred[4] != "aws4_request" or not parts.get("SignedHeaders") or len(sig) != 64:
        return None
    try:
        int(sig, 16)
    except ValueError:
        return None
    return {"access_key": cred[0], "date": cred[1], "region": cred[2], "service": cred[3],
            "signed_headers": parts["SignedHeaders"].split(";"), "signature": sig}


def verify_sigv4(method: str, url: str, headers: Mapping[str, str], body: bytes, *, access_key: str, secret_key: str,
                 region: str, service: str = SERVICE, session_token: str | None = None) -> str | None:
    """None when the request's SigV4 ``Authorization`` is right for these credentials; else what is wrong."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    low = {k.lower(): v for k, v in headers.items()}
    auth = parse_authorization(low.get("authorization", ""))
    if auth is None:
        return "no AWS4-HMAC-SHA256 Authorization header of the documented shape"
    if (auth["access_key"], auth["region"], auth["service"]) != (access_key, region, service):
        return f"signed for {auth['access_key']}/{auth['region']}/{auth['service']}, not {access_key}/{region}/{service}"
    amz_date = low.get("x-amz-date", "")
    if not amz_date.startswith(auth["date"]):
        return "X-Amz-Date does not match the credential's date"
    missing = [h for h in ("host", "x-amz-date") if h not in auth["signed_headers"]]
    if missing:
        return f"{', '.join(missing)} not signed"
    signed = {h: low[h] for h in auth["signed_headers"] if h in low}
    req = AWSRequest(method=method, url=url, data=body, headers=signed)
    req.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(access_key, secret_key, session_token), service, region)
    expected = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    if not hmac.compare_digest(expected, auth["signature"]):
        return "the signature does not match (body sha256 " + hashlib.sha256(body).hexdigest()[:12] + ")"
    return None
