"""Read, Write and Edit through the editor's buffers over ACP (``fs/read_text_file``, ``fs/write_text_file``).

When the client offers them (clientCapabilities.fs, agentclientprotocol.com/protocol/v1/file-system),
an unsaved buffer is what the agent reads and edits. The tools stay confined to
the workspace (the paths are resolved by it first) and every change is still
checkpointed (``agent.file_changed``) before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["editor_reader", "use_client_fs"]


def editor_reader(call: Callable[[Any], Any], conn: Any, sid: str) -> Callable[[str], str]:
    """``read(real_path) -> text`` through the editor (raises ``ToolError`` when it cannot)."""
    from agentloop.tools import ToolError

    def read_text(real: str) -> str:
        try:
            return str(call(conn.read_text_file(session_id=sid, path=real)).content)
        except Exception as exc:
            raise ToolError(f"the editor could not read {real}: {exc}") from None

    return read_text


def use_client_fs(agent: Agent, call: Callable[[Any], Any], conn: Any, fs_read: bool, fs_write: bool) -> None:
    """Replace Read (and Write and Edit, when the editor also writes) by versions that go through the editor."""
    if not fs_read:
        return
    from agentloop.agent.tools.builtin import EDIT, READ, WRITE, file_lines, numbered_lines
    from agentloop.agent.tools.file_state import find_edit
    from agentloop.tools import Tool, ToolError

    ws = agent.workspace
    sid = agent.session.id
    read_text = editor_reader(call, conn, sid)

    def write_text(real: str, text: str, before: str | None = None) -> None:
        """``text`` into the editor's buffer, the change checkpointed first (``before``: the buffer as it
        was, when the caller has just read it)."""
        if before is None:
            try:
                before = read_text(real)
            except ToolError:
                before = None
        ws.refuse_code_for_git({real: text.encode("utf-8")})
        agent.file_changed(real, None if before is None else before.encode("utf-8"), text.encode("utf-8"))
        try:
            real = ws.unchanged_path(real)  # checked again as it is sent: no component may have become a link
            call(conn.write_text_file(session_id=sid, path=real, content=text))
        except Exception as exc:
            raise ToolError(f"the editor could not write {real}: {exc}") from None

    reg = agent.registry
    if READ.name in reg:
        base = reg.get(READ.name)
        assert base is not None  # READ.name in reg

        def read(**kw: Any) -> str:
            real = ws.resolve(kw["file_path"])
            lines = file_lines(read_text(real))
            start = max(int(kw.get("offset") or 1), 1)
            limit = int(kw.get("limit") or 2000)
            return numbered_lines(lines[start - 1 : start - 1 + limit], start)

        reg.replace(Tool(name=READ.name, description=base.description, parameters=base.parameters, fn=read,
                         read_only=READ.read_only))
    if fs_write and WRITE.name in reg and EDIT.name in reg:
        wbase, ebase = reg.get(WRITE.name), reg.get(EDIT.name)
        assert wbase is not None and ebase is not None  # both in reg

        def write(**kw: Any) -> str:
            real = ws.resolve(kw["file_path"], for_write=True)
            write_text(real, kw["content"])
            return f"Wrote {real} ({len(kw['content'].encode('utf-8'))} bytes) through the editor"

        def edit(**kw: Any) -> str:
            real = ws.resolve(kw["file_path"], for_write=True)
            text = read_text(real)
            old, new = kw["old_string"], kw["new_string"]
            if old == new:
                raise ToolError("old_string and new_string are the same: nothing would change")
            m = find_edit(text, old, new) if old else None  # as the built-in Edit matches: CRLF, curly quotes
            if m is None or m.count == 0:
                raise ToolError(f"old_string was not found in {kw['file_path']}. Read the file and copy the text exactly.")
            if m.count > 1 and not kw.get("replace_all"):
                raise ToolError(f"old_string occurs {m.count} times in {kw['file_path']}; make it unique or set replace_all")
            write_text(real, m.apply(bool(kw.get("replace_all")))[0], before=text)
            return f"Edited {real} through the editor"

        reg.replace(Tool(name=WRITE.name, description=wbase.description, parameters=wbase.parameters, fn=write,
                         read_only=WRITE.read_only))
        reg.replace(Tool(name=EDIT.name, description=ebase.description, parameters=ebase.parameters, fn=edit,
                         read_only=EDIT.read_only))
