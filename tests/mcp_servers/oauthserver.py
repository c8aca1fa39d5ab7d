"""An MCP server on 127.0.0.1 that requires OAuth 2.1, with its own authorization server (the SDK's auth support).

    python oauthserver.py PORT [ACCESS_TTL_SECONDS]

The authorization server is in memory: dynamic client registration, PKCE
authorization codes (``/authorize`` approves at once and redirects back, as a
user who clicks "allow" would), refresh tokens, revocation. Access tokens live
``ACCESS_TTL_SECONDS`` (default 3600), so a test can make them expire and see
the client refresh. ``POST /test/revoke-all`` revokes every token (a revoked
sign-in); ``GET /test/stats`` tells how many tokens were issued by refresh.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import uvicorn  # noqa: E402
from mcp.server.auth.provider import (  # noqa: E402
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402


class Provider:
    def __init__(self, ttl: int):
        self.ttl = ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.refreshed = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_hex(20)
        self.codes[code] = AuthorizationCode(
            code=code, client_id=client.client_id or "", scopes=params.scopes or [], expires_at=time.time() + 300,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_hex(20), secrets.token_hex(20)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.ttl, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.ttl, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.refreshed += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        at = self.access.get(token)
        if at is None or (at.expires_at is not None and at.expires_at < time.time()):
            return None
        return at

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


def main() -> None:
    port = int(sys.argv[1])
    ttl = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
    base = f"http://127.0.0.1:{port}"
    provider = Provider(ttl)
    server = MCPServer(
        "oauthserver",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says the caller got in."""
        return "signed in"

    @server.custom_route("/test/revoke-all", methods=["POST"])
    async def revoke_all(request: Request) -> JSONResponse:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse({"refreshed": provider.refreshed, "clients": len(provider.clients)})

    app = server.streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).run()


if __name__ == "__main__":
    main()
