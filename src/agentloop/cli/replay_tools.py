"""The terminal agent's own tools for ``agentloop replay --mode live-tools``.

A session the agent recorded calls Read, Bash, Edit...; replaying it with
live tools runs those again for real. They are built by the agent itself (an
``Agent`` on the scripted model, with an empty home of its own: no session of
the user's is opened, no key is read), so Bash runs inside the same sandbox and
with the same child environment as in the session, and the file tools are
confined to the same workspace. That workspace is a scratch copy of the folder
the session worked in: what the replayed calls write never reaches the folder.
Without a working sandbox the replay is refused: Bash would run unconfined.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._common import UserError

MAX_COPY_BYTES = 1 << 30
"""The largest folder copied for a replay (1 GiB): a larger one is refused with one line."""
MAX_COPY_FILES = 100_000


def is_agent_session(path: str) -> bool:
    """The transcript was written by the terminal agent: its first record is a ``session_start``."""
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
        rec = json.loads(first)
    except (OSError, ValueError):
        return False  # the replay itself says what is wrong with the file
    return isinstance(rec, dict) and rec.get("kind") == "session_start"


def _check_size(folder: str) -> None:
    total = files = 0
    for top, dirs, names in os.walk(folder):
        files += len(names) + len(dirs)
        for n in names:
            try:
                total += os.lstat(os.path.join(top, n)).st_size
            except OSError:
                continue
        if total > MAX_COPY_BYTES or files > MAX_COPY_FILES:
            raise UserError(f"--workdir {folder}: over {MAX_COPY_BYTES >> 20} MiB or {MAX_COPY_FILES} files to copy "
                            "for the replay's scratch copy; name the session's own folder")


@contextmanager
def open_agent_tools(workdir: str) -> Iterator[Any]:
    """The agent's tools (a ``Registry``) working in a scratch copy of ``workdir``; removed on exit."""
    from agentloop.agent.agent import Agent
    from agentloop.agent.protocols import AgentError

    if not os.path.isdir(workdir):
        raise UserError(f"--workdir {workdir}: not a folder")
    _check_size(workdir)
    with tempfile.TemporaryDirectory(prefix="agentloop-replay-") as tmp:
        scratch = os.path.join(tmp, "work")
        try:
            shutil.copytree(workdir, scratch, symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise UserError(f"--workdir {workdir}: cannot copy it for the replay: {exc}") from None
        home = os.path.join(tmp, "home")
        script = os.path.join(tmp, "no-replies.json")
        with open(script, "w", encoding="utf-8") as f:
            f.write("[]")
        try:
            from agentloop.providers.scripted import RECORD as SCRIPTED

            agent = Agent(cwd=scratch, home=home, model=f"{SCRIPTED.name}:{script}", trust=False)
        except AgentError as exc:
            raise UserError(f"replay with the agent's tools: {exc}") from None
        try:
            if not agent.sandbox.active:
                why = agent.sandbox.unavailable or agent.sandbox.settings.mode
                raise UserError(f"replay with the agent's tools runs Bash again for real and needs its sandbox, which is off ({why})")
            print(f"live tools: the agent's own, in a scratch copy of {workdir} (removed afterwards); "
                  "Bash runs inside the agent's sandbox", file=sys.stderr)
            yield agent.registry
        finally:
            agent.close()
