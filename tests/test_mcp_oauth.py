"""OAuth 2.1 for remote MCP servers, end to end against a local server with its own authorization server.

Claude Code MCP docs (https://code.claude.com/docs/en/mcp, "Authenticate with
remote MCP servers"): remote servers may require OAuth 2.0; ``/mcp`` signs in
through the browser, tokens are stored securely and refreshed automatically,
and ``/mcp`` can clear them. The server (tests/mcp_servers/oauthserver.py) is
the SDK's auth support: discovery, dynamic client registration, PKCE codes,
refresh tokens, revocation.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentloop import Registry
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from agentloop.mcp.oauth import token_path
from mcp_servers.helpers import HERE, PY, free_port, wait_port

OAUTHSERVER = str(HERE / "oauthserver.py")


def start(ttl: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([PY, OAUTHSERVER, str(port), str(ttl)])
    wait_port(port, 30)
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture
def server() -> Iterator[str]:
    proc, base = start(3600)
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def short_lived() -> Iterator[str]:
    proc, base = start(2)  # access tokens live 2 s: the client must refresh
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def browser(opened: list[str]) -> object:
    """What a user's browser does: follow the authorization URL; the server approves and redirects to our loopback."""

    def open_url(url: str) -> None:
        opened.append(url)
        httpx.get(url, follow_redirects=True, timeout=30)

    return open_url


def manager(base: str, home: Path) -> McpManager:
    return McpManager([ServerConfig("secure", "http", url=f"{base}/mcp")], startup_timeout=20, environ={}, auth_home=str(home))


def test_a_server_needing_oauth_asks_for_a_sign_in_and_never_opens_a_browser_unasked(server: str, tmp_path: Path) -> None:
    with manager(server, tmp_path) as m:
        assert m.tools() == []
        (st,) = m.status()
        assert st.public_status == "needs-auth" and st.oauth == "not signed in"
        assert "needs you to sign in: run /mcp login secure" in (st.error or "")
    assert not os.path.exists(token_path(str(tmp_path), "secure", f"{server}/mcp"))


def test_sign_in_discovers_registers_and_keeps_tokens_private_then_the_next_session_uses_them(server: str, tmp_path: Path) -> None:
    opened: list[str] = []
    with manager(server, tmp_path) as m:
        m.tools()
        st = m.sign_in("secure", browser(opened))  # type: ignore[arg-type]
        assert st.status == "connected", st.error
        assert st.oauth == "signed in"
        assert len(opened) == 1 and opened[0].startswith(f"{server}/authorize?") and "code_challenge=" in opened[0]
        assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in opened[0]
        assert Registry(m.tools()).invoke(ToolCall("c", "mcp__secure__whoami", {})).content == "signed in"
    path = token_path(str(tmp_path), "secure", f"{server}/mcp")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    saved = json.loads(Path(path).read_text())
    assert saved["tokens"]["access_token"] and saved["tokens"]["refresh_token"] and saved["client"]["client_id"]
    with manager(server, tmp_path) as again:  # a new session: no browser, the stored token works
        assert "mcp__secure__whoami" in {t.name for t in again.tools()}
        assert again.status()[0].oauth == "signed in"


def test_an_expired_access_token_is_refreshed(short_lived: str, tmp_path: Path) -> None:
    opened: list[str] = []
    with manager(short_lived, tmp_path) as m:
        m.tools()
        assert m.sign_in("secure", browser(opened)).status == "connected"  # type: ignore[arg-type]
        first = json.loads(Path(token_path(str(tmp_path), "secure", f"{short_lived}/mcp")).read_text())["tokens"]
    time.sleep(3)  # the access token is dead now
    with manager(short_lived, tmp_path) as m:
        assert "mcp__secure__whoami" in {t.name for t in m.tools()}, m.status()[0].error
        assert Registry(m.tools()).invoke(ToolCall("c", "mcp__secure__whoami", {})).content == "signed in"
    second = json.loads(Path(token_path(str(tmp_path), "secure", f"{short_lived}/mcp")).read_text())["tokens"]
    assert second["access_token"] != first["access_token"]
    assert httpx.get(f"{short_lived}/test/stats").json()["refreshed"] >= 1
    assert len(opened) == 1  # no second sign-in


def test_a_revoked_sign_in_says_to_sign_in_again_and_logout_forgets_the_tokens(server: str, tmp_path: Path) -> None:
    opened: list[str] = []
    with manager(server, tmp_path) as m:
        m.tools()
        assert m.sign_in("secure", browser(opened)).status == "connected"  # type: ignore[arg-type]
    httpx.post(f"{server}/test/revoke-all")
    with manager(server, tmp_path) as m:
        assert m.tools() == []
        (st,) = m.status()
        assert st.public_status == "needs-auth"
        assert "sign in" in (st.error or "") and "/mcp login secure" in (st.error or "")
        assert m.sign_in("secure", browser(opened)).status == "connected"  # signing in again works
        assert m.sign_out("secure") is True
        assert m.status()[0].oauth == "not signed in"
    assert not os.path.exists(token_path(str(tmp_path), "secure", f"{server}/mcp"))


def test_the_repl_signs_in_and_out_with_mcp_login_and_logout(server: str, tmp_path: Path) -> None:
    import re

    from _pty import Term, env_for

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"secure": {"type": "http", "url": f"{server}/mcp"}}}))
    script = tmp_path / "s.json"
    script.write_text("[]")
    t = Term(["--trust", "--model", f"scripted:{script}"], cwd=str(proj), env=env_for(str(tmp_path / "home"), AGENTLOOP_NO_BROWSER="1"))
    try:
        t.wait_for(r"notice: the MCP server 'secure' is not available \(needs-auth\)")
        t.wait_for(r"(?m)^>")
        t.type("/mcp login secure")
        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline:
            t.pump(0.1)
            found = re.search(rb"sign in at: (\S+)", t.raw)
        assert found is not None, t.text()
        httpx.get(found.group(1).decode(), follow_redirects=True, timeout=30)  # the user's browser
        t.wait_for(r"signed in to secure")
        t.wait_for(r"secure: connected oauthserver")
        assert "Traceback" not in t.text() and "OAuth flow error" not in t.text()
        t.type("/mcp logout secure")
        t.wait_for(r"signed out of secure")
        t.type("/mcp")
        t.wait_for(r"secure: failed")
        assert "not signed" in t.text().replace("\n", "")
    finally:
        t.kill()


@pytest.mark.mcp_npm
@pytest.mark.parametrize(("mode", "transport", "path"), [("streamableHttp", "http", "/mcp"), ("sse", "sse", "/sse")])
def test_a_remote_server_without_oauth_works_as_before_when_oauth_is_on(tmp_path: Path, mode: str, transport: str, path: str) -> None:
    from mcp_servers.helpers import EVERYTHING, npm_servers

    npm_servers()
    port = free_port()
    p = subprocess.Popen(["node", str(EVERYTHING), mode], env={**os.environ, "PORT": str(port)},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_port(port, 60)
        cfg = ServerConfig("open", transport, url=f"http://127.0.0.1:{port}{path}")  # type: ignore[arg-type]
        with McpManager([cfg], startup_timeout=30, environ={}, auth_home=str(tmp_path)) as m:
            reg = Registry(m.tools())
            assert reg.invoke(ToolCall("c", "mcp__open__echo", {"message": "hi"})).content == "Echo: hi"
            assert m.status()[0].oauth == "not signed in"
        assert not os.path.exists(tmp_path / "mcp-auth")  # nothing written for a server that never asked
    finally:
        p.kill()
        p.wait(10)
