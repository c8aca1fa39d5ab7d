"""``CLAUDE_ENV_FILE``: the file SessionStart hooks write ``export`` lines to, for the session's later Bash calls.

Claude Code's hooks reference, "Persist environment variables": "SessionStart
hooks have access to the ``CLAUDE_ENV_FILE`` environment variable, which
provides a file path where you can persist environment variables for
subsequent Bash commands." Here the file is made empty (0600) in the session's
own folder before the SessionStart hooks run (a project's hooks, which run in
the sandbox, get it writable there); once they have all finished, it is
sourced once by bash in the hooks' own environment, where they ran: in the
sandbox when a project's hook could have written it, so it runs nothing they
could not, and never a sandboxed hook's words on the host. What it changed is
handed to the secret guard (``SecretGuard.carry_exports``), which adds it to the
environment Bash starts with by the rule every child's environment is made by:
kept out are the provider keys, the keys the agent holds, and secret-named or
credential-shaped variables ``allowedEnvVars`` does not name (a warning names each). Shell functions and aliases it defines are not carried
(only exported variables are).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping

__all__ = ["new_env_file", "read_env_file"]

NOT_CARRIED = frozenset(("CLAUDE_ENV_FILE", "PWD", "OLDPWD", "SHLVL", "_", "CLAUDE_PROJECT_DIR", "AGENTLOOP_PROJECT_DIR"))
"""What sourcing the file changes that is not the hooks' to set for Bash."""
SOURCE_TIMEOUT_S = 10.0


def new_env_file(folder: str) -> str:
    """An empty ``claude-env.sh`` in ``folder`` (made 0700 if missing; the file 0600, emptied if it was there)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, "claude-env.sh")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    return path


Wrap = Callable[[list[str], str], "tuple[list[str], dict[str, str]] | None"]
"""(argv, the file) -> the argv that runs it in the sandbox and extra environment (``HookRunner.confined_source``)."""


def _environ_after(path: str, env: Mapping[str, str], cwd: str, wrap: Wrap | None = None) -> dict[str, str] | str:
    """The environment after bash sources ``path`` in ``env`` (in the sandbox with ``wrap``), or why it could not be read."""
    shell = shutil.which("bash", path=env.get("PATH")) or "/bin/bash"
    argv = [shell, "-c", '. "$1" >/dev/null 2>&1 </dev/null; env -0', "claude-env", path]
    extra: dict[str, str] = {}
    if wrap is not None:
        wrapped = wrap(argv, path)
        if wrapped is None:
            return "the sandbox that its hooks ran in cannot start to read it"
        argv, extra = wrapped
    from .. import spawn

    try:
        code, stdout, _ = spawn.run(argv, env=spawn.ChildEnv({**env, **extra}), cwd=cwd, timeout=SOURCE_TIMEOUT_S)
    except OSError as exc:
        return f"cannot source it: {exc}"
    if code is None:
        return f"sourcing it took longer than {SOURCE_TIMEOUT_S:g} s"
    out: dict[str, str] = {}
    for item in stdout.decode("utf-8", "replace").split("\0"):
        name, eq, value = item.partition("=")
        if eq:
            out[name] = value
    return out


def read_env_file(path: str, env: Mapping[str, str], cwd: str,
                  wrap: Wrap | None = None) -> tuple[dict[str, str], list[str]]:
    """What the hooks exported through ``path`` (name -> value: every variable sourcing it changed, but
    ``NOT_CARRIED``), and warnings (why it could not be read). Which of them a child may get is the secret
    guard's to decide (``SecretGuard.carry_exports``), not this reader's.

    ``env`` is the environment the hooks ran with; ``wrap``: where the hooks ran in the sandbox, the file is
    sourced there too (what they wrote never runs on the host).
    """
    try:
        if os.path.getsize(path) == 0:
            return {}, []
    except OSError:
        return {}, []
    after = _environ_after(path, env, cwd, wrap)
    if isinstance(after, str):
        return {}, [f"CLAUDE_ENV_FILE {path}: {after}; nothing from it reaches Bash"]
    return {n: v for n, v in sorted(after.items()) if n not in NOT_CARRIED and env.get(n) != v}, []
