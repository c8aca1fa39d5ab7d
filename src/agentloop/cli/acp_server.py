"""``agentloop acp``: the terminal agent as an Agent Client Protocol (ACP) agent, for editors.

An editor (Zed, or others through adapters) starts ``agentloop acp`` and
speaks JSON-RPC over its stdin and stdout (the ``agent-client-protocol``
SDK does the wire). Each ACP session is an agentloop ``Agent`` with its
hash-chained session file, its cap, hooks, permissions, folder trust and
sandbox: nothing is bypassed because the requests come from an editor.

Rules (pages under agentclientprotocol.com/protocol/v1):

1. The agent's work runs on the main thread, one job at a time; the ACP
   connection runs on an asyncio loop in a second thread. So an ACP
   ``session/cancel`` interrupts a turn exactly as Ctrl+C does in the
   terminal (SIGINT to the main thread): the tool in flight is killed with
   its process group, the run records ``interrupted``, and the prompt
   answers ``stopReason: "cancelled"``.
2. Questions go to the editor (``acp_ask``): permissions with the change's
   diff, and AskUserQuestion, ExitPlanMode and MCP servers' forms.
3. What happens is shown as session updates (``acp_updates``): text chunks,
   tool calls with absolute paths, diffs, Bash's output as it arrives, the
   plan; ``session/load`` replays the conversation with its tool calls.
4. When the editor offers ``fs.readTextFile`` / ``fs.writeTextFile``, Read,
   Write and Edit go through it (``acp_fs``).
5. The editor's MCP servers, the prompt's resources, session modes and the
   user's commands: ``acp_session``.
6. The turn's stop reason (prompt-turn#stop-reasons): ``end_turn`` when the
   model finished; ``cancelled``; ``max_tokens`` when the token budget ran
   out; ``max_turn_requests`` when a limit on the agent's requests stopped it
   (``--max-steps``, the spend cap refusing the next call, the loop check).
   ``refusal`` is never used: it tells the editor to drop the prompt from
   the conversation, and agentloop keeps it. A model error is a JSON-RPC
   error (-32603, with the error in ``data``), not a stop reason.
7. An unknown session id is a JSON-RPC error -32002 (resource not found); a
   session that cannot be made (a bad setting, a damaged session file) is
   -32602 with the reason; neither prints a traceback.
8. Every malformed message (not JSON, a batch array, an id that is not a
   string, null or a safe integer) gets the JSON-RPC 2.0 error the spec gives
   and the connection goes on (``acp_wire``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .acp_runtime import Jobs, OneLineErrors
from .acp_wire import CheckedTransport

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["serve"]


@dataclass
class _Session:
    agent: Agent
    updates: Any
    modes: list[str] = field(default_factory=list)
    told: str = ""
    """The mode the editor was last told of (rule 5: a change is sent as ``current_mode_update``)."""
    answer: Any = None
    """The model call's text as the editor is sent it (``acp_updates.AnswerText``: a retry's repeat is not sent again)."""


_STOPS = {"no_tool_calls": "end_turn", "sentinel": "end_turn", "interrupted": "cancelled", "token_budget": "max_tokens",
          "step_budget": "max_turn_requests", "cost_budget": "max_turn_requests", "budget_overrun": "max_turn_requests",
          "loop_detected": "max_turn_requests"}


def _stop_reason(reason: str) -> str:
    """Rule 6: the loop's stop reason in ACP's words."""
    return _STOPS.get(reason, "end_turn")


class AcpAgent:
    """The ``acp.Agent`` side: sessions of agentloop ``Agent``s."""

    def __init__(self, args: argparse.Namespace, jobs: Jobs, main_thread: int):
        self.args = args
        self.jobs = jobs
        self.main_thread = main_thread
        self.conn: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sessions: dict[str, _Session] = {}
        self.fs_read = self.fs_write = self.forms = False

    @property
    def agents(self) -> dict[str, Any]:
        return {sid: s.agent for sid, s in self.sessions.items()}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self.jobs.submit(fn))

    def _call(self, coro: Any, timeout: float | None = 60) -> Any:
        """From the main thread: run ``coro`` on the connection's loop and wait for it."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _send(self, session_id: str, update: Any) -> None:
        """From the main thread: a session/update, in order (waits for it to be sent)."""
        self._call(self.conn.session_update(session_id=session_id, update=update), 30)

    # -- lifecycle --

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kw: Any) -> Any:
        from acp import PROTOCOL_VERSION, InitializeResponse
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            McpCapabilities,
            PromptCapabilities,
        )

        from agentloop import __version__

        self.loop = asyncio.get_running_loop()
        fs = getattr(client_capabilities, "fs", None)
        self.fs_read = bool(getattr(fs, "read_text_file", False))
        self.fs_write = bool(getattr(fs, "write_text_file", False))
        self.forms = getattr(getattr(client_capabilities, "elicitation", None), "form", None) is not None
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=True),
                                                 mcp_capabilities=McpCapabilities(http=True, sse=True)),
            agent_info=Implementation(name="agentloop", title="agentloop", version=__version__),
        )

    async def authenticate(self, method_id: str, **kw: Any) -> Any:
        return None

    def _make(self, cwd: str, resume: str | None, add_dirs: list[str] | None, mcp_servers: Any) -> _Session:
        from .acp_ask import Asker
        from .acp_fs import editor_reader, use_client_fs
        from .acp_session import mcp_config, modes_for
        from .acp_updates import AnswerText, ToolUpdates
        from .agent_setup import make_agent

        assert self.loop is not None
        ns = argparse.Namespace(**vars(self.args))
        ns.cwd, ns.resume, ns.add_dir = cwd, resume, list(add_dirs or []) + list(getattr(self.args, "add_dir", []) or [])
        editor_servers = mcp_config(mcp_servers)
        ns.mcp_configs = list(getattr(self.args, "mcp_configs", None) or []) + ([editor_servers] if editor_servers else [])
        holder: dict[str, Any] = {}
        agent = make_agent(ns, ask_permission=lambda call, decision: holder["ask"].permission(call, decision))
        sid = agent.session.id
        updates = ToolUpdates(lambda u: self._send(sid, u), agent.cwd)
        disk = updates.read
        if self.fs_read:
            from agentloop.tools import ToolError

            through = editor_reader(self._call, self.conn, sid)

            def read(path: str) -> str | None:
                """The editor's buffer, else the file on disk (an editor may read only what it has open)."""
                try:
                    return through(path)
                except ToolError:
                    return disk(path)

            updates.read = read
        asker = Asker(self.conn, self.loop, sid, agent.cwd, updates, lambda: self.forms)
        holder["ask"] = asker
        agent.elicit = asker.elicit
        use_client_fs(agent, self._call, self.conn, self.fs_read, self.fs_write)
        from acp import update_agent_message_text

        answer = AnswerText(lambda text: self._send(sid, update_agent_message_text(text)))
        return _Session(agent, updates, modes_for(agent.permission_mode), agent.permission_mode, answer)

    async def _open(self, cwd: str, resume: str | None, add_dirs: list[str] | None, mcp_servers: Any) -> _Session:
        """A session made on the main thread; rule 7 for what goes wrong."""
        from acp.exceptions import RequestError

        from ._common import UserError

        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"cwd": f"{cwd}: must be an absolute path"})
        try:
            s = await self._run(lambda: self._make(cwd, resume, add_dirs, mcp_servers))
        except UserError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        self.sessions[s.agent.session.id] = s
        return cast(_Session, s)

    def _commands_later(self, s: _Session) -> None:
        """``available_commands_update`` once the response naming the session has gone out."""
        from acp.helpers import update_available_commands

        from .acp_session import available_commands

        commands = available_commands(s.agent)
        if not commands:
            return
        sid = s.agent.session.id

        async def send() -> None:
            await asyncio.sleep(0.05)
            try:
                await self.conn.session_update(session_id=sid, update=update_available_commands(commands))
            except (ConnectionError, OSError, RuntimeError):  # the editor went away first: nobody to tell
                pass

        asyncio.ensure_future(send())

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: Any = None, **kw: Any) -> Any:
        from acp import NewSessionResponse

        from .acp_session import mode_state

        s = await self._open(cwd, None, additional_directories, mcp_servers)
        self._commands_later(s)
        return NewSessionResponse(session_id=s.agent.session.id, modes=mode_state(s.agent.permission_mode, s.modes))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: list[str] | None = None,
                           **kw: Any) -> Any:
        from acp import LoadSessionResponse
        from acp.exceptions import RequestError

        from agentloop.agent.session.store import last_permission_mode, sessions_dir
        from agentloop.config.settings import agentloop_home

        from .acp_session import mode_state
        from .acp_updates import replay

        path = os.path.join(sessions_dir(cwd, agentloop_home()), f"{session_id}.jsonl")
        if not os.path.isfile(path) or "/" in session_id or session_id.startswith("."):
            raise RequestError.resource_not_found(session_id)
        s = self.sessions.get(session_id)
        if s is None:
            left_at = os.path.getsize(path)  # the file as it was left, before this load records its start
            s = await self._open(cwd, session_id, additional_directories, mcp_servers)
            await self._restore_mode(s, last_permission_mode(path, left_at))
        for update in replay(s.agent.session.messages, s.agent.cwd):  # rule 3: the conversation, replayed
            await self.conn.session_update(session_id=session_id, update=update)
        self._commands_later(s)
        return LoadSessionResponse(modes=mode_state(s.agent.permission_mode, s.modes))

    async def _restore_mode(self, s: _Session, mode: str | None) -> None:
        """A loaded session comes back in the mode it was left in (plan stays plan), when this
        session offers that mode; a mode it does not offer (bypassPermissions) is not restored."""
        from .acp_session import switch_mode

        if mode is not None and mode in s.modes and mode != s.agent.permission_mode:
            if await self._run(lambda: switch_mode(s.agent, mode, s.modes)) is None:
                s.told = s.agent.permission_mode

    def _session(self, session_id: str) -> _Session:
        from acp.exceptions import RequestError

        s = self.sessions.get(session_id)
        if s is None:
            raise RequestError.resource_not_found(session_id)
        return s

    async def set_session_mode(self, session_id: str, mode_id: str, **kw: Any) -> Any:
        from acp.exceptions import RequestError
        from acp.helpers import update_current_mode
        from acp.schema import SetSessionModeResponse

        from .acp_session import switch_mode

        s = self._session(session_id)
        why = await self._run(lambda: switch_mode(s.agent, mode_id, s.modes))
        if why is not None:
            raise RequestError.invalid_params({"modeId": why})
        s.told = s.agent.permission_mode
        await self.conn.session_update(session_id=session_id, update=update_current_mode(s.told))
        return SetSessionModeResponse()

    # -- a turn --

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> Any:
        from acp import PromptResponse

        s = self._session(session_id)
        try:
            reason = await self._run(lambda: self._turn(session_id, s, prompt))
        except asyncio.CancelledError:
            reason = "cancelled"
        return PromptResponse(stop_reason=reason)

    def _turn(self, sid: str, s: _Session, blocks: list[Any]) -> str:
        """One prompt on the main thread: its stop reason (rule 6), or the model's error as a JSON-RPC error."""
        from acp import update_agent_message_text
        from acp.exceptions import RequestError

        from agentloop.agent.tools.builtin import BASH_OUTPUT

        from .acp_session import prompt_text, read_file

        agent, updates = s.agent, s.updates
        text = prompt_text(blocks, list(agent.workspace.roots), updates.read if self.fs_read else read_file)
        rules: tuple[str, ...] = ()
        if text.startswith("/"):
            from agentloop.agent.agent import AgentError

            try:
                expanded = agent.expand_command(text)
            except AgentError as exc:  # a ! line of the command failed: nothing is sent
                self._send(sid, update_agent_message_text(str(exc)))
                return "end_turn"
            if expanded is not None:
                text, rules = expanded
            elif text.startswith("/mcp__"):
                got = self._mcp_prompt(sid, agent, text)
                if got is None:
                    return "end_turn"
                text = got
        self.jobs.running = sid
        token = BASH_OUTPUT.set(updates.bash_output)
        try:
            result = agent.ask(text, observer=lambda ev: self._observe(sid, s, ev), allowed_tools=rules)
        except KeyboardInterrupt:
            return "cancelled"
        finally:
            BASH_OUTPUT.reset(token)
            self.jobs.running = None
            self._tell_mode(sid, s)
        if result.stop_reason == "model_error":
            raise RequestError.internal_error({"stopReason": "model_error", "message": str(result.error or "the model call failed")})
        if result.stop_reason not in ("no_tool_calls", "sentinel", "interrupted"):
            detail = f": {result.error}" if result.error else ""
            self._send(sid, update_agent_message_text(f"\n[agentloop stopped: {result.stop_reason}{detail}]"))
        return _stop_reason(result.stop_reason)

    def _mcp_prompt(self, sid: str, agent: Agent, text: str) -> str | None:
        """``/mcp__server__prompt args``: the server's prompt text (unchanged text when no prompt has that
        name), or None when the server refused, which the editor is told."""
        from acp import update_agent_message_text

        from agentloop.mcp.agent import run_prompt
        from agentloop.mcp.client import McpToolError

        name, _, rest = text[1:].partition(" ")
        try:
            got = run_prompt(agent.mcp_servers, name, rest.strip())
        except McpToolError as exc:
            self._send(sid, update_agent_message_text(str(exc)))
            return None
        return text if got is None else got

    def _tell_mode(self, sid: str, s: _Session) -> None:
        """A mode changed during the turn (ExitPlanMode approved): ``current_mode_update``."""
        from acp.helpers import update_current_mode

        if s.agent.permission_mode != s.told:
            s.told = s.agent.permission_mode
            self._send(sid, update_current_mode(s.told))

    async def cancel(self, session_id: str, **kw: Any) -> None:
        if self.jobs.running == session_id:
            signal.pthread_kill(self.main_thread, signal.SIGINT)  # rule 1: as Ctrl+C

    def _observe(self, sid: str, s: _Session, ev: Any) -> None:
        from agentloop.events import (
            Stopped,
            TextDelta,
            TextWithdrawn,
            ToolFinished,
            ToolStarted,
            TurnRecorded,
        )

        if isinstance(ev, TextDelta):
            s.answer.delta(ev.text)
        elif isinstance(ev, TextWithdrawn):
            s.answer.restart()
        elif isinstance(ev, (TurnRecorded, Stopped)):  # a call's reply complete, or the run over without one
            s.answer.end()
        elif isinstance(ev, ToolStarted):
            s.updates.started(ev.call)
        elif isinstance(ev, ToolFinished):
            s.updates.finished(ev.result)
            self._tell_mode(sid, s)


def serve(args: argparse.Namespace) -> int:
    """Run until the editor closes the connection (rule 1: the agent's work on this thread)."""
    try:
        import acp
    except ImportError:
        print("agentloop acp needs the agent-client-protocol package: pip install 'agentloop[acp]'", file=sys.stderr)
        return 2
    logging.getLogger().handlers[:] = [OneLineErrors()]  # rule 7: the SDK's own errors, without tracebacks
    jobs = Jobs()
    agent = AcpAgent(args, jobs, threading.main_thread().ident or 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # nothing but the protocol goes to the editor: stray prints go to stderr

    def connection() -> None:
        async def main() -> None:
            reader, writer = await _streams(real_stdout)
            # rule 8: every message checked on the wire before the SDK's connection sees it
            await acp.run_agent(cast(Any, agent), CheckedTransport(reader, writer))  # implements the methods agentloop supports

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
