"""Agent types: the built-in ones and the Markdown definitions in ``.claude/agents/`` (Claude Code's format)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...config.settings import ConfigError, read_config_bytes
from ...tools import Registry
from ..front_matter import parse_front_matter
from ..tools.builtin import BASH
from ..tools.catalog import RECORDS

__all__ = ["KNOWN_TOOLS", "READ_ONLY_TOOLS", "AgentType", "builtin_types", "describe_types", "known_tools", "load_agent_types", "read_agent_dir"]

READ_ONLY_TOOLS = tuple(r.name for r in RECORDS if r.rule in ("read", "search"))
"""The tools that read the workspace (records' ``rule``): Read, Glob, Grep and LS, the Explore type's."""
MAX_AGENT_FILES = 200
MAX_WALK_ENTRIES = 5_000
"""An agents folder's walk stops here (a symlink to ``/`` must not walk the disk)."""


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str
    """The child's system prompt."""
    tools: tuple[str, ...] | None = None
    """Tool names it may use; None: all of the parent's (never ``Agent`` itself)."""
    model: str | None = None
    source: str = "built-in"
    isolation: str | None = None
    """``worktree`` or ``none`` from its file's front matter (Claude Code's ``isolation``); a call's own wins."""
    read_only_bash: bool = False
    """Its Bash runs only lines the permission rules would pass as read-only (the built-in Explore)."""

    def read_only(self, registry: Registry | None = None) -> bool:
        """True when every tool it may use changes nothing."""
        if self.tools is None:
            return False
        if registry is None:
            return all(t in READ_ONLY_TOOLS or (t == BASH.name and self.read_only_bash) for t in self.tools)
        return all(((t := registry.get(n)) is not None and t.read_only) or (n == BASH.name and self.read_only_bash)
                   for n in self.tools if n in registry)


def builtin_types() -> dict[str, AgentType]:
    return {
        "general-purpose": AgentType(
            "general-purpose",
            "A general agent for multi-step tasks: searching, reading and changing code.",
            "You are a sub-agent working on one task for another agent. Do the task with the tools you have, "
            "then answer with a concise, complete report of what you found or did: it is all the other agent will see.",
        ),
        "Explore": AgentType(
            "Explore",
            "A read-only agent for finding and reading code quickly; it changes nothing.",
            "You are a read-only sub-agent exploring a codebase for another agent. Search and read; never change "
            "anything. Bash runs read-only commands only (ls, cat, grep, git rev-list or ls-tree). Answer with the facts "
            "found, with file paths and line numbers.",
            tools=(*READ_ONLY_TOOLS, BASH.name),
            read_only_bash=True,
        ),
    }


def tool_names(value: Any, path: str = "", warnings: list[str] | None = None) -> tuple[str, ...] | None:
    """An agent file's ``tools``: a comma-separated string (``Read, Grep``) or a YAML list (flow or block);
    None (every tool of the parent's) when absent or empty. Anything else is named in ``warnings`` and means none."""
    if value is None or value == "":
        return None
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None or not all(isinstance(t, str) for t in items):
        if warnings is not None:
            warnings.append(f"{path}: front matter 'tools' must be a list of tool names or a comma-separated string, "
                            f"not {value!r}; the agent gets no tools")
        return ()
    return tuple(t.strip() for t in items if t.strip())


def known_tools() -> frozenset[str]:
    """Every tool name an agent file may list: each record's (as the catalog holds them now) and its old names,
    and Claude Code's tools agentloop serves under another name."""
    from ...mcp.agent import RESOURCE_TOOLS
    from ..tools import catalog, claude_names

    return (frozenset(r.name for r in catalog.RECORDS) | frozenset(catalog.ALIASES)
            | claude_names.EDITORS | frozenset(RESOURCE_TOOLS))


KNOWN_TOOLS = known_tools()
"""Tool names an agent file may list besides ``mcp__...`` names: every built-in tool and its old names (``Task`` is
Claude Code's old name of ``Agent``), and Claude Code's MultiEdit and MCP resource tools."""


def load_agent_types(
    cwd: str, home: str, user_home: str | None = None, warnings: list[str] | None = None, *, trusted: bool = True,
) -> dict[str, AgentType]:
    """Built-in types, then ``<home>/agents/``, ``~/.claude/agents/``, ``.claude/agents/`` and
    ``.agentloop/agents/``, subfolders included, as Claude Code finds them (sub-agent files:
    front matter ``name``, ``description``, ``tools``, ``model``; the body is the prompt).
    A later place overrides an earlier one. A file that cannot be understood is skipped,
    and said so in ``warnings``; so is a tool name no agentloop tool has (the type keeps
    the others).

    An untrusted folder's own definitions (``trusted=False``) stay text: a
    ``model`` they name is not used (the child runs on the parent's model, so
    a definition cannot spend on a dearer one), said once in ``warnings``;
    the tools they list can only narrow the parent's, and the permission
    rules still decide every call."""
    types = builtin_types()
    places = [os.path.join(home, "agents")]
    if user_home:
        places.append(os.path.join(user_home, ".claude", "agents"))
    mine = {os.path.realpath(p) for p in places}
    places += [os.path.join(cwd, ".claude", "agents"), os.path.join(cwd, ".agentloop", "agents")]
    folder = None if trusted else os.path.realpath(cwd)
    for d in places:
        types.update(read_agent_dir(d, warnings, inert=not trusted and os.path.realpath(d) not in mine, inside=folder))
    return types


def read_agent_dir(d: str, warnings: list[str] | None = None, *, inert: bool = False,
                   inside: str | None = None) -> dict[str, AgentType]:
    """The agent files under ``d``, subfolders included, by name (``load_agent_types``'s rules for one place;
    ``inert``: an untrusted folder's, whose ``model`` is not used; so is a file whose real path lies in the
    untrusted folder ``inside`` but outside ``d``: a link from the user's own place into the folder, which the
    model's commands can rewrite)."""
    types: dict[str, AgentType] = {}
    found: list[str] = []
    seen = 0
    for root, dirs, files in os.walk(d):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
        seen += len(dirs) + len(files)
        if seen > MAX_WALK_ENTRIES or len(found) > MAX_AGENT_FILES:
            if warnings is not None:
                warnings.append(f"{d}: more than {MAX_AGENT_FILES} agent files or {MAX_WALK_ENTRIES} entries; the rest is skipped")
            break
    found = found[:MAX_AGENT_FILES]
    for path in found:
        fn = os.path.basename(path)
        try:  # a regular file of bounded size only: a symlink to /dev/zero or a FIFO is one line, not a hang
            raw = read_config_bytes(path)
            if raw is None:
                continue
            text = raw.decode("utf-8")
        except ConfigError as exc:
            if warnings is not None:
                warnings.append(f"{exc}; the agent file is skipped")
            continue
        except UnicodeDecodeError as exc:
            if warnings is not None:
                warnings.append(f"{path}: the agent file cannot be read ({exc}); skipped")
            continue
        meta, body = parse_front_matter(text, warnings, path)
        if not meta:
            if warnings is not None:
                warnings.append(f"{path}: no front matter (--- name, description ---); the agent file is skipped")
            continue
        name = str(meta.get("name") or fn[:-3])
        if warnings is not None and "hooks" in meta:
            warnings.append(f"{path}: front matter 'hooks' of agent {name!r} is not supported by agentloop; ignored "
                            "(Claude Code runs an agent's own hooks while it runs; agentloop runs hooks only from the "
                            "settings files' \"hooks\", for the parent and its sub-agents alike)")
        tools = tool_names(meta.get("tools"), path, warnings)
        known = known_tools()
        unknown = [t for t in tools or () if t not in known and not t.startswith("mcp__")]
        if unknown and warnings is not None:
            warnings.append(f"{path}: agent {name!r} lists tools agentloop does not have: {', '.join(unknown)} (left out)")
        model = str(meta.get("model") or "").strip() or None
        if model == "inherit":
            model = None  # Claude Code: the parent's model
        if model is not None and (inert or inside is not None and os.path.realpath(path).startswith(inside + os.sep)
                                  and not os.path.realpath(path).startswith(os.path.realpath(d) + os.sep)):
            if warnings is not None:
                warnings.append(f"{path}: agent {name!r} names the model {model!r}; not used until you trust this folder "
                                "(it runs on the parent's model)")
            model = None
        isolation = meta.get("isolation") if meta.get("isolation") in ("worktree", "none") else None
        if meta.get("isolation") and isolation is None and warnings is not None:
            warnings.append(f"{path}: agent {name!r} asks for isolation {meta['isolation']!r}; agentloop knows worktree and none (ignored)")
        types[name] = AgentType(name, str(meta.get("description") or ""), body.strip(), tools, model, path, str(isolation) if isolation else None)
    return types


def describe_types(types: dict[str, AgentType], parent_model: str = "") -> list[str]:
    """The ``/agents`` listing: each type's name and where it is defined, then its description, tools, model and
    isolation, indented (Claude Code's ``/agents`` shows the same facts)."""
    if not types:
        return ["no sub-agent types (sub-agents are off)"]
    out = []
    for t in sorted(types.values(), key=lambda t: (t.source != "built-in", t.name)):
        tools = "all of the parent's tools" if t.tools is None else ", ".join(t.tools)
        if t.read_only_bash:
            tools += " (Bash: read-only commands)"
        out.append(f"{t.name}  ({t.source})")
        out.append(f"    {t.description}")
        out.append(f"    tools: {tools}")
        out.append(f"    model: {t.model or ('the session' + chr(39) + 's' + (f' ({parent_model})' if parent_model else ''))}")
        if t.isolation:
            out.append(f"    isolation: {t.isolation}")
    return out
