"""What a custom command or skill becomes before its turn, and the permission rules that turn holds.

``/name args`` of a custom command (``.claude/commands/``) or a skill gives the
prompt to send and the rules its turn may use (its ``allowed-tools``); its
``disallowed-tools`` deny for that turn only. A command's ``!`cmd``` lines and
```` ```! ```` blocks run at once, as a Bash call of the model's would (through
the one tool-call pipeline: permissions and hooks), under its ``allowed-tools``;
each one's output takes its place. Its ``@path`` mentions attach the files, as
a prompt's do (inside the workspace, unless Read is denied). A skill the model
loads during a turn adds its own rules, which end with the turn too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ..events import ToolCall, ToolResult
from .errors import AgentError
from .tools.builtin import BASH, READ

if TYPE_CHECKING:
    from .permissions.rules import PermissionPolicy

__all__ = ["SlashCommands"]

log = logging.getLogger("agentloop.agent")


ScopedHooks = Callable[[Any, str, str], Callable[[], None] | None]
"""Adds a command's or skill's front matter ``hooks`` (value, its file, its plugin's folder or "") to the session's
hooks; returns what takes them out again (None when nothing was added)."""


class SlashCommands:
    def __init__(self, commands: dict[str, Any], skills: dict[str, Any], *, policy: Callable[[], PermissionPolicy],
                 run_tool: Callable[[ToolCall], ToolResult], cwd: str, roots: Callable[[], list[str]], notice: Callable[[str], None],
                 scoped_hooks: ScopedHooks | None = None):
        self.commands = commands
        self._scoped_hooks = scoped_hooks
        self.submitted: Any = None
        """The UserPromptSubmit answer for the command that starts the next turn (``submit_and_expand``)."""
        self.next_hooks: list[tuple[Any, str, str]] = []
        """The front matter ``hooks`` of the command or skill that starts the next turn: active while it lasts."""
        self.turn_undos: list[Callable[[], None]] = []
        self.skills = skills
        self._policy = policy
        self._run_tool = run_tool
        self._cwd = cwd
        self._roots = roots
        self._notice = notice
        self.turn_grants: list[Any] = []
        self.next_denies: tuple[str, ...] = ()
        """A command's ``disallowed-tools``, set by ``expand``: deny rules for the next turn only."""
        self.next_model: tuple[str, str] | None = None
        """A command's or skill's front matter ``model`` and what asked for it, for the turn it starts."""

    def take_model(self) -> tuple[str, str] | None:
        """The model the command that starts this turn asked for (once), or None."""
        wanted, self.next_model = self.next_model, None
        return wanted

    def drop_turn(self) -> None:
        """The command's turn will not run (its model could not be opened): nothing of it outlives it."""
        self.next_denies, self.next_model, self.next_hooks = (), None, []

    def begin_turn(self, allowed_tools: Sequence[str]) -> None:
        """The turn's rules in force: ``allowed_tools``, and the denies the command that started it left."""
        self.turn_grants += self.grant(allowed_tools)
        denies, self.next_denies = self.next_denies, ()
        self.turn_grants += self.grant(denies, "deny")
        hooks, self.next_hooks = self.next_hooks, []
        for value, where, root in hooks:
            self._activate_hooks(value, where, root)

    def _activate_hooks(self, value: Any, where: str, root: str) -> None:
        """Front matter ``hooks``, active until the turn ends. Skills page, "Hooks in skills and agents": they are
        "scoped to the component's lifecycle and only run when that component is active"."""
        if value is None or self._scoped_hooks is None:
            return
        undo = self._scoped_hooks(value, where, root)
        if undo is not None:
            self.turn_undos.append(undo)

    def end_turn(self) -> None:
        self.revoke(self.turn_grants)
        self.turn_grants = []
        undos, self.turn_undos = self.turn_undos, []
        for undo in undos:
            undo()

    def grant(self, rules: Sequence[str], behavior: Literal["allow", "deny"] = "allow") -> list[Any]:
        """Allow ``rules`` for now (deny and ask rules still come first), or deny them (``disallowed-tools``);
        the bound rules, to revoke."""
        policy = self._policy()
        before = list(policy.rules)
        for text in rules:
            if policy.managed_only(behavior, f"allowed-tools {text}"):
                self._notice(policy.notes[-1])
                continue
            try:
                policy.add_rule(behavior, text, source="command")
            except ValueError as exc:
                log.warning("allowed-tools: %s", exc)
                self._notice(f"allowed-tools: {exc}")
        return [b for b in policy.rules if not any(b is x for x in before)]

    def revoke(self, bound: Sequence[Any]) -> None:
        policy = self._policy()
        policy.rules = [b for b in policy.rules if not any(b is x for x in bound)]

    def skill_loaded(self, skill: Any) -> None:
        """The model loaded a skill: its ``allowed-tools`` hold for the rest of the turn."""
        if getattr(skill, "allowed_tools", ()):
            self.turn_grants += self.grant(skill.allowed_tools)
        if getattr(skill, "disallowed_tools", ()):
            self.turn_grants += self.grant(skill.disallowed_tools, "deny")
        self._activate_hooks(getattr(skill, "hooks", None), skill.path, getattr(skill, "plugin_root", ""))

    def submit_and_expand(self, text: str, submit: Callable[[str], Any]) -> tuple[str, tuple[str, ...]] | None:
        """``expand`` after ``submit`` (the UserPromptSubmit hooks) saw the prompt as typed: hooks reference,
        UserPromptSubmit "runs when the user submits a prompt, before Claude processes it", so before the command's
        ``!`` lines. Its answer is kept for the turn (``take_submitted``). Raises ``AgentError`` when it blocked."""
        name = text[1:].partition(" ")[0] if text.startswith("/") else ""
        if name not in self.commands and name not in self.skills:
            return None
        decision = submit(text)
        if decision.blocked is not None:
            raise AgentError(f"prompt blocked by a hook: {decision.blocked}")
        expanded = self.expand(decision.prompt)
        self.submitted = decision if expanded is not None else None
        return expanded

    def take_submitted(self, prompt: str) -> Any:
        """The UserPromptSubmit answer of the command that starts this turn (once), for ``prompt`` (what the command
        expanded to), or None: then the hooks have not run for this turn yet."""
        decision, self.submitted = self.submitted, None
        return None if decision is None else replace(decision, prompt=prompt)

    def expand(self, text: str) -> tuple[str, tuple[str, ...]] | None:
        """``/name args``: the prompt to send and the rules its turn may use, or None when ``text`` names
        neither a command nor a skill.

        Raises:
            AgentError: a ``!`` line failed (refused, or exited non-zero): Claude Code's
                "Bash command failed for pattern ..." and nothing is sent.
        """
        if not text.startswith("/"):
            return None
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        if name in self.commands:
            cmd = self.commands[name]
            body = cmd.render(rest)
            rules = tuple(cmd.allowed_tools)
            attached = self._attach_mentions(body)
            if "!`" in body or "```!" in body:
                body = self._run_bangs(body, rules)
            self.next_denies = cmd.disallowed_tools  # its disallowed-tools hold for the turn it starts
            self.next_model = None if cmd.model is None else (cmd.model, f"the command /{name}")
            self.next_hooks = [] if cmd.hooks is None else [(cmd.hooks, cmd.path, "")]
            return body + attached, rules
        if name in self.skills:
            sk = self.skills[name]
            body = self._skill_bangs(sk, sk.render(rest))
            self.next_denies = tuple(sk.disallowed_tools)
            self.next_model = None if sk.model is None else (sk.model, f"the skill /{name}")
            self.next_hooks = [] if sk.hooks is None else [(sk.hooks, sk.path, sk.plugin_root)]
            return f"Use the skill {name!r}. Its instructions:\n\n{body}", tuple(sk.allowed_tools)
        return None

    def _skill_bangs(self, skill: Any, body: str) -> str:
        """A skill's ``!`` lines run as a command's do (skills reference, "Inject dynamic context"), under
        its ``allowed-tools``. Raises ``AgentError`` (``/name``) or, in the Skill tool, ``ToolError``."""
        if "!`" not in body and "```!" not in body:
            return body
        return self._run_bangs(body, tuple(getattr(skill, "allowed_tools", ())))

    def skill_tool_bangs(self, skill: Any, body: str) -> str:
        """``_skill_bangs`` for the Skill tool: a failed ``!`` line is the tool's error, which the model reads."""
        from ..tools import ToolError

        try:
            return self._skill_bangs(skill, body)
        except AgentError as exc:
            raise ToolError(str(exc)) from None

    def _attach_mentions(self, body: str) -> str:
        """The files a command's body names with ``@path`` (its ``!`` lines aside), as blocks to append."""
        from .commands import BANG, expand_mentions

        def refuse(real: str) -> str | None:
            d = self._policy().decide(READ.name, {READ.paths[0]: real})
            return f"reading it is denied ({d.reason})" if d.behavior == "deny" else None

        text = BANG.sub("", body)
        out, _attached, refused = expand_mentions(text, self._cwd, self._roots(), refuse=refuse)
        for r in refused:
            self._notice(f"command: {r}")
        return out[len(text):]

    def _run_bangs(self, body: str, rules: Sequence[str]) -> str:
        from .commands import BANG, bang_command, command_failed
        from .hooks.payloads import bash_failure

        granted = self.grant(rules)
        try:
            n = [0]

            def run_one(m: Any) -> str:
                n[0] += 1
                command, pattern = bang_command(m)
                r = self._run_tool(ToolCall(f"bang_{n[0]}", BASH.name, {"command": command}))
                text = str(r.content if isinstance(r.content, str) else r.content) if r.ok else ""
                exited = bash_failure(BASH.name, text if r.ok else (r.error or ""))  # Bash's non-zero exit, ok or not
                if exited is not None and not r.ok:
                    text = (r.error or "").rstrip()  # the output, ending with [exit code N]
                failed = exited or ((r.error or "refused") if not r.ok else None)
                if failed is not None:
                    raise AgentError(command_failed(pattern, f"{failed}\n{text}" if text else failed))
                return text.rstrip("\n")

            return BANG.sub(run_one, body)
        finally:
            self.revoke(granted)
