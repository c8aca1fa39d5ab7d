"""The sandbox's domain proxy on its own (no sandbox needed): which hosts pass, and what the others get.

Claude Code's settings reference (https://code.claude.com/docs/en/settings,
"Sandbox settings"): ``network.allowedDomains`` lists hosts, and
``*.example.com`` stands for the subdomains of example.com.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from agentloop.agent.sandbox.netproxy import DomainProxy, domain_allowed


@pytest.mark.parametrize(("host", "ok"), [
    ("pypi.org", True), ("PyPI.org.", True), ("files.pypi.org", False), ("api.github.com", True),
    ("github.com", False), ("evilgithub.com", False), ("a.b.github.com", True), ("localhost", False), ("", False),
])
def test_which_hosts_the_allowed_domains_cover(host: str, ok: bool) -> None:
    assert domain_allowed(host, ["pypi.org", "*.github.com"]) is ok


def _ask(path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(request)
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return out
            out += chunk
            if b"\r\n\r\n" in out and (out.startswith(b"HTTP/1.1 200 Connection") or b"Content-Length" in out):
                head, _, body = out.partition(b"\r\n\r\n")
                if out.startswith(b"HTTP/1.1 200 Connection"):
                    return out
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    return out


def test_the_proxy_tunnels_to_an_allowed_host_and_refuses_the_rest(tmp_path: Path) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    port = srv.getsockname()[1]
    got: list[bytes] = []

    def serve() -> None:
        c, _ = srv.accept()
        got.append(c.recv(100))
        c.sendall(b"pong")
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    proxy = DomainProxy(["localhost"], str(tmp_path / "p.sock"))
    try:
        refused = _ask(proxy.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and b"127.0.0.1 is not in sandbox.network.allowedDomains" in refused
        plain = _ask(proxy.path, f"GET http://example.org:{port}/x HTTP/1.1\r\nHost: example.org\r\n\r\n".encode())
        assert plain.startswith(b"HTTP/1.1 403")
        assert proxy.denied == ["127.0.0.1", "example.org"] and got == []
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(proxy.path)
            s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 200 Connection established")
            s.sendall(b"ping")
            assert s.recv(100) == b"pong"
        t.join(5)
        assert got == [b"ping"]
    finally:
        proxy.close()
        srv.close()
