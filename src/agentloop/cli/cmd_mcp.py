"""``agentloop mcp list|get|add|remove``: manage the MCP servers in .mcp.json and the settings files.

Scopes, as in Claude Code: ``local`` (the default: this project, not committed,
``.agentloop/settings.local.json``), ``project`` (``.mcp.json``, committed) and
``user`` (``$AGENTLOOP_HOME/settings.json``). ``list`` reads the configuration
and starts nothing unless ``--check`` is given: a cloned repository's
``.mcp.json`` names programs to run, and listing them should not run them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Literal

from ._common import EXIT_OK, EXIT_PROBLEMS, UserError
from .terminal_text import say

Scope = Literal["local", "project", "user"]

HELP = "manage MCP servers (list, get, add, remove)"
DESCRIPTION = (
    "Manage the MCP servers agentloop starts: .mcp.json (project scope) and mcpServers in the settings files. "
    "Example: agentloop mcp add files --scope project -- npx -y @modelcontextprotocol/server-filesystem ."
)
SCOPES: tuple[Scope, ...] = ("local", "project", "user")


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="list the configured servers")
    ls.add_argument("--check", action="store_true", help="start each server and show its state and tools")
    ls.add_argument("--json", action="store_true", help="print JSON")
    get = sub.add_parser("get", help="show one server, start it and list its tools")
    get.add_argument("name")
    get.add_argument("--no-check", action="store_true", help="show the configuration only; start nothing")
    get.add_argument("--json", action="store_true", help="print JSON")
    add = sub.add_parser(
        "add",
        help="add a server: add NAME -- COMMAND ARGS... (stdio) or add NAME --transport http URL",
        description="Add a server. stdio: agentloop mcp add NAME [-e K=V] -- COMMAND [ARGS...]; "
        "HTTP or SSE: agentloop mcp add NAME --transport http|sse [-H 'Name: value'] URL",
    )
    add.add_argument("name")
    add.add_argument("-t", "--transport", choices=("stdio", "http", "sse"), default=None,
                     help="stdio (default for a command) or http / sse (for a URL)")
    add.add_argument("-e", "--env", action="append", default=[], metavar="K=V", help="environment variable for a stdio server")
    add.add_argument("-H", "--header", action="append", default=[], metavar="K:V", help="HTTP header for an http or sse server")
    add.add_argument("-s", "--scope", choices=SCOPES, default="local", help="where to write it (default: local)")
    add.add_argument("--timeout", type=int, default=None, metavar="MS", help="limit for one tool call, in milliseconds")
    add.add_argument("--force", action="store_true", help="replace a server of the same name in that scope")
    add.add_argument("target", nargs="+", metavar="COMMAND_OR_URL", help="after --: the command and its arguments, or the URL")
    rm = sub.add_parser("remove", help="remove a server")
    rm.add_argument("name")
    rm.add_argument("-s", "--scope", choices=SCOPES, default=None, help="the scope to remove it from (needed when it is in several)")


def _home() -> str:
    from agentloop.config.settings import agentloop_home

    return agentloop_home()


def _servers(cwd: str) -> dict[str, Any]:
    from agentloop.mcp.config import ConfigError, load_servers

    try:
        return load_servers(cwd, _home())
    except ConfigError as exc:
        raise UserError(str(exc)) from None


def _untrusted(servers: dict[str, Any], cwd: str) -> dict[str, str]:
    """The servers of this folder's own files that may not start: the folder is not trusted, or the
    ``.mcp.json`` server was not approved (folder trust, as in the agent)."""
    from agentloop.agent.trust import folder_decision
    from agentloop.mcp.config import mcp_json_path

    mine = {n: s for n, s in servers.items() if s.scope in ("project", "local")}
    if not mine:
        return {}
    d = folder_decision(cwd, _home(), os.environ)
    out = {}
    for n, s in mine.items():
        ok = d is not None and (n in d.mcp_approved if s.source == mcp_json_path(cwd) else d.trusted)
        if not ok:
            out[n] = f"not started: this folder's configuration is not trusted (see it and trust it with: agentloop trust {cwd})"
    return out


def _describe(s: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": s.name, "scope": s.scope, "file": s.source, "transport": s.transport, **s.to_json()}
    out.pop("type", None)
    return out


def _line(s: Any) -> str:
    target = " ".join([s.command or "", *s.args]) if s.transport == "stdio" else (s.url or "")
    return f"{s.name}: {target} ({s.transport}, {s.scope}: {s.source})"


def cmd_list(args: argparse.Namespace, cwd: str) -> int:
    servers = _servers(cwd)
    if not args.check:
        if args.json:
            print(json.dumps([_describe(s) for s in servers.values()], indent=2))
        elif not servers:
            say("no MCP servers configured (add one with: agentloop mcp add NAME -- COMMAND ARGS...)")
        else:
            for s in servers.values():
                say(_line(s))
        return EXIT_OK
    return _check(servers, cwd, args.json, list(servers))


def _check(servers: dict[str, Any], cwd: str, as_json: bool, names: list[str]) -> int:
    from agentloop.agent.spawn import allowed_names
    from agentloop.config.settings import ConfigError, agentloop_home, load_settings
    from agentloop.mcp.agent import format_status
    from agentloop.mcp.client import McpManager, ServerStatus

    refused = _untrusted(servers, cwd)
    try:  # the secret-named variables the user's own settings hand to servers, as in a session
        allow, _ = allowed_names(load_settings(cwd, agentloop_home()))
    except ConfigError:
        allow = frozenset()
    # the tokens of earlier sign-ins are used (and refreshed); no sign-in starts here
    with McpManager({n: servers[n] for n in names if n not in refused}, cwd=cwd, auth_home=agentloop_home(),
                    allow_env=allow) as m:
        tools = {t.name: t for t in m.tools()}
        statuses = m.status()
    statuses += [
        ServerStatus(n, servers[n].transport, "untrusted", refused[n], None, None, (), servers[n].source, servers[n].scope)
        for n in names if n in refused
    ]
    if as_json:
        print(json.dumps([
            {
                "name": st.name, "status": st.status, "error": st.error, "transport": st.transport,
                "scope": st.scope, "file": st.source, "server": st.server_name, "version": st.server_version,
                "tools": [
                    {"name": n, "read_only": tools[n].read_only, "description": tools[n].description}
                    for n in st.tools if n in tools
                ],
                "skipped": list(st.skipped),
            }
            for st in statuses
        ], indent=2))
    else:
        say(format_status(statuses))
    return EXIT_OK if all(st.status == "connected" for st in statuses) else EXIT_PROBLEMS


def cmd_get(args: argparse.Namespace, cwd: str) -> int:
    servers = _servers(cwd)
    s = servers.get(args.name)
    if s is None:
        have = ", ".join(servers) or "none"
        raise UserError(f"no MCP server named {args.name!r} (configured: {have})")
    if args.no_check:
        say(json.dumps(_describe(s), indent=2) if args.json else _line(s))
        return EXIT_OK
    if not args.json:
        say(_line(s))
    return _check(servers, cwd, args.json, [args.name])


def _pairs(items: list[str], sep: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        k, found, v = item.partition(sep)
        if not found or not k.strip():
            raise UserError(f"{what} {item!r} must look like NAME{sep}VALUE")
        out[k.strip()] = v.strip() if sep == ":" else v
    return out


def cmd_add(args: argparse.Namespace, cwd: str) -> int:
    from agentloop.mcp.config import ConfigError, ServerConfig, add_server, parse_server, scope_path

    target: list[str] = args.target
    transport = args.transport or ("http" if len(target) == 1 and target[0].startswith(("http://", "https://")) else "stdio")
    if transport == "stdio":
        if args.header:
            raise UserError("--header is for http and sse servers; a stdio server takes --env")
        server = ServerConfig(args.name, "stdio", command=target[0], args=tuple(target[1:]),
                              env=_pairs(args.env, "=", "--env"), timeout_ms=args.timeout)
    else:
        if args.env:
            raise UserError("--env is for stdio servers; an http or sse server takes --header")
        if len(target) != 1:
            raise UserError(f"a {transport} server takes one URL, got: {' '.join(target)}")
        server = ServerConfig(args.name, "sse" if transport == "sse" else "http", url=target[0], headers=_pairs(args.header, ":", "--header"),
                              timeout_ms=args.timeout)
    from agentloop.agent.trust import folder_decision, keep_trust_after_own_edit

    path = scope_path(args.scope, cwd, _home())
    before = folder_decision(cwd, _home(), os.environ) if args.scope != "user" else None
    try:
        parse_server(args.name, server.to_json(), "the command line")
        add_server(path, server, replace_existing=args.force)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    say(f"added MCP server {args.name!r} ({transport}) to {path} ({args.scope} scope)")
    if args.scope != "user" and not keep_trust_after_own_edit(cwd, _home(), os.environ, before):
        say(f"this folder's configuration is not trusted: the agent will not start it until you run: agentloop trust {cwd}")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace, cwd: str) -> int:
    from agentloop.mcp.config import ConfigError, read_object, remove_server, scope_path

    home = _home()
    scopes: list[Scope] = [args.scope] if args.scope else list(SCOPES)
    try:
        found = []
        for sc in scopes:
            servers = (read_object(scope_path(sc, cwd, home)) or {}).get("mcpServers")
            if isinstance(servers, dict) and args.name in servers:
                found.append(sc)
        if not found:
            where = f"the {args.scope} scope" if args.scope else "any scope"
            raise UserError(f"no MCP server named {args.name!r} in {where}")
        if len(found) > 1:
            raise UserError(f"{args.name!r} is in several scopes ({', '.join(found)}): pass --scope")
        path = scope_path(found[0], cwd, home)
        from agentloop.agent.trust import folder_decision, keep_trust_after_own_edit

        before = folder_decision(cwd, home, os.environ) if found[0] != "user" else None
        remove_server(path, args.name)
        keep_trust_after_own_edit(cwd, home, os.environ, before)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    say(f"removed MCP server {args.name!r} from {path} ({found[0]} scope)")
    return EXIT_OK


def main(args: argparse.Namespace) -> int:
    cwd = os.getcwd()
    action = {"list": cmd_list, "get": cmd_get, "add": cmd_add, "remove": cmd_remove}[args.mcp_command]
    code = action(args, cwd)
    sys.stdout.flush()
    return code
