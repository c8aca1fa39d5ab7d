"""The agent's Claude Code hooks and its context manager: ``ClaudeHooks`` and ``AgentContext``.

``ClaudeHooks`` is the ``AgentHooks`` the builder gives an agent whose settings
configure hooks: Claude Code's events, their answers, and a ``hook`` record in
the session's chain for every decision (through ``agent.record``).
``AgentContext`` is its ``ContextManager``: masking, compaction, the loop check
and the sub-agents' budget binding, all through the run's ``prepare`` seam, and
the executor that runs read-only sub-agents side by side, each call through the
agent's one tool-call pipeline (``agent.run_tool``). ``agent/builder.py`` makes
both; what each may see of the agent is ``HookSubject`` / ``ContextSubject``.
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
from .protocols import ContextSubject, HookSubject
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

    def _sync(self, agent: HookSubject) -> None:
        s = getattr(agent, "session", None)
        if s is not None:
            self.runner.session_id = s.id
            self.runner.transcript_path = self._claude_transcript(agent, s)
        self.runner.permission_mode = getattr(agent, "permission_mode", None)

    def _claude_transcript(self, agent: HookSubject, s: Any) -> str:
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
        if not write_claude_transcript(path, msgs, s.id, getattr(agent, "cwd", "")):
            log.warning("cannot write the Claude Code transcript for hooks at %s", path)
            return str(s.path)
        self._transcript_mark = mark
        return path

    def fire(self, agent: HookSubject, event: str, payload: dict[str, Any], matcher_value: str | None = None) -> HookOutcome:
        if not self.runner.has(event):
            return HookOutcome(event=event, matcher_value=matcher_value)
        self._sync(agent)
        out = self.runner.run(event, {**payload, **self.child} if self.child else payload, matcher_value=matcher_value)
        if out.ran:
            agent.record("hook", out.to_record())
        for msg in out.system_messages:
            self._notice(agent, msg)
        for r in out.results:
            if r.failure and not r.blocked:  # a failure that lets the action go ahead is never silent
                self._notice(agent, f"hook {r.handler.command!r} ({event}) failed and did not stop anything: {r.failure}")
        for w in out.warnings:
            self._notice(agent, w)  # a misspelt key ({"decison": "block"}) must not fail open in silence
        if out.stop:
            self.stop_request = out.stop_reason or f"a {event} hook asked to stop"
            self._notice(agent, f"stopped by a {event} hook: {self.stop_request}")
        return out

    @staticmethod
    def _notice(agent: HookSubject, text: str) -> None:
        log.warning("hook: %s", text)
        cb = getattr(agent, "on_notice", None)
        if cb is not None:
            cb(text)

    # -- AgentHooks --

    def session_start(self, agent: HookSubject, source: str) -> str:
        """SessionStart: its hooks' context for the model; what they export through ``CLAUDE_ENV_FILE`` reaches Bash
        (``agent/hooks/env_file.py``)."""
        s = getattr(agent, "session", None)
        if s is not None and self.runner.has("SessionStart"):
            try:
                self.runner.env_file = new_env_file(os.path.join(os.path.dirname(s.path), s.id))
            except OSError as exc:
                self.runner.env_file = None
                self._notice(agent, f"CLAUDE_ENV_FILE cannot be made for SessionStart hooks: {exc}")
        out = self.fire(agent, "SessionStart", {"source": source, "model": getattr(agent, "model_spec", ""), **seed_fields("SessionStart")}, source)
        self.carry_env_file(agent)
        return "\n\n".join(out.additional_context)

    def scoped_hooks(self, agent: HookSubject, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None:
        """A command's or skill's front matter ``hooks`` added to the session's hooks while it is active; what takes
        them out again. A folder's own need its trust (folder trust covers what runs on the host)."""
        from ..config.settings import ConfigError
        from .plugins import expand_plugin_root

        real, cwd = os.path.realpath(where), os.path.realpath(agent.cwd)
        if not trusted and (real == cwd or real.startswith(cwd + os.sep)):
            self._notice(agent, f"{where}: front matter hooks not run: this folder is not trusted (folder trust covers what runs)")
            return None
        try:
            added, warnings = self.runner.add_scoped(expand_plugin_root(value, plugin_root) if plugin_root else value,
                                                     where, plugin_root or None)
        except ConfigError as exc:
            self._notice(agent, f"front matter hooks not run: {exc}")
            return None
        for w in warnings:
            self._notice(agent, w)
        return lambda: self.runner.remove_scoped(added)

    def carry_env_file(self, agent: HookSubject) -> None:
        """The variables SessionStart hooks wrote to ``CLAUDE_ENV_FILE``, added to the environment Bash starts with."""
        path, self.runner.env_file = self.runner.env_file, None
        secrets = getattr(agent, "secrets", None)
        child_env = getattr(secrets, "child_env", None)
        if path is None or not isinstance(child_env, dict):
            return
        exports, warnings = read_env_file(path, self.runner.environment, self.runner.cwd, getattr(secrets, "allowed_env", ()),
                                          wrap=self.runner.confined_source())
        child_env.update(exports)
        for w in warnings:
            self._notice(agent, w)

    def user_prompt_submit(self, agent: HookSubject, prompt: str) -> Any:
        from .protocols import PromptDecision

        self.stop_request = None
        late = self.collect_async(agent)
        out = self.fire(agent, "UserPromptSubmit", {"prompt": prompt, **seed_fields("UserPromptSubmit")})
        if out.blocked or out.stop:
            return PromptDecision(prompt, blocked=out.reason or out.stop_reason or "blocked by a UserPromptSubmit hook")
        return PromptDecision(out.updated_prompt if out.updated_prompt is not None else prompt, context="\n\n".join([*late, *out.additional_context]))

    def collect_async(self, agent: HookSubject) -> list[str]:
        """Background (``async``) handlers that finished: recorded, their messages shown, their context returned."""
        ctx: list[str] = []
        for out in self.runner.collect_async():
            agent.record("hook", {**out.to_record(), "async": True})
            for msg in out.system_messages:
                self._notice(agent, msg)
            ctx += [c for c in out.additional_context if c]
        return ctx

    def _tool_input(self, agent: HookSubject, call: ToolCall) -> Any:
        return absolute_input(call.name, call.arguments, getattr(agent, "cwd", self.runner.cwd))

    def pre_tool_use(self, agent: HookSubject, call: ToolCall) -> ToolCall | ToolResult:
        """PreToolUse: deny, ask, allow (remembered for ``approved``) or rewrite the call.

        Claude Code's hooks reference, PreToolUse decision control:
        ``"allow"`` skips the permission prompt, ``"deny"`` prevents the call,
        ``"ask"`` prompts the user; deny and ask rules are still evaluated.
        """
        self._approved.discard(call.id)
        tool_input = self._tool_input(agent, call)
        payload = {"tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id, **seed_fields("PreToolUse", call.name, tool_input)}
        out = self.fire(agent, "PreToolUse", payload, call.name)
        if out.additional_context:
            self._pre_context[call.id] = list(out.additional_context)
        if out.stop:
            return ToolResult(call.id, call.name, False, error=f"stopped by a hook: {self.stop_request}")
        if out.permission_decision == "deny" or out.blocked:
            return ToolResult(call.id, call.name, False, error=f"a PreToolUse hook denied {call.name}: {out.reason or 'no reason given'}")
        if out.permission_decision == "ask":
            ask = getattr(agent, "ask_permission", None)
            if ask is None:
                return ToolResult(call.id, call.name, False, error=f"a hook asked for approval of {call.name} and no one could be asked (non-interactive)")
            reply = ask(call, out)
            if getattr(reply, "answer", reply) == "deny":  # a word, or a PermissionReply carrying one
                why = getattr(reply, "message", "")
                calls = getattr(agent, "calls", None)
                if getattr(reply, "interrupt", False) and calls is not None:
                    calls.stopping = True  # the turn stops after this call, as at the pipeline's own question
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

    def post_tool_use(self, agent: HookSubject, call: ToolCall, result: ToolResult) -> ToolResult:
        self._approved.discard(call.id)
        tool_input = self._tool_input(agent, call)
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
        out = self.fire(agent, event, payload, call.name)
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

    def stop(self, agent: HookSubject, result: Any) -> str | None:
        """Stop hooks: a block's reason (and any ``additionalContext``) keeps the turn going.

        The agent counts the blocks and keeps the turn under its budgets
        (``hooks.stop_gate.StopGate``); ``agent.stop_hook_active`` is passed on.
        """
        if getattr(result, "stop_reason", None) == "model_error":
            # Claude Code: "API errors fire StopFailure instead"; "Output and exit code are ignored"
            error = getattr(result, "error", None) or "unknown"
            kind = stop_failure_type(error)
            self.fire(agent, "StopFailure", {"error": kind, "error_details": error, "last_assistant_message": error,
                                             **seed_fields("StopFailure")}, kind)
            self.stop_request = None
            return None
        active = bool(getattr(agent, "stop_hook_active", False))
        out = self.fire(agent, "Stop", {"stop_hook_active": active, "last_assistant_message": getattr(result, "answer", ""),
                                        **seed_fields("Stop", stop_reason=seed_stop_reason(getattr(result, "stop_reason", None)),
                                                      agentloop_stop_reason=getattr(result, "stop_reason", None), **_totals(agent, result))})
        self.stop_request = None
        return stop_feedback(out)

    def session_end(self, agent: HookSubject, reason: str) -> None:
        self.runner.cancel_async()  # background handlers end with their session, as in Claude Code
        s = getattr(agent, "session", None)
        if s is not None and getattr(s, "written", True):
            self.fire(agent, "SessionEnd", {"reason": reason, **seed_fields("SessionStop", **_totals(agent, None))}, reason)

    def permission_request(self, agent: HookSubject, call: ToolCall) -> tuple[str, str] | None:
        """PermissionRequest: before a call asks for permission, hooks may allow or deny it for the user.

        Claude Code's hooks reference, PermissionRequest: input ``tool_name``, ``tool_input`` and
        ``permission_suggestions``; output ``hookSpecificOutput.decision.behavior`` (``allow`` or
        ``deny``, with a ``message`` for deny). Any other answer (or none) leaves the ask as it was.
        """
        tool_input = self._tool_input(agent, call)
        out = self.fire(agent, "PermissionRequest", {"tool_name": call.name, "tool_input": tool_input,
                                                     "permission_suggestions": []}, call.name)
        if out.request_behavior is None:
            return None
        return out.request_behavior, out.request_message or ""

    def notification(self, agent: HookSubject, message: str, kind: str) -> None:
        """Notification: the user is about to be asked (``permission_prompt``); its output is not read."""
        self.fire(agent, "Notification", {"message": message, "title": "agentloop", "notification_type": kind}, kind)

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


def _totals(agent: HookSubject, result: Any) -> dict[str, Any]:
    """Seed 004's Stop and SessionStop facts: the session's turn count and total cost (a number of
    dollars, and the exact micro-dollars beside it); the turn in progress counts."""
    st = getattr(getattr(agent, "session", None), "stats", None)
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

    def __init__(self, agent: ContextSubject, hooks: ClaudeHooks | None):
        self.hooks = hooks
        self.cm = Compactor(
            window=int(agent.window),
            summarizer=agent.model,
            hooks=hooks.runner if hooks is not None else None,
            tool_result_cap=agent.settings.tool_result_cap,
            notify=lambda t: ClaudeHooks._notice(agent, t),
        )
        self.loopcheck: LoopCheck | None = None
        spec = loop_check_model(agent.model_spec, agent.settings.loop_check_model, agent.settings.env)
        if spec is not None:
            self.loopcheck = LoopCheck(agent.open_model(spec), model_name=spec.split(":", 1)[-1], price=_price(agent, spec.split(":", 1)[-1]))
        self.subagents: SubagentRunner | None = None
        self.side_budget = ParentBudget()
        """What the parent's loop has left, for the model calls tools make while a turn's tools run (the
        sub-agents', WebFetch's, WebSearch's): one, so their holds see each other's."""

    def _sync(self, agent: ContextSubject) -> None:
        cm = self.cm
        cm.window = int(agent.window)
        cm.summarizer = agent.model
        cm.price = _price(agent, agent.model_name)
        cm.transcript_path = agent.session.path
        cm.spill_dir = agent.session.spill_dir
        model = agent.model  # exact counts where its description says the vendor counts (Anthropic)
        cm.counter = (lambda msgs: model.count_tokens(ModelRequest(list(msgs), (), 1))) if describe(model).counts_tokens else None
        if self.subagents is not None:
            r = self.subagents
            r.model = agent.model
            r.model_name = agent.model_name
            r.model_spec = agent.model_spec
            r.prices = agent.prices
            r.transcript_dir = os.path.join(agent.session.dir, agent.session.id, "subagents")
            r.record = agent.record

    # -- the core's ContextManager protocol --

    def prepare(self, agent: ContextSubject, messages: list[Message]) -> list[Message]:
        self._sync(agent)
        return messages

    def compact(self, agent: ContextSubject, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        self._sync(agent)
        if self.cm.disabled:
            self.cm.disabled = False  # a manual /compact tries again
            self.cm.failures = 0
        account: Account = LedgerAccount(room)  # between runs: the session's ledger decides and charges
        res = self.cm.compact(messages, agent.record, account=account, price=self.cm.price or _price(agent, agent.model_name), trigger="manual", custom_instructions=instructions)
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

    # -- what ask() passes to run() --

    def run_prepare(self, agent: ContextSubject) -> Callable[[Any, Any], str | None]:
        self._sync(agent)
        parts: list[Any] = []
        if self.hooks is not None:
            parts.append(self.hooks.check_stop)
        parts.append(self.side_budget.bind)
        parts.append(self.cm.prepare)
        if self.loopcheck is not None:
            parts.append(self.loopcheck.prepare)
        return chain(*parts)

    def wrap_executor(self, agent: ContextSubject, execute: Callable[[Sequence[ToolCall]], list[ToolResult]]) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
        """The turn's calls under the one scheduler's rules (``run.turn_rules``): at most ``max_parallel_agents``
        at once, and a call that spends starts only while the run has room (``ParentBudget.admit``)."""
        limit, admit = agent.settings.max_parallel_agents, self.side_budget.admit

        def ruled(calls: Sequence[ToolCall]) -> list[ToolResult]:
            with turn_rules(limit=limit, admit=admit):
                return execute(calls)

        return ruled


def _price(agent: ContextSubject, name: str) -> Price:
    return agent.prices.resolve(name)


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
