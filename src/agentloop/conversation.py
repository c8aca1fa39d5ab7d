"""A conversation rebuilt from its records: what a later ``run_start`` may refer to.

Rules:

1. A session file holds runs one after another. The first ``run_start`` of a
   conversation records every message the run started from (``format`` 1). A
   later one may record only the messages added since, with
   ``"continues": {"seq": S, "hash": H, "messages": K}`` (``format`` 2): its
   first K messages are the conversation that ``Conversation`` rebuilds from
   the records before it, of which S and H name the last (the record just
   before the ``run_start``). So a session file grows with what happened, not
   with the sum of every context sent.
2. The loop writes the short form only when the messages it was given, as it
   records them, begin with exactly that rebuilt conversation (``loop.start``
   compares them); otherwise it writes every message. So the reference is
   right by construction: replay and resume rebuild the same list from the
   same records with this module, and never depend on the agent having kept
   its messages in any particular way.
3. The tools are recorded once too. A ``run_start`` that continues the
   conversation (format 2) may hold ``"tools": {"same_as": S}`` in its config
   instead of the list, when the list is exactly the one record S holds: the
   latest record before it with a list (a ``run_start`` holding one, or a
   ``tools_changed``). ``Conversation`` keeps that record's ``seq`` and list
   (``tools``), ``loop.start`` writes the reference only when the lists are
   equal, and readers take the list from record S (``tool_list``).
4. The texts of masking and compaction live here too: a ``context`` record
   says which tool outputs were masked or evicted, a ``compaction`` record
   which messages a summary replaced (the transcript keeps every output whole;
   these texts are what the model saw in their place). The agent writes them
   (``agent.context``), replay and resume rebuild the messages from them
   (``reapply``), with no import of the agent layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .canonical import canonical
from .events import Message
from .redact import DEFAULT_MAX_VALUE_BYTES, is_marker

__all__ = [
    "EVICT_PREFIX",
    "INTERRUPTED_RESULT",
    "MASK_PREFIX",
    "SUMMARY_PREFIX",
    "Continues",
    "Conversation",
    "close_dangling_calls",
    "continued_prefix",
    "placeholder",
    "reapply",
    "recorded_tools",
    "tool_list",
]

MASK_PREFIX = "[tool output masked: "
EVICT_PREFIX = "[tool output evicted: "
SUMMARY_PREFIX = "[Conversation compacted. Summary of the earlier part:]\n"


def original_size(content: str) -> tuple[int, int | None]:
    """The characters and UTF-8 bytes of a tool output, or, for one already masked, the character
    count its marker gives (bytes unknown: None)."""
    size = len(content)
    nbytes: int | None = len(content.encode("utf-8", "surrogatepass"))
    if content.startswith(MASK_PREFIX):
        try:
            size, nbytes = int(content[len(MASK_PREFIX) :].split(" ", 1)[0]), None
        except ValueError:
            pass
    return size, nbytes


def placeholder(prefix: str, call_id: str, size: int, transcript_path: str = "", nbytes: int | None = None, file: str = "") -> str:
    """The text that stands for a masked or evicted tool output of ``size`` characters, and what the transcript keeps.

    The transcript keeps a value whole up to 64 KiB of UTF-8 and, past that,
    its first 64 KiB and the SHA-256 of the whole (``redact.truncated``).
    ``nbytes`` is the output's UTF-8 size when known (else only ``size``, its
    characters, is: an output masked earlier). ``file`` is where the output was
    also saved for the model's Read (the agent's tool-results folder), if anywhere.
    """
    where = f"the session transcript {transcript_path}" if transcript_path else "the session transcript"
    limit = DEFAULT_MAX_VALUE_BYTES
    call = f"(tool_result of call {call_id})"
    if (nbytes if nbytes is not None else size) > limit:
        kept = f"{where} keeps its first {limit // 1024} KiB and the SHA-256 of the whole {call}"
    elif nbytes is not None or size * 4 <= limit:
        kept = f"the whole output is kept in {where} {call}"
    else:
        kept = (f"{where} keeps the whole output if it is at most {limit // 1024} KiB of UTF-8, "
                f"else its first {limit // 1024} KiB and the SHA-256 of the whole {call}")
    again = f"; the whole output is saved in {file}: Read it there to see it again" if file else ""
    return f"{prefix}{size} chars; {kept}{again}]"


def reapply(messages: list[Message], kind: str, payload: Any) -> bool:
    """Make again, on a run's messages, what a ``context`` or ``compaction`` record says was done.

    For replay: the messages a recorded run sent are rebuilt from its record
    alone (the transcript keeps the outputs whole; these records say what the
    model was shown instead). Returns True when ``messages`` changed.
    """
    if not isinstance(payload, dict):
        return False
    if kind == "context" and ("masked" in payload or "evicted" in payload):
        where = str(payload.get("where") or "")
        got = payload.get("files")
        files: dict[str, Any] = got if isinstance(got, dict) else {}
        todo = {str(c): MASK_PREFIX for c in payload.get("masked", [])}
        todo.update({str(c): EVICT_PREFIX for c in payload.get("evicted", [])})
        changed = False
        for i, m in enumerate(messages):
            prefix = todo.get(str(m.get("tool_call_id"))) if m.get("role") == "tool" else None
            if prefix is None:
                continue
            size, nbytes = original_size(str(m.get("content", "")))
            cid = str(m.get("tool_call_id"))
            messages[i] = {**m, "content": placeholder(prefix, cid, size, where, nbytes, str(files.get(cid) or ""))}
            changed = True
        return changed
    if kind == "compaction" and payload.get("status") == "compacted" and isinstance(payload.get("head"), int):
        head = int(payload["head"])
        n = int(payload.get("summarized_messages", 0))
        messages[head : head + n] = [{"role": "user", "content": SUMMARY_PREFIX + str(payload.get("summary", ""))}]
        return True
    return False


INTERRUPTED_RESULT = "the user interrupted this call before it finished; it did not complete"


def close_dangling_calls(messages: list[Message]) -> list[Message]:
    """Answer tool calls left without a result (an interrupted run), so every
    provider accepts the conversation. Returns the messages added."""
    if not messages:
        return []
    answered: set[str] = set()
    i = len(messages) - 1
    while i >= 0 and messages[i].get("role") == "tool":
        answered.add(str(messages[i].get("tool_call_id")))
        i -= 1
    if i < 0 or messages[i].get("role") != "assistant" or not messages[i].get("tool_calls"):
        return []
    added: list[Message] = []
    for c in messages[i]["tool_calls"]:
        if str(c["id"]) not in answered:
            m: Message = {"role": "tool", "tool_call_id": str(c["id"]), "name": str(c["name"]), "ok": False,
                          "content": f"ERROR: {INTERRUPTED_RESULT}"}
            messages.append(m)
            added.append(m)
    return added


@dataclass(frozen=True)
class Continues:
    """What a ``run_start`` may refer to instead of repeating it (rule 1)."""

    seq: int
    """The record just before the ``run_start``."""
    hash: str
    messages: Sequence[Message]
    """The conversation rebuilt up to and including that record, as recorded."""

    tools: tuple[int, Sequence[Any]] | None = None
    """The latest record before with a tool list: its ``seq`` and the list (rule 3); None: none known."""

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash, "messages": len(self.messages)}


def tool_list(payload: Mapping[str, Any], kind: str) -> Any:
    """The tool list a record holds itself (a ``run_start``'s config's, a ``tools_changed``'s), or None."""
    if kind == "tools_changed":
        tools = payload.get("tools")
    elif kind == "run_start" and isinstance(payload.get("config"), Mapping):
        tools = payload["config"].get("tools")
    else:
        return None
    return tools if type(tools) is list else None


def recorded_tools(tools: list[Any], continues: Continues | None) -> Any:
    """A continuing ``run_start``'s ``config.tools`` as recorded (rule 3): a reference to the record
    that holds exactly this list, else the list. Changing it changes what a session file holds."""
    held = continues.tools if continues is not None else None
    if held is not None and canonical(list(held[1])) == canonical(tools):
        return {"same_as": held[0]}
    return tools


def _tool_text(payload: Mapping[str, Any]) -> Any:
    """A recorded ``tool_result`` as the message the loop made of it, in its recorded form."""
    if payload.get("ok"):
        c = payload.get("content")
        if type(c) is str or is_marker(c):
            return c
        return canonical(c).decode()
    e = payload.get("error")
    return e if is_marker(e) else f"ERROR: {e}"


class Conversation:
    """The messages, in their recorded form, that the records so far add up to (rule 1).

    Feed it every record of a file in order (``feed``); ``messages`` is then
    what a continuing ``run_start`` refers to. Records of kinds it does not
    know leave the conversation as it is.
    """

    def __init__(self) -> None:
        self._messages: list[Message] | None = None
        self.tools: tuple[int, list[Any]] | None = None
        """The latest record fed with a tool list of its own: its ``seq`` and the list (rule 3)."""

    @property
    def started(self) -> bool:
        """A ``run_start`` was seen: there is a conversation to continue."""
        return self._messages is not None

    @property
    def messages(self) -> list[Message]:
        """The conversation now, with interrupted calls answered (as the next run sends it)."""
        msgs = list(self._messages or [])
        close_dangling_calls(msgs)
        return msgs

    def feed(self, kind: str, payload: Any, seq: int = -1) -> None:
        """Take the next record; ``seq``, when given, lets a later ``run_start`` refer to its tools."""
        if not isinstance(payload, Mapping):
            return
        if seq >= 0 and (listed := tool_list(payload, kind)) is not None:
            self.tools = (seq, listed)
        if kind == "run_start":
            tail = [dict(m) for m in payload.get("messages", ()) if isinstance(m, Mapping)]
            if "continues" in payload:
                self._messages = self.messages + tail
            else:
                self._messages = tail
            return
        if kind == "rewind" and isinstance(payload.get("messages"), list):  # a rewound conversation, whole
            self._messages = [dict(m) for m in payload["messages"] if isinstance(m, Mapping)]
            return
        msgs = self._messages
        if msgs is None:
            return
        if kind == "model_turn":
            reply = payload.get("reply") or {}
            msg: Message = {"role": "assistant", "content": reply.get("text", "")}
            if reply.get("tool_calls"):
                msg["tool_calls"] = [dict(c) for c in reply["tool_calls"]]
            if reply.get("reasoning"):
                msg["reasoning"] = [dict(b) for b in reply["reasoning"]]
            msgs.append(msg)
        elif kind == "tool_result":
            msgs.append({"role": "tool", "tool_call_id": payload.get("call_id"), "name": payload.get("name"),
                         "ok": bool(payload.get("ok")), "content": _tool_text(payload)})
        elif kind in ("context", "compaction"):
            reapply(msgs, kind, payload)

    def continues(self, seq: int, hash: str) -> Continues | None:
        """What a ``run_start`` written after record ``seq`` (of ``hash``) may refer to, if anything."""
        if self._messages is None or seq < 0:
            return None
        return Continues(seq, hash, self.messages, self.tools)


def continued_prefix(recorded: Sequence[Message], continues: Continues | None) -> int:
    """How many of ``recorded`` the ``run_start`` may leave out: all of ``continues``, or none."""
    if continues is None:
        return 0
    prior = continues.messages
    k = len(prior)
    if k == 0 or k > len(recorded):
        return 0
    for a, b in zip(recorded[:k], prior):
        if canonical(a) != canonical(b):
            return 0
    return k
