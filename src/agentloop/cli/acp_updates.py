"""What the editor is shown of a session over ACP: tool calls, their diffs and output, the plan, a loaded conversation.

Rules (the ACP pages cited are under agentclientprotocol.com/protocol/v1):

1. A tool call is a ``tool_call`` when it starts and a ``tool_call_update``
   when it ends (tool-calls). Its kind says what it does (read, edit, search,
   execute, fetch, think, other); its ``locations`` and every path it shows
   are absolute, as the schema says: a path the model gave relative to the
   workspace is joined to it.
2. Write, Edit and MultiEdit carry a ``diff`` (path, oldText, newText) of the
   whole file as it is and as it would be, computed before the call runs: in
   the permission request and in the final update (tool-calls#content). A file
   over ``MAX_DIFF_BYTES`` or an edit that would not apply gets the diff of the
   strings the model gave.
3. Bash's output reaches the editor while the command runs, as updates of
   the call's ``content`` (the output so far, its last ``STREAM_TAIL``
   characters), at most every ``STREAM_EVERY`` seconds; none is sent after the
   call's final update. Editor terminals (terminals) are not used: a command
   runs in agentloop's sandbox, not in a shell the editor starts.
4. ``session/load`` replays the conversation (session-setup#loading-sessions):
   user and agent text as message chunks, each tool call as a ``tool_call``
   and its result as a ``tool_call_update``.
5. TodoWrite's list is the editor's plan (agent-plan): every entry each time.
6. A model call's text streams to the editor as it arrives. When the call
   breaks off and is tried again, the new attempt's text is held while it
   retells what the editor already has; only what extends that is sent. An
   attempt that says something else (or less) is sent whole after a line
   saying the text above broke off (``RETRY_MARK``): a chunk once sent
   cannot be taken back (docs/retried-streams.md says why this way).
"""

from __future__ import annotations

import codecs
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from agentloop.agent.tools.catalog import RECORDS, path_arguments, record_of
from agentloop.agent.tools.claude_names import MULTI_EDIT, PATH_ARGUMENTS
from agentloop.agent.tools.session_tools import TODO_WRITE

__all__ = ["KINDS", "RETRY_MARK", "AnswerText", "ToolUpdates", "absolute", "change_diff", "replay", "tool_title"]

KINDS: dict[str, str] = {MULTI_EDIT: "edit", **{r.name: r.acp for r in RECORDS if r.acp != "other"}}
"""The ACP ``ToolKind`` of each tool (the records' ``acp``; Claude Code's MultiEdit too); "other" for the rest."""
MAX_DIFF_BYTES = 2_000_000
STREAM_TAIL = 32_000
STREAM_EVERY = 0.2
RETRY_MARK = "\n\n[the reply above broke off and was retried; the retried reply follows]\n\n"


class AnswerText:
    """One model call's text as the editor is sent it (rule 6); ``send`` sends a chunk."""

    def __init__(self, send: Callable[[str], None]):
        self._send = send
        self._sent = ""
        """This call's text the editor has (since the last mark)."""
        self._retold: str | None = None
        """After a restart: the new attempt's text so far, held while it retells ``_sent``."""

    def delta(self, text: str) -> None:
        if self._retold is None:
            self._sent += text
            self._send(text)
            return
        self._retold += text
        if self._sent.startswith(self._retold):
            return  # still what the editor has
        new, self._retold = self._retold, None
        extra = new[len(self._sent):] if new.startswith(self._sent) else RETRY_MARK + new
        self._sent = new
        self._send(extra)

    def restart(self) -> None:
        """The call is tried again: what follows retells the text from its start."""
        if self._sent:
            self._retold = ""

    def end(self) -> None:
        """The call's reply is complete: a retry that said less than was sent is said whole, marked."""
        if self._retold is not None and self._retold != self._sent:
            self._send(RETRY_MARK + self._retold)
        self._sent, self._retold = "", None


def absolute(cwd: str, path: str) -> str:
    """``path`` as an absolute path (rule 1): relative ones are taken from the workspace ``cwd``."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


_CONVENTIONAL_PATHS = PATH_ARGUMENTS


def _path_args(name: str, args: dict[str, Any]) -> list[str]:
    """The paths a call names: every path argument of a built-in tool (its record's), else the usual names."""
    keys = path_arguments(name)
    return [p for k in (_CONVENTIONAL_PATHS if keys is None else keys) if isinstance(p := args.get(k), str) and p]


def _shape(name: str) -> str | None:
    r = record_of(name)
    return r.hook if r is not None else None


def _path_arg(name: str, args: dict[str, Any]) -> str | None:
    paths = _path_args(name, args)
    return paths[0] if paths else None


def tool_title(name: str, args: dict[str, Any], cwd: str) -> str:
    """A short line naming the call: the tool and its (first) path (absolute), command or pattern."""
    path = _path_arg(name, args)
    what = absolute(cwd, path) if path else args.get("command") or args.get("pattern") or args.get("description") or ""
    return f"{name} {what}".strip()[:200]


def locations(name: str, args: dict[str, Any], cwd: str) -> list[Any] | None:
    from acp.schema import ToolCallLocation

    paths = _path_args(name, args)
    if not paths:
        return None
    line = args.get("offset") if _shape(name) == "read" and isinstance(args.get("offset"), int) and args["offset"] > 0 else None
    return [ToolCallLocation(path=absolute(cwd, p), line=line if i == 0 else None) for i, p in enumerate(paths)]


def _read_disk(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_DIFF_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return f.read()
    except OSError:
        return None


def change_diff(name: str, args: dict[str, Any], cwd: str, read: Callable[[str], str | None] = _read_disk) -> Any | None:
    """The ``diff`` content of a Write, Edit or MultiEdit (rule 2), or None for other tools."""
    from acp import tool_diff_content

    from agentloop.agent.tools.file_state import find_edit

    path = _path_arg(name, args)
    shape = "edit" if name == MULTI_EDIT else _shape(name)
    if shape not in ("write", "edit") or path is None:
        return None
    real = absolute(cwd, path)
    exists = os.path.exists(real)
    old = read(real) if exists else None
    if shape == "write":
        return tool_diff_content(real, str(args.get("content", "")), old)
    edits = args.get("edits") if name == MULTI_EDIT else [args]
    if not isinstance(edits, list):
        return None
    new = old
    for e in edits:
        if not isinstance(e, dict):
            return None
        o, n = str(e.get("old_string", "")), str(e.get("new_string", ""))
        m = find_edit(new, o, n) if new is not None and o else None  # matched as Edit will match it
        if m is None or not m.count:
            new = None
            break
        new = m.apply(bool(e.get("replace_all")))[0]
    if old is not None and new is not None:
        return tool_diff_content(real, new, old)
    first = edits[0] if edits and isinstance(edits[0], dict) else {}
    return tool_diff_content(real, str(first.get("new_string", "")), str(first.get("old_string", "")))


class ToolUpdates:
    """A session's tool calls as ACP updates (rules 1 to 3, 5); ``send(update)`` delivers one, in order."""

    def __init__(self, send: Callable[[Any], None], cwd: str, read: Callable[[str], str | None] = _read_disk):
        self.send = send
        self.cwd = cwd
        self.read = read
        self.diffs: dict[str, Any] = {}
        self.current: str | None = None
        """The call running now (the one a permission question or a form is about)."""
        self._bash: str | None = None
        self._lock = threading.Lock()
        self._out = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._sent_at = 0.0
        self._timer: threading.Timer | None = None

    def started(self, call: Any) -> None:
        from acp import start_tool_call

        args = call.arguments if isinstance(call.arguments, dict) else {}
        diff = change_diff(call.name, args, self.cwd, self.read)
        if diff is not None:
            self.diffs[call.id] = diff
        self.current = call.id
        self.send(start_tool_call(call.id, tool_title(call.name, args, self.cwd), kind=KINDS.get(call.name, "other"),  # type: ignore[arg-type]
                                  status="in_progress", locations=locations(call.name, args, self.cwd), raw_input=args))
        if _shape(call.name) == "bash" and not args.get("run_in_background"):
            with self._lock:
                self._bash, self._out, self._sent_at = call.id, "", 0.0
                self._decoder.reset()
        if call.name == TODO_WRITE.name:
            self.plan(args.get("todos"))

    def finished(self, result: Any) -> None:
        from acp import text_block, tool_content, update_tool_call

        with self._lock:
            if self._bash == result.call_id:
                self._bash = None
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
        body = result.content if result.ok else result.error
        content: list[Any] = [tool_content(text_block(body if isinstance(body, str) else str(body)))]
        diff = self.diffs.pop(result.call_id, None)
        if diff is not None and result.ok:
            content.insert(0, diff)
        self.send(update_tool_call(result.call_id, status="completed" if result.ok else "failed", content=content))
        if self.current == result.call_id:
            self.current = None

    def bash_output(self, chunk: bytes) -> None:
        """Rule 3: from the thread reading the command's output."""
        with self._lock:
            if self._bash is None:
                return
            self._out = (self._out + self._decoder.decode(chunk))[-STREAM_TAIL:]
            wait = self._sent_at + STREAM_EVERY - time.monotonic()
            if wait <= 0:
                self._flush_locked()
            elif self._timer is None:
                self._timer = threading.Timer(wait, self._flush)
                self._timer.daemon = True
                self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            self._timer = None
            if self._bash is not None:
                self._flush_locked()

    def _flush_locked(self) -> None:
        from acp import text_block, tool_content, update_tool_call

        assert self._bash is not None
        self._sent_at = time.monotonic()
        self.send(update_tool_call(self._bash, status="in_progress", content=[tool_content(text_block(self._out))]))

    def plan(self, todos: Any) -> None:
        from acp import plan_entry, update_plan

        if not isinstance(todos, list):
            return
        entries = [plan_entry(str(t.get("content", "")), status=t.get("status", "pending"))
                   for t in todos if isinstance(t, dict) and t.get("status") in ("pending", "in_progress", "completed")]
        self.send(update_plan(entries))


def replay(messages: list[dict[str, Any]], cwd: str) -> list[Any]:
    """Rule 4: the updates that show ``messages`` (a session's conversation) again."""
    from acp import (
        start_tool_call,
        text_block,
        tool_content,
        update_agent_message_text,
        update_tool_call,
        update_user_message_text,
    )

    out: list[Any] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user" and text:
            out.append(update_user_message_text(text))
        elif role == "assistant":
            if text:
                out.append(update_agent_message_text(text))
            for c in m.get("tool_calls") or ():
                args = c.get("arguments") if isinstance(c.get("arguments"), dict) else {}
                name = str(c.get("name", ""))
                out.append(start_tool_call(str(c.get("id", "")), tool_title(name, args, cwd), kind=KINDS.get(name, "other"),  # type: ignore[arg-type]
                                           status="in_progress", locations=locations(name, args, cwd), raw_input=args))
        elif role == "tool":
            out.append(update_tool_call(str(m.get("tool_call_id", "")), status="completed" if m.get("ok", True) else "failed", content=[tool_content(text_block(text))]))
    return out
