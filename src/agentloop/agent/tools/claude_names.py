"""Claude Code's tools that agentloop does not make, declared once: what rules, agent files and clients may name.

A settings file written for Claude Code may name these in permission rules, an agent file may list them,
and a client (ACP, a hook's log) may show a call of one: each keeps its meaning here, and the parts that
read names (permissions, sub-agent types, ACP, the REPL's previews) import them from this module. The
MCP resource tools are the MCP layer's (``mcp.agent.RESOURCE_TOOLS``), which makes them.
"""

from __future__ import annotations

__all__ = ["EDITORS", "MULTI_EDIT", "NOTEBOOK_READ", "OTHERS", "PATH_ARGUMENTS", "READERS"]

MULTI_EDIT = "MultiEdit"
"""Claude Code's MultiEdit: one file (``file_path``) and a list of ``edits``, each an Edit's ``old_string`` and
``new_string``. agentloop's Edit makes one change and ``apply_patch`` many; a rule, an agent file or a client may
still name MultiEdit, and Edit rules and acceptEdits cover it."""

NOTEBOOK_READ = "NotebookRead"
"""Claude Code's NotebookRead (``notebook_path``): a ``Read(path)`` rule covers it, as it does Read."""
READERS = frozenset({NOTEBOOK_READ, "TodoRead"})
"""Claude Code's tools that only read: allowed without asking, as agentloop's readers are."""
EDITORS = frozenset({MULTI_EDIT})
"""Claude Code's tools that write files: Edit and Write path rules cover them, acceptEdits allows them."""
OTHERS = frozenset({"KillBash", "SlashCommand"})
"""Claude Code's other tools a rule may name without a warning (older names of tools agentloop has as others)."""

PATH_ARGUMENTS = ("file_path", "notebook_path", "path")
"""The path arguments of a tool without a record (Claude Code's MultiEdit and NotebookRead, a client's tool): each
one a call gives is checked by the rules, remembered in an answer's rule, and located for ACP. A built-in tool's
are its record's ``paths`` (``catalog.path_arguments``)."""
