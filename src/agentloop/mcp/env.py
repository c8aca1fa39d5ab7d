"""The environment a stdio MCP server starts with.

As in Claude Code, a stdio server inherits the user's environment (a token
exported in the shell reaches it without being written again under ``env``),
plus ``CLAUDE_PROJECT_DIR`` and the server's own ``env`` entries on top. The
agent's own provider credentials are the exception: the variables of
``config.credentials.PROVIDER_KEY_VARS`` (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``...) and the variable the agent was told to read its key
from (``--api-key-env``) are left out, so a server never receives the key
that pays for the model. A server that does need one of them gets it only
when its ``env`` names it (``"env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..config.credentials import PROVIDER_KEY_VARS

__all__ = ["PROVIDER_KEYS", "server_environment"]

PROVIDER_KEYS = tuple(sorted(PROVIDER_KEY_VARS))


def server_environment(
    environ: Mapping[str, str],
    explicit: Mapping[str, str],
    *,
    project_dir: str | None = None,
    withhold: Iterable[str] = (),
) -> dict[str, str]:
    """``environ`` without the provider credentials, then ``CLAUDE_PROJECT_DIR``, then ``explicit``."""
    hidden = set(PROVIDER_KEYS) | {w for w in withhold if w}
    env = {k: v for k, v in environ.items() if k not in hidden}
    if project_dir:
        env["CLAUDE_PROJECT_DIR"] = project_dir
    env.update(explicit)
    return env
