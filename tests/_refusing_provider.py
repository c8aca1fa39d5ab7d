"""A local server in place of Anthropic's API that refuses every request (a 400 in Anthropic's error shape) and
keeps the credential each one carried: what a test needs to see which key agentloop sent, and no more."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

__all__ = ["refusing_provider"]


@contextlib.contextmanager
def refusing_provider() -> Iterator[tuple[str, list[str]]]:
    """``(base URL, credentials seen)``: each request's ``authorization`` header, or its ``x-api-key``."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            seen.append(self.headers.get("authorization", "") or self.headers.get("x-api-key", ""))
            body = b'{"type":"error","error":{"type":"invalid_request_error","message":"no"}}'
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
