"""What a session records about itself beside its runs: the files the tools change, and going back (``/rewind``).

``record_file_change`` keeps both contents of a file a built-in tool is about
to write, in the checkpoint store, and records the change (``checkpoints``
rule 1); ``rewind`` puts files and the conversation back to before a prompt
(``checkpoints`` rule 3) and records a ``rewind`` record, with the messages
resume and replay rebuild from (conversation rule 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .protocols import AgentError
from .session.store import Session

__all__ = ["record_file_change", "rewind"]


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
