"""Where key names point: ``$AGENTLOOP_HOME/keys/NAME.key`` and ``NAME.pub``."""

from __future__ import annotations

import os


def keys_dir() -> str:
    from agentloop.config.settings import agentloop_home

    return os.path.join(agentloop_home(), "keys")


def resolve_key(ref: str, suffix: str) -> str:
    """A key path: ``ref`` itself when it is a file or looks like a path, else ``keys_dir()/ref + suffix``."""
    if os.path.exists(ref) or os.sep in ref or ref.endswith((".pem", ".key", ".pub")):
        return ref
    return os.path.join(keys_dir(), ref + suffix)
