"""An incremental Server-Sent Events decoder (the WHATWG ``text/event-stream`` rules).

Bytes go in as they arrive, in chunks cut anywhere; complete events come out
as ``(event, data)`` pairs, ``data`` being the ``data:`` lines joined by
``\\n`` (as bytes: the adapters hand them straight to orjson). Comments
(``:`` lines), ``id:`` and ``retry:`` are read and dropped: the providers do
not resume streams. Lines may end in ``\\n``, ``\\r\\n`` or ``\\r``.

Speed matters here (bench/bench_providers.py): the common case, a chunk that
holds whole events with ``\\n`` line ends, is split with ``bytes.split`` and
never walks characters in Python.
"""

from __future__ import annotations

__all__ = ["SSEDecoder", "parse_events"]


class SSEDecoder:
    """Feed bytes, get events. ``close()`` flushes an event left without its blank line."""

    __slots__ = ("_buf", "_cr")

    def __init__(self) -> None:
        self._buf = b""
        self._cr = False
        """The last chunk ended in ``\\r``: a ``\\n`` opening the next one belongs to it."""

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        if not chunk:
            return []
        if self._cr:
            self._cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        end = buf.rfind(b"\n\n")
        if end < 0:
            self._buf = buf
            return []
        self._buf = buf[end + 2 :]
        out: list[tuple[str, bytes]] = []
        for block in buf[:end].split(b"\n\n"):
            ev = _event(block)
            if ev is not None:
                out.append(ev)
        return out

    def close(self) -> list[tuple[str, bytes]]:
        """The event still buffered when the stream ended, if it has data.

        The Anthropic recordings end without a final blank line, so the last
        event is only complete at the end of the body.
        """
        buf, self._buf = self._buf, b""
        ev = _event(buf.strip(b"\n")) if buf else None
        return [ev] if ev is not None else []

    @property
    def pending(self) -> bytes:
        """Bytes of an event not yet complete."""
        return self._buf


def _event(block: bytes) -> tuple[str, bytes] | None:
    if not block:
        return None
    # fast paths: "data: X" and "event: E\ndata: X", the shapes both vendors send
    nl = block.find(b"\n")
    if nl < 0:
        if block[:6] == b"data: ":
            return "message", block[6:]
    elif block[:7] == b"event: " and block[nl + 1 : nl + 7] == b"data: " and block.find(b"\n", nl + 1) < 0:
        return block[7:nl].decode("utf-8", "replace"), block[nl + 7 :]
    event = "message"
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if line[:5] == b"data:":
            v = line[5:]
            data.append(v[1:] if v[:1] == b" " else v)
        elif line[:6] == b"event:":
            v = line[6:]
            event = (v[1:] if v[:1] == b" " else v).decode("utf-8", "replace")
        elif not line or line[:1] == b":":
            continue
        else:
            # id:, retry:, unknown fields and a field with no colon: ignored by the spec's rules
            if line.split(b":", 1)[0] == b"data":
                data.append(b"")
    if not data:
        return None
    return event, data[0] if len(data) == 1 else b"\n".join(data)


def parse_events(body: bytes) -> list[tuple[str, bytes]]:
    """Every event of a whole body."""
    d = SSEDecoder()
    return d.feed(body) + d.close()
