"""A session's tools: the permission policy, the workspace, the registry, and which tools the model is shown.

``Toolbox.build`` is called when the agent starts and again when the session
changes (the tools' spill folder is the session's), from a ``ToolboxInputs``: a
frozen value the agent makes with exactly what the tools are built from (it is
not handed the agent). The registry holds the built-in tools (or the one the
agent was given), the ``Skill`` tool when there are skills, and the tools beside
them (``ExtraTools``: the ``Agent`` tool and the MCP servers' tools, which stay
across sessions; that object is the one place they change). An MCP server that
changes its list swaps its tools in a new registry (``sync_mcp``); a run in
progress keeps the one it holds.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.settings import ConfigError, user_home
from ..events import ToolCall
from ..providers.record import EDIT_FORMAT, PATCH_FORMAT
from ..tools import Registry, Tool
from .protocols import AgentError
from .tools.apply_patch import APPLY_PATCH
from .tools.builtin import BASH, EDIT
from .tools.catalog import path_arguments
from .tools.claude_names import MULTI_EDIT, PATH_ARGUMENTS
from .tools.web_fetch import WEB_FETCH
from .tools.web_search import WEB_SEARCH

if TYPE_CHECKING:
    from ..config.settings import SettingsSource
    from ..mcp.agent import McpServers
    from .agent_settings import AgentSettings
    from .permissions.rules import PermissionPolicy
    from .sandbox.bubblewrap import Sandbox, SandboxSettings
    from .tools.background import BackgroundShells
    from .tools.builtin import RunningProcesses
    from .tools.session_tools import SessionLink
    from .tools.workspace import Workspace

log = logging.getLogger("agentloop.agent")

__all__ = ["ExtraTools", "ToolSetup", "Toolbox", "ToolboxInputs", "open_sandbox", "patch_guard", "session_rule"]


def patch_guard(policy: PermissionPolicy, real: str) -> str | None:
    """Why apply_patch may not change ``real`` under ``policy``: an Edit deny rule covers it, or it is a protected
    path (only Edit changes those, after asking). The call itself was already allowed as ``apply_patch``. The
    parent's registry and every child's use this one guard, each with its own (re-rooted) policy."""
    as_edit = {EDIT.paths[0]: real}
    d = policy.decide(EDIT.name, as_edit)
    if d.behavior == "deny":
        return d.reason
    if policy.protected_target(EDIT.name, as_edit) is not None:
        return "it is a protected path; change it with Edit, which asks first"
    return None


@dataclass(frozen=True)
class ToolSetup:
    """Everything an agent's built-in tools are made with, guards included; ``registry()`` is the one call that
    makes them, for the parent and for every child (``for_child``), so a guard given to one is given to all.

    The guards: the permission policy (its Read-deny rules hide paths from Glob, Grep and LS; its Edit deny rules
    and protected paths bound apply_patch), the workspace's roots, the sandbox every Bash command runs in, the
    redactor, and the recording of each write for rewind (``on_write``)."""

    cwd: str
    add_dirs: tuple[str, ...]
    spill_dir: str
    policy: PermissionPolicy
    sandbox: Sandbox
    env: Mapping[str, str]
    redact: Callable[[str], str]
    processes: RunningProcesses
    background: BackgroundShells
    shell_timeout_s: int
    shell_max_timeout_s: float | None
    on_write: Callable[[str, bytes | None, bytes], None] | None
    """Records each write for rewind (``file_change``)."""
    session: SessionLink | None
    """What TodoWrite, ExitPlanMode and AskUserQuestion reach of the session; None: a list of their own."""

    def registry(self) -> Registry:
        """The built-in tools (``tools/catalog.py``), confined to this setup's workspace and guarded by it."""
        from .tools.catalog import builtin_registry
        from .tools.workspace import Workspace

        return builtin_registry(
            Workspace(self.cwd, list(self.add_dirs), on_write=self.on_write), spill_dir=self.spill_dir,
            shell_timeout_s=self.shell_timeout_s, processes=self.processes, visible=self.policy.visible(),
            sandbox=self.sandbox, env=self.env, redact=self.redact, shell_max_timeout_s=self.shell_max_timeout_s,
            session=self.session, patch_guard=functools.partial(patch_guard, self.policy), background=self.background,
            follow_shell=self.policy.follow_shell,
        )

    def for_child(self, cwd: str, policy: PermissionPolicy) -> ToolSetup:
        """A sub-agent's setup working in ``cwd``, under ``policy`` (the parent's rules, re-rooted at its worktree
        when it has one). Only what must differ for a child differs: its workspace root; a sandbox whose
        writable roots are its own (the parent's folder stays readable); its writes recorded when it works in
        the parent's folder (a worktree's come home through the merge, recorded then); and no session link (its
        own task list, never plan mode, nobody to ask). The rest, and so every guard, is the parent's."""
        here = os.path.realpath(cwd) == os.path.realpath(self.cwd)
        return dataclasses.replace(
            self, cwd=cwd, policy=policy, sandbox=self.sandbox.for_roots([cwd, *self.add_dirs], also_read=[self.cwd]),
            on_write=self.on_write if here else None, session=None,
        )


class ExtraTools:
    """The tools beside the built-in ones (the ``Agent`` tool, the worktree and web tools, the MCP servers'):
    they stay across sessions, and this object is the one place they change (``add``, ``swap``)."""

    __slots__ = ("_tools",)

    def __init__(self, tools: Sequence[Tool] = ()):
        self._tools: list[Tool] = list(tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> set[str]:
        return {t.name for t in self._tools}

    def add(self, tools: Sequence[Tool]) -> None:
        self._tools += tools

    def swap(self, owns: Callable[[Tool], bool], fresh: Sequence[Tool]) -> None:
        """The tools ``owns`` claims (one MCP manager's) give way to ``fresh``."""
        self._tools = [t for t in self._tools if not owns(t)] + list(fresh)


@dataclass(frozen=True, slots=True)
class ToolboxInputs:
    """What a session's tools are built from (``Toolbox.build``), made by the agent each time it builds them:
    the settings' sources, mode, folders and environment, the sandbox and its hook files, the secrets' child
    environment and redactor, the session's spill folder and link, commands' skills, and the tools beside
    the built-in ones. Nothing in it is the agent; the objects it holds change themselves through their own
    methods (``Sandbox.work_in``, ``ExtraTools.add``)."""

    sources: tuple[SettingsSource, ...]
    permission_mode: str
    cwd: str
    home: str
    env: Mapping[str, str]
    cli_rules: tuple[tuple[str, str], ...]
    hook_files: tuple[str, ...]
    """The scripts trusted hooks run (protected: an edit of one asks in every mode)."""
    sandbox: Sandbox
    read_only_agent_types: frozenset[str]
    add_dirs: tuple[str, ...]
    spill_dir: str
    child_env: Mapping[str, str]
    """The environment children start with: the secrets' own mapping (SessionStart hooks may add to it later)."""
    redact: Callable[[str], str]
    shell_timeout_s: float
    shell_max_timeout_s: float | None
    session_link: SessionLink
    given_registry: Registry | None
    skills: dict[str, Any]
    skill_loaded: Callable[..., Any]
    skill_bangs: Callable[..., Any]
    extra_tools: ExtraTools
    mcp_servers: McpServers | None
    file_changed: Callable[[str, bytes | None, bytes], None]


class Toolbox:
    def __init__(self, policy: PermissionPolicy, workspace: Workspace, processes: RunningProcesses,
                 background: BackgroundShells, registry: Registry, extra_tools: ExtraTools, setup: ToolSetup,
                 add_dirs: Sequence[str] = ()):
        self.policy = policy
        self.workspace = workspace
        self.processes = processes
        self.background = background
        self.registry = registry
        self.extra_tools = extra_tools
        """The tools beside the built-in ones (they stay across sessions: changed only through their own methods)."""
        self.setup = setup
        """What the built-in tools were made with: a sub-agent's are made from it (``ToolSetup.for_child``)."""
        self.add_dirs = tuple(add_dirs)
        """The additional directories: the agent's and the permission settings' (the agent takes these)."""

    @classmethod
    def build(cls, src: ToolboxInputs) -> Toolbox:
        """The policy, workspace and registry of ``src``'s session.

        Raises:
            AgentError: a permission rule or mode is malformed (one line).
        """
        from .tools.background import BackgroundShells
        from .tools.builtin import RunningProcesses
        from .tools.workspace import Workspace

        spill = src.spill_dir
        policy = _policy(src)
        add_dirs = tuple(dict.fromkeys([*src.add_dirs, *policy.additional_directories]))  # the agent takes them (build_tools)
        if src.mcp_servers is not None:
            src.mcp_servers.spill_to(spill)
        workspace = Workspace(src.cwd, list(add_dirs), on_write=src.file_changed)
        # deny rules hold where programs start, too
        src.sandbox.work_in((src.cwd, *add_dirs), policy.denied_programs, src.child_env.get("PATH"))
        processes, background = RunningProcesses(), BackgroundShells(spill)
        setup = ToolSetup(src.cwd, add_dirs, spill, policy, src.sandbox, src.child_env,
                          src.redact, processes, background, int(src.shell_timeout_s),
                          src.shell_max_timeout_s, src.file_changed, src.session_link)
        given = src.given_registry
        box = cls(policy, workspace, processes, background, given if given is not None else Registry(), src.extra_tools,
                  setup, add_dirs)
        if given is None:
            box.registry = box._builtin(src)
        for t in src.extra_tools:
            if t.name not in box.registry:
                box.registry.register(t)
        return box

    def _builtin(self, src: ToolboxInputs) -> Registry:
        from .commands import skill_tool

        reg = self.setup.registry()
        if src.skills:
            reg.register(skill_tool(src.skills, on_load=src.skill_loaded, preprocess=src.skill_bangs))
        return reg

    def shown(self, model_spec: str) -> Registry:
        """The tools the model is shown: all but those a bare-name deny rule removes.

        As in Claude Code, ``"deny": ["Bash"]`` or ``"mcp__db__*"`` takes the
        tool out of the model's view; a call to it anyway is still denied.
        Read at each turn, so rules added during the session count.
        """
        removed = set(self.policy.removed_tools(self.registry.names())) | model_hides(model_spec)
        return Registry([t for t in self.registry if t.name not in removed]) if removed else self.registry

    def register(self, tools: Sequence[Tool]) -> None:
        """Add tools (MCP, sub-agents) now and whenever the registry is rebuilt."""
        self.extra_tools.add(tools)
        for t in tools:
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
        self.extra_tools.swap(owns, fresh)
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
        text, fresh = servers.status(self.extra_tools.names())
        if fresh:
            self.register(fresh)
        return text


def _policy(src: ToolboxInputs) -> PermissionPolicy:
    from .permissions.rules import ModeError, PermissionPolicy
    try:
        policy = PermissionPolicy.from_settings(list(src.sources), mode=src.permission_mode, cwd=src.cwd,
                                                user_home=user_home(src.env))
        from .permissions.unsandboxed import drop_foreign

        for line in drop_foreign(policy, [s.path for s in src.sources if s.in_project]):
            log.warning(line)  # a repository's settings cannot let a command run outside the sandbox
        for behavior, text in src.cli_rules:
            if not policy.managed_only(behavior, f"--allowedTools {text}"):
                policy.add_rule(behavior, text, source="cliArg")  # type: ignore[arg-type]
    except (ConfigError, ModeError) as exc:
        raise AgentError(str(exc)) from None
    except ValueError as exc:  # a malformed --allowedTools / --disallowedTools rule
        raise AgentError(f"--allowedTools/--disallowedTools: {exc}") from None
    # sessions, keys, user settings; the scripts trusted hooks run: an edit of one asks in every mode
    from .agent_settings import read_env

    by_project = read_env(src.sources)[1]  # read-only lines are judged in the environment Bash gets; the user's is trusted
    policy.follow_env(src.child_env, {k: v for k, v in src.env.items() if k not in by_project})
    policy.protected_roots = [os.path.realpath(src.home), *src.hook_files]
    policy.read_only_agent_types = src.read_only_agent_types  # plan mode may launch these: their tools change nothing
    if src.mcp_servers is not None:
        policy.mcp_servers = src.mcp_servers.manager.server_of  # rules name a server exactly: mcp__a__* never covers server a__b
        from ..mcp.agent import RESOURCE_TOOLS

        policy.read_only_tools = policy.read_only_tools | frozenset(RESOURCE_TOOLS)  # as in Claude Code: no permission
    return policy


def session_rule(policy: PermissionPolicy, call: ToolCall) -> str:
    """"Always" at a prompt: a session rule allowing exactly what was approved (its text; "" for none).

    For Bash, the exact command line, with any ``*`` in it taken literally (so
    approving ``rm tmpd/*.tmp`` does not approve ``rm tmpd/../x tmpd/y.tmp``); for a
    write to a protected path, that one file (each path of a tool with several); for WebFetch, the URL's domain
    (``WebFetch(domain:HOST)``); for other tools, the tool. Deny and ask rules
    still come first, as for any allow rule.
    """
    args = call.arguments if isinstance(call.arguments, dict) else {}
    cmd = args.get("command")
    if call.name == BASH.name:
        if not isinstance(cmd, str):
            return ""  # nothing to remember: the next call asks again
        return policy.add_exact("allow", BASH.name, cmd, source="session").text
    if call.name == WEB_FETCH.name:  # Claude Code: "don't ask again" for that domain, not for every fetch
        from .tools.web_fetch import remembered_domain_rule

        text = remembered_domain_rule(args.get("url"))
        if text:
            policy.add_rule("allow", text, source="session")
        return text
    if policy.protected_target(call.name, args) is not None:
        keys = path_arguments(call.name) or PATH_ARGUMENTS
        paths = [p for k in keys if isinstance(p := args.get(k), str) and p]  # each of them: all must be named
        if not paths:
            return ""
        return ", ".join(policy.add_exact("allow", call.name, p, source="session").text for p in paths)
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
                                     runtime_dir=env.get("XDG_RUNTIME_DIR"), agent_sockets=sbx.agent_socket_paths(env))
    except (ValueError, sbx.SandboxUnavailable) as exc:
        raise AgentError(str(exc)) from None
    said = [f"sandbox: {w}" for w in ss.warnings] + [n for n in notices if n]
    unavailable = sandbox.unavailable_notice()
    if unavailable:
        said.append(unavailable)
    for n in said:
        log.warning(n)
    return ss, sandbox, said


EDIT_FORMAT_TOOLS = {EDIT_FORMAT: frozenset({EDIT.name, MULTI_EDIT}), PATCH_FORMAT: frozenset({APPLY_PATCH.name})}
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
        hidden.add(WEB_SEARCH.name)
    return hidden
