"""The one way the agent starts a process.

Every process the agent starts, for the model (Bash, ``!`` lines), for a
repository (hooks) or for itself (git for a sub-agent's worktree), starts
here; MCP stdio servers are started by the MCP library with an environment
made by the same rule (``mcp/env.py``). ``tests/test_spawn.py`` reads the
source and fails on a process started anywhere else.

Rules:

1. The environment is decided here: ``environment()`` gives the user's
   environment without the provider keys, without the variables holding a
   key the agent uses, and without every secret-named variable
   (``*TOKEN*``, ``*SECRET*``, ``*KEY*``, ``*PASSWORD*``, ``*CREDENTIAL*``,
   any case) that the user's own settings do not allow by name
   (``allowedEnvVars``: ``allowed_names``). ``popen`` applies the same rule
   with no names allowed to any environment that was not made so: a caller
   that forgets fails closed.
2. Confinement is the sandbox's (``sandbox/bubblewrap.py``): a caller that
   runs a command inside it passes the sandbox's launcher, and ``popen``
   hands it the argv and the decided environment.
3. Git that agentloop runs for itself (``git()``) runs none of a
   repository's code: no hooks, no fsmonitor, no pager, no external diff or
   textconv, no clean/smudge/process filters, no system or user config of the
   repository's choosing, and no prompt for credentials.
4. Every child starts in a session of its own (its process group is its
   pid), so ending the group ends everything it started.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from ..config.credentials import ChildEnv, child_environment, secret_named
from ..config.settings import SettingsSource

__all__ = [
    "GIT_SAFE_CONFIG",
    "ChildEnv",
    "Launcher",
    "allowed_names",
    "environment",
    "git",
    "git_environment",
    "git_identity",
    "open_url",
    "popen",
    "secret_named",
]

SETTINGS_KEY = "allowedEnvVars"
"""The settings key naming secret-named variables children may have (user settings only)."""

Launcher = Callable[[list[str], dict[str, str], tuple[int, ...]], Any]
"""Starts ``(argv, env, pass_fds)`` somewhere else (the sandbox): a Popen or its look-alike."""


def allowed_names(sources: Sequence[SettingsSource]) -> tuple[frozenset[str], list[str]]:
    """The variable names ``allowedEnvVars`` allows, and one warning per entry not honoured.

    Only the user's own settings may allow one: a repository's settings
    naming ``GITHUB_TOKEN`` would hand the user's token to the repository's
    commands.
    """
    names: set[str] = set()
    warnings: list[str] = []
    for s in sources:
        if SETTINGS_KEY not in s.data:
            continue
        value = s.data[SETTINGS_KEY]
        where = f"{s.path}: {SETTINGS_KEY}"
        if s.scope not in ("user", "managed"):
            warnings.append(f"{where} ignored: only the user's own settings may hand secret variables to commands")
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            warnings.append(f"{where} is not a list of variable names: ignored")
            continue
        names.update(value)
    return frozenset(names), warnings


def environment(
    environ: Mapping[str, str], *, allowed: Iterable[str] = (), drop: Iterable[str] = (), held: Iterable[str] = ()
) -> ChildEnv:
    """The environment every child of this agent starts from (rule 1; ``config.credentials.child_environment``)."""
    return child_environment(environ, allowed=allowed, drop=drop, held=held)


def _decided(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return dict(child_environment(os.environ))
    if isinstance(env, ChildEnv):
        return dict(env)
    return dict(child_environment(env))


def popen(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.STDOUT,
    pass_fds: Sequence[int] = (),
    launcher: Launcher | None = None,
) -> Any:
    """Start ``argv`` in a new session: a ``subprocess.Popen`` (or the launcher's look-alike).

    ``env`` is a ``ChildEnv`` (from ``environment()``), possibly with the
    caller's own additions; any other mapping, or None, is cut down by rule 1
    with no name allowed.

    Raises:
        OSError: it cannot start.
    """
    child = _decided(env)
    if launcher is not None:
        return launcher(list(argv), child, tuple(pass_fds))
    return subprocess.Popen(
        list(argv), cwd=cwd, env=child, stdin=stdin, stdout=stdout, stderr=stderr,
        start_new_session=True, pass_fds=tuple(pass_fds),
    )


def open_url(url: str, *, env: Mapping[str, str] | None) -> None:
    """Open ``url`` in the user's browser (an MCP sign-in), started as every child is; failures are silent.

    Python's ``webbrowser`` would start the browser with this process's
    environment, keys included: it runs here as a child of its own instead.
    """
    import sys
    import threading

    try:
        p = popen([sys.executable, "-m", "webbrowser", "-t", url], cwd=os.path.expanduser("~"), env=env,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return
    threading.Thread(target=p.wait, name="open-url", daemon=True).start()  # reaped, never a zombie


# --- git for agentloop itself (rule 3) ------------------------------------------

GIT_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=all",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "submodule.recurse=false",
    "uploadpack.packObjectsHook=",
)
"""``-c`` settings git gets on every call: the repository's config cannot bring back any of its commands."""

_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER",
                 "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EDITOR", "EDITOR", "VISUAL",
                 "GIT_CONFIG", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_PROXY_COMMAND",
                 "GIT_TRACE", "GIT_TRACE2", "GIT_TRACE2_EVENT", "GIT_TRACE2_PERF")

def git_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of a git agentloop runs for itself: rule 1, then no config but the repository's own."""
    out = _decided(env)
    for k in list(out):
        if k in _GIT_ENV_DROP or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
            del out[k]
    out.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", GIT_ATTR_NOSYSTEM="1", GIT_NO_REPLACE_OBJECTS="1")
    return out


def _git_argv(args: Sequence[str]) -> list[str]:
    argv = ["git", "--no-pager"]
    for c in GIT_SAFE_CONFIG:
        argv += ["-c", c]
    sub = args[0] if args else ""
    rest = list(args[1:])
    if sub in ("diff", "show", "log"):
        rest = ["--no-ext-diff", "--no-textconv", *rest]
    return [*argv, sub, *rest] if sub else argv


def git(
    args: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None, timeout: float = 60,
    drivers: Sequence[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git ARGS`` for agentloop itself (rule 3), output captured as text.

    A repository's filters (``filter.<driver>.clean`` / ``smudge`` /
    ``process``) are the one thing ``-c`` cannot switch off by name, since
    the driver names are the repository's: every driver its config names is
    set to ``cat`` here, and ``.gitattributes`` then asks for a command that
    does nothing. ``drivers``: those names, from ``filter_drivers(cwd, env)``
    for several calls in a row in the same repository (else read here).

    Raises:
        OSError: git cannot start.
        subprocess.TimeoutExpired: it ran past ``timeout``.
    """
    genv = git_environment(env)
    argv = _git_argv(args)
    if drivers is None:
        drivers = _filter_drivers(cwd, genv)
    if drivers:
        extra: list[str] = []
        for d in drivers:
            extra += ["-c", f"filter.{d}.clean=cat", "-c", f"filter.{d}.smudge=cat",
                      "-c", f"filter.{d}.process=", "-c", f"filter.{d}.required=false"]
        argv = [argv[0], *extra, *argv[1:]]
    return subprocess.run(argv, cwd=cwd, env=genv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


def git_identity(cwd: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``-c user.name=... -c user.email=...`` from the user's own git config, or agentloop's when there is none.

    ``git()`` reads no user config (rule 3), so the identity a commit needs is
    read here, by ``git config`` alone, which runs nothing.
    """
    got: dict[str, str] = {}
    for key in ("user.name", "user.email"):
        try:
            p = subprocess.run(
                ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "config", "--get", key],
                cwd=cwd, env={**_decided(env), "GIT_CONFIG_NOSYSTEM": "1"}, stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=30, start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        value = p.stdout.strip()
        if p.returncode == 0 and value and "\n" not in value:
            got[key] = value
    if "user.email" not in got:
        got = {"user.name": "agentloop", "user.email": "agentloop@localhost"}
    got.setdefault("user.name", "agentloop")
    return [x for k, v in got.items() for x in ("-c", f"{k}={v}")]


def filter_drivers(cwd: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The filter driver names of the repository at ``cwd``, for ``git(..., drivers=)``."""
    return _filter_drivers(cwd, git_environment(env))


def _filter_drivers(cwd: str, genv: Mapping[str, str]) -> list[str]:
    """The filter driver names the repository's config defines (read by git itself, which runs nothing to list them)."""
    try:
        p = subprocess.run(
            ["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
             "config", "--name-only", "--get-regexp", r"^filter\."],
            cwd=cwd, env=dict(genv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    names: set[str] = set()
    for line in p.stdout.splitlines():
        parts = line.strip().split(".")
        if len(parts) >= 3:
            names.add(".".join(parts[1:-1]))
    return sorted(n for n in names if n and "\n" not in n)
