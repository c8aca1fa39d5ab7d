"""``--output-format stream-json``: the Agent SDK's messages, one JSON object a line, as things happen.

Rules (each message is an ``SDKMessage`` of the Agent SDK's ``sdk.d.ts``; the
shapes are in ``claude_format``):

1. ``system``/``init`` first; each model call's reply as one ``assistant``
   message with an id of its own (``msg_`` and 32 hex digits); each tool result
   as a ``user`` message with a ``tool_result`` block; the ``result`` last.
2. ``--include-partial-messages``: each model call is also told as the
   Messages API streams it, ``message_start``, then per content block
   ``content_block_start``, its deltas (``text_delta`` as the text arrives;
   ``thinking_delta`` and ``signature_delta``, ``input_json_delta`` with a
   call's whole arguments, when the reply is complete) and
   ``content_block_stop``, then ``message_delta`` (stop reason, usage) and
   ``message_stop``, each as a ``stream_event`` carrying the same message id
   as the ``assistant`` message that follows. agentloop's providers do not
   pass thinking on as it streams: a turn's thinking blocks come after its
   text, with the indexes after it.
3. A sub-agent's turns are streamed as the parent's are, each message with
   ``parent_tool_use_id`` set to the ``Agent`` call that started it, its
   prompt first as a ``user`` message.
4. A provider's retry is a ``system``/``api_retry`` message (attempt,
   max_retries, retry_delay_ms, error_status, error); any other notice is a
   ``system``/``informational`` one (level ``warning``).
5. With ``--include-partial-messages``, a model call that breaks off and is
   tried again (after its ``api_retry``) starts a new message: a new
   ``message_start`` with a new id, its blocks from index 0. The broken
   message gets no ``message_stop``, as the cut stream it wraps got none; the
   deltas joined under the id of the ``assistant`` message are its text.
6. Lines are written whole and flushed, one at a time (sub-agents that run
   together write from their own threads).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from . import claude_format as cf
from .terminal_text import json_line

__all__ = ["StreamJson", "retry_message"]

# agentloop's provider error kinds in the SDK's SDKAssistantMessageError words
_ERROR_WORDS = {
    "rate_limit": "rate_limit",
    "overloaded": "overloaded",
    "server": "server_error",
    "auth": "authentication_failed",
    "bad_request": "invalid_request",
    "context": "invalid_request",
    "quota": "billing_error",
}


def retry_message(session_id: str, notice: Any) -> dict[str, Any]:
    """A provider's retry notice (``providers.base.RetryNotice``) as ``system``/``api_retry``."""
    return {
        "type": "system",
        "subtype": "api_retry",
        "attempt": int(notice.attempt),
        "max_retries": int(notice.max_retries),
        "retry_delay_ms": int(notice.retry_delay_ms),
        "error_status": notice.status if isinstance(notice.status, int) else None,
        "error": _ERROR_WORDS.get(str(notice.kind), "unknown"),
        "session_id": session_id,
        "uuid": cf._uuid(),
    }


@dataclass
class _Call:
    """One model call being told as stream events (rule 2)."""

    message_id: str = field(default_factory=cf.new_message_id)
    started: bool = False
    text_open: bool = False
    next_index: int = 0


class StreamJson:
    """The observer that writes a run's messages (rules 1 to 3); ``child`` makes a sub-agent's."""

    def __init__(self, sid: str, *, partial: bool = False, out: TextIO | None = None,
                 parent_tool_use_id: str | None = None, lock: threading.Lock | None = None):
        self.sid = sid
        self.partial = partial
        self.out = out
        self.parent = parent_tool_use_id
        self.lock = lock or threading.Lock()
        self._call = _Call()

    def emit(self, obj: dict[str, Any], *, session: bool = True) -> None:
        """One line; ``session``: with the session's id (every message but the control protocol's)."""
        line = json_line({**obj, "session_id": obj.get("session_id", self.sid)} if session else obj) + "\n"
        out = self.out or sys.stdout
        with self.lock:
            out.write(line)
            out.flush()

    def notice(self, text: str) -> None:
        """A notice from the agent or its provider (rule 4)."""
        if hasattr(text, "retry_delay_ms"):
            self.emit(retry_message(self.sid, text))
        else:
            self.emit(cf.informational(self.sid, str(text)))

    def child(self, info: Mapping[str, Any]) -> StreamJson:
        """The observer of a sub-agent started by the ``Agent`` call ``info["parent_tool_use_id"]`` (rule 3)."""
        sub = StreamJson(self.sid, partial=self.partial, out=self.out, parent_tool_use_id=info.get("parent_tool_use_id"), lock=self.lock)
        if info.get("prompt"):
            sub.emit(cf.user_prompt_message(self.sid, str(info["prompt"]), sub.parent))
        return sub

    def __call__(self, ev: Any) -> None:
        from agentloop.events import TextDelta, TextWithdrawn, ToolFinished, TurnRecorded

        if isinstance(ev, TextDelta):
            if self.partial:
                self._text(ev.text)
        elif isinstance(ev, TextWithdrawn):
            if self._call.started:  # rule 5: the retry is a new message, the broken one left as the cut stream left it
                self._call = _Call()
        elif isinstance(ev, TurnRecorded):
            call, self._call = self._call, _Call()
            if self.partial:
                self._finish(call, ev.reply)
            self.emit(cf.assistant_message(self.sid, ev.reply, call.message_id, self.parent))
        elif isinstance(ev, ToolFinished):
            self.emit(cf.tool_result_message(self.sid, ev.result, self.parent))

    # -- rule 2 --

    def _event(self, event: dict[str, Any]) -> None:
        self.emit(cf.stream_event(self.sid, event, self.parent))

    def _start(self, call: _Call, reply: Any = None) -> None:
        if not call.started:
            call.started = True
            self._event({"type": "message_start", "message": cf.beta_message(reply, call.message_id, content=[], done=False)})

    def _block(self, call: _Call, block: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        i = call.next_index
        call.next_index += 1
        self._event({"type": "content_block_start", "index": i, "content_block": block})
        for d in deltas:
            self._event({"type": "content_block_delta", "index": i, "delta": d})
        self._event({"type": "content_block_stop", "index": i})

    def _text(self, text: str) -> None:
        call = self._call
        self._start(call)
        if not call.text_open:
            call.text_open = True
            self._event({"type": "content_block_start", "index": call.next_index, "content_block": {"type": "text", "text": "", "citations": None}})
        self._event({"type": "content_block_delta", "index": call.next_index, "delta": {"type": "text_delta", "text": text}})

    def _finish(self, call: _Call, reply: Any) -> None:
        self._start(call, reply)
        if call.text_open:
            self._event({"type": "content_block_stop", "index": call.next_index})
            call.next_index += 1
        elif reply.text:  # a model that does not stream: the whole text as one delta
            self._block(call, {"type": "text", "text": "", "citations": None}, [{"type": "text_delta", "text": reply.text}])
        for b in getattr(reply, "reasoning", ()):
            self._reasoning(call, b)
        for c in reply.tool_calls:
            args = json.dumps(c.arguments, ensure_ascii=False)
            self._block(call, {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}, [{"type": "input_json_delta", "partial_json": args}])
        self._event({
            "type": "message_delta",
            "delta": {"stop_reason": cf.api_stop_reason(reply), "stop_sequence": None, "stop_details": None, "container": None},
            "usage": cf.delta_usage(reply.usage),
            "context_management": None,
        })
        self._event({"type": "message_stop"})

    def _reasoning(self, call: _Call, b: Mapping[str, Any]) -> None:
        if b.get("type") == "thinking":
            deltas: list[dict[str, Any]] = [{"type": "thinking_delta", "thinking": str(b.get("thinking", "")), "estimated_tokens": None}]
            if b.get("signature"):
                deltas.append({"type": "signature_delta", "signature": str(b["signature"])})
            self._block(call, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        else:  # redacted_thinking arrives whole in its start event
            self._block(call, dict(b), [])

