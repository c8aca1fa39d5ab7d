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
3. Git that agentloop runs for itself (``git()``) runs in the git jail
   (``sandbox/gitjail.py``, decision 0013): whatever a repository's
   configuration makes git run, under any name or spelling, runs there with
   no key, no network, no home, and nothing writable but the repository the
   call works on. Where no sandbox starts, no git runs (``GitUnconfined``).
   Hooks, fsmonitor, pager, external diff, textconv and the repository's
   filters are also switched off by name, and git reads no system or user
   config: in practice nothing runs even in the jail.
4. Every child starts in a session of its own (its process group is its
   pid), so ending the group ends everything it started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from ..config.credentials import ChildEnv, child_environment, secret_named
from ..config.settings import SettingsSource

__all__ = [
    "GIT_ENV_KEPT",
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
        ValueError: ``argv`` starts git on the host: agentloop's own git goes through ``git()`` (the jail).
    """
    if launcher is None and argv and os.path.basename(argv[0]) == "git":
        raise ValueError("agentloop's own git runs through spawn.git, in the git jail (decision 0013)")
    child = _decided(env)
    if launcher is not None:
        return launcher(list(argv), child, tuple(pass_fds))
    return subprocess.Popen(
        list(argv), cwd=cwd, env=child, stdin=stdin, stdout=stdout, stderr=stderr,
        start_new_session=True, pass_fds=tuple(pass_fds),
    )


def run(argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None, timeout: float,
        launcher: Launcher | None = None) -> tuple[int | None, bytes, bytes]:
    """``argv`` started by ``popen`` (the same environment rule), its output read to the end within ``timeout``
    seconds: (exit code, or None when it was killed for taking longer; stdout; stderr).

    Raises:
        OSError: it cannot start.
    """
    p = popen(argv, cwd=cwd or os.getcwd(), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, launcher=launcher)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except OSError:
            pass
        out, err = p.communicate()
        return None, out or b"", err or b""
    return p.returncode, out or b"", err or b""


def open_url(url: str, *, env: Mapping[str, str] | None) -> None:
    """Open ``url`` in the user's browser (an MCP sign-in), started as every child is; failures are silent.

    Python's ``webbrowser`` would start the browser with this process's
    environment, keys included: it runs here as a child of its own instead,
    isolated (``-I``): the folder it starts in (the home, which may be the
    workspace) and ``PYTHONPATH`` add nothing to what it imports, so no
    ``webbrowser.py`` the model wrote runs in its place. ``env`` should be the
    host's (no project ``env``: its ``BROWSER`` names the program started).
    """
    import sys
    import threading

    try:
        p = popen([sys.executable, "-I", "-m", "webbrowser", "-t", url], cwd=os.path.expanduser("~"), env=env,
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
    "log.showSignature=false",
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

GIT_ENV_KEPT = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ"})
"""The variables agentloop's own git starts with (and ``LC_*``), besides its own settings: an allow-list. Any other
variable could steer git or what it starts (``GIT_CONFIG_PARAMETERS``, ``GIT_COMMON_DIR``, ``GIT_EXEC_PATH``,
``LD_PRELOAD``, ``BASH_ENV`` for the shell its aliases and drivers run in), and a project's settings ``env``
may set any of them."""


def git_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of a git agentloop runs for itself: rule 1, then only ``GIT_ENV_KEPT`` and ``LC_*``,
    and no config but the repository's own."""
    out = {k: v for k, v in _decided(env).items() if k in GIT_ENV_KEPT or k.startswith("LC_")}
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


def _run_git(
    argv: Sequence[str], *, cwd: str, genv: Mapping[str, str], timeout: float, write: bool, paths: Sequence[str],
) -> subprocess.CompletedProcess[str]:
    """``argv`` (a git command line) run in the git jail (rule 3, ``sandbox/gitjail.py``), output captured as text.

    Raises:
        GitUnconfined: no sandbox can start here, so no git runs.
        OSError: bwrap cannot start.
        subprocess.TimeoutExpired: it ran past ``timeout``.
    """
    from .sandbox.gitjail import jail_argv

    bwrap = jail_bwrap()
    return subprocess.run(jail_argv(bwrap, argv, cwd=cwd, write=write, paths=paths), cwd=cwd, env=dict(genv),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)


_jail_probed: dict[str, str | None] = {}
_jail_lock = threading.Lock()


def jail_bwrap() -> str:
    """The bwrap that starts the git jail here, tried once per process (a ``true`` in the jail).

    Raises:
        GitUnconfined: there is none, or it cannot start a jail here (the message says why).
    """
    from .sandbox.gitjail import GitUnconfined, jail_argv

    path = shutil.which("bwrap")
    if path is None:
        raise GitUnconfined("agentloop runs its own git only inside a sandbox, and bubblewrap (bwrap) is not installed")
    with _jail_lock:
        if path not in _jail_probed:
            try:
                p = subprocess.run(jail_argv(path, ["true"], cwd="/", write=False), stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=10, env={"PATH": os.defpath})
                why = None if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
            except (OSError, subprocess.TimeoutExpired) as exc:
                why = str(exc)
            _jail_probed[path] = why
        why = _jail_probed[path]
    if why is not None:
        raise GitUnconfined(f"agentloop runs its own git only inside a sandbox, and bubblewrap cannot start one here: {why}")
    return path


def _no_filters(genv: dict[str, str], drivers: Sequence[str]) -> None:
    """Each named filter driver set to do nothing, by key and value apart (``GIT_CONFIG_KEY_n``): a driver
    named ``a=b`` cannot be split at its ``=`` as a ``-c`` would. Defence in depth: the jail is the wall."""
    n = 0
    for d in drivers:
        for key, value in (("clean", "cat"), ("smudge", "cat"), ("process", ""), ("required", "false")):
            genv[f"GIT_CONFIG_KEY_{n}"], genv[f"GIT_CONFIG_VALUE_{n}"] = f"filter.{d}.{key}", value
            n += 1
    if n:
        genv["GIT_CONFIG_COUNT"] = str(n)


def git(
    args: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None, timeout: float = 60,
    drivers: Sequence[str] | None = None, write: bool = False, paths: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run ``git ARGS`` for agentloop itself (rule 3), in the git jail, output captured as text.

    ``write``: the repository at ``cwd`` (work tree and git directories) and ``paths`` are writable;
    else everything is read-only. ``paths``: what else the call reads or writes (a patch file, a new
    worktree's folder). The hooks, pager, external diff, textconv and filters are also switched off by
    name; ``drivers``: the repository's filter driver names, from ``filter_drivers(cwd, env)`` for
    several calls in a row in the same repository (else read here).

    Raises:
        GitUnconfined: no sandbox can start here (an ``OSError``): no git runs.
        OSError: git cannot start.
        subprocess.TimeoutExpired: it ran past ``timeout``.
    """
    genv = git_environment(env)
    if drivers is None:
        drivers = _filter_drivers(cwd, genv)
    _no_filters(genv, drivers)
    return _run_git(_git_argv(args), cwd=cwd, genv=genv, timeout=timeout, write=write, paths=paths)


def git_identity(cwd: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``-c user.name=... -c user.email=...`` from the repository's or the user's own git config, or agentloop's.

    The repository's is read by ``git config`` in the jail (which hides the user's home); the user's own
    files are read here, in this process, without starting anything.
    """
    from .sandbox.gitguard import config_entries, user_home_of

    got: dict[str, str] = {}
    for key in ("user.name", "user.email"):
        try:
            p = _run_git(["git", "config", "--get", key], cwd=cwd, genv=git_environment(env), timeout=30, write=False, paths=())
        except (OSError, subprocess.SubprocessError):
            continue
        value = p.stdout.strip()
        if p.returncode == 0 and value and "\n" not in value:
            got[key] = value
    home = user_home_of({})
    for cf in (os.path.join(home, ".config", "git", "config"), os.path.join(home, ".gitconfig")):
        for k, v in config_entries(cf):
            if k in ("user.name", "user.email") and v and "\n" not in v and k not in got:
                got[k] = v
    if "user.email" not in got:
        got = {"user.name": "agentloop", "user.email": "agentloop@localhost"}
    got.setdefault("user.name", "agentloop")
    return [x for k, v in got.items() for x in ("-c", f"{k}={v}")]


def filter_drivers(cwd: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The filter driver names of the repository at ``cwd``, for ``git(..., drivers=)``."""
    return _filter_drivers(cwd, git_environment(env))


_drivers_seen: dict[tuple[object, ...], list[str]] = {}


def _config_stamp(cwd: str) -> tuple[object, ...]:
    """What changes when the configuration the repository at ``cwd`` reads changes: its work tree and git
    directories (a worktree shares its main repository's ``config`` but matches other ``includeIf "gitdir:"``),
    and the configuration files and ``HEAD`` of each (``includeIf "onbranch:"``), by path, inode, size, time."""
    from .sandbox.gitjail import repository_paths

    paths = repository_paths(cwd)
    out: list[object] = [*paths]
    for d in paths[1:3]:
        for name in ("config", "config.worktree", "HEAD"):
            try:
                st = os.stat(os.path.join(d, name))
            except OSError:
                continue
            out += [d, name, st.st_ino, st.st_size, st.st_mtime_ns]
    return tuple(out)


def _filter_drivers(cwd: str, genv: Mapping[str, str]) -> list[str]:
    """The filter driver names the repository's config defines (read by git in the jail), remembered while
    its configuration files stay the same (a sub-agent's worktree makes a dozen calls)."""
    stamp = _config_stamp(cwd)
    if stamp and stamp in _drivers_seen:
        return _drivers_seen[stamp]
    found = _list_filter_drivers(cwd, genv)
    if stamp and found is not None:
        _drivers_seen[stamp] = found
    return found or []


def _list_filter_drivers(cwd: str, genv: Mapping[str, str]) -> list[str] | None:
    try:
        p = _run_git(["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
                      "config", "--name-only", "--get-regexp", r"^filter\."], cwd=cwd, genv=genv, timeout=30,
                     write=False, paths=())
    except (OSError, subprocess.SubprocessError):
        return None
    names: set[str] = set()
    for line in p.stdout.splitlines():
        parts = line.strip().split(".")
        if len(parts) >= 3:
            names.add(".".join(parts[1:-1]))
    return sorted(n for n in names if n and "\n" not in n)
