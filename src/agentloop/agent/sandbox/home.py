"""The home folder as the workspace: said, and asked, before anything starts.

Claude Code and Codex both warn when started in the home folder: every file there (credential stores,
shell start-up files, other projects) would be the agent's workspace. agentloop asks in the REPL and, in
``-p`` where no one can answer, refuses with the way on: ``--home-workspace`` (the choice, for one run).
The sandbox still hides credential stores and keeps start-up files read-only then (``bubblewrap``,
``gitguard.STARTUP_FILES``)."""

from __future__ import annotations

import os

from .gitguard import account_homes, user_home_of

__all__ = ["FLAG", "home_workspace"]

FLAG = "--home-workspace"


def home_workspace(cwd: str) -> str | None:
    """What is wrong with ``cwd`` as a workspace when it is the user's home or a folder above it (``/``
    included), in words for the question; None for any other folder."""
    real = os.path.realpath(cwd)
    for home in account_homes(user_home_of(os.environ)):
        if real == home:
            return f"{real} is your home folder"
        if home.startswith(real.rstrip(os.sep) + os.sep):
            return f"{real} holds your home folder ({home})"
    return None
