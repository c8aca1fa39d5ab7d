"""A child's git worktree: the parent's working tree as it is now, its changes brought back when the child ends.

1. It starts on a new branch from ``HEAD`` plus the parent's uncommitted
   work (changed and deleted tracked files, untracked files git does not
   ignore), copied in and committed there as the child's starting point.
2. When the child ends, what it changed (committed on the branch) is applied
   to the parent's working tree as a patch (``git apply``, then
   ``git apply --3way`` when the parent changed the same lines meanwhile);
   what cannot be applied is reported, and the worktree is then kept.
3. A child that changed nothing leaves no worktree and no branch.
4. The project's environment comes along: the ignored files the repository's
   ``.worktreeinclude`` names are copied in (Claude Code's file: gitignore
   syntax; only ignored files, never a tracked one), and each ignored
   environment folder (``ENVIRONMENT_DIRS``: virtual environments,
   ``node_modules``, build caches) is linked to the parent's copy, which the
   child's sandbox shows read-only. The links are removed before the child's
   changes are taken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...tools import ToolError
from .. import spawn
from ..sandbox.gitjail import GitUnconfined

__all__ = ["Worktree", "has_commit"]


def _git_out(args: Sequence[str], cwd: str, paths: Sequence[str] = (), *, write: bool = True) -> str:
    """What ``git ARGS`` prints, run as agentloop runs git for itself, in the git jail (``spawn.git``): the
    repository at ``cwd`` and ``paths`` writable unless ``write`` is False. A failure, no sandbox to run git
    in, or a run past 60 s is a ``ToolError``."""
    try:
        p = spawn.git(args, cwd=cwd, timeout=60, write=write, paths=paths)
    except subprocess.TimeoutExpired:
        raise ToolError(f"git {' '.join(args[:2])} took more than 60 s") from None
    except OSError as exc:  # GitUnconfined included: no sandbox to run git in
        raise ToolError(f"git {' '.join(args[:2])} could not run: {exc}") from None
    if p.returncode != 0:
        raise ToolError(f"git {' '.join(args[:2])} failed: {p.stderr.strip()[:300]}")
    return str(p.stdout)


def _git(args: Sequence[str], cwd: str, paths: Sequence[str] = (), *, write: bool = True) -> str:
    return _git_out(args, cwd, paths, write=write).strip()


def _under_link(root: str, rel: str) -> bool:
    """Whether a folder on the way from ``root`` to ``rel`` is a symlink (a copy must not follow one out)."""
    parts = rel.split("/")[:-1]
    for i in range(len(parts)):
        if os.path.islink(os.path.join(root, *parts[: i + 1])):
            return True
    return False


ENVIRONMENT_DIRS = (".venv", "venv", "env", ".tox", ".nox", "node_modules", "target", ".gradle", "vendor", "__pypackages__")
"""Ignored folders a project's commands run from (virtual environments, installed packages, build caches): a
worktree gets a link to the parent's copy of each, which the child's sandbox shows read-only."""
INCLUDE_FILE = ".worktreeinclude"
INCLUDE_MAX_FILES = 10_000
INCLUDE_MAX_BYTES = 200_000_000


@dataclass
class Worktree:
    repo: str
    path: str
    branch: str
    base: str
    subdir: str
    links: list[str] = field(default_factory=list)
    """The environment folders linked into the worktree (removed before its changes are taken)."""
    notes: list[str] = field(default_factory=list)
    """What the child should know of its copy: ignored files left out, limits reached."""

    @property
    def cwd(self) -> str:
        return os.path.join(self.path, self.subdir) if self.subdir else self.path

    @property
    def scratch(self) -> str:
        """The private folder holding the worktree and the patch: the one place outside the repository
        agentloop's git writes (the jail could not remove the worktree's folder itself, a mount point there)."""
        return os.path.dirname(self.path)

    @classmethod
    def create(cls, cwd: str, child_id: str) -> Worktree:
        try:
            spawn.jail_bwrap()
        except GitUnconfined as exc:
            raise ToolError(f"isolation \"worktree\" is not available: {exc}") from None
        try:
            repo = _git(["rev-parse", "--show-toplevel"], cwd, write=False)
        except ToolError:
            raise ToolError(f"isolation \"worktree\" needs a git repository; {cwd} is not in one") from None
        base = _git(["rev-parse", "HEAD"], repo, write=False)
        # named with this PID, so a later start removes it if this agentloop is killed (bubblewrap.OWNED_TMP_PREFIXES)
        path = os.path.join(tempfile.mkdtemp(prefix=f"agentloop-worktree-{os.getpid()}-{child_id}-"), "worktree")
        branch = f"agentloop/{child_id}"
        # checked out by a git started in the worktree: its branch may include filters of its own (``includeIf
        # "onbranch:"``), which only a git reading the worktree's configuration lists to switch off
        _git(["worktree", "add", "-q", "--no-checkout", "-b", branch, path, base], repo, [os.path.dirname(path)])
        _git(["reset", "-q", "--hard"], path)
        sub = os.path.relpath(os.path.realpath(cwd), os.path.realpath(repo))
        wt = cls(repo, path, branch, base, "" if sub == "." else sub)
        wt.base = wt._carry_over(child_id)
        wt._include_ignored()
        wt._link_environments()
        return wt

    def _include_ignored(self) -> None:
        """Claude Code's ``.worktreeinclude`` (gitignore syntax, at the repository's root): the ignored files it
        names are copied into the worktree (a ``.env``, a local config), regular files only, never a tracked one."""
        spec_path = os.path.join(self.repo, INCLUDE_FILE)
        if not os.path.isfile(spec_path) or os.path.islink(spec_path):
            return
        import pathspec

        with open(spec_path, encoding="utf-8", errors="replace") as f:
            spec = pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())
        ignored = _git_z(["ls-files", "--others", "--ignored", "--exclude-standard", "-z"], self.repo, write=False)
        count = size = 0
        for rel in ignored:
            src = os.path.join(self.repo, rel)
            if not spec.match_file(rel) or os.path.islink(src) or not os.path.isfile(src) or _under_link(self.repo, rel):
                continue
            count += 1
            size += os.path.getsize(src)
            if count > INCLUDE_MAX_FILES or size > INCLUDE_MAX_BYTES:
                self.notes.append(f"{INCLUDE_FILE} names more than {INCLUDE_MAX_FILES} files or "
                                  f"{INCLUDE_MAX_BYTES // 1_000_000} MB: the rest were not copied")
                return
            dst = os.path.join(self.path, rel)
            if os.path.lexists(dst):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)

    def _link_environments(self) -> None:
        """A link to each ignored environment folder of the parent's (``ENVIRONMENT_DIRS``, at the repository's
        root and in the parent's directory): the child runs the project's tools from them without copying
        gigabytes, and its sandbox shows them read-only, so the parent's copy cannot change."""
        for where in dict.fromkeys(["", self.subdir]):
            for name in ENVIRONMENT_DIRS:
                rel = os.path.join(where, name) if where else name
                src, dst = os.path.join(self.repo, rel), os.path.join(self.path, rel)
                if not os.path.isdir(src) or os.path.islink(src) or os.path.lexists(dst):
                    continue
                if not _git_z(["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", rel],
                              self.repo, write=False):
                    continue  # tracked or not ignored: the worktree has it already, or it is the project's own
                os.makedirs(os.path.dirname(dst) or self.path, exist_ok=True)
                os.symlink(os.path.realpath(src), dst)
                self.links.append(dst)

    def unlink_environments(self) -> None:
        for link in self.links:
            if os.path.islink(link):
                os.unlink(link)
        self.links.clear()

    def _carry_over(self, child_id: str) -> str:
        """Copy the parent's uncommitted work into the worktree and commit it there (rule 1). Returns the start commit."""
        changed = _git_z(["diff", "HEAD", "--name-only", "--no-renames", "-z"], self.repo, write=False)
        untracked = _git_z(["ls-files", "--others", "--exclude-standard", "-z"], self.repo, write=False)
        if not changed and not untracked:
            return self.base
        size = 0
        for rel in dict.fromkeys([*changed, *untracked]):
            src, dst = os.path.join(self.repo, rel), os.path.join(self.path, rel)
            if os.path.islink(src) or os.path.isfile(src):
                size += os.lstat(src).st_size
                if size > CARRY_MAX_BYTES:
                    raise ToolError(f"the working tree's uncommitted files are over {CARRY_MAX_BYTES // 1_000_000} MB: "
                                    "commit or ignore some, or start the agent with isolation \"none\"")
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if os.path.lexists(dst):
                    os.unlink(dst)
                shutil.copy2(src, dst, follow_symlinks=False)
            elif not os.path.lexists(src) and os.path.lexists(dst) and not os.path.isdir(dst):
                os.unlink(dst)  # deleted in the parent's working tree
        ident = spawn.git_identity(self.path)
        _git(["add", "-A"], self.path)
        _git([*ident, "commit", "-q", "--allow-empty", "-m", f"agentloop sub-agent {child_id}: the parent's uncommitted work"],
             self.path)
        return _git(["rev-parse", "HEAD"], self.path)

    def _remove(self) -> None:
        """The worktree removed (its folder is inside ``scratch``, writable in the jail), then ``scratch``."""
        _git(["worktree", "remove", "--force", self.path], self.repo, [self.scratch])
        shutil.rmtree(self.scratch, ignore_errors=True)

    def discard(self) -> None:
        """Remove the worktree and its branch, whatever changed there (nothing is applied)."""
        self.unlink_environments()
        self._remove()
        self.drop_branch()

    def drop_branch(self) -> None:
        """Delete the worktree's branch (its changes were applied, or are dropped)."""
        _git(["branch", "-D", self.branch], self.repo)

    def finish(self, child_id: str, before_apply: Callable[[list[str]], None] | None = None) -> dict[str, Any]:
        """Remove the worktree if nothing changed; else commit the changes on its branch and apply them to the
        parent's working tree (``before_apply`` is first given the paths there that the patch touches)."""
        self.unlink_environments()  # never taken as a change
        dirty = _git(["status", "--porcelain"], self.path, write=False)
        head = _git(["rev-parse", "HEAD"], self.path, write=False)
        if not dirty and head == self.base:
            self._remove()
            _git(["branch", "-D", self.branch], self.repo)
            return {"changed": False, "removed": True}
        if dirty:
            ident = spawn.git_identity(self.path)
            _git(["add", "-A"], self.path)
            _git([*ident, "commit", "-q", "-m", f"agentloop sub-agent {child_id}"], self.path)
        commit = _git(["rev-parse", "HEAD"], self.path)
        out: dict[str, Any] = {"changed": True, "branch": self.branch, "commit": commit, "base": self.base,
                               "files": _git_z(["diff", "--name-only", "--no-renames", "-z", self.base, commit], self.repo, write=False)}
        if before_apply is not None:
            before_apply([os.path.join(self.repo, rel) for rel in out["files"]])
        state, report = self._apply_back(commit)
        out["applied"] = state  # "applied", "conflicts" (markers left in the files) or "failed"
        if state == "applied":
            self._remove()
            out["removed"] = True
        else:
            out.update(removed=False, path=self.path, conflicts=report)
        return out

    def _by_file(self, patch: str, commit: str) -> tuple[list[str], list[str]]:
        """The patch file by file: as is where it applies, else a three-way merge. Returns (conflicted, failed)."""
        conflicted: list[str] = []
        failed: list[str] = []
        for rel in _git_z(["diff", "--name-only", "--no-renames", "-z", self.base, commit], self.repo, write=False):
            if _try(["apply", "--check", f"--include={rel}", patch], self.repo, self.scratch)[0]:
                ok, said = _try(["apply", f"--include={rel}", patch], self.repo, self.scratch)
                if not ok:
                    failed.append(f"{rel}: {said[:200]}")
                continue
            mine, theirs = os.path.join(self.repo, rel), os.path.join(self.path, rel)
            inside = os.path.realpath(mine) == os.path.join(os.path.realpath(self.repo), os.path.normpath(rel))
            if not (inside and os.path.isfile(mine) and os.path.isfile(theirs)):  # never through a symlink
                failed.append(f"{rel}: changed or deleted on both sides")
                continue
            with tempfile.TemporaryDirectory(prefix="agentloop-merge-", dir=self.scratch) as tmp:
                other = shutil.copyfile(theirs, os.path.join(tmp, "other"))
                try:
                    _git(["checkout", self.base, "--", rel], self.path)  # the start's version, as bytes
                    base = shutil.copyfile(theirs, os.path.join(tmp, "base"))
                except ToolError:  # not in the start: added on both sides
                    base = ""
                finally:
                    _git(["checkout", commit, "--", rel], self.path)
                n = _merge(mine, base, other) if base else -1
            if n < 0:
                failed.append(f"{rel}: cannot be merged (binary?)")
            elif n > 0:
                conflicted.append(rel)
        return conflicted, failed

    def _makes_git_run_code(self, commit: str) -> str | None:
        """Why bringing ``base..commit`` into the parent's tree would make the user's git run code (the write
        wall's one check, ``gitguard.write_refusal``, on every file the merge would write or remove)."""
        from ..sandbox.gitguard import write_refusal

        pending: dict[str, bytes | None] = {}
        for rel in _git_z(["diff", "--name-only", "--no-renames", "-z", self.base, commit], self.repo, write=False):
            theirs = os.path.join(self.path, rel)
            mine = os.path.join(os.path.realpath(self.repo), os.path.normpath(rel))
            if os.path.islink(theirs):
                pending[mine] = os.readlink(theirs).encode("utf-8", "surrogateescape")
            elif os.path.isfile(theirs):
                with open(theirs, "rb") as f:
                    pending[mine] = f.read()
            else:
                pending[mine] = None
        return write_refusal(pending, [os.path.realpath(self.repo)])

    def _apply_back(self, commit: str) -> tuple[str, str]:
        """Rule 2: apply ``base..commit`` to the parent's working tree. Returns (state, what git said)."""
        fd, patch = tempfile.mkstemp(prefix="agentloop-subagent-", suffix=".patch", dir=self.scratch)
        os.close(fd)
        try:
            _git(["diff", "--binary", "--no-renames", f"--output={patch}", self.base, commit], self.repo, [self.scratch])
            if os.path.getsize(patch) == 0:
                return "applied", ""
            why = self._makes_git_run_code(commit)
            if why is not None:
                return "failed", f"not applied: {why}; the sub-agent's version is on branch {self.branch} (worktree {self.path})"
            if _try(["apply", "--check", patch], self.repo, self.scratch)[0]:
                ok, said = _try(["apply", patch], self.repo, self.scratch)
                if ok:
                    return "applied", ""
            conflicted, failed = self._by_file(patch, commit)
            where = f"the sub-agent's version is on branch {self.branch} (worktree {self.path})"
            if failed:
                return "failed", ("some changes could not be applied to the working tree ("
                                  + "; ".join(failed)[:1000] + (f"; conflicts in {', '.join(conflicted)}" if conflicted else "")
                                  + f"); {where}")
            if conflicted:
                return "conflicts", f"applied with conflicts in {', '.join(conflicted)}: resolve the conflict markers; {where}"
            return "applied", ""
        finally:
            os.unlink(patch)


CARRY_MAX_BYTES = 100_000_000
"""Uncommitted files copied into a child's worktree, in all: past this the child does not start."""


def _merge(current: str, base: str, other: str) -> int:
    """``git merge-file`` of the three versions into ``current``: 0 clean, >0 conflicts, <0 it could not."""
    try:
        p = spawn.git(["merge-file", "-L", "working tree", "-L", "start", "-L", "sub-agent", current, base, other],
                      cwd=os.path.dirname(current), timeout=60, write=True, paths=[os.path.dirname(other)])
    except (OSError, subprocess.SubprocessError):
        return -1
    return p.returncode if p.returncode < 128 else -1


def _git_z(args: Sequence[str], cwd: str, *, write: bool = True) -> list[str]:
    """The NUL-separated paths ``git ARGS`` prints."""
    return [x for x in _git_out(args, cwd, write=write).split("\0") if x]


def _try(args: Sequence[str], cwd: str, scratch: str) -> tuple[bool, str]:
    """``git ARGS`` (``scratch`` writable too): whether it succeeded, and what it said."""
    try:
        p = spawn.git(args, cwd=cwd, timeout=120, write=True, paths=[scratch])
    except subprocess.TimeoutExpired:
        return False, f"git {' '.join(args[:2])} took more than 120 s"
    except GitUnconfined as exc:
        return False, str(exc)
    return p.returncode == 0, (p.stderr + p.stdout).strip()


def has_commit(cwd: str) -> bool:
    """``cwd`` is inside a git repository that has a commit (a worktree can start from it)."""
    try:
        p = spawn.git(["rev-parse", "--verify", "-q", "HEAD"], cwd=cwd, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0

