"""Sub-agents: Claude Code's ``Agent`` tool, a child run with its own prompt, tools, transcript and budget.

Rules:

1. A child's budget is reserved from what its parent has left (the parent's
   live ``State``, bound through the ``prepare`` seam): by default half of
   it, shared evenly by children that run together. A child's own loop keeps
   it under that reservation, so it can never overspend the parent; what it
   spent is charged to the parent, and the rest is free again.
2. Each child writes its own hash-chained transcript. The parent's record
   (the ``Agent`` tool result, and a ``subagent`` record) holds the child's
   id, final answer, spend, and its transcript's path and last hash, so
   ``verify_tree`` can check the whole tree from the parent's file.
3. Isolation: in a git repository (with a commit), a child that may write
   works in a temporary git worktree on a new branch by default (seed 004);
   ``isolation: "worktree"`` asks for it whatever the type, ``isolation:
   "none"`` (or ``"subagentIsolation": "none"`` in settings) works in the
   parent's directory. With no changes the worktree and branch are removed;
   with changes they are committed on the branch, the worktree is kept, and
   both are reported to the parent. Outside git, or for a read-only type, the
   child works in the parent's directory. A worktree starts from ``HEAD``:
   the parent's uncommitted changes are not in it.
4. Children of read-only types (``Explore``) may run at the same time
   (``parallel_executor``); others run one at a time.
5. SubagentStart and SubagentStop hooks fire around each child (matcher: the
   agent type); a blocking SubagentStop keeps the child going with its reason
   as the next user message, in the same transcript and under the child's
   budget, at most ``MAX_STOP_BLOCKS`` times in a row (``hooks/stop_gate.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...budget import Budget, PriceTable
from ...events import ToolCall, ToolResult
from ...loop import side_room
from ...run import RunResult, SideCosts, run
from ...tools import Registry, Tool, ToolError
from ...transcript import TranscriptWriter, read_records, verify_file
from ..hooks.runner import HookRunner
from ..hooks.stop_gate import StopGate, stop_feedback

__all__ = [
    "AgentType",
    "ParentBudget",
    "SubagentRunner",
    "builtin_types",
    "load_agent_types",
    "parallel_executor",
    "verify_tree",
]

READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS")


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str
    """The child's system prompt."""
    tools: tuple[str, ...] | None = None
    """Tool names it may use; None: all of the parent's (never ``Agent`` itself)."""
    model: str | None = None
    source: str = "built-in"

    def read_only(self, registry: Registry | None = None) -> bool:
        """True when every tool it may use changes nothing."""
        if self.tools is None:
            return False
        if registry is None:
            return all(t in READ_ONLY_TOOLS for t in self.tools)
        return all((t := registry.get(n)) is not None and t.read_only for n in self.tools if n in registry)


def builtin_types() -> dict[str, AgentType]:
    return {
        "general-purpose": AgentType(
            "general-purpose",
            "A general agent for multi-step tasks: searching, reading and changing code.",
            "You are a sub-agent working on one task for another agent. Do the task with the tools you have, "
            "then answer with a concise, complete report of what you found or did: it is all the other agent will see.",
        ),
        "Explore": AgentType(
            "Explore",
            "A read-only agent for finding and reading code quickly; it changes nothing.",
            "You are a read-only sub-agent exploring a codebase for another agent. Search and read; never change "
            "anything. Answer with the facts found, with file paths and line numbers.",
            tools=READ_ONLY_TOOLS,
        ),
    }


_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?(.*)\Z", re.S)


KNOWN_TOOLS = frozenset({"Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "Skill", "Agent", "Task",
                         "ListMcpResourcesTool", "ReadMcpResourceTool"})
"""Tool names an agent file may list besides ``mcp__...`` names (``Task`` is Claude Code's old name of ``Agent``)."""


def load_agent_types(cwd: str, home: str, user_home: str | None = None, warnings: list[str] | None = None) -> dict[str, AgentType]:
    """Built-in types, then ``<home>/agents/``, ``~/.claude/agents/``, ``.claude/agents/`` and
    ``.agentloop/agents/``, subfolders included, as Claude Code finds them (sub-agent files:
    front matter ``name``, ``description``, ``tools``, ``model``; the body is the prompt).
    A later place overrides an earlier one. A file that cannot be understood is skipped,
    and said so in ``warnings``; so is a tool name no agentloop tool has (the type keeps
    the others)."""
    types = builtin_types()
    places = [os.path.join(home, "agents")]
    if user_home:
        places.append(os.path.join(user_home, ".claude", "agents"))
    places += [os.path.join(cwd, ".claude", "agents"), os.path.join(cwd, ".agentloop", "agents")]
    for d in places:
        found: list[str] = []
        for root, dirs, files in os.walk(d):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
        for path in found:
            fn = os.path.basename(path)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError) as exc:
                if warnings is not None:
                    warnings.append(f"{path}: the agent file cannot be read ({exc}); skipped")
                continue
            m = _FRONT.match(text)
            if not m:
                if warnings is not None:
                    warnings.append(f"{path}: no front matter (--- name, description ---); the agent file is skipped")
                continue
            meta: dict[str, str] = {}
            for line in m.group(1).splitlines():
                k, sep, v = line.partition(":")
                if sep:
                    meta[k.strip()] = v.strip().strip("\"'")
            name = meta.get("name") or fn[:-3]
            tools = tuple(t.strip() for t in meta["tools"].split(",") if t.strip()) if meta.get("tools") else None
            unknown = [t for t in tools or () if t not in KNOWN_TOOLS and not t.startswith("mcp__")]
            if unknown and warnings is not None:
                warnings.append(f"{path}: agent {name!r} lists tools agentloop does not have: {', '.join(unknown)} (left out)")
            model = meta.get("model") or None
            if model == "inherit":
                model = None  # Claude Code: the parent's model
            types[name] = AgentType(name, meta.get("description", ""), m.group(2).strip(), tools, model, path)
    return types


# --- the parent's budget -----------------------------------------------------


class ParentBudget:
    """What the parent run has left, and the children's reservations against it.

    Bind it to the parent's loop with ``bind`` as (part of) the run's
    ``prepare``: it is refreshed before every parent turn, and keeps the
    run's ``SideCosts`` (what ``prepare`` records with), through which a
    child's spend enters the parent's loop (``loop`` rule 6). Bound without
    them (no loop to charge), it grants children nothing when the parent is
    capped: a spend the parent's loop cannot see could pass its cap.
    """

    def __init__(self) -> None:
        self.state: Any = None
        self.costs: SideCosts | None = None
        self._lock = threading.Lock()
        self.held_micros = 0
        self.held_tokens = 0

    def bind(self, state: Any, record: Any = None) -> None:
        self.state = state
        self.costs = record if isinstance(record, SideCosts) else None

    def left(self) -> tuple[int | None, int | None]:
        """(micro-USD, tokens) the parent has left after live reservations; None: not capped."""
        st = self.state
        if st is None:
            return None, None
        money, tokens = side_room(st)  # the loop's measure of what its run has left (loop rule 6)
        money = None if money is None else max(0, money - self.held_micros)
        tokens = None if tokens is None else max(0, tokens - self.held_tokens)
        if self.costs is None:  # fail closed: what a child spent could not be charged
            money, tokens = (None if money is None else 0), (None if tokens is None else 0)
        return money, tokens

    def reserve(self, share: float) -> tuple[int | None, int | None]:
        with self._lock:
            money, tokens = self.left()
            m = None if money is None else int(money * share)
            t = None if tokens is None else int(tokens * share)
            self.held_micros += m or 0
            self.held_tokens += t or 0
            return m, t

    def settle(self, reserved: tuple[int | None, int | None], result: RunResult | None) -> None:
        """Free the reservation and hand what the child really spent to the parent's loop (queued by the
        parent's driver until the turn's tools are done: never written from this thread)."""
        with self._lock:
            self.held_micros -= reserved[0] or 0
            self.held_tokens -= reserved[1] or 0
        if result is None or self.costs is None:
            return
        over = f"a sub-agent was billed past its reservation: {result.error}" if result.stop_reason == "budget_overrun" else None
        self.costs.settle("subagent", result.usage, result.spent_micros, reserved_micros=reserved[0], reserved_tokens=reserved[1], overrun=over)


# --- worktrees -----------------------------------------------------------------


def _git(args: Sequence[str], cwd: str) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise ToolError(f"git {' '.join(args[:2])} failed: {p.stderr.strip()[:300]}")
    return p.stdout.strip()


@dataclass
class Worktree:
    repo: str
    path: str
    branch: str
    base: str
    subdir: str

    @property
    def cwd(self) -> str:
        return os.path.join(self.path, self.subdir) if self.subdir else self.path

    @classmethod
    def create(cls, cwd: str, child_id: str) -> Worktree:
        try:
            repo = _git(["rev-parse", "--show-toplevel"], cwd)
        except (ToolError, OSError):
            raise ToolError(f"isolation \"worktree\" needs a git repository; {cwd} is not in one") from None
        base = _git(["rev-parse", "HEAD"], repo)
        path = tempfile.mkdtemp(prefix=f"agentloop-{child_id}-")
        branch = f"agentloop/{child_id}"
        _git(["worktree", "add", "-q", "-b", branch, path, base], repo)
        sub = os.path.relpath(os.path.realpath(cwd), os.path.realpath(repo))
        return cls(repo, path, branch, base, "" if sub == "." else sub)

    def finish(self, child_id: str) -> dict[str, Any]:
        """Remove the worktree if nothing changed; else commit the changes on its branch and keep it."""
        dirty = _git(["status", "--porcelain"], self.path)
        head = _git(["rev-parse", "HEAD"], self.path)
        if not dirty and head == self.base:
            _git(["worktree", "remove", "--force", self.path], self.repo)
            _git(["branch", "-D", self.branch], self.repo)
            return {"changed": False, "removed": True}
        if dirty:
            ident: list[str] = []
            if not _has_identity(self.path):
                ident = ["-c", "user.name=agentloop", "-c", "user.email=agentloop@localhost"]
            _git(["add", "-A"], self.path)
            _git([*ident, "commit", "-q", "-m", f"agentloop sub-agent {child_id}"], self.path)
        commit = _git(["rev-parse", "HEAD"], self.path)
        return {"changed": True, "removed": False, "branch": self.branch, "path": self.path, "commit": commit, "base": self.base}


def _git_head(cwd: str) -> bool:
    """``cwd`` is inside a git repository that has a commit (a worktree can start from it)."""
    try:
        p = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0


def _has_identity(cwd: str) -> bool:
    p = subprocess.run(["git", "config", "user.email"], cwd=cwd, capture_output=True, text=True)
    return p.returncode == 0 and bool(p.stdout.strip())


# --- the runner -----------------------------------------------------------------

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
    open_model: Callable[[str], Any] | None = None
    """Opens a type's own ``model``; the parent's model is used when None."""
    tracing: Any = None
    """An ``agentloop.telemetry.Tracing``: each child run is traced (under the parent's tool span)."""

    def _executor(self, registry: Registry, traced: Any) -> Any:
        ex = self.make_executor(registry) if self.make_executor is not None else None
        return traced.executor(ex) if traced is not None and ex is not None else ex
    hooks: HookRunner | None = None
    record: Callable[[str, Any], Any] | None = None
    """Appends to the parent's transcript (called under a lock)."""
    make_executor: Callable[[Registry], Callable[[Sequence[ToolCall]], list[ToolResult]]] | None = None
    """Wraps a child's tools with the parent's permission checks; plain ``Registry.invoke`` when None."""
    types: dict[str, AgentType] = field(default_factory=builtin_types)
    max_steps: int = 30
    default_isolation: str = "worktree"
    """``worktree``: a child that may write gets a worktree in a git repository unless the call says ``none``."""
    share: float = 0.5
    """The part of the parent's remaining budget reserved for one child (or shared by a parallel batch)."""
    loop_threshold: int = 5
    new_id: Callable[[], str] = field(default=lambda: "agent-" + uuid.uuid4().hex[:12])
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    children: list[dict[str, Any]] = field(default_factory=list)

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
        lines.append('In a git repository an agent that may write works in a temporary git worktree (its changes come back on '
                     'a branch); isolation: "none" runs it in this directory instead.')
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
        return _git_head(self.cwd)

    def start(self, description: str, prompt: str, subagent_type: str = "general-purpose", isolation: str | None = None, *, share: float | None = None) -> dict[str, Any]:
        """Run one child to its stop; returns what the parent's tool result holds."""
        atype = self.agent_type(subagent_type)
        child_id = self.new_id()
        os.makedirs(self.transcript_dir, exist_ok=True)
        path = os.path.join(self.transcript_dir, f"{child_id}.jsonl")
        reserved = self.parent.reserve(self.share if share is None else share)
        wt: Worktree | None = None
        try:
            if self._isolate(atype, isolation):
                wt = Worktree.create(self.cwd, child_id)
            cwd = wt.cwd if wt is not None else self.cwd
            if self.hooks is not None and self.hooks.has("SubagentStart"):
                out = self.hooks.run("SubagentStart", {"agent_id": child_id, "agent_type": atype.name, "prompt": prompt}, matcher_value=atype.name)
                self._record("hook", out.to_record())
            registry = self._tools_for(atype, cwd)
            budget = Budget(max_steps=self.max_steps, max_usd_micros=reserved[0], max_tokens=reserved[1])
            model = self.model if atype.model is None or self.open_model is None else self.open_model(atype.model)
            messages = [{"role": "system", "content": atype.prompt + f"\n\nWorking directory: {cwd}"}, {"role": "user", "content": prompt}]
            gate = StopGate(budget)
            left: Budget | None = budget
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
                        run_id=run_id,
                        meta={"agent_id": child_id, "agent_type": atype.name, "description": description, "cwd": cwd},
                        executor=self._executor(registry, traced),
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
        out = self.hooks.run(
            "SubagentStop",
            {"agent_id": child_id, "agent_type": atype, "stop_hook_active": active, "last_assistant_message": last.answer,
             "agent_transcript_path": path},
            matcher_value=atype,
        )
        self._record("hook", out.to_record())
        return stop_feedback(out)

    def _tools_for(self, atype: AgentType, cwd: str) -> Registry:
        full = self.make_tools(cwd)
        names = [n for n in full.names() if n != "Agent" and (atype.tools is None or n in atype.tools)]
        return Registry([t for t in full if t.name in names])


def parallel_executor(
    inner: Callable[[Sequence[ToolCall]], list[ToolResult]],
    runner: SubagentRunner,
    precheck: Callable[[ToolCall], bool] = lambda c: True,
    max_parallel: int = 4,
) -> Callable[[Sequence[ToolCall]], list[ToolResult]]:
    """An executor that runs a turn's read-only ``Agent`` calls at the same time.

    Two or more read-only sub-agent calls in one turn, each cleared by
    ``precheck`` (permissions and PreToolUse, in the calling thread), run
    concurrently, each with an even share of the parent's reserve; every
    other call goes through ``inner``. Results come back in call order.
    """
    from ...tools import finish, raised

    def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        par = [c for c in calls if runner.is_read_only_call(c)]
        if len(par) < 2:
            return inner(calls)
        cleared = {c.id for c in par if precheck(c)}
        if len(cleared) < 2:
            return inner(calls)
        share = runner.share / len(cleared)

        def one(c: ToolCall) -> ToolResult:
            a = c.arguments
            try:
                value = runner.start(str(a["description"]), str(a["prompt"]), str(a.get("subagent_type", "general-purpose")), None, share=share)
            except Exception as exc:  # a child's failure is the parent's data
                return raised(c, exc)
            return finish(c, value)

        results: dict[str, ToolResult] = {}
        with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(cleared)))) as pool:
            futs = {c.id: pool.submit(one, c) for c in calls if c.id in cleared}
            rest = [c for c in calls if c.id not in cleared]
            if rest:
                for r in inner(rest):
                    results[r.call_id] = r
            for cid, f in futs.items():
                results[cid] = f.result()
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
