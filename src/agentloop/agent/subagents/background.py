"""Sub-agents in the background: Claude Code's ``run_in_background`` on ``Agent``.

Rules:

1. The ``Agent`` call returns at once, naming the child's id and saying its
   report will arrive; the child runs on a thread of its own, drawing from the
   parent's room call by call as a foreground child does (``ParentBudget``).
2. What follows its run (its records in the parent's transcript, its bill
   handed to the parent's loop, its worktree merged back, its report) happens
   when its report is delivered, on the parent's thread, before a run of the
   session starts: never in the middle of a parent's run, so the parent's
   records and working tree change only between runs. Its bill waits in
   ``ParentBudget.pending`` (counted against the room) until that run's
   ``prepare`` hands it to the loop.
3. Its report (the text ``runner.report`` makes) reaches the model as a user
   message: the next run of the session gets every finished child's report
   before its prompt. With ``wait_at_end`` (``-p``, which has no next turn),
   a turn that ends while children run waits for them and goes on with their
   reports, as Claude Code does in ``-p``. The notification is part of the
   run's recorded messages, so replay gives the same bytes.
4. While any run of the session may have a child in the background, the
   parent's own calls reserve through ``ParentLedger`` (``run(..., ledger=)``):
   a reservation that, with what children hold, drew and left pending, would
   pass the session's cap is refused.
5. Ctrl+C in the parent's turn stops every background child before its next
   model call, and so does the session's end (``close``).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ...budget import Budget
from ...events import Message
from ...run import RunResult
from .parent_budget import ChildLedger, Hold, ParentBudget, ParentLedger
from .worktree import Worktree

__all__ = ["Background", "Backgrounds", "Ran", "keep_going", "notify", "ledger_for", "stop_on_interrupt"]


@dataclass
class Ran:
    """A child's run to its stop, before what follows it (``SubagentRunner.finish``)."""

    child_id: str
    agent_type: str
    description: str
    path: str
    allowed: Hold
    ledger: ChildLedger
    wt: Worktree | None
    result: RunResult
    last_hash: str
    count: int
    background: bool = False


@dataclass
class Background:
    """One child in the background: what its thread recorded meanwhile, its stop, and how it ended."""

    child_id: str
    description: str
    stop: threading.Event = field(default_factory=threading.Event)
    records: list[tuple[str, object]] = field(default_factory=list)
    ran: Ran | None = None
    """The child's run, once it stopped."""
    error: str | None = None
    done: bool = False
    thread: threading.Thread | None = None


RunChild = Callable[[str, str, str, "str | None", str], Ran]
"""(description, prompt, agent type, isolation, child id) -> the child's run (``SubagentRunner.run_child``)."""


class Backgrounds:
    """A runner's background children, in the order they started.

    Handed the runner's parts it uses, not the runner: ``run_child`` runs a child to its stop, ``report`` does
    what follows it and returns the text its parent reads (``SubagentRunner.finish`` then ``report``),
    ``record`` writes to the parent's transcript, ``here`` is the runner's per-thread state (where a thread
    running a background child keeps its ``Background``), and ``parent`` the room the children draw from."""

    def __init__(self, run_child: RunChild, report: Callable[[Ran], str], record: Callable[[str, object], None],
                 new_id: Callable[[], str], here: threading.local, parent: ParentBudget):
        self.run_child = run_child
        self.report = report
        self.record = record
        self.new_id = new_id
        self.here = here
        self.parent = parent
        self.running: dict[str, Background] = {}
        self._cond = threading.Condition()
        self.wait_at_end = False
        """``-p``: a turn that ends while children run waits for them and goes on with their reports (rule 3)."""

    def start(self, description: str, prompt: str, agent_type: str, isolation: str | None) -> str:
        """Start a child on its own thread (rule 1); what the ``Agent`` call returns at once."""
        bg = Background(self.new_id(), description)

        def body() -> None:
            self.here.background = bg
            try:
                bg.ran = self.run_child(description, prompt, agent_type, isolation, bg.child_id)
            except BaseException as exc:  # a failure is the child's report, not the parent's crash
                bg.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            finally:
                self.here.background = None
                with self._cond:
                    bg.done = True
                    self._cond.notify_all()

        with self._cond:
            self.running[bg.child_id] = bg
        ctx = contextvars.copy_context()  # the Agent call's id and trace, for the child's observer
        bg.thread = threading.Thread(target=ctx.run, args=(body,), name=f"agentloop-bg-{bg.child_id}", daemon=True)
        bg.thread.start()
        return (f"Started agent {bg.child_id} in the background ({description}). Its report will arrive as a message "
                "when it finishes; go on with other work meanwhile, and do not wait or poll for it.")

    def busy(self) -> bool:
        with self._cond:
            return bool(self.running)

    def deliver(self) -> str | None:
        """Every finished child's report, as one notification (in the order they started), each finished here
        first: its records, its bill, its merge-back (rule 2). None when none has finished."""
        with self._cond:
            done = [b for b in self.running.values() if b.done]
            for b in done:
                del self.running[b.child_id]
        if not done:
            return None
        parts = []
        for b in done:
            for kind, payload in b.records:
                self.record(kind, payload)
            if b.ran is not None:
                text = self.report(b.ran)
            else:
                text = f"(the sub-agent failed: {b.error})\n\n[agent {b.child_id} · failed]"
            parts.append(f"<task-notification>\nThe background agent {b.child_id} ({b.description}) has finished. "
                         f"Its report:\n\n{text}\n</task-notification>")
        return "\n\n".join(parts)

    def wait(self, timeout: float | None = None) -> None:
        """Until every background child is done (or ``timeout`` seconds)."""
        with self._cond:
            self._cond.wait_for(lambda: all(b.done for b in self.running.values()), timeout=timeout)

    def stop(self) -> None:
        """Every running child stops before its next model call (rule 5)."""
        with self._cond:
            for b in self.running.values():
                b.stop.set()

    def close(self, timeout: float = 15.0) -> None:
        """The session ends: stop every child and wait for it, and write what it recorded."""
        if not self.busy():
            return
        self.stop()
        self.wait(timeout)
        self.deliver()


def notify(bg: Backgrounds | None, messages: list[Message]) -> list[Message]:
    """``messages`` with finished background children's reports before the last user message's text (rule 3)."""
    text = bg.deliver() if bg is not None else None
    if text is None or not messages or messages[-1].get("role") != "user":
        return messages
    last = dict(messages[-1])
    content = last.get("content")
    if isinstance(content, str):
        last["content"] = f"{text}\n\n{content}" if content else text
    elif isinstance(content, list):
        last["content"] = [{"type": "text", "text": text}, *content]
    else:
        last["content"] = text
    return [*messages[:-1], last]


def ledger_for(bg: Backgrounds | None, budget: Budget) -> ParentLedger | None:
    """The parent run's view of the shared room (rule 4), for a session with sub-agents and a money cap."""
    if bg is None:
        return None
    view = bg.parent.for_run(budget)
    return view if budget.max_usd_micros is not None else None


def stop_on_interrupt(bg: Backgrounds | None, result: RunResult) -> None:
    if bg is not None and result.stop_reason == "interrupted":
        bg.stop()


def keep_going(bg: Backgrounds | None, last: RunResult) -> str | None:
    """``-p``: when the turn ended while children run in the background, wait for them and go on with their
    reports (rule 3); None otherwise."""
    if bg is None or not bg.wait_at_end or not bg.busy() or last.stop_reason == "interrupted":
        return None
    bg.wait()
    return bg.deliver()
