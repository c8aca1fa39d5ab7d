"""Claude Code plugins from local folders: found, read, and handed to the loaders of commands, skills, sub-agents, hooks and MCP servers.

A plugin is a folder (``.claude-plugin/plugin.json`` names it; without one the
folder's name does) holding ``commands/``, ``agents/``, ``skills/<name>/SKILL.md``,
``hooks/hooks.json`` and ``.mcp.json``, or the paths its ``plugin.json`` gives
for them (they add to the default folders). A session loads:

- each ``--plugin-dir DIR`` (the user's own, as ``--mcp-config``);
- each ``enabledPlugins`` key ``name@marketplace`` set to true, found through a
  marketplace of ``extraKnownMarketplaces`` whose source is a local ``directory``
  (or a ``file``: its ``marketplace.json``); the entry's relative ``source`` is
  the plugin's folder. A git, GitHub or URL marketplace or plugin source is not
  fetched: a warning names it.

Folder trust: a project's ``enabledPlugins`` and ``extraKnownMarketplaces`` are
settings like any other, so an untrusted folder's are left out (the trust notice
names them). A plugin the user's own settings enable whose folder (or marketplace
folder) lies inside a project folder the user has not trusted is not loaded at
all (nothing of it runs: no hooks, servers or ``!`` lines), and a warning says so.

Names: a plugin's commands and skills are ``/plugin:name``, and also ``/name``
when nothing else has that name; its agents are ``plugin:name``.
``${CLAUDE_PLUGIN_ROOT}`` in its hooks, servers, commands, skills and agents is the plugin's
folder; a stdio server and a hook also find it in their environment (hookify's hooks import
their package from there; superpowers' SessionStart hook picks its output's shape by it). Its hooks and servers reach the hook runner and
the MCP loader as settings sources of their own (``plugin_sources``), named by their file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config.settings import ConfigError, SettingsSource, read_json_object

if TYPE_CHECKING:
    from .subagents.agent_types import AgentType

__all__ = ["Plugin", "expand_plugin_root", "extension_folders", "find_plugins", "plugin_agent_types", "plugin_commands_and_skills", "plugin_sources", "project_plugin_files"]

ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"
MANIFEST_KEYS = frozenset({"$schema", "name", "version", "description", "author", "homepage", "repository", "license", "keywords",
                           "commands", "agents", "skills", "hooks", "mcpServers"})
"""The keys of ``plugin.json`` agentloop reads (or that only describe); any other is named in a warning."""


@dataclass(frozen=True)
class Plugin:
    """One loaded plugin: its name, its folder, and where it was asked for."""

    name: str
    path: str
    asked_by: str
    """``--plugin-dir DIR`` or ``enabledPlugins name@market in FILE``."""
    manifest: Mapping[str, Any] = field(default_factory=dict)
    replaces: frozenset[str] = frozenset()
    """Keys whose given paths replace the default folder (a ``strict: false`` marketplace entry's ``skills`` list)."""

    def parts(self, key: str, default: str, warnings: list[str]) -> list[str]:
        """The default folder or file for ``key`` and the paths ``plugin.json`` adds (relative to the plugin;
        one that leads outside the plugin's folder is skipped, and said so)."""
        given = self.manifest.get(key)
        out = [] if key in self.replaces and given is not None else [os.path.join(self.path, default)]
        for p in [given] if isinstance(given, str) else given if isinstance(given, list) else []:
            full = os.path.normpath(os.path.join(self.path, p)) if isinstance(p, str) else ""
            if full and _inside(full, self.path):
                out.append(full)
            else:
                warnings.append(f"{self.path}/.claude-plugin/plugin.json: {key}: {p!r} is not a path inside the plugin; skipped")
        return out


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), os.path.realpath(folder)]) == os.path.realpath(folder)
    except ValueError:
        return False


def _open_plugin(path: str, asked_by: str, warnings: list[str]) -> Plugin | None:
    if not os.path.isdir(path):
        warnings.append(f"{asked_by}: {path} is not a folder; the plugin is not loaded")
        return None
    try:
        manifest = read_json_object(os.path.join(path, ".claude-plugin", "plugin.json"))
    except ConfigError as exc:
        warnings.append(f"{exc}; the plugin is not loaded")
        return None
    manifest = manifest if isinstance(manifest, dict) else {}
    name = manifest.get("name")
    if not isinstance(name, str) or not name.strip() or ":" in name:
        name = os.path.basename(os.path.normpath(path))
    ignored = [k for k in manifest if k not in MANIFEST_KEYS]
    if ignored:
        warnings.append(f"{os.path.join(path, '.claude-plugin', 'plugin.json')}: not honoured by agentloop, ignored: {', '.join(ignored)}")
    return Plugin(name.strip(), os.path.realpath(path), asked_by, manifest)


def find_plugins(
    cwd: str, plugin_dirs: Sequence[str], sources: Sequence[SettingsSource], *, trusted: bool, warnings: list[str],
) -> list[Plugin]:
    """The plugins this session loads (see the module's docstring); what cannot be loaded is named in ``warnings``."""
    out: list[Plugin] = []
    for d in plugin_dirs:
        p = _open_plugin(os.path.abspath(os.path.expanduser(d)), f"--plugin-dir {d}", warnings)
        if p is not None:
            out.append(p)
    markets: dict[str, tuple[str, str]] = {}  # name -> (marketplace.json, the settings file naming it)
    enabled: dict[str, tuple[Any, SettingsSource]] = {}
    strict = _strict_markets(sources)
    for s in sources:
        for name, entry in (s.data.get("extraKnownMarketplaces") or {}).items():
            if strict is not None and s.scope != "managed" and not _market_allowed(cwd, entry, strict[1]):
                warnings.append(f"{s.path}: extraKnownMarketplaces.{name}: not in strictKnownMarketplaces of {strict[0]}; "
                                "its plugins are not loaded")
                continue
            where = _market_file(cwd, s.path, str(name), entry, warnings)
            if where is not None:
                markets[str(name)] = (where, s.path)
        for key, on in (s.data.get("enabledPlugins") or {}).items():
            enabled[str(key)] = (on, s)
    for key, (on, s) in enabled.items():
        if on is not True:
            continue
        p = _enabled_plugin(cwd, key, s.path, markets, trusted, warnings)
        if p is not None and all(q.name != p.name for q in out):
            out.append(p)
    return out


def _strict_markets(sources: Sequence[SettingsSource]) -> tuple[str, list[Any]] | None:
    """Managed settings' ``strictKnownMarketplaces`` (the file and its list), or None when no managed file sets it."""
    found = None
    for s in sources:
        v = s.data.get("strictKnownMarketplaces")
        if s.scope == "managed" and isinstance(v, list):
            found = (s.path, v)
    return found


def _market_allowed(cwd: str, entry: Any, allowed: Sequence[Any]) -> bool:
    """Whether a marketplace's source is on managed settings' ``strictKnownMarketplaces``. Settings reference and
    plugin marketplaces, "Managed marketplace restrictions": an empty list allows none; an entry allows a source equal
    to it, or a local one whose path its ``pathPattern`` (a regular expression) matches."""
    import re

    src = entry.get("source") if isinstance(entry, dict) else None
    if not isinstance(src, dict):
        return False
    path = src.get("path")
    full = os.path.realpath(os.path.join(cwd, os.path.expanduser(path))) if isinstance(path, str) else None
    for a in allowed:
        if not isinstance(a, dict):
            continue
        if a == src:
            return True
        pattern = a.get("pathPattern") if a.get("source") == "pathPattern" else None
        if isinstance(pattern, str) and full is not None:
            try:
                if re.search(pattern, full):
                    return True
            except re.error:
                continue
    return False


def project_plugin_files(cwd: str, sources: Sequence[SettingsSource]) -> list[str]:
    """Every file of the plugins a project's own settings enable (real paths, however many: a limit would
    let a file past it change unseen): folder trust covers their bytes, so a plugin that changes after the
    folder was trusted asks again."""
    markets: dict[str, tuple[str, str]] = {}
    ignore: list[str] = []
    for s in sources:
        for name, entry in (s.data.get("extraKnownMarketplaces") or {}).items():
            where = _market_file(cwd, s.path, str(name), entry, ignore)
            if where is not None:
                markets[str(name)] = (where, s.path)
    out: list[str] = []
    for s in sources:
        for key, on in (s.data.get("enabledPlugins") or {}).items() if s.in_project else ():
            p = _enabled_plugin(cwd, str(key), s.path, markets, True, ignore) if on is True else None
            if p is not None:
                files = _every_file(p.path)
                out += files + _files_commands_name(files, p.path, cwd)
    return list(dict.fromkeys(out))


def _files_commands_name(files: Sequence[str], plugin: str, cwd: str) -> list[str]:
    """The files inside ``cwd`` that a command in any of the plugin's JSON files names (a hook's
    ``sh ${CLAUDE_PLUGIN_ROOT}/../../tools/x.sh`` runs a file outside the plugin's folder): covered by folder
    trust like a settings hook's script (``trust.hook_files``)."""
    import json

    from .hook_paths import named_files

    out: list[str] = []
    for f in files:
        if not f.endswith(".json"):
            continue
        try:
            with open(f, "rb") as fh:
                data = json.loads(fh.read(1 << 22))
        except (OSError, ValueError):
            continue
        todo: list[Any] = [data]
        while todo:
            x = todo.pop()
            if isinstance(x, dict):
                todo += [v for k, v in x.items() if not (k == "command" and isinstance(v, str))]
                cmd = x.get("command")
                if isinstance(cmd, str):
                    for var in ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT"):
                        cmd = cmd.replace(var, plugin)
                    out += named_files(cmd, os.path.realpath(cwd))
            elif isinstance(x, list):
                todo += x
    return out


def _every_file(top: str) -> list[str]:
    """Every file under ``top`` as the plugin loader reaches it: linked folders followed (a ``scripts`` link
    to a folder elsewhere is read through, so it is covered too), each real folder once (a link loop ends)."""
    out: list[str] = []
    seen: set[str] = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        out += [os.path.realpath(os.path.join(root, f)) for f in sorted(files)]
    return out


def _market_file(cwd: str, settings: str, name: str, entry: Any, warnings: list[str]) -> str | None:
    """Where a marketplace's ``marketplace.json`` is, for a local source; None (and a warning) for any other."""
    src = entry.get("source") if isinstance(entry, dict) else None
    kind = src.get("source") if isinstance(src, dict) else None
    path = src.get("path") if isinstance(src, dict) else None
    if kind in ("directory", "file") and isinstance(path, str) and path:
        full = os.path.join(cwd, os.path.expanduser(path))
        return os.path.join(full, ".claude-plugin", "marketplace.json") if kind == "directory" else full
    warnings.append(f"{settings}: extraKnownMarketplaces.{name}: a {kind or 'malformed'} marketplace is not fetched by agentloop "
                    "(only a local \"directory\" or \"file\" source is read); its plugins are not loaded")
    return None


def _enabled_plugin(
    cwd: str, key: str, settings: str, markets: Mapping[str, tuple[str, str]], trusted: bool, warnings: list[str],
) -> Plugin | None:
    name, _, market = key.partition("@")
    asked = f"{settings}: enabledPlugins {key}"
    if market not in markets:
        warnings.append(f"{asked}: no local marketplace {market!r} in extraKnownMarketplaces; the plugin is not loaded "
                        "(plugins installed by Claude Code's own plugin commands are not read)")
        return None
    mfile, _ = markets[market]
    try:
        data = read_json_object(mfile)
    except ConfigError as exc:
        warnings.append(f"{asked}: {exc}; the plugin is not loaded")
        return None
    data = data or {}
    entries = data.get("plugins") if isinstance(data, dict) else None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("name") == name), None) if isinstance(entries, list) else None
    if entry is None:
        warnings.append(f"{asked}: {mfile} lists no plugin {name!r}; not loaded")
        return None
    path = _entry_folder(cwd, entry, mfile, data, asked, trusted, warnings)
    if path is None:
        return None
    p = _open_plugin(path, asked, warnings)
    return None if p is None else _as_entry(p, name, entry, mfile, warnings)


ENTRY_PARTS = ("commands", "agents", "skills", "hooks", "mcpServers")
"""A marketplace entry's component fields (plugin marketplaces, "Plugin entries")."""


def _as_entry(p: Plugin, name: str, entry: Mapping[str, Any], mfile: str, warnings: list[str]) -> Plugin:
    """The plugin as its marketplace entry defines it. Plugin marketplaces, "Strict mode": with ``strict`` true (the
    default) ``plugin.json`` is the authority and the entry's component fields add to it; with ``strict: false`` the
    entry is the whole definition (several entries may share one ``source`` and list their own ``skills``), and the
    plugin is named by the entry."""
    given = {k: entry[k] for k in ENTRY_PARTS if k in entry}
    if entry.get("strict", True) is False:
        declared = [k for k in ENTRY_PARTS if k in p.manifest]
        if declared:
            warnings.append(f"{mfile}: plugin {name!r} is strict: false, so its plugin.json's {', '.join(declared)} "
                            "are not read (the marketplace entry defines it)")
        manifest = {**{k: v for k, v in p.manifest.items() if k not in ENTRY_PARTS}, **given}
        return replace(p, name=name, manifest=manifest, replaces=frozenset(given) & {"skills", "commands", "agents"})
    merged = dict(p.manifest)
    for k, v in given.items():
        old = merged.get(k)
        merged[k] = ([*(old if isinstance(old, list) else [old]), *(v if isinstance(v, list) else [v])]
                     if old is not None and not isinstance(v, dict) else v)
    return replace(p, manifest=merged)


def _entry_folder(cwd: str, entry: Mapping[str, Any], mfile: str, data: Mapping[str, Any], asked: str, trusted: bool,
                  warnings: list[str]) -> str | None:
    """The folder a marketplace entry's ``source`` names (relative to the marketplace), or None (and a warning)."""
    source = entry.get("source")
    if not isinstance(source, str):
        kind = source.get("source") if isinstance(source, dict) else "malformed"
        warnings.append(f"{asked}: a {kind} plugin source is not fetched by agentloop (only a relative folder is read); not loaded")
        return None
    base = os.path.dirname(os.path.dirname(mfile))
    root = data.get("metadata", {}).get("pluginRoot") if isinstance(data.get("metadata"), dict) else None
    if isinstance(root, str) and not source.startswith("./"):
        base = os.path.join(base, root)
    path = os.path.normpath(os.path.join(base, source))
    if not trusted and (_inside(path, cwd) or _inside(base, cwd)):
        warnings.append(f"{asked}: {path} is inside this folder, which is not trusted; the plugin is not loaded "
                        "(none of its commands, hooks or servers runs)")
        return None
    return path


def extension_folders(plugins: Iterable[Plugin], skills: Mapping[str, Any]) -> list[str]:
    """The folders of the session's plugins and skills: shown read-only to sandboxed commands (their bundled scripts
    run in Bash, as Claude Code runs them; ``Sandbox.show_extensions``)."""
    return [*(p.path for p in plugins), *(sk.directory for sk in skills.values())]


def expand_plugin_root(value: Any, root: str) -> Any:
    """``value`` with ``${CLAUDE_PLUGIN_ROOT}`` replaced by ``root`` in every string (a plugin skill's front matter hooks)."""
    return _expand(value, root)


def _expand(value: Any, root: str) -> Any:
    """``value`` with ``${CLAUDE_PLUGIN_ROOT}`` replaced by ``root`` in every string."""
    if isinstance(value, str):
        return value.replace(ROOT_VAR, root)
    if isinstance(value, list):
        return [_expand(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, root) for k, v in value.items()}
    return value


def _section(p: Plugin, key: str, default: str, inner: str, warnings: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The ``hooks`` or ``mcpServers`` objects of a plugin: its default file, the files ``plugin.json`` names, or inline there."""
    out: list[tuple[str, dict[str, Any]]] = []
    given = p.manifest.get(key)
    if isinstance(given, dict):  # inline in plugin.json
        out.append((os.path.join(p.path, ".claude-plugin", "plugin.json"), given.get(inner, given)))
    for path in dict.fromkeys(p.parts(key, default, warnings)):
        try:
            data = read_json_object(path)
        except ConfigError as exc:
            warnings.append(f"{exc}; skipped")
            continue
        if isinstance(data, dict) and isinstance(data.get(inner, data), dict):
            out.append((path, data.get(inner, data)))
    return out


def plugin_sources(plugins: Iterable[Plugin], warnings: list[str]) -> list[SettingsSource]:
    """Each plugin's hooks and MCP servers as settings sources (the user's scope: they load as the user's
    files do), ``${CLAUDE_PLUGIN_ROOT}`` expanded; bad entries dropped with a warning each."""
    from .settings_sanitizer import sanitize

    out: list[SettingsSource] = []
    for p in plugins:
        for key, default in (("hooks", "hooks/hooks.json"), ("mcpServers", ".mcp.json")):
            for path, value in _section(p, key, default, key, warnings):
                value = _expand(value, p.path)
                if key == "mcpServers":
                    value = _with_root_env(value, p.path)
                clean, said = sanitize(SettingsSource(path, "user", {key: value}, origin="claude", plugin_root=p.path))
                warnings += said
                if clean.data:
                    out.append(clean)
    return out


def _with_root_env(servers: dict[str, Any], root: str) -> dict[str, Any]:
    """Each stdio server's ``env`` with ``CLAUDE_PLUGIN_ROOT`` set to the plugin's folder (the server reads it too)."""
    out: dict[str, Any] = {}
    for name, entry in servers.items():
        if isinstance(entry, dict) and "command" in entry and isinstance(entry.get("env", {}), dict):
            entry = {**entry, "env": {**entry.get("env", {}), "CLAUDE_PLUGIN_ROOT": root}}
        out[name] = entry
    return out


def plugin_commands_and_skills(
    commands: Mapping[str, Any], skills: Mapping[str, Any], plugins: Iterable[Plugin], warnings: list[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``commands`` and ``skills`` with each plugin's as ``plugin:name``, and as ``name`` where that is free."""
    from .commands import load_commands, load_skills

    cmds, sks = dict(commands), dict(skills)
    plain: dict[str, list[tuple[str, Any]]] = {}
    for p in plugins:
        for d in p.parts("commands", "commands", warnings):
            found = _load_in(d, load_commands, warnings)
            for name, c in found.items():
                c = replace(c, name=f"{p.name}:{name}", template=c.template.replace(ROOT_VAR, p.path),
                            description=f"{c.description} (plugin:{p.name})")
                cmds[c.name] = c
                plain.setdefault(name, []).append(("c", c))
        for d in p.parts("skills", "skills", warnings):
            for name, sk in _skills_in(d, load_skills, warnings).items():
                sk = replace(sk, name=f"{p.name}:{name}", plugin_root=p.path)
                sks[sk.name] = sk
                plain.setdefault(name, []).append(("s", sk))
    for name, items in plain.items():
        if len(items) == 1 and name not in cmds and name not in sks:
            kind, item = items[0]
            (cmds if kind == "c" else sks)[name] = item
    return cmds, sks


def _load_in(folder: str, loader: Any, warnings: list[str]) -> dict[str, Any]:
    """What ``load_commands`` / ``load_skills`` find in one plugin folder (its ``commands`` or ``skills``)."""
    if not os.path.isdir(folder):
        return {}
    found: dict[str, Any] = loader("", "", None, warnings, places=[(folder, "plugin")])
    return found


def _skills_in(path: str, loader: Any, warnings: list[str]) -> dict[str, Any]:
    """The skills a plugin's ``skills`` path gives: a folder of ``<name>/SKILL.md``, or one skill's own folder
    (anthropics/skills' marketplace lists ``./skills/pdf``)."""
    if os.path.isfile(os.path.join(path, "SKILL.md")):
        here, said = os.path.realpath(path), list[str]()
        found = _load_in(os.path.dirname(path), loader, said)
        warnings += [w for w in said if w.startswith(os.path.join(path, ""))]  # its own, not its neighbours'
        return {n: sk for n, sk in found.items() if os.path.realpath(sk.directory) == here}
    return _load_in(path, loader, warnings)


def plugin_agent_types(plugins: Iterable[Plugin], warnings: list[str]) -> dict[str, AgentType]:
    """Each plugin's sub-agent types as ``plugin:name``."""
    from .subagents.agent_types import read_agent_dir

    out: dict[str, AgentType] = {}
    for p in plugins:
        for d in p.parts("agents", "agents", warnings):
            for name, t in read_agent_dir(d, warnings).items():
                out[f"{p.name}:{name}"] = replace(t, name=f"{p.name}:{name}", prompt=t.prompt.replace(ROOT_VAR, p.path))
    return out
