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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tools import Registry, Tool, ToolError
from .tools.record import ToolRecord

__all__ = ["SessionWorktree", "WorktreePlace", "moved_tools", "session_worktree"]

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


@dataclass(frozen=True, slots=True)
class WorktreePlace:
    """What moving the session needs, made once by ``agent/builder.py``: where it works and its session's id now,
    its sub-agents' runner, the tools it shows, and ``move_to``, the agent's own method that moves it (its
    folder, the sandbox's read-only extra roots, its tools): this module never sets anything on the agent."""

    cwd: Callable[[], str]
    session_id: Callable[[], str]
    subagents: Callable[[], Any]
    """The ``SubagentRunner``, or None."""
    move_to: Callable[[str, Sequence[str]], None]
    shown_tools: Callable[[], Registry]


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

    def __init__(self, place: WorktreePlace):
        self.place = place
        self.wt: Any = None
        self.home_cwd: str | None = None
        self.label = ""
        self.moved = False
        """Set when the session moved: the run in progress takes the new tools after this batch (``moved_tools``)."""

    def tools(self) -> list[Tool]:
        return [ENTER_WORKTREE.tool(self.enter), EXIT_WORKTREE.tool(self.exit)]

    def enter(self, name: str | None = None) -> str:
        from .subagents.worktree import Worktree, has_commit

        a = self.place
        if self.wt is not None:
            raise ToolError(f"the session is already in a worktree at {self.wt.cwd}; ExitWorktree first")
        if name is not None and not _NAME.fullmatch(name):
            raise ToolError(f"EnterWorktree: name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
        cwd = a.cwd()
        if not has_commit(cwd):
            raise ToolError(f"EnterWorktree needs a git repository with a commit; {cwd} is not in one")
        self.label = f"session-{name or a.session_id()}"
        self.wt = Worktree.create(cwd, self.label)
        self.home_cwd = cwd
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
            runner = self.place.subagents()
            res = runner._merge_back(wt, self.label) if runner is not None else wt.finish(self.label)
            if res.get("applied") == "applied":
                wt.drop_branch()  # its changes are in the checkout now
            out = _describe(res)
        self.wt = self.home_cwd = None
        self._move(home)
        return f"The session is back in {home}. {out}"

    def _move(self, cwd: str) -> None:
        runner = self.place.subagents()
        if runner is not None:
            runner.cwd = cwd
        # the original repository, read-only, in the sandbox: the worktree's git data lives there; the agent
        # rebuilds its workspace, sandbox roots and permission rules at the new place
        self.place.move_to(cwd, (self.wt.repo,) if self.wt is not None else ())
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


def session_worktree(subject: object, place: WorktreePlace | None = None) -> SessionWorktree:
    """The agent's ``SessionWorktree``: made once, by the builder, from ``place``.

    Raises:
        ToolError: ``subject`` has none yet and no ``place`` is given.
    """
    sw = _MADE.get(subject)
    if sw is None:
        if place is None:
            raise ToolError("this session cannot move into a worktree (it was not built with one)")
        sw = _MADE[subject] = SessionWorktree(place)
    return sw


def moved_tools(subject: object) -> Registry | None:
    """After a tool batch: the tools at the session's new place when it entered or left a worktree (rule 1)."""
    sw = _MADE.get(subject)
    if sw is None or not sw.moved:
        return None
    sw.moved = False
    return sw.place.shown_tools()
