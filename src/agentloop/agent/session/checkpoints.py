"""Checkpoints of the files the agent changes, and rewinding a session to before a prompt.

Rules:

1. Before a built-in tool writes a file (Write, Edit, and anything else that
   writes through ``Workspace.write_bytes``), the file's previous content is
   kept, content-addressed, under ``<agentloop home>/checkpoints/<sha256>``
   (mode 0600; a file that did not exist is ``null``), and so is the new
   content. The session records a ``file_change`` record: ``path``,
   ``before`` and ``after`` (SHA-256 hex, or null), ``turn`` (the prompt
   number) and ``tool_call_id`` when known. So what a rewind restores is in
   the hash-chained record, and a verifier can check every blob against it.
2. Changes made by Bash commands (or by hand) are not tracked: a rewind says
   so where it is offered, as Claude Code's does.
3. Rewinding to before prompt N restores each file changed at or after N to
   its content before its first change from N on (a file that did not exist
   is removed), and/or the conversation to what it was before N. A file whose
   content is no longer the last recorded ``after`` (changed by hand, or by
   Bash, since) is reported and left alone unless the rewind is forced.
4. A rewind is itself recorded (a ``rewind`` record naming the prompt, what
   was restored and what was left); the session's chain is never cut.
5. A rewind never touches a path outside the workspace (the working directory
   and the added directories), whatever a record says: a ``file_change``
   naming one (a forged record verifies if its hashes were recomputed) is
   reported and left alone, ``--force`` or not. The path is checked with its
   directories resolved (a symlink out of the workspace does not count as in).
6. A plan is made in one streaming pass over the records (a session may be
   larger than memory); only prompts and file changes are kept.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...config.private import private_dirs

__all__ = ["Checkpoints", "FileChange", "RewindPlan", "plan_rewind", "prompts_of"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Checkpoints:
    """The content-addressed store of file contents under the agentloop home."""

    def __init__(self, home: str):
        self.dir = os.path.join(home, "checkpoints")

    def path_of(self, digest: str) -> str:
        return os.path.join(self.dir, digest[:2], digest[2:])

    def put(self, data: bytes) -> str:
        """Keep ``data``; its SHA-256 hex. Idempotent: the same content is stored once."""
        digest = _sha(data)
        path = self.path_of(digest)
        if not os.path.exists(path):
            private_dirs(os.path.dirname(path))  # checkpoints/ and checkpoints/xx/ both 0700, whatever the umask
            tmp = f"{path}.tmp-{os.getpid()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return digest

    def get(self, digest: str) -> bytes:
        """The content of ``digest``, checked against it.

        Raises:
            ValueError: missing, or its bytes do not hash to ``digest`` (tampered).
        """
        try:
            with open(self.path_of(digest), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ValueError(f"checkpoint {digest[:12]} is missing ({exc.strerror or exc})") from None
        if _sha(data) != digest:
            raise ValueError(f"checkpoint {digest[:12]} does not match its hash: it was changed")
        return data


@dataclass(frozen=True)
class FileChange:
    path: str
    before: str | None
    after: str | None
    turn: int
    seq: int


@dataclass
class RewindPlan:
    """What a rewind to before prompt ``turn`` would do."""

    turn: int
    restore: dict[str, str | None] = field(default_factory=dict)
    """path -> the content to put back (its SHA-256), or None to remove the file."""
    changed_since: list[str] = field(default_factory=list)
    """Files whose content is not the last recorded one: changed by hand or by Bash since."""
    outside: list[str] = field(default_factory=list)
    """Paths the records name outside the workspace: never touched (rule 5)."""
    conversation_seq: int | None = None
    """The last record before prompt ``turn``'s run (the conversation to go back to)."""


def file_changes(records: Iterable[Any]) -> list[FileChange]:
    out = []
    for r in records:
        if r.kind == "file_change" and isinstance(r.payload, dict):
            p = r.payload
            out.append(FileChange(str(p.get("path")), p.get("before"), p.get("after"), int(p.get("turn", 0)), r.seq))
    return out


def prompts_of(records: Iterable[Any]) -> list[tuple[int, int, str]]:
    """(prompt number, seq of its run_start, the prompt's text) for each user prompt of a session."""
    out = []
    for r in records:
        if r.kind != "run_start" or not isinstance(r.payload, dict):
            continue
        meta = (r.payload.get("config") or {}).get("meta") or {}
        turn = meta.get("turn")
        if not isinstance(turn, int):
            continue
        msgs = r.payload.get("messages") or []
        text = next((str(m.get("content", "")) for m in reversed(msgs) if isinstance(m, dict) and m.get("role") == "user"), "")
        out.append((turn, r.seq, text))
    return out


def _current(path: str) -> str | None:
    """The SHA-256 of a file's content, read in pieces; None when there is none."""
    from ...transcript import open_regular

    try:
        with open_regular(path) as f:
            h = hashlib.sha256()
            while chunk := f.read(1 << 20):
                h.update(chunk)
            return h.hexdigest()
    except FileNotFoundError:
        return None
    except OSError:
        return "unreadable"


def confined(path: str, roots: Iterable[str]) -> str | None:
    """``path`` with its directories resolved, when that is strictly inside one of ``roots``; else None (rule 5)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return None
    name = os.path.basename(path)
    if name in ("", ".", ".."):
        return None
    real = os.path.join(os.path.realpath(os.path.dirname(path)), name)
    for root in roots:
        r = os.path.realpath(root)
        if real != r and real.startswith(r.rstrip(os.sep) + os.sep):
            return real
    return None


def plan_rewind(records: Iterable[Any], turn: int, roots: Iterable[str]) -> RewindPlan:
    """What rewinding to before prompt ``turn`` restores (rules 3, 5, 6): one pass over ``records``.

    Raises:
        ValueError: the session has no prompt ``turn``.
    """
    roots = list(roots)
    prompts: list[int] = []
    start: int | None = None
    restore: dict[str, str | None] = {}
    last_after: dict[str, str | None] = {}
    for r in records:
        if r.kind == "run_start":
            for n, seq, _ in prompts_of([r]):
                prompts.append(n)
                if n == turn and start is None:
                    start = seq
        elif r.kind == "file_change":
            for ch in file_changes([r]):
                last_after[ch.path] = ch.after
                if ch.turn >= turn and ch.path not in restore:
                    restore[ch.path] = ch.before
    if start is None:
        have = ", ".join(str(n) for n in prompts) or "none"
        raise ValueError(f"the session has no prompt {turn} (prompts: {have})")
    plan = RewindPlan(turn=turn, conversation_seq=start - 1)
    for path, digest in restore.items():
        real = confined(path, roots)
        if real is None:
            plan.outside.append(path)
            continue
        plan.restore[real] = digest
        if _current(real) != last_after.get(path):
            plan.changed_since.append(real)
    return plan


def _refuse_code_for_git(plan: RewindPlan, store: Checkpoints, roots: list[str], force: bool) -> None:
    """The write wall's one check (``sandbox.gitguard.write_refusal``) on everything the rewind would write
    back: an earlier state put back among what commands made since can be a repository that runs a program.

    Raises:
        ValueError: it would (nothing is written), or a checkpoint is missing or changed.
    """
    from ..sandbox.gitguard import write_refusal

    pending: dict[str, bytes | None] = {}
    for path, digest in plan.restore.items():
        real = confined(path, roots)
        if real is not None and (force or path not in plan.changed_since):
            pending[real] = None if digest is None else store.get(digest)
    why = write_refusal(pending, [os.path.realpath(r) for r in roots])
    if why is not None:
        raise ValueError(f"the rewind would write files the user's git runs without asking: {why}; nothing was"
                         " restored (put those files back by hand if that is what you want)")


def apply_rewind(plan: RewindPlan, store: Checkpoints, roots: Iterable[str], *, force: bool = False) -> tuple[list[str], list[str]]:
    """Put the files of ``plan`` back; (restored, left alone). A file changed since is left
    alone unless ``force``; a path outside ``roots`` always is (rule 5), checked again here.

    Raises:
        ValueError: a checkpoint is missing or does not match its hash (nothing is written for it).
    """
    roots = list(roots)
    restored: list[str] = []
    left: list[str] = list(plan.outside)
    _refuse_code_for_git(plan, store, roots, force)
    for path, digest in plan.restore.items():
        real = confined(path, roots)
        if real is None:
            left.append(path)
            continue
        if path in plan.changed_since and not force:
            left.append(path)
            continue
        if digest is None:
            try:
                os.unlink(real)
            except FileNotFoundError:
                pass
        else:
            data = store.get(digest)
            os.makedirs(os.path.dirname(real) or ".", exist_ok=True)
            tmp = f"{real}.agentloop-rewind-{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, real)
        restored.append(path)
    return restored, left
