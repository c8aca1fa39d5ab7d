"""Hooks in Claude Code's protocol: configuration, running, and the answers.

Hooks are configured in the settings files (``agent/settings.py``) under
``"hooks"``, in Claude Code's three levels: event, then matcher groups, then
command handlers::

    {"hooks": {"PreToolUse": [{"matcher": "Bash",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

Rules (the protocol is Claude Code's; see docs/hooks.md for the differences):

1. A handler is a shell command (``bash -c``), or an exec form with ``args``.
   It gets the event as JSON on stdin (``session_id``, ``transcript_path``,
   ``cwd``, ``hook_event_name`` and the event's own fields) and the
   ``CLAUDE_PROJECT_DIR`` and ``AGENTLOOP_PROJECT_DIR`` variables. It runs in
   its own process group; on timeout the whole group is killed.
2. Exit 0: stdout starting with ``{`` is parsed as JSON (see
   ``parse_hook_output``), other stdout is plain text. Exit 2: a block on the
   events that can block, with stderr (or the JSON reason) as the reason.
   Other exit codes: a non-blocking error, unless stdout is valid JSON, which
   then decides alone.
3. All matching handlers of an event run at the same time; a handler listed
   twice (same command, in any settings file) runs once.
4. A failure (timeout, crash, a missing script, garbage output, output past
   ``MAX_OUTPUT_BYTES``) is non-blocking unless the handler says
   ``"onFailure": "block"``: then it blocks (fails closed).
5. Across hooks, ``permissionDecision`` combines deny > defer > ask > allow.
   ``updatedInput`` replaces the whole input; when several hooks rewrite it,
   the last handler in settings order wins.
6. Nothing here writes the transcript: ``run`` returns a ``HookOutcome`` whose
   ``to_record()`` the agent appends as a ``hook`` record.
7. A handler from a project's or local settings file, or from any file inside
   the project folder (a repository's plugin), runs inside the sandbox
   (``confine``: the same mounts as a Bash command, no keys, its own PID
   namespace), since the model can rewrite every file in the workspace such a
   command may run; the user's and managed settings' handlers run on the host.
   A handler that runs on the host starts without what a project's ``env``
   set (``host_env``): ``BASH_ENV``, ``PATH`` or ``NODE_OPTIONS`` naming a
   workspace file would otherwise run the model's code in the user's own hook,
   and the status line runs by the same two rules. Record 0015.
"""

from __future__ import annotations

import json
import logging
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ...config.settings import ConfigError, SettingsSource, written_by_commands
from .. import spawn

__all__ = [
    "EVENTS",
    "HandlerOutput",
    "HookAnswer",
    "HookEntry",
    "HookHandler",
    "HookOutcome",
    "HookOutputError",
    "HookResult",
    "HookRunner",
    "HookSection",
    "event_name",
    "handler_of",
    "hook_section",
    "matcher_of",
    "parse_hook_output",
]

_log = logging.getLogger("agentloop.hooks")

EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "StopFailure",
    "PermissionRequest",
    "Notification",
)
ALIASES = {"SessionStop": "SessionEnd"}
"""Seed 004 calls SessionEnd ``SessionStop``: accepted in settings, run as SessionEnd."""

# Claude Code's other events: accepted in settings (so a shared file loads) but never fired here.
KNOWN_UNFIRED = frozenset(
    (
        "Setup", "InstructionsLoaded", "UserPromptExpansion", "MessageDisplay",
        "PermissionDenied", "PostToolBatch", "TaskCreated", "TaskCompleted",
        "TeammateIdle", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged", "WorktreeCreate",
        "WorktreeRemove", "Elicitation", "ElicitationResult",
    )
)
UNFIRED_WHY = {
    "Setup": "Claude Code fires it only for --init, --init-only and --maintenance, which agentloop does not have",
}
"""Why an unfired event never fires, where there is more to say than the README's list."""
NO_MATCHER = frozenset(("UserPromptSubmit", "Stop"))
"""Events whose matcher is ignored (Claude Code: they always run)."""
CAN_BLOCK = frozenset(("PreToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"))
"""Events where exit 2 (or a fail-closed failure) stops the action."""
FEEDBACK = frozenset(("PostToolUse", "PostToolUseFailure"))
"""Events where exit 2 or ``decision: "block"`` shows the reason to the model (the tool already ran)."""
BLOCK_DECISION = frozenset(("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "PreCompact"))
"""Events that honour a top-level ``decision: "block"``."""
PLAIN_CONTEXT = frozenset(("UserPromptSubmit", "SessionStart"))
"""Events whose plain (non-JSON) stdout on exit 0 is added to the model's context."""

DEFAULT_TIMEOUT = 600.0
DEFAULT_TIMEOUTS = {"UserPromptSubmit": 30.0, "SessionEnd": 1.5}
SEED_OUTPUT_IGNORED = frozenset(("Stop", "SubagentStop", "SessionStart", "SessionEnd"))
"""Events whose answer seed 004 ignores ("Stop [...] Expected stdout: {} (output ignored)"; SessionStart
and SessionStop expect none): a handler written to its protocol that exits non-zero there blocks nothing."""
SEED_TIMEOUT = 10.0
"""Seed 004's ``run_hook(..., timeout=10)``: the default for handlers written to its protocol."""
SEED_REASON_CHARS = 200
"""Seed 004 gives a blocking hook's stderr as the reason, cut to 200 characters."""
MAX_OUTPUT_BYTES = 1 << 20
"""Stdout kept per handler; more is read and thrown away, and the answer is a failure."""
MAX_STDERR_BYTES = 64 << 10
MAX_TEXT = 10_000
"""Reasons, messages and context taken from a hook are cut to this many characters (as in Claude Code)."""
DECISION_RANK = {"allow": 0, "ask": 1, "defer": 2, "deny": 3}
OTHER_TYPES = frozenset(("http", "mcp_tool", "prompt", "agent"))


class HookOutputError(ValueError):
    """A hook's stdout is not a valid answer: the only error ``parse_hook_output`` raises."""


# --- configuration -----------------------------------------------------------


@dataclass(frozen=True)
class HookHandler:
    """One command handler, as configured."""

    event: str
    matcher: str
    command: str
    args: tuple[str, ...] | None = None
    """Exec form (no shell) when given: ``command`` is the program."""
    timeout: float = DEFAULT_TIMEOUT
    on_failure: Literal["ignore", "block"] = "ignore"
    source: str = ""
    """The settings file it came from."""
    if_rule: str | None = None
    """Claude Code's ``if``: one permission rule the tool call must match for the handler to run."""
    run_async: bool = False
    """Claude Code's ``async: true``: runs in the background; no decision, context on the next turn."""
    rewake: bool = False
    """Claude Code's ``asyncRewake: true`` (implies ``async``): an exit 2's stderr (or stdout) reaches the model,
    here on the next prompt (agentloop does not start a turn of its own in an idle session)."""
    plugin_root: str | None = None
    """The plugin's folder for a plugin's hook: ``CLAUDE_PLUGIN_ROOT`` in its environment (Claude Code's
    plugins reference, "Environment variables": hooks and scripts get the variable as well as the text)."""
    call: Callable[[bytes, float], _Proc] | None = None
    """Run in-process instead of a command: the payload and the timeout in, what a command would have
    left out (an Agent SDK hook callback, ``cli/sdk_hooks.py``). ``command`` then only names it."""
    seed: bool = False
    """Written to seed 004's protocol (a handler without Claude Code's required ``type``): any non-zero
    exit blocks with stderr as the reason, and the default timeout is seed 004's 10 s."""
    confined: bool = False
    """From a project's or local settings file: runs inside the sandbox (record 0015), so what the model
    rewrote in the workspace cannot reach the host through it."""

    @property
    def key(self) -> tuple[str, tuple[str, ...] | None]:
        """Two handlers with the same key are the same handler: it runs once."""
        return (self.command, self.args)


_SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_\- ,|]*$")


def _matches(matcher: str, value: str | None) -> bool:
    if matcher in ("", "*"):
        return True
    if value is None:
        return False
    if _SIMPLE_MATCHER.match(matcher):
        from ..tools.catalog import ALIASES  # the records' old names (Task for Agent)

        names = {n.strip() for n in re.split(r"[|,]", matcher) if n.strip()}
        return value in names or any(ALIASES.get(n) == value for n in names)
    return re.search(matcher, value) is not None


@dataclass(frozen=True)
class HookEntry:
    """One handler of a settings file as written (run or not): what the folder-trust summary shows."""

    event: str
    """The event's name as written (``SessionStop`` too)."""
    matcher: str
    shown: str
    """The command (with its ``args``), else the URL or the type."""
    command: str | None
    """The ``command`` string, when there is one: the files it names are what it really runs."""


@dataclass(frozen=True)
class HookSection:
    """A settings file's ``hooks``, parsed once (``agent/settings_sanitizer.py``): every reader takes this value."""

    entries: tuple[HookEntry, ...] = ()
    handlers: tuple[HookHandler, ...] = ()
    """The handlers that run (types agentloop does not run, unfired events and never-true ``if`` left out)."""
    warnings: tuple[str, ...] = ()
    """Handler fields and types agentloop does not honour, one line each naming the file (shown when the hooks load)."""

    def restricted(self) -> HookSection:
        """What an untrusted folder's file keeps of its hooks: none (hooks only add power)."""
        return HookSection()


def event_name(raw_event: str, where: str) -> str:
    """The event a ``hooks`` key names (``SessionStop`` is SessionEnd).

    Raises:
        ConfigError: not an event Claude Code knows.
    """
    event = ALIASES.get(raw_event, raw_event)
    if event not in EVENTS and event not in KNOWN_UNFIRED:
        known = ", ".join(EVENTS)
        raise ConfigError(where, f"hooks.{raw_event}: unknown hook event (known: {known})")
    return event


def matcher_of(group: Mapping[str, Any], at: str, where: str) -> str:
    """A matcher group's ``matcher`` ("" when absent).

    Raises:
        ConfigError: not a string, or not a valid regular expression.
    """
    matcher = group["matcher"] if group.get("matcher") is not None else ""
    if not isinstance(matcher, str):
        raise ConfigError(where, f"{at}.matcher must be a string")
    if matcher != "*" and not _SIMPLE_MATCHER.match(matcher):
        try:
            re.compile(matcher)
        except re.error as exc:
            raise ConfigError(where, f"{at}.matcher is not a valid regular expression: {exc}") from None
    return matcher


def handler_of(source: SettingsSource, h: Any, event: str, matcher: str, hat: str) -> tuple[HookHandler | None, list[str]]:
    """The one parser of a hook handler: the handler (None when it never runs here) and warnings.

    Raises:
        ConfigError: the handler is malformed (names the file and ``hat``).
    """
    where = source.path
    if not isinstance(h, dict):
        raise ConfigError(where, f"{hat} must be an object")
    typ = h.get("type", "command")
    if typ in OTHER_TYPES:
        return None, [f"{where}: {hat}: hooks of type {typ!r} are not supported by agentloop; skipped"]
    if typ != "command":
        raise ConfigError(where, f"{hat}.type must be \"command\" (or one of {', '.join(sorted(OTHER_TYPES))}), not {typ!r}")
    cmd = h.get("command")
    if not isinstance(cmd, str) or not cmd.strip():
        raise ConfigError(where, f"{hat}.command must be a non-empty string")
    args = h.get("args")
    if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
        raise ConfigError(where, f"{hat}.args must be a list of strings")
    seed = "type" not in h  # Claude Code requires "type"; seed 004's hooks have none
    timeout = h.get("timeout", SEED_TIMEOUT if seed else DEFAULT_TIMEOUTS.get(event, DEFAULT_TIMEOUT))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(where, f"{hat}.timeout must be a positive number of seconds")
    on_failure = h.get("onFailure", "ignore")
    if on_failure not in ("ignore", "block"):
        raise ConfigError(where, f"{hat}.onFailure must be \"ignore\" or \"block\"")
    if_rule, run_async, warnings = _handler_options(h, event, f"{where}: {hat}")
    if if_rule == _NEVER:
        return None, warnings
    if event in KNOWN_UNFIRED:
        why = UNFIRED_WHY.get(event, "see README, Hooks")
        return None, [*warnings, f"{where}: {hat}: agentloop does not fire {event} hooks ({why}); this handler never runs"]
    return HookHandler(
        event=event,
        matcher=matcher,
        command=cmd,
        args=tuple(args) if args is not None else None,
        timeout=float(timeout),
        on_failure=on_failure,
        source=where, if_rule=if_rule, run_async=run_async,
        plugin_root=source.plugin_root, seed=seed, rewake=h.get("asyncRewake") is True,
        confined=source.in_project,  # a project's: in the sandbox (rule 7)
    ), warnings


def _handlers_from(source: SettingsSource) -> tuple[list[HookHandler], list[str]]:
    """The handlers of one settings file that was not sanitized (front matter, ``--settings``), and warnings.

    Raises:
        ConfigError: the ``hooks`` value is malformed (names the file and the place).
    """
    where = source.path
    hooks = source.data.get("hooks")
    if hooks is None:
        return [], []
    if not isinstance(hooks, dict):
        raise ConfigError(where, f"\"hooks\" must be an object of event names, not a {type(hooks).__name__}")
    out: list[HookHandler] = []
    warnings: list[str] = []
    for raw_event, groups in hooks.items():
        event = event_name(raw_event, where)
        if not isinstance(groups, list):
            raise ConfigError(where, f"hooks.{raw_event} must be a list of matcher groups")
        for gi, group in enumerate(groups):
            at = f"hooks.{raw_event}[{gi}]"
            if not isinstance(group, dict):
                raise ConfigError(where, f"{at} must be an object with \"hooks\"")
            matcher = matcher_of(group, at, where)
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                raise ConfigError(where, f"{at}.hooks must be a list of handlers")
            for hi, h in enumerate(handlers):
                one, more = handler_of(source, h, event, matcher, f"{at}.hooks[{hi}]")
                warnings += more
                if one is not None:
                    out.append(one)
    return out, warnings


def hook_section(source: SettingsSource) -> tuple[list[HookHandler], list[str]]:
    """The handlers of one source and their warnings: the sanitizer's parse when it made one of this very data, else
    parsed now (a source that was not sanitized).

    Raises:
        ConfigError: an unsanitized source's ``hooks`` is malformed.
    """
    parsed = source.section("hooks", HookSection)
    if parsed is not None:
        return list(parsed.handlers), list(parsed.warnings)
    return _handlers_from(source)


TOOL_EVENTS = frozenset(("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"))
"""Events where a handler's ``if`` is evaluated (Claude Code: "On other events, a hook with ``if`` set never runs")."""
HANDLER_KEYS = frozenset(("type", "command", "args", "timeout", "onFailure", "if", "async", "asyncRewake"))
HANDLER_IGNORED = frozenset(("statusMessage", "once", "shell"))
_NEVER = "\0never"


def _handler_options(h: Mapping[str, Any], event: str, at: str) -> tuple[str | None, bool, list[str]]:
    """A handler's ``if`` and ``async``, and warnings for fields agentloop does not honour.

    ``if``: Claude Code's hooks reference, common fields: "Permission rule
    syntax to filter when this hook runs [...] Only evaluated on tool events
    [...] On other events, a hook with ``if`` set never runs." A rule that
    cannot be parsed is warned about and the handler runs for every call (a
    guard never silently stops running; Claude Code's filter "fails open,
    running your hook regardless of pattern" too).
    """
    warnings = [f"{at}.{k}: not supported by agentloop; ignored" for k in h if k not in HANDLER_KEYS]
    run_async = h.get("async", False) or h.get("asyncRewake") is True
    if not isinstance(run_async, bool):
        warnings.append(f"{at}.async must be true or false; the handler runs synchronously")
        run_async = False
    rule = h.get("if")
    if rule is None:
        return None, run_async, warnings
    if event not in TOOL_EVENTS:
        warnings.append(f"{at}.if is only evaluated on tool events; as in Claude Code this {event} handler never runs")
        return _NEVER, run_async, warnings
    from ..permissions.rules import RuleError, parse_rule

    try:
        if not isinstance(rule, str):
            raise RuleError("must be a string holding one permission rule")
        parse_rule(rule)
    except RuleError as exc:
        warnings.append(f"{at}.if {rule!r}: {exc}; the handler runs for every matching call")
        return None, run_async, warnings
    return rule, run_async, warnings


def _if_matches(rule: str, tool_name: str | None, tool_input: Any, cwd: str) -> bool:
    """Whether a tool call matches a handler's ``if`` rule: as a deny rule would (any Bash subcommand counts)."""
    if tool_name is None:
        return False
    from ..permissions.rules import PermissionPolicy

    policy = PermissionPolicy(cwd=cwd)
    policy.add_rule("deny", rule, source="hook if")
    return policy.decide(tool_name, tool_input if isinstance(tool_input, dict) else {}).behavior == "deny"


# --- parsing a hook's answer -------------------------------------------------


@dataclass(frozen=True)
class HookAnswer:
    """A hook's stdout, understood. ``json`` is False for plain text."""

    json: bool = False
    text: str = ""
    """Plain stdout (when not JSON)."""
    continue_: bool = True
    stop_reason: str | None = None
    system_message: str | None = None
    suppress_output: bool = False
    decision: str | None = None
    """Top-level ``decision``: ``"block"`` (or the deprecated ``"approve"``)."""
    reason: str | None = None
    permission_decision: str | None = None
    permission_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    updated_output: Any = None
    has_updated_output: bool = False
    allowed: bool | None = None
    """Seed 004's ``allowed``: False blocks (denies) like ``decision: "block"``; True is no decision."""
    updated_prompt: str | None = None
    """Seed 004's ``updatedPrompt``: UserPromptSubmit's replacement prompt."""
    request_behavior: str | None = None
    """PermissionRequest's ``hookSpecificOutput.decision.behavior``: ``allow`` or ``deny``."""
    request_message: str | None = None
    warnings: tuple[str, ...] = ()
    """Keys of the answer that neither protocol has, or that agentloop does not honour."""


TOP_KEYS = frozenset(("continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"))
"""Claude Code's top-level output fields that agentloop honours."""
SEED_KEYS = frozenset(("allowed", "updatedInput", "updatedOutput", "updatedPrompt"))
"""Seed 004's output fields (besides ``reason`` and ``continue``)."""
TOP_IGNORED = frozenset(("terminalSequence",))
"""Claude Code's top-level fields that agentloop accepts and does not act on."""
HSO_KEYS = frozenset(("hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext", "updatedToolOutput",
                      "decision"))
HSO_IGNORED = frozenset((
    "updatedMCPToolOutput", "sessionTitle", "initialUserMessage", "watchPaths", "reloadSkills", "retry",
    "action", "content", "displayContent", "worktreePath", "suppressOriginalPrompt",
))
"""Claude Code's ``hookSpecificOutput`` fields for events or features agentloop does not have: warned about, ignored."""


ALL_TOP_KEYS = TOP_KEYS | SEED_KEYS | TOP_IGNORED | {"additionalContext", "additional_context"}


def _misspelt(key: str, known: frozenset[str]) -> str | None:
    """The protocol key ``key`` looks like a misspelling of (``decison`` for ``decision``), or None."""
    import difflib

    folded = {k.lower().replace("_", ""): k for k in known}
    near = difflib.get_close_matches(key.lower().replace("_", ""), list(folded), n=1, cutoff=0.8)
    return folded[near[0]] if near else None


def _key_warnings(obj: Mapping[str, Any], hso: Mapping[str, Any] | None) -> tuple[str, ...]:
    """A warning for every output key that looks like a misspelt protocol key (``decison``), so a misspelt decision
    is never silent, and for Claude Code's keys agentloop does not act on. Any other key a hook adds for itself
    (``metrics``: Anthropic's security-guidance plugin) is ignored without a word, as Claude Code ignores extra fields
    of an answer it understands; it is logged."""
    out: list[str] = []
    for k in obj:
        if k in TOP_KEYS or k in SEED_KEYS:
            continue
        near = _misspelt(k, ALL_TOP_KEYS | HSO_KEYS)
        if k in TOP_IGNORED:
            out.append(f"output key {k!r} is not supported by agentloop; ignored")
        elif k in ("additionalContext", "additional_context"):
            out.append(f"output key {k!r} at the top level is not read (Claude Code reads "
                       "hookSpecificOutput.additionalContext); ignored")
        elif near is not None and near != k:
            out.append(f"unknown output key {k!r} (did you mean {near!r}?); ignored")
        else:
            _log.debug("hook output key %r is not part of the protocol; ignored", k)
    for k in hso or {}:
        if k in HSO_KEYS:
            continue
        near = _misspelt(k, HSO_KEYS | HSO_IGNORED)
        if k in HSO_IGNORED:
            out.append(f"hookSpecificOutput.{k} is not supported by agentloop; ignored")
        elif near is not None:
            out.append(f"unknown output key 'hookSpecificOutput.{k}' (did you mean {near!r}?); ignored")
        else:
            _log.debug("hook output key 'hookSpecificOutput.%s' is not part of the protocol; ignored", k)
    return tuple(out)


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise HookOutputError(f"{where}{key} must be a string, not {type(v).__name__}")
    return v[:MAX_TEXT]


def parse_hook_output(stdout: bytes | str) -> HookAnswer:
    """Understand a hook's stdout.

    Stdout that (after whitespace) starts with ``{`` must be a JSON object in
    Claude Code's shape; anything else is plain text.

    Raises:
        HookOutputError: not UTF-8, invalid JSON, not an object, or a known
            field of the wrong type or value. Never anything else.
    """
    if isinstance(stdout, bytes):
        try:
            text = stdout.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HookOutputError(f"output is not UTF-8 (byte {exc.start})") from None
    elif isinstance(stdout, str):
        text = stdout
    else:
        raise HookOutputError(f"output must be bytes or text, not {type(stdout).__name__}")
    stripped = text.strip()
    if not stripped.startswith("{"):
        return HookAnswer(json=False, text=stripped[:MAX_TEXT])
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError) as exc:
        raise HookOutputError(f"output starts with '{{' but is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(obj, dict):
        raise HookOutputError(f"output must be a JSON object, not {type(obj).__name__}")
    return _answer_from(obj)


def _request_decision(d: Any) -> tuple[str | None, str | None]:
    """PermissionRequest's ``hookSpecificOutput.decision``: its ``behavior`` and ``message``."""
    if d is None:
        return None, None
    if not isinstance(d, dict):
        raise HookOutputError("hookSpecificOutput.decision must be an object with a behavior")
    behavior = _opt_str(d, "behavior", "hookSpecificOutput.decision.")
    if behavior not in ("allow", "deny"):
        raise HookOutputError(f"hookSpecificOutput.decision.behavior must be allow or deny, not {behavior!r}")
    return behavior, _opt_str(d, "message", "hookSpecificOutput.decision.")


def _answer_from(obj: dict[str, Any]) -> HookAnswer:
    cont = obj.get("continue", True)
    if not isinstance(cont, bool):
        raise HookOutputError("continue must be true or false")
    suppress = obj.get("suppressOutput", False)
    if not isinstance(suppress, bool):
        raise HookOutputError("suppressOutput must be true or false")
    decision = _opt_str(obj, "decision", "")
    if decision is not None and decision not in ("block", "approve"):
        raise HookOutputError(f"decision must be \"block\" (or the deprecated \"approve\"), not {decision!r}")
    hso = obj.get("hookSpecificOutput")
    perm = perm_reason = ctx = req_behavior = req_message = None
    updated_input = None
    updated_output: Any = None
    has_updated_output = False
    if hso is not None:
        if not isinstance(hso, dict):
            raise HookOutputError("hookSpecificOutput must be an object")
        w = "hookSpecificOutput."
        _opt_str(hso, "hookEventName", w)
        perm = _opt_str(hso, "permissionDecision", w)
        if perm is not None and perm not in DECISION_RANK:
            raise HookOutputError(f"hookSpecificOutput.permissionDecision must be allow, deny, ask or defer, not {perm!r}")
        perm_reason = _opt_str(hso, "permissionDecisionReason", w)
        ui = hso.get("updatedInput")
        if ui is not None:
            if not isinstance(ui, dict):
                raise HookOutputError("hookSpecificOutput.updatedInput must be an object (it replaces the whole input)")
            updated_input = ui
        ctx = _opt_str(hso, "additionalContext", w)
        req_behavior, req_message = _request_decision(hso.get("decision"))
        if "updatedToolOutput" in hso:
            updated_output = hso["updatedToolOutput"]
            has_updated_output = True
    allowed = obj.get("allowed")
    if allowed is not None and not isinstance(allowed, bool):
        raise HookOutputError("allowed must be true or false")
    if updated_input is None and "updatedInput" in obj:
        ui = obj["updatedInput"]
        if not isinstance(ui, dict):
            raise HookOutputError("updatedInput must be an object (it replaces the whole input)")
        updated_input = ui
    if not has_updated_output and "updatedOutput" in obj:
        updated_output, has_updated_output = obj["updatedOutput"], True
    return HookAnswer(
        json=True,
        continue_=cont,
        stop_reason=_opt_str(obj, "stopReason", ""),
        system_message=_opt_str(obj, "systemMessage", ""),
        suppress_output=suppress,
        decision=decision,
        reason=_opt_str(obj, "reason", ""),
        permission_decision=perm,
        permission_reason=perm_reason,
        updated_input=updated_input,
        additional_context=ctx,
        updated_output=updated_output,
        has_updated_output=has_updated_output,
        allowed=allowed,
        updated_prompt=_opt_str(obj, "updatedPrompt", ""),
        request_behavior=req_behavior,
        request_message=req_message,
        warnings=_key_warnings(obj, hso if isinstance(hso, dict) else None),
    )


# --- running one process -----------------------------------------------------


@dataclass
class _Proc:
    returncode: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_total: int = 0
    timed_out: bool = False
    error: str | None = None


HandlerOutput = _Proc
"""What a handler left: its exit code, output and failure (an in-process ``HookHandler.call`` returns one)."""

EXIT_DRAIN_S = 1.0
"""After a hook exits, how long its pipes are read before whatever still holds them is left behind."""


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _spawn(
    argv: list[str], stdin: bytes, env: dict[str, str], cwd: str, timeout: float,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> _Proc:
    """Run ``argv`` in a new process group, feed it, read both pipes (capped) until exit or timeout.

    ``started`` is told of the process as soon as it runs (so a background
    handler can be killed when the session ends).
    """
    res = _Proc()
    try:
        p = spawn.popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        res.error = f"cannot start: {exc.strerror or exc}"
        res.returncode = 127
        return res
    if started is not None:
        started(p)
    try:
        _pump(p, stdin, time.monotonic() + timeout, res)
    finally:
        for f in (p.stdin, p.stdout, p.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        _kill_group(p)  # the hook's group ends with the hook, whether it exited, timed out or failed
        if p.returncode is None:
            p.wait()
    return res


def _pump(p: subprocess.Popen[bytes], stdin: bytes, deadline: float, res: _Proc) -> None:
    """Feed ``stdin`` and read both pipes (capped) until the process exits or ``deadline``; into ``res``."""
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    sel = selectors.DefaultSelector()
    out_buf = bytearray()
    err_buf = bytearray()
    view = memoryview(stdin)
    written = 0
    try:
        for f in (p.stdin, p.stdout, p.stderr):
            os.set_blocking(f.fileno(), False)
        if stdin:
            sel.register(p.stdin, selectors.EVENT_WRITE)
        else:
            p.stdin.close()
        sel.register(p.stdout, selectors.EVENT_READ)
        sel.register(p.stderr, selectors.EVENT_READ)
        open_reads = 2
        drain_until: float | None = None
        while open_reads:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                res.timed_out = True
                break
            if drain_until is None and p.poll() is not None:
                # the hook is done: what it left running in its group ends with it (as Claude Code's
                # hooks do), and a straggler in a session of its own gets a moment to let go of the pipes
                _kill_group(p)
                drain_until = now + EXIT_DRAIN_S
            elif drain_until is not None and now >= drain_until:
                break
            for key, _ in sel.select(min(left, 0.1)):
                src = key.fileobj
                if src is p.stdin:
                    try:
                        written += os.write(p.stdin.fileno(), view[written : written + 65536])
                    except (BrokenPipeError, ConnectionResetError):
                        written = len(stdin)
                    except BlockingIOError:
                        continue
                    if written >= len(stdin):
                        sel.unregister(p.stdin)
                        p.stdin.close()
                    continue
                pipe = p.stdout if src is p.stdout else p.stderr
                try:
                    chunk = os.read(pipe.fileno(), 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(pipe)
                    open_reads -= 1
                    continue
                if pipe is p.stdout:
                    res.stdout_total += len(chunk)
                    if len(out_buf) < MAX_OUTPUT_BYTES:
                        out_buf += chunk[: MAX_OUTPUT_BYTES - len(out_buf)]
                elif len(err_buf) < MAX_STDERR_BYTES:
                    err_buf += chunk[: MAX_STDERR_BYTES - len(err_buf)]
        if res.timed_out:
            _kill_group(p)
        try:
            res.returncode = p.wait(timeout=max(0.0, deadline - time.monotonic()) + (1.0 if res.timed_out else 0.0))
        except subprocess.TimeoutExpired:
            res.timed_out = True
            _kill_group(p)
            res.returncode = p.wait()
        if res.timed_out:
            res.returncode = None
    finally:
        sel.close()
        res.stdout = bytes(out_buf)
        res.stderr = bytes(err_buf)


# --- outcomes ----------------------------------------------------------------


@dataclass(frozen=True)
class HookResult:
    """What one handler did."""

    handler: HookHandler
    exit_code: int | None
    """None when it timed out (its group was killed)."""
    duration_ms: int
    timed_out: bool = False
    answer: HookAnswer | None = None
    stderr: str = ""
    failure: str | None = None
    """Why the hook failed (timeout, crash, garbage output), or None."""
    blocked: bool = False
    reason: str | None = None
    """The reason shown when it blocks or gives feedback."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.handler.command,
            "source": self.handler.source,
            "exit_code": self.exit_code,
            "duration_ms": self.duration_ms,
        }
        if self.timed_out:
            out["timed_out"] = True
        if self.failure is not None:
            out["failure"] = self.failure
            out["on_failure"] = self.handler.on_failure
        if self.blocked:
            out["blocked"] = True
        if self.reason:
            out["reason"] = self.reason
        a = self.answer
        if a is not None and a.json:
            if a.permission_decision:
                out["permission_decision"] = a.permission_decision
            if a.updated_input is not None:
                out["updated_input"] = a.updated_input
            if a.additional_context:
                out["additional_context"] = a.additional_context
            if not a.continue_:
                out["continue"] = False
            if a.system_message:
                out["system_message"] = a.system_message
            if a.decision:
                out["decision"] = a.decision
        return out


@dataclass(frozen=True)
class HookOutcome:
    """Every handler's result for one event, and what they decided together."""

    event: str
    matcher_value: str | None = None
    results: tuple[HookResult, ...] = ()
    blocked: bool = False
    """The action must not happen (PreToolUse deny or exit 2, a prompt rejected, a Stop kept going...)."""
    reason: str | None = None
    permission_decision: str | None = None
    """PreToolUse only: the combined decision (deny > defer > ask > allow), or None."""
    updated_input: dict[str, Any] | None = None
    additional_context: tuple[str, ...] = ()
    feedback: tuple[str, ...] = ()
    """PostToolUse: reasons shown to the model after the tool ran."""
    system_messages: tuple[str, ...] = ()
    """Warnings for the user."""
    stop: bool = False
    """Some hook said ``continue: false``: stop everything."""
    stop_reason: str | None = None
    updated_output: Any = None
    has_updated_output: bool = False
    warnings: tuple[str, ...] = field(default=())
    updated_prompt: str | None = None
    """Seed 004's ``updatedPrompt`` (UserPromptSubmit): the last handler's, in settings order."""
    request_behavior: str | None = None
    """PermissionRequest: ``deny`` if any handler denied, else ``allow`` if one allowed, else None."""
    request_message: str | None = None

    @property
    def ran(self) -> bool:
        return bool(self.results)

    def to_record(self) -> dict[str, Any]:
        """The payload of the ``hook`` transcript record."""
        out: dict[str, Any] = {
            "event": self.event,
            "matcher_value": self.matcher_value,
            "handlers": [r.to_json() for r in self.results],
            "blocked": self.blocked,
        }
        for k, v in (
            ("reason", self.reason),
            ("permission_decision", self.permission_decision),
            ("updated_input", self.updated_input),
            ("stop_reason", self.stop_reason),
        ):
            if v is not None:
                out[k] = v
        if self.additional_context:
            out["additional_context"] = list(self.additional_context)
        if self.feedback:
            out["feedback"] = list(self.feedback)
        if self.system_messages:
            out["system_messages"] = list(self.system_messages)
        if self.stop:
            out["stop"] = True
        if self.has_updated_output:
            out["updated_output"] = self.updated_output
        if self.updated_prompt is not None:
            out["updated_prompt"] = self.updated_prompt
        if self.request_behavior is not None:
            out["request_behavior"] = self.request_behavior
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def _judge(event: str, h: HookHandler, proc: _Proc, ms: int) -> HookResult:
    """One handler's result from its exit code and output (Claude Code's rules)."""
    stderr = proc.stderr.decode("utf-8", "replace").strip()[:MAX_TEXT]
    failure: str | None = None
    answer: HookAnswer | None = None
    if proc.error is not None:
        failure = proc.error
    elif proc.timed_out:
        failure = f"timed out after {h.timeout:g}s; its process group was killed"
    elif proc.stdout_total > MAX_OUTPUT_BYTES:
        failure = f"printed {proc.stdout_total} bytes, more than the {MAX_OUTPUT_BYTES} allowed"
    else:
        try:
            answer = parse_hook_output(proc.stdout)
        except HookOutputError as exc:
            if proc.returncode == 0:
                failure = f"invalid output: {exc}"
    code = proc.returncode
    if h.seed and failure is None and code not in (0, None) and event not in SEED_OUTPUT_IGNORED:
        # seed 004: "if result.returncode != 0: # Hook signalled a block", stderr (200 chars) the reason
        why = stderr[:SEED_REASON_CHARS] or f"blocked by hook {h.command!r} (exit {code})"
        return HookResult(h, code, ms, False, None, stderr, None, event in CAN_BLOCK, why)
    if failure is None and code not in (0, 2):
        if answer is not None and answer.json:
            # Claude Code processes JSON on exit 0 only; another code is a non-blocking error. A guard
            # that denied in JSON and then exited 1 is still held to its word (stricter, never looser):
            # what restricts stays, what would widen or rewrite (allow, updated input) is dropped.
            widening = answer.permission_decision in ("allow", "ask") or answer.decision == "approve" or (
                answer.updated_input is not None or answer.updated_prompt is not None or answer.has_updated_output)
            answer = replace(
                answer,
                permission_decision=None if answer.permission_decision in ("allow", "ask") else answer.permission_decision,
                decision=None if answer.decision == "approve" else answer.decision,
                updated_input=None, updated_prompt=None, has_updated_output=False, updated_output=None,
                warnings=(*answer.warnings, f"exited with {code}: Claude Code reads a hook's JSON on exit 0 only"
                          + ("; its allow and rewrites are ignored, its denials kept" if widening else "; its denials are kept")),
            )
        else:
            answer = None
            failure = f"exited with {code}" + (f": {stderr}" if stderr else "")
    if failure is not None:
        blocked = h.on_failure == "block"
        reason = f"hook {h.command!r} failed ({failure}) and is configured to fail closed" if blocked else None
        return HookResult(h, code, ms, proc.timed_out, None, stderr, failure, blocked, reason)
    if code == 2:
        # exit 2 ignores stdout; stderr is the reason
        reason = stderr or f"blocked by hook {h.command!r}"
        return HookResult(h, code, ms, False, None, stderr, None, event in CAN_BLOCK, reason)
    assert answer is not None
    blocked = False
    reason = None
    if answer.json:
        if answer.decision == "block" and event in BLOCK_DECISION:
            blocked = event not in FEEDBACK
            reason = answer.reason or f"blocked by hook {h.command!r}"
        if event == "PreToolUse" and answer.permission_decision == "deny":
            blocked = True
            reason = answer.permission_reason or answer.reason or f"denied by hook {h.command!r}"
        if event == "PreToolUse" and answer.decision == "block" and answer.permission_decision is None:
            blocked = True  # the deprecated top-level form
            reason = answer.reason or f"blocked by hook {h.command!r}"
        if answer.allowed is False and (event in CAN_BLOCK or event in FEEDBACK) and not blocked:
            blocked = event not in FEEDBACK  # seed 004: {"allowed": false, "reason": ...}
            reason = answer.reason or f"blocked by hook {h.command!r}"
    return HookResult(h, code, ms, False, answer, stderr, None, blocked, reason)


def _combine(event: str, matcher_value: str | None, results: list[HookResult], warnings: Sequence[str]) -> HookOutcome:
    blocked = False
    reasons: list[str] = []
    feedback: list[str] = []
    ctx: list[str] = []
    msgs: list[str] = []
    stop = False
    stop_reason: str | None = None
    best: str | None = None
    perm_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    updated_output: Any = None
    has_updated_output = False
    updated_prompt: str | None = None
    req: tuple[str | None, str | None] = (None, None)
    warns = list(warnings)
    for r in results:
        a = r.answer
        if a is not None and a.request_behavior is not None and req[0] != "deny":
            req = (a.request_behavior, a.request_message)
        if a is not None:
            warns += [f"hook {r.handler.command!r} ({event}): {w}" for w in a.warnings]
        if event in FEEDBACK and r.reason and not r.failure:
            feedback.append(r.reason)
        if r.blocked:
            blocked = True
            if r.reason:
                reasons.append(r.reason)
        if event == "PreToolUse":
            d: str | None = None
            if r.blocked:
                d = "deny"
            elif a is not None and a.json:
                d = a.permission_decision or ("allow" if a.decision == "approve" else None)
            if d is not None and (best is None or DECISION_RANK[d] > DECISION_RANK[best]):
                best = d
                perm_reason = r.reason if d == "deny" else (a.permission_reason if a is not None else None)
        if a is None:
            continue
        if a.json:
            if not a.continue_:
                stop = True
                stop_reason = stop_reason or a.stop_reason or a.reason  # seed 004 gives continue: false a reason
            if a.system_message:
                msgs.append(a.system_message)
            if a.additional_context:
                ctx.append(a.additional_context)
            if a.updated_input is not None and not r.blocked:
                updated_input = a.updated_input
            if a.has_updated_output:
                updated_output, has_updated_output = a.updated_output, True
            if a.updated_prompt is not None and not r.blocked:
                updated_prompt = a.updated_prompt
        elif a.text and event in PLAIN_CONTEXT and r.exit_code == 0:
            ctx.append(a.text)
    reason = "; ".join(reasons) if reasons else None
    if event == "PreToolUse" and best is not None and best != "deny":
        reason = perm_reason
    if event == "PreToolUse" and best == "deny":
        updated_input = None
    return HookOutcome(
        event=event,
        matcher_value=matcher_value,
        results=tuple(results),
        blocked=blocked or (event == "PreToolUse" and best == "deny"),
        reason=reason,
        permission_decision=best if event == "PreToolUse" else None,
        updated_input=updated_input,
        additional_context=tuple(ctx),
        feedback=tuple(feedback),
        system_messages=tuple(msgs),
        stop=stop,
        stop_reason=stop_reason,
        updated_output=updated_output,
        has_updated_output=has_updated_output,
        warnings=tuple(warns),
        updated_prompt=updated_prompt if event == "UserPromptSubmit" else None,
        request_behavior=req[0] if event == "PermissionRequest" else None,
        request_message=req[1] if event == "PermissionRequest" else None,
    )


def hook_env(env: Mapping[str, str] | None, project_dir: str) -> dict[str, str]:
    """What a hook (or the status line command) starts with: the child environment (never the
    provider keys), no ``OTEL_*``, and ``CLAUDE_PROJECT_DIR``/``AGENTLOOP_PROJECT_DIR``."""
    base = env if isinstance(env, spawn.ChildEnv) else spawn.environment(os.environ if env is None else env)
    base = spawn.ChildEnv(base)  # a copy: what is added below is the hooks' own
    for k in list(base):
        if k.startswith("OTEL_"):
            del base[k]
    base["CLAUDE_PROJECT_DIR"] = project_dir
    base["AGENTLOOP_PROJECT_DIR"] = project_dir
    return base


STATUS_LINE_TIMEOUT = 5.0
STATUS_LINE_ROWS = 8
"""The most rows a status line shows (the rest of its output is left out)."""


def status_line(command: str, payload: Mapping[str, Any], env: Mapping[str, str] | None, project_dir: str,
                timeout: float = STATUS_LINE_TIMEOUT, *, confine: Confine | None = None,
                host_env: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """Run a ``statusLine`` command (Claude Code's settings: ``{"type": "command", "command": ...}``):
    the JSON ``payload`` on stdin, in the hooks' environment and process group, killed after ``timeout``.
    Returns (its stdout's lines, at most ``STATUS_LINE_ROWS`` of 500 characters each, None) or ("", why it failed,
    in a few words). Status line docs, "Display multiple lines": each line the command prints is a row of its own.

    By rule 7, as a hook: ``confine`` (a project's status line) runs it in the sandbox with ``env``; else, or where
    no sandbox is on, it runs on the host with ``host_env`` (no project ``env``; ``env`` when not given)."""
    on_host = hook_env(env if host_env is None else host_env, project_dir)
    argv = [shutil.which("bash", path=on_host.get("PATH")) or "/bin/sh", "-c", command]
    run_env = on_host
    wrapped = confine(argv, project_dir, on_host.get("PATH", ""), (), ()) if confine is not None else None
    if wrapped is not None:
        argv, run_env = wrapped[0], {**hook_env(env, project_dir), **wrapped[1]}
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    proc = _spawn(argv, data, run_env, project_dir, timeout)
    if proc.error is not None:
        return "", proc.error[:80]
    if proc.timed_out:
        return "", f"timed out after {timeout:g}s"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return "", f"exited with {proc.returncode}" + (f": {err[-1][:60]}" if err else "")
    out = proc.stdout.decode("utf-8", "replace").strip("\n").split("\n")
    return "\n".join(line.rstrip("\r")[:500] for line in out[:STATUS_LINE_ROWS]), None


Confine = Callable[[list[str], str, str, Sequence[str], Sequence[str]], tuple[list[str], dict[str, str]] | None]
"""(argv, cwd, PATH, files shown read-only) -> the argv that runs it in the sandbox and extra environment, or None
(no sandbox on). The files are the event's transcripts (``transcript_path``), which hooks written for Claude Code read."""


class HookRunner:
    """The configured hooks of a session, ready to run."""

    def __init__(
        self,
        handlers: Sequence[HookHandler] = (),
        *,
        project_dir: str,
        session_id: str = "",
        transcript_path: str = "",
        cwd: str | None = None,
        permission_mode: str | None = None,
        env: Mapping[str, str] | None = None,
        warnings: Sequence[str] = (),
        confine: Confine | None = None,
        host_env: Mapping[str, str] | None = None,
    ):
        self.handlers = tuple(handlers)
        self.confine = confine
        """Wraps a project hook's argv in the sandbox (``Sandbox.confine``); None: every hook runs as it is."""
        self.project_dir = os.path.abspath(project_dir)
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.cwd = os.path.abspath(cwd or project_dir)
        self.permission_mode = permission_mode
        self.warnings = tuple(warnings)
        base = hook_env(env, self.project_dir)
        self._env = base
        self._host_env = base if host_env is None else hook_env(host_env, self.project_dir)
        """What a handler that runs on the host starts from: no variable a project's ``env`` set (rule 7)."""
        self.managed_only = False
        """Managed settings set ``allowManagedHooksOnly``: front matter hooks are not added either."""
        self.env_file: str | None = None
        """Where SessionStart hooks write ``export`` lines for later Bash calls (``CLAUDE_ENV_FILE``); None: not offered."""
        self._shell = shutil.which("bash", path=self._host_env.get("PATH")) or "/bin/sh"  # found on the host's PATH
        self._async_lock = threading.Lock()
        self._async_done: list[HookOutcome] = []
        self._async_running: list[threading.Thread] = []
        self._async_procs: set[subprocess.Popen[bytes]] = set()

    @classmethod
    def from_settings(
        cls,
        sources: Sequence[SettingsSource],
        *,
        project_dir: str,
        session_id: str = "",
        transcript_path: str = "",
        cwd: str | None = None,
        permission_mode: str | None = None,
        env: Mapping[str, str] | None = None,
        confine: Confine | None = None,
        host_env: Mapping[str, str] | None = None,
    ) -> HookRunner:
        """Read ``hooks`` from every settings source (lowest precedence first); only the managed
        sources' when managed settings set ``allowManagedHooksOnly: true`` (the others are named in a warning).

        Raises:
            ConfigError: a ``hooks`` section is malformed (names the file and place).
        """
        handlers: list[HookHandler] = []
        warnings: list[str] = []
        managed_only = [s.path for s in sources if s.scope == "managed" and s.data.get("allowManagedHooksOnly") is True]
        for s in sources:
            if s.data.get("allowManagedHooksOnly") is not None and s.scope != "managed":
                warnings.append(f"{s.path}: allowManagedHooksOnly is read from managed settings only; ignored")
            if managed_only and s.scope != "managed":
                if s.data.get("hooks"):  # Claude Code: "User, project, and local hooks are ignored"
                    warnings.append(f"{s.path}: hooks not run: {managed_only[-1]} sets allowManagedHooksOnly")
                continue
            hs, ws = hook_section(s)
            if written_by_commands(s.path, [project_dir]):  # a repository's plugin: the model can write it and what it runs
                hs = [replace(h, confined=True) for h in hs]
            handlers += hs
            warnings += ws
        runner = cls(
            handlers,
            project_dir=project_dir,
            session_id=session_id,
            transcript_path=transcript_path,
            cwd=cwd,
            permission_mode=permission_mode,
            env=env,
            warnings=warnings,
            confine=confine,
            host_env=host_env,
        )
        runner.managed_only = bool(managed_only)
        return runner

    def add_scoped(self, hooks: Any, where: str, plugin_root: str | None = None) -> tuple[tuple[HookHandler, ...], list[str]]:
        """Handlers a command's, skill's or agent's front matter ``hooks`` gives (Claude Code's settings shape), added
        until ``remove_scoped``; and warnings. Not added while managed settings set ``allowManagedHooksOnly``.

        Raises:
            ConfigError: the ``hooks`` value is malformed (names ``where``).
        """
        if self.managed_only:
            return (), [f"{where}: front matter hooks not run: managed settings set allowManagedHooksOnly"]
        hs, ws = _handlers_from(SettingsSource(where, "project", {"hooks": hooks}, origin="claude", plugin_root=plugin_root))
        self.handlers = (*self.handlers, *hs)
        return tuple(hs), ws

    def remove_scoped(self, handlers: Sequence[HookHandler]) -> None:
        """Take out what ``add_scoped`` added (the command's turn ended, the skill is no longer active)."""
        self.handlers = tuple(h for h in self.handlers if not any(h is x for x in handlers))

    def confined_source(self) -> Callable[[list[str], str], tuple[list[str], dict[str, str]] | None] | None:
        """How to run what reads ``CLAUDE_ENV_FILE`` (bash sourcing it): in the sandbox, file shown read-only, when a
        confined SessionStart hook may have written it (what it wrote must not run on the host); None: on the host."""
        confine = self.confine
        if confine is None or not any(h.event == "SessionStart" and h.confined for h in self.handlers):
            return None
        return lambda argv, path: confine(argv, self.cwd, self._env.get("PATH", ""), [path], [])

    def has(self, event: str) -> bool:
        event = ALIASES.get(event, event)
        return any(h.event == event for h in self.handlers)

    def matching(self, event: str, matcher_value: str | None, tool_input: Any = None) -> list[HookHandler]:
        """The handlers that run for this event, value and tool input (``if``): each distinct command once."""
        event = ALIASES.get(event, event)
        seen: dict[tuple[str, tuple[str, ...] | None], int] = {}
        out: list[HookHandler] = []
        for h in self.handlers:
            if h.event != event:
                continue
            if event not in NO_MATCHER and not _matches(h.matcher, matcher_value):
                continue
            if h.if_rule is not None and not _if_matches(h.if_rule, matcher_value, tool_input, self.cwd):
                continue
            if h.key in seen:
                # the same handler from two places runs once; if either fails closed, it does
                i = seen[h.key]
                if h.on_failure == "block" and out[i].on_failure != "block":
                    out[i] = replace(out[i], on_failure="block")
                continue
            seen[h.key] = len(out)
            out.append(h)
        return out

    def payload(self, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "hook_event_name": event,
        }
        if self.permission_mode is not None:
            out["permission_mode"] = self.permission_mode
        out.update(fields)
        return out

    def run(self, event: str, payload: Mapping[str, Any], *, matcher_value: str | None = None) -> HookOutcome:
        """Run every matching handler at once and combine their answers.

        ``payload`` holds the event's own fields (``tool_name``, ``tool_input``,
        ``prompt``...); the common ones are added here. Never raises for a
        hook's behaviour: failures are in the outcome.
        """
        event = ALIASES.get(event, event)
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}")
        handlers = self.matching(event, matcher_value, payload.get("tool_input"))
        if not handlers:
            return HookOutcome(event=event, matcher_value=matcher_value)
        full = self.payload(event, payload)
        data = json.dumps(full, ensure_ascii=False, default=str).encode("utf-8")
        shown = tuple(v for k, v in full.items() if k.endswith("transcript_path") and isinstance(v, str) and v)
        for h in handlers:
            if h.run_async:
                self._start_async(event, matcher_value, h, data, shown)
        handlers = [h for h in handlers if not h.run_async]
        if not handlers:
            return HookOutcome(event=event, matcher_value=matcher_value)
        if len(handlers) == 1:
            results = [self._one(event, handlers[0], data, shown)]
        else:
            with ThreadPoolExecutor(max_workers=min(len(handlers), 16)) as pool:
                results = list(pool.map(lambda h: self._one(event, h, data, shown), handlers))
        return _combine(event, matcher_value, results, ())

    def _start_async(self, event: str, matcher_value: str | None, h: HookHandler, data: bytes, shown: Sequence[str]) -> None:
        """Claude Code's ``async: true``: run in the background; the answer is collected later, its decisions ignored.

        Hooks reference, "Run hooks in the background": "Async hooks can't
        block or control Claude's behavior [...] if the hook produced a JSON
        response with an ``additionalContext`` field, that content is
        delivered to Claude as context on the next conversation turn."
        """

        def work() -> None:
            r = self._one(event, h, data, shown, background=True)
            if h.rewake and r.exit_code == 2:  # asyncRewake: the message of its exit 2 is for the model
                said = (r.stderr or (r.answer.text if r.answer is not None else "")).strip()[:MAX_TEXT]
                r = replace(r, answer=HookAnswer(json=True, additional_context=said or None))
            if r.answer is not None:  # decisions have no effect: keep only what async hooks may say
                r = replace(r, blocked=False, reason=None, answer=replace(
                    r.answer, decision=None, permission_decision=None, updated_input=None, continue_=True,
                    allowed=None, updated_prompt=None, has_updated_output=False, updated_output=None))
            else:
                r = replace(r, blocked=False, reason=None)
            with self._async_lock:
                self._async_done.append(_combine(event, matcher_value, [r], ()))

        t = threading.Thread(target=work, name=f"hook-async-{event}", daemon=True)
        with self._async_lock:
            self._async_running.append(t)
        t.start()

    def collect_async(self) -> list[HookOutcome]:
        """The outcomes of background handlers that have finished since the last call."""
        with self._async_lock:
            done, self._async_done = self._async_done, []
            self._async_running = [t for t in self._async_running if t.is_alive()]
        return done

    def cancel_async(self) -> int:
        """Kill the background handlers still running (their process groups); how many there were.

        The session is ending: Claude Code's async hooks do not outlive it,
        and nothing would collect what they say.
        """
        with self._async_lock:
            procs, self._async_procs = list(self._async_procs), set()
        for p in procs:
            _kill_group(p)
        return len(procs)

    @property
    def environment(self) -> dict[str, str]:
        """The environment every hook starts from (a copy)."""
        return spawn.ChildEnv(self._env)

    @property
    def host_environment(self) -> dict[str, str]:
        """The environment a process on the host starts from (a copy): no project ``env`` (rule 7)."""
        return spawn.ChildEnv(self._host_env)

    def env_for(self, event: str, h: HookHandler, *, host: bool = False) -> dict[str, str]:
        """The environment one handler runs with: the hooks' own (``host``: the one without a project's ``env``),
        its plugin's folder for a plugin's hook, and ``CLAUDE_ENV_FILE`` for a SessionStart hook when the session
        keeps one (``env_file``)."""
        base = self._host_env if host else self._env
        if h.plugin_root is None and (event != "SessionStart" or self.env_file is None):
            return base
        env = spawn.ChildEnv(base)
        if h.plugin_root is not None:
            env["CLAUDE_PLUGIN_ROOT"] = h.plugin_root
        if event == "SessionStart" and self.env_file is not None:
            env["CLAUDE_ENV_FILE"] = self.env_file
        return env

    def _one(self, event: str, h: HookHandler, data: bytes, shown: Sequence[str] = (), *, background: bool = False) -> HookResult:
        if h.call is not None:  # its answer is judged as a command's output is
            t0 = time.monotonic()
            done = h.call(data, h.timeout)
            return _judge(event, h, done, int((time.monotonic() - t0) * 1000))
        argv = [h.command, *h.args] if h.args is not None else [self._shell, "-c", h.command]
        env = self.env_for(event, h)
        wrapped = None
        if h.confined and self.confine is not None:  # a project's hook: inside the sandbox, as a Bash command
            env_file = [self.env_file] if event == "SessionStart" and self.env_file is not None else []
            wrapped = self.confine(argv, self.cwd, env.get("PATH", ""), shown, env_file)  # the env file: theirs to write
        if wrapped is not None:
            argv, env = wrapped[0], {**env, **wrapped[1]}
        else:  # on the host: without what a project's env set (BASH_ENV, PATH... naming files the model can write)
            env = self.env_for(event, h, host=True)
        t0 = time.monotonic()
        if background:
            def started(p: subprocess.Popen[bytes]) -> None:
                with self._async_lock:
                    self._async_procs.add(p)

            try:
                proc = _spawn(argv, data, env, self.cwd, h.timeout, started)
            finally:
                with self._async_lock:
                    self._async_procs = {p for p in self._async_procs if p.poll() is None}
        else:
            proc = _spawn(argv, data, env, self.cwd, h.timeout)
        ms = int((time.monotonic() - t0) * 1000)
        return _judge(event, h, proc, ms)
