"""Sub-agents: Claude Code's ``Agent`` tool, a child run with its own prompt, tools, transcript and budget.

Rules:

1. Children draw from their parent's room call by call (``ParentBudget``,
   through each child's ``ChildLedger`` as its run's shared ledger), as the
   parent's own turns do: a child's caps are what its parent has left when it
   starts, and each of its model calls holds its reservation from what is
   left at that moment, waiting while siblings' calls in flight hold the room
   it needs. Any number of children at once each make progress, and together
   they never pass the parent's cap. What a child's calls were billed enters
   the parent's loop as one side cost when it ends (``loop`` rule 6).
2. Each child writes its own hash-chained transcript. The parent's record
   (the ``Agent`` tool result, and a ``subagent`` record) holds the child's
   id, final answer, spend, and its transcript's path and last hash, so
   ``verify_tree`` can check the whole tree from the parent's file.
3. Isolation: in a git repository (with a commit), a child that may write
   works in a temporary git worktree on a new branch by default (seed 004);
   ``isolation: "worktree"`` asks for it whatever the type, ``isolation:
   "none"`` (or ``"subagentIsolation": "none"`` in settings) works in the
   parent's directory. With no changes the worktree and branch are removed;
   with changes they are committed on the branch and applied to the parent's
   working tree (``worktree.py``), conflicts reported to the parent. Outside
   git, or for a read-only type, the child works in the parent's directory. A
   worktree starts from the parent's working tree, uncommitted changes included.
4. ``Agent`` calls given in one reply run at the same time: the tool's record
   says it is ``concurrent``, so the one scheduler (``run.schedule``) puts
   consecutive cleared calls in one wave (at most Claude Code's
   ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY`` at once, 10 by default). What
   follows a child's run (its hand-off to the parent's budget, the merge of
   its worktree, the parent's records, the rest of its tool call) waits until
   every earlier call of its wave is done (``Wave.wait_before``), so the
   records and the working tree come out the same whichever child finished
   first.
6. The parent model reads a child's final answer as text, with one line of
   facts (its id and type, turns, spend, files changed, conflicts); the
   bookkeeping (transcript path, last hash, records) is in the parent's
   ``subagent`` record.
5. SubagentStart and SubagentStop hooks fire around each child (matcher: the
   agent type); a blocking SubagentStop keeps the child going with its reason
   as the next user message, in the same transcript and under the child's
   budget, at most ``MAX_STOP_BLOCKS`` times in a row (``hooks/stop_gate.py``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...budget import Budget, PriceTable
from ...config.private import private_dirs
from ...events import ToolCall, ToolResult
from ...run import RunResult, Wave, current_wave, interrupt_flag, may_overlap, run, schedule
from ...tools import Registry, Tool, ToolError
from ...transcript import TranscriptWriter, read_records, verify_file
from ..hooks.runner import HookRunner
from ..hooks.stop_gate import StopGate, stop_feedback
from ..tools.builtin import BASH
from .agent_tool import AGENT
from .agent_types import AgentType, builtin_types
from .background import Background, Backgrounds, Ran
from .parent_budget import Hold, ParentBudget
from .worktree import Worktree, has_commit

__all__ = [
    "SubagentRunner",
    "parallel_executor",
    "verify_tree",
]


DEFAULT_CHILD_OUTPUT = 4_096
"""A child's output budget when the runner is given no rule for it (a library user's runner)."""


@dataclass
class SubagentRunner:
    """Starts children for the parent's ``Agent`` tool calls."""

    model: Any
    make_tools: Callable[[str], Registry]
    """The tools for a child working in a directory (its cwd, or its worktree)."""
    cwd: str
    transcript_dir: str
    parent: ParentBudget = field(default_factory=ParentBudget)
    prices: PriceTable | dict[str, Any] | None = None
    model_name: str | None = None
    model_spec: str | None = None
    """The parent's model as configured (``anthropic:claude-...``): what a child of a type without its own model runs on."""
    open_model: Callable[[str], Any] | None = None
    """Opens a type's own ``model``; the parent's model is used when None."""
    tracing: Any = None
    """An ``agentloop.telemetry.Tracing``: each child run is traced (under the parent's tool span)."""
    hooks: HookRunner | None = None
    """The hooks SubagentStart and SubagentStop fire (a library user's); ``hooks_from`` when given."""
    hooks_from: Callable[[], HookRunner | None] | None = None
    """The parent's hooks as they are when a child starts (the terminal agent's ``ChildFactory.hooks``)."""
    record: Callable[[str, Any], Any] | None = None
    """Appends to the parent's transcript (called under a lock)."""
    make_executor: Callable[[Registry, str, str, str], Callable[[Sequence[ToolCall]], list[ToolResult]]] | None = None
    """Wraps a child's tools (working in a directory; its id and type) with the parent's permission checks and
    hooks; plain ``Registry.invoke`` when None."""
    worktrees: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Each running child's directory in its own worktree -> (the parent's repository, the worktree): where the
    parent's rules are re-rooted for it (``PermissionPolicy.rooted_at``)."""
    types: dict[str, AgentType] = field(default_factory=builtin_types)
    max_steps: int = 30
    default_isolation: str = "worktree"
    """``worktree``: a child that may write gets a worktree in a git repository unless the call says ``none``."""
    loop_threshold: int = 5
    max_output_for: Callable[[str, int | None], int] | None = None
    """A child's output budget (``max_tokens`` a turn) for its model spec and its reservation in micro-USD
    (None: uncapped): the parent's rule (``agent/model_options.py``), so a child writes as much as its parent
    may, within what its share pays for. None: ``DEFAULT_CHILD_OUTPUT``."""
    read_only_line: Callable[[str, str], bool] | None = None
    """Whether a Bash line, run in a directory, only reads, as the permission rules judge it (plan mode's
    test): the Bash of a type with ``read_only_bash`` runs only such lines. None: that Bash runs nothing."""
    on_file_change: Callable[[str, bytes | None, bytes], None] | None = None
    """Told of each file of the parent's working tree a child's merge-back changed (the agent's ``file_changed``)."""
    context_for: Callable[[str], str] | None = None
    """The parent's working rules and environment as seen from a child's directory (the terminal agent's
    ``SessionPrompt.for_child``); None: the type's prompt and what is particular to sub-agents alone."""
    new_id: Callable[[], str] = field(default=lambda: "agent-" + uuid.uuid4().hex[:12])
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _git_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Worktrees are made one at a time (git locks the repository's worktree list and config)."""
    _pre: threading.local = field(default_factory=threading.local, repr=False)
    """This thread's place in its wave (``_Place``), or its background child."""
    children: list[dict[str, Any]] = field(default_factory=list)
    observer: Callable[[dict[str, Any]], Any] | None = None
    """Called as each child starts with ``{agent_id, agent_type, description, prompt, parent_tool_use_id}``
    (the ``Agent`` call's id): what it returns observes the child's run (``-p --output-format stream-json``)."""
    background: Backgrounds = field(init=False, repr=False)
    """The children started with ``run_in_background`` (``background.py``)."""
    tool_events: Callable[[Any], None] | None = None
    """Told ``ToolStarted`` and ``ToolFinished`` of the calls ``parallel_executor`` runs (a library user's
    executor; the agent's turns tell the run's observer), on the calling thread."""

    def __post_init__(self) -> None:
        self.background = Backgrounds(self.run_child, lambda ran: self.report_text(self.finish(ran)), self._record,
                                      lambda: self.new_id(), self._pre, self.parent)

    def _hooks(self) -> HookRunner | None:
        return self.hooks_from() if self.hooks_from is not None else self.hooks

    def _executor(self, registry: Registry, traced: Any, meta: dict[str, Any]) -> Any:
        ex = (self.make_executor(registry, str(meta["cwd"]), str(meta["agent_id"]), str(meta["agent_type"]))
              if self.make_executor is not None else None)
        return traced.executor(ex) if traced is not None and ex is not None else ex

    def _record(self, kind: str, payload: Any) -> None:
        bg: Background | None = getattr(self._pre, "background", None)
        if bg is not None:  # a background child's thread: written when its report is delivered
            bg.records.append((kind, payload))
            return
        place = self._place()
        if place is not None and not place.entered:  # a parallel child before its turn: written when it comes
            place.pending.append((kind, payload))
            return
        if self.record is not None:
            with self._lock:
                self.record(kind, payload)

    def _place(self) -> _Place | None:
        """This call's place in its wave (``run.current_wave``); None when it runs alone."""
        here = current_wave()
        if here is None:
            return None
        place: _Place | None = getattr(self._pre, "place", None)
        if place is None or place.wave is not here[0] or place.call is not here[1]:
            place = self._pre.place = _Place(here[0], here[1])
        return place

    def _take_turn(self) -> None:
        """In a wave, wait until every earlier call of the wave is done, then write what this child recorded
        meanwhile (rule 4). Alone, nothing to wait for."""
        place = self._place()
        if place is None or place.entered:
            return
        place.wave.wait_before(place.call)
        place.entered = True
        for kind, payload in place.pending:
            self._record(kind, payload)
        place.pending.clear()

    def describe(self) -> str:
        lines = [
            AGENT.description,
            "Use it for broad searches or self-contained work. Available types (subagent_type):",
        ]
        for t in self.types.values():
            tools = "all tools" if t.tools is None else ", ".join(t.tools)
            lines.append(f"- {t.name}: {t.description} (tools: {tools})")
        lines.append('In a git repository an agent that may write works in a temporary git worktree made from this working '
                     'tree (uncommitted changes included); when it ends its changes are applied here, and any conflict is '
                     'reported in the result (worktree.conflicts). isolation: "none" runs it in this directory instead.')
        return "\n".join(lines)

    def tool(self) -> Tool:
        """The ``Agent`` tool (Claude Code's name)."""

        def agent(description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None,
                  run_in_background: bool = False) -> str:
            if run_in_background:
                return self.background.start(description, prompt, self.agent_type(subagent_type).name, isolation)
            return report(self.start(description, prompt, subagent_type, isolation))

        return AGENT.tool(agent, self.describe())

    def agent_type(self, name: str) -> AgentType:
        t = self.types.get(name)
        if t is None:
            raise ToolError(f"no sub-agent type {name!r} (have: {', '.join(sorted(self.types))})")
        return t

    def is_agent_call(self, call: ToolCall) -> bool:
        return call.name == AGENT.name and isinstance(call.arguments, dict)

    def _isolate(self, atype: AgentType, isolation: str | None) -> bool:
        """Rule 3: whether this child gets a worktree."""
        if isolation == "worktree":
            return True
        if isolation is None and atype.isolation == "worktree":
            return True
        if isolation == "none" or (isolation is None and atype.isolation == "none") or self.default_isolation == "none" or atype.read_only():
            return False
        return has_commit(self.cwd)

    def _open_type_model(self, atype: AgentType) -> Any:
        """The model a type's ``model`` names; when it cannot be opened, a ``ToolError`` the model reads
        (the reason, so it can pick another type or do the work itself), not the generic failure."""
        assert self.open_model is not None and atype.model is not None
        try:
            return self.open_model(atype.model)
        except Exception as exc:  # the providers' one-line messages (keys scrubbed), an unknown model name...
            where = f" ({atype.source})" if atype.source != "built-in" else ""
            raise ToolError(f"the sub-agent type {atype.name!r}{where} asks for the model {atype.model!r}, "
                            f"which cannot be used: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None

    def start(self, description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None,
              child_id: str | None = None) -> dict[str, Any]:
        """Run one child to its stop; returns what the parent's tool result holds."""
        return self.finish(self.run_child(description, prompt, subagent_type, isolation, child_id))

    def run_child(self, description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None,
                  child_id: str | None = None) -> Ran:
        """A child's run, to its stop (its worktree not yet merged back, its bill not yet handed over: ``finish``)."""
        atype = self.agent_type(subagent_type)
        child_id = child_id or self.new_id()
        path = os.path.join(self.transcript_dir, f"{child_id}.jsonl")
        allowed: Hold = self.parent.room_for_child()  # the child's caps: what its parent has left as it starts (rule 1)
        ledger = self.parent.child_ledger()
        bg: Background | None = getattr(self._pre, "background", None)
        wt: Worktree | None = None
        try:
            private_dirs(self.transcript_dir)  # the session's own folder: the user's alone (0700)
            if self._isolate(atype, isolation):
                with self._git_lock:
                    wt = Worktree.create(self.cwd, child_id)
            cwd = wt.cwd if wt is not None else self.cwd
            if wt is not None:
                self.worktrees[cwd] = (wt.repo, wt.path)
            hooks = self._hooks()
            if hooks is not None and hooks.has("SubagentStart"):
                out = hooks.run("SubagentStart", {"agent_id": child_id, "agent_type": atype.name, "prompt": prompt}, matcher_value=atype.name)
                self._record("hook", out.to_record())
            registry = self._tools_for(atype, cwd)
            budget = Budget(max_steps=self.max_steps, max_usd_micros=allowed[0], max_tokens=allowed[1])
            model = _Stoppable(self.model if atype.model is None or self.open_model is None else self._open_type_model(atype),
                               bg.stop if bg is not None else interrupt_flag() or threading.Event())
            messages = self._system(atype, cwd, wt, registry, allowed) + [{"role": "user", "content": prompt}]
            out_tokens = self._output_budget(atype, allowed[0])
            observe = self._observe(child_id, atype.name, description, prompt)
            meta = {"agent_id": child_id, "agent_type": atype.name, "description": description, "cwd": cwd}
            result, last_hash, count = self._drive(path, model, registry, messages, budget, atype, meta, ledger, out_tokens, observe)
        except BaseException:
            self._take_turn()
            self.parent.settle(allowed, ledger, None, later=bg is not None)
            if wt is not None:
                self.worktrees.pop(wt.cwd, None)
                try:
                    wt.finish(child_id)
                except (ToolError, OSError, subprocess.SubprocessError):
                    pass
            raise
        return Ran(child_id, atype.name, description, path, allowed, ledger, wt, result, last_hash, count, bg is not None)

    @staticmethod
    def report_text(summary: dict[str, Any]) -> str:
        return report(summary)

    def finish(self, ran: Ran) -> dict[str, Any]:
        """What follows a child's run, in the parent's order: its bill handed over, its worktree merged back, the
        parent's ``subagent`` record. A background child's comes when its report is delivered (``background``)."""
        self._take_turn()
        self.parent.settle(ran.allowed, ran.ledger, ran.result, later=ran.background)
        summary = {
            "agent_id": ran.child_id,
            "agent_type": ran.agent_type,
            "description": ran.description,
            **self._outcome(ran.result, ran.allowed[0], ran.path, ran.count, ran.last_hash),
        }
        if ran.background:
            summary["background"] = True
        worktree = self._merge_back(ran.wt, ran.child_id) if ran.wt is not None else None
        if worktree is not None:
            summary["worktree"] = worktree
        self.children.append(summary)
        self._record("subagent", {**summary, "transcript": ran.path})
        return summary

    def _merge_back(self, wt: Worktree, child_id: str) -> dict[str, Any]:
        """``wt.finish``, telling ``on_file_change`` of each file of the parent's working tree the merge changed
        (what it held before and after), as the file tools do, so ``rewind`` can undo a child's changes."""
        self.worktrees.pop(wt.cwd, None)
        before: dict[str, bytes | None] = {}

        def snapshot(paths: Sequence[str]) -> None:
            for p in paths:
                before[p] = _content(p)

        out = wt.finish(child_id, before_apply=snapshot if self.on_file_change is not None else None)
        if self.on_file_change is not None:
            for p, old in before.items():
                new = _content(p)
                if new != old:
                    self.on_file_change(p, old, new if new is not None else b"")
        return out

    def _drive(self, path: str, model: Any, registry: Registry, messages: list[Any], budget: Budget, atype: AgentType,
               meta: dict[str, Any], ledger: Any, out_tokens: int, observe: Any) -> tuple[RunResult, str, int]:
        """The child's runs, in its own transcript: again while a SubagentStop hook keeps it going (rule 5).
        Returns (the result, the transcript's last hash, its record count)."""
        child_id = str(meta["agent_id"])
        model_name = atype.model.split(":", 1)[-1] if atype.model else self.model_name
        gate = StopGate(budget)
        left: Budget | None = budget
        with TranscriptWriter(path) as w:
            while left is not None:
                run_id = child_id if not gate.runs else f"{child_id}.{gate.runs}"
                sink: Any = w
                traced = None
                run_model = model
                if self.tracing is not None:  # nests under the parent's execute_tool span (same thread)
                    run_model, traced, _ = self.tracing.wrap(model, w, None, model_name=model_name, run_id=run_id)
                    sink = traced
                last = run(run_model, registry, messages, left, transcript=sink, prices=self.prices, model_name=model_name,
                           loop_threshold=self.loop_threshold, max_output_tokens=out_tokens, run_id=run_id, meta=meta,
                           executor=_observed(self._executor(registry, traced, meta), observe), observer=observe, ledger=ledger)
                if traced is not None:
                    traced.finish()
                result = gate.add(last)
                left = None
                again = self._subagent_stop(child_id, atype.name, last, path, gate.active)
                if again is not None and gate.why_not(last) is None:
                    messages = [*last.messages, {"role": "user", "content": again}]
                    left = gate.remaining()
            return result, w.last_hash, w.count

    def _system(self, atype: AgentType, cwd: str, wt: Worktree | None, registry: Registry, allowed: Hold) -> list[dict[str, Any]]:
        """A child's system prompt: its type's prompt and what is particular to a sub-agent (where it works, what
        becomes of its changes, its tools and its budget), then the parent's working rules and environment."""
        from ...budget import format_usd

        lines = [atype.prompt, "", "# Working as a sub-agent",
                 "Another agent started you for this one task. Your final message is the only thing it reads: put "
                 "your whole report there, not in files."]
        if wt is not None:
            lines.append(f"You work in {cwd}, a temporary git worktree: a copy of the parent's repository at {wt.repo} "
                         f"(its uncommitted changes included), on the branch {wt.branch}. When you finish, what you changed "
                         "there is committed on that branch and applied to the parent's working tree. Do not commit, push "
                         "or switch branches yourself.")
            if wt.links:
                lines.append("The project's ignored environment folders (" + ", ".join(os.path.relpath(x, wt.path) for x in wt.links)
                             + ") are the parent's, linked here: use them; they are read-only to you.")
            lines += wt.notes
        else:
            lines.append(f"You work in {cwd}, the parent's own directory: what you change there is changed for it at once.")
        lines.append("Your tools: " + ", ".join(registry.names()) + ".")
        money = allowed[0]
        lines.append("Your budget: " + (f"at most {format_usd(money)} for this task, drawn from the same budget as the "
                                        "parent and any other sub-agents running now." if money is not None else "no spending cap."))
        out: list[dict[str, Any]] = [{"role": "system", "content": "\n".join(lines)}]
        if self.context_for is not None:
            out.append({"role": "system", "content": self.context_for(cwd)})
        return out

    def _output_budget(self, atype: AgentType, reserved_micros: int | None) -> int:
        """``max_tokens`` for the child's turns: its model's budget, under the part of the parent's cap it holds."""
        if self.max_output_for is None:
            return DEFAULT_CHILD_OUTPUT
        spec = atype.model or self.model_spec or self.model_name or ""
        return max(1, int(self.max_output_for(spec, reserved_micros)))

    def _observe(self, child_id: str, atype: str, description: str, prompt: str) -> Any:
        if self.observer is None:
            return None
        from ..pipeline import current_call_id

        return self.observer({"agent_id": child_id, "agent_type": atype, "description": description, "prompt": prompt,
                              "parent_tool_use_id": current_call_id.get()})

    def _outcome(self, result: Any, allowed_micros: int | None, path: str, count: int, last_hash: str) -> dict[str, Any]:
        """What a finished child's summary says of its run and its transcript."""
        return {
            "answer": result.answer,
            "stop_reason": result.stop_reason,
            "steps": result.steps,
            "spent_micros": result.spent_micros,
            "tokens": result.tokens,
            "allowed_micros": allowed_micros,
            "transcript": os.path.relpath(path, self.transcript_dir),
            "transcript_records": count,
            "last_hash": last_hash,
        }

    def _subagent_stop(self, child_id: str, atype: str, last: RunResult, path: str, active: bool) -> str | None:
        """SubagentStop hooks: what the child is told to go on with, or None to let it stop.

        Claude Code's hooks reference: "Returning ``decision: "block"`` with a
        ``reason`` keeps the subagent running and delivers ``reason`` to the
        subagent as its next instruction"; the same loop protections as Stop
        (``stop_hook_active``, the cap of consecutive blocks) apply.
        """
        hooks = self._hooks()
        if hooks is None or not hooks.has("SubagentStop") or last.stop_reason == "interrupted":
            return None
        from ..hooks.payloads import write_claude_transcript

        # agent_transcript_path: the child's conversation in Claude Code's lines, beside its hash-chained file
        mirror = os.path.join(os.path.dirname(path), "claude", os.path.basename(path))
        if not write_claude_transcript(mirror, list(last.messages), child_id, hooks.cwd):
            mirror = path
        out = hooks.run(
            "SubagentStop",
            {"agent_id": child_id, "agent_type": atype, "stop_hook_active": active, "last_assistant_message": last.answer,
             "agent_transcript_path": mirror},
            matcher_value=atype,
        )
        self._record("hook", out.to_record())
        return stop_feedback(out)

    def _tools_for(self, atype: AgentType, cwd: str) -> Registry:
        full = self.make_tools(cwd)
        names = [n for n in full.names() if n != AGENT.name and (atype.tools is None or n in atype.tools)]
        tools = [t for t in full if t.name in names]
        if atype.read_only_bash:
            tools = [self._read_only_bash(t, atype, cwd) if t.name == BASH.name else t for t in tools]
        return Registry(tools)

    def _read_only_bash(self, bash: Tool, atype: AgentType, cwd: str) -> Tool:
        """``bash`` running only the lines the permission rules pass as read-only (plan mode's test), in ``cwd``."""
        import dataclasses

        check = self.read_only_line
        inner = bash.fn

        def read_only(**kw: Any) -> Any:
            command = kw.get("command")
            if not isinstance(command, str) or check is None or not check(cwd, command):
                raise ToolError(f"the {atype.name} agent runs read-only commands only, and this line may change "
                                "something or run code it cannot see; use a read-only command (ls, cat, grep, git rev-list)")
            if kw.get("run_in_background") or kw.get("dangerouslyDisableSandbox"):
                raise ToolError(f"the {atype.name} agent runs commands in the foreground, in the sandbox")
            return inner(**kw)

        return dataclasses.replace(bash, fn=read_only)


def _observed(execute: Any, observe: Any) -> Any:
    """``execute`` telling ``observe`` of each call and its result, as ``run()``'s own executor does."""
    if execute is None or observe is None:
        return execute

    def calls(batch: Sequence[ToolCall]) -> list[ToolResult]:
        from ...events import ToolFinished, ToolStarted

        for c in batch:
            observe(ToolStarted(c))
        results: list[ToolResult] = execute(batch)
        for r in results:
            observe(ToolFinished(r))
        return results

    return calls


def _content(path: str) -> bytes | None:
    """A regular file's bytes, or None (no such file, or not a regular file)."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class _Stoppable:
    """A child's model, interrupted (``KeyboardInterrupt``, as Ctrl+C interrupts a run) once its parent is: the
    child's run records its stop as ``interrupted`` and ends before its next call."""

    def __init__(self, inner: Any, stopping: threading.Event):
        self.inner = inner
        self.stopping = stopping
        """A background child's stop, else the interrupt flag of the parent's call (``run.interrupt_flag``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self) -> None:
        if self.stopping.is_set():
            raise KeyboardInterrupt("the parent was interrupted")

    def complete(self, request: Any) -> Any:
        self._check()
        reply = self.inner.complete(request)
        self._check()
        return reply

    async def acomplete(self, request: Any) -> Any:
        self._check()
        if hasattr(self.inner, "acomplete"):
            reply = await self.inner.acomplete(request)
        else:
            import asyncio

            reply = await asyncio.to_thread(self.inner.complete, request)
        self._check()
        return reply


@dataclass
class _Place:
    """One call's place in its wave: whether its turn has come, and the records waiting for it."""

    wave: Wave
    call: ToolCall
    entered: bool = False
    pending: list[tuple[str, Any]] = field(default_factory=list)


DEFAULT_MAX_PARALLEL = 10
"""Agent calls of one reply run at once, at most (Claude Code's ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY`` default)."""


def parallel_executor(
    inner: Callable[[Sequence[ToolCall]], list[ToolResult]],
    runner: SubagentRunner,
    precheck: Callable[[ToolCall], bool] = lambda c: True,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
    one: Callable[[ToolCall], ToolResult] | None = None,
    registry: Registry | None = None,
) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
    """A library user's executor for a registry holding the ``Agent`` tool: the one scheduler (``run.schedule``)
    with the calls ``precheck`` clears side by side when they may overlap (``Agent`` calls, and the calls
    ``registry``'s tools declare may: ``run.may_overlap``), at most ``max_parallel`` at once, each call
    through ``one`` (``inner`` on that call alone by default). The terminal agent's turns need none: its
    pipeline clears the calls the same way (``ToolPipeline.alongside``). ``runner.tool_events`` is told of
    each call. Results come back in call order.
    """
    run_one = one if one is not None else (lambda c: inner([c])[0])

    def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        return schedule(calls, run_one, runner.tool_events, alongside=lambda c: (
            runner.is_agent_call(c) or (registry is not None and may_overlap(registry, c))) and precheck(c), limit=max_parallel)

    return execute


def report(summary: dict[str, Any]) -> str:
    """What the parent model reads of a finished child (rule 6): its answer, then one line of facts."""
    facts = [f"agent {summary['agent_id']} ({summary['agent_type']})", f"{summary['steps']} turns",
             f"${summary['spent_micros'] / 1_000_000:.4f}"]
    if summary.get("stop_reason") not in ("no_tool_calls", "sentinel"):
        facts.append(f"stopped: {summary.get('stop_reason')}")
    wt = summary.get("worktree")
    if isinstance(wt, dict):
        files = wt.get("files") or []
        facts.append(f"{len(files)} file{'s' if len(files) != 1 else ''} changed" + (f" ({', '.join(files[:8])}{', ...' if len(files) > 8 else ''})" if files else ""))
        if wt.get("applied") == "conflicts":
            facts.append(f"conflicts, left in its worktree at {wt.get('path')}: " + "; ".join(wt.get("conflicts") or []))
        elif wt.get("applied") == "failed":
            facts.append(f"its changes could not be applied here; they are on branch {wt.get('branch')} at {wt.get('path')}")
    answer = summary.get("answer") or "(the sub-agent gave no final answer)"
    return f"{answer}\n\n[{' · '.join(facts)}]"


def verify_tree(path: str) -> list[str]:
    """Verify a transcript and every sub-agent transcript it names, recursively.

    Returns:
        Every problem found ("" problems means the whole tree verifies).
    """
    problems: list[str] = []
    rep = verify_file(path)
    if not rep.ok:
        return [f"{path}: {p.message}" for p in rep.problems]
    base = os.path.dirname(path)
    for rec in read_records(path):
        if rec.kind != "subagent" or not isinstance(rec.payload, dict):
            continue
        child = rec.payload.get("transcript")
        if not isinstance(child, str):
            problems.append(f"{path}: record {rec.seq} names no child transcript")
            continue
        child_path = child if os.path.isabs(child) else os.path.join(base, child)
        if not os.path.exists(child_path):
            problems.append(f"{path}: record {rec.seq}: child transcript {child_path} is missing")
            continue
        crep = verify_file(child_path)
        if not crep.ok:
            problems += [f"{child_path}: {p.message}" for p in crep.problems]
        elif crep.last_hash != rec.payload.get("last_hash"):
            problems.append(f"{child_path}: its last hash is not the one its parent recorded (record {rec.seq}): cut or changed")
        else:
            problems += verify_tree(child_path)
    return problems
