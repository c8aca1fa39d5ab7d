"""An operating-system sandbox around every Bash command (bubblewrap on Linux).

Modes, as Codex's ``--sandbox``:

- ``workspace-write`` (the default): the root file system read-only; the
  workspace, the additional directories and a per-session temporary directory
  (mounted at ``/tmp``) writable; no network.
- ``read-only``: the same, but the workspace and additional directories are
  read-only too (only the session's ``/tmp`` is writable).
- ``danger-full-access``: no sandbox.

In every sandboxed mode:

- reads are an allow-list under the user's home: each home (the account's,
  from ``pwd``, and the ``HOME`` agentloop was started with; never one a
  project's ``env`` sets) is an empty folder but for the workspace, added
  directories, ``TOOLCHAIN_PATHS`` (read-only) and the user's own
  ``filesystem.allowRead``; its ``~/.gitconfig`` holds the user's git
  identity only;
- the user's agentloop home, ``/run/user/UID`` (whatever
  ``$XDG_RUNTIME_DIR`` says: session bus, keyring, agents), container
  engines' sockets, and, even inside a workspace that holds them, the
  credential folders and files of ``CREDENTIAL_PATHS`` are hidden (an empty
  directory, or an unreadable file, is mounted over them);
- inside each writable root, ``.agentloop``, ``.claude`` and ``.mcp.json``
  stay read-only where they exist (the editors' ``.vscode``, ``.idea``, ``.helix``
  and ``.zed`` too, and commands cannot make them: ``gitguard.EDITOR_FOLDERS``), and git's metadata, the scripts trusted
  hooks run and a writable home's start-up files are guarded by ``gitguard``
  (read-only mounts before the command, what appeared moved aside after it),
  so a command cannot plant code that a later session or ``git`` would run;
- agentloop's own interpreter and a virtual environment on ``PATH`` stay
  visible through the private ``/tmp``, so the session's runner starts
  wherever agentloop is installed; when it cannot start, that is said;
- the command runs in new PID, IPC and network namespaces with every
  capability dropped, and bubblewrap dies with the agent: when the command
  ends, whatever it started ends too (``setsid``, double forks, ``nohup``),
  except the sessions of the background commands (Bash's
  ``run_in_background``, ``launch_background``), which end when stopped or
  with the sandbox.

Settings, in Claude Code's ``sandbox`` shape (Claude Code settings reference,
https://code.claude.com/docs/en/settings, "Sandbox settings"):
``enabled``, ``failIfUnavailable``, ``excludedCommands``,
``allowUnsandboxedCommands``, ``filesystem.allowWrite``,
``filesystem.denyWrite``, ``filesystem.denyRead``, ``filesystem.allowRead``, ``network.allowedDomains``.
agentloop adds ``network.allowAll`` (network on or off as a whole).
``network.allowedDomains`` is honoured through a proxy the agent runs
(``netproxy``): commands see ``HTTP_PROXY``/``HTTPS_PROXY`` and reach only
those hosts; programs that ignore the proxy reach nothing. What is not
honoured is named in a warning, and the sandbox then stays closed:

- ``allowUnsandboxedCommands``: true by default, as in Claude Code: Bash's
  ``dangerouslyDisableSandbox`` runs one command outside, and each such call
  asks the user first unless an allow rule of theirs (not the mode, not a
  session's "always") names it; ``false`` (from any file) ignores it.
- A setting that weakens the sandbox (``enabled: false``, ``allowWrite``, ``allowRead``,
  ``excludedCommands``, ``network.allowAll``, ``network.allowedDomains``) is
  taken from the user's own settings only: a project's files cannot open the
  sandbox they run in.
- Allowed domains need the session's runner (one bubblewrap per session);
  where it cannot start, each command gets a bubblewrap of its own and no
  network at all, and the first result and ``/sandbox`` say so, with why.

Where no sandbox can start (no bubblewrap, no user namespaces), the agent says
so once, with how to install it, and then every Bash call asks the user; with
``failIfUnavailable`` the agent refuses to start instead.
"""

from __future__ import annotations

import functools
import glob as globmod
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...config.private import private_write
from ...config.settings import SettingsSource
from .deny_exec import DeniedProgram, Masks, plan_masks, stub_text
from .gitguard import account_homes, user_home_of
from .home import allow_list_mounts, hidden_part, listed_homes

__all__ = [
    "CREDENTIAL_PATHS",
    "INSTALL_HINT",
    "MODES",
    "Sandbox",
    "SandboxSettings",
    "SandboxUnavailable",
    "account_homes",
    "agent_socket_paths",
    "probe",
    "settings_from",
    "user_home_of",
]

MODES = ("read-only", "workspace-write", "danger-full-access")
DEFAULT_MODE = "workspace-write"

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

CREDENTIAL_PATHS = (
    ".ssh", ".aws", ".gnupg", ".config/gcloud", ".docker", ".kube", ".netrc", ".claude", ".claude.json",
    ".codex", ".agentloop", ".config/gh", ".config/hub", ".git-credentials", ".npmrc", ".pypirc", ".azure",
    ".password-store", ".local/share/keyrings", ".config/anthropic", ".config/openai", ".vault-token",
    ".terraform.d", ".cargo/credentials", ".cargo/credentials.toml", ".m2/settings.xml", ".gem/credentials",
    ".config/rclone", ".pgpass", ".my.cnf", ".s3cfg", ".boto", ".oci", ".ipython/profile_default/history.sqlite",
    ".bash_history", ".zsh_history", ".python_history",
    ".config/git/credentials", ".config/glab-cli", ".cache/huggingface/token", ".huggingface/token", ".1password",
    ".config/1Password", ".mozilla", ".thunderbird", ".config/google-chrome", ".config/chromium",
    ".config/BraveSoftware", ".config/Code/User/globalStorage", ".config/Cursor/User/globalStorage",
    ".local/share/fish/fish_history", ".lesshst", ".mysql_history", ".psql_history", ".node_repl_history",
    ".sqlite_history", ".local/share/recently-used.xbel",
)
"""Under the user's home: hidden from sandboxed commands even where the home is the workspace (the rest of
a home that is not the workspace is hidden anyway: ``TOOLCHAIN_PATHS``)."""

SYSTEM_SOCKETS = (
    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock",
    "/var/run/podman/podman.sock", "/run/buildkit/buildkitd.sock", "/var/run/libvirt/libvirt-sock",
)
"""Sockets that hand out more than the user's own rights (a container engine is root): hidden."""

PROTECTED_IN_ROOTS = (".git/hooks", ".git/config", ".agentloop", ".claude", ".mcp.json")
"""Inside each writable root: kept read-only where they exist."""

TOOLCHAIN_PATHS = (
    ".cache/pip", ".cache/uv", ".local/share/uv/python", ".local/share/uv/tools", ".cache/pypoetry", ".local/share/virtualenvs", ".pyenv", ".conda",
    ".local/lib", ".local/bin", ".npm", ".nvm", ".cache/yarn", ".yarn", ".local/share/pnpm", ".cache/pnpm", ".bun",
    ".deno", ".volta", ".cargo/bin", ".cargo/registry", ".cargo/git", ".cargo/env", ".rustup", "go", ".cache/go-build",
    ".rbenv", ".m2/repository", ".gradle/caches", ".gradle/wrapper", ".sdkman", ".asdf", ".elan", ".ghcup", ".opam",
    ".cache/ms-playwright", ".cache/pre-commit", ".local/share/pipx", ".local/share/mise", ".local/share/fnm", ".gem",
    ".local/share/gem", ".dotnet/dotnet", ".dotnet/sdk", ".dotnet/shared", ".dotnet/host", ".dotnet/packs",
    ".dotnet/sdk-manifests", ".dotnet/templates", ".dotnet/tools", ".nuget/packages",
)
"""Under the user's home, the only folders sandboxed commands see (read-only): toolchains and their caches,
never a tool's credential or certificate store beside them (uv's ``credentials/``, .NET's ``corefx/``
certificate stores: only the named parts of ``~/.local/share/uv`` and ``~/.dotnet`` show).
The rest of the home is hidden (an empty folder) unless it is the workspace, an added directory, or named
in the user's ``sandbox.filesystem.allowRead``."""

TOOLCHAIN_SECRETS = (
    ".nvm/versions/node/*/etc/npmrc", ".volta/tools/image/node/*/etc/npmrc", ".asdf/installs/nodejs/*/etc/npmrc",
    ".local/share/fnm/node-versions/*/installation/etc/npmrc", ".local/share/mise/installs/node/*/etc/npmrc",
    ".local/share/pnpm/global/*/etc/npmrc", ".npm/.npmrc", ".nvm/.npmrc",
    ".pyenv/versions/*/pip.conf", ".pyenv/versions/*/envs/*/pip.conf", ".pyenv/pip.conf", ".conda/.condarc",
    ".conda/envs/*/.condarc", ".conda/envs/*/pip.conf", ".local/share/virtualenvs/*/pip.conf",
    ".local/share/pipx/venvs/*/pip.conf", ".local/share/mise/installs/python/*/pip.conf",
    ".asdf/installs/python/*/pip.conf", ".local/share/uv/tools/*/pip.conf", ".local/lib/python*/site-packages/.netrc",
)
"""Inside the toolchain folders commands see: where a tool keeps a registry's token (npm's global ``etc/npmrc`` of
each Node a version manager installed, pip's ``pip.conf`` of an interpreter or environment, conda's
``.condarc`` with channel tokens). Hidden like ``CREDENTIAL_PATHS``; the toolchain beside them still shows."""

GIT_IDENTITY_KEYS = ("user.name", "user.email", "init.defaultbranch")
"""What the sandbox's ``~/.gitconfig`` keeps of the user's own, so ``git commit`` works inside."""


class SandboxUnavailable(Exception):
    """``failIfUnavailable`` is set and no sandbox can start (one line for the user)."""


@dataclass(frozen=True)
class SandboxSettings:
    """What the settings and the command line ask for, resolved."""

    mode: str = DEFAULT_MODE
    fail_if_unavailable: bool = False
    excluded_commands: tuple[str, ...] = ()
    network: bool = False
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    """Folders under the hidden home that commands may read (``filesystem.allowRead``, the user's settings only)."""
    hook_files: tuple[str, ...] = ()
    """Files the configured hooks run (``trust.hook_files``): read-only to commands, so a trusted hook keeps running what was trusted."""
    allowed_domains: tuple[str, ...] = ()
    """Reachable through agentloop's proxy when ``network`` is off (``network.allowedDomains``)."""
    allow_unsandboxed: bool = True
    """Bash's ``dangerouslyDisableSandbox`` is honoured (after a person or an allow rule approves each call);
    ``allowUnsandboxedCommands: false`` in any settings file turns it off."""
    warnings: tuple[str, ...] = ()
    source: str = "default"
    """Where the mode came from: "default", "--sandbox" or a settings file."""


def _strings(v: Any, where: str, warnings: list[str]) -> list[str]:
    if v is None:
        return []
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    warnings.append(f"{where} is not a list of strings: ignored")
    return []


def _path(p: str, base: str, user_home: str) -> str:
    if p.startswith("//"):  # Claude Code: "//" starts an absolute path
        p = p[1:]
    elif p == "~" or p.startswith("~/"):
        p = user_home + p[1:]
    return os.path.realpath(os.path.join(base, p))


def _read_filesystem(
    fs: Any, where: str, base: str, user_home: str, weakening: Callable[[str], bool], warnings: list[str],
    paths: dict[str, list[str]],
) -> None:
    """``sandbox.filesystem`` of one settings file into ``paths`` (allowWrite only where it may weaken)."""
    if not isinstance(fs, dict):
        warnings.append(f"{where}.filesystem is not an object: ignored")
        return
    for key in fs:
        if key not in ("allowWrite", "denyWrite", "denyRead", "allowRead"):
            warnings.append(f"{where}.filesystem.{key} is not supported by agentloop: ignored")
    aw = _strings(fs.get("allowWrite"), f"{where}.filesystem.allowWrite", warnings)
    if aw and weakening("filesystem.allowWrite"):
        paths["allowWrite"] += [_path(p, base, user_home) for p in aw]
    ar = _strings(fs.get("allowRead"), f"{where}.filesystem.allowRead", warnings)
    if ar and weakening("filesystem.allowRead"):
        paths["allowRead"] += [_path(p, base, user_home) for p in ar]
    paths["denyWrite"] += [_path(p, base, user_home) for p in _strings(fs.get("denyWrite"), f"{where}.filesystem.denyWrite", warnings)]
    paths["denyRead"] += [_path(p, base, user_home) for p in _strings(fs.get("denyRead"), f"{where}.filesystem.denyRead", warnings)]


def _read_network(net: Any, where: str, weakening: Callable[[str], bool], warnings: list[str], domains: list[str]) -> bool:
    """``sandbox.network`` of one settings file: its domains into ``domains``; True when it opens the whole network."""
    if not isinstance(net, dict):
        warnings.append(f"{where}.network is not an object: ignored (the network stays off)")
        return False
    for key in net:
        if key not in ("allowAll", "allowedDomains"):
            warnings.append(f"{where}.network.{key} is not supported by agentloop: ignored")
    ad = _strings(net.get("allowedDomains"), f"{where}.network.allowedDomains", warnings)
    if ad and weakening("network.allowedDomains"):
        domains += ad
    return net.get("allowAll") is True and weakening("network.allowAll")


_SANDBOX_KEYS = ("enabled", "failIfUnavailable", "excludedCommands", "allowUnsandboxedCommands",
                 "autoAllowBashIfSandboxed", "filesystem", "network")


def settings_from(
    sources: Sequence[SettingsSource], *, mode: str | None, cwd: str, user_home: str
) -> SandboxSettings:
    """The sandbox asked for by ``--sandbox MODE`` (``mode``) and the ``sandbox`` key of each settings file.

    Raises:
        ValueError: an unknown ``--sandbox`` mode (one line).
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"--sandbox {mode}: unknown mode (use one of: {', '.join(MODES)})")
    warnings: list[str] = []
    fail = False
    enabled: bool | None = None
    enabled_from = "default"
    excluded: list[str] = []
    network = False
    paths: dict[str, list[str]] = {"allowWrite": [], "denyWrite": [], "denyRead": [], "allowRead": []}
    domains: list[str] = []
    allow_unsandboxed = True
    for s in sources:
        sb = s.data.get("sandbox")
        if sb is None:
            continue
        where = f"{s.path}: sandbox"
        if not isinstance(sb, dict):
            warnings.append(f"{where} is not an object: ignored (the sandbox stays on)")
            continue
        user = s.scope == "user"
        base = os.path.dirname(os.path.dirname(s.path)) if not user else cwd

        def weakening(key: str, _where: str = where, _user: bool = user) -> bool:
            if _user:
                return True
            warnings.append(f"{_where}.{key} ignored: only the user's own settings may weaken the sandbox")
            return False

        warnings.extend(f"{where}.{key} is not supported by agentloop: ignored" for key in sb if key not in _SANDBOX_KEYS)
        if "enabled" in sb:
            if not isinstance(sb["enabled"], bool):
                warnings.append(f"{where}.enabled is not true or false: ignored")
            elif sb["enabled"] or weakening("enabled"):
                enabled, enabled_from = sb["enabled"], s.path
        if "failIfUnavailable" in sb:
            if isinstance(sb["failIfUnavailable"], bool):
                fail = fail or sb["failIfUnavailable"]  # it only restricts: any file may set it
            else:
                warnings.append(f"{where}.failIfUnavailable is not true or false: ignored")
        ex = _strings(sb.get("excludedCommands"), f"{where}.excludedCommands", warnings)
        if ex and weakening("excludedCommands"):
            excluded += ex
        if sb.get("allowUnsandboxedCommands") is False:  # it only restricts: any file may set it
            allow_unsandboxed = False
        if sb.get("autoAllowBashIfSandboxed") is True:  # false is what agentloop does anyway
            warnings.append(f"{where}.autoAllowBashIfSandboxed is not honoured: permission rules decide as without the sandbox")
        fs = sb.get("filesystem")
        if fs is not None:
            _read_filesystem(fs, where, base, user_home, weakening, warnings, paths)
        net = sb.get("network")
        if net is not None:
            network = _read_network(net, where, weakening, warnings, domains) or network
    if mode is not None:
        chosen, source = mode, "--sandbox"
    elif enabled is False:
        chosen, source = "danger-full-access", enabled_from
    else:
        chosen, source = DEFAULT_MODE, enabled_from
    if chosen == "danger-full-access":
        network = True
    from ..trust import hook_files

    return SandboxSettings(
        hook_files=tuple(hook_files(sources, cwd)),
        mode=chosen, fail_if_unavailable=fail, excluded_commands=tuple(excluded), network=network,
        allow_write=tuple(paths["allowWrite"]), deny_write=tuple(paths["denyWrite"]), deny_read=tuple(paths["denyRead"]),
        allow_read=tuple(paths["allowRead"]),
        allowed_domains=tuple(dict.fromkeys(domains)), warnings=tuple(warnings), source=source,
        allow_unsandboxed=allow_unsandboxed,
    )


_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


PROBE_CACHE = "bwrap-probe.json"
"""Under the agentloop home's ``cache/``: the key of the last probe that started a sandbox."""


def probe_key(path: str) -> dict[str, object] | None:
    """What a probe's verdict depends on: the bwrap binary (path, size, mtime), the kernel, the user; None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"bwrap": os.path.realpath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "kernel": os.uname().release, "uid": os.geteuid()}


def _cached_ok(cache_dir: str | None, key: dict[str, object] | None) -> bool:
    if cache_dir is None or key is None:
        return False
    try:
        with open(os.path.join(cache_dir, PROBE_CACHE), encoding="utf-8") as f:
            return bool(json.loads(f.read(4096)) == key)
    except (OSError, ValueError):
        return False


def _remember_ok(cache_dir: str | None, key: dict[str, object] | None) -> None:
    if cache_dir is None or key is None:
        return
    try:
        private_write(os.path.join(cache_dir, PROBE_CACHE), json.dumps(key).encode())  # 0600 in a 0700 folder
    except OSError:
        pass  # the next start probes again


def probe(bwrap: str | None = None, cache_dir: str | None = None) -> tuple[str | None, str | None]:
    """``(path to bwrap, None)`` when a sandbox starts here, else ``(None, why)``. Probed once per process.

    ``cache_dir``: where a probe that started a sandbox is remembered, keyed by ``probe_key`` (the
    binary's path, size and mtime, the kernel release, the user): while the key holds, later processes
    skip the probe. A failed probe is never remembered (a fixed machine is seen at once), and a wrongly
    remembered success fails closed: every sandboxed command then fails to start.
    """
    path = bwrap or shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed"
    with _probe_lock:
        key = probe_key(path) if cache_dir is not None else None
        if path not in _probed and _cached_ok(cache_dir, key):
            _probed[path] = None
        if path not in _probed:
            try:
                p = subprocess.run(
                    [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                     "--unshare-net", "--die-with-parent", "--cap-drop", "ALL", "true"],
                    stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
                    env={"PATH": os.environ.get("PATH", os.defpath)},  # it runs `true`: nothing else, no keys
                )
                why = None if p.returncode == 0 else (
                    (p.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {p.returncode}"])[-1])
            except (OSError, subprocess.TimeoutExpired) as exc:
                why = str(exc)
            _probed[path] = why
            if why is None:
                _remember_ok(cache_dir, key)
        why = _probed[path]
    return (path, None) if why is None else (None, f"bubblewrap cannot start a sandbox here: {why}")


TMP_PREFIX = "agentloop-sandbox-"  # supervisor.SANDBOX_TMP_PREFIX: links to it are refused
"""A session's private ``/tmp`` is ``$TMPDIR/agentloop-sandbox-PID-XXXX`` (PID: the agentloop that made it)."""

AGENT_SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GNOME_KEYRING_CONTROL",
                          "DBUS_SESSION_BUS_ADDRESS", "KRB5CCNAME")
"""Variables that lead a command to an agent holding the user's keys: not passed into the sandbox."""


def agent_socket_paths(env: Mapping[str, str]) -> list[str]:
    """The files the user's key agents listen on or keep tickets in, as ``env`` names them (``SSH_AUTH_SOCK``,
    ``GPG_AGENT_INFO``'s socket, ``GNOME_KEYRING_CONTROL``, ``DOCKER_HOST=unix://...``, ``KRB5CCNAME=FILE:...``):
    hidden from commands wherever they are, since removing the variable does not stop a command that knows the
    path (an agent listening in ``/var/tmp`` or a folder the sandbox shows answered a command's ``connect``)."""
    out = []
    for key, value in env.items():
        v = value.strip()
        if key == "GPG_AGENT_INFO":
            v = v.split(":", 1)[0]
        elif key == "DOCKER_HOST":
            v = v[len("unix://"):] if v.startswith("unix://") else ""
        elif key == "KRB5CCNAME":
            v = v.split(":", 1)[1] if v.startswith(("FILE:", "DIR:")) else v
        elif key not in ("SSH_AUTH_SOCK", "GNOME_KEYRING_CONTROL"):
            continue
        if os.path.isabs(v) and os.path.normpath(v) != os.sep:
            out.append(os.path.realpath(v))
    return out


def without_agent_sockets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that name the user's key agents (``AGENT_SOCKET_VARIABLES``)."""
    return {k: v for k, v in env.items() if k not in AGENT_SOCKET_VARIABLES}


OWNED_TMP_PREFIXES = (TMP_PREFIX, "agentloop-worktree-")
"""Temporary folders named ``PREFIX + PID + "-..."`` by the agentloop of that PID: a session's private ``/tmp``,
a sub-agent's worktree (``subagents.worktree``). Removed at a later start once that PID has gone."""


def _remove_stale_tmpdirs() -> None:
    """Remove the temporary folders (``OWNED_TMP_PREFIXES``) an agentloop killed with SIGKILL left: this
    user's, whose PID is no longer running. Called at every sandbox's start, not only at its first command."""
    base = tempfile.gettempdir()
    try:
        names = [(n, pre) for n in os.listdir(base) for pre in OWNED_TMP_PREFIXES if n.startswith(pre)]
    except OSError:
        return
    for name, pre in names:
        pid = name[len(pre):].split("-", 1)[0]
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not pid.isdigit() or st.st_uid != os.getuid() or os.path.islink(path) or os.path.exists(f"/proc/{pid}"):
            continue
        shutil.rmtree(path, ignore_errors=True)


_MISSING = re.compile(r"No such file|cannot access|not found|does not exist|cannot open|can't open|Permission denied")

_SHELL_SPECIAL = re.compile(r"[;&|<>()`$\n\\{}*?\[\]!#~=]")


@dataclass
class Sandbox:
    """The sandbox of one agent: how each Bash command is wrapped, and its state for ``/sandbox``."""

    settings: SandboxSettings
    roots: list[str]
    """The workspace and additional directories (real paths)."""
    hidden: list[str]
    """Real paths hidden from commands (agentloop home, credentials, denyRead)."""
    bwrap: str | None
    unavailable: str | None = None
    """Why no sandbox could start (None when one can, or when none is wanted)."""
    use_runner: bool = True
    """Keep one sandbox for the session and fork each command in it (False: a bubblewrap per call)."""
    homes: list[str] = field(default_factory=list)
    """The user's home folders (the account's, and the one the environment names): hidden from commands
    but for the workspace, added directories, ``TOOLCHAIN_PATHS`` and ``allowRead``; where one is writable,
    its start-up files stay read-only (``gitguard.STARTUP_FILES``)."""
    denied_programs: Callable[[], Sequence[DeniedProgram]] | None = None
    """The programs deny rules name as a whole (read at each command): masked by a refusing stub (``deny_exec``)."""
    extension_dirs: list[str] = field(default_factory=list)
    """Folders of the session's enabled plugins and skills: shown to commands read-only (``show_extensions``)."""
    extension_holders: list[str] = field(default_factory=list)
    """Hidden folders besides ``.claude`` ones a shown folder may be inside: the agentloop home (its ``skills/``)."""
    command_path: str | None = None
    """The ``PATH`` Bash commands get (where a denied name is looked for before any command: ``needs_prompt``)."""
    degraded: str | None = None
    """Why the session's runner could not start (each command then has a bubblewrap of its own); said once."""
    _degraded_said: bool = field(default=False, repr=False)
    _supervisor_said: bool = field(default=False, repr=False)
    _plans: dict[str, Any] = field(default_factory=dict, repr=False)
    _written: dict[str, str] = field(default_factory=dict, repr=False)
    _tmp: str | None = field(default=None, repr=False)
    _masks: dict[Any, Masks] = field(default_factory=dict, repr=False)
    _runner: _Runner | None = field(default=None, repr=False)
    _proxy: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    also_read: tuple[str, ...] = ()
    """Folders shown read-only besides the roots (a sub-agent's sandbox: the parent's workspace, whose
    environment folders its worktree links to)."""
    _guard: Any = field(default=None, repr=False)
    """The write wall's walk and watch of the writable roots (``WriteWatch``), made at the first command."""

    @classmethod
    def create(
        cls, settings: SandboxSettings, *, roots: Sequence[str], agentloop_home: str, user_home: str,
        bwrap: str | None = None, runtime_dir: str | None = None, agent_sockets: Sequence[str] = (),
    ) -> Sandbox:
        """Probe bubblewrap (when the mode wants a sandbox).

        ``runtime_dir`` (``$XDG_RUNTIME_DIR``) is hidden too: the session bus
        there answers for the keyring, the ssh and gpg agents listen there.

        Raises:
            SandboxUnavailable: ``failIfUnavailable`` and no sandbox can start.
        """
        _remove_stale_tmpdirs()  # what a SIGKILLed agentloop left, at the next start
        hidden = [os.path.realpath(agentloop_home)]
        homes = account_homes(user_home)
        for h in homes:
            hidden += [os.path.realpath(os.path.join(h, p)) for p in CREDENTIAL_PATHS]
            hidden += [os.path.realpath(p) for g in TOOLCHAIN_SECRETS for p in globmod.glob(os.path.join(globmod.escape(h), g))]
        if runtime_dir:
            hidden.append(os.path.realpath(runtime_dir))
        hidden.append(f"/run/user/{os.getuid()}")  # the user's sockets, whether XDG_RUNTIME_DIR is set or not
        hidden += [os.path.realpath(p) for p in SYSTEM_SOCKETS]
        # agent_socket_paths(env): wherever the user's agents listen, but for what is hidden already (a folder
        # hidden whole, the sandbox's own /tmp): a mount there cannot be made and is not needed
        hidden += [p for p in agent_sockets if not any(p.startswith(x.rstrip(os.sep) + os.sep) for x in [*hidden, "/tmp"])]
        hidden += list(settings.deny_read)
        real_roots = [os.path.realpath(r) for r in roots]
        # a folder the user chose to work in is not hidden from its own commands
        hidden = [h for h in hidden if not any(r == h or r.startswith(h + os.sep) for r in real_roots)]
        path, why = (None, None)
        if settings.mode != "danger-full-access":
            path, why = probe(bwrap, cache_dir=os.path.join(agentloop_home, "cache"))
            if why is not None and settings.fail_if_unavailable:
                raise SandboxUnavailable(f"the Bash sandbox cannot start ({why}) and sandbox.failIfUnavailable is set; {INSTALL_HINT}")
        return cls(settings, real_roots, list(dict.fromkeys(hidden)), path, why, homes=homes)

    def for_roots(self, roots: Sequence[str], also_read: Sequence[str] = ()) -> Sandbox:
        """This sandbox for commands working in ``roots`` (a sub-agent's worktree): itself when
        they are already inside its roots, else a copy with those roots, sharing its ``/tmp``,
        with a bubblewrap per call (nothing of it is left to close), showing ``also_read`` read-only."""
        real = [os.path.realpath(r) for r in roots]
        if all(any(r == x or r.startswith(x + os.sep) for x in self.roots) for r in real):
            return self
        tmp = self.tmpdir() if self.active else None
        return Sandbox(self.settings, real, list(self.hidden), self.bwrap, self.unavailable, use_runner=False,
                       homes=list(self.homes), _tmp=tmp, also_read=tuple(os.path.realpath(p) for p in also_read),
                       denied_programs=self.denied_programs, command_path=self.command_path,
                       extension_dirs=list(self.extension_dirs), extension_holders=list(self.extension_holders))

    # -- state --

    @property
    def active(self) -> bool:
        """Commands run inside bubblewrap."""
        return self.bwrap is not None and self.settings.mode != "danger-full-access"

    def unavailable_notice(self) -> str | None:
        """The one-time notice when a sandbox was wanted and cannot start."""
        if self.unavailable is None:
            return None
        return (f"the Bash sandbox is off: {self.unavailable}; every Bash command will ask for permission. "
                f"To sandbox commands, {INSTALL_HINT}")

    def describe(self) -> str:
        """What ``/sandbox`` shows."""
        s = self.settings
        if s.mode == "danger-full-access":
            head = f"sandbox: off (danger-full-access, from {s.source}); commands run with your full access"
        elif not self.active:
            head = f"sandbox: UNAVAILABLE ({self.unavailable}); every Bash command asks. {INSTALL_HINT}"
        else:
            head = f"sandbox: on, {s.mode} (from {s.source}), bubblewrap at {self.bwrap}"
        lines = [head]
        if s.mode != "danger-full-access":
            w = "read-only" if s.mode == "read-only" else "writable"
            lines.append(f"  {w}: " + ", ".join(self.roots + list(s.allow_write)) + "; /tmp is a per-session directory")
            if s.network:
                lines.append("  network: on")
            elif s.allowed_domains:
                lines.append("  network: only " + ", ".join(s.allowed_domains) + " (through agentloop's proxy; HTTP_PROXY is set)")
            else:
                lines.append("  network: off")
            shown = [p for p in self.hidden if os.path.lexists(p)]
            lines.append("  hidden: " + (", ".join(shown) if shown else "(none present)"))
            for h in self._hidden_homes():
                lines.append(f"  home {h}: hidden but for the workspace, added directories, toolchain folders (read-only)"
                             + (" and allowRead: " + ", ".join(s.allow_read) if s.allow_read else ""))
            if self.degraded_notice():
                lines.append(f"  warning: {self.degraded_notice()}")
            off = self.supervisor_off() if s.mode == "workspace-write" else None
            lines.append("  creations: " + ("made by the supervisor (no name that makes a git repository can appear)"
                                            if off is None else f"not supervised ({off}); the write watch moves plants aside"))
            if s.deny_write:
                lines.append("  read-only: " + ", ".join(s.deny_write))
            if s.excluded_commands:
                lines.append("  run outside (each asks): " + ", ".join(s.excluded_commands))
        for w_ in s.warnings:
            lines.append(f"  warning: {w_}")
        return "\n".join(lines)

    # -- one command --

    def excluded(self, command: str) -> bool:
        """True when ``command`` is one simple command that ``excludedCommands`` lets run outside.

        Anything a shell would read as more than one plain command (operators,
        expansions, redirections, globs) stays inside: fail closed.
        """
        if not self.settings.excluded_commands or _SHELL_SPECIAL.search(command):
            return False
        try:
            words = shlex.split(command)
        except ValueError:
            return False
        for entry in self.settings.excluded_commands:
            e = entry[:-2] if entry.endswith(":*") else entry.rstrip("*").rstrip()
            try:
                ew = shlex.split(e)
            except ValueError:
                continue
            if ew and words[: len(ew)] == ew:
                return True
        return False

    def inside(self, command: str) -> bool:
        """True when ``command`` runs in the sandbox."""
        return self.active and not self.excluded(command)

    def needs_prompt(self, command: str) -> str | None:
        """Why this command must ask the user whatever the rules say (None: the rules decide)."""
        if self.settings.mode == "danger-full-access":
            return None
        if not self.active:
            return "the Bash sandbox is unavailable, so each command asks"
        if self.excluded(command):
            return "this command runs outside the sandbox (sandbox.excludedCommands)"
        unenforceable = self._deny_masks(self._command_path()).unenforceable
        if unenforceable:
            return "; ".join(unenforceable) + ", so each command asks"
        return None

    def tmpdir(self) -> str:
        if self._tmp is None or not os.path.isdir(self._tmp):
            _remove_stale_tmpdirs()
            self._tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
        return self._tmp

    def close(self) -> None:
        guard = self._guard
        if guard is not None:
            guard.stop()
        with self._lock:
            if self._runner is not None:
                self._runner.close()
                self._runner = None
            if self._proxy is not None:
                self._proxy.close()
                self._proxy = None
        if guard is not None:
            guard.final()  # what the background commands left, once nothing runs
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def wrap(self, argv: Sequence[str], cwd: str, command: str) -> tuple[list[str], dict[str, str]]:
        """The argv that runs ``argv`` (a shell and its script) in a bubblewrap of its own, and extra
        environment (``scripts/sandbox_what_works.py``; Bash itself goes through ``launch``). ``argv``
        itself when the command runs outside (no sandbox wanted, none available, or an excluded command)."""
        if not self.inside(command):
            return list(argv), {}
        prefix, plan = self._prefix_and_plan()
        with self._lock:
            self._plans[command] = plan  # looked at after the command (explain)
        return self._wrapped(prefix, argv, cwd, self._policy(plan))

    def confine(self, argv: Sequence[str], cwd: str, path_env: str = "", shown: Sequence[str] = (),
                writable: Sequence[str] = ()) -> tuple[list[str], dict[str, str]] | None:
        """``argv`` in a bubblewrap of its own with a Bash command's mounts, whatever ``excludedCommands`` says (a
        project's hook: record 0015), the regular files ``shown`` read-only and ``writable`` (a SessionStart hook's
        ``CLAUDE_ENV_FILE``) writable, and extra environment; None when no sandbox is on (it runs as it is)."""
        if not self.active:
            return None
        prefix, plan = self._prefix_and_plan(path_env)
        for f, how in [*((f, "--ro-bind") for f in shown), *((f, "--bind") for f in writable)]:
            if not os.path.isfile(f) or os.path.islink(f):
                continue
            # inside a hidden folder whose tmpfs is made read-only: bound before that, while its parents can be made
            at = next((i for i in range(len(prefix) - 1, 0, -1) if prefix[i - 1] == "--remount-ro"
                       and f.startswith(prefix[i].rstrip(os.sep) + os.sep)), None)
            bind = [how, f, f]
            prefix = prefix + bind if at is None else [*prefix[: at - 1], *bind, *prefix[at - 1 :]]
        return self._wrapped(prefix, argv, cwd, self._policy(plan))

    def _wrapped(self, prefix: list[str], argv: Sequence[str], cwd: str,
                 policy: dict[str, list[str]] | None = None) -> tuple[list[str], dict[str, str]]:
        """bubblewrap's argv for ``argv`` in a sandbox of its own; started by the supervising launcher
        (``supervisor.launch``) when ``policy`` is given and creations can be supervised here."""
        out = list(prefix)
        if os.path.isdir(cwd):
            out += ["--chdir", cwd]
        if policy is not None and self.supervisor_off() is None:
            import sys

            argv = [sys.executable, "-I", "-S", "-c", launcher_source(), json.dumps(policy), *argv]
        return [*out, "--", *argv], {"TMPDIR": "/tmp"}

    @staticmethod
    def _policy(plan: Any) -> dict[str, list[str]]:
        """What the creation supervisor is told for a command planned as ``plan`` (gitguard's): the writable
        roots, the git directories mounted as their own, the names that could not be mounted."""
        if plan is None:
            return {"roots": [], "gitdirs": [], "missing": []}
        return {"roots": list(plan.roots), "gitdirs": list(plan.self_binds), "missing": [*plan.watch, *plan.pinned, *plan.unmade]}

    def supervisor_off(self) -> str | None:
        """Why creations in this sandbox are not made by the supervisor (None: they are; record 0025)."""
        from .supervisor import unavailable

        if not SUPERVISE:
            return "creation supervision is switched off"
        r = self._runner
        if r is not None and r.supervisor_off is not None:
            return r.supervisor_off
        if self.degraded is not None:
            return "the session's runner could not start, so neither can the supervisor"
        return unavailable()

    def launch(
        self, argv: Sequence[str], cwd: str, command: str, env: Mapping[str, str], pass_fds: Sequence[int],
        *, alone: bool = False,
    ) -> Any:
        """Start ``argv`` for Bash: outside, in the session's runner, or in a bubblewrap of its own.

        Returns a ``subprocess.Popen`` or an object with the same ``pid``,
        ``stdout``, ``wait`` and ``returncode``; its ``pid`` is a process group
        whose death ends the command and all it started. Output (stdout and
        stderr) comes on ``stdout``.

        ``alone``: never the session's runner, a bubblewrap of its own (a
        background command: the runner ends what a command leaves running).

        Raises:
            OSError: the command cannot start.
        """
        run_argv, run_env = list(argv), dict(env)
        plan = None
        if self.inside(command):
            env = run_env = without_agent_sockets(env)
            prefix, plan = self._prefix_and_plan(env.get("PATH", ""))
            if not alone:
                with self._lock:
                    if len(self._plans) > 64:  # plans of commands whose result never came back
                        self._plans.pop(next(iter(self._plans)))
                    self._plans[command] = plan  # looked at after the command (explain)
            launched = None if alone else self._launch_in_runner(prefix, argv, cwd, env, pass_fds, policy=self._policy(plan))
            if launched is not None:
                return launched
            run_argv, extra = self._wrapped(prefix, argv, cwd, self._policy(plan))  # a bubblewrap of its own
            run_env.update(extra)
        proc = subprocess.Popen(
            run_argv, cwd=cwd, env=run_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, pass_fds=tuple(pass_fds),
        )
        if alone and self.inside(command) and self._guard is not None and plan is not None:
            self._guard.background(plan, lambda: proc.poll() is None)  # a background command: watched while it runs
        return proc

    def launch_background(
        self, argv: Sequence[str], cwd: str, command: str, env: Mapping[str, str], pass_fds: Sequence[int]
    ) -> Any:
        """Start a background command in the session's runner, beside the foreground ones (same network
        namespace, so its loopback server answers them); None when it cannot (use ``launch(alone=True)``).

        A foreground command's end spares the background commands' sessions; ``end()`` of the returned
        object kills its whole session; closing the sandbox ends them all.
        """
        if not self.inside(command):
            return None
        env = without_agent_sockets(env)
        prefix, plan = self._prefix_and_plan(env.get("PATH", ""))
        got = self._launch_in_runner(prefix, argv, cwd, env, pass_fds, background=True, policy=self._policy(plan))
        if got is not None and self._guard is not None and plan is not None:
            self._guard.background(plan, lambda: got.inner_pid in got.runner.background and got.runner.alive())
        return got

    def _launch_in_runner(
        self, prefix: list[str], argv: Sequence[str], cwd: str, env: Mapping[str, str], pass_fds: Sequence[int],
        *, background: bool = False, policy: dict[str, list[str]] | None = None,
    ) -> Any:
        """``argv`` forked by the session's runner (a ``_Launched``, or an ``_InRunner`` for a background
        command); None when there is none to use (busy, or it cannot start)."""
        env2 = {**env, "TMPDIR": "/tmp"}
        r = self._runner_for(prefix, env2)
        if r is None:
            return None
        if self._proxy is not None:
            from .netproxy import PROXY_PORT

            url = f"http://127.0.0.1:{PROXY_PORT}"
            env2.update({k: url for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")})
            env2.update(NO_PROXY="", no_proxy="")
        import socket

        rd, wr = os.pipe()
        try:
            req = {"argv": list(argv), "cwd": cwd, "env": env2, "fds": list(pass_fds), "policy": policy,
                   **({"bg": True} if background else {})}
            socket.send_fds(r.sock, [json.dumps(req).encode()], [wr, *pass_fds])
            pid = -1
            if background:
                r.sock.settimeout(10)
                pid = int(r.take(r.sock.recv(1 << 16))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            os.close(rd)
            r.lock.release()
            r.close()
            return None
        finally:
            os.close(wr)
        if not background:
            return _Launched(r, rd)
        r.background.add(pid)
        r.lock.release()
        return _InRunner(r, rd, pid)

    def _runner_for(self, prefix: list[str], env: Mapping[str, str]) -> _Runner | None:
        """The session's runner for this mount set, locked for one command; None: use a bubblewrap of its own."""
        if not self.use_runner:
            return None
        with self._lock:
            r = self._runner
            if r is not None and r.alive() and r.prefix != prefix and r.background:
                return None  # background commands live in it: this command gets a bubblewrap of its own
            if r is not None and (not r.alive() or r.prefix != prefix):
                if not r.lock.acquire(blocking=False):
                    return None  # busy with another command: that one keeps it
                r.lock.release()
                r.close()
                r = self._runner = None
            if r is None:
                try:
                    r = self._runner = _Runner(prefix, env, self._start_proxy(), supervise=SUPERVISE)
                except OSError as exc:
                    # it cannot start here: a bubblewrap per call from now on, and the user is told why
                    self.use_runner = False
                    self.degraded = str(exc)
                    import logging

                    logging.getLogger("agentloop.sandbox").warning("sandbox: %s", self.degraded_notice())
                    return None
            if not r.lock.acquire(blocking=False):
                return None
            return r

    def _start_proxy(self) -> tuple[int, str] | None:
        """The proxy for ``allowedDomains`` (started once): its port and socket path inside the sandbox."""
        if self.settings.network or not self.settings.allowed_domains:
            return None
        from .netproxy import PROXY_PORT, DomainProxy

        name = ".agentloop-proxy.sock"
        if self._proxy is None:
            self._proxy = DomainProxy(self.settings.allowed_domains, os.path.join(self.tmpdir(), name))
        return PROXY_PORT, f"/tmp/{name}"

    def _prefix_and_plan(self, path_env: str = "") -> tuple[list[str], Any]:
        """bubblewrap and its options for this sandbox, as the file system is now (without --chdir and the
        command), and the plan of what it hides and protects (looked at after the command: ``explain``).

        ``path_env`` is the command's ``PATH``: a virtual environment on it that lives under ``/tmp`` stays
        visible (read-only) through the sandbox's private ``/tmp``.
        """
        assert self.bwrap is not None
        from . import gitguard

        s = self.settings
        rw = s.mode == "workspace-write"
        out = [self.bwrap, "--ro-bind", "/", "/"]
        # the writable roots and the sandbox's own /dev, /proc and /tmp, parents before children: a
        # root that holds /tmp (an added directory "/") must not cover the sandbox's /tmp, and a root
        # under /tmp (a workspace in /tmp) must show through it; the same for the hidden homes and
        # what shows through them
        mounts = [(h, ["--tmpfs", h]) for h in self._hidden_homes()]
        shown = self._shown_read_only(path_env)
        mounts += [(p, ["--ro-bind", p, p]) for p in shown]
        mounts += [(r, ["--bind" if rw else "--ro-bind", r, r]) for r in self.roots if os.path.isdir(r)]
        mounts += self._home_allow_list(rw)
        mounts += [("/dev", ["--dev", "/dev"]), ("/proc", ["--proc", "/proc"]), ("/tmp", ["--bind", self.tmpdir(), "/tmp"])]
        mounts += [(at, ["--ro-bind", f, at]) for f, at in self._identity_gitconfigs()]
        for _path, args in sorted(mounts, key=lambda m: _depth(m[0])):
            out += args
        plan = None
        if rw:
            for p in s.allow_write:
                if os.path.exists(p):
                    out += ["--bind", p, p]
            writable = [*self.roots, *(p for p in s.allow_write if os.path.isdir(p))]
            for r in writable:
                for rel in PROTECTED_IN_ROOTS:
                    if rel.startswith(".git/"):
                        continue  # git's metadata: gitguard's plan below
                    p = os.path.join(r, rel)
                    if os.path.lexists(p) and not os.path.islink(p):
                        out += ["--ro-bind", p, p]
            watch = self._write_watch(writable)
            plan = gitguard.plan(writable, self.homes, watch.walk)
            self._keep_home_hidden(plan)
            watch.ensure_running()  # looks while this command (and any background one) runs
            plan.read_only += [p for p in s.hook_files if os.path.isfile(p) and not os.path.islink(p)
                               and any(p.startswith(r + os.sep) for r in writable)]
            guarded = [(d, ["--bind", d, d]) for d in plan.self_binds] + [(p, ["--ro-bind", p, p]) for p in plan.read_only]
            for _path, args in sorted(guarded, key=lambda m: _depth(m[0])):
                out += args
        for p in s.deny_write:
            if os.path.exists(p) and not hidden_part(p, self._listed_homes()):
                out += ["--ro-bind", p, p]
        for p in self._hidden_in_view(shown):
            if os.path.isdir(p):
                out += ["--tmpfs", p, "--remount-ro", p]
            elif os.path.exists(p):
                out += ["--ro-bind", "/dev/null", p]
        out += extension_binds(self.extension_dirs, self.hidden, self.extension_holders, self._hidden_in_view(shown), self.roots)
        # last: a denied program is masked wherever it is shown from
        out += self._deny_mounts(path_env, shown)
        out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
        if not s.network:
            out += ["--unshare-net"]
        return out, plan

    def _deny_masks(self, path_env: str, shown: Sequence[str] | None = None) -> Masks:
        """What deny rules naming whole programs cover in this sandbox (``deny_exec.plan_masks``)."""
        denied = list(self.denied_programs()) if self.denied_programs is not None else []
        if not denied or not self.active:
            return Masks()
        seen = [*self.roots, *(shown if shown is not None else self._shown_read_only(path_env))]
        homes = self._hidden_homes()

        def visible(p: str) -> bool:
            def under(xs: Sequence[str]) -> bool:
                return any(p == x or p.startswith(x.rstrip(os.sep) + os.sep) for x in xs)
            return not under(self.hidden) and (under(seen) or not under([*homes, "/tmp"]))

        key = (tuple(denied), path_env, tuple(seen))
        with self._lock:
            cached = self._masks.get(key)
        if cached is None:
            shell = os.path.realpath(shutil.which("bash") or "/bin/sh")  # what Bash commands run in (tools/builtin._shell)
            cached = plan_masks(denied, [d for d in path_env.split(os.pathsep) if d], visible, keep={shell})
            with self._lock:
                self._masks = {key: cached}
        return cached

    def _command_path(self) -> str:
        return self.command_path if self.command_path is not None else os.environ.get("PATH", "")

    def work_in(self, roots: Sequence[str], denied_programs: Callable[[], Sequence[DeniedProgram]] | None,
                command_path: str | None) -> None:
        """The session's tools were (re)built: commands work in ``roots`` (real paths taken here), deny rules'
        programs are masked, ``command_path`` is where their names are looked for; the masks start warming."""
        self.roots = [os.path.realpath(d) for d in roots]
        self.denied_programs = denied_programs
        self.command_path = command_path
        self.warm_deny_masks()

    def warm_deny_masks(self) -> None:
        """Find the denied programs' files now, in the background: the first look for copies walks the
        install trees (seconds on a slow disk), which the first command would otherwise wait for."""
        if self.denied_programs is None or not self.active or not list(self.denied_programs()):
            return
        threading.Thread(target=self._deny_masks, args=(self._command_path(),), daemon=True,
                         name="agentloop-deny-masks").start()

    def _deny_mounts(self, path_env: str, shown: Sequence[str]) -> list[str]:
        """bubblewrap options covering each denied program's files with a stub that refuses (last in the mount
        order, so nothing mounted later shows the real file again); the stubs' folder read-only."""
        masks = self._deny_masks(path_env, shown)
        if not masks.files:
            return []
        folder = os.path.join(self.tmpdir(), ".agentloop-denied")
        os.makedirs(folder, exist_ok=True)
        out: list[str] = []
        for target, message in sorted(masks.files.items()):
            text, mode = stub_text(message, masks.files)
            stub = os.path.join(folder, hashlib.sha256(f"{mode}:{text}".encode()).hexdigest()[:20])
            if not os.path.exists(stub):
                with open(stub + ".new", "w") as f:
                    f.write(text)
                os.chmod(stub + ".new", mode)
                os.replace(stub + ".new", stub)
            out += ["--ro-bind", stub, target]
        return [*out, "--ro-bind", folder, "/tmp/.agentloop-denied"]

    def show_extensions(self, folders: Sequence[str], agentloop_home: str) -> list[str]:
        """Show ``folders`` (enabled plugins', skills') to commands read-only, from the next command on: their
        scripts run, and cannot be changed. Returns a warning for each one that is not shown (``extension_folders``)."""
        self.extension_holders = [os.path.realpath(agentloop_home)]
        shown, warnings = extension_folders(folders, self.hidden, self.extension_holders)
        self.extension_dirs = shown
        return warnings
    def _write_watch(self, writable: Sequence[str]) -> Any:
        """The session's ``WriteWatch`` over ``writable`` (a new one when the roots changed)."""
        from .watch import WriteWatch

        with self._lock:
            if self._guard is None or self._guard.walk.roots != tuple(writable):
                if self._guard is not None:
                    self._guard.stop()
                self._guard = WriteWatch(tuple(writable), lambda: list(self._plans.values()))
            return self._guard

    def _hidden_in_view(self, shown: Sequence[str]) -> list[str]:
        """``hidden``, but for what a hidden home already hides (its names stay unseen), in mount order."""
        seen = [*self.roots, *shown]
        homes = self._hidden_homes()
        return [p for p in self.hidden
                if not any(p.startswith(h + os.sep) for h in homes) or any(p.startswith(x + os.sep) for x in seen)]

    def _listed_homes(self) -> list[str]:
        """The homes a root holds (the workspace is the home or above it): shown through an allow-list."""
        if self.settings.mode == "danger-full-access":
            return []
        return listed_homes(self.homes, self.roots)

    def _home_allow_list(self, rw: bool) -> list[tuple[str, list[str]]]:
        """The mounts that show each listed home as its project content, toolchains and ``allowRead`` only
        (``home.allow_list_mounts``); to mount after the root that holds it."""
        out = []
        for h in self._listed_homes():
            extra = [os.path.join(h, p) for p in TOOLCHAIN_PATHS] + list(self.settings.allow_read)
            out += allow_list_mounts(h, rw, [os.path.realpath(p) for p in extra])
        return out

    def _listed_home_note(self, command: str, output: str) -> list[str]:
        """The note for a command that named a hidden part of a listed home (``~/.bashrc``, ``$HOME/.config``):
        it is not there for commands, and what they write there never reaches the disk."""
        listed = self._listed_homes()
        said = [h for h in listed if re.search(re.escape(h) + r"/(\.|snap(/|$))", command + "\n" + output)]
        if listed and re.search(r"(^|[\s'\"=:])(~|\$HOME|\$\{HOME\})/\.", command):
            said = said or listed[:1]
        if not said:
            return []
        return ["the home folder (" + ", ".join(said) + ") is the workspace, so commands see only its project content"
                " (names that do not start with a dot) and toolchain folders: its credential stores, start-up files"
                " and other dot entries are not there, and what a command writes there (or as a new name at the top"
                " of the home) never reaches the disk; the user can add a path with sandbox.filesystem.allowRead or"
                " allowWrite in their own settings"]

    def _keep_home_hidden(self, plan: Any) -> None:
        """Drop from ``plan`` what concerns a hidden part of a listed home: mounts that would show it again (a
        start-up file kept read-only, a git directory under a dot folder), and the watches and pinned links
        there (commands cannot reach it: a change there is the user's own)."""
        opened = [os.path.realpath(p) for p in self.settings.allow_write]  # what the user shows again keeps its guards

        def hidden(p: str) -> bool:
            return hidden_part(p, listed) and not any(p == o or p.startswith(o + os.sep) for o in opened)

        listed = self._listed_homes()
        if listed:
            plan.self_binds = [d for d in plan.self_binds if not hidden(d)]
            plan.read_only = [p for p in plan.read_only if not hidden(p)]
            # commands cannot reach these: a change there is the user's own, not to be undone
            plan.watch = [p for p in plan.watch if not hidden(p)]
            plan.unmade = [p for p in plan.unmade if not hidden(p)]
            plan.pinned = {p: t for p, t in plan.pinned.items() if not hidden(p)}

    def _hidden_homes(self) -> list[str]:
        """The homes hidden as a whole: each one that is not a writable root nor inside one."""
        if self.settings.mode == "danger-full-access":
            return []
        return [h for h in self.homes if not any(h == r or h.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)]

    def _shown_read_only(self, path_env: str) -> list[str]:
        """What shows, read-only, through the hidden homes and the private /tmp: toolchains, the user's
        ``allowRead``, the repository a workspace belongs to, agentloop's own interpreter, a venv on PATH."""
        shown: list[str] = []
        under = [*self._hidden_homes(), "/tmp"]
        for h in self._hidden_homes():
            shown += [os.path.join(h, p) for p in TOOLCHAIN_PATHS]
        shown += list(self.settings.allow_read)
        shown += [p for p in self.also_read if os.path.isdir(p)]
        import sys

        shown += [sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
        for r in self.roots:
            top = _repository_top(r)
            if top is not None and top != r:
                shown.append(top)
        for d in path_env.split(os.pathsep):
            if d.startswith("/tmp/") and os.path.basename(d.rstrip(os.sep)) == "bin":
                venv = os.path.dirname(d.rstrip(os.sep))
                if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
                    shown.append(venv)
        real = [os.path.realpath(p) for p in shown]
        return list(dict.fromkeys(
            p for p in real if os.path.exists(p) and any(p.startswith(u + os.sep) for u in under)
            and not any(p == x or p.startswith(x + os.sep) for x in self.hidden)
            and not any(p == r or p.startswith(r + os.sep) for r in self.roots)  # a root shows it already, writable
        ))

    def _identity_gitconfigs(self) -> list[tuple[str, str]]:
        """``(file, where it shows)``: the user's git identity as the sandbox's ``~/.gitconfig`` of each hidden home."""
        from .gitguard import config_entries

        out = []
        for i, h in enumerate([*self._hidden_homes(), *self._listed_homes()]):
            keep = []
            for cf in (os.path.join(h, ".gitconfig"), os.path.join(h, ".config", "git", "config")):
                keep += [(k, v) for k, v in config_entries(cf) if k in GIT_IDENTITY_KEYS] if os.path.isfile(cf) else []
            if not keep:
                continue
            path = os.path.join(self.tmpdir(), f".agentloop-gitconfig-{i}")
            lines = []
            for k, v in dict(keep).items():
                section, _, name = k.rpartition(".")
                lines.append(f"[{section}]\n\t{name} = " + json.dumps(v) + "\n")
            text = "".join(lines)
            if self._written.get(path) != text or not os.path.isfile(path):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                self._written[path] = text
            out.append((path, os.path.join(h, ".gitconfig")))
        return out

    def _homes_met(self, output: str) -> list[str]:
        """The hidden homes a failed access in ``output`` names ("No such file" on a path there that is
        neither shown nor a root): only then does the result get the note."""
        homes = self._hidden_homes()
        if not homes:
            return []
        open_ = [*self.roots, *self.settings.allow_read, *(os.path.join(h, p) for h in homes for p in TOOLCHAIN_PATHS)]
        met = []
        for line in output.splitlines()[-200:]:
            if not _MISSING.search(line):
                continue
            for h in homes:
                for m in re.finditer(re.escape(h) + r"(/[^\s:'\"]*)?", line):
                    p = m.group(0)
                    if not any(p == o or p.startswith(o + os.sep) for o in open_) and h not in met:
                        met.append(h)
        return met

    def degraded_notice(self) -> str | None:
        """What the user is told when the session's runner could not start (None when it did)."""
        if self.degraded is None:
            return None
        lost = (" so allowedDomains (" + ", ".join(self.settings.allowed_domains) + ") cannot be reached: the network is off"
                if self.settings.allowed_domains and not self.settings.network else "")
        return (f"the session's sandbox could not start ({self.degraded}); each command runs in a sandbox of its own,"
                + lost + " (as strict as before, but weaker than configured)")

    def _supervisor_notes(self) -> list[str]:
        """What the creation supervisor refused since the last command, that it stopped, or (once) that
        creations are not supervised here."""
        notes: list[str] = []
        r = self._runner
        if r is not None and r.refused:
            said, r.refused = r.refused, []
            notes.append("the sandbox refused to create " + "; ".join(said) + " (a name that makes a git repository,"
                         " or one git or a shell would run code from, cannot be made in the workspace; /tmp is the"
                         " sandbox's own: make scratch repositories there; a repository the user wants in the"
                         " workspace, git init or git clone there, runs only outside the sandbox, by their say-so)")
        if r is not None and r.ended:
            r.ended = False
            notes.append("the session's sandbox ended during the command (stopped, or its runner, which makes every"
                         " name commands create, was killed from inside): nothing the command started is left, and the"
                         " next command starts in a new one")
        if r is not None and r.broken is not None:
            notes.append(r.broken + "; the session's sandbox is restarted for the next command")
            with self._lock:
                if self._runner is r:
                    self._runner = None
            r.close()
        off = self.supervisor_off()
        if off is not None and SUPERVISE and not self._supervisor_said:
            self._supervisor_said = True
            notes.append(f"creations are not supervised ({off}): a repository a command plants is moved aside"
                         " by the write watch within milliseconds, but the host's git could see it in between")
        return notes

    def after(self, command: str) -> list[str]:
        """Once ``command`` has ended (nothing of it left running): what it planted that the host would run,
        moved aside (see ``gitguard``); one line each."""
        with self._lock:
            plan = self._plans.pop(command, None)
        if plan is None:
            return []
        from .gitguard import check
        from .wall import TreeWalk

        guard = self._guard
        if guard is None:
            return check(plan)
        with guard.lock:
            return check(plan, guard.walk if guard.walk.roots == plan.roots else TreeWalk(plan.roots))

    def explain(self, command: str, output: str) -> str | None:
        """A note for a command: what it planted and what was moved aside, and, when its output shows
        the sandbox stopped it, why (None when there is nothing to say)."""
        if not self.inside(command):
            return None
        notes = self.after(command)
        if self._guard is not None:
            notes = self._guard.take_notes() + notes
        if self.degraded is not None and not self._degraded_said:
            self._degraded_said = True
            notes.append(self.degraded_notice() or "")
        notes += self._supervisor_notes()
        if "Read-only file system" in output:
            notes.append("writing outside the writable directories ("
                         + (", ".join(self.roots) if self.settings.mode == "workspace-write" else "none but /tmp")
                         + ") or to a protected file (git's hooks and configuration, shell and tool start-up files,"
                         " .agentloop, .claude, .mcp.json, the editors' .vscode, .idea, .helix, .zed) fails")
        hit = [p for p in self.hidden if p in output]
        if hit:
            notes.append("these paths are hidden from commands: " + ", ".join(hit))
        notes += self._listed_home_note(command, output)
        homes = self._homes_met(output)
        if homes:
            notes.append("the home folder (" + ", ".join(homes) + ") is hidden from commands except the workspace,"
                         " added directories and toolchain folders (pip, npm, cargo, go...; read-only); the user can"
                         " let commands read more with sandbox.filesystem.allowRead in their own settings")
        proxy = self._proxy
        if proxy is not None and proxy.denied:
            notes.append("the proxy refused " + ", ".join(dict.fromkeys(proxy.denied)) + " (allowed: "
                         + ", ".join(self.settings.allowed_domains) + ")")
            proxy.denied.clear()
        elif not self.settings.network and re.search(
            r"Network is unreachable|Could not resolve|Temporary failure in name resolution|Name or service not known"
            r"|getaddrinfo|Connection refused|No route to host|nodename nor servname", output):
            notes.append("the network is off" + (" except, through HTTP_PROXY, for " + ", ".join(self.settings.allowed_domains)
                                                  if self.settings.allowed_domains else ""))
        if not notes:
            return None
        return ("[sandbox: this command ran in the Bash sandbox (" + self.settings.mode + "): " + "; ".join(n for n in notes if n)
                + ". If the task needs more, ask the user (they can widen it with --add-dir, sandbox settings or --sandbox).]")


# --- the session's runner: one bubblewrap per session, one fork per command ------------

SUPERVISE = True
"""Every name a sandboxed command makes is made by the creation supervisor (``supervisor``, record 0025).
False only where a test looks at the watch alone (its backstop) or a negative control turns it off."""

@functools.cache
def _supervisor_source() -> str:
    """The supervisor module's text, run inside the sandbox ahead of the runner or the launcher (agentloop's
    package is not importable there: the interpreter runs with ``-I -S``); read once."""
    from . import supervisor

    with open(supervisor.__file__, encoding="utf-8") as f:
        return f.read()


def runner_source() -> str:
    """The session runner's program: the supervisor's source, then ``_RUNNER``."""
    return _supervisor_source() + "\n" + _RUNNER


def launcher_source() -> str:
    """The program that starts a command in a bubblewrap of its own under the supervisor
    (``python -c SOURCE POLICY ARGV...``)."""
    return _supervisor_source() + "\nimport sys\nsys.exit(launch(sys.argv[1], sys.argv[2:]))\n"


_RUNNER = r"""
import ctypes, fcntl, json, os, signal, socket, sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # fork() beside threads, which this program knows it does
try:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: commands cannot ptrace the runner
except Exception:
    pass
if os.getpid() != 2:  # not the first child of bubblewrap's init in a new PID namespace:
    sys.exit(3)        # kill(-1) below would reach far more than the command's processes
s = socket.socket(fileno=int(sys.argv[1]))
if len(sys.argv) > 4:  # the proxy: 127.0.0.1:PORT here, bridged to the agent's Unix socket
    import threading
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", int(sys.argv[3])))
    lst.listen(64)
    def pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x, how in ((b, socket.SHUT_WR), (a, socket.SHUT_RD)):
            try:
                x.shutdown(how)
            except OSError:
                pass
    def bridge(c):
        u = socket.socket(socket.AF_UNIX)
        try:
            u.connect(sys.argv[4])
        except OSError:
            c.close()
            return
        t = threading.Thread(target=pump, args=(u, c), daemon=True)
        t.start()
        pump(c, u)
        t.join()
        u.close()
        c.close()
    def serve():
        while True:
            try:
                c, _ = lst.accept()
            except OSError:
                return
            threading.Thread(target=bridge, args=(c,), daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
bg = set()  # background commands: each the leader of a session of its own, spared when a command ends
def stat_of(p):
    try:
        with open("/proc/%d/stat" % p) as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return rest[0], int(rest[3])  # state, session
    except (OSError, ValueError, IndexError):
        return "Z", None
def sweep(doomed):
    me = os.getpid()
    for _ in range(200):
        hit = 0
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in (1, me):
                state, sid = stat_of(int(name))
                if state != "Z" and doomed(sid):
                    try:
                        os.kill(int(name), signal.SIGKILL)
                        hit += 1
                    except OSError:
                        pass
        if not hit:
            return
def reap():  # every child that ended: background shells, and orphans (this runner is their subreaper)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in bg:
            bg.discard(pid)
            sweep(lambda sid: sid == pid)  # what the background shell left running ends with it
# the creation supervisor (its source is above): a thread of this runner, so it is every command's ancestor
sup = Supervisor()
off = sup.start() if sys.argv[2] == "supervise" else "switched off"
mask = os.umask(0) if off is None else None  # it makes names with each caller's own umask
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans stay below this runner
def report(**kw):
    if off is None:
        kw["refused"] = sup.take_refused()
        kw["broken"] = sup.broken
    s.send(json.dumps(kw).encode())
s.send(json.dumps({"ready": True, "supervisor": off}).encode())
while True:
    try:
        msg, fds, _, _ = socket.recv_fds(s, 1 << 22, 8)
    except OSError:
        break
    if not msg:
        break
    req = json.loads(msg)
    reap()
    if "kill" in req:  # a background command: its whole session
        victim = int(req["kill"])
        if victim in bg:
            sweep(lambda sid: sid == victim)
            try:
                os.waitpid(victim, 0)
            except ChildProcessError:
                pass
            bg.discard(victim)
        report(killed=victim)
        continue
    if off is None:
        sup.set_policy(req.get("policy"))  # the newest plan: background commands follow it too
    pid = os.fork()
    if pid == 0:
        try:
            if req.get("bg"):
                os.setsid()
            if mask is not None:
                os.umask(mask)
            s.close()
            base = max([2, *req["fds"]]) + 1
            high = [fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, base) for f in fds]  # above every target
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(high[0], 1)
            os.dup2(high[0], 2)
            for f, target in zip(high[1:], req["fds"]):
                os.dup2(f, target)
            keep = {0, 1, 2, *req["fds"]}
            for name in os.listdir("/proc/self/fd"):
                if int(name) not in keep:
                    try:
                        os.close(int(name))
                    except OSError:
                        pass
            os.chdir(req["cwd"])
            os.execve(req["argv"][0], req["argv"], req["env"])
        except BaseException as exc:
            os.write(2, ("sandbox: cannot start the command: %s\n" % exc).encode())
        os._exit(127)
    for f in fds:
        os.close(f)
    if req.get("bg"):
        bg.add(pid)
        report(pid=pid)
        continue
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    reap()
    if bg:  # everything the command started, but the background commands' sessions
        sweep(lambda sid: sid not in bg)
    else:
        try:
            os.kill(-1, signal.SIGKILL)  # everything the command started: all but pid 1 and this runner
        except OSError:
            pass
    report(code=code)
"""


class _Runner:
    """A bubblewrap sandbox kept for the session, running a small runner as its PID 2.

    Each command is forked by the runner inside the sandbox with its own
    environment, directory and descriptors (sent over a socket); when it ends,
    the runner kills every other process in the sandbox's PID namespace
    (``kill(-1)``), so nothing it started outlives the call, as with a
    bubblewrap per call, without paying for a new sandbox each time. A
    background command (``"bg": true``) gets a session of its own and the
    runner answers at once; while any runs, a command's end kills every
    process outside those sessions instead, and ``{"kill": pid}`` ends one.
    """

    def __init__(self, prefix: list[str], env: Mapping[str, str], proxy: tuple[int, str] | None = None,
                 supervise: bool = True):
        import socket
        import sys

        self.prefix = prefix
        self.refused: list[str] = []
        """What the creation supervisor refused since the host last looked (``take``)."""
        self.broken: str | None = None
        """Why the supervisor stopped (every creation then fails); None while it runs."""
        self.supervisor_off: str | None = None
        """Why creations are not supervised in this runner (None: they are)."""
        self.ended = False
        """It ended during a command (killed by the host, or from inside: the supervisor with it)."""
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = a
        bridge = [str(proxy[0]), proxy[1]] if proxy else []
        err = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                [*prefix, "--", sys.executable, "-I", "-S", "-c", runner_source(), str(b.fileno()),
                 "supervise" if supervise else "plain", *bridge],
                pass_fds=(b.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=err, start_new_session=True, env=dict(env),
            )
        finally:
            b.close()
        self.lock = threading.Lock()
        self.background: set[int] = set()
        """The background commands running in it (their pids inside)."""
        a.settimeout(10)
        try:
            ready = a.recv(4096)
        except OSError:
            ready = b""
        if ready.startswith(b'{"ready"'):
            self.supervisor_off = self.take(ready).get("supervisor")
        else:
            self.close()
            err.seek(0)
            said = err.read(4096).decode("utf-8", "replace").strip().splitlines()
            err.close()
            raise OSError("its runner did not start" + (f": {said[-1]}" if said else ""))
        err.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def take(self, msg: bytes) -> dict[str, Any]:
        """One answer of the runner, decoded; the supervisor's refusals and state it carries are kept."""
        try:
            got = json.loads(msg)
        except ValueError:
            return {}
        if not isinstance(got, dict):
            return {}
        refused = got.get("refused")
        if isinstance(refused, list):
            self.refused += [str(x) for x in refused][:50]
        if isinstance(got.get("broken"), str):
            self.broken = got["broken"]
        return got

    def close(self) -> None:
        import signal

        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait()


class _Launched:
    """A command the runner started: the part of ``subprocess.Popen`` that ``run_command`` uses."""

    def __init__(self, runner: _Runner, read_end: int):
        self.runner = runner
        self.pid = runner.proc.pid  # the sandbox's process group: killing it ends the command
        self.stdout = os.fdopen(read_end, "rb", buffering=0)
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        self.runner.sock.settimeout(timeout)
        try:
            msg = self.runner.sock.recv(1 << 16)
        except TimeoutError:
            raise subprocess.TimeoutExpired("bash", timeout or 0) from None
        except OSError:
            msg = b""
        try:
            code = int(self.runner.take(msg)["code"]) if msg else -9
        except (ValueError, KeyError, TypeError):
            code = -9
        if not msg:
            self.runner.close()  # killed (timeout, interrupt) or broken: the next call starts a new one
            self.runner.ended = True
        self.returncode = code
        self.runner.lock.release()
        return code


def _depth(path: str) -> int:
    return len([x for x in path.split(os.sep) if x])


def _repository_top(root: str) -> str | None:
    """The folder holding the ``.git`` of the repository ``root`` is in, when that is above ``root``."""
    d = root
    for _ in range(64):
        parent = os.path.dirname(d)
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        if parent == d:
            return None
        d = parent
    return None


class _InRunner:
    """A background command in the session's runner: its output pipe, and ``end()`` to kill its session."""

    def __init__(self, runner: _Runner, read_end: int, inner_pid: int):
        self.runner = runner
        self.inner_pid = inner_pid
        self.pid = -1  # not a host process group: end() is the only way to stop it
        self.stdout = os.fdopen(read_end, "rb", buffering=0)

    def end(self) -> None:
        """Kill the command's whole session inside the sandbox (nothing when the runner is gone or busy too long)."""
        r = self.runner
        if self.inner_pid not in r.background or not r.alive():
            r.background.discard(self.inner_pid)
            return
        if not r.lock.acquire(timeout=30):
            return
        try:
            r.sock.settimeout(10)
            r.sock.send(json.dumps({"kill": self.inner_pid}).encode())
            r.take(r.sock.recv(1 << 16))
        except OSError:
            r.close()
        finally:
            r.background.discard(self.inner_pid)
            r.lock.release()


EXTENSION_HOLDERS = (".claude",)
"""A hidden folder a plugin's or skill's folder may be shown from inside (``~/.claude/skills/pdf``,
``~/.claude/plugins/...``); the agentloop home is the other (its ``skills/``)."""


def extension_folders(folders: Sequence[str], hidden: Sequence[str], holders: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Which of ``folders`` (real paths) are shown read-only, and a warning for each that is not.

    Claude Code runs a skill's bundled scripts and a plugin's from their folders (skills page, "Add supporting
    files"; plugins reference, ``${CLAUDE_PLUGIN_ROOT}``). The wall stays whole: a folder that holds a hidden path
    (a credential folder, the agentloop home, a ``denyRead`` path) or is one is not shown, and one inside a hidden
    path only when that path is a ``.claude`` folder or one of ``holders`` (the agentloop home).
    """
    shown: list[str] = []
    warnings: list[str] = []
    holders = [h for h in hidden if os.path.basename(h) in EXTENSION_HOLDERS] + list(holders)
    for f in dict.fromkeys(os.path.realpath(x) for x in folders):
        if not os.path.isdir(f):
            continue
        covers = next((h for h in hidden if h == f or h.startswith(f.rstrip(os.sep) + os.sep)), None)
        inside = [h for h in hidden if f.startswith(h + os.sep)]
        if covers is not None or any(h not in holders for h in inside):
            warnings.append(f"sandbox: {f} (a plugin's or skill's folder) is not shown to commands: it "
                            f"{'holds' if covers is not None else 'is inside'} a folder the sandbox hides; its scripts cannot run in Bash")
            continue
        shown.append(f)
    return shown, warnings


def extension_binds(folders: Sequence[str], hidden: Sequence[str], holders: Sequence[str] = (),
                    sealed: Sequence[str] = (), roots: Sequence[str] = ()) -> list[str]:
    """bubblewrap's read-only binds for the shown plugin and skill folders, after every other mount (a folder inside
    a hidden home, inside a writable workspace, or under a hidden ``~/.claude`` shows, and cannot be written).
    ``sealed``: the hidden folders mounted as read-only empty folders, inside which no mount point can be made (a
    folder there is left hidden, and the log says so). ``roots``: the workspace and added directories; a folder that
    is one of them or holds one (a marketplace whose ``source`` is ``./``, cloned as the project) is left as it is,
    since binding it read-only would take the workspace's writes away."""
    out: list[str] = []
    for f in sorted(extension_folders(folders, hidden, holders)[0], key=_depth):
        if any(r == f or r.startswith(f.rstrip(os.sep) + os.sep) for r in roots):
            continue
        if any(f.startswith(h + os.sep) for h in sealed):
            import logging

            logging.getLogger("agentloop.sandbox").warning("sandbox: %s is inside a hidden folder mounted read-only; not shown to commands", f)
            continue
        out += ["--ro-bind", f, f]
    return out
