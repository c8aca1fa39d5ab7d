"""The agent's Claude Code hooks and its context manager: ``ClaudeHooks`` and ``AgentContext``.

``ClaudeHooks`` is the ``AgentHooks`` the builder gives an agent whose settings
configure hooks: Claude Code's events, their answers, and a ``hook`` record in
the session's chain for every decision (through ``HookFacts.record``).
``AgentContext`` is its ``ContextManager``: masking, compaction, the loop check
and the sub-agents' budget binding, all through the run's ``prepare`` seam, and
the executor that runs read-only sub-agents side by side, each call through the
agent's one tool-call pipeline (``ContextFacts.run_tool``). ``agent/builder.py``
makes both; neither is handed the agent: each method is given the frozen value
the builder made (``HookFacts`` / ``ContextFacts``, ``agent/protocols.py``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..budget import Ledger, Price
from ..events import Message, ModelRequest, ToolCall, ToolResult
from ..model_description import describe
from ..run import turn_rules
from .context.compaction import Compactor
from .context.loop_check import LoopCheck, chain
from .context.side_calls import Account, LedgerAccount
from .hooks.env_file import new_env_file, read_env_file
from .hooks.payloads import (
    absolute_input,
    bash_failure,
    model_text,
    seed_fields,
    seed_stop_reason,
    tool_response,
    write_claude_transcript,
)
from .hooks.runner import MAX_TEXT, HookOutcome, HookRunner
from .hooks.stop_gate import stop_feedback
from .protocols import ContextFacts, HookFacts
from .subagents.background import Backgrounds
from .subagents.parent_budget import ParentBudget
from .subagents.runner import SubagentRunner

__all__ = ["AgentContext", "ClaudeHooks", "loop_check_model", "stop_failure_type"]

log = logging.getLogger("agentloop.agent")


def _text(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


class ClaudeHooks:
    """``AgentHooks`` backed by a ``HookRunner``: Claude Code's events, answers and records."""

    def __init__(self, runner: HookRunner):
        self.runner = runner
        self.stop_request: str | None = None
        """Set when a hook answered ``continue: false``: the run stops before its next model call."""
        self._pre_context: dict[str, list[str]] = {}
        self._approved: set[str] = set()
        self._transcript_mark: tuple[str, int, int] | None = None
        """What the Claude Code transcript mirror was last written from (it is rewritten only when that changes)."""
        self.child: dict[str, str] = {}
        """A sub-agent's ``agent_id`` and ``agent_type``, added to every event its calls fire (``for_child``)."""

    def for_child(self, agent_id: str, agent_type: str) -> ClaudeHooks:
        """The same hooks for a sub-agent's tool calls: its events carry ``agent_id`` and ``agent_type``, as
        Claude Code's hook input does "when the hook fires from within a subagent" (absent for the main thread)."""
        out = ClaudeHooks(self.runner)
        out.child = {"agent_id": agent_id, "agent_type": agent_type}
        return out

    def add_handlers(self, handlers: Sequence[Any]) -> None:
        """A front end's own handlers (the Agent SDK's callbacks), beside the settings' ones."""
        self.runner.handlers += tuple(handlers)

    def _sync(self, facts: HookFacts) -> None:
        s = facts.session()
        if s is not None:
            self.runner.session_id = s.id
            self.runner.transcript_path = self._claude_transcript(facts, s)
        self.runner.permission_mode = facts.permission_mode()

    def _claude_transcript(self, facts: HookFacts, s: Any) -> str:
        """``transcript_path``: the conversation in Claude Code's message lines, beside the hash-chained session.

        Hooks written for Claude Code read ``transcript_path`` as JSONL of
        ``{"type": "user" | "assistant", "message": {...}}``; the session's own
        file holds agentloop's records, so this mirror
        is rewritten before each hook runs. It lives in the session's own folder
        (``<session id>/claude-transcript.jsonl``, beside ``tool-results/`` and
        ``subagents/``), so session listings never mistake it for a session. It is a view for hooks, not a record:
        ``agentloop verify`` checks the session file. If it cannot be written,
        hooks get the session file's path instead (and a warning is logged).
        """
        path = os.path.join(os.path.dirname(s.path), s.id, "claude-transcript.jsonl")
        msgs = getattr(s, "messages", [])
        mark = (path, len(msgs), id(msgs[-1]) if msgs else 0)
        if self._transcript_mark == mark and os.path.exists(path):
            return path  # unchanged since the last hook (inside a turn the session's messages move at its end)
        if not write_claude_transcript(path, msgs, s.id, facts.cwd()):
            log.warning("cannot write the Claude Code transcript for hooks at %s", path)
            return str(s.path)
        self._transcript_mark = mark
        return path

    def fire(self, facts: HookFacts, event: str, payload: dict[str, Any], matcher_value: str | None = None) -> HookOutcome:
        if not self.runner.has(event):
            return HookOutcome(event=event, matcher_value=matcher_value)
        self._sync(facts)
        out = self.runner.run(event, {**payload, **self.child} if self.child else payload, matcher_value=matcher_value)
        if out.ran:
            facts.record("hook", out.to_record())
        for msg in out.system_messages:
            self._notice(facts, msg)
        for r in out.results:
            if r.failure and not r.blocked:  # a failure that lets the action go ahead is never silent
                self._notice(facts, f"hook {r.handler.command!r} ({event}) failed and did not stop anything: {r.failure}")
        for w in out.warnings:
            self._notice(facts, w)  # a misspelt key ({"decison": "block"}) must not fail open in silence
        if out.stop:
            self.stop_request = out.stop_reason or f"a {event} hook asked to stop"
            self._notice(facts, f"stopped by a {event} hook: {self.stop_request}")
        return out

    @staticmethod
    def _notice(facts: HookFacts, text: str) -> None:
        log.warning("hook: %s", text)
        cb = facts.on_notice()
        if cb is not None:
            cb(text)

    # -- AgentHooks --

    def session_start(self, facts: HookFacts, source: str) -> str:
        """SessionStart: its hooks' context for the model; what they export through ``CLAUDE_ENV_FILE`` reaches Bash
        (``agent/hooks/env_file.py``)."""
        s = facts.session()
        if s is not None and self.runner.has("SessionStart"):
            try:
                self.runner.env_file = new_env_file(os.path.join(os.path.dirname(s.path), s.id))
            except OSError as exc:
                self.runner.env_file = None
                self._notice(facts, f"CLAUDE_ENV_FILE cannot be made for SessionStart hooks: {exc}")
        out = self.fire(facts, "SessionStart", {"source": source, "model": facts.model_spec(), **seed_fields("SessionStart")}, source)
        self.carry_env_file(facts)
        return "\n\n".join(out.additional_context)

    def scoped_hooks(self, facts: HookFacts, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None:
        """A command's or skill's front matter ``hooks`` added to the session's hooks while it is active; what takes
        them out again. A folder's own need its trust (folder trust covers what runs on the host)."""
        from ..config.settings import ConfigError
        from .plugins import expand_plugin_root

        real, cwd = os.path.realpath(where), os.path.realpath(facts.cwd())
        if not trusted and (real == cwd or real.startswith(cwd + os.sep)):
            self._notice(facts, f"{where}: front matter hooks not run: this folder is not trusted (folder trust covers what runs)")
            return None
        try:
            added, warnings = self.runner.add_scoped(expand_plugin_root(value, plugin_root) if plugin_root else value,
                                                     where, plugin_root or None)
        except ConfigError as exc:
            self._notice(facts, f"front matter hooks not run: {exc}")
            return None
        for w in warnings:
            self._notice(facts, w)
        return lambda: self.runner.remove_scoped(added)

    def carry_env_file(self, facts: HookFacts) -> None:
        """The variables SessionStart hooks wrote to ``CLAUDE_ENV_FILE``, added to the environment Bash starts with."""
        path, self.runner.env_file = self.runner.env_file, None
        if path is None:
            return
        wrap = self.runner.confined_source()  # None: the user's hooks wrote it, and it is sourced on the host
        base = self.runner.environment if wrap is not None else self.runner.host_environment
        exports, warnings = read_env_file(path, base, self.runner.cwd, wrap=wrap)
        if exports:
            warnings += facts.carry_env(exports, "CLAUDE_ENV_FILE")
        for w in warnings:
            self._notice(facts, w)

    def user_prompt_submit(self, facts: HookFacts, prompt: str) -> Any:
        from .protocols import PromptDecision

        self.stop_request = None
        late = self.collect_async(facts)
        out = self.fire(facts, "UserPromptSubmit", {"prompt": prompt, **seed_fields("UserPromptSubmit")})
        if out.blocked or out.stop:
            return PromptDecision(prompt, blocked=out.reason or out.stop_reason or "blocked by a UserPromptSubmit hook")
        return PromptDecision(out.updated_prompt if out.updated_prompt is not None else prompt, context="\n\n".join([*late, *out.additional_context]))

    def collect_async(self, facts: HookFacts) -> list[str]:
        """Background (``async``) handlers that finished: recorded, their messages shown, their context returned."""
        ctx: list[str] = []
        for out in self.runner.collect_async():
            facts.record("hook", {**out.to_record(), "async": True})
            for msg in out.system_messages:
                self._notice(facts, msg)
            ctx += [c for c in out.additional_context if c]
        return ctx

    def _tool_input(self, facts: HookFacts, call: ToolCall) -> Any:
        return absolute_input(call.name, call.arguments, facts.cwd() or self.runner.cwd)

    def pre_tool_use(self, facts: HookFacts, call: ToolCall) -> ToolCall | ToolResult:
        """PreToolUse: deny, ask, allow (remembered for ``approved``) or rewrite the call.

        Claude Code's hooks reference, PreToolUse decision control:
        ``"allow"`` skips the permission prompt, ``"deny"`` prevents the call,
        ``"ask"`` prompts the user; deny and ask rules are still evaluated.
        """
        self._approved.discard(call.id)
        tool_input = self._tool_input(facts, call)
        payload = {"tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id, **seed_fields("PreToolUse", call.name, tool_input)}
        out = self.fire(facts, "PreToolUse", payload, call.name)
        if out.additional_context:
            self._pre_context[call.id] = list(out.additional_context)
        if out.stop:
            return ToolResult(call.id, call.name, False, error=f"stopped by a hook: {self.stop_request}")
        if out.permission_decision == "deny" or out.blocked:
            return ToolResult(call.id, call.name, False, error=f"a PreToolUse hook denied {call.name}: {out.reason or 'no reason given'}")
        if out.permission_decision == "ask":
            ask = facts.ask_permission()
            if ask is None:
                return ToolResult(call.id, call.name, False, error=f"a hook asked for approval of {call.name} and no one could be asked (non-interactive)")
            reply = ask(call, out)
            if getattr(reply, "answer", reply) == "deny":  # a word, or a PermissionReply carrying one
                why = getattr(reply, "message", "")
                if getattr(reply, "interrupt", False):
                    facts.stop_turn()  # the turn stops after this call, as at the pipeline's own question
                return ToolResult(call.id, call.name, False, error=f"the user refused permission to use {call.name}" + (f": {why}" if why else ""))
            self._approved.add(call.id)
        if out.permission_decision == "allow":
            self._approved.add(call.id)
        if out.updated_input is not None:
            return ToolCall(call.id, call.name, out.updated_input)
        return call

    def approved(self, call: ToolCall) -> bool:
        """A PreToolUse hook allowed this call (or the user approved it when a hook asked)."""
        return call.id in self._approved

    def post_tool_use(self, facts: HookFacts, call: ToolCall, result: ToolResult) -> ToolResult:
        self._approved.discard(call.id)
        tool_input = self._tool_input(facts, call)
        exited = bash_failure(call.name, result.content if result.ok else result.error)  # ok or not, as Bash reports it
        payload: dict[str, Any]
        if exited is not None:  # Claude Code: a Bash command that exits non-zero is a failed call
            event = "PostToolUseFailure"
            payload = {"tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id, "error": exited, "is_interrupt": False,
                       **seed_fields(event, call.name, tool_input, output=result.content, is_error=True)}
        elif result.ok:
            event = "PostToolUse"
            response = tool_response(call.name, tool_input, result.content)
            payload = {"tool_name": call.name, "tool_input": tool_input, "tool_response": response, "tool_use_id": call.id,
                                       **seed_fields(event, call.name, tool_input, output=result.content, is_error=False)}
        else:
            event = "PostToolUseFailure"
            payload = {"tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id, "error": result.error, "is_interrupt": False,
                       **seed_fields(event, call.name, tool_input, output=result.error, is_error=True)}
        out = self.fire(facts, event, payload, call.name)
        notes = self._pre_context.pop(call.id, []) + list(out.additional_context) + [f"[{event} hook] {f}" for f in out.feedback]
        if out.has_updated_output and result.ok:
            result = ToolResult(result.call_id, result.name, True, content=model_text(call.name, out.updated_output))
        if not notes:
            return result
        extra = "\n\n".join(n[:MAX_TEXT] for n in notes)
        if result.ok:
            c = result.content
            text = c if isinstance(c, str) else _json(c)
            return ToolResult(result.call_id, result.name, True, content=f"{text}\n\n{extra}")
        return ToolResult(result.call_id, result.name, False, error=f"{result.error}\n\n{extra}", detail=result.detail)

    def stop(self, facts: HookFacts, result: Any) -> str | None:
        """Stop hooks: a block's reason (and any ``additionalContext``) keeps the turn going.

        The agent counts the blocks and keeps the turn under its budgets
        (``hooks.stop_gate.StopGate``); ``facts.stop_hook_active()`` is passed on.
        """
        if getattr(result, "stop_reason", None) == "model_error":
            # Claude Code: "API errors fire StopFailure instead"; "Output and exit code are ignored"
            error = getattr(result, "error", None) or "unknown"
            kind = stop_failure_type(error)
            self.fire(facts, "StopFailure", {"error": kind, "error_details": error, "last_assistant_message": error,
                                             **seed_fields("StopFailure")}, kind)
            self.stop_request = None
            return None
        active = bool(facts.stop_hook_active())
        out = self.fire(facts, "Stop", {"stop_hook_active": active, "last_assistant_message": getattr(result, "answer", ""),
                                        **seed_fields("Stop", stop_reason=seed_stop_reason(getattr(result, "stop_reason", None)),
                                                      agentloop_stop_reason=getattr(result, "stop_reason", None), **_totals(facts, result))})
        self.stop_request = None
        return stop_feedback(out)

    def session_end(self, facts: HookFacts, reason: str) -> None:
        self.runner.cancel_async()  # background handlers end with their session, as in Claude Code
        s = facts.session()
        if s is not None and getattr(s, "written", True):
            self.fire(facts, "SessionEnd", {"reason": reason, **seed_fields("SessionStop", **_totals(facts, None))}, reason)

    def permission_request(self, facts: HookFacts, call: ToolCall) -> tuple[str, str] | None:
        """PermissionRequest: before a call asks for permission, hooks may allow or deny it for the user.

        Claude Code's hooks reference, PermissionRequest: input ``tool_name``, ``tool_input`` and
        ``permission_suggestions``; output ``hookSpecificOutput.decision.behavior`` (``allow`` or
        ``deny``, with a ``message`` for deny). Any other answer (or none) leaves the ask as it was.
        """
        tool_input = self._tool_input(facts, call)
        out = self.fire(facts, "PermissionRequest", {"tool_name": call.name, "tool_input": tool_input,
                                                     "permission_suggestions": []}, call.name)
        if out.request_behavior is None:
            return None
        return out.request_behavior, out.request_message or ""

    def notification(self, facts: HookFacts, message: str, kind: str) -> None:
        """Notification: the user is about to be asked (``permission_prompt``); its output is not read."""
        self.fire(facts, "Notification", {"message": message, "title": "agentloop", "notification_type": kind}, kind)

    def sees_tool_calls(self) -> bool:
        """A PreToolUse, PostToolUse or PostToolUseFailure hook is configured (calls then run one at a time)."""
        return any(self.runner.has(e) for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure"))

    def check_stop(self, state: Any, record: Any) -> str | None:
        """Part of the run's ``prepare``: end the run when a hook said ``continue: false``."""
        if self.stop_request is not None:
            return "interrupted"
        return None


_FAILURE_TYPES = (  # the providers' own wording (providers/base.py classify, and the vendors' refinements)
    ("no credit left", "billing_error"),  # before "rate limited": OpenAI's quota answer is a 429
    ("out of quota", "billing_error"),
    ("rate limited (", "rate_limit"),
    ("authentication failed (", "authentication_failed"),
    ("is overloaded (", "server_error"),
    ("server error ", "server_error"),
    ("request refused (", "invalid_request"),
    ("not found (404)", "invalid_request"),
)


def stop_failure_type(error: str) -> str:
    """The ``error`` of Claude Code's StopFailure input (its matcher value) for a failed model call:
    ``rate_limit``, ``authentication_failed``, ``billing_error``, ``invalid_request``,
    ``server_error``, or ``unknown`` when the failure is none of those."""
    for phrase, kind in _FAILURE_TYPES:
        if phrase in error:
            return kind
    return "unknown"


def _totals(facts: HookFacts, result: Any) -> dict[str, Any]:
    """Seed 004's Stop and SessionStop facts: the session's turn count and total cost (a number of
    dollars, and the exact micro-dollars beside it); the turn in progress counts."""
    st = getattr(facts.session(), "stats", None)
    turns = int(getattr(st, "turns", 0)) + (1 if result is not None else 0)
    spent = int(getattr(st, "spent_micros", 0))
    return {"turn_count": turns, "total_cost_usd": spent / 1_000_000, "total_cost_micros": spent}


def _json(v: Any) -> str:
    from ..canonical import canonical

    try:
        return canonical(v).decode()
    except ValueError:
        return str(v)


class AgentContext:
    """The agent's ``ContextManager``: everything happens inside runs, through ``prepare``."""

    def __init__(self, facts: ContextFacts, hooks: ClaudeHooks | None):
        self.hooks = hooks
        m = facts.models
        self.cm = Compactor(
            window=int(m.window),
            summarizer=m.model,
            hooks=hooks.runner if hooks is not None else None,
            tool_result_cap=facts.settings.tool_result_cap,
            notify=lambda t: ClaudeHooks._notice(facts.hooks, t),
        )
        self.loopcheck: LoopCheck | None = None
        spec = loop_check_model(m.model_spec, facts.settings.loop_check_model, facts.settings.env)
        if spec is not None:
            self.loopcheck = LoopCheck(m.open(spec), model_name=spec.split(":", 1)[-1], price=_price(facts, spec.split(":", 1)[-1]))
        self.subagents: SubagentRunner | None = None
        self.side_budget = ParentBudget()
        """What the parent's loop has left, for the model calls tools make while a turn's tools run (the
        sub-agents', WebFetch's, WebSearch's): one, so their holds see each other's."""

    def adopt_hooks(self, claude: ClaudeHooks) -> None:
        """Hooks that came after the manager was made (a front end's handlers in a session without hooks): the
        run's stop check (``continue: false``) and the sub-agents' hooks use them, where there were none."""
        self.hooks = self.hooks or claude
        if self.subagents is not None and self.subagents.hooks is None:
            self.subagents.hooks = claude.runner

    def _sync(self, facts: ContextFacts) -> None:
        cm, m, session = self.cm, facts.models, facts.session()
        cm.window = int(m.window)
        cm.summarizer = m.model
        cm.price = _price(facts, m.name)
        cm.transcript_path = session.path
        cm.spill_dir = session.spill_dir
        model = m.model  # exact counts where its description says the vendor counts (Anthropic)
        cm.counter = (lambda msgs: model.count_tokens(ModelRequest(list(msgs), (), 1))) if describe(model).counts_tokens else None
        if self.subagents is not None:
            r = self.subagents
            r.model = m.model
            r.model_name = m.name
            r.model_spec = m.model_spec
            r.prices = m.prices
            r.transcript_dir = os.path.join(session.dir, session.id, "subagents")
            r.record = facts.record

    # -- the core's ContextManager protocol --

    def prepare(self, facts: ContextFacts, messages: list[Message]) -> list[Message]:
        self._sync(facts)
        return messages

    def compact(self, facts: ContextFacts, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        self._sync(facts)
        if self.cm.disabled:
            self.cm.disabled = False  # a manual /compact tries again
            self.cm.failures = 0
        account: Account = LedgerAccount(room)  # between runs: the session's ledger decides and charges
        res = self.cm.compact(messages, facts.record, account=account, price=self.cm.price or _price(facts, facts.models.name), trigger="manual", custom_instructions=instructions)
        if res.status not in ("compacted", "nothing"):
            from .protocols import AgentError

            raise AgentError(f"compaction {res.status}: {res.error or ''}".rstrip(": "))
        return messages

    def read_only_agent_types(self) -> frozenset[str]:
        """Sub-agent types whose tools change nothing (plan mode may launch them)."""
        if self.subagents is None:
            return frozenset()
        return frozenset(n for n, t in self.subagents.types.items() if t.read_only())

    def warns_of_window(self) -> bool:
        """The context manager warns of the window itself, from its own estimate before each call."""
        return True

    def backgrounds(self) -> Backgrounds | None:
        """The sub-agents' background children (the ``Agent`` tool's ``run_in_background``), when there are sub-agents."""
        return self.subagents.background if self.subagents is not None else None

    # -- what ask() passes to run() --

    def run_prepare(self, facts: ContextFacts) -> Callable[[Any, Any], str | None]:
        self._sync(facts)
        parts: list[Any] = []
        if self.hooks is not None:
            parts.append(self.hooks.check_stop)
        parts.append(self.side_budget.bind)
        parts.append(self.cm.prepare)
        if self.loopcheck is not None:
            parts.append(self.loopcheck.prepare)
        return chain(*parts)

    def wrap_executor(self, facts: ContextFacts, execute: Callable[[Sequence[ToolCall]], list[ToolResult]]) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
        """The turn's calls under the one scheduler's rules (``run.turn_rules``): at most ``max_parallel_agents``
        at once, and a call that spends starts only while the run has room (``ParentBudget.admit``)."""
        limit, admit = facts.settings.max_parallel_agents, self.side_budget.admit

        def ruled(calls: Sequence[ToolCall]) -> list[ToolResult]:
            with turn_rules(limit=limit, admit=admit):
                return execute(calls)

        return ruled


def _price(facts: ContextFacts, name: str) -> Price:
    return facts.models.prices.resolve(name)


def loop_check_model(model_spec: Any, setting: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The model the loop check asks (``loopcheck``): ``loopCheckModel`` when set, none when it is
    ``false`` or ``"off"``, else the cheap model of the agent's own provider, when there is one
    (seed 004: a small model's judgment)."""
    if setting is False or (isinstance(setting, str) and setting.strip().lower() in ("off", "false", "none", "")):
        return None
    if isinstance(setting, str):
        return setting
    return cheap_model(model_spec, env)


def cheap_model(model_spec: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The cheap model of ``model_spec``'s provider (its record's, ``providers.cheap_spec``: Claude Code's
    ``ANTHROPIC_SMALL_FAST_MODEL`` honoured), or None when it names none."""
    from ..providers import cheap_spec

    return cheap_spec(model_spec, env or {}) if isinstance(model_spec, str) else None
