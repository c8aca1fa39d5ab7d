"""A session's tools: the permission policy, the workspace, the registry, and which tools the model is shown.

``Toolbox.build`` is called when the agent starts and again when the session
changes (the tools' spill folder is the session's). The registry holds the
built-in tools (or the one the agent was given), the ``Skill`` tool when there
are skills, and the tools beside them (``extra_tools``: the ``Agent`` tool and
the MCP servers' tools, which stay across sessions). An MCP server that changes
its list swaps its tools in a new registry (``sync_mcp``); a run in progress
keeps the one it holds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config.settings import ConfigError, user_home
from ..events import ToolCall
from ..tools import Registry, Tool
from .protocols import AgentError, ToolboxSource

if TYPE_CHECKING:
    from ..mcp.agent import McpServers
    from .agent_settings import AgentSettings
    from .permissions.rules import PermissionPolicy
    from .sandbox.bubblewrap import Sandbox, SandboxSettings
    from .tools.background import BackgroundShells
    from .tools.builtin import RunningProcesses
    from .tools.workspace import Workspace

log = logging.getLogger("agentloop.agent")

__all__ = ["Toolbox", "open_sandbox", "patch_guard", "session_rule"]


def patch_guard(policy: PermissionPolicy, real: str) -> str | None:
    """Why apply_patch may not change ``real`` under ``policy``: an Edit deny rule covers it, or it is a protected
    path (only Edit changes those, after asking). The call itself was already allowed as ``apply_patch``. The
    parent's registry and every child's use this one guard, each with its own (re-rooted) policy."""
    d = policy.decide("Edit", {"file_path": real})
    if d.behavior == "deny":
        return d.reason
    if policy.protected_target("Edit", {"file_path": real}) is not None:
        return "it is a protected path; change it with Edit, which asks first"
    return None


class Toolbox:
    def __init__(self, policy: PermissionPolicy, workspace: Workspace, processes: RunningProcesses,
                 background: BackgroundShells, registry: Registry, extra_tools: list[Tool]):
        self.policy = policy
        self.workspace = workspace
        self.processes = processes
        self.background = background
        self.registry = registry
        self.extra_tools = extra_tools
        """The agent's tools beside the built-in ones (shared with it: they stay across sessions)."""

    @classmethod
    def build(cls, src: ToolboxSource) -> Toolbox:
        """The policy, workspace and registry of ``src``'s session.

        Raises:
            AgentError: a permission rule or mode is malformed (one line).
        """
        from .tools.background import BackgroundShells
        from .tools.builtin import RunningProcesses
        from .tools.workspace import Workspace

        spill = src.session.spill_dir
        policy = _policy(src)
        for d in policy.additional_directories:
            if d not in src.add_dirs:
                src.add_dirs.append(d)
        if src.mcp_servers is not None:
            src.mcp_servers.manager.output.spill_dir = spill  # capped MCP outputs go beside the built-in tools' (Read may read there)
        workspace = Workspace(src.cwd, src.add_dirs, on_write=src.file_changed)
        src.sandbox.roots = [os.path.realpath(d) for d in (src.cwd, *src.add_dirs)]
        src.sandbox.denied_programs = policy.denied_programs  # deny rules hold where programs start, too
        src.sandbox.command_path = src.secrets.child_env.get("PATH")
        src.sandbox.warm_deny_masks()
        processes, background = RunningProcesses(), BackgroundShells(spill)
        given = src.given_registry
        box = cls(policy, workspace, processes, background, given if given is not None else Registry(), src.extra_tools)
        if given is None:
            box.registry = box._builtin(src, spill)
        for t in src.extra_tools:
            if t.name not in box.registry:
                box.registry.register(t)
        return box

    def _builtin(self, src: ToolboxSource, spill: str) -> Registry:
        from .commands import skill_tool
        from .tools.builtin import builtin_registry

        reg = builtin_registry(
            self.workspace, spill_dir=spill, shell_timeout_s=int(src.shell_timeout_s),
            processes=self.processes, visible=self.policy.visible(),
            sandbox=src.sandbox, env=src.secrets.child_env, redact=src.secrets.redactor.text, shell_max_timeout_s=src.shell_max_timeout_s,
            session=src.session_link, patch_guard=self.patch_guard, background=self.background,
        )
        if src.slash.skills:
            reg.register(skill_tool(src.slash.skills, on_load=src.slash.skill_loaded, preprocess=src.slash.skill_tool_bangs))
        return reg

    def shown(self, model_spec: str) -> Registry:
        """The tools the model is shown: all but those a bare-name deny rule removes.

        As in Claude Code, ``"deny": ["Bash"]`` or ``"mcp__db__*"`` takes the
        tool out of the model's view; a call to it anyway is still denied.
        Read at each turn, so rules added during the session count.
        """
        removed = set(self.policy.removed_tools(self.registry.names())) | model_hides(model_spec)
        return Registry([t for t in self.registry if t.name not in removed]) if removed else self.registry

    def patch_guard(self, real: str) -> str | None:
        return patch_guard(self.policy, real)

    def register(self, tools: Sequence[Tool]) -> None:
        """Add tools (MCP, sub-agents) now and whenever the registry is rebuilt."""
        for t in tools:
            self.extra_tools.append(t)
            if t.name not in self.registry:
                self.registry.register(t)

    def sync_mcp(self, servers: McpServers | None) -> bool:
        """Before each run and after each tool batch: take in the tools an MCP server added or removed
        (``list_changed``). True when they changed."""
        if servers is None:
            return False
        fresh = servers.changed_tools()
        if fresh is None:
            return False
        owns = servers.owns
        self.extra_tools[:] = [t for t in self.extra_tools if not owns(t)] + fresh
        # the MCP tools are swapped in a new registry: the built-in tools (and the workspace and background
        # shells they share) stay as they are, since a run may be in progress
        kept = [t for t in self.registry if not owns(t)]
        names = {t.name for t in kept}
        self.registry = Registry([*kept, *(t for t in fresh if t.name not in names)])
        return True

    def mcp_status(self, servers: McpServers | None) -> str:
        """``/mcp``: try failed servers again, add any tools they bring, and list every server."""
        from ..mcp.agent import format_status

        if servers is None:
            return format_status([])
        text, fresh = servers.status({t.name for t in self.extra_tools})
        if fresh:
            self.register(fresh)
        return text


def _policy(src: ToolboxSource) -> PermissionPolicy:
    from .permissions.rules import ModeError, PermissionPolicy
    from .tools.session_tools import SESSION_TOOLS

    try:
        policy = PermissionPolicy.from_settings(list(src.settings.sources), mode=src.permission_mode, cwd=src.cwd,
                                                user_home=user_home(src.env))
        from .permissions.unsandboxed import drop_foreign

        for line in drop_foreign(policy, [s.path for s in src.settings.sources if s.in_project]):
            log.warning(line)  # a repository's settings cannot let a command run outside the sandbox
        for behavior, text in src.cli_rules:
            if not policy.managed_only(behavior, f"--allowedTools {text}"):
                policy.add_rule(behavior, text, source="cliArg")  # type: ignore[arg-type]
    except (ConfigError, ModeError) as exc:
        raise AgentError(str(exc)) from None
    except ValueError as exc:  # a malformed --allowedTools / --disallowedTools rule
        raise AgentError(f"--allowedTools/--disallowedTools: {exc}") from None
    # sessions, keys, user settings; the scripts trusted hooks run: an edit of one asks in every mode
    policy.protected_roots = [os.path.realpath(src.home), *src.sandbox_settings.hook_files]
    policy.read_only_agent_types = src.context.read_only_agent_types()  # plan mode may launch these: their tools change nothing
    if src.mcp_servers is not None:
        policy.mcp_servers = src.mcp_servers.manager.server_of  # rules name a server exactly: mcp__a__* never covers server a__b
        from ..mcp.agent import RESOURCE_TOOLS

        policy.read_only_tools = policy.read_only_tools | frozenset(RESOURCE_TOOLS)  # as in Claude Code: no permission
    # the session tools change no file: no permission, and plan mode lets them run (ExitPlanMode is how it ends)
    policy.read_only_tools = policy.read_only_tools | SESSION_TOOLS | {"BashOutput", "KillShell"}
    return policy


def session_rule(policy: PermissionPolicy, call: ToolCall) -> str:
    """"Always" at a prompt: a session rule allowing exactly what was approved (its text; "" for none).

    For Bash, the exact command line, with any ``*`` in it taken literally (so
    approving ``rm tmpd/*.tmp`` does not approve ``rm tmpd/../x tmpd/y.tmp``); for a
    write to a protected path, that one file; for WebFetch, the URL's domain
    (``WebFetch(domain:HOST)``); for other tools, the tool. Deny and ask rules
    still come first, as for any allow rule.
    """
    args = call.arguments if isinstance(call.arguments, dict) else {}
    cmd = args.get("command")
    if call.name == "Bash":
        if not isinstance(cmd, str):
            return ""  # nothing to remember: the next call asks again
        return policy.add_exact("allow", "Bash", cmd, source="session").text
    if call.name == "WebFetch":  # Claude Code: "don't ask again" for that domain, not for every fetch
        from .tools.web_fetch import remembered_domain_rule

        text = remembered_domain_rule(args.get("url"))
        if text:
            policy.add_rule("allow", text, source="session")
        return text
    if policy.protected_target(call.name, args) is not None:
        path = next((args[k] for k in ("file_path", "notebook_path", "path") if isinstance(args.get(k), str)), None)
        if path is None:
            return ""
        return policy.add_exact("allow", call.name, path, source="session").text
    policy.add_rule("allow", call.name, source="session")
    return call.name


def open_sandbox(settings: AgentSettings, mode: str | None, cwd: str, add_dirs: Sequence[str], home: str,
                 notices: Sequence[str | None]) -> tuple[SandboxSettings, Sandbox, list[str]]:
    """The sandbox every Bash command runs in (``--sandbox`` ``mode``, else the settings'), and the lines to say
    once at start: its settings not honoured, ``notices``, and no sandbox available.

    Raises:
        AgentError: the sandbox settings are malformed, or the sandbox is required and unavailable.
    """
    from .sandbox import bubblewrap as sbx

    env = settings.env
    try:
        ss = sbx.settings_from(list(settings.sources), mode=mode, cwd=cwd, user_home=sbx.user_home_of(env))
        sandbox = sbx.Sandbox.create(ss, roots=[cwd, *add_dirs], agentloop_home=home, user_home=sbx.user_home_of(env),
                                     runtime_dir=env.get("XDG_RUNTIME_DIR"))
    except (ValueError, sbx.SandboxUnavailable) as exc:
        raise AgentError(str(exc)) from None
    said = [f"sandbox: {w}" for w in ss.warnings] + [n for n in notices if n]
    unavailable = sandbox.unavailable_notice()
    if unavailable:
        said.append(unavailable)
    for n in said:
        log.warning(n)
    return ss, sandbox, said


EDIT_FORMAT_TOOLS = {"edit": frozenset({"Edit", "MultiEdit"}), "apply_patch": frozenset({"apply_patch"})}
"""The tools of each edit format: a model told to use one is not shown the other's."""


def model_hides(model_spec: str) -> set[str]:
    """The tools a model is not shown, by what its provider's record says of it: the edit format it was not
    trained on (``providers.edit_format``; one format offered, and named in the system prompt), and WebSearch
    where the provider has no server-side search (``providers.has_web_search``)."""
    from ..providers import edit_format, has_web_search

    hidden: set[str] = set()
    fmt = edit_format(model_spec)
    if fmt is not None:
        hidden.update(*(tools for f, tools in EDIT_FORMAT_TOOLS.items() if f != fmt))
    if has_web_search(model_spec) is False:
        hidden.add("WebSearch")
    return hidden
