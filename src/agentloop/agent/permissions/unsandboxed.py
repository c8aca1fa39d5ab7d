"""Running a Bash command outside the sandbox: only by a rule written for it, or a person's answer to a question that says so.

Rules:

1. A Bash call runs outside a sandbox that is on when it asks to
   (``dangerouslyDisableSandbox: true``, unless ``allowUnsandboxedCommands`` is
   false) or when ``sandbox.excludedCommands`` names it. ``outside_reason``
   (in ``pipeline``) is the one place that says so; every permission path asks
   it.
2. Such a call is approved by an ``UnsandboxedBash`` allow rule only:
   ``UnsandboxedBash`` (every command) or ``UnsandboxedBash(pattern)`` with
   Bash's pattern syntax (``UnsandboxedBash(docker build *)``), read as the
   same rule ``Bash(pattern)`` would be read (every command of the line must
   match; deny and ask rules come first). A plain ``Bash`` rule, the mode
   (``acceptEdits``, ``bypassPermissions``), a PreToolUse hook's ``allow`` and
   a PermissionRequest hook's ``allow`` never approve it.
3. Only the user's own rules count: the user's settings files, ``--allowedTools``
   and the REPL's ``/permissions``, and "always" answered to a question that
   said the command runs outside. A project's settings files and a command's
   ``allowed-tools`` cannot name one (``drop_foreign``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..tools.builtin import BASH
from .rules import Decision, PermissionPolicy, RuleError

__all__ = ["UNSANDBOXED_TOOL", "drop_foreign", "how_to_allow", "remember", "unsandboxed_rule"]

UNSANDBOXED_TOOL = "UnsandboxedBash"
"""The tool name of an allow rule for commands that run outside the sandbox (no tool has this name)."""

_NOT_THE_USERS = frozenset({"command", "hook if"})
"""Rule sources a file of the project chose (a custom command's ``allowed-tools``, a hook's ``if``)."""


def unsandboxed_rule(policy: PermissionPolicy, arguments: dict[str, Any]) -> Decision | None:
    """The allow decision of an ``UnsandboxedBash`` rule that covers this Bash call, or None (a person must answer)."""
    own = [b for b in policy.rules if b.behavior == "allow" and b.rule.tool == UNSANDBOXED_TOOL
           and b.source not in _NOT_THE_USERS]
    if not own:
        return None
    probe = dataclasses.replace(policy, mode="default", rules=[b for b in policy.rules if b.behavior != "allow"])
    names: dict[str, str] = {}
    for b in own:
        try:
            if b.rule.kind == "exact":
                made = probe.add_exact("allow", BASH.name, str(b.rule.specifier), source=b.source)
            else:
                made = probe.add_rule("allow", f"Bash({b.rule.text[b.rule.text.index('(') + 1:-1]})"
                                      if b.rule.specifier is not None else BASH.name, source=b.source)
        except RuleError:
            continue
        names[made.text] = b.rule.text
    d = probe.decide(BASH.name, arguments)
    if d.behavior != "allow" or d.rule not in names:
        return None  # a deny or ask rule, or no UnsandboxedBash rule covering every command of the line
    return Decision("allow", names[d.rule], d.source, f"Bash runs outside the sandbox by the rule {names[d.rule]} ({d.source})")


def remember(policy: PermissionPolicy, command: str) -> str:
    """"Always" answered to a question that said the command runs outside: a session rule for exactly this line."""
    return policy.add_exact("allow", UNSANDBOXED_TOOL, command, source="session").text


def how_to_allow(command: str) -> str:
    """The line that tells the user how to let this command run outside the sandbox without a question."""
    shown = command if len(command) <= 60 and "\n" not in command else command.split("\n")[0][:57] + "..."
    return (f"to allow it, add the allow rule UnsandboxedBash({shown}) to your own settings, or pass "
            f"--allowedTools 'UnsandboxedBash({shown})'")


def drop_foreign(policy: PermissionPolicy, project_files: Iterable[str]) -> list[str]:
    """Remove ``UnsandboxedBash`` rules that a project's settings file wrote; one warning line for each."""
    files = set(project_files)
    dropped = [b for b in policy.rules if b.rule.tool == UNSANDBOXED_TOOL and b.behavior == "allow" and b.source in files]
    policy.rules[:] = [b for b in policy.rules if not any(b is d for d in dropped)]
    return [f"{b.source}: the rule {b.rule.text} is ignored: only your own settings (or --allowedTools) may let a "
            "command run outside the sandbox" for b in dropped]
