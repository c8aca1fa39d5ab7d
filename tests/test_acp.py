"""``agentloop acp`` driven by the Agent Client Protocol SDK's client side over real pipes.

The protocol (agentclientprotocol.com): ``initialize`` with the client's
capabilities; ``session/new`` in a working directory; ``session/prompt``
answered with a ``stopReason`` after ``session/update`` notifications
(``agent_message_chunk``, ``tool_call``, ``tool_call_update`` with diffs for
edits); ``session/request_permission`` asked of the client;
``session/cancel`` ends the turn with ``stopReason: "cancelled"``;
``session/load`` replays the conversation; ``fs/read_text_file`` and
``fs/write_text_file`` when the client offers them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

acp = pytest.importorskip("acp")

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from agentloop.transcript import verify_file  # noqa: E402


class EditorClient:
    """A client as an editor is one: it holds an unsaved buffer, answers permission questions, records updates."""

    def __init__(self, buffers: dict[str, str]):
        self.buffers = buffers
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.saw_bash = asyncio.Event()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
        self.permissions.append(tool_call)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow"))

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)
        if getattr(update, "session_update", None) == "tool_call" and getattr(update, "kind", None) == "execute":
            self.saw_bash.set()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kw: Any) -> Any:
        self.reads.append(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any) -> Any:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass


def _env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    return e


def _kinds(updates: list[Any]) -> list[str]:
    return [getattr(u, "session_update", "?") for u in updates]


def test_an_editor_session_reads_its_buffer_edits_with_approval_streams_is_cancelled_and_loads_again(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    notes = proj / "notes.txt"
    notes.write_text("saved on disk\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {"file_path": "notes.txt", "old_string": "draft", "new_string": "final"}}]},
        {"text": "Done editing the draft."},
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 31.25"}}]},
        {"text": "never reached"},
    ]))
    client = EditorClient({str(notes): "unsaved draft in the editor\n"})

    async def session() -> str:
        async with spawn_agent_process(client, sys.executable, "-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}",
                                       "--permission-mode", "default", cwd=proj, env=_env(tmp_path)) as (conn, proc):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)))
            assert init.agent_capabilities.load_session is True
            sid = (await conn.new_session(cwd=str(proj))).session_id
            resp = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("tidy notes.txt")]), 60)
            assert resp.stop_reason == "end_turn"
            # a long Bash call, cancelled in the middle
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("now wait")]))
            await asyncio.wait_for(client.saw_bash.wait(), 60)
            await asyncio.sleep(0.5)
            await conn.cancel(session_id=sid)
            resp = await asyncio.wait_for(turn, 30)
            assert resp.stop_reason == "cancelled"
            return sid

    sid = asyncio.run(session())
    # the buffer, not the disk, was read and edited, with the editor's approval
    assert client.reads and client.reads[0] == str(notes)
    assert client.writes == [(str(notes), "unsaved final in the editor\n")] and notes.read_text() == "saved on disk\n"
    assert any(getattr(p, "kind", None) == "edit" for p in client.permissions)
    kinds = _kinds(client.updates)
    assert "agent_message_chunk" in kinds and "tool_call" in kinds and "tool_call_update" in kinds
    text = "".join(u.content.text for u in client.updates if getattr(u, "session_update", None) == "agent_message_chunk")
    assert "Done editing the draft." in text
    starts = [u for u in client.updates if getattr(u, "session_update", None) == "tool_call"]
    assert [s.kind for s in starts] == ["read", "edit", "execute"]
    edit_done = next(u for u in client.updates if getattr(u, "session_update", None) == "tool_call_update" and u.tool_call_id == starts[1].tool_call_id)
    assert edit_done.status == "completed" and any(getattr(c, "type", None) == "diff" for c in edit_done.content)
    # the Bash process died with the cancel
    assert subprocess.run(["pgrep", "-f", "sleep 31.25"], capture_output=True).returncode == 1
    # the session is agentloop's: hash-chained, with the interruption recorded
    path = next((tmp_path / "home").glob(f"projects/*/sessions/{sid}.jsonl"))
    assert verify_file(str(path)).ok
    stops = [json.loads(line)["payload"]["reason"] for line in path.read_text().splitlines() if '"kind":"stop"' in line]
    assert stops == ["no_tool_calls", "interrupted"]

    # loaded again in a new process: the conversation is replayed to the editor
    client2 = EditorClient({})

    async def load() -> None:
        async with spawn_agent_process(client2, sys.executable, "-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}",
                                       cwd=proj, env=_env(tmp_path)) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            await conn.load_session(cwd=str(proj), session_id=sid)

    asyncio.run(load())
    replayed = [(u.session_update, u.content.text) for u in client2.updates if u.session_update in ("user_message_chunk", "agent_message_chunk")]
    assert ("user_message_chunk", "tidy notes.txt") in replayed and ("agent_message_chunk", "Done editing the draft.") in replayed


def test_a_todo_list_reaches_the_editor_as_a_plan(tmp_path: Path) -> None:
    """ACP's agent plan: a ``plan`` session update carries every entry (content, priority, status) each time."""
    proj = tmp_path / "proj"
    proj.mkdir()
    todos = [{"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
             {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "", "tool_calls": [{"name": "TodoWrite", "arguments": {"todos": todos}}]},
                                  {"text": "planned"}]))
    client = EditorClient({})

    async def session() -> None:
        async with spawn_agent_process(client, sys.executable, "-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}",
                                       cwd=proj, env=_env(tmp_path)) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            sid = (await conn.new_session(cwd=str(proj))).session_id
            resp = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("plan")]), 60)
            assert resp.stop_reason == "end_turn"

    asyncio.run(session())
    (plan,) = [u for u in client.updates if getattr(u, "session_update", None) == "plan"]
    assert [(e.content, e.status) for e in plan.entries] == [("Read the code", "completed"), ("Fix the bug", "in_progress")]


def test_a_session_left_in_plan_mode_loads_again_in_plan_mode(tmp_path: Path) -> None:
    """``session/load`` answers with the session's modes (session-modes); a session the editor left in
    ``plan`` comes back as ``plan``, not as the default mode it would start in."""
    proj = tmp_path / "proj"
    proj.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "planning"}, {"text": "still planning"}]))
    args = ("-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}")

    async def left_in_plan() -> str:
        async with spawn_agent_process(EditorClient({}), sys.executable, *args, cwd=proj, env=_env(tmp_path)) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(proj))
            assert new.modes.current_mode_id == "default"
            await conn.set_session_mode(session_id=new.session_id, mode_id="plan")
            resp = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("plan it")]), 60)
            assert resp.stop_reason == "end_turn"
            return str(new.session_id)

    async def load(sid: str) -> str:
        async with spawn_agent_process(EditorClient({}), sys.executable, *args, cwd=proj, env=_env(tmp_path)) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            loaded = await conn.load_session(cwd=str(proj), session_id=sid)
            return str(loaded.modes.current_mode_id)

    sid = asyncio.run(left_in_plan())
    assert asyncio.run(load(sid)) == "plan"
    assert asyncio.run(load(sid)) == "plan"  # and again: the load's own start does not put it back in default
