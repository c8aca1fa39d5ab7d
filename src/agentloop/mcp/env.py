"""The environment a stdio MCP server starts with.

As in Claude Code, a stdio server inherits the user's environment (a token
exported in the shell reaches it without being written again under ``env``),
plus ``CLAUDE_PROJECT_DIR`` and the server's own ``env`` entries on top. The
agent's own provider credentials are the exception: the variables of
``config.credentials.PROVIDER_KEY_VARS`` (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``...) and the variable the agent was told to read its key
from (``--api-key-env``) are left out, so a server never receives the key
that pays for the model. So are the variables whose names look like secrets
(``*TOKEN*``, ``*KEY*``...: ``config.credentials.child_environment``, the rule
every child of agentloop starts with) unless the user's ``allowedEnvVars``
names them. A server that does need one of them gets it only when its ``env``
names it (``"env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..config.credentials import PROVIDER_KEY_VARS, child_environment

__all__ = ["PROVIDER_KEYS", "server_environment"]

PROVIDER_KEYS = tuple(sorted(PROVIDER_KEY_VARS))


def server_environment(
    environ: Mapping[str, str],
    explicit: Mapping[str, str],
    *,
    project_dir: str | None = None,
    withhold: Iterable[str] = (),
    allowed: Iterable[str] = (),
) -> dict[str, str]:
    """``environ`` as every child gets it (no provider keys, no unallowed secrets), then ``CLAUDE_PROJECT_DIR``, then ``explicit``."""
    env = dict(child_environment(environ, allowed=allowed, drop=withhold))
    if project_dir:
        env["CLAUDE_PROJECT_DIR"] = project_dir
    env.update(explicit)
    return env
