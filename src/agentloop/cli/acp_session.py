"""What an ACP session brings and shows beside its turns: the editor's MCP servers, the prompt's resources, modes, commands.

Rules (pages under agentclientprotocol.com/protocol/v1):

1. The ``mcpServers`` of ``session/new`` and ``session/load`` (session-setup#mcp-servers)
   are started as the user's own servers are, as ``--mcp-config`` gives them:
   through the same child environment, credentials withheld, their tools under
   the same permission rules (``mcp__name__tool``). stdio servers
   (``command``, ``args``, ``env``) and, as the agent says it supports them
   (``mcpCapabilities``), ``http`` and ``sse`` ones (``url``, ``headers``).
   A server of the same name as a configured one replaces it for the session.
2. A prompt's text blocks are its text. A ``resource`` block (embedded context)
   is given to the model as its content; a ``resource_link`` to a file inside
   the workspace is read (through the editor's buffer when it offers one, else
   from disk, at most ``MAX_LINK_BYTES``) and given as its content. A link
   elsewhere, a binary resource or an unreadable file is named with what was
   not included and why, never passed on as bare text. Images are not taken
   (``promptCapabilities.image`` is false).
3. Session modes (session-modes) are the permission modes: default,
   acceptEdits, plan, and bypassPermissions only when the session started in
   it (as Shift+Tab cycles in the terminal); a mode set by managed settings
   cannot be changed. The session's mode is in the ``session/new`` response,
   ``session/set_mode`` changes it, and any change (ExitPlanMode's too) is
   sent as ``current_mode_update``.
4. The user's commands and skills, then the MCP servers' prompts
   (``mcp__server__prompt``), are offered as ``available_commands_update``
   (slash-commands) with their descriptions and argument hints; a prompt
   ``/name args`` runs the command, loads the skill or gets the server's
   prompt, as the terminal does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["MODE_NAMES", "available_commands", "mcp_config", "mode_state", "modes_for", "prompt_text", "switch_mode"]

MAX_LINK_BYTES = 1_000_000
MODE_NAMES = {
    "default": ("Default", "Ask before each change and command that no rule allows"),
    "acceptEdits": ("Accept edits", "File edits in the workspace go ahead; commands still ask"),
    "plan": ("Plan", "Read and plan only: nothing is changed"),
    "bypassPermissions": ("Bypass permissions", "Everything runs without asking (deny rules still hold)"),
    "dontAsk": ("Don't ask", "What no rule allows is refused without asking"),
}


def mcp_config(servers: Any) -> str | None:
    """Rule 1: the editor's servers as an ``--mcp-config`` JSON document, or None when there are none."""
    out: dict[str, Any] = {}
    for s in servers or ():
        d = s.model_dump(by_alias=True, exclude_none=True) if hasattr(s, "model_dump") else dict(s)
        name = str(d.get("name", ""))
        pairs = {str(p.get("name")): str(p.get("value")) for p in d.get("env") or d.get("headers") or () if isinstance(p, dict)}
        if d.get("type") in ("http", "sse"):
            out[name] = {"type": d["type"], "url": d.get("url", ""), **({"headers": pairs} if pairs else {})}
        else:
            out[name] = {"type": "stdio", "command": d.get("command", ""), "args": list(d.get("args") or []),
                         **({"env": pairs} if pairs else {})}
    return json.dumps({"mcpServers": out}) if out else None


def _file_of(uri: str, roots: list[str]) -> str | None:
    """The real path of a ``file://`` URI inside one of ``roots``, else None."""
    u = urlparse(uri)
    if u.scheme != "file":
        return None
    real = os.path.realpath(unquote(u.path))
    return real if any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots) else None


def _link_text(block: Any, roots: list[str], read: Callable[[str], str | None]) -> str:
    uri = str(getattr(block, "uri", ""))
    path = _file_of(uri, roots)
    if path is None:
        why = "it is not a file inside the workspace" if uri.startswith("file:") else "only file links inside the workspace are read"
        return f"[The user attached {uri}; its content is not included: {why}.]"
    text = read(path)
    if text is None:
        return f"[The user attached {path}; it could not be read as text (missing, binary or over {MAX_LINK_BYTES} bytes).]"
    return f"Contents of {path}:\n{text}"


def _resource_text(block: Any) -> str:
    res = getattr(block, "resource", None)
    uri = str(getattr(res, "uri", ""))
    text = getattr(res, "text", None)
    if text is not None:
        return f"Contents of {uri}:\n{text}"
    mime = getattr(res, "mime_type", None) or "binary"
    return f"[The user attached {uri} ({mime}); binary content is not included.]"


def prompt_text(blocks: list[Any], roots: list[str], read: Callable[[str], str | None]) -> str:
    """Rule 2: the prompt as the model gets it."""
    parts: list[str] = []
    for b in blocks:
        kind = getattr(b, "type", None)
        if kind == "text":
            parts.append(str(b.text))
        elif kind == "resource":
            parts.append(_resource_text(b))
        elif kind == "resource_link":
            parts.append(_link_text(b, roots, read))  # the editor's buffer when it offers one, else the disk
        elif kind is not None:
            parts.append(f"[The user attached {kind} content, which agentloop does not take over ACP.]")
    return "\n".join(parts).strip()


def read_file(path: str) -> str | None:
    """A workspace file's text for a resource link (rule 2), None when it is not readable text."""
    try:
        if os.path.getsize(path) > MAX_LINK_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def modes_for(start: str) -> list[str]:
    """Rule 3: the modes a session that started in ``start`` may be put in."""
    from agentloop.agent.agent_settings import (
        CYCLE,  # Shift+Tab's cycle: the same modes as in the REPL
    )

    modes = [*CYCLE] + (["bypassPermissions"] if start == "bypassPermissions" else [])
    return modes if start in modes else [start, *modes]


def mode_state(current: str, modes: list[str]) -> Any:
    from acp.schema import SessionMode, SessionModeState

    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id=m, name=MODE_NAMES.get(m, (m, ""))[0], description=MODE_NAMES.get(m, ("", None))[1]) for m in modes])


def switch_mode(agent: Agent, target: str, modes: list[str]) -> str | None:
    """Rule 3: put ``agent`` in ``target`` (as Shift+Tab would get there); None when done, else why not."""
    if target not in modes:
        return f"unknown mode {target!r} for this session (one of: {', '.join(modes)})"
    for _ in range(len(modes) + 1):
        if agent.permission_mode == target:
            return None
        before = agent.permission_mode
        if agent.cycle_mode() == before:
            return f"the permission mode {before} is set by managed settings and cannot be changed"
    return f"mode {target} cannot be reached from {agent.permission_mode}"


def available_commands(agent: Agent) -> list[Any]:
    """Rule 4: the user's commands, then the skills and the MCP prompts not shadowed by one before."""
    from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

    out: list[Any] = []
    seen: set[str] = set()
    for group in (getattr(agent, "commands", {}), getattr(agent, "skills", {})):
        for name, c in sorted(group.items()):
            if name in seen:
                continue
            seen.add(name)
            hint = str(getattr(c, "argument_hint", "") or "")
            out.append(AvailableCommand(name=name, description=str(getattr(c, "description", "") or name)[:500],
                                        input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None))
    try:
        from agentloop.mcp.agent import prompt_commands

        prompts = prompt_commands(agent.mcp_servers)
    except Exception:  # noqa: BLE001 - a server that cannot list its prompts offers none
        prompts = {}
    for name, (server, p) in sorted(prompts.items()):
        if name in seen:
            continue
        hint = " ".join(f"<{a.name}>" for a in (getattr(p, "arguments", None) or []))
        desc = str(getattr(p, "description", "") or getattr(p, "title", "") or f"the {p.name} prompt of {server}")
        out.append(AvailableCommand(name=name, description=f"{desc[:480]} (MCP {server})",
                                    input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None))
    return out
