"""Folder trust: which settings sources apply, remembered per folder (each source sanitized first, ``agent/settings_sanitizer.py``).

Rules:

1. A folder's own configuration (``.claude/settings.json``,
   ``.claude/settings.local.json``, ``.agentloop/settings.json``,
   ``.agentloop/settings.local.json`` and ``.mcp.json``) takes effect only
   once the user trusts the folder. Until then only what restricts applies:
   ``permissions.deny`` rules and ``disabledMcpjsonServers`` (memory files,
   CLAUDE.md and AGENTS.md, are read regardless: they only inform). Hooks, MCP
   servers, allow and ask rules, ``defaultMode``, ``additionalDirectories``,
   ``env`` (base URLs included), models and every other key are left out and
   named (``Power``).
2. Trust is remembered in the user's agentloop home (``trusted-folders.json``),
   keyed by the folder's real path, with a digest of those files' bytes and the
   list of what they would do. When the files change the folder is untrusted
   again until the user looks at what changed. The home folder itself is
   trusted for one session at most, never remembered: everything under it
   would inherit the answer, as Claude Code does it per folder.
3. Project ``.mcp.json`` servers are approved one by one (Claude Code's
   ``enabledMcpjsonServers``, ``disabledMcpjsonServers``,
   ``enableAllProjectMcpServers``, or an answer at the REPL remembered with the
   folder). ``--trust`` and ``agentloop trust`` approve every server they show.
4. Prices come only from the user's and managed settings (and the command
   line): a project's ``prices`` are never used, trusted or not, and a warning
   names them.
5. Loading as Claude Code loads (``sanitize``): a bad entry (a ``//`` comment
   in a permission list, an unknown mode, a malformed hook or server, a bad
   price) is skipped with one warning naming the file and the entry, and the
   rest of the file applies. Every key agentloop does not honour is named in a
   warning, one line per file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..config.settings import ConfigError, SettingsSource, read_config_bytes, read_json_object
from .hook_paths import named_files
from .hooks.runner import HookEntry, HookSection
from .settings_sanitizer import (
    DROP,
    HONOURED_KEYS,
    RESTRICTING_KEYS,
    clean_servers,
    placed,
    printable,
    restrict,
    sanitize,
    whole_text,
)

__all__ = [
    "HONOURED_KEYS",
    "Power",
    "TrustDecision",
    "TrustQuestion",
    "TrustStore",
    "config_digest",
    "describe_powers",
    "printable",
    "project_config_paths",
    "resolve_model",
    "restrict",
    "sanitize",
]

STORE_FILE = "trusted-folders.json"


def _base_url_vars() -> frozenset[str]:
    """Every registered provider's base-URL variables (a folder's ``env`` setting one is shown as a base URL)."""
    from ..providers import records

    return frozenset(v for r in records() for v in r.base_env)


BASE_URL_VARS = _base_url_vars()

# Claude Code's model configuration: the providers' aliases ("sonnet", "opus", "haiku": each record's, with
# the variable that overrides it), and two of its own: "default" (sonnet) and "opusplan" (opus in plan mode,
# sonnet otherwise); "[1m]" variants name the same model.
_MODE_ALIASES = {"default": ("sonnet", "sonnet"), "opusplan": ("opus", "sonnet")}
"""alias -> (in plan mode, otherwise)."""


def resolve_model(spec: str, *, env: Mapping[str, str], permission_mode: str = "default", provider: str | None = None) -> str:
    """A model spec with the providers' aliases and bare names (``claude-*``) turned into ``<provider>:<id>``.

    ``provider``: the session's provider (``openai`` for a session on ``openai:gpt-4o``); another bare name
    (``gpt-4.1`` in a command's or agent's front matter) is that provider's model, as Claude Code's front matter
    names a model of the provider the session runs on. Anything else (``openai:gpt-4o``, ``scripted:FILE``) is
    returned as it is (``providers.spec_for``).
    """
    from ..providers import is_spec, spec_for

    s = spec.strip()
    if is_spec(s):
        return spec
    base = s[: -len("[1m]")] if s.lower().endswith("[1m]") else s
    key = base.lower()
    if key in _MODE_ALIASES:
        base = _MODE_ALIASES[key][0 if permission_mode == "plan" else 1]
    return spec_for(base, env=env, provider=provider) or spec


# --- what a folder's configuration would do -------------------------------------


@dataclass(frozen=True)
class Power:
    """One thing a folder's configuration would do: where it is written and what it is."""

    file: str
    text: str

    def line(self, cwd: str) -> str:
        rel = os.path.relpath(self.file, cwd) if os.path.isabs(self.file) else self.file
        return f"{rel}: {self.text}"


def _server_text(name: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"MCP server {name}"
    if "url" in entry:
        return f"MCP server {name}: {entry.get('type', 'http')} {whole_text(entry.get('url'))}"
    argv = [str(entry.get("command", ""))] + [str(a) for a in entry.get("args", []) if isinstance(entry.get("args"), list)]
    return f"MCP server {name}: {shlex.join(argv)}"


def describe_powers(source: SettingsSource) -> list[Power]:
    """Everything a (sanitized) project settings file would do that needs trust, in file order."""
    out: list[Power] = []

    def add(text: str) -> None:
        out.append(Power(source.path, printable(text)))

    for key, value in source.data.items():
        if key in RESTRICTING_KEYS or key == "prices":
            continue
        if key == "hooks":
            for e in _hook_entries(source):
                add(f"hook {e.event}{f' [{e.matcher}]' if e.matcher else ''}: {e.shown}")
        elif key == "mcpServers" and isinstance(value, dict):
            for name, entry in value.items():
                add(_server_text(name, entry))
        elif key == "permissions" and isinstance(value, dict):
            for r in value.get("allow", []):
                add(f"allow rule {r}")
            for r in value.get("ask", []):
                add(f"ask rule {r}")
            if "defaultMode" in value:
                add(f"permission mode {value['defaultMode']}")
            for d in value.get("additionalDirectories", []):
                add(f"additional directory {d}")
        elif key == "env" and isinstance(value, dict):
            for k, v in value.items():
                label = "base URL" if k in BASE_URL_VARS else "env"
                add(f"{label} {k}={whole_text(v)}")
        elif key in ("model", "fallbackModel", "loopCheckModel"):
            add(f"{key} {whole_text(value)}")
        elif key == "enableAllProjectMcpServers":
            if value is True:
                add("enableAllProjectMcpServers (approves every .mcp.json server)")
        elif key == "enabledMcpjsonServers":
            add(f"enabledMcpjsonServers {', '.join(value)}")
        else:
            add(f"setting {key}={whole_text(value)}")
    return out


def mcp_json_servers(path: str, warnings: list[str]) -> dict[str, Any]:
    """The server entries of a project ``.mcp.json`` that load (the bad ones warned about and skipped).

    Raises:
        ConfigError: the file is not a JSON object.
    """
    data = read_json_object(path)
    if data is None:
        return {}

    def warn(place: str, problem: str, tail: str = "; skipped") -> None:
        warnings.append(f"{path}: {placed(place, problem)}{tail}")

    n = len(warnings)
    servers = clean_servers(data.get("mcpServers", {}), path, warn)
    warnings[n:] = [printable(w) for w in warnings[n:]]
    return {} if servers is DROP else dict(servers)


def _users_own(path: str, home: str, user_dir: str) -> bool:
    """A file under the user's own folders (``~/.claude``, the agentloop home): in the home folder the
    "project" commands are the user's."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(d) + os.sep) for d in (os.path.join(user_dir, ".claude"), home))


def folders_own(item: Any, cwd: str, home: str, user_dir: str) -> bool:
    """A command or skill is the folder's (its grants, model and hooks follow the folder's trust): found in the
    folder's places, or found in the user's but lying inside the folder (``~/.claude/skills/x`` a link to a
    folder of the workspace, which the model's commands can rewrite), and not under the user's own folders."""
    if _users_own(item.path, home, user_dir):
        return False
    real, top = os.path.realpath(item.path), os.path.realpath(cwd)
    return bool(item.scope == "project") or real.startswith(top + os.sep)


def project_grants(cwd: str, home: str, user_dir: str) -> list[Power]:
    """The folder's commands and skills whose ``allowed-tools`` would allow tools without a prompt, whose ``model``
    would choose the model, or whose front matter ``hooks`` would run commands while they are active, and its
    sub-agent files that choose a model."""
    from .commands import load_commands, load_skills

    out: list[Power] = []
    try:
        commands = load_commands(cwd, home, user_dir, [])
        skills = load_skills(cwd, home, user_dir)
    except Exception:  # their loader warns about them when the agent loads them
        return out
    for kind, items in (("command", commands), ("skill", skills)):
        for name, c in items.items():
            if not folders_own(c, cwd, home, user_dir):
                continue
            rules = tuple(c.allowed_tools)
            if rules:
                out.append(Power(c.path, printable(f"{kind} /{name} allowed-tools: {', '.join(rules)}")))
            if c.model:  # what it costs is the user's to allow, as a sub-agent file's model
                out.append(Power(c.path, printable(f"{kind} /{name} model: {c.model}")))
            if getattr(c, "hooks", None) is not None:
                out.append(Power(c.path, printable(f"{kind} /{name} hooks: {whole_text(c.hooks)}")))
    out += _agent_models(cwd, home, user_dir)
    return out


def _agent_models(cwd: str, home: str, user_dir: str) -> list[Power]:
    """The folder's sub-agent files that choose a model (what it costs is the user's to allow)."""
    from .subagents.agent_types import load_agent_types

    try:
        types = load_agent_types(cwd, home, user_dir, [])
    except Exception:  # their loader warns about them when the agent loads them
        return []
    return [Power(t.source, printable(f"sub-agent {name} model: {t.model}")) for name, t in types.items()
            if t.model and t.source != "built-in" and not _users_own(t.source, home, user_dir)]


def without_grants(items: Mapping[str, Any], cwd: str, home: str, user_dir: str,
                   warnings: list[str] | None = None) -> dict[str, Any]:
    """Commands or skills with the folder's own ones' (``folders_own``) ``allowed-tools`` and ``model`` taken away
    (an untrusted folder: its files choose no tools and no model, as its agent files do); each model left out is
    named in ``warnings``."""
    out: dict[str, Any] = {}
    for name, c in items.items():
        if (c.allowed_tools or c.model) and folders_own(c, cwd, home, user_dir):
            if c.model and warnings is not None:
                warnings.append(f"{c.path}: {name!r} names the model {c.model!r}; not used until you trust this folder")
            if hasattr(c, "meta"):
                c = replace(c, meta={k: v for k, v in c.meta.items() if k not in ("allowed-tools", "model")})
            else:
                c = replace(c, allowed_tools=(), model=None)
        out[name] = c
    return out


def project_config_paths(cwd: str, sources_paths: Sequence[tuple[str, str]]) -> list[str]:
    """The files folder trust covers: the project's settings files (as listed, scope project or local) and ``.mcp.json``."""
    out = [p for p, scope in sources_paths if scope in ("project", "local")]
    out.append(os.path.join(cwd, ".mcp.json"))
    return out


def config_digest(paths: Sequence[str]) -> str:
    """SHA-256 over each file's name and bytes (or its absence): any change gives another digest.

    Raises:
        ConfigError: a file cannot be read.
    """
    h = hashlib.sha256()
    for p in paths:
        raw = read_config_bytes(p)
        h.update(os.path.basename(os.path.dirname(p)).encode() + b"/" + os.path.basename(p).encode() + b"\0")
        h.update(b"-" if raw is None else b"+" + hashlib.sha256(raw).digest())
    return h.hexdigest()


# --- remembering -----------------------------------------------------------------


@dataclass
class TrustRecord:
    digest: str
    powers: list[str] = field(default_factory=list)
    mcp: dict[str, bool] = field(default_factory=dict)
    """Answers about each ``.mcp.json`` server: approved or not."""


class TrustStore:
    """``$AGENTLOOP_HOME/trusted-folders.json``: folder real path -> digest, what it showed, server answers."""

    def __init__(self, home: str):
        self.path = os.path.join(home, STORE_FILE)

    def _load(self) -> dict[str, Any]:
        try:
            data = read_json_object(self.path)
        except ConfigError:
            return {}
        folders = (data or {}).get("folders")
        return folders if isinstance(folders, dict) else {}

    def get(self, folder: str) -> TrustRecord | None:
        r = self._load().get(os.path.realpath(folder))
        if not isinstance(r, dict) or not isinstance(r.get("digest"), str):
            return None
        powers = [p for p in r.get("powers", []) if isinstance(p, str)] if isinstance(r.get("powers"), list) else []
        mcp = {k: v for k, v in r.get("mcp", {}).items() if isinstance(v, bool)} if isinstance(r.get("mcp"), dict) else {}
        return TrustRecord(r["digest"], powers, mcp)

    def remember(self, folder: str, record: TrustRecord) -> None:
        folders = self._load()
        folders[os.path.realpath(folder)] = {"digest": record.digest, "powers": record.powers, "mcp": record.mcp}
        self._write(folders)

    def forget(self, folder: str) -> bool:
        folders = self._load()
        if folders.pop(os.path.realpath(folder), None) is None:
            return False
        self._write(folders)
        return True

    def _write(self, folders: dict[str, Any]) -> None:
        from ..config.private import private_dirs

        private_dirs(os.path.dirname(self.path))
        tmp = f"{self.path}.tmp.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "folders": folders}, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, self.path)


# --- the decision ---------------------------------------------------------------


@dataclass(frozen=True)
class TrustQuestion:
    """What the REPL shows before asking whether to trust a folder."""

    folder: str
    lines: list[str]
    """Each thing the configuration would do, ``file: what``."""
    changed: list[str] | None = None
    """When the folder was trusted before: ``+ line`` / ``- line`` for what changed since."""
    remembered: bool = True
    """False for the home folder: a yes lasts this session only."""


@dataclass
class TrustDecision:
    """What was decided for one folder, and what was left out."""

    folder: str
    trusted: bool
    status: Literal["trusted", "new", "changed", "nothing"]
    powers: list[Power]
    digest: str
    left_out: list[str] = field(default_factory=list)
    """What was not used, for the one line on stderr (servers left unapproved included)."""
    mcp_approved: set[str] = field(default_factory=set)
    servers: list[str] = field(default_factory=list)
    """The names of the folder's ``.mcp.json`` servers (that load)."""

    def notice(self) -> str | None:
        """The one line ``-p``, ``run`` and a REPL without a terminal print, or None when nothing was left out."""
        if not self.left_out:
            return None
        why = {"changed": "its configuration changed since you trusted it", "new": "this folder is not trusted"}.get(
            self.status, "not approved"
        )
        return (
            f"agentloop: {why}; left out: {'; '.join(self.left_out)}"
            f" (run with --trust to use them once, or `agentloop trust {self.folder}` to remember)"
        )


def changes(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """``- line`` for each line gone, ``+ line`` for each line added (order kept)."""
    o, n = set(old), set(new)
    return [f"- {x}" for x in old if x not in n] + [f"+ {x}" for x in new if x not in o]


@dataclass
class LoadedConfig:
    """The settings an agent runs with, after sanitizing and folder trust."""

    sources: list[SettingsSource]
    """In effect: every file when the folder is trusted; else the user's and managed files, and the folder's deny rules."""
    price_sources: list[SettingsSource]
    """The user's and managed files only: prices never come from a folder."""
    warnings: list[str]
    decision: TrustDecision
    mcp_json: str
    """The folder's ``.mcp.json`` path."""


AskTrust = Callable[[TrustQuestion], bool]
AskServer = Callable[[str, str], bool]




def hook_files(sources: Sequence[SettingsSource], cwd: str) -> list[str]:
    """The files inside ``cwd`` that the hook commands of ``sources`` name (``sh scripts/lint.sh``,
    ``"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.py``), as real paths: what a hook really runs, so folder
    trust covers their bytes and the sandbox keeps them read-only."""
    root = os.path.realpath(cwd)
    out: list[str] = []
    for s in sources:
        for e in _hook_entries(s):
            if e.command is not None:
                out += named_files(e.command, root)
    return list(dict.fromkeys(out))


def _hook_entries(source: SettingsSource) -> tuple[HookEntry, ...]:
    """The hooks of a source as the sanitizer parsed them (a source that was not sanitized is, now)."""
    if "hooks" not in source.data:
        return ()
    parsed = source.section("hooks", HookSection) or sanitize(source)[0].section("hooks", HookSection)
    return parsed.entries if parsed is not None else ()


def _file_digest(path: str, limit: int = 64 << 20) -> str:
    """SHA-256 of a hook's script (read in blocks, up to ``limit`` bytes; "unreadable" when it cannot be read).

    A file longer than ``limit`` also adds its size, inode and change time: a write past the bytes read
    moves the change time (no program can set it back), so the digest still changes."""
    import stat

    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return "not a regular file"
        with os.fdopen(fd, "rb") as f:
            while limit > 0:
                block = f.read(min(1 << 20, limit))
                if not block:
                    break
                h.update(block)
                limit -= len(block)
            if limit <= 0 and f.read(1):
                st = os.fstat(f.fileno())
                h.update(f"\0past the bytes read: {st.st_size} {st.st_ino} {st.st_ctime_ns}".encode())
    except OSError:
        return "unreadable"
    return h.hexdigest()


def _project_digest(cwd: str, listed: Sequence[tuple[str, str, Any]], grants: Sequence[Power],
                    scripts: Sequence[str] = ()) -> str:
    """The digest a folder's trust is remembered by: its configuration files, the files its hooks run
    (``hook_files``: a changed script asks again) and, when any, its grants."""
    digest = config_digest(project_config_paths(cwd, [(p, sc) for p, sc, _ in listed]))
    if scripts:
        digest = hashlib.sha256((digest + "\0" + "\0".join(f"{p}:{_file_digest(p)}" for p in scripts)).encode()).hexdigest()
    if grants:  # a command's or skill's allowed-tools changing asks again too
        digest = hashlib.sha256((digest + "\0" + "\0".join(p.line(cwd) for p in grants)).encode()).hexdigest()
    return digest


def _approve_servers(
    decision: TrustDecision,
    effective: list[SettingsSource],
    servers: Mapping[str, Any],
    rec: TrustRecord | None,
    ask_server: AskServer | None,
) -> bool:
    """Which of a trusted folder's ``.mcp.json`` servers may start (into ``decision``); True when ``rec`` changed.

    Settings enable or disable them, the remembered answer holds, else
    ``ask_server`` is asked (and its answer kept in ``rec``); an unanswered
    server is left out.
    """
    from ..config.settings import merged

    dirty = False
    enable_all = merged(effective, "enableAllProjectMcpServers") is True
    enabled: set[str] = set()
    disabled: set[str] = set()
    for s in effective:
        enabled.update(s.data.get("enabledMcpjsonServers", []))
        disabled.update(s.data.get("disabledMcpjsonServers", []))
    for name, entry in servers.items():
        if name in disabled:
            continue
        if enable_all or name in enabled or (rec is not None and rec.mcp.get(name) is True):
            decision.mcp_approved.add(name)
        elif rec is not None and name in rec.mcp:
            continue  # the user said no
        elif ask_server is not None and rec is not None:
            rec.mcp[name] = bool(ask_server(printable(name), printable(_server_text(name, entry))))
            dirty = True
            if rec.mcp[name]:
                decision.mcp_approved.add(name)
        else:
            decision.left_out.append(f"{printable(_server_text(name, entry))} (not approved)")
    return dirty


def load_for_agent(
    cwd: str,
    home: str,
    env: Mapping[str, str],
    *,
    trust: bool | None = None,
    ask: AskTrust | None = None,
    ask_server: AskServer | None = None,
    managed: str | None = None,
) -> LoadedConfig:
    """Read every settings file, skip bad entries, and decide folder trust (see the module's rules).

    ``trust=True`` trusts the folder for this run (``--trust``); otherwise a
    remembered trust with the same digest holds, else ``ask`` (the REPL) is
    asked, else the folder's powers are left out.

    Raises:
        ConfigError: a settings file (or ``.mcp.json``) is not a JSON object.
    """
    from ..config.settings import (
        MANAGED_SETTINGS,
        all_settings_paths,
        load_settings,
        user_home,
    )

    udir = user_home(env)
    mpath = MANAGED_SETTINGS if managed is None else (managed or None)
    listed = all_settings_paths(cwd, home, user_dir=udir, managed=mpath)
    warnings: list[str] = []
    clean: list[SettingsSource] = []
    for s in load_settings(cwd, home, user_dir=udir, managed=mpath):
        c, w = sanitize(s)
        clean.append(c)
        warnings += w
        if c.in_project and "prices" in c.data:
            warnings.append(f"{c.path}: prices: a project cannot set prices (only your own settings and the command line do); ignored")
    mcp_path = os.path.join(cwd, ".mcp.json")
    servers = mcp_json_servers(mcp_path, warnings)
    powers = [p for s in clean if s.in_project for p in describe_powers(s)]
    powers += [Power(mcp_path, printable(_server_text(n, e))) for n, e in servers.items()]
    grants = project_grants(cwd, home, udir)
    powers += grants
    from .plugins import project_plugin_files

    digest = _project_digest(cwd, listed, grants, hook_files([s for s in clean if s.in_project], cwd) + project_plugin_files(cwd, clean))
    is_home = os.path.realpath(cwd) == os.path.realpath(udir)
    store = TrustStore(home)
    rec = None if is_home else store.get(cwd)
    lines = [p.line(cwd) for p in powers]
    decision = TrustDecision(cwd, True, "nothing", powers, digest, servers=list(servers))
    dirty = False
    if powers:
        if trust is True:
            decision.status = "trusted"
            rec = TrustRecord(digest, lines, {n: True for n in servers})
        elif rec is not None and rec.digest == digest:
            decision.status = "trusted"
        else:
            decision.status = "changed" if rec is not None else "new"
            yes = False
            if ask is not None:
                q = TrustQuestion(cwd, lines, changes(rec.powers, lines) if rec is not None else None, remembered=not is_home)
                yes = bool(ask(q))
            decision.trusted = yes
            if yes:
                rec = TrustRecord(digest, lines, {})
                dirty = True
    if not decision.trusted:
        decision.left_out = [p.text for p in powers]
        effective = [restrict(s) if s.in_project else s for s in clean]
    else:
        effective = clean
        dirty = _approve_servers(decision, effective, servers, rec, ask_server) or dirty
        if dirty and rec is not None and not is_home and trust is not True:
            store.remember(cwd, rec)
    price_sources = [s for s in clean if not s.in_project]
    return LoadedConfig(effective, price_sources, warnings, decision, mcp_path)


def remember_folder(cwd: str, home: str, env: Mapping[str, str], *, managed: str | None = None) -> tuple[TrustDecision, list[str]]:
    """``agentloop trust DIR``: trust the folder's configuration as it is now (every ``.mcp.json`` server approved).

    Returns the decision (its ``powers`` are what was trusted) and the load warnings.

    Raises:
        ConfigError: a file is malformed, or ``cwd`` is the home folder (trust there is never remembered).
    """
    from ..config.settings import user_home

    if os.path.realpath(cwd) == os.path.realpath(user_home(env)):
        raise ConfigError(cwd, "is your home folder: trust there is never remembered (use --trust for one run)")
    loaded = load_for_agent(cwd, home, env, trust=True, managed=managed)
    d = loaded.decision
    TrustStore(home).remember(cwd, TrustRecord(d.digest, [p.line(cwd) for p in d.powers], dict.fromkeys(d.servers, True)))
    return d, loaded.warnings


def folder_decision(cwd: str, home: str, env: Mapping[str, str]) -> TrustDecision | None:
    """Whether the folder is trusted now (remembered with the same digest), asking no one; None when its files are malformed."""
    try:
        return load_for_agent(cwd, home, env).decision
    except ConfigError:
        return None


def keep_trust_after_own_edit(cwd: str, home: str, env: Mapping[str, str], before: TrustDecision | None) -> bool:
    """After the user changed the folder's configuration through agentloop (``agentloop mcp add``), keep
    the folder trusted when it was before the change. Returns whether it is trusted now."""
    if before is None or not before.trusted:
        return False
    try:
        remember_folder(cwd, home, env)
    except ConfigError:
        return False
    return True
