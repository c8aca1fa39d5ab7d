"""The sandbox's way out: an HTTP proxy that reaches only ``sandbox.network.allowedDomains``.

A sandboxed command has no network of its own (a new network namespace with
only loopback). When the user's settings list allowed domains, the agent runs
this proxy on a Unix socket inside the session's sandbox ``/tmp``; the
sandbox's runner bridges ``127.0.0.1:PROXY_PORT`` inside the namespace to it,
and each command gets ``HTTP_PROXY``/``HTTPS_PROXY`` pointing there. So
programs that use a proxy reach the allowed hosts and nothing else; programs
that do not reach nothing.

The proxy speaks ``CONNECT host:port`` (HTTPS and any TLS) and plain HTTP
requests in absolute form. A host is allowed when it equals an entry, or when
an entry ``*.example.com`` covers it (subdomains only, as in Claude Code's
settings). Anything else gets ``403`` with a line saying why.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Sequence

__all__ = ["PROXY_PORT", "DomainProxy", "domain_allowed"]

PROXY_PORT = 3128
"""The port the proxy has inside the sandbox (127.0.0.1, the sandbox's own loopback)."""

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 10.0


def domain_allowed(host: str, allowed: Sequence[str]) -> bool:
    """``host`` equals an entry, or an entry ``*.suffix`` covers it (a subdomain of ``suffix``)."""
    h = host.strip().lower().rstrip(".")
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if not h:
        return False
    for entry in allowed:
        e = entry.strip().lower().rstrip(".")
        if e.startswith("*."):
            if h.endswith(e[1:]) and len(h) > len(e) - 1:
                return True
        elif h == e:
            return True
    return False


def _split_host_port(target: str, default_port: int) -> tuple[str, int] | None:
    if target.startswith("["):
        end = target.find("]")
        if end < 0:
            return None
        host, rest = target[: end + 1], target[end + 1 :]
        port_s = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_s = target.partition(":")
    try:
        port = int(port_s) if port_s else default_port
    except ValueError:
        return None
    if not (0 < port < 65536) or not host:
        return None
    return host, port


class DomainProxy:
    """An HTTP proxy on a Unix socket allowing only some domains. ``close()`` stops it."""

    def __init__(self, allowed: Sequence[str], path: str):
        self.allowed = list(allowed)
        self.path = path
        self.denied: list[str] = []
        """Hosts refused so far (for the note a failed command gets)."""
        if os.path.lexists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="agentloop-netproxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _refuse(self, conn: socket.socket, code: int, why: str) -> None:
        body = f"agentloop sandbox: {why}\n".encode()
        try:
            conn.sendall(f"HTTP/1.1 {code} {'Forbidden' if code == 403 else 'Bad Request'}\r\n".encode()
                         + b"Content-Type: text/plain\r\nConnection: close\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        except OSError:
            pass
        conn.close()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    conn.close()
                    return
                head += chunk
                if len(head) > MAX_HEAD:
                    self._refuse(conn, 400, "request head too long")
                    return
        except OSError:
            conn.close()
            return
        first, _, rest = head.partition(b"\r\n")
        parts = first.decode("latin-1").split()
        if len(parts) != 3:
            self._refuse(conn, 400, "not an HTTP proxy request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            hp = _split_host_port(target, 443)
            tail = b""
        else:
            if not target.lower().startswith("http://"):
                self._refuse(conn, 400, "only absolute http:// URLs and CONNECT go through the proxy")
                return
            hostpart, slash, path = target[7:].partition("/")
            hp = _split_host_port(hostpart, 80)
            tail = f"{method} /{path if slash else ''} {version}\r\n".encode("latin-1") + rest
        if hp is None:
            self._refuse(conn, 400, f"cannot read the host of {target!r}")
            return
        host, port = hp
        if not domain_allowed(host, self.allowed):
            self.denied.append(host)
            self._refuse(conn, 403, f"{host} is not in sandbox.network.allowedDomains")
            return
        try:
            up = socket.create_connection((host.strip("[]"), port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            self._refuse(conn, 502, f"cannot reach {host}:{port}: {exc}")
            return
        try:
            if method.upper() == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up.sendall(tail)
        except OSError:
            up.close()
            conn.close()
            return
        conn.settimeout(None)
        up.settimeout(None)
        t = threading.Thread(target=_pump, args=(up, conn), daemon=True)
        t.start()
        _pump(conn, up)
        t.join(timeout=60)
        up.close()
        conn.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass
