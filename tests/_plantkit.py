"""What the tests of the write wall share: a folder with a project, a home and an agentloop home (off tmpfs
where it can, as a user's disk is), a planted program that leaves a mark when the host's git runs it, the
real git as the user runs it on the host, and an agent whose Bash calls are given."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.testing import ScriptedModel, reply

__all__ = ["agent", "git", "planting_ground", "sandboxed"]


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


def agent(base: Path, commands: list[object], env: dict[str, str] | None = None) -> Agent:
    """An agent in ``base/proj`` whose model calls Bash once for each of ``commands`` (a command line, or
    Bash's whole input), then answers "done"; every call allowed, so only the sandbox decides. ``env``: more
    variables for the agent's environment."""
    model = ScriptedModel([reply("", [("Bash", c if isinstance(c, dict) else {"command": c})]) for c in commands]
                          + [reply("done")])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
           "AGENTLOOP_HOME": str(base / "alhome"), **(env or {})}
    return Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env, model=model,
                 permission_mode="bypassPermissions")


def sandboxed(base: Path, commands: list[object], env: dict[str, str] | None = None) -> list[str]:
    """What each of ``commands`` returned, run by ``agent`` (with ``env`` added) in an active sandbox."""
    a = agent(base, commands, env)
    try:
        assert a.sandbox.active
        res = a.ask("go")
    finally:
        a.close()
    return [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
