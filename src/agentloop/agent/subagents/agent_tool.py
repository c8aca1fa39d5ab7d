"""The ``Agent`` tool's record (``tools/record.py``): its name, old name, schema and first line.

It lives apart from ``runner.py``, which makes the tool, so that the permission
rules, hooks and agent types can read it without importing the runner (which
reaches them in turn). ``Task`` is Claude Code's name for it before version
2.1.63: rules, hook matchers and agent files may still use it.
"""

from __future__ import annotations

from typing import Any

from ..tools.record import ToolRecord

__all__ = ["AGENT", "AGENT_SCHEMA"]

AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
        "prompt": {"type": "string", "description": "The task for the sub-agent, complete: it sees nothing else."},
        "subagent_type": {"type": "string", "description": "The kind of agent to use (see the tool description)."},
        "isolation": {"type": "string", "enum": ["worktree", "none"],
                      "description": "worktree: work in a temporary git worktree (the default for agents that may write, "
                                     "in a git repository); none: work in this directory."},
        "run_in_background": {"type": "boolean",
                              "description": "Run the agent in the background: this call returns at once, and its report "
                                             "arrives as a message on a later turn."},
    },
    "required": ["description", "prompt"],
    "additionalProperties": False,
}

AGENT = ToolRecord(
    "Agent",
    "Start a sub-agent for a task: it has its own context, works with its own tools, and answers with one final report.",
    AGENT_SCHEMA, rule="agent", for_children=False, aliases=("Task",), concurrent=True, spends=True,
)
"""The runner adds the types it knows to the description (``SubagentRunner.describe``)."""
