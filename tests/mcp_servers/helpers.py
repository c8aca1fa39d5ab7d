"""Shared by the MCP tests: where the test servers are, and how to see child processes."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PYSERVER = str(HERE / "pyserver.py")
SILENT = str(HERE / "silent.py")
RAW = str(HERE / "raw.py")
NPM_ROOT = REPO / ".cache" / "npm-mcp" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = NPM_ROOT / "server-everything" / "dist" / "index.js"
FILESYSTEM = NPM_ROOT / "server-filesystem" / "dist" / "index.js"
PY = sys.executable


def npm_servers() -> None:
    """Skip when the npm reference servers are not installed, except in CI, where that is a failure."""
    if EVERYTHING.is_file() and FILESYSTEM.is_file():
        return
    msg = (
        f"the npm MCP reference servers are not installed in {NPM_ROOT.parent.parent}; "
        "run .ci/run (or its `npm install --prefix .cache/npm-mcp ...` line) first"
    )
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie, or dead


def descendants(root: int | None = None) -> set[int]:
    """Live processes below ``root`` (this process by default)."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z":
            parent[int(d)] = int(fields[1])
    top = os.getpid() if root is None else root
    out: set[int] = set()
    frontier = [top]
    while frontier:
        p = frontier.pop()
        for child, par in parent.items():
            if par == p and child not in out:
                out.add(child)
                frontier.append(child)
    return out


def running(marker: str) -> set[int]:
    """Our descendants whose command line mentions ``marker`` (a server's script path)."""
    out = set()
    for pid in descendants():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    out.add(pid)
        except OSError:
            continue
    return out


def wait_gone(pids: set[int], seconds: float = 10) -> set[int]:
    deadline = time.monotonic() + seconds
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if alive(p)}
    return left


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")
