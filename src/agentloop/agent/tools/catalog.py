"""Every built-in tool's record, listed once, and what the rest of the agent derives from them.

Rules:

1. ``DECLARED`` is the one list of built-in tools: a tool's record (``record.py``)
   lives beside the tool; adding a tool adds one line here (``module:NAME``),
   and ``RECORDS`` holds the records it names. The order is the
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

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ...tools import Registry
from .background import BackgroundShells
from .builtin import CommandSandbox, RunningProcesses, build_registry
from .record import ToolRecord
from .session_tools import SessionLink

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["ALIASES", "DECLARED", "RECORDS", "builtin_registry", "names_where", "path_arguments", "record_of"]

DECLARED = (
    "agentloop.agent.tools.builtin:BASH",
    "agentloop.agent.tools.builtin:READ",
    "agentloop.agent.tools.builtin:WRITE",
    "agentloop.agent.tools.builtin:EDIT",
    "agentloop.agent.tools.builtin:GLOB",
    "agentloop.agent.tools.builtin:GREP",
    "agentloop.agent.tools.builtin:LS",
    "agentloop.agent.tools.builtin:NOTEBOOK_EDIT",
    "agentloop.agent.tools.background:BASH_OUTPUT_TOOL",
    "agentloop.agent.tools.background:KILL_SHELL",
    "agentloop.agent.tools.session_tools:TODO_WRITE",
    "agentloop.agent.tools.session_tools:EXIT_PLAN_MODE",
    "agentloop.agent.tools.session_tools:ASK_USER_QUESTION",
    "agentloop.agent.tools.apply_patch:APPLY_PATCH",
    "agentloop.agent.commands:SKILL",
    "agentloop.agent.session_worktree:ENTER_WORKTREE",
    "agentloop.agent.session_worktree:EXIT_WORKTREE",
    "agentloop.agent.subagents.agent_tool:AGENT",
    "agentloop.agent.tools.web_fetch:WEB_FETCH",
    "agentloop.agent.tools.web_search:WEB_SEARCH",
)
"""Where each built-in tool's record is declared (``module:NAME``), one line a tool, in the order the model is
shown them (rule 1). ``scripts/check_layers.py`` reads these as the imports they are."""


def _load(declared: str) -> ToolRecord:
    module, _, name = declared.partition(":")
    record = getattr(importlib.import_module(module), name)
    if not isinstance(record, ToolRecord):
        raise TypeError(f"catalog: {declared} is not a ToolRecord")
    return record


def index(declared: tuple[str, ...]) -> tuple[tuple[ToolRecord, ...], dict[str, ToolRecord], dict[str, str]]:
    """The records ``declared`` names, in order; each by its name; each alias's tool name."""
    records = tuple(_load(d) for d in declared)
    return records, {r.name: r for r in records}, {alias: r.name for r in records for alias in r.aliases}


RECORDS: tuple[ToolRecord, ...]
"""The built-in tools, in the order the model is shown them (rule 1)."""
_BY_NAME: dict[str, ToolRecord]
ALIASES: Mapping[str, str]
"""Other names of a tool (``Task`` for ``Agent``): rules and hook matchers may use them."""
RECORDS, _BY_NAME, ALIASES = index(DECLARED)


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
    follow_shell: Callable[[Callable[[], str | None]], None] | None = None,
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
        follow_shell=follow_shell,
    )
