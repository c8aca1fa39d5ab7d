"""A child's git worktree: made from ``HEAD`` on a new branch, committed and kept when it changed, else removed."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...tools import ToolError
from .. import spawn

__all__ = ["Worktree", "has_commit"]


def _git(args: Sequence[str], cwd: str) -> str:
    """``git ARGS`` as agentloop runs it for itself: none of the repository's hooks, filters or helpers (``spawn.git``)."""
    try:
        p = spawn.git(args, cwd=cwd, timeout=60)
    except subprocess.TimeoutExpired:
        raise ToolError(f"git {' '.join(args[:2])} took more than 60 s") from None
    if p.returncode != 0:
        raise ToolError(f"git {' '.join(args[:2])} failed: {p.stderr.strip()[:300]}")
    return p.stdout.strip()


@dataclass
class Worktree:
    repo: str
    path: str
    branch: str
    base: str
    subdir: str

    @property
    def cwd(self) -> str:
        return os.path.join(self.path, self.subdir) if self.subdir else self.path

    @classmethod
    def create(cls, cwd: str, child_id: str) -> Worktree:
        try:
            repo = _git(["rev-parse", "--show-toplevel"], cwd)
        except (ToolError, OSError):
            raise ToolError(f"isolation \"worktree\" needs a git repository; {cwd} is not in one") from None
        base = _git(["rev-parse", "HEAD"], repo)
        path = tempfile.mkdtemp(prefix=f"agentloop-{child_id}-")
        branch = f"agentloop/{child_id}"
        _git(["worktree", "add", "-q", "-b", branch, path, base], repo)
        sub = os.path.relpath(os.path.realpath(cwd), os.path.realpath(repo))
        return cls(repo, path, branch, base, "" if sub == "." else sub)

    def finish(self, child_id: str) -> dict[str, Any]:
        """Remove the worktree if nothing changed; else commit the changes on its branch and keep it."""
        dirty = _git(["status", "--porcelain"], self.path)
        head = _git(["rev-parse", "HEAD"], self.path)
        if not dirty and head == self.base:
            _git(["worktree", "remove", "--force", self.path], self.repo)
            _git(["branch", "-D", self.branch], self.repo)
            return {"changed": False, "removed": True}
        if dirty:
            ident = spawn.git_identity(self.path)
            _git(["add", "-A"], self.path)
            _git([*ident, "commit", "-q", "-m", f"agentloop sub-agent {child_id}"], self.path)
        commit = _git(["rev-parse", "HEAD"], self.path)
        return {"changed": True, "removed": False, "branch": self.branch, "path": self.path, "commit": commit, "base": self.base}


def has_commit(cwd: str) -> bool:
    """``cwd`` is inside a git repository that has a commit (a worktree can start from it)."""
    try:
        p = spawn.git(["rev-parse", "--verify", "-q", "HEAD"], cwd=cwd, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0

