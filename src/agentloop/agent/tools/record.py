"""One record per built-in tool: everything the rest of the agent needs to know about it, declared once beside it.

Rules:

1. A tool's module declares its ``ToolRecord`` (name, description, schema,
   function...); ``agent/tools/catalog.py`` lists every record once, in the
   order the model is shown them. Permissions, hook payloads, sub-agent types,
   ACP and the REPL's previews read the records (``catalog.py``'s helpers), so
   none of them names a built-in tool.
2. ``paths`` names EVERY argument that is a file or directory path: each one
   is checked by the permission rules and made absolute for hooks. A path
   argument left out would go unchecked, so a schema property that is a path
   must be listed (``tests/test_tool_records.py`` holds each record to it).
3. ``read_only``: the tool changes nothing, so the loop may run it beside
   others (as it may a ``concurrent`` one). ``asks``: a call needs the permission rules' consent (False for the
   tools that only read, and for the session's own bookkeeping tools).
4. This module imports nothing of the agent: any part may read a record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ...tools import Tool

__all__ = ["AcpKind", "HookShape", "RuleKind", "ToolRecord"]

RuleKind = Literal["read", "search", "edit", "bash", "web", "agent", "tool"]
"""How permission rules apply: ``read`` and ``search`` tools are covered by ``Read(...)`` path rules, ``edit`` tools
by ``Edit(...)``/``Write(...)`` path rules and by acceptEdits, ``bash`` by command rules, ``web`` by ``domain:``
rules, ``agent`` by the sub-agent checks; ``tool`` only by the tool's name."""
HookShape = Literal["bash", "read", "write", "edit"]
"""The documented shape of PostToolUse's ``tool_response`` for the tool (Claude Code's hooks reference), and the
change the REPL previews (``write``, ``edit``) or sums up (``read``)."""
AcpKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
"""The Agent Client Protocol's ``ToolKind`` the client is told for a call."""
Output = Literal["spill", "page", "raw"]
"""What happens to a long result: ``spill`` to a file with a preview, ``page`` (the tool pages itself; only
redacted), ``raw`` (returned as is: a short structured answer)."""


@dataclass(frozen=True, eq=False)
class ToolRecord:
    """A built-in tool, declared once (rule 1); compared by identity (its schema is a dict)."""

    name: str
    description: str
    """What the model is told (a tool whose text depends on the session passes its own to ``tool``)."""
    schema: dict[str, Any]
    """The JSON Schema of its arguments, as sent to the model."""
    read_only: bool = False
    """It changes nothing: the loop may run it beside other calls."""
    spends: bool = False
    """Its calls make model calls of their own, paid from the run's budget: one starts only while the run has
    room left (``ParentBudget.admit``, the scheduler's ``admit``)."""
    concurrent: bool = False
    """It changes something, yet its calls may run beside others (``run.waves``): the ``Agent`` tool, whose
    children keep their records in call order and draw from the parent's room call by call."""
    asks: bool = True
    """A call needs the permission rules' consent (False: allowed without asking, and in plan mode)."""
    lookup: bool = False
    """It changes nothing here but reaches the network: plan mode lets it be asked for (research is planning)."""
    paths: tuple[str, ...] = ()
    """Every argument that names a file or directory (rule 2)."""
    default_path: bool = False
    """An absent path argument means the workspace, searched (Glob, Grep, LS)."""
    rule: RuleKind = "tool"
    hook: HookShape | None = None
    acp: AcpKind = "other"
    for_children: bool = True
    """A sub-agent may have it (False: the ``Agent`` tool itself, and tools that move the parent's session)."""
    aliases: tuple[str, ...] = ()
    """Other names rules and hook matchers may use for it (Claude Code's older names)."""
    run: Callable[..., Any] | None = None
    """``run(context, **arguments)`` for the tools the built-in registry makes (``catalog.builtin_registry``);
    None for a tool made by the part that owns it (the ``Agent`` tool, ``Skill``, the web tools)."""
    output: Output = "spill"
    text_only: bool = False
    """Its arguments are written to files as UTF-8: lone surrogates are refused with a message."""
    describe: Callable[[Any], str] | None = None
    """``describe(context)``: the description for this session, where it depends on settings (Bash's timeouts)."""

    def tool(self, fn: Callable[..., Any], description: str | None = None) -> Tool:
        """The ``Tool`` the model calls: this record's name, schema and read-only flag, with ``fn``."""
        return Tool(name=self.name, description=self.description if description is None else description,
                    parameters=self.schema, fn=fn, read_only=self.read_only, concurrent=self.concurrent)
