"""What the tests of the write wall share: a folder with a project, a home and an agentloop home (off tmpfs
where it can, as a user's disk is), a planted program that leaves a mark when the host's git runs it, and
the real git as the user runs it on the host."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["git", "planting_ground"]


def planting_ground(monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[Path]:
    """``proj``, ``home`` and ``alhome`` under a fresh folder, ``HOME`` pointing at ``home``, and ``fsmon``: a
    program that touches ``pwned-fsmonitor`` beside them when run (the mark a planted repository leaves)."""
    root = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    for name in ("proj", "home", "alhome"):
        (d / name).mkdir()
    monkeypatch.setenv("HOME", str(d / "home"))
    (d / "fsmon").write_text(f"#!/bin/sh\ntouch {d}/pwned-fsmonitor\n")
    (d / "fsmon").chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def git(base: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real git on the host, as the user runs it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
