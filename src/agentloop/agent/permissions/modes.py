"""The permission modes, named once: what rules, settings, flags and Shift+Tab choose from (imports nothing)."""

from __future__ import annotations

__all__ = ["MODES"]

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
"""Claude Code's permission modes, in the order ``--permission-mode`` lists them."""
