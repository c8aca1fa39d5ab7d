"""The terminal agent's MCP servers: started with the agent, listed by ``/mcp``, stopped at exit."""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloop.tools import Tool

from .config import load_servers

if TYPE_CHECKING:  # the client (and asyncio under it) loads only when a server is configured
    from ..config.settings import SettingsSource
    from .client import McpManager, ServerStatus

__all__ = [
    "RESOURCE_TOOLS",
    "McpServers",
    "McpStart",
    "expand_resources",
    "format_status",
    "new_failures",
    "prompt_commands",
    "report_startup",
    "resource_tools",
    "run_prompt",
    "server_states",
    "start_servers",
]

RESOURCE_TOOLS = ("ListMcpResourcesTool", "ReadMcpResourceTool")
"""Claude Code's names for the model's tools over MCP resources; they only read, and need no permission."""
_RESOURCE_MENTION = re.compile(r"(?<!\S)@([A-Za-z0-9_-]+):(\S+)")

log = logging.getLogger("agentloop.mcp")


class McpServers:
    """The agent's MCP servers, as ``agent.builder`` hands them to the ``Agent``: the manager, the
    notices held until a front end listens, and the tools the servers bring (now and after a change)."""

    def __init__(self, manager: McpManager, held: list[str]):
        self.manager = manager
        self.held = held
        """Notices said before a front end listened (``report_startup`` says them)."""
        self._seen = manager.generation
        self.background = False
        """Started without waiting (``start_in_background``): tools join as their servers come up."""
        self.told: set[str] = set()
        """Servers whose failure the user was told of (``startup_problems``, ``new_failures``)."""

    def spill_to(self, folder: str) -> None:
        """Where capped outputs go from now on: the session's spill folder, beside the built-in tools' (Read may read there)."""
        self.manager.output.spill_dir = folder

    def start_in_background(self) -> None:
        """Start the servers without waiting: ``tools()`` then gives those up so far, and
        ``changed_tools()`` the rest as each server comes up (the REPL's prompt need not wait).
        Idempotent: a server already started is left as it is."""
        self.background = True
        self.manager.start_in_background()

    def starting(self) -> list[str]:
        """The servers still on their way up."""
        return self.manager.starting()

    def tools(self) -> list[Tool]:
        """The servers' tools, then ListMcpResourcesTool and ReadMcpResourceTool when a server has resources."""
        wait = not self.background
        return [*self.manager.tools(retry_failed=wait, start=wait), *resource_tools(self.manager)]

    def status(self, known: set[str]) -> tuple[str, list[Tool]]:
        """``/mcp``: try failed servers again; what it prints, and the tools they bring that are not in ``known``."""
        fresh: list[Tool] = [t for t in self.manager.tools(retry_failed=True) if t.name not in known]
        m = self.manager
        return format_status(m.status(), prompts=m.prompts(), resources=m.resources()), fresh

    def changed_tools(self) -> list[Tool] | None:
        """Before each run and after each tool batch: the servers' tools when a server added or removed
        some (``list_changed``), else None."""
        self.manager.settle()
        if self.manager.generation == self._seen:
            return None
        self._seen = self.manager.generation
        return [*self.manager.tools(retry_failed=False, start=not self.background), *resource_tools(self.manager)]

    @staticmethod
    def owns(tool: Tool) -> bool:
        """The tool comes from an MCP server (``changed_tools`` replaces all of these)."""
        return _is_mcp(tool)

    def close(self) -> None:
        self.manager.close()


@dataclass(frozen=True, slots=True)
class McpStart:
    """What the servers of one agent start from, made by ``agent.builder``: a frozen value, so this layer never
    probes the agent. The front end's callbacks are read when they are needed (a front end sets them after
    the servers started): each ``*_now`` gives the one in force, or None."""

    cwd: str
    home: str
    env: Mapping[str, str]
    """The user's environment: ``${VAR}`` in a server's configuration expands from it."""
    inherit: Mapping[str, str]
    """What a stdio server inherits: the agent's one child environment (no key it holds, by name or value)."""
    sources: tuple[SettingsSource, ...]
    project_servers: frozenset[str]
    """The ``.mcp.json`` servers the user approved."""
    allow_env: tuple[str, ...]
    roots: Callable[[], list[str]]
    """The workspace and the additional directories, as they are now."""
    notice_now: Callable[[], Callable[[str], None] | None]
    elicit_now: Callable[[], Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None]
    progress_now: Callable[[], Callable[[str, str, str], None] | None]
    host_env: Mapping[str, str] | None = None
    """``env`` without a project's settings' ``env``: what a server the project did not configure expands from."""
    host_inherit: Mapping[str, str] | None = None
    """``inherit`` likewise: such a server runs on the host, where a project's variables would choose what the
    user's program runs (``NODE_OPTIONS``, ``PATH``... naming workspace files: record 0015)."""


def start_servers(start: McpStart, *, even_none: bool = False) -> McpServers | None:
    """Start the servers configured for ``start.cwd``.

    Servers start at the same time; one that fails is listed as failed, with
    its reason, and does not stop the agent. The servers' questions and
    progress go to the front end's callbacks (read when they come), notices
    to its notice callback or, before a front end listens, into ``McpServers.held``.

    Returns:
        The servers, or None when none is configured (unless ``even_none``: servers added later, the
        Agent SDK's, need a manager).
    Raises:
        ConfigError: a configuration file is malformed (naming it and the place).
    """
    servers = load_servers(start.cwd, start.home, sources=list(start.sources), project_servers=set(start.project_servers),
                           warnings=[])
    if not servers and not even_none:
        return None
    from .client import McpManager
    held: list[str] = []

    def notify(text: str) -> None:
        """To the user: held until a front end listens (``report_startup``), logged either way."""
        log.warning("mcp: %s", text)
        listener = start.notice_now()
        if listener is None:
            held.append(text)
        else:
            listener(text)

    def elicit(server: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """A server's question for the user: asked by the front end that takes them (the REPL), else declined."""
        ask = start.elicit_now()
        return None if ask is None else ask(server, message, schema)

    def progress(server: str, tool: str, text: str) -> None:
        show = start.progress_now()
        if show is not None:
            show(server, tool, text)

    manager = McpManager(servers, cwd=start.cwd, environ=start.env, notify=notify, roots=start.roots, elicit=elicit,
                         auth_home=start.home, allow_env=start.allow_env, inherit=start.inherit)
    manager.on_progress = progress
    if start.host_env is not None and start.host_inherit is not None:
        manager.start_on_the_host(start.host_env, start.host_inherit)
    return McpServers(manager, held)


def _is_mcp(t: Tool) -> bool:
    """An MCP server's tool, or one of the resource tools made from its servers' lists."""
    from .client import McpTool

    return isinstance(t, McpTool) or t.name in RESOURCE_TOOLS


def resource_tools(manager: McpManager) -> list[Tool]:
    """ListMcpResourcesTool and ReadMcpResourceTool, as Claude Code gives them, when a server has resources."""
    from .client import McpToolError

    if not any(manager.resources().values()):
        return []

    def list_resources(server: str | None = None) -> str:
        listed = manager.resources()
        if server is not None and server not in listed:
            raise McpToolError(f"no connected MCP server named {server!r}; servers: {', '.join(sorted(listed)) or 'none'}")
        out = []
        for name, resources in listed.items():
            if server is None or name == server:
                for r in resources:
                    d = r.model_dump(by_alias=True, mode="json", exclude_none=True)
                    out.append({"server": name, **{k: d[k] for k in ("uri", "name", "title", "description", "mimeType") if k in d}})
        return json.dumps(out, ensure_ascii=False)

    def read_resource(server: str, uri: str) -> str:
        return manager.read_resource(server, uri)

    return [
        Tool(
            name="ListMcpResourcesTool",
            description="List the resources the connected MCP servers offer (all servers, or the one named).",
            parameters={"type": "object", "properties": {"server": {"type": "string", "description": "only this server"}}},
            fn=list_resources,
            read_only=True,
        ),
        Tool(
            name="ReadMcpResourceTool",
            description="Read a resource of an MCP server by its URI.",
            parameters={"type": "object", "properties": {"server": {"type": "string"}, "uri": {"type": "string"}},
                        "required": ["server", "uri"]},
            fn=read_resource,
            read_only=True,
        ),
    ]


def prompt_commands(servers: McpServers | None) -> dict[str, tuple[str, Any]]:
    """``/mcp__<server>__<prompt>`` for each prompt of each connected server: ``{command: (server, prompt)}``."""
    from .client import _clean

    if servers is None:
        return {}
    manager = servers.manager
    return {f"mcp__{_clean(server)}__{_clean(p.name)}": (server, p) for server, ps in manager.prompts().items() for p in ps}


def run_prompt(servers: McpServers | None, command: str, rest: str) -> str | None:
    """The text of the prompt ``/command rest`` names (arguments in the prompt's order), or None when it names none.

    Raises:
        McpToolError: a required argument is missing, or the server refused.
    """
    from .client import McpToolError

    found = prompt_commands(servers).get(command)
    if found is None or servers is None:
        return None
    server, prompt = found
    names = [a.name for a in (prompt.arguments or [])]
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    if len(words) > len(names) and names:
        words = [*words[: len(names) - 1], " ".join(words[len(names) - 1 :])]
    args = dict(zip(names, words))
    missing = [a.name for a in (prompt.arguments or []) if a.required and a.name not in args]
    if missing:
        usage = " ".join(f"<{n}>" for n in names)
        raise McpToolError(f"/{command} needs {', '.join(missing)}: /{command} {usage}")
    text: str = servers.manager.get_prompt(server, prompt.name, args)
    return text


def expand_resources(servers: McpServers | None, text: str) -> tuple[str, list[str], list[str]]:
    """Attach the MCP resources named by ``@server:uri`` mentions: the prompt with them appended, the attached, the refused."""
    from .client import McpToolError

    if servers is None:
        return text, [], []
    manager = servers.manager
    blocks: list[str] = []
    attached: list[str] = []
    refused: list[str] = []
    for m in _RESOURCE_MENTION.finditer(text):
        server, uri = m.group(1), m.group(2).rstrip(".,;:!?)")
        if server not in manager.names or f"{server}:{uri}" in attached:
            continue
        try:
            body = manager.read_resource(server, uri)
        except McpToolError as exc:
            refused.append(f"@{server}:{uri}: {exc}; not attached")
            continue
        attached.append(f"{server}:{uri}")
        blocks.append(f'<resource server="{server}" uri="{uri}">\n{body}\n</resource>')
    return (text + "\n\n" + "\n\n".join(blocks) if blocks else text), attached, refused


def startup_problems(servers: McpServers | None) -> list[str]:
    """What the user must hear about MCP once the agent is up: servers that failed, settings not honoured, held notices."""
    if servers is None:
        return []
    manager = servers.manager
    out = _failures(manager, servers.told)
    out += list(manager.config_warnings)
    out += [t for t in servers.held if t not in out]
    servers.held.clear()
    return out


def _failures(manager: McpManager, told: set[str]) -> list[str]:
    """A line for each server that is down and not told yet (servers still starting are not down)."""
    out = []
    for s in manager.status():
        if s.status in ("connected", "pending", "connecting") or s.name in told:
            continue
        told.add(s.name)
        out.append(f"the MCP server {s.name!r} is not available ({s.public_status}): {s.error or 'it did not start'}. "
                   "Its tools are left out; /mcp tries again")
    return out


def new_failures(servers: McpServers | None) -> list[str]:
    """Servers started in the background that failed since the user was last told (each said once)."""
    if servers is None:
        return []
    return _failures(servers.manager, servers.told)


def report_startup(servers: McpServers | None, listener: Callable[[str], None] | None) -> None:
    """Say each of ``startup_problems`` once, through the front end's ``listener`` (call it once that is set)."""
    for text in startup_problems(servers):
        if listener is not None:
            listener(text)


def server_states(servers: McpServers | None) -> list[dict[str, str]]:
    """The stream-json ``init`` message's ``mcp_servers``: ``[{"name", "status"}]`` as Claude Code sends them."""
    if servers is None:
        return []
    return [{"name": s.name, "status": s.public_status} for s in servers.manager.status()]


def format_status(statuses: Iterable[ServerStatus], *, show_tools: bool = True,
                  prompts: dict[str, list[Any]] | None = None, resources: dict[str, list[Any]] | None = None) -> str:
    """The lines ``/mcp`` and ``agentloop mcp list`` print: each server, its state, its tools, and (``/mcp``)
    its prompts, as the slash commands they are, and its resources, as the ``@server:uri`` that attach them."""
    out: list[str] = []
    for s in statuses:
        where = s.transport if s.scope == "memory" else f"{s.transport}, {s.scope}: {s.source}"
        who = f" {s.server_name} {s.server_version}" if s.server_name else ""
        n = len(s.tools)
        count = f", {n} tool{'s' if n != 1 else ''}" if s.status == "connected" or n else ""
        signed = f", {s.oauth}" if s.oauth else ""
        out.append(f"{s.name}: {s.status}{who} ({where}){count}{signed}")
        if s.error:
            out.append(f"  error: {s.error}")
        if show_tools:
            for t in s.tools:
                out.append(f"  {t}")
        for k in s.skipped:
            out.append(f"  skipped {k}")
        for p in (prompts or {}).get(s.name, []):
            desc = getattr(p, "description", None)
            out.append(f"  prompt /mcp__{_clean_name(s.name)}__{_clean_name(p.name)}" + (f" — {desc}" if desc else ""))
        for r in (resources or {}).get(s.name, []):
            out.append(f"  resource @{s.name}:{r.uri}" + (f" — {r.name}" if getattr(r, "name", None) else ""))
    return "\n".join(out) if out else "no MCP servers (configure them in .mcp.json or with `agentloop mcp add`)"


def _clean_name(name: str) -> str:
    from .client import _clean

    return _clean(name)
