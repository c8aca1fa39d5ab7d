"""``AgentError``: the one error the agent stops with, one line for the user (imports nothing)."""

from __future__ import annotations

__all__ = ["AgentError"]


class AgentError(Exception):
    """The agent cannot start or continue: one line for the user (a bad model, config or session)."""
