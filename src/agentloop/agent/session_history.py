"""What a session records about itself beside its runs: its start, the files the tools change, and going back (``/rewind``).

``record_file_change`` keeps both contents of a file a built-in tool is about
to write, in the checkpoint store, and records the change (``checkpoints``
rule 1); ``rewind`` puts files and the conversation back to before a prompt
(``checkpoints`` rule 3) and records a ``rewind`` record, with the messages
resume and replay rebuild from (conversation rule 1).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..events import Message
from .protocols import AgentError
from .session.store import Session
from .turn import now_iso

log = logging.getLogger("agentloop.agent")

__all__ = ["record_end", "record_file_change", "record_start", "replace_system", "rewind"]


def record_start(s: Session, source: str, system: list[Message], facts: dict[str, Any]) -> None:
    """A session starts (``startup``, ``resume``, ``clear``): its system prompt replaced whole (one message in
    older sessions; two, the first marked as the cache boundary, now), and its ``session_start`` record."""
    replace_system(s, system)
    s.note("session_start", {"session_id": s.id, "source": source, "started_at": now_iso(), **facts})


def replace_system(s: Session, system: list[Message]) -> None:
    """The session's system prompt messages replaced whole by ``system`` (from the next model call on)."""
    msgs = s.messages
    head = 1 if msgs and msgs[0].get("role") == "system" else 0
    if head and msgs[0].get("cache_boundary") and len(msgs) > 1 and msgs[1].get("role") == "system":
        head = 2
    msgs[:head] = system


def record_end(s: Session, reason: str) -> None:
    """The session ends: its ``session_end`` record (when it ran a turn), and the session released."""
    if s.written:
        try:
            s.append("session_end", {"reason": reason, "ended_at": now_iso(), **s.stats.to_json()})
        except Exception as exc:  # the lock must be released even then
            log.error("could not record session_end: %s", exc)
    s.close()
    log.info("session closed (%s)", reason)


def record_file_change(s: Session, home: str, path: str, before: bytes | None, after: bytes, call_id: str | None) -> None:
    """A built-in tool is about to write ``path`` (during the session's next turn, in call ``call_id``)."""
    from .session.checkpoints import Checkpoints

    store = Checkpoints(home)
    payload = {
        "path": path,
        "before": None if before is None else store.put(before),
        "after": store.put(after),
        "turn": s.stats.turns + 1,
    }
    if call_id is not None:
        payload["tool_call_id"] = call_id
    s.append("file_change", payload)


def rewind(s: Session, home: str, roots: Sequence[str], turn: int, *, files: bool, conversation: bool, force: bool) -> dict[str, Any]:
    """Go back to before prompt ``turn``: the files the built-in tools changed since, the conversation, or both.

    Returns:
        What was done: ``restored`` and ``left`` (changed by hand since) paths, ``conversation``.
    Raises:
        AgentError: no such prompt, or a checkpoint is missing or was changed.
    """
    from ..conversation import Conversation
    from ..transcript import TranscriptError, read_records
    from .session.checkpoints import Checkpoints, apply_rewind, plan_rewind

    roots = list(roots)  # nothing outside them is touched, whatever a record says
    try:
        plan = plan_rewind(read_records(s.path) if s.written else [], turn, roots)  # streamed, not held
        restored, left = apply_rewind(plan, Checkpoints(home), roots, force=force) if files else ([], [])
    except (ValueError, TranscriptError) as exc:
        raise AgentError(str(exc)) from None
    if conversation and plan.conversation_seq is not None:
        conv = Conversation()
        for r in read_records(s.path):
            if r.seq > plan.conversation_seq:
                break
            conv.feed(r.kind, r.payload)
        msgs = conv.messages if conv.started else [m for m in s.messages[:1] if m.get("role") == "system"]
        s.messages = msgs
    out: dict[str, Any] = {"turn": turn, "files": files, "conversation": conversation, "restored": restored, "left": left}
    if plan.outside:
        out["outside"] = plan.outside
    if conversation:
        out["messages"] = s.messages  # what resume and replay rebuild from (conversation rule 1)
    s.append("rewind", out)
    out.pop("messages", None)
    return out
