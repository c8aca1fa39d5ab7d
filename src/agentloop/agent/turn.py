"""One run of the loop inside a user turn: the model, tools, transcript and seams the agent hands ``run()``.

``run_once`` calls ``agentloop.run.run`` with the session as the transcript
sink (traced when tracing is on), the tools shown this turn, the context
manager's ``prepare`` and executor, and the run's id (``SESSION/TURN``, or
``SESSION/TURN.PART`` for a run a Stop hook continued). Replies that reported
no usage are counted at the loop's estimate, and the session's totals say so.
What a run is handed is a ``TurnInputs``, a frozen value ``agent/builder.py``
makes when the run starts (``turn_inputs``): never the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from ..budget import Budget
from ..events import Message, Observed, Observer, ToolCall, ToolResult, TurnRecorded
from ..run import RunResult
from ..tools import Registry
from .protocols import ContextFacts, ContextManager
from .subagents.background import keep_going, ledger_for, notify, stop_on_interrupt

if TYPE_CHECKING:
    from ..budget import PriceTable
    from .session.store import Session

__all__ = ["TurnInputs", "keep_going", "now_iso", "run_once", "stop_children"]


@dataclass(frozen=True, slots=True)
class TurnInputs:
    """What one run of a turn is handed: the session, the model as it is now, the tools shown this run, the context
    manager and what it sees, tracing, and where to learn of tools that changed during the run."""

    session: Session
    cwd: str
    model: Any
    model_spec: str
    model_name: str
    prices: PriceTable
    tools: Registry
    context: ContextManager
    """Also where the sub-agents' background children are found (``backgrounds``)."""
    facts: ContextFacts
    tracing: Any
    loop_threshold: int | None
    max_output_tokens: int
    tools_changed: Callable[[], Registry | None]
    """After each tool batch: the tools now shown, when they changed (a worktree entered, an MCP server's list)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_once(a: TurnInputs, messages: list[Message], budget: Budget, outer: Observer | None, n: int, part: int,
             execute: Callable[[Sequence[ToolCall], Observer], list[ToolResult]],
             stop: Callable[[Any, Any], str | None] | None = None) -> tuple[RunResult, bool]:
    """One run of the loop for turn ``n`` (``part`` > 0: continued by a Stop hook); True when its tokens
    include the loop's estimate for replies that reported no usage. ``stop``: checked first before each model
    call (a stop reason ends the run; the user stopped the turn at a permission question)."""
    from ..run import run
    from .context.loop_check import chain

    s = a.session
    st = s.stats
    unreported = [0]

    def obs(ev: Observed) -> None:
        if isinstance(ev, TurnRecorded):
            u = ev.reply.usage
            st.add_turn(u.to_json() if u is not None else {})
            if u is None:
                unreported[0] += 1
        if outer is not None:
            outer(ev)

    meta: dict[str, Any] = {"session_id": s.id, "turn": n, "started_at": now_iso(), "cwd": a.cwd}
    if part:
        meta["stop_hook_continuation"] = part
    run_id = f"{s.id}/{n}" if not part else f"{s.id}/{n}.{part}"
    bg = a.context.backgrounds()
    messages = notify(bg, messages)  # background children's reports, before the prompt (subagents/background.py)
    model, sink, traced, emit = a.model, cast(Any, s), None, cast(Observer, obs)
    reported = (st.input_tokens, st.output_tokens)
    if a.tracing is not None:
        model, traced, emit = a.tracing.wrap(a.model, s, emit, model_name=a.model_spec, run_id=run_id, conversation_id=s.id)
        sink = traced
    result = run(
        model, a.tools, messages, budget, transcript=sink, prices=a.prices, model_name=a.model_name,
        run_id=run_id, meta=meta, observer=emit, executor=a.context.wrap_executor(a.facts, lambda calls: execute(calls, emit)),
        prepare=chain(stop, a.context.run_prepare(a.facts)), loop_threshold=a.loop_threshold,
        max_output_tokens=a.max_output_tokens, continues=s.continuation(), tools_changed=a.tools_changed,
        ledger=ledger_for(bg, budget),
    )
    stop_on_interrupt(bg, result)
    if traced is not None:
        traced.finish()
    # tokens the provider did not report: the loop's estimate is in result.usage, not in the replies
    est_in = max(0, result.usage.input_tokens - (st.input_tokens - reported[0])) if unreported[0] else 0
    est_out = max(0, result.usage.output_tokens - (st.output_tokens - reported[1])) if unreported[0] else 0
    st.input_tokens += est_in
    st.output_tokens += est_out
    st.estimated_tokens += est_in + est_out
    return result, est_in + est_out > 0


def stop_children(context: ContextManager) -> int:
    """The session ends: background sub-agents stop, what they recorded is written while it is open; returns what
    they were billed that no run took (micro-USD), for the agent to add to the session's spend (``session_end``)."""
    bg = context.backgrounds()
    if bg is None:
        return 0
    bg.close()
    return bg.parent.take_pending()
