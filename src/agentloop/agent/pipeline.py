"""One tool call, from the model's request to the result the model sees: the agent's and its sub-agents' alike.

``ToolPipeline(call)`` runs the steps in this order, and nothing else runs a
tool for the agent:

1. prepare: the registry checks the tool's name and arguments (a refusal is the result);
2. a call that would send a held secret off this machine (WebFetch, WebSearch, an MCP tool: its arguments, in any
   shape) is refused; the values of the call's secret arguments join the redactor (hidden from every later output);
3. PreToolUse hooks: refuse (the result), rewrite the arguments (prepared again), or allow;
4. the permission decision: rules, then the mode; a hook's allow skips the mode's
   own prompt (deny and ask rules still apply); a Bash command the sandbox cannot
   hold asks a person; a Bash command that would run outside the sandbox
   (``outside_reason``) is approved only by an ``UnsandboxedBash`` rule or a
   person asked a question that says so (``permissions/unsandboxed.py``);
5. asking: the agent's asker when there is one ("always" adds a session rule;
   a refusal with ``interrupt`` stops the turn: the reply's later calls are not
   run and the run ends before the next model call, ``ToolCalls.check_stop``);
   without one (``-p``, a sub-agent) an ask is a refusal;
6. invoke;
7. PostToolUse (or PostToolUseFailure) hooks;
8. redaction of the tool's output and of the hooks' texts (secrets never reach the model).

The parent builds one for each call from what it holds now (its registry is
rebuilt when the session changes, and a front end sets its asker later); a
sub-agent's executor builds one over the child's registry with ``child=True``
(refusals say so; no one is asked).

A command the user typed (the REPL's ``!`` line, Claude Code's Bash mode) goes
through the same pipeline (``ToolPipeline.typed``): prepared, its secret
arguments noted, invoked in the sandbox and redacted, but no tool hook sees it
and no one is asked, as Claude Code runs Bash mode.

``run_batch`` runs a turn's calls, each through the pipeline, by the one
scheduler (``run.schedule``): consecutive calls that may overlap side by side (``ToolPipeline.alongside``:
read-only or ``concurrent`` tools, the ``Agent`` tool's included), every other call alone. No other
path runs a tool.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..events import Observer, ToolCall, ToolFinished, ToolResult
from ..run import may_overlap, schedule
from ..tools import Registry, Tool
from .protocols import AgentHooks, AskPermission, HookFacts, PermissionAnswer, PermissionReply
from .tools.builtin import BASH

__all__ = ["OUTSIDE_THE_SANDBOX", "CallSource", "ToolCalls", "ToolPipeline", "outside_reason", "run_batch"]

OUTSIDE_THE_SANDBOX = "runs OUTSIDE the sandbox"
"""In the question about every Bash command that would run outside the sandbox (``outside_reason``), whoever asks."""

log = logging.getLogger("agentloop.agent")


current_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentloop_tool_call_id", default=None)
"""The id of the call whose tool runs in this context now (a sub-agent's streamed turns name their ``Agent`` call)."""

if TYPE_CHECKING:
    from .permissions.rules import PermissionPolicy
    from .sandbox.bubblewrap import Sandbox
    from .secret_guard import SecretGuard


@dataclass(frozen=True, slots=True)
class CallSource:
    """What the agent's tool calls run with, made once by ``agent/builder.py`` (``call_source``): each read when a
    call's pipeline is built (the registry and rules are rebuilt with the session, a front end sets its asker
    later), so ``ToolCalls`` is never handed the agent and cannot change it."""

    registry: Callable[[], Registry]
    hooks: Callable[[], AgentHooks]
    policy: Callable[[], PermissionPolicy]
    sandbox: Callable[[], Sandbox]
    secrets: Callable[[], SecretGuard]
    ask: Callable[[], AskPermission | None]
    facts: HookFacts
    count_tool: Callable[[str, bool], None]
    """Counts a finished call in the session's stats."""
    kill_all: Callable[[], object]
    """Ends what the calls started (Ctrl+C)."""


@dataclass(frozen=True)
class ToolPipeline:
    registry: Registry
    hooks: AgentHooks
    owner: HookFacts
    """What the hooks are told of the session (they record into its chain)."""
    policy: PermissionPolicy
    sandbox: Sandbox
    """A ``sandbox.Sandbox``: ``needs_prompt(command)`` names why a command needs a person, or None."""
    redact: Callable[[ToolResult], ToolResult]
    note_secrets: Callable[[Tool, ToolCall], None]
    ask: AskPermission | None = None
    on_always: Callable[[ToolCall], object] | None = None
    """The user answered "always": remember a session rule."""
    on_denied: Callable[[ToolCall], None] | None = None
    """The permission system refused the call (Claude Code's ``permission_denials``)."""
    on_invoke: Callable[[str | None], None] | None = None
    """Told the call's id before the tool runs and None after (file changes name their call)."""
    child: bool = False
    """A sub-agent's call: no one is asked, and refusals say it was the sub-agent's."""
    on_stop: Callable[[], None] | None = None
    """The asker refused and asked to stop the turn (``PermissionReply.interrupt``)."""
    held_secret: Callable[[ToolCall], str | None] | None = None
    """The held secret a call would send off this machine (``SecretGuard.held_in_arguments``): such a call is refused."""

    def __call__(self, call: ToolCall) -> ToolResult:
        t, refusal = self.registry.prepare(call)
        if refusal is not None or t is None:
            return refusal or ToolResult(call.id, call.name, False, error="tool unavailable")
        held = self.held_secret(call) if self.held_secret is not None else None
        if held is not None:  # before the call's own secret arguments join the redactor
            return self.redact(ToolResult(call.id, call.name, False, error=(
                f"{call.name} was not run: an argument holds a secret ({held}, in some shape) that it would send off this machine")))
        self.note_secrets(t, call)
        hooked = self.hooks.pre_tool_use(self.owner, call)
        if isinstance(hooked, ToolResult):
            return self.redact(hooked)
        if hooked is not call:
            call = ToolCall(call.id, call.name, hooked.arguments)
            _, refusal = self.registry.prepare(call)
            if refusal is not None:
                return refusal
        refused = self._permit(call)
        if isinstance(refused, ToolCall):  # allowed with the arguments the answerer gave
            call = refused
        elif refused is not None:
            return refused
        if self.on_invoke is not None:
            self.on_invoke(call.id)
        token = current_call_id.set(call.id)
        try:
            result = self.redact(self.registry.invoke(call))
        finally:
            current_call_id.reset(token)
            if self.on_invoke is not None:
                self.on_invoke(None)
        return self.redact(self.hooks.post_tool_use(self.owner, call, result))

    def alongside(self, call: ToolCall) -> bool:
        """Whether ``call`` may run beside the other calls of its wave (``run.waves``): its tool declares that it
        may (read-only or ``concurrent``: ``run.may_overlap``), the rules allow it as it is, and no tool hook
        sees it (hooks record from the calling thread, in call order). The agent's batches and a sub-agent's
        are decided alike."""
        if not may_overlap(self.registry, call) or not isinstance(call.arguments, dict) or self.hooks.sees_tool_calls():
            return False
        return getattr(self.policy.decide(call.name, call.arguments), "behavior", "deny") == "allow"

    def typed(self, call: ToolCall) -> ToolResult:
        """A command the user typed (the REPL's ``!`` line): steps 1, 2, 6 and 8 only.

        Claude Code fires no PreToolUse or PostToolUse hook for Bash mode and asks
        nothing (the user typed it); the tool still runs in the sandbox, and what
        reaches the screen and the next prompt is redacted here, as every output is.
        """
        t, refusal = self.registry.prepare(call)
        if refusal is not None or t is None:
            return self.redact(refusal or ToolResult(call.id, call.name, False, error="tool unavailable"))
        self.note_secrets(t, call)
        if self.on_invoke is not None:
            self.on_invoke(call.id)
        token = current_call_id.set(call.id)
        try:
            return self.redact(self.registry.invoke(call))
        finally:
            current_call_id.reset(token)
            if self.on_invoke is not None:
                self.on_invoke(None)

    def _permit(self, call: ToolCall) -> ToolResult | ToolCall | None:
        """Steps 4 and 5: None to go on, the refusal, or the call with the arguments the asker allowed instead."""
        d = self.policy.decide(call.name, call.arguments)
        behavior = getattr(d, "behavior", "deny")
        if call.name == BASH.name and isinstance(call.arguments, dict):
            outside = outside_reason(self.sandbox, call.arguments)
            if outside is not None:  # the one decision for a command that would run outside the sandbox
                return self._permit_outside(call, d, outside)
        if behavior in ("ask", "deny") and getattr(d, "by_mode", False) and self.hooks.approved(call):
            behavior = "allow"  # Claude Code: a hook's "allow" skips the prompt (and dontAsk's refusal); rules were checked above
        outside = None
        if call.name == BASH.name and behavior == "allow" and isinstance(call.arguments, dict):
            outside = self.sandbox.needs_prompt(str(call.arguments.get("command", "")))
            if outside is not None:  # the sandbox is the wall: without it, a person decides
                from .permissions.rules import Decision

                behavior, d = "ask", Decision("ask", None, None, outside)
        if self.child:
            if behavior == "allow":
                return None
            why = outside or getattr(d, "reason", "") or "a permission rule"
            return ToolResult(call.id, call.name, False, error=f"permission to use {call.name} was not granted to the sub-agent ({why})")
        if behavior == "ask":
            verdict = self.hooks.permission_request(self.owner, call)  # Claude Code: before the dialog, hooks may answer it
            if verdict is not None:
                if verdict[0] == "allow":
                    return None
                return self._deny(call, f"a PermissionRequest hook denied {call.name}: {verdict[1] or 'no reason given'}")
            return self._ask_person(call, d)
        if behavior != "allow":
            why = getattr(d, "reason", "") or (f"rule {d.rule}" if getattr(d, "rule", None) else "a permission rule")
            log.info("denied %s: %s", call.name, why)
            return self._deny(call, f"permission to use {call.name} was denied ({why})")
        return None

    def _permit_outside(self, call: ToolCall, d: Any, outside: str) -> ToolResult | ToolCall | None:
        """A Bash call that would run outside the sandbox: an ``UnsandboxedBash`` rule of the user's, or a person
        asked a question that says so (``permissions/unsandboxed.py``). Nothing else approves it."""
        from .permissions.rules import Decision
        from .permissions.unsandboxed import how_to_allow, remember, unsandboxed_rule

        command = str(call.arguments.get("command", ""))
        if getattr(d, "behavior", "deny") == "deny":
            return self._deny(call, f"permission to use Bash was denied ({getattr(d, 'reason', '') or 'a permission rule'})")
        if unsandboxed_rule(self.policy, call.arguments) is not None:
            return None
        refusal = f"Bash was not run: {outside}; {how_to_allow(command)}"
        if self.child:
            return ToolResult(call.id, call.name, False, error=f"permission to use Bash was not granted to the sub-agent. {refusal}")
        if self.policy.mode == "dontAsk":
            return self._deny(call, f"{refusal} (the mode is dontAsk)")
        verdict = self.hooks.permission_request(self.owner, call)  # a hook may refuse it, never approve it alone
        if verdict is not None and verdict[0] != "allow":
            return self._deny(call, f"a PermissionRequest hook denied Bash: {verdict[1] or 'no reason given'}")
        if self.ask is None:
            log.info("denied Bash outside the sandbox: no one could be asked")
            return self._deny(call, f"{refusal} (no one could be asked)")
        return self._ask_person(call, Decision("ask", None, None, outside), always=lambda: remember(self.policy, command))

    def _ask_person(self, call: ToolCall, d: Any, always: Callable[[], object] | None = None) -> ToolResult | ToolCall | None:
        """Step 5: the asker decides (None to go on); without one, a refusal."""
        if self.ask is None:
            log.info("denied %s: ask without a terminal", call.name)
            return self._deny(call, f"permission to use {call.name} was not granted: no one could be asked (non-interactive)")
        self.hooks.notification(self.owner, f"agentloop needs your permission to use {call.name}", "permission_prompt")
        return self._asked(call, self.ask(call, d), always)
    def _asked(self, call: ToolCall, reply: PermissionAnswer | PermissionReply,
               always: Callable[[], object] | None = None) -> ToolResult | ToolCall | None:
        """Step 5's answer (``always``: what "always" remembers, when not a session rule for the call). Other
        arguments are prepared again and must pass the rules again: what the asker allowed is a call no deny
        rule or protected path refuses."""
        answer, message, arguments = (reply.answer, reply.message, reply.arguments) if isinstance(reply, PermissionReply) else (reply, "", None)
        if answer == "deny":
            if isinstance(reply, PermissionReply) and reply.interrupt and self.on_stop is not None:
                self.on_stop()
            return self._deny(call, f"the user refused permission to use {call.name}" + (f": {message}" if message else ""))
        if answer == "always":
            if always is not None:
                always()
            elif self.on_always is not None:
                self.on_always(call)
        if arguments is None or arguments == call.arguments:
            return None
        changed = ToolCall(call.id, call.name, arguments)
        _, refusal = self.registry.prepare(changed)
        if refusal is not None:
            return refusal
        d = self.policy.decide(changed.name, changed.arguments)
        if getattr(d, "behavior", "deny") == "deny":
            why = getattr(d, "reason", "") or (f"rule {d.rule}" if getattr(d, "rule", None) else "a permission rule")
            return self._deny(call, f"permission to use {call.name} with the arguments given instead was denied ({why})")
        if changed.name == BASH.name and isinstance(arguments, dict) and outside_reason(self.sandbox, call.arguments) is None:
            outside = outside_reason(self.sandbox, arguments)
            if outside is not None:  # the question said nothing of outside: the answer's arguments decide nothing there
                got = self._permit_outside(changed, d, outside)
                return changed if got is None else got
        return changed

    def _deny(self, call: ToolCall, error: str) -> ToolResult:
        if self.on_denied is not None:
            self.on_denied(call)
        return ToolResult(call.id, call.name, False, error=error)


class ToolCalls:
    """The agent's tool calls: each through a ``ToolPipeline`` built from what the agent holds now (``CallSource``).

    It keeps what the calls leave behind: the calls the permission system
    refused (Claude Code's ``permission_denials``), the rules the user allowed
    for the rest of the session ("always"), and the call running now (a file
    change names it).
    """

    def __init__(self, source: CallSource):
        self.source = source
        self.denials: list[dict[str, Any]] = []
        self.current: str | None = None
        self.stopping = False
        """The user refused a call and stopped the turn: its other calls are not run, and ``check_stop`` ends the run."""

    def pipeline(self, registry: Registry | None = None, *, child: bool = False, policy: PermissionPolicy | None = None) -> ToolPipeline:
        """The pipeline over ``registry`` (default: the agent's): a sub-agent's when ``child`` (no one is asked),
        under ``policy`` (a child's: the agent's rules re-rooted at its worktree) or the agent's own."""
        a = self.source
        reg, sec = registry or a.registry(), a.secrets()
        if child:
            return ToolPipeline(reg, a.hooks(), a.facts, policy or a.policy(), a.sandbox(), sec.redact_result, sec.note_secret_args,
                                child=True, held_secret=sec.held_in_arguments)
        return ToolPipeline(reg, a.hooks(), a.facts, a.policy(), a.sandbox(), sec.redact_result, sec.note_secret_args,
                            ask=a.ask(), on_always=self.always, on_denied=self._denied, on_invoke=self._invoking,
                            on_stop=self.stop_turn, held_secret=sec.held_in_arguments)

    def run(self, call: ToolCall) -> ToolResult:
        if self.stopping:  # a call after the one the user refused, in the same reply: not run, not asked
            return ToolResult(call.id, call.name, False, error="not run: the user refused an earlier call of this turn and stopped it")
        return self.pipeline()(call)

    def check_stop(self, state: Any, record: Any) -> str | None:
        """Part of the run's ``prepare``: a turn the user stopped at a permission question ends, as an interrupt,
        before the model is called again (the refusal is the call's result)."""
        if not self.stopping:
            return None
        self.stopping = False
        return "interrupted"

    def stop_turn(self) -> None:
        """The user refused a call and stopped the turn (at the pipeline's question, or a hook's)."""
        self.stopping = True

    def run_typed(self, call: ToolCall) -> ToolResult:
        """A command the user typed (``ToolPipeline.typed``): no hook, no question, redacted by the pipeline."""
        return self.pipeline().typed(call)

    def execute(self, calls: Sequence[ToolCall], emit: Observer) -> list[ToolResult]:
        """A turn's calls (``run_batch``): side by side when each is read-only, allowed, and no tool hook sees it."""
        return run_batch(calls, self.run, emit, alongside=self.pipeline().alongside, count=self.source.count_tool,
                         on_interrupt=self.source.kill_all)

    def always(self, call: ToolCall) -> str:
        """"Always" at a prompt: a session rule allowing exactly what was approved (``toolbox.session_rule``)."""
        from .toolbox import session_rule

        return session_rule(self.source.policy(), call)

    def _denied(self, call: ToolCall) -> None:
        self.denials.append({"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.arguments})

    def _invoking(self, call_id: str | None) -> None:
        self.current = call_id


def run_batch(calls: Sequence[ToolCall], one: Callable[[ToolCall], ToolResult], emit: Observer, *,
              alongside: Callable[[ToolCall], bool], count: Callable[[str, bool], None],
              on_interrupt: Callable[[], object]) -> list[ToolResult]:
    """A turn's calls, each through ``one`` (the pipeline), their results in call order, by the one
    scheduler (``run.schedule``).

    Consecutive calls that ``alongside`` passes (read-only or ``concurrent``,
    allowed, no tool hook sees it) side by side (at most 10, or the turn's
    ``run.turn_rules``); every other call alone.
    ``count`` is told each call's tool and whether it succeeded. Ctrl+C in a
    call ends what the calls started (``on_interrupt``), counts the calls not
    finished as failed, and goes on up (the run records ``interrupted``; the
    call gets no tool_result).
    """
    finished: list[ToolResult] = []

    def counted(c: ToolCall) -> ToolResult:
        r = one(c)
        finished.append(r)
        return r

    def interrupted(c: ToolCall | None) -> None:
        if c is None:  # side by side: every call not finished counts as failed
            done = {r.call_id for r in finished}
            for r in finished:
                count(r.name, r.ok)
            for x in calls:
                if x.id not in done:
                    count(x.name, False)
            return
        for r in finished:
            count(r.name, r.ok)
        on_interrupt()
        count(c.name, False)
        emit(ToolFinished(ToolResult(c.id, c.name, False, error="interrupted by the user")))

    results = schedule(calls, counted, emit, alongside=alongside, on_interrupt=interrupted)
    for r in results:
        count(r.name, r.ok)
    return results


def outside_reason(sandbox: Sandbox, arguments: dict[str, Any]) -> str | None:
    """Why this Bash call would run OUTSIDE a sandbox that is on (the question's text), or None.

    The call asks to (``dangerouslyDisableSandbox``; ignored when
    ``allowUnsandboxedCommands`` is false, the command then runs inside), or
    ``sandbox.excludedCommands`` names the command. None when no sandbox is on.
    """
    if not getattr(sandbox, "active", False):
        return None
    command = str(arguments.get("command", ""))
    if sandbox.excluded(command):
        return f"this command {OUTSIDE_THE_SANDBOX} (sandbox.excludedCommands), with your access to files and network"
    if arguments.get("dangerouslyDisableSandbox") is not True:
        return None
    if not sandbox.settings.allow_unsandboxed:
        return None
    return (f"the model asks that this command {OUTSIDE_THE_SANDBOX} (dangerouslyDisableSandbox), "
            "with your access to files, keys and network")
