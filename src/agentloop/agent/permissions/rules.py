"""Permission rules in Claude Code's syntax, read from the settings files, and the decision for a tool call.

Rules:

1. A rule is ``Tool`` or ``Tool(specifier)``: ``Bash(npm run test *)``,
   ``Bash(git diff:*)``, ``Read(./secrets/**)``, ``Edit(/src/**)``,
   ``WebFetch(domain:*.example.com)``, ``mcp__server``, ``mcp__server__*``,
   ``Agent(model:opus)``. ``parse_rule`` refuses anything else with
   ``RuleError`` and never raises another exception.
2. Evaluation: deny rules first, then ask, then allow; the first match wins
   and specificity does not matter, so a deny anywhere (any scope) beats an
   allow anywhere. Deny rules hold in every mode, bypassPermissions included.
3. Without a matching rule the mode decides: read-only tools are allowed;
   Write and Edit ask (acceptEdits allows them); Bash and everything else
   ask, except lines of read-only commands (``ls``, ``cat``, ``git rev-parse``...),
   which run without a prompt as in Claude Code: by allow-list (each program with
   its read-only options, no redirection of a compound, every path a glob or brace
   word can reach inside; git only where it reads objects and refs, as ``git
   status`` can run a repository's programs); plan mode denies every tool
   that is not read-only (lines that only read but may run repository code ask);
   bypassPermissions allows; dontAsk turns every "ask"
   into "deny". Launching a sub-agent (the ``Agent`` tool) needs no permission, as in
   Claude Code: the child's own tool calls are checked. Deny and ask rules
   (``Agent``, ``Agent(Explore)``, ``Agent(model:opus)``) still apply; plan
   mode allows only read-only sub-agent types (``read_only_agent_types``)
   without a worktree.
4. Protected paths: in every mode, bypassPermissions included, a write inside
   ``.git``, ``.agentloop``, ``.claude``, ``.vscode``, ``.idea``, ``.helix``, ``.zed``, the workspace's git
   directory (a worktree's ``.git`` file points elsewhere) or the agentloop home,
   or to ``.mcp.json`` or a shell start-up file, asks (dontAsk: denies), matched
   case-insensitively on the path as given and its real path. Only an allow rule
   naming that exact path (no pattern characters) allows it. A Bash line asks the
   same when a command of it that may write names a protected path; the script an
   interpreter or shell is given to run (``python3 .claude/skills/pdf/scripts/x.py``)
   is read, not written, and does not count (``script_argument``): the rule guards
   writes, not running what is there.
4b. Bash: the command line is read as bash reads it (``bash_reader.py``) and split
   into every command it would run, wrappers looked through, and each is
   checked; the line is allowed only when every command in it is. A line with
   an opaque part (its command cannot be known from the text) or that cannot
   be parsed is never allowed by a pattern rule, and asks whenever a Bash deny
   or ask rule exists, in every mode. "Always" at a prompt stores an exact rule
   (``add_exact``): the line as written, ``*`` included.
5. Bash patterns: ``*`` matches anything; a trailing `` *`` (or the legacy
   ``:*``) also matches the bare command but keeps the word boundary
   (``ls *`` matches ``ls -la``, not ``lsof``); no ``*`` means exact.
6. Path rules are gitignore patterns: ``//abs`` is absolute, ``~/x`` is in
   the home directory, ``/x`` is relative to the project the settings file
   belongs to, ``./x`` and ``x`` are relative to the working directory.
   ``Read`` rules cover Read, Glob, Grep and LS; ``Edit`` (and ``Write``)
   rules cover Write, Edit, MultiEdit and NotebookEdit. A path is judged by
   its real path and by the path as given, so a symlink does not dodge a deny.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ...config.settings import ConfigError, SettingsSource
from ...mcp.agent import RESOURCE_TOOLS
from ..subagents.agent_tool import AGENT
from ..tools import claude_names
from ..tools.builtin import BASH, EDIT, READ, WRITE
from ..tools.catalog import ALIASES, names_where, record_of
from .modes import MODES

if TYPE_CHECKING:
    import pathspec

    from ..sandbox.deny_exec import DeniedProgram
    from .bash_reader import Unit

# The shell reader (bash_reader: its tables and compiled patterns) is imported where a Bash
# command or a git config file is read, not with the rules: a start that runs no command skips it.


def _gitignore_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """A one-pattern gitignore matcher (pathspec is loaded only when a path rule exists)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])

__all__ = [
    "MODES",
    "default_mode",
    "bypass_disabled_by",
    "Decision",
    "ModeError",
    "PermissionPolicy",
    "PermissionSection",
    "Rule",
    "RuleError",
    "parse_rule",
]

Behavior = Literal["allow", "ask", "deny"]
_CLAUDE_CODE_READERS = claude_names.READERS
_CLAUDE_CODE_EDITORS = claude_names.EDITORS
"""Claude Code's tools that agentloop does not have, which rules may still name (they keep their meaning)."""
READ_ONLY_TOOLS = names_where(lambda r: not r.asks) | _CLAUDE_CODE_READERS
"""Tools allowed without a prompt, and in plan mode: those that only read, and the session's own bookkeeping
(their records' ``asks``; ``Skill`` only returns a skill's instructions)."""
EDIT_TOOLS = names_where(lambda r: r.rule == "edit") | _CLAUDE_CODE_EDITORS
"""The tools that write files (records' ``rule="edit"``): Edit and Write path rules cover them, acceptEdits allows them."""
AGENT_TOOL = AGENT.name
TOOL_ALIASES: Mapping[str, str] = ALIASES
"""Claude Code's old tool names, meaning the tool in rules (settings, ``--allowedTools``/``--disallowedTools``,
``allowed-tools``/``disallowed-tools``) and hook matchers. Sub-agents page: "In version 2.1.63, the Task tool was
renamed to Agent. Existing ``Task(...)`` references in settings and agent definitions still work as aliases."
Declared in the records (``ToolRecord.aliases``).
"""
_READ_RULE_TOOLS = names_where(lambda r: r.rule in ("read", "search")) | {claude_names.NOTEBOOK_READ}
"""What a ``Read(path)`` rule covers: Read and the tools that search (as in Claude Code)."""
_PATH_RULE_TOOLS = names_where(lambda r: bool(r.paths)) | _CLAUDE_CODE_EDITORS | {claude_names.NOTEBOOK_READ}
"""Tools whose rules take a path pattern: those with path arguments (records' ``paths``)."""
# The sets above are for reading; each decision asks the record itself (below), so every record counts.


def _edits(tool: str) -> bool:
    """Does ``tool`` write files (its record's ``rule="edit"``): Edit/Write path rules and acceptEdits apply."""
    return tool in _CLAUDE_CODE_EDITORS or _rule_kind(tool) == "edit"


def _takes_paths(tool: str) -> bool:
    """Do ``tool``'s rules take a path pattern (it has path arguments)?"""
    r = record_of(tool)
    return bool(r.paths) if r is not None else tool in _PATH_RULE_TOOLS


def _read_rule_covers(tool: str) -> bool:
    """Does a ``Read(path)`` rule cover ``tool`` (Read and the tools that search)?"""
    return _rule_kind(tool) in ("read", "search") or tool in _READ_RULE_TOOLS


def _looks_up(tool: str) -> bool:
    r = record_of(tool)
    return r is not None and r.lookup
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_\-*?.]+$")
_RULE = re.compile(r"^([^()\s]+)(?:\((.*)\))?$", re.DOTALL)
_PROBE_CHILD = "__agentloop_probe__"
_PROTECTED_DIRS = frozenset({".git", ".agentloop", ".claude", ".vscode", ".idea", ".helix", ".zed"})
"""Folders whose files configure what runs (git hooks, agent settings, hooks, commands, skills, the language
servers and tasks an editor starts on opening: the sandbox's ``gitguard.EDITOR_FOLDERS``):
writing in them asks in every mode. Compared case-insensitively (``.GIT/config``)."""
_PROTECTED_FILES = frozenset({
    ".mcp.json", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
    ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".logout",
    ".inputrc", ".envrc", ".gitconfig", "config.fish",
})
"""Files that start programs or shells (MCP servers, shell start-up files): writing them asks in every mode."""
_GLOB_CHARS = re.compile(r"[*?\[\]{}!]")
_REDIRECTION = re.compile(r"<>|>")

PLAN_MODE_LOOKUPS = names_where(lambda r: r.lookup)
"""Tools that change nothing here but reach the network: plan mode lets them be asked for (research is
part of planning, as in Claude Code's plan mode); they are not allowed without a rule or an answer."""


CLAUDE_CODE_TOOLS = (names_where(lambda r: True) | frozenset(ALIASES) | _CLAUDE_CODE_READERS | _CLAUDE_CODE_EDITORS
                     | claude_names.OTHERS | frozenset(RESOURCE_TOOLS))
"""Tool names a rule may name without warning, whether or not this session has the tool (the built-in tools, their
old names, and Claude Code's others)."""


def _rule_kind(tool: str) -> str:
    """How rules apply to ``tool`` (its record's ``rule``; ``tool`` for MCP and unknown tools)."""
    r = record_of(tool)
    return r.rule if r is not None else "tool"


class RuleError(ValueError):
    """A permission rule is malformed; the message says what is wrong with it."""


class ModeError(ValueError):
    """An unknown permission mode."""


@dataclass(frozen=True)
class Rule:
    """A parsed rule: the tool (or tool glob) and what the specifier means."""

    text: str
    tool: str
    specifier: str | None = None
    kind: Literal["tool", "bash", "path", "domain", "param", "content", "exact"] = "tool"
    param: str | None = None
    """For ``param`` rules: the input field; the value glob is in ``specifier``."""


def parse_rule(text: Any) -> Rule:
    """Parse one rule in Claude Code's syntax.

    Raises:
        RuleError: the rule is malformed (and nothing else, whatever ``text`` is).
    """
    try:
        return _parse_rule(text)
    except RuleError:
        raise
    except Exception as exc:  # a parser bug must not crash settings loading
        raise RuleError(f"cannot parse the rule {text!r}: {exc}") from None


def _parse_rule(text: Any) -> Rule:
    if not isinstance(text, str):
        raise RuleError(f"a rule must be a string, not {type(text).__name__}")
    t = text.strip()
    if not t:
        raise RuleError("a rule cannot be empty")
    if "\0" in t:
        raise RuleError(f"the rule {text!r} contains a NUL character")
    m = _RULE.match(t)
    if m is None:
        raise RuleError(f"malformed rule {text!r}: expected Tool or Tool(specifier)")
    tool, spec = m.group(1), m.group(2)
    if not _TOOL_NAME.match(tool):
        raise RuleError(f"malformed rule {text!r}: {tool!r} is not a tool name")
    tool = TOOL_ALIASES.get(tool, tool)
    if spec is None:
        return Rule(t, tool)
    if not spec.strip():
        raise RuleError(f"malformed rule {text!r}: empty parentheses (write just {tool})")
    if any(ch in tool for ch in "*?"):
        raise RuleError(f"malformed rule {text!r}: a tool-name pattern cannot take a specifier")
    kind = _rule_kind(tool)
    if kind == "bash":
        if spec.strip() in ("*", ":*"):
            return Rule(t, tool)
        return Rule(t, tool, spec.strip(), "bash")
    if _takes_paths(tool):
        if spec.strip() in ("*", "**"):
            return Rule(t, tool)
        try:
            _gitignore_spec(_strip_path_prefix(spec.strip())[1])
        except Exception as exc:
            raise RuleError(f"malformed rule {text!r}: not a valid path pattern ({exc})") from None
        return Rule(t, tool, spec.strip(), "path")
    if kind == "web":
        if not spec.startswith("domain:") or not spec[len("domain:") :].strip():
            raise RuleError(f"malformed rule {text!r}: WebFetch rules take domain:NAME")
        return Rule(t, tool, spec[len("domain:") :].strip().lower(), "domain")
    pm = re.match(r"^([A-Za-z_][A-Za-z0-9_\-]*):(.*)$", spec, re.DOTALL)
    if pm:
        return Rule(t, tool, pm.group(2), "param", pm.group(1))
    return Rule(t, tool, spec, "content")


def _strip_path_prefix(spec: str) -> tuple[str, str]:
    """(base kind, gitignore pattern): base is abs, home, project or cwd."""
    if spec.startswith("//"):
        return "abs", "/" + spec[2:].lstrip("/")
    if spec.startswith("~/"):
        return "home", "/" + spec[2:]
    if spec == "~":
        return "home", "/**"
    if spec.startswith("/"):
        return "project", spec
    if spec.startswith("./"):
        return "cwd", "/" + spec[2:]
    return "cwd", spec


# --- matching -----------------------------------------------------------------


def _glob(p: str, t: str) -> bool:
    """``*`` matches any run of characters (spaces included); O(len(p) * len(t)), no backtracking blow-up."""
    i = j = 0
    star = -1
    mark = 0
    while j < len(t):
        if i < len(p) and p[i] == "*":
            star, mark = i, j
            i += 1
        elif i < len(p) and p[i] == t[j]:
            i += 1
            j += 1
        elif star >= 0:
            i = star + 1
            mark += 1
            j = mark
        else:
            return False
    while i < len(p) and p[i] == "*":
        i += 1
    return i == len(p)


@dataclass(frozen=True)
class BashPattern:
    """A Bash rule's command pattern (see rule 5 above)."""

    body: str
    trailing: bool

    @classmethod
    def of(cls, pattern: str) -> BashPattern:
        p = " ".join(pattern.split())
        if p.endswith(":*"):
            p = p[:-2].rstrip() + " *"
        if p.endswith(" *"):
            return cls(p[:-2], True)
        return cls(p, False)

    @property
    def exact(self) -> bool:
        """No wildcard: the rule names one command text."""
        return not self.trailing and "*" not in self.body

    def match(self, text: str) -> bool:
        """Does the whole command text match?"""
        if _glob(self.body, text):
            return True
        return self.trailing and _glob(self.body + " *", text)


@dataclass
class _Bound:
    rule: Rule
    behavior: Behavior
    source: str
    base: str
    """For path rules: the directory the pattern is relative to."""
    matcher: Any = None

    def tool_matches(self, tool_name: str, server: str | None = None) -> bool:
        """``server``: the configured server of an MCP tool (``PermissionPolicy.mcp_servers``), None otherwise."""
        want = self.rule.tool
        if server is not None and want.startswith("mcp__"):
            return _mcp_rule_matches(want, tool_name, server)
        if any(ch in want for ch in "*?"):
            return fnmatch.fnmatchcase(tool_name, want)
        if want == tool_name:
            return True
        if self.rule.kind == "path":
            if want == READ.name:
                return _read_rule_covers(tool_name)
            if want in (EDIT.name, WRITE.name):
                return _edits(tool_name)
        if want.startswith("mcp__") and "__" not in want[len("mcp__") :]:
            return tool_name.startswith(want + "__")
        return False


def _mcp_rule_matches(want: str, tool_name: str, server: str) -> bool:
    """An ``mcp__…`` rule against a tool of ``server``: the rule's server part must be that exact name.

    ``mcp__a`` and ``mcp__a__*`` cover server ``a`` only, never server
    ``a__b`` (whose tools' names also start with ``mcp__a__``). A rule whose
    server part is a pattern (``mcp__*``, ``mcp__git*__read``) is matched as a
    pattern on the whole name.
    """
    own = f"mcp__{server}"
    if want == own:
        return True
    if want.startswith(own + "__"):
        if want == own + "__*":  # every tool of the server, suffixed or cut names included
            return True
        return fnmatch.fnmatchcase(tool_name, want) if any(ch in want for ch in "*?[") else tool_name == want
    if any(ch in want[len("mcp__") :].split("__", 1)[0] for ch in "*?["):
        return fnmatch.fnmatchcase(tool_name, want)
    return False


_CONVENTIONAL_PATHS = claude_names.PATH_ARGUMENTS


def _path_inputs(tool_name: str, tool_input: dict[str, Any], cwd: str) -> list[tuple[list[str], bool]]:
    """Every path a call touches, one entry per path argument given (records' ``paths``: ALL of them, so a second
    path is checked as the first is): the absolute path as given and real, and whether the target is a directory.
    A tool that searches the workspace when given no path (``default_path``) touches the workspace."""
    r = record_of(tool_name)
    keys = r.paths if r is not None else _CONVENTIONAL_PATHS
    searches = r is not None and r.default_path
    raws = [v for k in keys if isinstance(v := tool_input.get(k), str) and v]
    if not raws and searches:
        raws = [cwd]
    return [_path_target(raw, cwd, searches) for raw in raws]


def _path_target(raw: str, cwd: str, searches: bool) -> tuple[list[str], bool]:
    given = os.path.normpath(os.path.join(cwd, os.path.expanduser(raw)))
    try:
        real = os.path.realpath(given)
    except (ValueError, OSError):  # a NUL byte: no file has this name
        return [given], False
    paths = [given] if given == real else [given, real]
    return paths, os.path.isdir(real) or (searches and not os.path.isfile(real))


def _path_match(b: _Bound, paths: Sequence[str], is_dir: bool, *, probe: bool) -> bool:
    """Does the rule's pattern cover one of ``paths``?

    With ``probe``, a directory also matches when the pattern covers any
    child of it (``secrets/**`` covers a search of ``secrets/``).
    """
    spec: pathspec.GitIgnoreSpec = b.matcher
    for p in paths:
        rel = os.path.relpath(p, b.base)
        if rel == os.curdir:
            candidates = [_PROBE_CHILD] if is_dir and probe else []
        elif rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            continue
        else:
            rel = rel.replace(os.sep, "/")
            candidates = [rel]
            if is_dir:
                candidates.append(rel + "/")
                if probe:
                    candidates.append(rel + "/" + _PROBE_CHILD)
        if any(spec.match_file(c) for c in candidates):
            return True
    return False


def _param_value(tool_input: dict[str, Any], param: str) -> str | None:
    v = tool_input.get(param)
    if v is None:
        return None
    return v if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class PermissionSection:
    """A settings file's ``permissions``, parsed once (``agent/settings_sanitizer.py``): the policy takes this value."""

    rules: tuple[tuple[Behavior, str, Rule], ...] = ()
    """Each rule as written and parsed, in file order."""
    default_mode: str | None = None
    directories: tuple[str, ...] = ()
    """``additionalDirectories`` as written."""
    bypass_disabled: bool = False
    """``disableBypassPermissionsMode: "disable"``."""

    def restricted(self) -> PermissionSection:
        """What an untrusted folder's file keeps: its deny rules (they only take power away)."""
        return PermissionSection(tuple(r for r in self.rules if r[0] == "deny"))


@dataclass(frozen=True)
class Decision:
    """What to do with one tool call, and why."""

    behavior: Behavior
    rule: str | None
    """The rule that decided, or None when the mode decided."""
    source: str | None
    """The settings file the rule came from (``session`` for rules added at run time)."""
    reason: str
    by_mode: bool = False
    """An "ask" (or dontAsk's "deny") only because the mode decides for tools no rule covers: a PreToolUse
    hook's allow may skip it."""


def default_mode(sources: Sequence[SettingsSource]) -> str | None:
    """``permissions.defaultMode`` of the highest source that sets it (the one reading of the key; a file's
    ``permissions`` without one does not hide a lower file's: Claude Code merges settings key by key).

    Raises:
        ConfigError: a source names no permission mode.
    """
    mode = None
    for src in sources:
        parsed = src.section("permissions", PermissionSection)
        perms = src.data.get("permissions")
        dm = parsed.default_mode if parsed is not None else perms.get("defaultMode") if isinstance(perms, dict) else None
        if dm is None:
            continue
        if dm not in MODES:
            raise ConfigError(src.path, f"permissions.defaultMode {dm!r} is not one of {', '.join(MODES)}")
        mode = str(dm)
    return mode


def bypass_disabled_by(sources: Sequence[SettingsSource]) -> str | None:
    """The last source whose ``permissions.disableBypassPermissionsMode`` is ``"disable"`` (Claude Code: it
    "prevents bypassPermissions mode from being activated"), or None."""
    found = None
    for src in sources:
        parsed = src.section("permissions", PermissionSection)
        perms = src.data.get("permissions")
        if parsed.bypass_disabled if parsed is not None else (
                isinstance(perms, dict) and perms.get("disableBypassPermissionsMode") == "disable"):
            found = src.path
    return found


@dataclass
class PermissionPolicy:
    """The rules in effect and the mode; ``decide`` answers for one tool call."""

    mode: str = "default"
    cwd: str = "."
    rules: list[_Bound] = field(default_factory=list)
    additional_directories: list[str] = field(default_factory=list)
    """From ``permissions.additionalDirectories`` of every source, as absolute paths."""
    read_only_tools: frozenset[str] = READ_ONLY_TOOLS
    """Tools that change nothing: allowed by default, and all plan mode permits."""
    read_only_agent_types: frozenset[str] = frozenset()
    """Sub-agent types whose tools change nothing (``Explore``): the ones plan mode may launch."""
    user_home: str = field(default_factory=lambda: os.path.expanduser("~"))
    protected_roots: list[str] = field(default_factory=list)
    """Folders every file of which is protected (the user's agentloop home), as real paths."""
    _git_dirs: list[str] | None = None
    mcp_servers: Callable[[str], str | None] | None = None
    """The configured server of an MCP tool by its name (the agent's MCP manager), so rules match servers exactly."""
    managed_rules_only: str | None = None
    """The managed settings file that sets ``allowManagedPermissionRulesOnly``: allow and ask rules come from managed
    settings only (``managed_only``); None when it is not set."""
    notes: list[str] = field(default_factory=list)
    """What of the rules given was not taken, and why (one line each)."""
    shell_dirs: tuple[Callable[[], str | None], ...] = ()
    """Where the Bash shells this policy guards stand now (``cd`` carries over from one call to the next): a
    read-only line's relative paths are judged from there (``cd src/d`` then ``cat link/x``); None: a shell gone."""

    shell_env: Mapping[str, str] | None = None
    """The environment Bash's shell starts with (``ToolSetup.env``); None: this process's. A read-only line is
    judged in it (``CDPATH``), and asks when a variable of it differs from ``trusted_env`` and is not on
    ``_INERT_ENV`` (a project's ``env`` or a hook's export setting ``BASH_ENV``, ``PATH``, ``GIT_DIR``...)."""
    trusted_env: Mapping[str, str] | None = None
    """The environment the user chose (theirs, with their own settings' ``env``); None: this process's."""

    def follow_env(self, env: Mapping[str, str] | None, trusted: Mapping[str, str] | None = None) -> None:
        """Judge read-only lines in the environment Bash's shell gets (``env``, read at each decision: hooks may
        add to it), trusting the variables whose value ``trusted`` gives (``toolbox._policy``)."""
        self.shell_env, self.trusted_env = env, trusted

    def _env_steers(self) -> str | None:
        """A variable of Bash's environment the user did not choose (it differs from ``trusted_env``: a project's
        settings ``env`` or a hook's export set it) and not known to leave read-only programs reading only what
        the line names: an allow-list, so ``BASH_ENV`` (a script bash runs first), ``PATH`` (``cat`` a workspace
        file), ``CDPATH``, ``GIT_DIR``, ``MAGIC``, ``RIPGREP_CONFIG_PATH`` (``--pre``) or any variable not known
        here makes the line ask. None: none does."""
        if self.shell_env is None:
            return None
        trusted = os.environ if self.trusted_env is None else self.trusted_env
        for k, v in self.shell_env.items():
            if trusted.get(k) == v:
                continue
            if not (k in _INERT_ENV or k.startswith("LC_")) or not _INERT_VALUE.match(v):
                return k
        return None

    def follow_shell(self, where: Callable[[], str | None]) -> None:
        """Judge relative paths of read-only lines from the shell ``where()`` names (``builtin_registry``)."""
        self.shell_dirs = (*[w for w in self.shell_dirs if w() is not None], where)

    def managed_only(self, behavior: str, source: str) -> bool:
        """True (and a note) for an allow or ask rule from anywhere but managed settings while
        ``allowManagedPermissionRulesOnly`` holds. Settings reference: "When true, prevents user and project
        settings from defining allow, ask, or deny permission rules. Only rules in managed settings apply."
        agentloop keeps every deny rule (it only takes power away): README, "For Claude Code users"."""
        if self.managed_rules_only is None or behavior == "deny":
            return False
        self.notes.append(f"{source}: {behavior} rules not applied: {self.managed_rules_only} sets allowManagedPermissionRulesOnly")
        return True

    @classmethod
    def from_settings(
        cls,
        sources: Iterable[SettingsSource],
        *,
        mode: str | None = None,
        cwd: str,
        read_only_tools: Iterable[str] | None = None,
        user_home: str | None = None,
    ) -> PermissionPolicy:
        """The policy of the settings files (lowest precedence first), ``mode`` overriding theirs.

        Raises:
            ConfigError: a malformed ``permissions`` section, naming the file and the rule.
            ModeError: ``mode`` is not a known mode.
        """
        cwd = os.path.realpath(os.path.abspath(cwd))
        policy = cls(
            cwd=cwd,
            read_only_tools=frozenset(read_only_tools) if read_only_tools is not None else READ_ONLY_TOOLS,
            user_home=os.path.realpath(user_home or os.path.expanduser("~")),
        )
        chosen = "default"
        sources = list(sources)
        policy.managed_rules_only = next((s.path for s in sources if s.scope == "managed"
                                          and s.data.get("allowManagedPermissionRulesOnly") is True), None)
        for src in sources:
            parsed = src.section("permissions", PermissionSection)
            if parsed is not None:
                chosen = policy._take(parsed, src) or chosen
                continue
            perms = src.data.get("permissions")
            if perms is None:
                continue
            if not isinstance(perms, dict):
                raise ConfigError(src.path, "\"permissions\" must be an object")
            for key in ("deny", "ask", "allow"):
                entries = perms.get(key, [])
                if not isinstance(entries, list):
                    raise ConfigError(src.path, f"permissions.{key} must be a list of rules")
                if entries and src.scope != "managed" and policy.managed_only(key, src.path):
                    continue
                for i, text in enumerate(entries):
                    try:
                        policy.add_rule(key, text, source=src.path)
                    except RuleError as exc:
                        raise ConfigError(src.path, f"permissions.{key}[{i}]: {exc}") from None
            chosen = default_mode([src]) or chosen
            dirs = perms.get("additionalDirectories", [])
            if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
                raise ConfigError(src.path, "permissions.additionalDirectories must be a list of paths")
            for d in dirs:
                full = os.path.realpath(os.path.join(cwd, os.path.expanduser(d)))
                if full not in policy.additional_directories:
                    policy.additional_directories.append(full)
        if mode is not None:
            if mode not in MODES:
                raise ModeError(f"unknown permission mode {mode!r} (expected one of: {', '.join(MODES)})")
            chosen = mode
        policy.mode = chosen
        return policy

    def _take(self, parsed: PermissionSection, src: SettingsSource) -> str | None:
        """Add a sanitized source's parsed rules and directories; returns its ``defaultMode``."""
        for key in ("deny", "ask", "allow"):
            rules = [(text, rule) for b, text, rule in parsed.rules if b == key]
            if rules and src.scope != "managed" and self.managed_only(key, src.path):
                continue
            for text, rule in rules:
                self.add_rule(key, text, source=src.path, parsed=rule)
        for d in parsed.directories:
            full = os.path.realpath(os.path.join(self.cwd, os.path.expanduser(d)))
            if full not in self.additional_directories:
                self.additional_directories.append(full)
        return parsed.default_mode

    def set_mode(self, mode: str) -> None:
        """Switch mode (e.g. from the REPL).

        Raises:
            ModeError: unknown mode.
        """
        if mode not in MODES:
            raise ModeError(f"unknown permission mode {mode!r} (expected one of: {', '.join(MODES)})")
        self.mode = mode

    def add_rule(self, behavior: Behavior, text: str, *, source: str = "session", parsed: Rule | None = None) -> Rule:
        """Add one rule (e.g. "always allow" answered at a prompt) and return it; ``parsed``: ``text`` already parsed.

        Raises:
            RuleError: malformed rule.
        """
        if behavior not in ("allow", "ask", "deny"):
            raise RuleError(f"unknown behavior {behavior!r}")
        rule = parse_rule(text) if parsed is None else parsed
        base = self.cwd
        matcher: Any = None
        if rule.kind == "path":
            assert rule.specifier is not None
            where, pattern = _strip_path_prefix(rule.specifier)
            if where == "abs":
                base = os.sep
            elif where == "home":
                base = self.user_home
            elif where == "project":
                base = _project_base(source, self.cwd)
            matcher = _gitignore_spec(pattern)
        elif rule.kind == "bash":
            assert rule.specifier is not None
            matcher = BashPattern.of(rule.specifier)
        self.rules.append(_Bound(rule, behavior, source, base, matcher))
        return rule

    def add_exact(self, behavior: Behavior, tool: str, value: str, *, source: str = "session") -> Rule:
        """A rule matching exactly one call: for Bash the whole command line as written, for the
        file tools one file's real path. Nothing in ``value`` is a pattern: ``*`` is a star.

        "Always" at a prompt stores one of these, so approving ``rm tmpd/*.tmp`` never approves
        ``rm tmpd/../important.txt tmpd/x.tmp``.
        """
        if _edits(tool) or _takes_paths(tool):
            value = os.path.realpath(os.path.join(self.cwd, os.path.expanduser(value)))
        rule = Rule(f"{tool}({value})", tool, value, "exact")
        self.rules.append(_Bound(rule, behavior, source, self.cwd, None))
        return rule

    def rooted_at(self, old_root: str, new_root: str) -> PermissionPolicy:
        """The same rules for a copy of ``old_root`` at ``new_root`` (a sub-agent's worktree): the working
        directory and every rule based in ``old_root`` (a pattern relative to the project, an exact path)
        moved to the same place in the copy, so ``Edit(secret/**)`` denies ``secret/`` of the worktree as
        it does the parent's. Rules based elsewhere, and the additional directories, stay as they are."""
        old, new = os.path.realpath(old_root), os.path.realpath(new_root)

        def moved(path: str) -> str:
            real = os.path.realpath(path)
            if real == old or real.startswith(old + os.sep):
                return os.path.join(new, os.path.relpath(real, old)) if real != old else new
            return path

        rules = []
        for b in self.rules:
            if b.rule.kind == "exact" and (_edits(b.rule.tool) or _takes_paths(b.rule.tool)) and b.rule.specifier:
                spec = moved(b.rule.specifier)
                b = dataclasses.replace(b, rule=dataclasses.replace(b.rule, text=f"{b.rule.tool}({spec})", specifier=spec))
            rules.append(dataclasses.replace(b, base=moved(b.base)))
        return dataclasses.replace(self, cwd=moved(self.cwd), rules=rules, _git_dirs=None)
    def denied_programs(self) -> list[DeniedProgram]:
        """The programs Bash deny rules name as a whole (``Bash(rm:*)``, ``Bash(rm *)``): the sandbox masks
        them where programs start (``sandbox.deny_exec``). A rule naming a subcommand or arguments
        (``Bash(git push:*)``) or a pattern in the name is enforced by reading the line only."""
        from ..sandbox.deny_exec import DeniedProgram

        out = []
        for b in self.rules:
            m = b.matcher
            if b.behavior == "deny" and _rule_kind(b.rule.tool) == "bash" and isinstance(m, BashPattern) and m.trailing:
                if m.body and " " not in m.body and not any(ch in m.body for ch in "*?[\\'\"$`"):
                    out.append(DeniedProgram(m.body, b.rule.text))
        return out

    def check_names(self, known: Iterable[str]) -> list[str]:
        """A warning for each rule of the settings that names no tool (``known``: the tools of the session,
        besides ``CLAUDE_CODE_TOOLS``), so it can never match. A deny or ask rule whose tool differs from a
        known one only in case (``bash(rm:*)``) fails closed: it is added again under the name it obviously
        means, and the warning says so; such an allow rule allows nothing."""
        names = set(known) | CLAUDE_CODE_TOOLS
        out = []
        for b in list(self.rules):
            t = b.rule.tool
            if b.source == "session" or t in names or t.startswith("mcp__") or any(c in t for c in "*?"):
                continue
            meant = next((n for n in sorted(names) if n.lower() == t.lower()), None)
            where = f"{b.rule.text} ({b.source})"
            if meant is None:
                out.append(f"the {b.behavior} rule {where} can never match: no tool is named {t!r}")
                continue
            fixed = meant + b.rule.text.strip()[len(t):]
            if b.behavior == "allow":
                out.append(f"the allow rule {where} can never match: tool names are case-sensitive ({t!r} is not "
                           f"{meant!r}); it allows nothing, write {fixed}")
                continue
            if not any(x.rule.text == fixed and x.behavior == b.behavior for x in self.rules):
                self.add_rule(b.behavior, fixed, source=b.source)
            out.append(f"the {b.behavior} rule {where} names no tool: tool names are case-sensitive ({t!r} is not "
                       f"{meant!r}); it is enforced as {fixed}, failing closed; write it so")
        return out

    def describe(self) -> list[tuple[str, str, str]]:
        """(behavior, rule, source path) of every rule, deny first, then ask, then allow."""
        order = {"deny": 0, "ask": 1, "allow": 2}
        return [
            (b.behavior, b.rule.text, b.source)
            for b in sorted(self.rules, key=lambda b: order[b.behavior])
        ]

    def visible(self) -> Callable[[str], bool]:
        """A ``visible(path)`` callback for the file tools: False for paths Read-deny rules cover."""

        def check(path: str) -> bool:
            # Read at each call, so rules added during the session count too.
            deny_paths = [b for b in self.rules if b.behavior == "deny" and b.rule.kind == "path" and b.tool_matches(READ.name)]
            if not deny_paths:
                return True
            paths = [path]
            try:
                real = os.path.realpath(path)
            except (ValueError, OSError):
                return False
            if real != path:
                paths.append(real)
            is_dir = os.path.isdir(real)
            return not any(_path_match(b, paths, is_dir, probe=False) for b in deny_paths)

        return check

    # -- the decision --

    def decide(self, tool_name: str, tool_input: dict[str, Any]) -> Decision:
        """Allow, ask or deny one call, with the rule and file that decided."""
        if not isinstance(tool_input, dict):
            tool_input = {}
        bash = _BashView.of(tool_input) if _rule_kind(tool_name) == "bash" else None
        for behavior in ("deny", "ask"):
            for b in self.rules:
                if b.behavior == behavior and self._matches(b, tool_name, tool_input, bash, for_allow=False):
                    if behavior == "ask" and self.mode == "dontAsk":
                        return Decision("deny", b.rule.text, b.source, f"{tool_name} needs approval, and the mode is dontAsk")
                    verb = "denied" if behavior == "deny" else "needs approval"
                    return Decision(behavior, b.rule.text, b.source, f"{tool_name} {verb} by the rule {b.rule.text} ({b.source})")
        if tool_name == AGENT_TOOL:
            return self._agent_decision(tool_input)
        read_only_bash = bash is not None and _read_only_line(bash)
        if read_only_bash and bash is not None:
            denied = self._read_denied_argument(bash)
            if isinstance(denied, _Bound):
                return Decision("deny", denied.rule.text, denied.source,
                                f"Bash would read a file the rule {denied.rule.text} ({denied.source}) denies")
            read_only_bash = not denied and self._outside_path(bash) is None and not self._repo_runs_programs(bash)
            read_only_bash = read_only_bash and self._env_steers() is None  # judged in the environment Bash gets
        reads = read_only_bash or (bash is not None and _read_only_line(bash, READ_ONLY_GIT | GIT_READS_WORK_TREE))
        if self.mode == "plan" and tool_name not in self.read_only_tools and not _looks_up(tool_name) and not reads:
            return Decision("deny", None, None, f"plan mode: {tool_name} could change things, so it is not run")
        protected = self.protected_target(tool_name, tool_input)
        if protected is not None:
            exact = self._exact_path_allow(tool_name, tool_input)
            if exact is not None:
                return Decision("allow", exact.rule.text, exact.source, f"{tool_name} allowed by the rule {exact.rule.text} ({exact.source}), which names this path")
            return self._ask(f"{tool_name} would write {protected}, a protected path: every mode asks, and only an allow rule naming this exact path allows it")
        if bash is not None and not read_only_bash:
            named = self._bash_protected(bash)
            if named is not None and not any(
                b.behavior == "allow" and b.rule.kind == "exact" and b.rule.specifier == bash.command for b in self.rules
            ):
                return self._ask(f"Bash names {named}, a protected path, in a command that may write it: every mode asks")
        unknown = self._unknown(bash) if bash is not None else []
        if unknown and self._has_bash_rules():
            return self._ask(f"Bash: {unknown[0]}; with Bash deny or ask rules in force, a line whose commands cannot all be known needs approval")
        if self.mode == "bypassPermissions":
            return Decision("allow", None, None, "bypassPermissions mode")
        if bash is not None:
            allowed = self._bash_allowed(tool_input, bash)
            if allowed is not None:
                return allowed
            if read_only_bash:
                return Decision("allow", None, None, "Bash: every command of the line only reads")
        else:
            for b in self.rules:
                if b.behavior == "allow" and self._matches(b, tool_name, tool_input, None, for_allow=True):
                    return Decision("allow", b.rule.text, b.source, f"{tool_name} allowed by the rule {b.rule.text} ({b.source})")
        if tool_name in self.read_only_tools:
            return Decision("allow", None, None, f"{tool_name} only reads")
        if _edits(tool_name) and self.mode == "acceptEdits":
            return Decision("allow", None, None, "acceptEdits mode allows file edits")
        if self.mode == "dontAsk":  # by the mode alone: a PreToolUse hook's "allow" pre-approves it (by_mode)
            return Decision("deny", None, None, f"{tool_name} needs approval, and the mode is dontAsk", by_mode=True)
        note = self._why_not_read_only(bash) if bash is not None and _read_only_line(bash, READ_ONLY_GIT | GIT_READS_WORK_TREE) else ""
        return Decision("ask", None, None, f"{tool_name} needs approval in {self.mode} mode{note}", by_mode=True)

    def _agent_decision(self, tool_input: dict[str, Any]) -> Decision:
        """A sub-agent launch that no deny or ask rule matched: allowed (plan mode: read-only types only)."""
        if self.mode == "plan":
            kind = tool_input.get("subagent_type", "general-purpose")
            if kind in self.read_only_agent_types and tool_input.get("isolation") is None:
                return Decision("allow", None, None, f"plan mode: the {kind} sub-agent only reads")
            return Decision("deny", None, None, f"plan mode: a {kind} sub-agent could change things, so it is not started")
        return Decision("allow", None, None, "starting a sub-agent needs no permission; its own tool calls are checked")

    def removed_tools(self, names: Iterable[str]) -> list[str]:
        """The tools a bare-name deny rule (``Bash``, ``mcp__db__*``) removes from the model's view."""
        bare = [b for b in self.rules if b.behavior == "deny" and b.rule.kind == "tool"]
        return [n for n in names if any(b.tool_matches(n, self._server(n)) for b in bare)]

    def _server(self, tool_name: str) -> str | None:
        return self.mcp_servers(tool_name) if self.mcp_servers is not None and tool_name.startswith("mcp__") else None

    def _bash_protected(self, bash: _BashView) -> str | None:
        """A protected path a Bash line names as a literal argument or redirection target of a command
        that is not read-only (``> .git/hooks/x``, ``cp h .agentloop/settings.json``, ``rm -rf .GIT``).

        Best effort: a path built at run time, or reached after a ``cd``, is not seen (the sandbox is the wall).
        A line naming more than ``MAX_PATH_CHECKS`` different words is not checked word by word (each is
        resolved on disk): it counts as naming one, so it asks (the decision stays linear in time).
        """
        seen: set[str] = set()
        for u in bash.units or []:
            simple = u.simple
            if simple is None:
                continue
            read_only = bool(simple.words) and "/" not in simple.words[0] and _read_only_words(simple.words)
            candidates = [t for op, t in simple.redirects if op not in ("<", "<<", "<<-", "<<<", "<&")]
            if not read_only:
                script = script_argument(simple.words)
                candidates += [w for i, (w, lit) in enumerate(zip(simple.words[1:], simple.lits[1:]), 1)
                               if lit and not w.startswith("-") and i != script]
            for w in candidates:
                if w in seen:
                    continue
                seen.add(w)
                if len(seen) > MAX_PATH_CHECKS:
                    return f"more than {MAX_PATH_CHECKS} paths (too many to check each)"
                if w.startswith("~/"):
                    w = os.path.join(self.user_home, w[2:])
                found = self.protected_target(WRITE.name, {WRITE.paths[0]: w})
                if found is not None:
                    return found
        return None

    def _why_not_read_only(self, bash: _BashView) -> str:
        """Why a line of read-only commands was not auto-approved, for the prompt (empty: no such reason)."""
        steers = self._env_steers()
        if steers is not None:
            return (f"; the line only reads, but Bash's environment sets {steers} (a project's settings env or a hook's"
                    " export), which can change what a read-only program runs or opens")
        outside = self._outside_path(bash)
        if outside is not None:
            return f"; the line only reads, but names {outside!r}, outside the workspace and the added directories"
        if self._repo_runs_programs(bash):
            return ("; the line only reads, but its git would use a repository outside the workspace, or one whose"
                    " configuration names programs git would run")
        if not _read_only_line(bash):
            return "; the line only reads, but this git command can run programs a repository names (hooks, fsmonitor, textconv)"
        return ""

    def _outside_path(self, bash: _BashView) -> str | None:
        """For a read-only line: the first path it names outside the workspace and the added directories
        (``cat ~/secret.txt``, ``ls ../other``, ``cd`` alone), or an argument whose value cannot be known
        (``$HOME/x``, ``< $(rev <<< x)``); None when every path stays inside. Checked as given and as its real
        path, from every folder a ``cd`` of the line can lead to (``cd src/d && cat link/x``), in any order."""
        roots = [self.cwd, *self.additional_directories]

        def inside(p: str) -> bool:
            return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

        bases = self._cd_bases(bash)
        if isinstance(bases, str):
            return bases
        outside_base = next((b for b in bases if not inside(b)), None)
        if outside_base is not None:
            return outside_base
        seen = 0
        for u in bash.units or []:
            simple = u.simple
            if simple is None:
                continue
            if simple.words[0] in ("cd", "pushd") and simple.words[1:2] in ([], ["-"], ["--"]):
                return "cd to the home folder"
            for found in _path_candidates(simple.words[0], simple.words[1:], simple.lits[1:], simple.redirects,
                                          simple.redirect_lits, simple.unsure):
                if found is None:
                    return "an argument this check cannot resolve"
                c, pattern = found
                if c in _HARMLESS_DEVICES:
                    continue
                if c.startswith("~"):
                    if c != "~" and not c.startswith("~/"):
                        return c  # another user's home
                    c = self.user_home + c[1:]
                for base in bases if not c.startswith(os.sep) else bases[:1]:
                    paths = _glob_reach(os.path.join(base, c), MAX_PATH_CHECKS - seen) if pattern else [c]
                    if paths is None:
                        return f"{c} (a pattern that can match more than this check resolves)"
                    for p in paths:
                        seen += 1
                        if seen > MAX_PATH_CHECKS:
                            return "an argument this check cannot resolve"
                        given = os.path.normpath(os.path.join(base, p))
                        try:  # from the path as written: "link/.." is the link target's parent, not "."
                            real = os.path.realpath(os.path.join(base, p))
                        except (ValueError, OSError):
                            real = given
                        if not inside(given) or not inside(real):
                            return c
        return None

    def _cd_bases(self, bash: _BashView) -> list[str] | str:
        """Every folder the line's commands may run in: the workspace, and what each ``cd`` of the line leads to
        from any of these (a closure, so order, loops, subshells and ``||`` need no following), logically and
        physically, through ``CDPATH`` too. A reason (str) when a target cannot be known or they are too many."""
        targets: list[tuple[str, bool]] = []
        for u in bash.units or []:
            simple = u.simple
            if simple is None or simple.words[0] != "cd":
                continue
            for found in _path_candidates("cd", simple.words[1:], simple.lits[1:], [], [], simple.unsure):
                if found is None:
                    return "a cd whose folder this check cannot resolve"
                if not found[0].startswith("-"):
                    targets.append(found)
        if len(targets) > MAX_CD_BASES:
            return f"more than {MAX_CD_BASES} cd targets (too many to follow each)"
        env = os.environ if self.shell_env is None else self.shell_env
        cdpath = [e for e in env.get("CDPATH", "").split(":") if e]
        roots = [self.cwd, *self.additional_directories]
        starts: list[str] = []
        for where in self.shell_dirs:  # where the next command starts (tools/builtin._bash: the root if that is gone)
            now = where()
            if now is None:
                continue  # those tools are gone
            here = os.path.realpath(now)
            if not os.path.isdir(here):
                starts.append(self.cwd)
            elif any(here == r or here.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
                starts.append(here)  # a shell outside these roots is another root's (the parent's, seen from a worktree)
        bases = list(dict.fromkeys(starts)) or [self.cwd]
        k = 0
        while k < len(bases):  # each base is expanded once; new ones are appended
            base = bases[k]
            k += 1
            for c, pattern in targets:
                c = self.user_home + c[1:] if c == "~" or c.startswith("~/") else c
                ways = [c] + ([os.path.join(e, c) for e in cdpath] if not c.startswith(("/", "./", "../", "~")) else [])
                for way in ways:
                    reach = _glob_reach(os.path.join(base, way), MAX_CD_BASES) if pattern else [os.path.join(base, way)]
                    if reach is None:
                        return f"a cd to {c} (a pattern that can match more than this check resolves)"
                    for p in reach:
                        for b in (os.path.realpath(os.path.normpath(p)), os.path.realpath(p)):
                            if os.path.isdir(b) and b not in bases:  # a cd to no folder leaves the shell where it is
                                bases.append(b)
                if len(bases) > MAX_CD_BASES:
                    return f"more than {MAX_CD_BASES} folders the line's cd commands can lead to"
        return bases

    def _repo_runs_programs(self, bash: _BashView) -> bool:
        """Does a read-only line run git in a repository whose own configuration names programs git may run
        (``core.fsmonitor`` on ``git status``, ``diff.external`` on ``git diff``, textconv, filters, a pager)?

        Such a line is not auto-approved in any sandbox mode: the repository's code would run unasked.
        The configuration read is the repository's (``config``, ``config.worktree``, of the git directory
        and of its common directory), not the user's own files; an unreadable or oversized one counts.
        """
        if not any(u.simple is not None and u.simple.words[0] == "git" for u in bash.units or []):
            return False
        files: list[str] = []
        self._git_dirs = None  # looked up again: a repository may have been created since the last decision
        own = self._git_directories()
        bases = self._cd_bases(bash)
        if isinstance(bases, str):
            return True
        roots = [self.cwd, *self.additional_directories]
        reached = list(own)
        for base in bases:  # the repository git finds from each folder the line's git may run in
            top = _git_top_from(base)
            if top is not None and not any(top == r or top.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
                return True  # a workspace inside a larger repository: "git cat-file -p HEAD:../secret" reads above it
            if top is not None and _gitfile_points_away(top, roots):
                return True  # a .git file naming another repository, the workspace's own included
            for d in _git_dirs_from(base):
                if d not in own and not any(d == r or d.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
                    return True  # a .git file in the workspace naming a repository elsewhere: not this workspace's
                if _borrows_objects(d, [*roots, *own]):
                    return True  # objects/info/alternates lends it another's objects (the workspace's own included)
                reached.append(d)
        for d in dict.fromkeys(reached):
            files += [os.path.join(d, "config"), os.path.join(d, "config.worktree")]
            # git status looks into submodules, each with a configuration of its own
            for top, dirs, names in os.walk(os.path.join(d, "modules")):
                files += [os.path.join(top, n) for n in names if n in ("config", "config.worktree")]
                if len(files) > 200:
                    return True
                dirs[:] = [x for x in dirs if x not in ("objects", "refs", "logs", "hooks", "info")]
        for path in files:
            try:
                with open(path, "rb") as f:
                    data = f.read(_MAX_GIT_CONFIG + 1)
            except FileNotFoundError:
                continue
            except OSError:
                return True
            if len(data) > _MAX_GIT_CONFIG or _config_names_program(data.decode("utf-8", "replace")):
                return True
        return False

    def _read_denied_argument(self, bash: _BashView) -> _Bound | bool:
        """For a read-only line: the Read deny rule one of its arguments falls under, True when an
        argument is expanded (a glob, a variable) while Read deny rules exist, else False.

        Claude Code applies Read deny rules to the file commands it recognizes in Bash (``cat``...).
        """
        rules = [b for b in self.rules if b.behavior == "deny" and b.rule.kind == "path" and b.tool_matches(READ.name)]
        if not rules:
            return False
        bases = self._cd_bases(bash)  # relative paths from every folder the shell may stand in ("cd secrets; cat k")
        if isinstance(bases, str):
            return True
        checked = 0
        for u in bash.units or []:
            s = u.simple
            if s is None:
                continue
            for found in _path_candidates(s.words[0], s.words[1:], s.lits[1:], s.redirects, s.redirect_lits, s.unsure):
                checked += 1
                if checked > MAX_PATH_CHECKS or found is None or found[1]:
                    return True  # expanded (a glob, a variable), or too many to resolve each: not auto-approved
                c = found[0]
                if c.startswith("~"):
                    if c != "~" and not c.startswith("~/"):
                        return True
                    c = self.user_home + c[1:]
                for base in bases if not c.startswith(os.sep) else bases[:1]:
                    given = os.path.normpath(os.path.join(base, c))
                    try:
                        real = os.path.realpath(os.path.join(base, c))
                    except (ValueError, OSError):
                        real = given
                    paths = [given] if real == given else [given, real]
                    for b in rules:
                        if _path_match(b, paths, os.path.isdir(real), probe=True):
                            return b
        return False

    def _ask(self, reason: str) -> Decision:
        if self.mode == "dontAsk":
            return Decision("deny", None, None, f"{reason}; the mode is dontAsk")
        return Decision("ask", None, None, reason)

    def _has_bash_rules(self) -> bool:
        """Is any deny or ask rule about particular Bash commands in force?"""
        return any(b.behavior in ("deny", "ask") and b.rule.kind in ("bash", "exact") and b.tool_matches(BASH.name) for b in self.rules)

    def protected_target(self, tool_name: str, tool_input: dict[str, Any]) -> str | None:
        """The protected path an edit would write (inside ``.git``, ``.agentloop``, ``.claude``, the
        agentloop home, the workspace's git directory; or ``.mcp.json``, a shell start-up file), if any.

        The path is judged as given (``..`` resolved) and as its real path (symlinks followed),
        case-insensitively, so ``.GIT/config``, ``src/../.git/hooks/x`` and a link into ``.git`` are all caught.
        """
        if not _edits(tool_name):
            return None
        for p in (p for paths, _ in _path_inputs(tool_name, tool_input, self.cwd) for p in paths):
            parts = p.split(os.sep)
            for i, part in enumerate(parts):
                low = part.lower()
                if low in _PROTECTED_DIRS:
                    return os.sep.join(parts[: i + 1]) + (os.sep if i < len(parts) - 1 else "")
            if parts and parts[-1].lower() in _PROTECTED_FILES:
                return p
            # the home's start-up files, ~/.ssh, ~/.claude.json
            from ..tools.workspace import protected_in_home

            started = protected_in_home(p)
            if started is not None:
                return started
            low_p = os.path.normcase(p).lower()
            low_cwd = self.cwd.lower().rstrip(os.sep)
            for root in [*self.protected_roots, *self._git_directories()]:
                r = root.lower().rstrip(os.sep)
                if low_p == r or low_p.startswith(r + os.sep):
                    if low_cwd.startswith(r + os.sep) and low_p.startswith(low_cwd + os.sep):
                        continue  # a workspace inside the agentloop home: its own files stay writable
                    return root + os.sep
        return None

    def _git_directories(self) -> list[str]:
        """The git directories of the workspace (a worktree's ``.git`` file points elsewhere)."""
        if self._git_dirs is None:
            self._git_dirs = _git_dirs_from(self.cwd)
        return self._git_dirs

    def _exact_path_allow(self, tool_name: str, tool_input: dict[str, Any]) -> _Bound | None:
        """An allow rule naming exactly the file this edit writes (no pattern characters), if any; for an edit
        of several paths, each must be so named (the rule returned is the first path's)."""
        targets = _path_inputs(tool_name, tool_input, self.cwd)
        found = [self._exact_allow_of(tool_name, paths[-1], is_dir) for paths, is_dir in targets]
        return found[0] if found and all(b is not None for b in found) else None

    def _exact_allow_of(self, tool_name: str, real: str, is_dir: bool) -> _Bound | None:
        for b in self.rules:
            if b.behavior != "allow" or not b.tool_matches(tool_name):
                continue
            if b.rule.kind == "exact" and b.rule.specifier == real:
                return b
            if b.rule.kind == "path" and b.rule.specifier and not _GLOB_CHARS.search(b.rule.specifier):
                if _path_match(b, [real], is_dir, probe=False) and self._names(b, real):
                    return b
        return None

    def _names(self, b: _Bound, real: str) -> bool:
        """Does the path rule's text, resolved as rule 6 says, name ``real`` itself (not a folder above it)?"""
        assert b.rule.specifier is not None
        where, pattern = _strip_path_prefix(b.rule.specifier)
        return os.path.normpath(os.path.join(b.base, pattern.lstrip("/"))) == real

    def _matches(
        self, b: _Bound, tool_name: str, tool_input: dict[str, Any], bash: _BashView | None, *, for_allow: bool
    ) -> bool:
        if not b.tool_matches(tool_name, self._server(tool_name)):
            return False
        kind = b.rule.kind
        if kind == "tool":
            return True
        if kind == "exact":
            if bash is not None:
                return bash.command == b.rule.specifier
            named = [paths[-1] == b.rule.specifier for paths, _ in _path_inputs(tool_name, tool_input, self.cwd)]
            # deny and ask hold when any path is the one named; allow only when every path is
            return bool(named) and (all(named) if for_allow else any(named))
        if kind == "bash":
            if bash is None:
                return False
            pat: BashPattern = b.matcher
            return any(pat.match(text) for text in bash.deny_texts)
        if kind == "path":
            targets = _path_inputs(tool_name, tool_input, self.cwd)
            if not targets:
                return False
            if for_allow:
                # Allow judges the real path only, and a directory must itself match; every path must be allowed.
                return all(_path_match(b, paths[-1:], is_dir, probe=False) for paths, is_dir in targets)
            return any(_path_match(b, paths, is_dir, probe=True) for paths, is_dir in targets)
        if kind == "domain":
            url = tool_input.get("url")
            if not isinstance(url, str):
                return False
            try:
                host = (urlsplit(url).hostname or "").lower()
            except ValueError:
                return not for_allow
            assert b.rule.specifier is not None
            return bool(host) and fnmatch.fnmatchcase(host, b.rule.specifier)
        if kind == "param":
            assert b.rule.param is not None and b.rule.specifier is not None
            value = _param_value(tool_input, b.rule.param)
            return value is not None and fnmatch.fnmatchcase(value, b.rule.specifier)
        assert b.rule.specifier is not None
        spec = b.rule.specifier
        return any(isinstance(v, str) and fnmatch.fnmatchcase(v, spec) for v in tool_input.values())

    def _unknown(self, bash: _BashView) -> list[str]:
        """Why the line's commands cannot all be known, leaving out programs that run command strings
        (``make``, ``vim -c``, ``tar --to-command``) where an allow rule naming that program covers the command."""
        if bash.units is None:
            return bash.opaque
        allow = [b for b in self.rules if b.behavior == "allow" and b.rule.kind == "bash" and b.tool_matches(BASH.name)]
        reasons = list(bash.line_opaque)
        for u in bash.units:
            if u.opaque and not (u.runner and any(
                u.runner in b.matcher.body.split() and (any(ok and b.matcher.match(t) for t, ok in u.views) or (
                    b.matcher.exact and any(b.matcher.match(t) for t in u.exact_only)))
                for b in allow
            )):
                reasons.extend(u.opaque)
        return list(dict.fromkeys(reasons))

    def _bash_allowed(self, tool_input: dict[str, Any], bash: _BashView | None) -> Decision | None:
        allow = [b for b in self.rules if b.behavior == "allow" and b.tool_matches(BASH.name)]
        if not allow:
            return None
        for b in allow:
            if b.rule.kind == "tool":
                return Decision("allow", b.rule.text, b.source, f"Bash allowed by the rule {b.rule.text} ({b.source})")
        for b in allow:
            if b.rule.kind == "exact" and bash is not None and bash.command == b.rule.specifier:
                return Decision("allow", b.rule.text, b.source, f"Bash allowed by the rule {b.rule.text} ({b.source}), for exactly this line")
        if bash is None or bash.units is None or not bash.units or bash.line_opaque or bash.loose_writes():
            # a line whose commands cannot all be known is never allowed by a pattern, nor one whose compound
            # writes a file: no rule shows that redirection ("Bash(echo:*)" is not "{ echo hi; } >v")
            return None
        if self._unknown(bash):
            return None  # ...except a program that runs command strings, by a rule that names it
        used: list[_Bound] = []
        for u in bash.units:
            hit = None
            for b in allow:
                if b.rule.kind != "bash":
                    continue
                pat: BashPattern = b.matcher
                if u.writes and not _REDIRECTION.search(pat.body):
                    continue  # a rule approves a redirection to a file only when its pattern shows one
                if u.writes:  # ...and only to the targets it shows: no "*" of it stands for a redirection
                    if any(ok and _shows_redirections(pat, text) for text, ok in u.views):
                        hit = b
                        break
                    continue
                if any(ok and pat.match(text) for text, ok in u.views) or (
                    pat.exact and any(pat.match(text) for text in u.exact_only)
                ):
                    hit = b
                    break
            if hit is None:
                if u.container:
                    continue
                return None
            used.append(hit)
        if not used:
            return None
        first = used[0]
        rules = ", ".join(dict.fromkeys(b.rule.text for b in used))
        return Decision("allow", first.rule.text, first.source, f"Bash allowed by {rules}")


MAX_PATH_CHECKS = 1_000
MAX_CD_BASES = 64
"""Folders a line's ``cd`` commands may lead to that the read-only check follows; more asks."""
"""Paths one read-only line may name and still be auto-approved (each is resolved on disk)."""
_INERT_ENV = frozenset({"LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
                        "CLICOLOR_FORCE", "COLORTERM"})
"""Variables a settings file may set and read-only lines still run unasked (and ``LC_*``), with an ``_INERT_VALUE``."""
_INERT_VALUE = re.compile(r"^[A-Za-z0-9_.@+-]*$")
"""No ``/`` (``LC_ALL=/x``, ``TZ=/x`` name files) and no ``:`` (``TZ=:x``)."""
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})
_MAX_GIT_CONFIG = 1 << 20


def _shows_redirections(pat: BashPattern, text: str) -> bool:
    """Does ``pat`` match ``text`` with each redirection operator of the text matched by one of the pattern's
    own (the pieces between them matched piece by piece), so that ``echo * > out.txt`` never covers
    ``echo hi >v > out.txt``?"""
    body = pat.body + (" *" if pat.trailing else "")
    want, have = _REDIRECTION.split(body), _REDIRECTION.split(text)
    if len(want) != len(have):
        return False
    return all(_glob(" ".join(w.split()), " ".join(h.split())) for w, h in zip(want, have))


def _may_match(pattern: str, name: str) -> bool:
    """Could bash's glob ``pattern`` match ``name``? A superset, in linear time: from a pattern's first ``[`` on,
    anything matches (its quoting is gone, so which ``[``, ``]`` and ``\\`` were live is not known), ``?`` and ``*`` match
    a literal ``?`` and ``*`` too, and a leading dot needs no dot."""
    if "[" in pattern:  # from its first "[" on, anything: the word reaches here unquoted, so "["e]* (a literal "[")
        pattern = pattern[: pattern.index("[")] + "*"  # and [e\]]* (an escaped "]") read alike
    tokens: list[str | None] = []  # a character, "*" as "*", None for any one character
    for c in pattern:
        tokens.append(None if c == "?" else c)
    t = k = 0
    star, mark = -1, 0
    while k < len(name):
        if t < len(tokens) and tokens[t] == "*":
            star, mark = t, k
            t += 1
        elif t < len(tokens) and (tokens[t] is None or tokens[t] == name[k]):
            t += 1
            k += 1
        elif star >= 0:
            t = star + 1
            mark += 1
            k = mark
        else:
            return False
    while t < len(tokens) and tokens[t] == "*":
        t += 1
    return t == len(tokens)


def _path_candidates(head: str, args: list[str], lits: list[bool], redirects: list[tuple[str, str]],
                     redirect_lits: list[bool], unsure: frozenset[int] = frozenset()) -> Iterator[tuple[str, bool] | None]:
    """The words of a read-only command ``head`` that may name files, each as ``(path, is a pattern)``: every
    argument as a whole (an operand after ``--`` may start with ``-``), option values after ``=``
    (``--file=/etc/x``) or stuck to their short option where the program's getopt spelling puts them
    (``-rf../x``: ``../x``), and input redirections (``< src/*/x``, ``< $(...)``: judged as arguments are);
    a word with braces or glob characters as each word bash's brace expansion makes of it
    (``{../../x,src}/stamp``: two), its globs left for ``_glob_reach``. None for a word whose value the
    shell computes, or whose braces make more than ``MAX_BRACE_WORDS`` words."""
    for k, (w, lit) in enumerate(zip(args, lits), 1):
        if k in unsure:
            yield None  # '{"}",e}': which braces are live is not in the word any more
            continue
        yield from _word_paths(head, w, lit, options=True)
    for k, (op, target) in enumerate(redirects):
        if op not in ("<", "<>"):
            continue
        lit = redirect_lits[k] if k < len(redirect_lits) else False
        if not lit and ("{" in target or "}" in target):
            yield None  # its quoting is gone too (a target with braces is rare)
            continue
        if not lit and target.startswith("<(") and target.endswith(")") and "$" not in target and "`" not in target:
            continue  # "< <(cmd)": a pipe; cmd is a command of the line, judged on its own
        yield from _word_paths(head, target, lit, options=False)


_ASSIGNMENT_SHAPED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=(?:.*:)?~")
"""An argument bash tilde-expands after its ``=`` and each ``:`` (``cat a=~/x`` opens ``a=/home/u/x``)."""


def _word_paths(head: str, w: str, lit: bool, *, options: bool) -> Iterator[tuple[str, bool] | None]:
    if (not lit and ("$" in w or "`" in w)) or _ASSIGNMENT_SHAPED.match(w):
        yield None
        return
    alternatives = [w] if lit else brace_words(w)
    if alternatives is None:
        yield None
        return
    for a in alternatives:
        values = [a]
        if options and a.startswith("-") and len(a) > 1:
            values += _option_values(head, a)
        for v in values:
            yield v, not lit and _GLOB_COMPONENT.search(v) is not None


def _option_values(head: str, word: str) -> list[str]:
    """The value an option word carries in itself: after ``=`` for a long option, and for a short cluster
    where getopt reads it for ``head`` (the rest of the word after the first letter that takes a value:
    ``-rf../x`` -> ``../x``, ``-L..`` -> ``..``); for a program without a spelling here, the rest after the
    first letter when it may be a path."""
    from .read_only_options import OPTIONS

    if word.startswith("--"):
        return [word.split("=", 1)[1]] if "=" in word else []
    spec = OPTIONS.get(head)
    if spec is None:
        tail = word[2:]
        return [tail] if "/" in tail or tail.startswith(("~", "..")) else []
    shorts = spec[0]
    for k, ch in enumerate(word[1:], 2):
        pos = shorts.find(ch)
        if ch != ":" and pos >= 0 and shorts[pos + 1 : pos + 2] == ":":
            return [word[k:]] if word[k:] else []
    return []


MAX_BRACE_WORDS = 256
MAX_BRACE_WORD = 4096
"""Characters of a word with braces that ``brace_words`` expands (a longer one is not resolved: it asks)."""
_GLOB_COMPONENT = re.compile(r"[*?\[]")
_SEQUENCE = re.compile(r"^([-+]?\d+|[A-Za-z])\.\.([-+]?\d+|[A-Za-z])(?:\.\.[-+]?\d+)?$")


def brace_words(word: str) -> list[str] | None:
    """The words bash's brace expansion makes of ``word`` (``a{b,c}`` -> ``ab``, ``ac``; ``{1..3}``), or None
    past ``MAX_BRACE_WORDS``. Every brace is taken as live (a quoted one too): more words to check, never fewer."""
    if len(word) > MAX_BRACE_WORD:
        return None  # each brace is looked for from the start: bounded, so a decision stays linear
    done: list[str] = []
    todo = [word]
    while todo:
        w = todo.pop()
        found = _first_brace(w)
        if found is None:
            done.append(w)
        else:
            todo.extend(reversed(found))
        if len(done) + len(todo) > MAX_BRACE_WORDS:
            return None
    return done


def _first_brace(w: str) -> list[str] | None:
    """The words the first expandable brace of ``w`` makes, or None when it has none."""
    start = 0
    while True:
        i = w.find("{", start)
        if i < 0:
            return None
        depth, parts, mark = 0, [], i + 1
        for j in range(i, len(w)):
            if w[j] == "{":
                depth += 1
            elif w[j] == "}":
                depth -= 1
                if depth == 0:
                    parts.append(w[mark:j])
                    break
            elif w[j] == "," and depth == 1:
                parts.append(w[mark:j])
                mark = j + 1
        else:
            return None  # unclosed: bash leaves it as it is
        pre, post = w[:i], w[j + 1 :]
        if len(parts) > 1:
            return [pre + p + post for p in parts]
        seq = _sequence(parts[0])
        if seq is not None:
            return [pre + p + post for p in seq]
        start = i + 1


def _sequence(body: str) -> list[str] | None:
    m = _SEQUENCE.match(body)
    if m is None:
        return None
    a, b = m.group(1), m.group(2)
    if a.lstrip("-+").isdigit() != b.lstrip("-+").isdigit():
        return None
    if a.lstrip("-+").isdigit():
        lo, hi = int(a), int(b)
        if abs(hi - lo) > MAX_BRACE_WORDS // 2:
            return [str(lo)] * (MAX_BRACE_WORDS + 1)  # too many: the caller gives up
        step = 1 if hi >= lo else -1
        # "{01..03}", "{-01..1}": a leading zero pads every term to the wider end (both forms kept: a superset)
        width = max(len(a), len(b)) if any(x.lstrip("-+").startswith("0") and len(x.lstrip("-+")) > 1 for x in (a, b)) else 0
        return list(dict.fromkeys(t for n in range(lo, hi + step, step) for t in (str(n), f"{n:0{width}d}")))
    step = 1 if ord(b) >= ord(a) else -1
    return [chr(c) for c in range(ord(a), ord(b) + step, step)]


def _glob_reach(pattern: str, limit: int) -> list[str] | None:
    """Every path a glob ``pattern`` can reach, over-counted: each pattern component stands for every entry
    of the folders before it that ``_may_match`` (dot files, ``.`` and ``..`` where a dot can match, symlinks
    to anywhere included), so a match bash would make is always checked; the pattern itself is kept (bash
    leaves a word that matches nothing as it is). None past ``limit`` paths."""
    bases = ["/"] if pattern.startswith("/") else [""]
    for part in pattern.split("/"):
        if not part:
            continue
        if _GLOB_COMPONENT.search(part) is None:
            bases = [os.path.join(b, part) for b in bases]
            continue
        grown: list[str] = []
        for b in bases:
            try:
                names = os.listdir(b or ".") if os.path.isdir(b or ".") else []
            except OSError:
                names = []
            if part[0] in ".[":
                names += [".", ".."]  # a pattern that can match a leading dot can match these (bash before 5.2)
            grown += [os.path.join(b, n) for n in names if _may_match(part, n)]
            grown.append(os.path.join(b, part))
            if len(grown) > limit:
                return None
        bases = grown
    return bases


def _config_names_program(text: str) -> bool:
    """Does a git configuration file set a key whose value names a program (or includes more configuration)?"""
    from .bash_reader import GIT_CODE_KEY

    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            m = re.match(r'\[\s*([^\]\s"]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]', line)
            if m is None:
                return True  # a header this reader cannot follow: count it
            section = m.group(1) + (f".{m.group(2)}" if m.group(2) is not None else "")
            line = line[m.end() :].strip()
            if not line or line[0] in "#;":
                continue
        name = re.split(r"[=\s]", line, maxsplit=1)[0]
        key = f"{section}.{name}".lower()
        if key.startswith("submodule.") and not key.endswith(".update"):
            continue  # a submodule's path and url name no program
        if GIT_CODE_KEY.match(key) or key in ("core.worktree", "log.showsignature"):
            return True
    return False


def _borrows_objects(git_dir: str, roots: Sequence[str]) -> bool:
    """Does ``git_dir`` read objects from a store outside ``roots`` (``objects/info/alternates``,
    ``http-alternates``)? An unreadable list counts."""
    info = os.path.join(git_dir, "objects", "info")
    if os.path.exists(os.path.join(info, "http-alternates")):
        return True
    try:
        with open(os.path.join(info, "alternates"), encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 16).splitlines()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    for line in (ln.strip() for ln in lines):
        if not line or line.startswith("#"):
            continue
        real = os.path.realpath(os.path.join(git_dir, "objects", line))
        if not any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            return True
    return False


def _is_git_dir(path: str) -> bool:
    """Does git take the folder ``path`` for a git directory (``HEAD``, and ``objects`` or ``commondir``)? git
    passes over a ``.git`` folder that is not one and keeps looking in the folders above."""
    return os.path.isfile(os.path.join(path, "HEAD")) and (
        os.path.isdir(os.path.join(path, "objects")) or os.path.isfile(os.path.join(path, "commondir")))


def _gitfile_points_away(top: str, roots: Sequence[str]) -> bool:
    """Does ``top/.git``, a file, name a git directory outside ``roots`` that does not name ``top`` back? A linked
    worktree's does (its ``gitdir`` file names this ``.git``), as does a submodule's (``core.worktree``); a
    ``gitdir: /home/u/private/.git`` that came with the files does not, and git would read that repository."""
    dot = os.path.join(top, ".git")
    if not os.path.isfile(dot):
        return False
    found = _git_dirs_from(top)
    if not found:
        return True  # unreadable or malformed: git refuses it, the check does not guess
    g = found[0]
    if any(g == r or g.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
        return False
    try:
        with open(os.path.join(g, "gitdir"), encoding="utf-8", errors="replace") as f:
            if os.path.realpath(os.path.join(g, f.read(4096).strip())) == os.path.realpath(dot):
                return False  # a linked worktree of that repository
    except OSError:
        pass
    try:
        with open(os.path.join(g, "config"), encoding="utf-8", errors="replace") as f:
            text = f.read(_MAX_GIT_CONFIG)
    except OSError:
        return True
    m = re.search(r"(?im)^\s*worktree\s*=\s*(.+?)\s*$", text)
    return m is None or os.path.realpath(os.path.join(g, m.group(1))) != os.path.realpath(top)  # a submodule's


def _git_top_from(start: str) -> str | None:
    """The folder holding the ``.git`` (folder or file) git finds from ``start``, as a real path; None: none."""
    d = os.path.realpath(start)
    for _ in range(64):
        dot = os.path.join(d, ".git")
        if os.path.isfile(dot) or _is_git_dir(dot):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _git_dirs_from(start: str) -> list[str]:
    """The git directory git finds from ``start`` (the first ``.git`` folder or ``gitdir:`` file going up, as
    ``_git_top_from`` finds it), and the common directory a ``gitdir:`` one names, as real paths; none when there
    is no repository."""
    top = _git_top_from(start)
    if top is None:
        return []
    dot = os.path.join(top, ".git")
    if not os.path.isfile(dot):
        return [os.path.realpath(dot)]
    from ..sandbox.gitguard import gitdir_of_file

    g = gitdir_of_file(dot)
    if g is None:
        return []
    found = [g]
    try:
        with open(os.path.join(g, "commondir"), encoding="utf-8", errors="replace") as f:
            found.append(os.path.realpath(os.path.join(g, f.read(4096).strip())))
    except OSError:
        pass
    return found


def _project_base(source: str, cwd: str) -> str:
    """The directory ``/x`` patterns of a settings file are relative to."""
    if source == "session" or not os.path.isabs(source):
        return cwd
    d = os.path.dirname(os.path.realpath(source))
    if os.path.basename(d) in (".agentloop", ".claude"):
        return os.path.dirname(d)
    return d


@dataclass
class _BashView:
    units: list[Unit] | None
    """The commands of the line, or None when it could not be parsed."""
    deny_texts: list[str]
    """Every text a deny or ask rule is tried on."""
    opaque: list[str] = field(default_factory=list)
    """Why bash may run something the text does not show (empty: every command is known)."""
    command: str | None = None
    line_opaque: list[str] = field(default_factory=list)
    """The reasons that belong to the whole line rather than to one command."""
    loose: list[tuple[str, str]] = field(default_factory=list)
    """Redirections of a compound command (``(x) >t``, ``{ x; } >t``, ``done <f``) or of none (``>t``)."""

    @classmethod
    def of(cls, tool_input: dict[str, Any]) -> _BashView:
        command = tool_input.get("command")
        if not isinstance(command, str):
            return cls(None, [], ["the command is not text"])
        from .bash_reader import ShellSyntax, TooLarge, analyze, crude_pieces

        whole = " ".join(command.split())
        try:
            found = analyze(command)
        except (ShellSyntax, RecursionError) as exc:
            why = str(exc) if isinstance(exc, ShellSyntax) else "it nests too deeply"
            pieces = [] if isinstance(exc, TooLarge) else crude_pieces(command)  # past the bound, no second reading
            return cls(None, [whole, *pieces], [f"the line cannot be read with confidence ({why})"], command)
        texts = [whole]
        for u in found.units:
            texts.extend(t for t, _ok in u.views)
        for w in found.code_words:  # code that bash may evaluate from a literal ("a[$(rm v)]")
            texts.extend(crude_pieces(w))
        return cls(found.units, list(dict.fromkeys(texts)), found.opaque, command, found.line_opaque, found.loose_redirects)

    def loose_writes(self) -> bool:
        """Does a redirection of a compound (or of no command) write a file?"""
        from .bash_reader import _writes

        return any(_writes(op, t) for op, t in self.loose)

    def loose_io(self) -> bool:
        """Does a redirection of a compound (or of no command) touch a file at all (read or write)?"""
        from .bash_reader import _writes

        return any(_writes(op, t) or op in ("<", "<>", "<&") for op, t in self.loose)


# Read-only commands: Claude Code runs read-only Bash without a prompt
# (permissions reference: "Read-only | File reads, Grep | No" approval; anthropics/claude-code#1128
# for find/grep/head/tail, also piped), and applies Read deny rules to the files such commands
# name. A line runs without
# a prompt only when it parses, nothing in it is opaque, every command is one of these (with
# the arguments that keep it read-only), and no redirection writes a file.
READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "grep", "egrep", "fgrep", "rg", "file", "stat", "du", "df",
    "which", "type", "whoami", "id", "uname", "tree", "diff", "cmp", "cut", "tr", "basename", "dirname", "realpath",
    "readlink", "true", "false", "test", "[", "nl", "od", "hexdump", "md5sum", "sha1sum", "sha256sum", "sha512sum",
    "cksum", "column", "fold", "fmt", "paste", "comm", "join", "seq", "tac", "rev", "expand", "unexpand", "strings",
    "jq", "sort", "uniq", "printf", "find", "cd", "date", "git", "less", "more",
})
READ_ONLY_GIT = frozenset({
    "rev-parse", "ls-tree", "cat-file", "merge-base", "name-rev", "count-objects", "for-each-ref", "show-ref",
    "rev-list", "version", "branch", "tag", "remote",
})
"""git subcommands auto-approved: the ones that read objects and refs only. For any configuration a repository
can hold (its own, included, nested or bare, with a BOM or not) none of them reads the index or the work tree
(``core.fsmonitor``, ``post-index-change``), writes a ref (reference hooks), diffs (textconv, external diff,
filters) or checks a signature (``gpg.program``, ``log.showSignature``); ``--format``/``--pretty`` (``%G?``) and
``tag -v`` are refused below. ``status``, ``diff``, ``log``, ``show``, ``describe``, ``blame``, ``grep``,
``ls-files``... ask: each can run a program the repository names."""
GIT_READS_WORK_TREE = frozenset({"status", "log", "diff", "show", "blame", "describe", "shortlog", "ls-files", "grep", "reflog"})
"""git subcommands that only read, but can run a program the repository names: they ask (plan mode asks
too, rather than refusing them)."""
_LISTING_FLAGS = frozenset({"-a", "-r", "-l", "--list", "--all", "--remotes", "--show-current",
                            "--sort", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
                            "--column", "--no-column", "--color", "--no-color", "-i", "--ignore-case"})
_BRANCH_LISTING_FLAGS = _LISTING_FLAGS | {"-v", "-vv", "--verbose"}
"""``git tag -v`` verifies (runs ``gpg.program``); ``git branch -v`` lists."""
_FIND_WORDS = frozenset((
    "-amin -anewer -atime -cmin -cnewer -ctime -empty -executable -false -fstype -gid -group -ilname -iname -inum "
    "-ipath -iregex -iwholename -links -lname -mmin -mtime -name -newer -nogroup -nouser -path -perm -readable "
    "-regex -samefile -size -true -type -uid -used -user -wholename -writable -xtype -context "
    "-d -depth -maxdepth -mindepth -mount -xdev -noleaf -ignore_readdir_race -noignore_readdir_race -regextype "
    "-warn -nowarn -daystart -help -version -print -print0 -printf -ls -prune -quit -not -a -and -o -or -H -P"
).split())
"""What a read-only ``find`` may say: an allow-list, so an action that writes or runs (``-exec``, ``-delete``,
``-fprint``...), ``-L``/``-follow`` (which follow every link met while walking) or anything new asks."""
_FIND_NEWER = re.compile(r"-newer[aBcmt][aBcmt]\Z")


def _find_read_only(args: list[str]) -> bool:
    """Is every word of ``find``'s arguments that starts with ``-`` on ``_FIND_WORDS`` (``-newerXY`` too)?"""
    return all(not a.startswith("-") or a in _FIND_WORDS or _FIND_NEWER.match(a) is not None for a in args)


_WRITES_OR_RUNS = {
    "sort": ("--output", "--compress-program", "--files0-from"), "wc": ("--files0-from",), "du": ("--files0-from",),
    "date": ("--set",), "rg": ("--pre", "--pre-glob"), "file": ("--compile",), "tree": ("--output",),
}
"""Long options (and every abbreviation of them) that make a read-only command write a file, run a
program, or read a list of files the line does not show."""
_SHORT_WRITES = {"sort": "o", "tree": "o", "date": "s", "file": "C"}
_GIT_GLOBALS_READ_ONLY = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
                                    "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects"})
_GIT_WRITES_OR_RUNS = ("--output", "--open-files-in-pager", "--ext-diff", "--textconv", "--filters", "--paginate", "--format",
                       "--pretty", "--show-signature")


SCRIPT_SHELLS = frozenset(("bash", "sh", "dash", "zsh", "ksh"))
INLINE_LONG_OPTIONS = frozenset(("--eval", "--print", "--command", "--exec", "--execute", "--code", "--expression", "--expr"))


def script_argument(words: Sequence[str]) -> int | None:
    """The index of the script file an interpreter or shell is given to run (``python3 .claude/skills/pdf/scripts/x.py``,
    ``bash ~/.claude/skills/x/run.sh``): the file is read and run, not written, so the protected-path rule does not
    count it as a path the line may write (its other arguments still count). None for anything else, and for
    inline code (``sh -c``, ``python3 -c``, ``node -e``, ``--eval``): then every argument counts."""
    from .bash_reader import _INLINE_LETTERS, _INTERPRETER

    if not words:
        return None
    head = os.path.basename(words[0])
    m = _INTERPRETER.match(head)
    if head not in SCRIPT_SHELLS and m is None:
        return None
    letters = "c" if m is None else _INLINE_LETTERS.get(m.group(1), "ce")
    for i in range(1, len(words)):
        w = words[i]
        if w == "--":
            return i + 1 if i + 1 < len(words) else None
        if w.startswith("--"):
            if w.split("=", 1)[0] in INLINE_LONG_OPTIONS:
                return None
            continue
        if w.startswith("-"):
            if any(ch in letters for ch in w[1:]):
                return None
            continue
        return i
    return None


def _read_only_words(words: list[str], git: frozenset[str] = READ_ONLY_GIT) -> bool:
    from .bash_reader import may_abbreviate

    head, args = words[0], words[1:]
    if head not in READ_ONLY_COMMANDS:
        return False
    if head in ("less", "more"):
        return False  # they can run commands (!cmd, LESSOPEN); listed so the reason is recorded here
    from .read_only_options import options_read_only

    if not options_read_only(head, args):
        return False  # an option not on the program's read-only list (an abbreviation, a new one) asks
    longs = [a for a in args if a.startswith("--")]
    letters = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    if any(may_abbreviate(a, _WRITES_OR_RUNS.get(head, ())) for a in longs) or set(_SHORT_WRITES.get(head, "")) & set(letters):
        return False  # "sort -uo f", "sort --out=f", "sort --compress=sh": writes a file, or runs a program
    if head == "uniq" and len(_operands(args, "fsw", ("--skip-fields", "--skip-chars", "--check-chars"))) > 1:
        return False  # "uniq IN OUT" (and "uniq - OUT", "uniq -- v -victim") writes OUT
    if head == "printf" and args and args[0].startswith("-") and args[0] != "--":
        return False  # "printf -v NAME", "printf -v'a[$(cmd)]'": assigns (a subscript runs code); its only option
    if head == "find" and not _find_read_only(args):
        return False
    if head == "diff" and ("--recursive" in longs or "r" in letters) and "--no-dereference" not in longs:
        return False  # "diff -rN src empty" prints the files a link deep in src points at
    if head == "jq" and not _jq_reads_only_its_operands(args):
        return False
    if head == "git":
        return _read_only_git(args, git)
    return True


_JQ_MODULE = re.compile(r"\b(?:import|include|modulemeta)\b")


def _jq_reads_only_its_operands(args: list[str]) -> bool:
    """Does jq read only the files its words name? A program from a file (``-f``), or one that loads a module
    or data file (``import "../../x" as $d``: resolved from the search path, ``..`` allowed) may read anywhere."""
    from .bash_reader import may_abbreviate

    if any(may_abbreviate(a, ("--from-file",)) for a in args if a.startswith("--")):
        return False
    if any(a.startswith("-") and not a.startswith("--") and "f" in a[1:] for a in args):
        return False
    for a in args:  # each word bash's brace expansion may make of it ("{imp,}ort")
        words = brace_words(a)
        if words is None or any(_JQ_MODULE.search(w) for w in words):
            return False
    return True


def _operands(args: list[str], short_values: str, long_values: tuple[str, ...]) -> list[str]:
    """The operands of a command's arguments, as getopt reads them: ``--`` ends the options, ``-`` is an
    operand, and an option in ``short_values``/``long_values`` takes the next word unless its value is stuck to it."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return out + args[i + 1 :]
        if a.startswith("--"):
            if "=" not in a and any(lv.startswith(a) for lv in long_values):
                i += 1
        elif a.startswith("-") and a != "-":
            for k, ch in enumerate(a[1:]):
                if ch in short_values:
                    if k == len(a) - 2:
                        i += 1  # the value is the next word
                    break
        else:
            out.append(a)
        i += 1
    return out


def _read_only_git(args: list[str], allowed: frozenset[str] = READ_ONLY_GIT) -> bool:
    from .bash_reader import git_subcommand, may_abbreviate

    i = git_subcommand(["git", *args]) - 1
    if any(a not in _GIT_GLOBALS_READ_ONLY for a in args[:i]) or i >= len(args) or args[i] not in allowed:
        return False  # -C, --git-dir, -p...: another repository, or a pager, is not "only reads"
    sub, rest = args[i], args[i + 1 :]
    letters = "".join(a[1:] for a in rest if a.startswith("-") and not a.startswith("--"))
    if any(may_abbreviate(a, _GIT_WRITES_OR_RUNS) for a in rest) or (sub == "grep" and "O" in letters):
        return False  # writes a file, or runs a program named by configuration or on the line
    if sub in ("branch", "tag") and any(a.split("=", 1)[0] not in (_BRANCH_LISTING_FLAGS if sub == "branch" else _LISTING_FLAGS)
                                        for a in rest):
        return False  # listing only: "git branch -D x", "git tag v1" change things
    if sub == "remote" and any(not a.startswith("-") for a in rest):
        return False
    if sub == "reflog" and rest[:1] not in ([], ["show"]):
        return False
    return True


def _read_only_line(bash: _BashView, git: frozenset[str] = READ_ONLY_GIT) -> bool:
    """Does every command of the line only read (``git``: the git subcommands that count)?"""
    if bash.units is None or bash.opaque or not bash.units or bash.loose_io():
        return False  # "(echo x) > t", "{ cat; } < f": no command shows the redirection, so none can approve it
    if "\x00" in (bash.command or ""):
        return False  # a C string ends at a NUL: what runs may be a prefix of the line judged
    from .bash_reader import _writes

    for u in bash.units:
        simple = u.simple
        if simple is None or u.container or not simple.words or not all(simple.lits[:1]):
            return False
        if "/" in simple.words[0] or not _read_only_words(simple.words, git):
            return False
        if any(_writes(op, target) for op, target in simple.redirects):
            return False
    return True
