"""MCP server configuration, in Claude Code's ``.mcp.json`` format.

Rules:

1. Sources, lowest precedence first: ``mcpServers`` in the user's settings
   (``$AGENTLOOP_HOME/settings.json``), in the project's
   ``.agentloop/settings.json``, the project's ``.mcp.json``, and
   ``.agentloop/settings.local.json``. A server named in two sources is taken
   whole from the higher one (entries are not merged key by key), as Claude
   Code does with local > project > user. A ``.mcp.json`` server named in
   ``disabledMcpjsonServers`` (a list, in any settings file) is not loaded.
2. A server is ``{"command", "args", "env"}`` (stdio, the default),
   ``{"type": "http" | "streamable-http" | "sse", "url", "headers"}``, or
   ``{"type": "sdk", "name"}``: an Agent SDK's in-process server, reached over
   the SDK's control channel (``sdk_transport``) and only while the SDK drives
   agentloop; an
   optional ``timeout`` is in milliseconds. A ``url`` without a ``type`` is an
   error, as in Claude Code. Unknown keys are ignored, so newer files load.
3. ``${VAR}`` and ``${VAR:-default}`` expand in ``command``, ``args``,
   ``env``, ``url`` and ``headers``, when a server is started, not when the
   file is read: a missing variable fails that server alone, with a message
   naming the file, the place and the variable.
4. Anything wrong in a file is a ``ConfigError`` naming the file and the
   place (``mcpServers.db.args[1]``), never another exception: this loader
   reads files from cloned repositories and is fuzzed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentloop.config.settings import (
    ConfigError,
    Scope,
    SettingsSource,
    agentloop_home,
    json_kind,
    json_object,
    settings_paths,
)

__all__ = [
    "ConfigError",
    "ServerConfig",
    "add_server",
    "expand",
    "load_servers",
    "mcp_json_path",
    "parse_servers",
    "remove_server",
    "scope_path",
]

Transport = Literal["stdio", "http", "sse", "sdk"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TYPES: dict[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse", "sdk": "sdk"}


@dataclass(frozen=True)
class ServerConfig:
    """One configured MCP server, as written in its file (not yet expanded)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout_ms: int | None = None
    """Claude Code's per-server ``timeout``: here the limit for one tool call."""
    source: str = "<memory>"
    """The file it came from, for messages."""
    scope: Scope | Literal["memory"] = "memory"

    def where(self, key: str = "") -> str:
        return f"mcpServers.{self.name}" + (f".{key}" if key else "")

    def expanded(self, environ: Mapping[str, str] | None = None) -> ServerConfig:
        """This server with every ``${VAR}`` replaced.

        Raises:
            ConfigError: a variable is unset and has no default.
        """
        env_map = os.environ if environ is None else environ

        def x(value: str, key: str) -> str:
            return expand(value, env_map, self.source, self.where(key))

        return replace(
            self,
            command=None if self.command is None else x(self.command, "command"),
            args=tuple(x(a, f"args[{i}]") for i, a in enumerate(self.args)),
            env={k: x(v, f"env.{k}") for k, v in self.env.items()},
            url=None if self.url is None else x(self.url, "url"),
            headers={k: x(v, f"headers.{k}") for k, v in self.headers.items()},
        )

    def to_json(self) -> dict[str, Any]:
        """The entry as it is written to a file."""
        out: dict[str, Any] = {}
        if self.transport == "stdio":
            out["command"] = self.command
            out["args"] = list(self.args)
            if self.env:
                out["env"] = dict(self.env)
        elif self.transport == "sdk":
            out["type"], out["name"] = "sdk", self.name
        else:
            out["type"] = self.transport
            out["url"] = self.url
            if self.headers:
                out["headers"] = dict(self.headers)
        if self.timeout_ms is not None:
            out["timeout"] = self.timeout_ms
        return out


def expand(value: str, environ: Mapping[str, str], path: str = "<memory>", place: str = "") -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in ``value``.

    ``${VAR:-default}`` uses the default when VAR is unset or empty, as the
    shell does. Text that does not match the pattern is left alone.

    Raises:
        ConfigError: VAR is unset and there is no default.
    """

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        got = environ.get(name)
        if default is not None:
            return got if got else default
        if got is None:
            raise ConfigError(
                path,
                f"{place}: environment variable {name} is not set "
                f"(set it, or write ${{{name}:-default}} to give a default)",
            )
        return got

    return _VAR.sub(sub, value)


def _str(v: Any, path: str, place: str) -> str:
    if not isinstance(v, str):
        raise ConfigError(path, f"{place}: must be a string, not {json_kind(v)}")
    if "\x00" in v:
        raise ConfigError(path, f"{place}: must not contain a NUL character")
    return v




def _str_map(v: Any, path: str, place: str) -> dict[str, str]:
    if not isinstance(v, dict):
        raise ConfigError(path, f"{place}: must be an object of strings, not {json_kind(v)}")
    return {_str(k, path, place): _str(val, path, f"{place}.{k}") for k, val in v.items()}


def parse_server(name: Any, entry: Any, path: str, scope: Scope | Literal["memory"] = "memory") -> ServerConfig:
    """One server entry, checked.

    Raises:
        ConfigError: naming ``path`` and the place of the first problem.
    """
    place = f"mcpServers.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            path, f"{place}: a server name may use only letters, digits, '_' and '-' (1 to 64 characters)"
        )
    if not isinstance(entry, dict):
        raise ConfigError(path, f"{place}: must be an object, not {json_kind(entry)}")
    raw_type = entry.get("type")
    if raw_type is None:
        if "url" in entry:
            raise ConfigError(path, f"{place}: has a 'url' but no 'type' (write \"type\": \"http\" or \"sse\")")
        transport: Transport = "stdio"
    elif not isinstance(raw_type, str) or raw_type not in _TYPES:
        shown = raw_type if isinstance(raw_type, str) else json_kind(raw_type)
        raise ConfigError(
            path, f"{place}.type: {shown!r} is not supported (use 'stdio', 'http', 'streamable-http', 'sse' or 'sdk')"
        )
    else:
        transport = _TYPES[raw_type]
    timeout_ms = entry.get("timeout")
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or not 0 < timeout_ms <= 86_400_000
    ):
        raise ConfigError(path, f"{place}.timeout: must be a number of milliseconds between 1 and 86400000")
    tmo = None if timeout_ms is None else max(1, int(timeout_ms))
    if transport == "sdk":
        return ServerConfig(name, "sdk", timeout_ms=tmo, source=path, scope=scope)
    if transport == "stdio":
        if "command" not in entry:
            raise ConfigError(path, f"{place}: a stdio server needs a 'command'")
        command = _str(entry["command"], path, f"{place}.command")
        if not command.strip():
            raise ConfigError(path, f"{place}.command: must not be empty")
        args_raw = entry.get("args", [])
        if not isinstance(args_raw, list):
            raise ConfigError(path, f"{place}.args: must be an array of strings, not {json_kind(args_raw)}")
        args = tuple(_str(a, path, f"{place}.args[{i}]") for i, a in enumerate(args_raw))
        env = _str_map(entry.get("env", {}), path, f"{place}.env")
        return ServerConfig(name, "stdio", command=command, args=args, env=env, timeout_ms=tmo, source=path, scope=scope)
    if "url" not in entry:
        raise ConfigError(path, f"{place}: a {raw_type} server needs a 'url'")
    url = _str(entry["url"], path, f"{place}.url")
    if not re.match(r"^(https?://|\$\{)", url):
        raise ConfigError(path, f"{place}.url: must start with http:// or https://")
    headers = _str_map(entry.get("headers", {}), path, f"{place}.headers")
    return ServerConfig(name, transport, url=url, headers=headers, timeout_ms=tmo, source=path, scope=scope)


def parse_servers(data: Any, path: str, scope: Scope | Literal["memory"] = "memory") -> dict[str, ServerConfig]:
    """The ``mcpServers`` of one parsed file (a JSON object), in file order.

    Raises:
        ConfigError: naming ``path`` and the place of the first problem.
    """
    if not isinstance(data, dict):
        raise ConfigError(path, f"must hold a JSON object, not {json_kind(data)}")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(path, f"mcpServers: must be an object, not {json_kind(servers)}")
    return {name: parse_server(name, entry, path, scope) for name, entry in servers.items()}


def read_object(path: str) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when there is no such file.

    Raises:
        ConfigError: unreadable, not JSON, nested too deeply, or not an object.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"is not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    return json_object(path, text)


def mcp_json_path(cwd: str) -> str:
    return os.path.join(cwd, ".mcp.json")


def _sources(cwd: str, home: str) -> list[tuple[str, Scope]]:
    user, project, local = settings_paths(cwd, home)
    return [user, project, (mcp_json_path(cwd), "project"), local]


def scope_path(scope: Scope, cwd: str, home: str | None = None) -> str:
    """The file that ``agentloop mcp add --scope SCOPE`` writes."""
    h = agentloop_home() if home is None else home
    if scope == "project":
        return mcp_json_path(cwd)
    if scope == "user":
        return settings_paths(cwd, h)[0][0]
    return settings_paths(cwd, h)[2][0]


def load_servers(
    cwd: str,
    home: str | None = None,
    *,
    sources: Sequence[SettingsSource] | None = None,
    project_servers: Collection[str] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, ServerConfig]:
    """Every configured server by name, the highest-precedence source winning.

    With ``sources`` (the agent's settings in effect, lowest first, already
    sanitized and trust-filtered) their ``mcpServers`` are used, the project's
    ``.mcp.json`` placed after the shared project files; without, agentloop's
    own three files are read (``agentloop mcp``). ``project_servers``, when
    given, names the ``.mcp.json`` servers that were approved: the others are
    not loaded. With ``warnings`` a bad ``.mcp.json`` entry is skipped and
    named there, as Claude Code does; without, it raises.

    Raises:
        ConfigError: a file exists but is malformed (naming it and the place).
    """
    h = agentloop_home() if home is None else home
    out: dict[str, ServerConfig] = {}
    disabled: set[str] = set()
    project_file = mcp_json_path(cwd)
    listed: list[tuple[str, Scope, dict[str, Any] | None]]
    if sources is None:
        listed = [(path, scope, None) for path, scope in _sources(cwd, h)]
    else:
        listed = []
        for s in sources:
            if s.scope in ("local", "managed") and not any(p == project_file for p, _, _ in listed):
                listed.append((project_file, "project", None))
            listed.append((s.path, s.scope, s.data))
        if not any(p == project_file for p, _, _ in listed):
            listed.append((project_file, "project", None))
    for path, scope, given in listed:
        data = read_object(path) if given is None else given
        if data is None:
            continue
        if path != project_file:
            disabled |= _names_list(data, "disabledMcpjsonServers", path)
        elif warnings is not None:
            data = {"mcpServers": _lenient(data, path, warnings)}
        for name, server in parse_servers(data, path, scope).items():
            if path == project_file and project_servers is not None and name not in project_servers:
                continue
            out.pop(name, None)
            out[name] = server
    return {n: s for n, s in out.items() if not (s.source == project_file and n in disabled)}


def _lenient(data: dict[str, Any], path: str, warnings: list[str]) -> dict[str, Any]:
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        warnings.append(f"{path}: mcpServers: must be an object, not {json_kind(servers)}; skipped")
        return {}
    out = {}
    for name, entry in servers.items():
        try:
            parse_server(name, entry, path)
        except ConfigError:
            continue  # named once already, when the folder's configuration was read (agent.trust)
        out[name] = entry
    return out


def _names_list(data: dict[str, Any], key: str, path: str) -> set[str]:
    v = data.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(path, f"{key}: must be an array of server names")
    return set(v)


def _write_object(path: str, data: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def add_server(path: str, server: ServerConfig, *, replace_existing: bool = False) -> None:
    """Write ``server`` into the ``mcpServers`` of ``path``, keeping the file's other keys.

    Raises:
        ConfigError: the file is malformed, or already has a server of that name.
    """
    data = read_object(path) or {}
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(path, f"mcpServers: must be an object, not {json_kind(servers)}")
    if server.name in servers and not replace_existing:
        raise ConfigError(path, f"mcpServers.{server.name}: already exists (remove it first)")
    entry = server.to_json()
    parse_server(server.name, entry, path)
    servers[server.name] = entry
    _write_object(path, data)


def remove_server(path: str, name: str) -> bool:
    """Remove ``name`` from the ``mcpServers`` of ``path``; False when it is not there.

    Raises:
        ConfigError: the file is malformed.
    """
    data = read_object(path)
    if data is None:
        return False
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return False
    del servers[name]
    _write_object(path, data)
    return True
