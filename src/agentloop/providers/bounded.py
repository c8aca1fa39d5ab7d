"""A response body read in bounded time and memory: decoded by us, piece by piece, never past a limit.

httpx decodes ``Content-Encoding`` itself, a whole network chunk at a time, and
``Response.read()`` keeps every decoded byte: a 2 MB gzip error body of zeros
once took 10.5 GB. Here the raw bytes (``iter_raw``) are decompressed with
``zlib``'s ``max_length``, at most ``PIECE`` bytes at a time, so a compressed
bomb never expands past one piece before the reader's own limit cuts it;
``read_capped`` keeps at most ``limit`` decoded bytes of an error body and
stops reading once ``deadline`` seconds have passed (a body that drips a byte
every few seconds never times out at the socket). Only ``gzip``, ``deflate``
and no encoding are asked for (``ACCEPT_ENCODING``) and accepted.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

__all__ = ["ACCEPT_ENCODING", "PIECE", "BodyDecoder", "aread_capped", "araw_body", "raw_body", "read_capped"]

ACCEPT_ENCODING = "gzip, deflate"
PIECE = 64 << 10
"""The most decoded bytes one step of decompression yields."""


class BodyDecoder:
    """Decodes one body's raw bytes (its ``Content-Encoding``) into pieces of at most ``PIECE`` bytes.

    Raises:
        ValueError: an encoding other than gzip, deflate or identity, or one that cannot be decoded.
    """

    def __init__(self, headers: Mapping[str, str]):
        enc = [e.strip().lower() for e in headers.get("content-encoding", "").split(",") if e.strip()]
        enc = [e for e in enc if e != "identity"]
        if len(enc) > 1 or (enc and enc[0] not in ("gzip", "x-gzip", "deflate")):
            raise ValueError(f"a body encoded as {', '.join(enc)!r}, which was not asked for")
        self.kind = enc[0] if enc else ""
        self._z: zlib._Decompress | None = None
        if self.kind in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._first = True

    def feed(self, raw: bytes) -> Iterator[bytes]:
        if not self.kind:
            for i in range(0, len(raw), PIECE):
                yield raw[i:i + PIECE]
            return
        if self._z is None:  # deflate: zlib-wrapped as the standard says, or raw as some servers send it
            self._z = zlib.decompressobj(zlib.MAX_WBITS if raw[:1] and (raw[0] & 0x0F) == 8 else -zlib.MAX_WBITS)
        data = raw
        try:
            while data:
                out = self._z.decompress(data, PIECE)
                if out:
                    yield out
                data = self._z.unconsumed_tail
                if not out and data:
                    break
        except zlib.error as exc:
            raise ValueError(f"a {self.kind} body that cannot be decoded: {exc}") from None


def read_capped(raw: Iterator[bytes], headers: Mapping[str, str], limit: int, deadline: float,
                clock: Callable[[], float] = time.monotonic) -> bytes:
    """At most ``limit`` decoded bytes of a body, read for at most ``deadline`` seconds (then what came)."""
    got = bytearray()
    start = clock()
    try:
        dec = BodyDecoder(headers)
        for chunk in raw:
            for piece in dec.feed(chunk):
                got += piece[: limit - len(got)]
                if len(got) >= limit:
                    return bytes(got)
            if clock() - start > deadline:
                break
    except ValueError:
        pass  # an error body only gives the message: what was decoded is enough
    return bytes(got)


async def aread_capped(raw: AsyncIterator[bytes], headers: Mapping[str, str], limit: int, deadline: float,
                       clock: Callable[[], float] = time.monotonic) -> bytes:
    """The async twin of ``read_capped``."""
    got = bytearray()
    start = clock()
    try:
        dec = BodyDecoder(headers)
        async for chunk in raw:
            for piece in dec.feed(chunk):
                got += piece[: limit - len(got)]
                if len(got) >= limit:
                    return bytes(got)
            if clock() - start > deadline:
                break
    except ValueError:
        pass
    return bytes(got)


def raw_body(resp: Any) -> tuple[Iterator[bytes], Mapping[str, str]]:
    """A response's raw bytes and the headers that say how to decode them. A body already read (a test
    transport's ``content``) is already decoded: it comes as one piece, with no encoding to undo."""
    if resp.is_stream_consumed:
        return iter([resp.content]), {}
    return resp.iter_raw(), resp.headers


def araw_body(resp: Any) -> tuple[AsyncIterator[bytes], Mapping[str, str]]:
    """The async twin of ``raw_body``."""
    if resp.is_stream_consumed:
        async def once() -> AsyncIterator[bytes]:
            yield resp.content
        return once(), {}
    return resp.aiter_raw(), resp.headers
