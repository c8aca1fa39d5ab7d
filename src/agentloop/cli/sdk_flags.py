"""The flags the Claude Agent SDK passes its CLI: accepted, and each honoured, warned about, or refused.

Both SDKs (TypeScript ``@anthropic-ai/claude-agent-sdk`` 0.3.x, Python
``claude-agent-sdk`` 0.2.x) build a command line from their options; these
are the flags they can pass that agentloop's own options lack. Rules:

1. Honoured: ``--permission-prompt-tool stdio`` (``sdk_control`` rule 5),
   ``--max-budget-usd`` (the spend cap, as ``--max-usd``),
   ``--max-thinking-tokens`` and ``--thinking adaptive|enabled|disabled``
   (the thinking budget), ``--system-prompt-file``, ``--session-id`` (the
   new session's id), ``--tools`` (the built-in
   tools not listed are removed, as a bare-name deny rule removes them),
   ``--debug`` (as ``--verbose``), ``--effort max``
   (as ``xhigh``, said in a warning),
   ``--await-initialize`` (stdin is read in order: the initialize request is
   answered before any prompt runs), ``--fork-session`` without a session to
   resume (nothing to fork).
2. Warned about, then ignored (they change nothing about safety or money):
   ``--include-hook-events``, ``--thinking-display``, ``--betas``,
   ``--debug-file``, ``--debug-to-stderr``, ``--channels``,
   ``--no-optional-locks``, ``--porcelain``, ``--initialize-fields``,
   ``--permission-prompts``, ``--hard-fail``, ``--allow-dangerously-skip-permissions``
   (only a session started in bypassPermissions may switch to it: refusing
   is the safe side).
3. Refused with an error naming the flag (agentloop cannot do what it asks,
   and going on would do something else than the caller expects): an MCP
   tool as ``--permission-prompt-tool``, ``--task-budget``, ``--agent``,
   ``--no-session-persistence`` (the transcript is always written),
   ``--resume-session-at``, ``--resume-drops-turn``, ``--session-mirror``,
   ``--sdk-url``, ``--managed-settings``, ``--managed-settings-in-initialize``,
   ``--plugin-dir-no-mcp``, ``--project-config-root``, ``--fork-session``
   with a session to resume, ``--session-id`` that is not a UUID or goes
   with a session to resume, and ``--setting-sources`` that leaves out a kind
   of settings file agentloop reads.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

__all__ = ["REFUSED", "WARNED", "add_sdk_options", "apply_sdk_flags"]

WARNED = {
    "include_hook_events": ("--include-hook-events", "hook events are not streamed; hooks still run and are recorded in the transcript"),
    "thinking_display": ("--thinking-display", "thinking is shown as the provider returns it"),
    "betas": ("--betas", "API beta headers are not sent"),
    "debug_file": ("--debug-file", "agentloop logs to its own log file"),
    "debug_to_stderr": ("--debug-to-stderr", "use --verbose"),
    "channels": ("--channels", "there are no channels"),
    "no_optional_locks": ("--no-optional-locks", "there are no optional locks"),
    "porcelain": ("--porcelain", "the output is the same"),
    "initialize_fields": ("--initialize-fields", "initialize's fields are read as they come"),
    "permission_prompts": ("--permission-prompts", "not understood"),
    "hard_fail": ("--hard-fail", "not understood"),
    "allow_dangerously_skip_permissions": ("--allow-dangerously-skip-permissions",
                                           "bypassPermissions is chosen only by starting the session in it (--permission-mode)"),
}
"""Flag dest -> (flag, why it changes nothing here): said on stderr, then ignored (rule 2)."""

REFUSED = {
    "task_budget": ("--task-budget", "there is no task token budget; cap the spend with --max-budget-usd"),
    "agent": ("--agent", "the main thread cannot run as a named agent; use --system-prompt"),
    "no_session_persistence": ("--no-session-persistence", "agentloop always writes the session's transcript (its audit record)"),
    "resume_session_at": ("--resume-session-at", "resuming at a message is not supported; use agentloop rewind"),
    "resume_drops_turn": ("--resume-drops-turn", "not supported"),
    "session_mirror": ("--session-mirror", "session stores are not supported; sessions are files under agentloop's home"),
    "sdk_url": ("--sdk-url", "only stdin and stdout carry the protocol"),
    "managed_settings": ("--managed-settings", "managed settings are read from their fixed places only"),
    "managed_settings_in_initialize": ("--managed-settings-in-initialize", "managed settings are read from their fixed places only"),
    "plugin_dir_no_mcp": ("--plugin-dir-no-mcp", "a plugin's MCP servers cannot be left out; use --plugin-dir"),
    "project_config_root": ("--project-config-root", "the project's settings are read from the working directory"),
}
"""Flag dest -> (flag, why): an error before anything runs (rule 3)."""

_SETTING_KINDS = ("user", "project", "local")
_THINKING_WORDS = {"adaptive": "on", "enabled": "on", "disabled": "off"}


def add_sdk_options(g: argparse._ArgumentGroup, d: Any) -> None:
    """The SDK's flags, hidden from --help (the README's table lists them)."""
    hide = argparse.SUPPRESS
    g.add_argument("--permission-prompt-tool", default=d(None), metavar="stdio", help=hide)
    g.add_argument("--max-thinking-tokens", type=int, default=d(None), help=hide)
    g.add_argument("--system-prompt-file", default=d(None), help=hide)
    g.add_argument("--tools", default=d(None), help=hide)
    g.add_argument("--setting-sources", default=d(None), help=hide)
    g.add_argument("--fork-session", action="store_true", default=d(False), help=hide)
    g.add_argument("--debug", nargs="?", const="", default=d(None), help=hide)
    g.add_argument("--await-initialize", action="store_true", default=d(False), help=hide)
    g.add_argument("--session-id", default=d(None), help=hide)
    for dest, (flag, _) in {**WARNED, **REFUSED}.items():
        takes_value = dest not in ("include_hook_events", "debug_to_stderr", "no_optional_locks", "porcelain", "hard_fail",
                                   "allow_dangerously_skip_permissions",
                                   "no_session_persistence", "session_mirror", "managed_settings_in_initialize")
        if takes_value:
            g.add_argument(flag, dest=dest, default=d(None), help=hide)
        else:
            g.add_argument(flag, dest=dest, action="store_const", const=True, default=d(None), help=hide)


def apply_sdk_flags(args: argparse.Namespace) -> list[str]:
    """Rules 1 to 3 on ``args`` (changed in place to agentloop's own options); the warnings to show.

    Raises:
        UserError: a refused flag, or a value that cannot be used, naming it.
    """
    from ._common import UserError

    def given(dest: str) -> Any:
        return getattr(args, dest, None)

    for dest, (flag, why) in REFUSED.items():
        if given(dest) not in (None, False):
            raise UserError(f"{flag}: {why}")
    tool = given("permission_prompt_tool")
    if tool is not None and tool != "stdio":
        raise UserError(f"--permission-prompt-tool {tool}: only stdio is supported (the SDK's canUseTool); an MCP tool cannot answer permission questions")
    if given("fork_session") and (given("resume") or given("continue_last")):
        raise UserError("--fork-session: forking a resumed session is not supported; resume it, or start a new one")
    _session_id(given("session_id"), bool(given("resume") or given("continue_last")))
    _setting_sources(given("setting_sources"))
    _thinking(args)
    _system_prompt_file(args)
    if given("debug") is not None:
        args.verbose = True
    warnings = []
    if given("effort") == "max":
        args.effort = "xhigh"
        warnings.append("--effort max is xhigh, the highest effort agentloop's providers take")
    warnings += [f"{flag} is ignored: {why}" for dest, (flag, why) in WARNED.items() if given(dest) not in (None, False)]
    return warnings


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _session_id(value: str | None, resuming: bool) -> None:
    """``--session-id``: the new session's id, a UUID as Claude Code requires (it names the session's file)."""
    from ._common import UserError

    if value is None:
        return
    if not _UUID.match(value):
        raise UserError(f"--session-id {value!r}: must be a UUID in lowercase (8-4-4-4-12 hex digits)")
    if resuming:
        raise UserError("--session-id names a new session; it does not go with --resume or --continue")


def _setting_sources(value: str | None) -> None:
    from ._common import UserError

    if value is None:
        return
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in _SETTING_KINDS]
    if unknown:
        raise UserError(f"--setting-sources {value}: unknown kind {unknown[0]!r} (user, project, local)")
    missing = [k for k in _SETTING_KINDS if k not in kinds]
    if missing:
        raise UserError(f"--setting-sources {value}: agentloop always reads the {', '.join(missing)} settings files; "
                        "leaving them out is not supported (pass user,project,local, or leave the flag out)")


def _thinking(args: argparse.Namespace) -> None:
    from ._common import UserError

    word = getattr(args, "thinking", None)
    if isinstance(word, str) and word in _THINKING_WORDS:
        args.thinking = _THINKING_WORDS[word]
    n = getattr(args, "max_thinking_tokens", None)
    if n is not None:
        if n < 0:
            raise UserError(f"--max-thinking-tokens {n}: must be 0 or more")
        if getattr(args, "thinking", None) == "off" and n:
            raise UserError("--max-thinking-tokens with --thinking disabled: choose one")
        args.thinking = "off" if n == 0 else str(n)


def _system_prompt_file(args: argparse.Namespace) -> None:
    from ._common import UserError

    path = getattr(args, "system_prompt_file", None)
    if path is None:
        return
    if getattr(args, "system_prompt", None):
        raise UserError("--system-prompt-file with --system-prompt: choose one")
    try:
        with open(path, encoding="utf-8") as f:
            args.system_prompt = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--system-prompt-file {path}: cannot read it ({exc})") from None


def tools_to_remove(value: str | None, names: list[str]) -> tuple[list[str], list[str]]:
    """``--tools``: the built-in tools to remove (all but those listed; none for ``default``), and the
    names listed that are no tool (a warning each). MCP tools (``mcp__``) are not built-in and stay."""
    if value is None or value.strip() == "default":
        return [], []
    wanted = [w for w in re.split(r"[,\s]+", value) if w]
    builtin = [n for n in names if not n.startswith("mcp__")]
    return [n for n in builtin if n not in wanted], [w for w in wanted if w not in names]
