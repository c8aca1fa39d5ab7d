"""``agentloop acp``: the terminal agent as an Agent Client Protocol (ACP) agent, for editors.

An editor (Zed, or others through adapters) starts ``agentloop acp`` and
speaks JSON-RPC over its stdin and stdout (the ``agent-client-protocol``
SDK does the wire). Each ACP session is an agentloop ``Agent`` with its
hash-chained session file, its cap, hooks, permissions, folder trust and
sandbox: nothing is bypassed because the requests come from an editor.

Rules:

1. The agent's work runs on the main thread, one job at a time; the ACP
   connection runs on an asyncio loop in a second thread. So an ACP
   ``session/cancel`` interrupts a turn exactly as Ctrl+C does in the
   terminal (SIGINT to the main thread): the tool in flight is killed with
   its process group, the run records ``interrupted``, and the prompt
   answers ``stopReason: "cancelled"``.
2. Permission questions go to the editor (``session/request_permission``)
   with the options allow once, allow always (this exact call, as the
   terminal's "always") and reject; a cancelled request is a refusal.
3. Streamed text becomes ``agent_message_chunk`` updates; each tool call a
   ``tool_call`` (with its kind: read, edit, search, execute, fetch, other)
   then a ``tool_call_update`` with its status and content; an edit's
   update carries a diff.
4. When the editor offers ``fs.readTextFile`` / ``fs.writeTextFile``, Read,
   Write and Edit go through it (so an unsaved buffer is what the agent
   reads and edits), still confined to the workspace and still checkpointed.
   Terminals are not used: Bash runs in agentloop's own sandbox.
5. ``session/load`` resumes an agentloop session (its id is the ACP session
   id) and replays its conversation to the editor as message updates.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["serve"]

_KINDS = {"Read": "read", "Write": "edit", "Edit": "edit", "MultiEdit": "edit", "Glob": "search", "Grep": "search",
          "LS": "search", "Bash": "execute", "WebFetch": "fetch"}


class _Jobs:
    """Work for the main thread (rule 1): each job's result goes back to the loop that asked."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self.running: str | None = None
        """The session whose turn is running (the one a cancel interrupts)."""

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        self.q.put((fn, fut))
        return fut

    def serve(self) -> None:
        while True:
            try:
                item = self.q.get()
            except KeyboardInterrupt:  # a cancel that came as the turn ended: nothing to stop
                continue
            if item is None:
                return
            fn, fut = item
            try:
                fut.set_result(fn())
            except KeyboardInterrupt:
                fut.set_exception(asyncio.CancelledError())
            except BaseException as exc:
                fut.set_exception(exc)


class AcpAgent:
    """The ``acp.Agent`` side: sessions of agentloop ``Agent``s."""

    def __init__(self, args: argparse.Namespace, jobs: _Jobs, main_thread: int):
        self.args = args
        self.jobs = jobs
        self.main_thread = main_thread
        self.conn: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.agents: dict[str, Any] = {}
        self.fs_read = self.fs_write = False
        self._pending_diff: tuple[str, str, dict[str, Any]] | None = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self.jobs.submit(fn))

    def _send(self, session_id: str, update: Any) -> None:
        """From the main thread: a session/update, in order (waits for it to be sent)."""
        assert self.loop is not None
        asyncio.run_coroutine_threadsafe(self.conn.session_update(session_id=session_id, update=update), self.loop).result(30)

    # -- lifecycle --

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kw: Any) -> Any:
        from acp import PROTOCOL_VERSION, InitializeResponse
        from acp.schema import AgentCapabilities, Implementation, PromptCapabilities

        from agentloop import __version__

        self.loop = asyncio.get_running_loop()
        fs = getattr(client_capabilities, "fs", None)
        self.fs_read = bool(getattr(fs, "read_text_file", False))
        self.fs_write = bool(getattr(fs, "write_text_file", False))
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=True)),
            agent_info=Implementation(name="agentloop", title="agentloop", version=__version__),
        )

    async def authenticate(self, method_id: str, **kw: Any) -> Any:
        return None

    def _make(self, cwd: str, resume: str | None, add_dirs: list[str] | None) -> Any:
        from .agent_setup import make_agent

        ns = argparse.Namespace(**vars(self.args))
        ns.cwd, ns.resume, ns.add_dir = cwd, resume, list(add_dirs or []) + list(getattr(self.args, "add_dir", []) or [])
        holder: dict[str, Any] = {}
        agent = make_agent(ns, ask_permission=lambda call, decision: self._ask(holder["sid"], call, decision))
        holder["sid"] = agent.session.id
        self._use_client_fs(agent)
        return agent

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: Any = None, **kw: Any) -> Any:
        from acp import NewSessionResponse

        agent = await self._run(lambda: self._make(cwd, None, additional_directories))
        self.agents[agent.session.id] = agent
        return NewSessionResponse(session_id=agent.session.id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: list[str] | None = None,
                           **kw: Any) -> Any:
        from acp import LoadSessionResponse, update_agent_message_text, update_user_message_text

        agent = await self._run(lambda: self._make(cwd, session_id, additional_directories))
        self.agents[agent.session.id] = agent
        for m in agent.session.messages:  # rule 5: the conversation, replayed to the editor
            content = m.get("content")
            if not isinstance(content, str) or not content:
                continue
            if m.get("role") == "user":
                await self.conn.session_update(session_id=agent.session.id, update=update_user_message_text(content))
            elif m.get("role") == "assistant":
                await self.conn.session_update(session_id=agent.session.id, update=update_agent_message_text(content))
        return LoadSessionResponse()

    # -- a turn --

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> Any:
        from acp import PromptResponse
        from acp.exceptions import RequestError

        agent = self.agents.get(session_id)
        if agent is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id} (new or load it first)"})
        text = "\n".join(_block_text(b) for b in prompt).strip()

        def turn() -> str:
            self.jobs.running = session_id
            try:
                result = agent.ask(text, observer=lambda ev: self._observe(session_id, ev))
                if result.stop_reason not in ("no_tool_calls", "sentinel", "interrupted"):
                    from acp import update_agent_message_text

                    detail = f": {result.error}" if result.error else ""
                    self._send(session_id, update_agent_message_text(f"\n[agentloop stopped: {result.stop_reason}{detail}]"))
            except KeyboardInterrupt:
                return "cancelled"
            finally:
                self.jobs.running = None
            return _stop_reason(result.stop_reason)

        try:
            reason = await self._run(turn)
        except asyncio.CancelledError:
            reason = "cancelled"
        return PromptResponse(stop_reason=reason)

    async def cancel(self, session_id: str, **kw: Any) -> None:
        if self.jobs.running == session_id:
            signal.pthread_kill(self.main_thread, signal.SIGINT)  # rule 1: as Ctrl+C

    def _observe(self, sid: str, ev: Any) -> None:
        from acp import (
            start_tool_call,
            text_block,
            tool_content,
            tool_diff_content,
            update_agent_message_text,
            update_tool_call,
        )
        from acp.schema import ToolCallLocation

        from agentloop.events import TextDelta, ToolFinished, ToolStarted

        if isinstance(ev, TextDelta):
            self._send(sid, update_agent_message_text(ev.text))
        elif isinstance(ev, ToolStarted):
            c = ev.call
            args = c.arguments if isinstance(c.arguments, dict) else {}
            path = args.get("file_path") or args.get("path")
            title = f"{c.name} {path or args.get('command') or args.get('pattern') or ''}".strip()
            locations = [ToolCallLocation(path=str(path))] if isinstance(path, str) else None
            self._send(sid, start_tool_call(c.id, title[:200], kind=_KINDS.get(c.name, "other"), status="in_progress",  # type: ignore[arg-type]
                                            locations=locations, raw_input=args))
            if c.name in ("Write", "Edit") and isinstance(path, str):
                self._pending_diff = (c.id, path, args)
            if c.name == "TodoWrite":
                self._send_plan(sid, args.get("todos"))
        elif isinstance(ev, ToolFinished):
            r = ev.result
            body = r.content if r.ok else r.error
            content: list[Any] = [tool_content(text_block(body if isinstance(body, str) else str(body)))]
            diff = getattr(self, "_pending_diff", None)
            if diff is not None and diff[0] == r.call_id and r.ok:
                _, path, args = diff
                if "content" in args:
                    content.insert(0, tool_diff_content(path, str(args["content"])))
                else:
                    content.insert(0, tool_diff_content(path, str(args.get("new_string", "")), str(args.get("old_string", ""))))
                self._pending_diff = None
            self._send(sid, update_tool_call(r.call_id, status="completed" if r.ok else "failed", content=content))

    def _send_plan(self, sid: str, todos: Any) -> None:
        """TodoWrite's task list as the editor's plan (an ACP ``plan`` update: the whole list each time)."""
        from acp import plan_entry, update_plan

        if not isinstance(todos, list):
            return
        entries = [plan_entry(str(t.get("content", "")), status=t.get("status", "pending"))
                   for t in todos if isinstance(t, dict) and t.get("status") in ("pending", "in_progress", "completed")]
        self._send(sid, update_plan(entries))

    def _ask(self, sid: str, call: Any, decision: Any) -> str:
        """Rule 2: the editor answers the permission question."""
        from acp.schema import PermissionOption, ToolCallUpdate

        assert self.loop is not None
        options = [
            PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="always", name="Always allow this exact call", kind="allow_always"),
            PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
        ]
        args = call.arguments if isinstance(call.arguments, dict) else {}
        tool_call = ToolCallUpdate(tool_call_id=call.id, title=f"{call.name} {args.get('file_path') or args.get('command') or ''}".strip()[:200],
                                   kind=_KINDS.get(call.name, "other"), status="pending", raw_input=args)  # type: ignore[arg-type]
        fut = asyncio.run_coroutine_threadsafe(self.conn.request_permission(session_id=sid, tool_call=tool_call, options=options), self.loop)
        try:
            resp = fut.result()
        except Exception:
            return "deny"
        outcome = resp.outcome
        if getattr(outcome, "outcome", None) != "selected":
            return "deny"
        return {"allow": "allow", "always": "always"}.get(outcome.option_id, "deny")

    # -- the editor's file system (rule 4) --

    def _use_client_fs(self, agent: Agent) -> None:
        if not (self.fs_read or self.fs_write):
            return
        from agentloop.tools import Tool, ToolError

        ws = agent.workspace
        sid = agent.session.id

        def call(coro: Any) -> Any:
            assert self.loop is not None
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

        def read_text(real: str) -> str:
            try:
                return str(call(self.conn.read_text_file(session_id=sid, path=real)).content)
            except Exception as exc:
                raise ToolError(f"the editor could not read {real}: {exc}") from None

        def write_text(real: str, text: str) -> None:
            before: bytes | None = None
            try:
                before = read_text(real).encode("utf-8")
            except ToolError:
                before = None
            agent.file_changed(real, before, text.encode("utf-8"))
            try:
                call(self.conn.write_text_file(session_id=sid, path=real, content=text))
            except Exception as exc:
                raise ToolError(f"the editor could not write {real}: {exc}") from None

        reg = agent.registry
        if self.fs_read and "Read" in reg:
            base = reg.get("Read")
            assert base is not None  # "Read" in reg

            def read(**kw: Any) -> str:
                real = ws.resolve(kw["file_path"])
                lines = read_text(real).split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                start = max(int(kw.get("offset") or 1), 1)
                limit = int(kw.get("limit") or 2000)
                page = lines[start - 1 : start - 1 + limit]
                return "".join(f"{start + i:>6}\t{line}\n" for i, line in enumerate(page))

            reg.replace(Tool(name="Read", description=base.description, parameters=base.parameters, fn=read, read_only=True))
        if self.fs_write and self.fs_read and "Write" in reg and "Edit" in reg:
            wbase, ebase = reg.get("Write"), reg.get("Edit")
            assert wbase is not None and ebase is not None  # both in reg

            def write(**kw: Any) -> str:
                real = ws.resolve(kw["file_path"], for_write=True)
                write_text(real, kw["content"])
                return f"Wrote {real} ({len(kw['content'].encode('utf-8'))} bytes) through the editor"

            def edit(**kw: Any) -> str:
                real = ws.resolve(kw["file_path"], for_write=True)
                text = read_text(real)
                old, new = kw["old_string"], kw["new_string"]
                n = text.count(old) if old else 0
                if n == 0:
                    raise ToolError(f"old_string was not found in {kw['file_path']}. Read the file and copy the text exactly.")
                if n > 1 and not kw.get("replace_all"):
                    raise ToolError(f"old_string occurs {n} times in {kw['file_path']}; make it unique or set replace_all")
                write_text(real, text.replace(old, new) if kw.get("replace_all") else text.replace(old, new, 1))
                return f"Edited {real} through the editor"

            reg.replace(Tool(name="Write", description=wbase.description, parameters=wbase.parameters, fn=write))
            reg.replace(Tool(name="Edit", description=ebase.description, parameters=ebase.parameters, fn=edit))


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        res = getattr(block, "resource", None)
        text = getattr(res, "text", None)
        return f"Contents of {getattr(res, 'uri', '')}:\n{text}" if text is not None else ""
    if kind == "resource_link":
        return f"@{getattr(block, 'uri', '')}"
    return ""


def _stop_reason(reason: str) -> str:
    """The loop's stop reason in ACP's words (``StopReason``)."""
    return {
        "interrupted": "cancelled",
        "step_budget": "max_turn_requests",
        "token_budget": "max_tokens",
        "cost_budget": "refusal",  # the spend cap refused the next call
        "loop_detected": "refusal",
    }.get(reason, "end_turn")


def serve(args: argparse.Namespace) -> int:
    """Run until the editor closes the connection (rule 1: the agent's work on this thread)."""
    try:
        import acp
    except ImportError:
        print("agentloop acp needs the agent-client-protocol package: pip install 'agentloop[acp]'", file=sys.stderr)
        return 2
    jobs = _Jobs()
    agent = AcpAgent(args, jobs, threading.main_thread().ident or 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # nothing but the protocol goes to the editor: stray prints go to stderr

    def connection() -> None:
        async def main() -> None:
            reader, writer = await _streams(real_stdout)
            await acp.run_agent(cast(Any, agent), writer, reader)  # implements the methods agentloop supports

        try:
            asyncio.run(main())
        finally:
            jobs.q.put(None)

    async def _streams(fd: int) -> tuple[Any, Any]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        w_transport, w_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb"))
        writer = asyncio.StreamWriter(w_transport, w_protocol, reader, loop)
        return reader, writer

    t = threading.Thread(target=connection, name="acp", daemon=True)
    t.start()
    try:
        jobs.serve()
    except KeyboardInterrupt:
        pass
    for a in list(agent.agents.values()):
        try:
            a.close("other")
        except Exception:  # noqa: BLE001 - closing the others matters more
            pass
    return 0
