"""``--input-format stream-json``: the Agent SDK's side of stdin, its control protocol included.

The Claude Agent SDK (TypeScript ``@anthropic-ai/claude-agent-sdk``, Python
``claude-agent-sdk``) starts its CLI with ``--output-format stream-json
--verbose --input-format stream-json`` and no ``-p``, and then speaks on stdin
and stdout. Rules (the shapes are ``sdk.d.ts``'s ``SDKControlRequest`` and
``SDKControlResponse``):

1. A reader thread reads stdin, one JSON object a line. ``user`` messages are
   prompts, queued in order for the main thread; a ``control_request`` is
   answered by a ``control_response`` (``success`` with its ``response``, or
   ``error`` with the reason) as soon as it is read, even while a turn runs;
   a ``control_response`` settles a request agentloop sent.
2. ``initialize`` applies what agentloop can honour (``appendSystemPrompt``,
   ``systemPrompt``, hook callbacks, ``sdkMcpServers``) and answers with the commands, agents and
   models; a field agentloop cannot honour where it matters (agent
   definitions, a JSON schema, plugins or MCP servers sent this way) makes the answer an error that names it, never a silent success.
3. ``interrupt`` stops the turn in flight exactly as Ctrl+C does (SIGINT to the
   main thread, so a running tool is killed with its process group and the run
   records ``interrupted``); the process and the session go on, and the queued
   prompts stay queued (``cancel_queued: true`` drops them). Only the agent's
   run is stopped, never the writing of its ``result``; an interrupt that
   comes between runs stops nothing. The answer lists the ``uuid``s of the
   prompts still queued (or dropped), ``sdk.d.ts``'s interrupt receipt.
4. ``set_permission_mode`` switches the mode now, to a mode Shift+Tab could
   reach (a managed mode stays; bypassPermissions only when the session
   started in it);
   ``set_model`` and ``set_max_thinking_tokens`` take effect from the next turn.
   Any other request is answered with an error naming it.
5. ``--permission-prompt-tool stdio``: a permission question is a
   ``can_use_tool`` request to the SDK (its ``canUseTool``); its ``allow``
   (with ``updatedInput``) or ``deny`` (with ``message``, told to the model) is
   the answer; an ``interrupt: true`` on a deny also stops the turn.
6. A malformed line is the user's mistake: it ends the run with exit 2,
   naming its line. A control response that is not well formed fails the
   question it answers (the call is refused, naming why).
7. An ``--mcp-config`` server of ``"type": "sdk"`` (or one named in
   ``initialize``'s ``sdkMcpServers``, served before the next prompt) lives in the SDK's process:
   agentloop's MCP client reaches it with ``mcp_message`` requests (its
   ``server_name`` and one JSON-RPC ``message``), and reads the server's reply
   in the answer's ``mcp_response`` (``mcp.sdk_transport``). Each wait is
   bounded; a missing or broken reply fails that MCP request, naming why.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ._common import UserError

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

    from .sdk_stream import StreamJson

__all__ = ["ControlChannel", "ControlError", "user_prompt"]

_EOF = object()


class ControlError(Exception):
    """A control request agentloop cannot do, or the SDK's answer to ours was an error or malformed."""


def user_prompt(obj: Any, n: int) -> str:
    """The prompt of a ``user`` message (its ``content``: a string or text blocks); ``UserError`` naming line ``n``."""
    msg = obj.get("message") if isinstance(obj, dict) and obj.get("type") == "user" else None
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
        if len(texts) != len(content):
            kinds = sorted({str(b.get("type")) for b in content if b.get("type") != "text"})
            raise UserError(f"stdin line {n}: content blocks of type {', '.join(kinds)} are not supported (text only)")
        return "\n".join(texts)
    raise UserError(f'stdin line {n}: not a user message ({{"type": "user", "message": {{"role": "user", "content": ...}}}})')


@dataclass
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    response: Any = None


@dataclass
class TurnState:
    """What the reader thread and the main thread share about the turn (rule 3)."""

    running: bool = False
    interrupt_asked: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Re-entrant: the SIGINT handler takes it on the main thread, which may hold it already."""


class ControlChannel:
    """Stdin's prompts and control requests, and the requests agentloop sends the SDK (rules 1 to 6)."""

    def __init__(self, stream: StreamJson, agent: Agent, handle: Callable[[ControlChannel, Mapping[str, Any]], dict[str, Any]], *,
                 inp: IO[str] | None = None, main_thread: int | None = None):
        self.stream = stream
        self.handle = handle
        """The SDK's requests: a success's ``response``, or ``ControlError`` (``sdk_requests.handle``)."""
        self.agent = agent
        self.inp = inp or sys.stdin
        self.main_thread = main_thread if main_thread is not None else threading.main_thread().ident
        self.turn = TurnState()
        self.prompts_q: queue.Queue[Any] = queue.Queue()
        self.between_turns: list[Callable[[], None]] = []
        """Changes asked for during a turn that apply before the next (``set_model``)."""
        self._pending: dict[str, _Pending] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self.hook_callbacks: Callable[[Mapping[str, Any]], None] | None = None
        """Registers ``initialize``'s hook callbacks (``sdk_hooks``); None: hooks there are an error."""
        self.sdk_servers: Callable[[list[str]], None] | None = None
        """Takes ``initialize``'s ``sdkMcpServers`` (rule 7); None: naming any is an error."""

    # -- rule 1 --

    def start(self) -> None:
        threading.Thread(target=self._read, name="sdk-stdin", daemon=True).start()

    def _read(self) -> None:
        n = 0
        try:
            for line in self.inp:
                n += 1
                if line.strip():
                    self._line(line, n)
        except UserError as exc:
            self.prompts_q.put(exc)
        except Exception as exc:  # stdin failed under us: the run ends as at its end, saying why
            self.prompts_q.put(UserError(f"stdin: {exc}"))
        finally:
            self.prompts_q.put(_EOF)
            for p in list(self._pending.values()):  # nobody will answer now
                p.done.set()

    def _line(self, line: str, n: int) -> None:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"stdin line {n}: not JSON ({exc.msg})") from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "control_request":
            self._answer(obj, n)
        elif kind == "control_response":
            self._settle(obj)
        elif kind in ("keep_alive", "control_cancel_request"):
            pass  # nothing of ours to cancel: agentloop sends the SDK nothing it may withdraw
        else:
            uuid = obj.get("uuid")
            self.prompts_q.put((user_prompt(obj, n), uuid if isinstance(uuid, str) else None))

    def prompts(self) -> Iterator[str]:
        """The prompts in order, until stdin ends; raises the ``UserError`` of a malformed line."""
        while True:
            item = self.prompts_q.get()  # a SIGINT from outside between turns ends the run (on_sigint)
            if item is _EOF:
                return
            if isinstance(item, UserError):
                raise item
            for change in self.between_turns:
                change()
            self.between_turns.clear()
            yield str(item[0])

    def send(self, obj: dict[str, Any]) -> None:
        """One protocol line on stdout (no ``session_id`` is added to control messages)."""
        self.stream.emit(obj, session=False)

    # -- control requests from the SDK --

    def _answer(self, obj: Mapping[str, Any], n: int) -> None:
        rid = obj.get("request_id")
        req = obj.get("request")
        if not isinstance(rid, str) or not isinstance(req, dict):
            raise UserError(f"stdin line {n}: a control_request needs a string request_id and a request object")
        try:
            body = self.handle(self, req)
        except Exception as exc:  # ControlError, or a failure of ours: the SDK is told either way, and stdin is read on
            why = str(exc) if isinstance(exc, ControlError) else f"{req.get('subtype')}: {type(exc).__name__}: {exc}"
            self.send({"type": "control_response", "response": {"subtype": "error", "request_id": rid, "error": why}})
            return
        self.send({"type": "control_response", "response": {"subtype": "success", "request_id": rid, "response": body}})

    def interrupt(self, cancel_queued: bool) -> dict[str, Any]:
        """Rule 3: the turn in flight stops as with Ctrl+C; the queue stays unless asked. The answer is
        ``sdk.d.ts``'s interrupt receipt: the ``uuid``s of the prompts still queued, or of those dropped."""
        waiting = []
        while True:
            try:
                waiting.append(self.prompts_q.get_nowait())
            except queue.Empty:
                break
        kept = [item for item in waiting if not cancel_queued or not isinstance(item, tuple)]
        for item in kept:
            self.prompts_q.put(item)
        listed = [item[1] for item in waiting if isinstance(item, tuple) and item[1] is not None]
        with self.turn.lock:
            if self.turn.running and not self.turn.interrupt_asked:
                self.turn.interrupt_asked = True
                if self.main_thread is not None:
                    signal.pthread_kill(self.main_thread, signal.SIGINT)
        return {"still_queued": [], "cancelled": listed} if cancel_queued else {"still_queued": listed}

    def on_sigint(self, signum: int, frame: Any) -> None:
        """The main thread's SIGINT: a turn interrupted by request or by a signal stops; an interrupt
        request that arrived as the turn ended stops nothing; a signal between turns ends the run."""
        with self.turn.lock:
            late = self.turn.interrupt_asked and not self.turn.running
        if not late:
            raise KeyboardInterrupt

    def run_turn(self, fn: Callable[[], int]) -> tuple[int, bool]:
        """Run one prompt on the main thread (``fn`` holds ``running`` while the agent runs); its exit code,
        and whether an interrupt request came for it."""
        with self.turn.lock:
            self.turn.interrupt_asked = False
        return fn(), self.turn.interrupt_asked

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """While the agent runs a turn: what an interrupt request stops (not the result being written after)."""
        with self.turn.lock:
            self.turn.running = True
        try:
            yield
        finally:
            with self.turn.lock:
                self.turn.running = False

    # -- requests to the SDK (rule 5) --

    def request(self, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a control request and wait for its answer (``timeout`` seconds at most, then it is withdrawn);
        ``ControlError`` if it is an error, malformed, or late."""
        with self._lock:
            self._next_id += 1
            rid = f"agentloop_{self._next_id}"
            pending = self._pending[rid] = _Pending()
        self.send({"type": "control_request", "request_id": rid, "request": body})
        try:
            if not pending.done.wait(timeout):
                self.send({"type": "control_cancel_request", "request_id": rid})
                raise ControlError(f"the SDK did not answer {body.get('subtype')} within {timeout:g}s")
        except KeyboardInterrupt:  # the turn was interrupted while the SDK was being asked
            self.send({"type": "control_cancel_request", "request_id": rid})
            raise
        finally:
            self._pending.pop(rid, None)
        res = pending.response
        if res is None:
            raise ControlError(f"stdin ended before the SDK answered {body.get('subtype')}")
        if res.get("subtype") == "error":
            raise ControlError(f"the SDK answered {body.get('subtype')} with an error: {res.get('error') or 'no reason given'}")
        answer = res.get("response")
        if res.get("subtype") != "success" or not isinstance(answer, dict):
            raise ControlError(f"the SDK's answer to {body.get('subtype')} is malformed (a success needs a response object)")
        return answer

    def mcp_message(self, server: str, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Rule 7: one JSON-RPC message to the SDK's in-process MCP server ``server``; the server's reply
        (``mcp_response``). ``ControlError`` if the answer is an error, malformed, or not there in time."""
        answer = self.request({"subtype": "mcp_message", "server_name": server, "message": message}, timeout)
        reply = answer.get("mcp_response")
        if not isinstance(reply, dict):
            raise ControlError("the SDK's answer to mcp_message is malformed (it needs an mcp_response object)")
        return reply

    def _settle(self, obj: Mapping[str, Any]) -> None:
        res = obj.get("response")
        rid = res.get("request_id") if isinstance(res, dict) else None
        pending = self._pending.get(rid) if isinstance(rid, str) else None
        if pending is None:
            return  # an answer to nothing we asked (or asked and gave up on)
        pending.response = res
        pending.done.set()
