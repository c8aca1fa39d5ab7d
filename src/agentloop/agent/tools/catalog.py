"""Every built-in tool's record, listed once, and what the rest of the agent derives from them.

Rules:

1. ``RECORDS`` is the one list of built-in tools: a tool's record (``record.py``)
   lives beside the tool; adding a tool adds one line here. The order is the
   order the model is shown the tools (changing it changes the tool schemas
   sent to the model, and so every prompt cache).
2. Permissions, hook payloads, sub-agent types, ACP and the REPL's previews
   ask the helpers below (``record_of``, ``names_where``...), never a list of
   names of their own: a new tool is covered by all of them at once.
3. ``builtin_registry`` makes the tools that have a function (``run``); the
   parts that own the others make them from the same record (the ``Agent``
   tool, ``Skill``, the worktree and web tools).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ...tools import Registry
from ..commands import SKILL
from ..session_worktree import ENTER_WORKTREE, EXIT_WORKTREE
from ..subagents.agent_tool import AGENT
from .apply_patch import APPLY_PATCH
from .background import BASH_OUTPUT_TOOL, KILL_SHELL, BackgroundShells
from .builtin import (
    BASH,
    EDIT,
    GLOB,
    GREP,
    LS,
    NOTEBOOK_EDIT,
    READ,
    WRITE,
    CommandSandbox,
    RunningProcesses,
    build_registry,
)
from .record import ToolRecord
from .session_tools import ASK_USER_QUESTION, EXIT_PLAN_MODE, TODO_WRITE, SessionLink
from .web_fetch import WEB_FETCH
from .web_search import WEB_SEARCH

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["ALIASES", "RECORDS", "builtin_registry", "names_where", "path_arguments", "record_of"]

RECORDS: tuple[ToolRecord, ...] = (
    BASH, READ, WRITE, EDIT, GLOB, GREP, LS, NOTEBOOK_EDIT, BASH_OUTPUT_TOOL, KILL_SHELL,
    TODO_WRITE, EXIT_PLAN_MODE, ASK_USER_QUESTION, APPLY_PATCH,
    SKILL, ENTER_WORKTREE, EXIT_WORKTREE, AGENT, WEB_FETCH, WEB_SEARCH,
)
"""The built-in tools, in the order the model is shown them (rule 1)."""

_BY_NAME: dict[str, ToolRecord] = {r.name: r for r in RECORDS}
ALIASES: Mapping[str, str] = {alias: r.name for r in RECORDS for alias in r.aliases}
"""Other names of a tool (``Task`` for ``Agent``): rules and hook matchers may use them."""


def record_of(name: str) -> ToolRecord | None:
    """The record of the built-in tool called ``name`` (or one of its aliases); None for other tools (MCP...)."""
    r = _BY_NAME.get(name)
    if r is None and name in ALIASES:
        r = _BY_NAME[ALIASES[name]]
    return r


def names_where(test: Callable[[ToolRecord], bool]) -> frozenset[str]:
    """The names of the built-in tools whose record passes ``test``."""
    return frozenset(r.name for r in RECORDS if test(r))


def path_arguments(name: str) -> tuple[str, ...] | None:
    """Every path argument of built-in tool ``name``; None for a tool without a record."""
    r = record_of(name)
    return r.paths if r is not None else None


def builtin_registry(
    workspace: Workspace,
    *,
    spill_dir: str,
    shell_timeout_s: int = 120,
    processes: RunningProcesses | None = None,
    visible: Callable[[str], bool] | None = None,
    sandbox: CommandSandbox | None = None,
    env: Mapping[str, str] | None = None,
    redact: Callable[[str], str] | None = None,
    session: SessionLink | None = None,
    patch_guard: Callable[[str], str | None] | None = None,
    require_read: bool = True,
    shell_max_timeout_s: float | None = None,
    background: BackgroundShells | None = None,
) -> Registry:
    """A registry holding the built-in tools that have a function, confined to ``workspace``.

    Bash, Read, Write, Edit, Glob, Grep, LS, NotebookEdit, BashOutput, KillShell,
    TodoWrite, ExitPlanMode, AskUserQuestion and apply_patch, in that order
    (``RECORDS``'s). The arguments are ``builtin.build_registry``'s.
    """
    return build_registry(
        RECORDS, workspace, spill_dir=spill_dir, shell_timeout_s=shell_timeout_s, processes=processes,
        visible=visible, sandbox=sandbox, env=env, redact=redact, session=session, patch_guard=patch_guard,
        require_read=require_read, shell_max_timeout_s=shell_max_timeout_s, background=background,
    )
