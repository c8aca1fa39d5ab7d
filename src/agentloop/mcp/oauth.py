"""OAuth 2.1 sign-in for remote (HTTP and SSE) MCP servers, on the MCP SDK's ``OAuthClientProvider``.

Rules:

1. A remote server configured without an ``Authorization`` header may ask
   for OAuth (a 401 naming its authorization server). The SDK does the
   protocol: protected-resource and authorization-server discovery, dynamic
   client registration, PKCE, the token exchange and the refresh of an
   expired access token.
2. Tokens and the registered client live in the agentloop home,
   ``mcp-auth/<hash of server name and URL>.json``, mode 0600 (written to a
   temporary file and renamed, so a crash never leaves half a file).
3. Signing in is interactive only: the browser is pointed at the
   authorization URL (the URL is also printed, for where no browser opens) and
   a loopback listener on 127.0.0.1 receives the redirect. Everywhere else
   (``-p``, a server started in the background) a server that needs a sign-in
   fails with "sign in with /mcp login NAME" instead of opening a browser.
4. A token the server no longer accepts (revoked, and no refresh works) is
   forgotten when the user signs in again; ``/mcp logout NAME`` deletes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

__all__ = ["SignInRequired", "TokenFile", "make_auth", "sign_out", "signed_in", "token_path"]

SIGN_IN_TIMEOUT = 300.0


class SignInRequired(Exception):
    """The server needs a sign-in, and this is no place to start one."""


class _QuietSignIn(logging.Filter):
    """The SDK logs a traceback when a sign-in is refused; ours is the one-line status (see ``SignInRequired``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, SignInRequired)


logging.getLogger("mcp.client.auth").addFilter(_QuietSignIn())
logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietSignIn())


def token_path(home: str, name: str, url: str) -> str:
    digest = hashlib.sha256(f"{name}\0{url}".encode()).hexdigest()[:16]
    return os.path.join(home, "mcp-auth", f"{name}-{digest}.json")


def signed_in(home: str, name: str, url: str) -> bool:
    data = TokenFile(token_path(home, name, url)).read()
    return bool(data.get("tokens"))


def sign_out(home: str, name: str, url: str) -> bool:
    """Forget the tokens and registration of a server; True when there were some."""
    path = token_path(home, name, url)
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


class TokenFile:
    """The SDK's ``TokenStorage`` on one JSON file, mode 0600."""

    def __init__(self, path: str):
        self.path = path
        self.keep_client = True
        """False where no sign-in can happen: a client registered then (its redirect URI unusable) is not kept."""
        self._client: Any = None

    def read(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self.read()
        data[key] = value
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(data, indent=1).encode())
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self.read().get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))
        if tokens.expires_in is not None:  # when it dies, so a later session refreshes it first
            self._write("expires_at", time.time() + float(tokens.expires_in))

    def seconds_left(self) -> float | None:
        at = self.read().get("expires_at")
        return float(at) - time.time() if isinstance(at, (int, float)) else None

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self._client is not None:
            return self._client
        raw = self.read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        if not self.keep_client:
            self._client = client_info
            return
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def port(self) -> int | None:
        """The loopback port the registered client's redirect URI names, if any."""
        uris = (self.read().get("client") or {}).get("redirect_uris") or []
        with contextlib.suppress(Exception):
            return int(urllib.parse.urlsplit(str(uris[0])).port or 0) or None
        return None


class _Loopback:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization redirect."""

    def __init__(self, port: int | None):
        self.port = port or 0
        self._server: asyncio.base_events.Server | None = None
        self._result: asyncio.Future[tuple[str, str | None]] | None = None

    async def start(self) -> None:
        if self._server is not None:
            return
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            target = line.split(" ")[1] if len(line.split(" ")) > 1 else "/"
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
            code, state, error = query.get("code", [""])[0], query.get("state", [None])[0], query.get("error", [""])[0]
            ok = bool(code) and not error
            body = (b"Signed in. You can close this tab and return to agentloop." if ok
                    else f"Sign-in failed: {error or 'no code'}".encode())
            writer.write(b"HTTP/1.1 " + (b"200 OK" if ok else b"400 Bad Request") +
                         b"\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
            if self._result is not None and not self._result.done() and (ok or error):
                if ok:
                    self._result.set_result((code, state))
                else:
                    self._result.set_exception(SignInRequired(f"the authorization server refused: {error}"))
        except Exception:
            pass
        finally:
            writer.close()

    async def wait(self) -> tuple[str, str | None]:
        assert self._result is not None
        try:
            return await asyncio.wait_for(self._result, SIGN_IN_TIMEOUT)
        finally:
            if self._server is not None:
                self._server.close()
            self._server = None


def make_auth(
    home: str,
    name: str,
    url: str,
    *,
    open_url: Callable[[str], None] | None,
) -> Any:
    """The ``httpx`` auth for one server: tokens from and to its file; a sign-in only when ``open_url`` is given.

    ``open_url(url)`` shows the authorization URL to the user (and opens a
    browser); it is called after the loopback listener is up.
    """
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    store = TokenFile(token_path(home, name, url))
    loop_back = _Loopback(store.port())

    async def redirect(auth_url: str) -> None:
        if open_url is None:
            raise SignInRequired(f"the MCP server {name!r} needs you to sign in: run /mcp login {name} in the agentloop REPL")
        await loop_back.start()
        await asyncio.to_thread(open_url, auth_url)

    async def callback() -> Any:
        code, state = await loop_back.wait()
        return AuthorizationCodeResult(code=code, state=state)

    port = store.port()
    if port is None and open_url is not None:  # the redirect URI is registered with the client: fix its port now
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        loop_back.port = port
    store.keep_client = port is not None
    metadata = OAuthClientMetadata.model_validate({
        "client_name": "agentloop",
        "redirect_uris": [f"http://127.0.0.1:{port or 1}/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
    class Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            """The SDK forgets, across sessions, when a stored access token expires: tell it, so it refreshes first."""
            await super()._initialize()
            left = store.seconds_left()
            tokens = self.context.current_tokens
            if tokens is not None and left is not None:
                self.context.update_token_expiry(tokens.model_copy(update={"expires_in": max(0, int(left))}))

    return Provider(url, metadata, store, redirect_handler=redirect, callback_handler=callback)
