"""Sub-agents: Claude Code's ``Agent`` tool, a child run with its own prompt, tools, transcript and budget.

Rules:

1. A child's budget is reserved from what its parent's loop says is left
   (``loop.side_room``, through ``ParentBudget``): by default half of it,
   shared evenly by children that run together (held for all of them before
   any starts). Children started one after another in the same turn each
   reserve from what the ones before them left (their spend counts at once,
   though the parent's loop takes it after the turn's tools), so no number
   of Agent calls in one reply can pass the parent's cap. A child's own loop keeps it
   under that reservation, so it can never overspend the parent; what it
   spent enters the parent's loop as a side cost (``loop`` rule 6), and the
   rest is free again.
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
4. Children of read-only types (``Explore``) may run at the same time
   (``parallel_executor``); others run one at a time.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...budget import Budget, PriceTable
from ...config.private import private_dirs
from ...events import ToolCall, ToolResult
from ...run import RunResult, run
from ...tools import Registry, Tool, ToolError
from ...transcript import TranscriptWriter, read_records, verify_file
from ..hooks.runner import HookRunner
from ..hooks.stop_gate import StopGate, stop_feedback
from .agent_types import AgentType, builtin_types
from .parent_budget import Hold, ParentBudget, Share
from .worktree import Worktree, has_commit

__all__ = [
    "SubagentRunner",
    "parallel_executor",
    "verify_tree",
]


DEFAULT_CHILD_OUTPUT = 4_096
"""A child's output budget when the runner is given no rule for it (a library user's runner)."""


AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
        "prompt": {"type": "string", "description": "The task for the sub-agent, complete: it sees nothing else."},
        "subagent_type": {"type": "string", "description": "The kind of agent to use (see the tool description)."},
        "isolation": {"type": "string", "enum": ["worktree", "none"],
                      "description": "worktree: work in a temporary git worktree (the default for agents that may write, "
                                     "in a git repository); none: work in this directory."},
    },
    "required": ["description", "prompt"],
    "additionalProperties": False,
}


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
    record: Callable[[str, Any], Any] | None = None
    """Appends to the parent's transcript (called under a lock)."""
    make_executor: Callable[[Registry], Callable[[Sequence[ToolCall]], list[ToolResult]]] | None = None
    """Wraps a child's tools with the parent's permission checks; plain ``Registry.invoke`` when None."""
    types: dict[str, AgentType] = field(default_factory=builtin_types)
    max_steps: int = 30
    default_isolation: str = "worktree"
    """``worktree``: a child that may write gets a worktree in a git repository unless the call says ``none``."""
    share: Share = (1, 2)
    """The part of the parent's remaining budget reserved for one child (or shared evenly by a parallel batch),
    as a fraction of integers."""
    loop_threshold: int = 5
    max_output_for: Callable[[str, int | None], int] | None = None
    """A child's output budget (``max_tokens`` a turn) for its model spec and its reservation in micro-USD
    (None: uncapped): the parent's rule (``agent/model_options.py``), so a child writes as much as its parent
    may, within what its share pays for. None: ``DEFAULT_CHILD_OUTPUT``."""
    new_id: Callable[[], str] = field(default=lambda: "agent-" + uuid.uuid4().hex[:12])
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _pre: threading.local = field(default_factory=threading.local, repr=False)
    """A hold made for this thread's next child before it started (``parallel_executor``)."""
    children: list[dict[str, Any]] = field(default_factory=list)
    observer: Callable[[dict[str, Any]], Any] | None = None
    """Called as each child starts with ``{agent_id, agent_type, description, prompt, parent_tool_use_id}``
    (the ``Agent`` call's id): what it returns observes the child's run (``-p --output-format stream-json``)."""
    tool_events: Callable[[Any], None] | None = None
    """Told ``ToolStarted`` and ``ToolFinished`` of the ``Agent`` calls that ``parallel_executor`` runs together
    (they do not pass through the executor that tells the run's observer), on the calling thread."""

    def _executor(self, registry: Registry, traced: Any) -> Any:
        ex = self.make_executor(registry) if self.make_executor is not None else None
        return traced.executor(ex) if traced is not None and ex is not None else ex

    def _record(self, kind: str, payload: Any) -> None:
        if self.record is not None:
            with self._lock:
                self.record(kind, payload)

    def describe(self) -> str:
        lines = [
            "Start a sub-agent for a task: it has its own context, works with its own tools, and answers with one final report.",
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

        def agent(description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None) -> dict[str, Any]:
            return self.start(description, prompt, subagent_type, isolation)

        return Tool(name="Agent", description=self.describe(), parameters=AGENT_SCHEMA, fn=agent)

    def agent_type(self, name: str) -> AgentType:
        t = self.types.get(name)
        if t is None:
            raise ToolError(f"no sub-agent type {name!r} (have: {', '.join(sorted(self.types))})")
        return t

    def is_read_only_call(self, call: ToolCall) -> bool:
        if call.name != "Agent" or not isinstance(call.arguments, dict):
            return False
        t = self.types.get(str(call.arguments.get("subagent_type", "general-purpose")))
        return t is not None and t.read_only() and call.arguments.get("isolation") is None

    def _isolate(self, atype: AgentType, isolation: str | None) -> bool:
        """Rule 3: whether this child gets a worktree."""
        if isolation == "worktree":
            return True
        if isolation == "none" or self.default_isolation == "none" or atype.read_only():
            return False
        return has_commit(self.cwd)

    def held_for(self, hold: Hold | None) -> None:
        """Give this thread's next child a hold made before it started (None: take back one it did not use)."""
        left = getattr(self._pre, "hold", None)
        self._pre.hold = hold
        if hold is None and left is not None:
            self.parent.release(left)

    def _hold(self) -> Hold:
        hold: Hold | None = getattr(self._pre, "hold", None)
        self._pre.hold = None
        return hold if hold is not None else self.parent.reserve(self.share)

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

    def start(self, description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None) -> dict[str, Any]:
        """Run one child to its stop; returns what the parent's tool result holds."""
        atype = self.agent_type(subagent_type)
        child_id = self.new_id()
        path = os.path.join(self.transcript_dir, f"{child_id}.jsonl")
        reserved = self._hold()
        wt: Worktree | None = None
        try:
            private_dirs(self.transcript_dir)  # the session's own folder: the user's alone (0700)
            if self._isolate(atype, isolation):
                wt = Worktree.create(self.cwd, child_id)
            cwd = wt.cwd if wt is not None else self.cwd
            if self.hooks is not None and self.hooks.has("SubagentStart"):
                out = self.hooks.run("SubagentStart", {"agent_id": child_id, "agent_type": atype.name, "prompt": prompt}, matcher_value=atype.name)
                self._record("hook", out.to_record())
            registry = self._tools_for(atype, cwd)
            budget = Budget(max_steps=self.max_steps, max_usd_micros=reserved[0], max_tokens=reserved[1])
            model = self.model if atype.model is None or self.open_model is None else self._open_type_model(atype)
            messages = [{"role": "system", "content": atype.prompt + f"\n\nWorking directory: {cwd}"}, {"role": "user", "content": prompt}]
            gate = StopGate(budget)
            out_tokens = self._output_budget(atype, reserved[0])
            left: Budget | None = budget
            observe = self._observe(child_id, atype.name, description, prompt)
            with TranscriptWriter(path) as w:
                while left is not None:
                    run_id = child_id if not gate.runs else f"{child_id}.{gate.runs}"
                    sink: Any = w
                    traced = None
                    run_model = model
                    if self.tracing is not None:  # nests under the parent's execute_tool span (same thread)
                        run_model, traced, _ = self.tracing.wrap(model, w, None, model_name=atype.model.split(":", 1)[-1] if atype.model else self.model_name, run_id=run_id)
                        sink = traced
                    last = run(
                        run_model,
                        registry,
                        messages,
                        left,
                        transcript=sink,
                        prices=self.prices,
                        model_name=atype.model.split(":", 1)[-1] if atype.model else self.model_name,
                        loop_threshold=self.loop_threshold,
                        max_output_tokens=out_tokens,
                        run_id=run_id,
                        meta={"agent_id": child_id, "agent_type": atype.name, "description": description, "cwd": cwd},
                        executor=_observed(self._executor(registry, traced), observe),
                        observer=observe,
                    )
                    if traced is not None:
                        traced.finish()
                    result = gate.add(last)
                    left = None
                    again = self._subagent_stop(child_id, atype.name, last, path, gate.active)
                    if again is not None and gate.why_not(last) is None:
                        messages = [*last.messages, {"role": "user", "content": again}]
                        left = gate.remaining()
                last_hash = w.last_hash
                count = w.count
        except BaseException:
            self.parent.settle(reserved, None)
            if wt is not None:
                try:
                    wt.finish(child_id)
                except (ToolError, OSError, subprocess.SubprocessError):
                    pass
            raise
        self.parent.settle(reserved, result)
        summary = {
            "agent_id": child_id,
            "agent_type": atype.name,
            "description": description,
            **self._outcome(result, reserved[0], path, count, last_hash),
        }
        worktree = wt.finish(child_id) if wt is not None else None
        if worktree is not None:
            summary["worktree"] = worktree
        self.children.append(summary)
        self._record("subagent", {**summary, "transcript": path})
        return summary

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

    def _outcome(self, result: Any, reserved_micros: int | None, path: str, count: int, last_hash: str) -> dict[str, Any]:
        """What a finished child's summary says of its run and its transcript."""
        return {
            "answer": result.answer,
            "stop_reason": result.stop_reason,
            "steps": result.steps,
            "spent_micros": result.spent_micros,
            "tokens": result.tokens,
            "reserved_micros": reserved_micros,
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
        if self.hooks is None or not self.hooks.has("SubagentStop") or last.stop_reason == "interrupted":
            return None
        from ..hooks.payloads import write_claude_transcript

        # agent_transcript_path: the child's conversation in Claude Code's lines, beside its hash-chained file
        mirror = os.path.join(os.path.dirname(path), "claude", os.path.basename(path))
        if not write_claude_transcript(mirror, list(last.messages), child_id, self.hooks.cwd):
            mirror = path
        out = self.hooks.run(
            "SubagentStop",
            {"agent_id": child_id, "agent_type": atype, "stop_hook_active": active, "last_assistant_message": last.answer,
             "agent_transcript_path": mirror},
            matcher_value=atype,
        )
        self._record("hook", out.to_record())
        return stop_feedback(out)

    def _tools_for(self, atype: AgentType, cwd: str) -> Registry:
        full = self.make_tools(cwd)
        names = [n for n in full.names() if n != "Agent" and (atype.tools is None or n in atype.tools)]
        return Registry([t for t in full if t.name in names])


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


def parallel_executor(
    inner: Callable[[Sequence[ToolCall]], list[ToolResult]],
    runner: SubagentRunner,
    precheck: Callable[[ToolCall], bool] = lambda c: True,
    max_parallel: int = 4,
    one: Callable[[ToolCall], ToolResult] | None = None,
) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
    """An executor that runs a turn's read-only ``Agent`` calls at the same time.

    Two or more read-only sub-agent calls in one turn, each cleared by
    ``precheck`` (permissions and PreToolUse, in the calling thread), run
    concurrently; every other call goes through ``inner``. Each parallel call
    goes through ``one``, the same path as any call (the agent's tool-call
    pipeline: schema, hooks, permission, redaction; ``inner`` on that call
    alone by default). Before any of them runs, the batch holds the runner's
    share of what the parent has left, split evenly (``ParentBudget.reserve_many``);
    a call refused before its child starts gives its part back. Results come
    back in call order.
    """
    run_one = one if one is not None else (lambda c: inner([c])[0])

    def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        par = [c for c in calls if runner.is_read_only_call(c)]
        if len(par) < 2:
            return inner(calls)
        cleared = [c for c in par if precheck(c)]
        if len(cleared) < 2:
            return inner(calls)
        holds = dict(zip([c.id for c in cleared], runner.parent.reserve_many(runner.share, len(cleared)), strict=True))

        def in_thread(c: ToolCall) -> ToolResult:
            runner.held_for(holds[c.id])
            try:
                return run_one(c)
            finally:
                runner.held_for(None)  # refused before its child started: its part is free again

        results: dict[str, ToolResult] = {}
        tell = runner.tool_events
        if tell is not None:
            from ...events import ToolStarted

            for c in cleared:
                tell(ToolStarted(c))
        with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(cleared)))) as pool:
            futs = {c.id: pool.submit(in_thread, c) for c in cleared}
            rest = [c for c in calls if c.id not in holds]
            if rest:
                for r in inner(rest):
                    results[r.call_id] = r
            for cid, f in futs.items():
                results[cid] = f.result()
        if tell is not None:
            from ...events import ToolFinished

            for cid in futs:
                tell(ToolFinished(results[cid]))
        return [results[c.id] for c in calls]

    return execute


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
