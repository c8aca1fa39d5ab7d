"""The session in a git worktree of its own: Claude Code's ``EnterWorktree`` and ``ExitWorktree`` tools, and ``--worktree``.

Claude Code's EnterWorktree "creates an isolated git worktree and switches the current session into it", on a
new branch from HEAD, with an optional ``name``; ExitWorktree leaves it with ``action`` ``keep`` (the worktree
and its branch stay on disk) or ``remove``. agentloop makes the worktree as it makes a sub-agent's
(``subagents/worktree.py``: git in its jail, the uncommitted work carried over, ``.worktreeinclude`` files copied,
environment folders linked) and, as for a sub-agent, ``remove`` brings the worktree's changes back: they are
committed on its branch and applied to the original checkout (each changed file recorded for rewind), then
the worktree and branch are removed; a conflict leaves the worktree in place and is reported.
``discard_changes: true`` removes it without applying anything.

Rules:

1. Entering moves the session: its working directory, file tools, Bash sandbox roots, permission rules and
   sub-agents follow the worktree from the next tool call on (the run in progress is handed the new tools).
2. One worktree at a time: entering again while in one is an error for the model, and so is leaving when
   not in one. Outside a git repository with a commit, entering is an error naming why.
"""

from __future__ import annotations

import re
import weakref
from typing import Any, Protocol

from ..tools import Registry, Tool, ToolError
from .tools.record import ToolRecord

__all__ = ["SessionWorktree", "moved_tools", "session_worktree"]

_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")

ENTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "A name for the worktree (letters, digits, '.', '_', '-'); "
                                                             "one is made when none is given."}},
    "additionalProperties": False,
}
EXIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["keep", "remove"],
                   "description": "remove (the default): apply the worktree's changes to the original checkout, then remove "
                                  "the worktree and its branch; keep: leave both on disk, the changes not applied."},
        "discard_changes": {"type": "boolean", "description": "With remove: drop the worktree's changes instead of applying them."},
    },
    "additionalProperties": False,
}


class WorktreeSubject(Protocol):
    """What moving the session needs of the agent."""

    cwd: str
    context: Any
    sandbox: Any
    session: Any

    def build_tools(self) -> None: ...
    def shown_tools(self) -> Registry: ...


ENTER_WORKTREE = ToolRecord(
    "EnterWorktree",
    "Use only when the user asks to work in a worktree: creates a git worktree on a new branch "
    "from this working tree (uncommitted changes included) and moves the session into it.",
    ENTER_SCHEMA, for_children=False,
)
EXIT_WORKTREE = ToolRecord(
    "ExitWorktree",
    "Leave the worktree EnterWorktree made and return to the original checkout. remove (the "
    "default) applies its changes there and removes it; keep leaves it and its branch on disk.",
    EXIT_SCHEMA, for_children=False,
)


class SessionWorktree:
    """Where the session works: its own checkout, or a worktree it entered."""

    def __init__(self, agent: WorktreeSubject):
        self.agent = agent
        self.wt: Any = None
        self.home_cwd: str | None = None
        self.label = ""
        self.moved = False
        """Set when the session moved: the run in progress takes the new tools after this batch (``moved_tools``)."""

    def tools(self) -> list[Tool]:
        return [ENTER_WORKTREE.tool(self.enter), EXIT_WORKTREE.tool(self.exit)]

    def enter(self, name: str | None = None) -> str:
        from .subagents.worktree import Worktree, has_commit

        a = self.agent
        if self.wt is not None:
            raise ToolError(f"the session is already in a worktree at {self.wt.cwd}; ExitWorktree first")
        if name is not None and not _NAME.fullmatch(name):
            raise ToolError(f"EnterWorktree: name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
        if not has_commit(a.cwd):
            raise ToolError(f"EnterWorktree needs a git repository with a commit; {a.cwd} is not in one")
        self.label = f"session-{name or a.session.id}"
        self.wt = Worktree.create(a.cwd, self.label)
        self.home_cwd = a.cwd
        self._move(self.wt.cwd)
        return (f"The session now works in {self.wt.cwd}, a new git worktree of {self.wt.repo} on branch {self.wt.branch} "
                "(the uncommitted work came along). ExitWorktree returns to the original checkout.")

    def exit(self, action: str = "remove", discard_changes: bool = False) -> str:
        wt, home = self.wt, self.home_cwd
        if wt is None or home is None:
            raise ToolError("the session is not in a worktree that EnterWorktree made")
        if action not in ("keep", "remove"):
            raise ToolError(f"ExitWorktree: action must be keep or remove, not {action!r}")
        if action == "keep":
            out = f"Left the worktree at {wt.path} (branch {wt.branch}) on disk, its changes not applied."
        elif discard_changes:
            wt.discard()
            out = "Removed the worktree and its branch; its changes were dropped."
        else:
            runner = getattr(self.agent.context, "subagents", None)
            res = runner._merge_back(wt, self.label) if runner is not None else wt.finish(self.label)
            if res.get("applied") == "applied":
                wt.drop_branch()  # its changes are in the checkout now
            out = _describe(res)
        self.wt = self.home_cwd = None
        self._move(home)
        return f"The session is back in {home}. {out}"

    def _move(self, cwd: str) -> None:
        a = self.agent
        a.cwd = cwd
        runner = getattr(a.context, "subagents", None)
        if runner is not None:
            runner.cwd = cwd
        # the original repository, read-only, in the sandbox: the worktree's git data lives there
        a.sandbox.also_read = (self.wt.repo,) if self.wt is not None else ()
        a.build_tools()  # workspace, sandbox roots and permission rules at the new place
        self.moved = True


def _describe(res: dict[str, Any]) -> str:
    if not res.get("changed"):
        return "Nothing had changed there; the worktree and its branch are removed."
    files = res.get("files") or []
    if res.get("applied") == "applied":
        return f"Its changes ({len(files)} file{'s' if len(files) != 1 else ''}: {', '.join(files[:8])}) were applied here."
    if res.get("applied") == "conflicts":
        return f"Its changes conflict here; the worktree stays at {res.get('path')}: " + "; ".join(res.get("conflicts") or [])
    return f"Its changes could not be applied here; they are on branch {res.get('branch')} at {res.get('path')}."


_MADE: weakref.WeakKeyDictionary[Any, SessionWorktree] = weakref.WeakKeyDictionary()
"""Each agent's ``SessionWorktree``."""


def session_worktree(subject: WorktreeSubject) -> SessionWorktree:
    """The agent's ``SessionWorktree`` (made once)."""
    sw = _MADE.get(subject)
    if sw is None:
        sw = _MADE[subject] = SessionWorktree(subject)
    return sw


def moved_tools(subject: object) -> Registry | None:
    """After a tool batch: the tools at the session's new place when it entered or left a worktree (rule 1)."""
    sw = _MADE.get(subject)
    if sw is None or not sw.moved:
        return None
    sw.moved = False
    return sw.agent.shown_tools()
