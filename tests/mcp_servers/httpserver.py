"""The fastmcp test server over streamable HTTP on 127.0.0.1, behind a bearer token.

    python httpserver.py PORT TOKEN

Every request without ``Authorization: Bearer TOKEN`` is answered 401 (with
``WWW-Authenticate: Bearer``), as a remote server that needs credentials does.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import uvicorn  # noqa: E402

from mcp_servers.pyserver import server  # noqa: E402


def guarded(app: Any, token: str) -> Any:
    want = f"Bearer {token}".encode()

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope.get("headers") or []).get(b"authorization") != want:
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b'Bearer realm="test"')]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return asgi


def main() -> None:
    port, token = int(sys.argv[1]), sys.argv[2]
    app = server.http_app(path="/mcp")
    config = uvicorn.Config(guarded(app, token), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
