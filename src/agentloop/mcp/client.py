"""MCP servers as agentloop tools, on the official ``mcp`` SDK.

Rules:

1. Every session lives on one background event loop (``_loop.LoopThread``).
   A tool is a plain synchronous callable that submits the call to that loop
   and waits, so it works from ``run()``, from ``arun()`` (through a thread)
   and from worker threads. Nothing here blocks without a timeout.
2. A server that fails to start, stops answering or dies is marked
   ``failed`` with a message that says why (the last lines of its stderr for
   a stdio server). The next use of one of its tools tries to start it again;
   until then its tools answer ``ok: false`` at once.
3. What a server answers becomes a tool result: a result with ``isError``, a
   JSON-RPC error (the two ways a server says "unknown tool" included), a
   timeout and a dead server are ``ok: false`` with a message for the model;
   anything else is recorded (see ``result_value``).
4. A tool is named ``mcp__<server>__<tool>``; characters a provider would
   refuse in a tool name become ``_``, and a name that would then be the same
   as another tool's, empty or past 64 characters gets a short hash of the
   real names (``model_names``). Its fingerprint in the run's manifest is
   the server's own name and version (``mcp:<name>@<version>``), so a replay
   can warn when the server changed.
5. Input schemas are the server's, validated by the core with ``jsonschema``.
   The core closes an object schema that says nothing about extra keys; for
   MCP tools we do not: the server is the authority on its inputs, JSON
   Schema says a silent object admits other keys, and pass-through tools
   (``{"type": "object"}``) rely on it. The schema recorded and shown to the
   model says so explicitly (``"additionalProperties": true``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import hashlib
import json
import logging
import os
import pathlib
import re
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from agentloop.tools import Tool, ToolError

from ._loop import LoopThread
from .config import ConfigError, ServerConfig
from .env import server_environment
from .limits import OutputLimit
from .sdk_transport import SdkSend, sdk_transport

__all__ = ["McpManager", "McpTool", "McpToolError", "ServerStatus", "model_names", "result_value", "tool_name"]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 300.0
SDK_NOT_DRIVING = ("it is an Agent SDK in-process server (type 'sdk'), served only while the Agent SDK drives "
                   "agentloop (--input-format stream-json) and answers its mcp_message requests")
_PROBE_TIMEOUT = 5.0
_POLL = 0.05
_log = logging.getLogger("agentloop.mcp")
_LOG_LEVELS = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
    "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}


class McpToolError(ToolError):
    """What the model is told when an MCP call did not give a result."""


class Unavailable(Exception):
    """A server could not be reached; the message says why."""


MAX_NAME = 64
"""The longest tool name offered to a model (OpenAI's limit for function names)."""


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def tool_name(server: str, tool: str) -> str:
    """The plain form ``mcp__<server>__<tool>``, with characters outside ``[A-Za-z0-9_-]`` made ``_``.

    What a tool is offered as unless it must be told apart (``model_names``).
    """
    return f"mcp__{_clean(server)}__{_clean(tool)}"


def _hashed(server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{tool_name(server, tool)[: MAX_NAME - 9]}_{digest}"


def model_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The names the model sees for ``(server, tool)`` pairs: distinct, at most 64 characters, never empty.

    The mapping (the same for every agentloop):

    1. A tool's plain name is ``mcp__<server>__<tool>`` with every character
       outside ``[A-Za-z0-9_-]`` made ``_`` (``tool_name``).
    2. It is used as is when it is at most 64 characters, the tool's name is
       not empty, and no other tool (of any server) has the same plain name;
       when several do, the one whose name needed no change keeps it.
    3. Every other tool gets the first 55 characters of its plain name, ``_``,
       and the first 8 hex digits of the SHA-256 of ``<server>\0<tool>``.
       So ``get.file`` and ``get/file`` differ, and a tool ``b__add`` of server
       ``a`` and a tool ``add`` of server ``a__b`` are both suffixed.

    Which server a name belongs to is never read back from the name:
    permission rules ask the manager (``McpManager.server_of``).
    """
    pairs = list(dict.fromkeys(pairs))
    groups: dict[str, list[tuple[str, str]]] = {}
    for server, tool in pairs:
        groups.setdefault(tool_name(server, tool), []).append((server, tool))
    out: dict[tuple[str, str], str] = {}
    for plain, members in groups.items():
        exact = [(s, t) for s, t in members if _clean(s) == s and _clean(t) == t]
        keeper = exact[0] if len(exact) == 1 else (members[0] if len(members) == 1 else None)
        for server, tool in members:
            ok = (server, tool) == keeper and tool != "" and len(plain) <= MAX_NAME
            out[(server, tool)] = plain if ok else _hashed(server, tool)
    return out


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (possibly nested) exception groups."""
    while isinstance(getattr(exc, "exceptions", None), (list, tuple)) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _dump(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    return out


def result_value(result: Any) -> Any:
    """What a ``CallToolResult`` records as the tool's content.

    A result of exactly one text block (and no structured content) is that
    text: what a model reads best. Anything else (images, audio, embedded
    resources, resource links, several blocks, ``structuredContent``) is
    ``{"content": [blocks in MCP's wire shape], "structuredContent": ...}``.
    Structured content that the text blocks already carry (the JSON copy the
    spec asks servers to send) is sent once, as that text.

    Raises:
        McpToolError: the result has ``isError`` set; the message is its text.
    """
    blocks = [_dump(b) for b in result.content]
    if result.is_error:
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
        raise McpToolError(text or "the tool reported an error and gave no message")
    structured = result.structured_content
    if structured is not None and _duplicates(blocks, structured):
        structured = None  # sent once: as the text the server wrote for it
    if structured is None and len(blocks) == 1 and blocks[0].get("type") == "text":
        return blocks[0].get("text", "")
    out: dict[str, Any] = {"content": blocks}
    if structured is not None:
        out["structuredContent"] = structured
    return out


def _duplicates(blocks: list[dict[str, Any]], structured: Any) -> bool:
    """True when the text blocks are the structured content again (the spec's backward-compatible copy).

    A text block repeats it when it is its JSON, or, for a server that wraps
    a plain value in an object of one key (fastmcp's ``{"result": value}``,
    the filesystem server's ``{"content": text}``), that value or its JSON.
    """
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if not texts:
        return False
    wrapped = next(iter(structured.values())) if isinstance(structured, dict) and len(structured) == 1 else None
    for text in texts:
        if wrapped is not None and text == wrapped:
            continue
        try:
            parsed = json.loads(text)
        except ValueError:
            return False
        if parsed != structured and (wrapped is None or parsed != wrapped):
            return False
    return True


@dataclass
class McpTool(Tool):
    """A tool served by an MCP server: the server's schema, annotations and output schema kept."""

    server: str = ""
    """The configured name of the server."""
    remote_name: str = ""
    """The tool's name on the server."""
    title: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    input_schema: dict[str, Any] = field(default_factory=dict)
    """The schema exactly as the server sent it."""

    def manifest_entry(self) -> dict[str, Any]:
        entry = super().manifest_entry()
        mcp: dict[str, Any] = {"server": self.server, "tool": self.remote_name}
        if self.title:
            mcp["title"] = self.title
        if self.annotations:
            mcp["annotations"] = self.annotations
        if self.output_schema is not None:
            mcp["outputSchema"] = self.output_schema
        entry["mcp"] = mcp
        return entry


def _open_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Say explicitly that a silent object schema admits extra keys (rule 5)."""
    if schema.get("type") == "object" and not any(
        k in schema
        for k in ("additionalProperties", "unevaluatedProperties", "patternProperties", "allOf", "anyOf", "oneOf", "$ref", "if")
    ):
        return {**schema, "additionalProperties": True}
    return schema


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``/mcp`` and ``agentloop mcp list`` show it."""

    name: str
    transport: str
    status: str
    """``pending``, ``connecting``, ``connected``, ``failed`` or ``closed``."""
    error: str | None
    server_name: str | None
    server_version: str | None
    tools: tuple[str, ...]
    """Agentloop names of the tools (``mcp__server__tool``)."""
    source: str
    scope: str
    skipped: tuple[str, ...] = ()
    """Tools left out, each with the reason."""
    needs_auth: bool = False
    """It failed because the server refused the credentials (HTTP 401 or 403)."""
    oauth: str | None = None
    """For a server that signs in with OAuth: ``signed in`` or ``not signed in``."""

    @property
    def public_status(self) -> str:
        """Claude Code's word for the state: ``connected``, ``failed``, ``needs-auth`` or ``pending``."""
        if self.status == "connected":
            return "connected"
        if self.status in ("pending", "connecting"):
            return "pending"
        return "needs-auth" if self.needs_auth else "failed"


class _Server:
    """The connection to one server. Its coroutines run on the manager's loop."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        target: Any = None,
        cwd: str | None,
        environ: Mapping[str, str] | None,
        startup_timeout: float,
        call_timeout: float,
    ):
        self.config = config
        self.target = target
        self.cwd = cwd
        self.environ = environ
        self.startup_timeout = startup_timeout
        self.call_timeout = config.timeout_ms / 1000 if config.timeout_ms else call_timeout
        self.status = "pending"
        self.error: str | None = None
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.tools: list[Any] = []
        self.attempts = 0
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Future[Any] | None = None
        self._lock: asyncio.Lock | None = None
        self._stderr: IO[str] | None = None
        self.notify: Callable[[str], None] | None = None
        """Where this server's news for the user goes (a drop, garbage on stdout)."""
        self.http_status: int | None = None
        """The last HTTP 401 or 403 an HTTP server answered, if any."""
        self.needs_auth = False
        self.garbage_lines = 0
        self.withhold: tuple[str, ...] = ()
        self.allow_env: tuple[str, ...] = ()
        """Secret-named variables this server may inherit (``env.server_environment``)."""
        self.inherit: Mapping[str, str] | None = None
        """What a stdio server inherits when its host decided it (the agent's one child environment), in place
        of ``environ`` judged again here."""
        self.prompts: list[Any] = []
        self.resources: list[Any] = []
        self.generation = 0
        """Bumped each time a list changes after a ``list_changed`` notification (``McpManager.generation``)."""
        self._refreshing: set[asyncio.Task[None]] = set()
        self.roots: Callable[[], Sequence[str]] | None = None
        """The directories offered as roots (the workspace and additional directories); None: no roots capability."""
        self.elicit: Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None = None
        """Asks the user ``(server, message, schema)``: the answers, or None to decline. None: every request is declined."""
        self.on_progress: Callable[[str, str, str], None] | None = None
        """Told ``(server, tool, text)`` for each progress notification of a call."""
        self.auth_home: str | None = None
        """Where OAuth tokens live (``oauth.py``); None: no OAuth."""
        self.open_url: Callable[[str], None] | None = None
        """Set while the user signs in (``McpManager.sign_in``): shows the authorization URL."""
        self.sdk_send: SdkSend | None = None
        """A ``"type": "sdk"`` server's way to the Agent SDK (``McpManager.serve_sdk``); None: not served."""
        """Variables kept from the server besides OPENAI_API_KEY and ANTHROPIC_API_KEY (the agent's key variable)."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def fingerprint(self) -> str:
        return f"mcp:{self.server_name or self.name}@{self.server_version or 'unknown'}"

    # -- starting and stopping --

    def _transport(self, cfg: ServerConfig) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.target is not None:
            return self.target
        if cfg.transport == "sdk":
            assert self.sdk_send is not None
            return sdk_transport(cfg.name, self.sdk_send, max(self.call_timeout, self.startup_timeout))
        if cfg.transport == "stdio":
            assert cfg.command is not None
            fd, path = tempfile.mkstemp(prefix=f"agentloop-mcp-{cfg.name}-", suffix=".stderr")
            os.close(fd)
            self._stderr = open(path, "a+", encoding="utf-8", errors="replace")  # noqa: SIM115
            os.unlink(path)
            base = self.inherit if self.inherit is not None else os.environ if self.environ is None else self.environ
            env = server_environment(  # the user's, minus the agent's provider keys (see env.py)
                base, cfg.env, project_dir=self.cwd, withhold=self.withhold,
                allowed=self.allow_env,
            )
            params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=env, cwd=self.cwd)
            return stdio_client(params, errlog=self._stderr)
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            assert cfg.url is not None
            from mcp.shared._httpx_utils import create_mcp_http_client

            def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
                http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
                http.event_hooks["response"].append(self._saw_response)
                return http

            return sse_client(cfg.url, headers=dict(cfg.headers) or None, timeout=self.startup_timeout,
                              httpx_client_factory=factory, auth=self._oauth(cfg))
        return _http_transport(cfg.url or "", dict(cfg.headers), self.startup_timeout, self._saw_response, self._oauth(cfg))

    def uses_oauth(self) -> bool:
        """A remote server with no Authorization header of its own, in an agent that keeps tokens."""
        cfg = self.config
        return (self.auth_home is not None and self.target is None and cfg.transport in ("http", "sse")
                and not any(k.lower() == "authorization" for k in cfg.headers))

    def _oauth(self, cfg: ServerConfig) -> Any:
        if not self.uses_oauth():
            return None
        from .oauth import make_auth

        assert self.auth_home is not None
        return make_auth(self.auth_home, self.name, cfg.url or "", open_url=self.open_url)

    async def _on_message(self, message: Any) -> None:
        """Notifications from the server: a ``list_changed`` fetches that list again, off the reader's path."""
        import mcp_types as types

        if isinstance(message, types.ToolListChangedNotification):
            kind = "tools"
        elif isinstance(message, types.PromptListChangedNotification):
            kind = "prompts"
        elif isinstance(message, types.ResourceListChangedNotification):
            kind = "resources"
        else:
            return
        task = asyncio.get_running_loop().create_task(self._refresh(kind))  # never await session I/O here
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)

    async def _on_log(self, params: Any) -> None:
        """A server's log message: to the log file; a warning or worse also to the user."""
        level = str(params.level)
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        text = text if len(text) <= 2000 else text[:1999] + "…"
        where = f" ({params.logger})" if getattr(params, "logger", None) else ""
        _log.log(_LOG_LEVELS.get(level, logging.INFO), "mcp server %s%s %s: %s", self.name, where, level, text)
        if _LOG_LEVELS.get(level, logging.INFO) >= logging.WARNING:
            self._say(f"the MCP server {self.name!r}{where} logged {level}: {text}")

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """An elicitation request: asked of the user (``self.elicit``) with the server's schema, or declined."""
        import mcp_types as types

        if getattr(params, "mode", "form") != "form" or self.elicit is None:
            return types.ElicitResult(action="decline")
        schema = _dump(params).get("requestedSchema") or {}
        try:
            content = await asyncio.to_thread(self.elicit, self.name, str(params.message), schema)
        except (EOFError, KeyboardInterrupt):
            return types.ElicitResult(action="cancel")
        except Exception as exc:
            _log.warning("mcp server %s: asking the user failed: %s", self.name, _describe(exc))
            return types.ElicitResult(action="cancel")
        if content is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    async def _on_roots(self, context: Any) -> Any:
        import mcp_types as types

        dirs = list(self.roots() if self.roots is not None else [])
        return types.ListRootsResult(
            roots=[types.Root.model_validate({"uri": pathlib.Path(d).resolve().as_uri(), "name": os.path.basename(d.rstrip(os.sep)) or d})
                   for d in dirs]
        )

    async def _list(self, client: Any, kind: str) -> list[Any]:
        caps = client.server_capabilities
        if kind == "tools":
            return await _list_tools(client)
        if getattr(caps, kind, None) is None:
            return []
        method = client.list_prompts if kind == "prompts" else client.list_resources
        out: list[Any] = []
        cursor = None
        for _ in range(100):
            page = await method(cursor=cursor)
            out.extend(page.prompts if kind == "prompts" else page.resources)
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def _refresh(self, kind: str) -> None:
        client = self._client
        if client is None or self.status != "connected":
            return
        try:
            fresh = await asyncio.wait_for(self._list(client, kind), self.startup_timeout)
        except Exception as exc:
            _log.warning("mcp server %s: fetching %s again after list_changed failed: %s", self.name, kind, _describe(_leaf(exc)))
            return
        setattr(self, kind, fresh)
        self.generation += 1
        _log.info("mcp server %s: %s changed (%d now)", self.name, kind, len(fresh))

    def _progress(self, tool: str) -> Any:
        """The progress callback of one call: the SDK then sends a ``progressToken`` with it."""

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            text = f"{done} {message}" if message else done
            _log.debug("mcp server %s: %s progress %s", self.name, tool, text)
            if self.on_progress is not None:
                with contextlib.suppress(Exception):
                    self.on_progress(self.name, tool, text)

        return progress

    async def _saw_response(self, response: Any) -> None:
        if response.status_code in (401, 403):
            self.http_status = response.status_code

    def _say(self, text: str) -> None:
        if self.notify is not None:
            with contextlib.suppress(Exception):
                self.notify(text)

    def saw_garbage(self, line: str) -> None:
        """A line on stdout that is not JSON-RPC: said once per server, then counted."""
        self.garbage_lines += 1
        if self.garbage_lines == 1:
            shown = line if len(line) <= 120 else line[:119] + "…"
            self._say(f"the MCP server {self.name!r} printed a line on its stdout that is not JSON-RPC ({shown!r}); "
                      "such lines are ignored (a server should log to stderr)")

    def _auth_message(self, exc: BaseException | None = None) -> str | None:
        from .oauth import SignInRequired

        if isinstance(exc, SignInRequired):
            self.needs_auth = True
            return str(exc)
        code = self.http_status
        if code not in (401, 403):
            return None
        self.needs_auth = True
        if self.uses_oauth():
            return (f"authentication failed (HTTP {code}): the server refused the sign-in; "
                    f"sign in again with /mcp login {self.name} in the agentloop REPL")
        what = "401 Unauthorized" if code == 401 else "403 Forbidden"
        return (f"authentication failed (HTTP {what}): the server refused the credentials sent. Check its "
                f"'headers' in the configuration (for example \"Authorization\": \"Bearer ${{TOKEN}}\", or "
                f"`agentloop mcp add --transport http -H 'Authorization: Bearer ...' {self.name} URL`), "
                "then try again with /mcp")

    async def _own(self, cfg: ServerConfig, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
        """Hold the session open: it must be entered and left in this one task."""
        from mcp import Client, Implementation

        from agentloop import __version__

        _CURRENT.set(self)  # the stdio reader's tasks inherit it: see _GarbageFilter
        try:
            client = Client(
                self._transport(cfg),
                mode="legacy",
                cache=None,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                elicitation_callback=self._on_elicit,
                list_roots_callback=self._on_roots if self.roots is not None else None,
                client_info=Implementation(name="agentloop", version=__version__),
            )
            async with client:
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the transport's death arrives here as a group
            if not ready.done():
                ready.set_exception(_leaf(exc))
            elif self._owner is asyncio.current_task() and self.status == "connected":
                self._dropped(f"the connection broke: {_describe(_leaf(exc))}")

    async def ensure(self) -> Any:
        """The live client, starting the server first when it is not running.

        Raises:
            Unavailable: it could not be started; the message says why.
        """
        if self.status == "connected" and self._owner is not None and not self._owner.done():
            return self._client
        if self._lock is None:
            self._lock = asyncio.Lock()
        seen = self.attempts
        async with self._lock:
            if self.status == "connected" and self._owner is not None and not self._owner.done():
                return self._client
            if self.attempts != seen and self.status == "failed":
                raise Unavailable(self.error or "it failed to start")
            await self._start()
            return self._client

    async def _start(self) -> None:
        self.attempts += 1
        await self._teardown()
        self._close_stderr()
        self.status = "connecting"
        self.error = None
        self.http_status, self.needs_auth = None, False
        try:
            cfg = self.config.expanded(self.environ) if self.target is None else self.config
        except ConfigError as exc:
            self._fail(str(exc))
            raise Unavailable(self.error or "") from None
        if cfg.transport == "sdk" and self.sdk_send is None:
            self._fail(SDK_NOT_DRIVING)
            raise Unavailable(self.error or "")
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        stop = asyncio.Event()
        self._stop, self._ready = stop, ready
        self._owner = loop.create_task(self._own(cfg, ready, stop))
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.startup_timeout)
            tools = await asyncio.wait_for(_list_tools(client), self.startup_timeout)
        except asyncio.TimeoutError:
            await self._teardown()
            self._fail(f"it did not finish starting within {self.startup_timeout:g} s (no answer to initialize or tools/list)")
            raise Unavailable(self.error or "") from None
        except asyncio.CancelledError:
            await self._teardown()
            self._fail("its start was cancelled")
            raise
        except Exception as exc:
            await self._teardown()
            self._fail(f"it failed to start: {self._auth_message(_leaf(exc)) or _describe(_leaf(exc))}")
            raise Unavailable(self.error or "") from None
        with contextlib.suppress(Exception):  # prompts and resources are extras: a server may fumble them
            self.prompts = await asyncio.wait_for(self._list(client, "prompts"), self.startup_timeout)
        with contextlib.suppress(Exception):
            self.resources = await asyncio.wait_for(self._list(client, "resources"), self.startup_timeout)
        info = client.server_info
        self.server_name = getattr(info, "name", None)
        self.server_version = getattr(info, "version", None)
        self._client = client
        self.tools = tools
        self.status = "connected"

    def _stderr_tail(self, lines: int = 5) -> str:
        f = self._stderr
        if f is None or f.closed:
            return ""
        try:
            f.seek(0)
            text = f.read()[-4000:]
        except (OSError, ValueError):
            return ""
        tail = [" ".join(ln.split()) for ln in text.splitlines() if ln.strip()][-lines:]
        return " | ".join(tail)

    def _dropped(self, message: str) -> None:
        """A connected server went away: failed, and the user told once."""
        was = self.status
        self._fail(message)
        if was == "connected":
            self._say(f"the MCP server {self.name!r} stopped: {self.error}. It will be started again on the next "
                      "call of one of its tools, or by /mcp")

    def _fail(self, message: str) -> None:
        tail = self._stderr_tail()
        self.status = "failed"
        self.error = f"{message}; its stderr ends: {tail}" if tail else message

    async def _teardown(self) -> None:
        owner, stop, ready = self._owner, self._stop, self._ready
        self._owner = self._stop = self._ready = None
        self._client = None
        if owner is not None and not owner.done():
            done: set[Any] = set()
            if stop is not None and ready is not None and ready.done():  # in session: leave it politely
                stop.set()
                done, _ = await asyncio.wait({owner}, timeout=6.0)
            if not done:  # still starting (or stuck leaving): cancel, which stops the process too
                owner.cancel()
                await asyncio.wait({owner}, timeout=6.0)
        if owner is not None and owner.done() and not owner.cancelled():
            owner.exception()  # retrieved, so asyncio does not log it

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                self._stderr.close()
        self._stderr = None

    async def close(self) -> None:
        await self._teardown()
        self._close_stderr()
        self.status = "closed"

    # -- calling --

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None) -> Any:
        """Call ``tool`` and return its recorded value (see ``result_value``).

        Raises:
            McpToolError: every way the call can fail, with a message for the model.
        """
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        limit = self.call_timeout if timeout is None else timeout
        try:
            client = await self.ensure()
        except Unavailable as exc:
            raise McpToolError(
                f"the MCP server {self.name!r} is unavailable: {exc}. It will be tried again on the next call."
            ) from None
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments, progress_callback=self._progress(tool)), limit)
        except asyncio.TimeoutError:
            if await self._alive(client):
                raise McpToolError(
                    f"the MCP server {self.name!r} did not answer {tool!r} within {limit:g} s; the call was cancelled"
                ) from None
            await self._teardown()
            self._dropped(f"it stopped answering (no answer to {tool!r} within {limit:g} s, nor to a check after it)")
            raise McpToolError(
                f"the MCP server {self.name!r} stopped answering and was stopped; it will be restarted on the next call"
            ) from None
        except MCPError as exc:
            auth = self._auth_message()
            if auth:
                raise McpToolError(f"the MCP server {self.name!r} refused the call to {tool!r}: {auth}") from None
            if exc.code == CONNECTION_CLOSED or self._owner is None or self._owner.done():
                await self._died(exc)
            raise McpToolError(
                f"the MCP server {self.name!r} refused the call to {tool!r}: {exc.message} (JSON-RPC error {exc.code})"
            ) from None
        except RuntimeError as exc:  # the SDK's check of structured content against the outputSchema
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise McpToolError(f"the MCP server {self.name!r} returned an unusable result for {tool!r}: {first}") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._owner is None or self._owner.done() or _is_broken(exc):
                await self._died(exc)
            raise McpToolError(
                f"the MCP server {self.name!r} failed during {tool!r}: {_describe(_leaf(exc))}"
            ) from None
        return result_value(result)

    async def fetch(self, what: str, target: str, arguments: dict[str, str] | None = None) -> Any:
        """``prompts/get`` (``what="prompt"``) or ``resources/read`` (``"resource"``), as text for the model or the user.

        Raises:
            McpToolError: the server is unavailable or refused; the message says which.
        """
        try:
            client = await self.ensure()
        except Unavailable as exc:
            raise McpToolError(f"the MCP server {self.name!r} is unavailable: {exc}") from None
        try:
            if what == "prompt":
                result = await asyncio.wait_for(client.get_prompt(target, arguments or {}), self.call_timeout)
                return render_prompt(result)
            result = await asyncio.wait_for(client.read_resource(target), self.call_timeout)
            return render_contents(result.contents)
        except asyncio.TimeoutError:
            raise McpToolError(f"the MCP server {self.name!r} did not answer for {what} {target!r} within {self.call_timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            leaf = _leaf(exc)
            detail = getattr(leaf, "message", None) or _describe(leaf)
            raise McpToolError(f"the MCP server {self.name!r} refused {what} {target!r}: {detail}") from None

    async def _died(self, exc: BaseException) -> None:
        await self._teardown()
        self._dropped(f"it stopped during a call ({_describe(_leaf(exc))})")
        raise McpToolError(
            f"the MCP server {self.name!r} stopped during the call; it will be restarted on the next call. "
            f"Details: {self.error}"
        ) from None

    async def _alive(self, client: Any) -> bool:
        if self._owner is None or self._owner.done():
            return False
        try:
            await asyncio.wait_for(client.list_tools(), min(_PROBE_TIMEOUT, self.startup_timeout, max(1.0, self.call_timeout)))
            return True
        except Exception:
            return False

    def status_value(self, tools: Iterable[str], skipped: Iterable[str]) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            transport=self.config.transport if self.target is None else "in-process",
            status=self.status,
            error=self.error,
            server_name=self.server_name,
            server_version=self.server_version,
            tools=tuple(tools),
            source=self.config.source,
            scope=self.config.scope,
            skipped=tuple(skipped),
            needs_auth=self.needs_auth,
            oauth=self._oauth_state(),
        )

    def _oauth_state(self) -> str | None:
        if not self.uses_oauth() or self.auth_home is None:
            return None
        from .oauth import signed_in

        return "signed in" if signed_in(self.auth_home, self.name, self.config.url or "") else "not signed in"


def render_contents(contents: Iterable[Any]) -> str:
    """Resource contents as text: each text as it is, a binary one named with its type and size."""
    out: list[str] = []
    for c in contents:
        d = _dump(c)
        if "text" in d:
            out.append(str(d["text"]))
        else:
            blob = str(d.get("blob", ""))
            out.append(f"[binary content {d.get('mimeType') or 'of unknown type'}, {len(blob) * 3 // 4} bytes, at {d.get('uri')}]")
    return "\n".join(out)


def render_prompt(result: Any) -> str:
    """A prompt's messages as one text: the user's alone as they are, else each under its role."""
    parts: list[tuple[str, str]] = []
    for msg in result.messages:
        d = _dump(msg.content)
        if d.get("type") == "text":
            text = str(d.get("text", ""))
        elif d.get("type") == "resource":
            text = render_contents([msg.content.resource])
        else:
            text = f"[{d.get('type')} content]"
        parts.append((str(msg.role), text))
    if all(role == "user" for role, _ in parts):
        return "\n\n".join(t for _, t in parts)
    return "\n\n".join(f"{role}: {t}" for role, t in parts)


def _is_broken(exc: BaseException) -> bool:
    import anyio

    leaf = _leaf(exc)
    return isinstance(leaf, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, EOFError, BrokenPipeError, ConnectionError))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, FileNotFoundError):
        return f"no such program: {exc.filename or text}"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@contextlib.asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str], timeout: float, on_response: Any = None, auth: Any = None
) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
        if on_response is not None:
            http.event_hooks["response"].append(on_response)
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def _env_seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "")
    try:
        ms = float(raw)
    except ValueError:
        return default
    return ms / 1000 if ms > 0 else default


class McpManager:
    """The MCP servers of one agent: start them, list their tools, call them, stop them.

    Usable from any thread. ``close()`` (also at interpreter exit) stops
    every server and leaves no child process behind.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerConfig] | Iterable[ServerConfig] = (),
        *,
        in_process: Mapping[str, Any] | None = None,
        cwd: str | None = None,
        environ: Mapping[str, str] | None = None,
        startup_timeout: float | None = None,
        call_timeout: float | None = None,
        notify: Callable[[str], None] | None = None,
        withhold: Iterable[str] = (),
        roots: Callable[[], Sequence[str]] | None = None,
        elicit: Callable[[str, str, dict[str, Any]], dict[str, Any] | None] | None = None,
        auth_home: str | None = None, allow_env: Iterable[str] = (), inherit: Mapping[str, str] | None = None,
    ):
        """
        Args:
            servers: configured servers (``config.load_servers``).
            in_process: ``{name: server}`` for servers living in this process
                (an ``mcp`` ``Server``/``MCPServer``, or a fastmcp server): tests
                and benchmarks.
            cwd: where stdio servers start.
            environ: for ``${VAR}`` expansion, the ``MCP_TIMEOUT`` /
                ``MCP_TOOL_TIMEOUT`` defaults (milliseconds, as in Claude Code)
                and ``MAX_MCP_OUTPUT_TOKENS`` (see ``limits``).
            notify: where warnings for the user go (a large output, a capped one).
            withhold: environment variables a stdio server must not inherit
                besides the provider keys (``env.server_environment``).
            roots: the directories offered to servers as roots (default: ``cwd``).
            elicit: asks the user a server's question ``(server, message,
                schema)`` and returns the answers or None (declined); without
                it every elicitation is declined (``-p``). Sampling requests
                are always declined: agentloop does not let servers call its model.
            auth_home: where OAuth tokens of remote servers are kept (the
                agentloop home); None turns OAuth off.
            allow_env: secret-named variables a stdio server may inherit (the user's ``allowedEnvVars``).
            inherit: what a stdio server inherits, judged by its host (the agent's child environment).
                ``self.output.spill_dir`` says where capped outputs are written.
        """
        env = os.environ if environ is None else environ
        self.output, warning = OutputLimit.from_env(env)
        self.output.notify = self._say
        self.notify = notify  # warnings for the user: a large output, a server that stopped, garbage on its stdout
        self.config_warnings: list[str] = [warning] if warning else []
        """Settings that were not honoured as written, each naming the setting."""
        self.startup_timeout = startup_timeout or _env_seconds(env, "MCP_TIMEOUT", DEFAULT_STARTUP_TIMEOUT)
        self.call_timeout = call_timeout or _env_seconds(env, "MCP_TOOL_TIMEOUT", DEFAULT_CALL_TIMEOUT)
        configs = list(servers.values()) if isinstance(servers, Mapping) else list(servers)
        self._servers: dict[str, _Server] = {cfg.name: _Server(
            cfg, cwd=cwd, environ=environ, startup_timeout=self.startup_timeout, call_timeout=self.call_timeout,
        ) for cfg in configs}
        for name, obj in (in_process or {}).items():
            target = getattr(obj, "_mcp_server", obj)  # a fastmcp server wraps an SDK Server
            cfg = ServerConfig(name, "stdio", command="<in-process>")
            self._servers[name] = _Server(
                cfg, target=target, cwd=cwd, environ=environ,
                startup_timeout=self.startup_timeout, call_timeout=self.call_timeout,
            )
        self.elicit = elicit
        self.on_progress: Callable[[str, str, str], None] | None = None
        """Told ``(server, tool, text)`` for each progress notification (the REPL's working line)."""
        if roots is None and cwd:
            roots = lambda: [cwd]  # noqa: E731
        self._roots, self._cwd, self._environ, self._inherit = roots, cwd, environ, inherit
        for srv in self._servers.values():
            srv.notify = self._say
            srv.withhold, srv.allow_env, srv.inherit = tuple(withhold), tuple(allow_env), inherit
            srv.roots = roots
            srv.elicit = self._elicit
            srv.on_progress = self._progress
            srv.auth_home = auth_home
        self._loop: LoopThread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._skipped: dict[str, dict[str, str]] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._server_of: dict[str, str] = {}
        self._inflight: set[concurrent.futures.Future[Any]] = set()
        self._arrived = 0  # servers that finished starting in the background: part of ``generation``
        _live.add(self)

    def start_on_the_host(self, environ: Mapping[str, str], inherit: Mapping[str, str]) -> None:
        """The servers a project's file did not configure (the user's, managed, the command line's) expand and
        start from these instead: the environment without what a project's settings set (record 0015)."""
        for srv in self._servers.values():
            if srv.target is None and srv.config.scope not in ("project", "local"):
                srv.environ, srv.inherit = environ, inherit

    def _elicit(self, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if self.elicit is None:
            return None
        return self.elicit(server, message, schema)

    def _progress(self, server: str, tool: str, text: str) -> None:
        if self.on_progress is not None:
            self.on_progress(server, tool, text)

    def _say(self, text: str) -> None:
        if self.notify is not None:
            with contextlib.suppress(Exception):
                self.notify(text)
        else:
            _log.warning("%s", text)

    # -- lifecycle --

    def _loop_thread(self) -> LoopThread:
        with self._lock:
            if self._closed:
                raise McpToolError("the MCP client was shut down")
            if self._loop is None:
                self._loop = LoopThread()
            return self._loop

    @property
    def names(self) -> list[str]:
        return list(self._servers)

    def start(self, names: Iterable[str] | None = None) -> None:
        """Start the servers (all, or ``names``) at the same time and wait for each to be up or failed.

        Never raises for a server's failure: see ``status()``.
        """
        chosen = [self._servers[n] for n in (names or self._servers) if n in self._servers]
        if not chosen:
            return
        loop = self._loop_thread()

        async def start_all() -> None:
            await asyncio.gather(*(_quiet(s.ensure()) for s in chosen))

        loop.call(start_all(), self.startup_timeout + 15)

    def start_in_background(self) -> None:
        """Start every server not started yet, at the same time, without waiting for any.

        Each one that ends up connected or failed adds one to ``generation``, so
        whoever watches it (``McpServers.changed_tools``) takes its tools in then.
        """
        chosen = [s for s in self._servers.values() if s.status == "pending"]
        if not chosen:
            return
        loop = self._loop_thread()

        async def start(s: _Server) -> None:
            await _quiet(s.ensure())
            self._arrived += 1  # on the loop's thread; read as a whole int from the others

        for s in chosen:
            fut = loop.submit(start(s))
            self._inflight.add(fut)
            fut.add_done_callback(self._inflight.discard)

    def add_sdk(self, names: Iterable[str]) -> list[str]:
        """Add an Agent SDK server (``"type": "sdk"``) for each of ``names`` not configured yet (the TypeScript
        SDK names its servers in ``initialize``, not in ``--mcp-config``). The names taken by a server of
        another type, which are left as they are."""
        taken = []
        for name in names:
            have = self._servers.get(name)
            if have is not None:
                if have.config.transport != "sdk" or have.target is not None:
                    taken.append(name)
                continue
            srv = self._servers[name] = _Server(ServerConfig(name, "sdk", source="initialize"), cwd=self._cwd,
                                                environ=self._environ, startup_timeout=self.startup_timeout,
                                                call_timeout=self.call_timeout)
            srv.notify, srv.roots, srv.elicit, srv.on_progress = self._say, self._roots, self._elicit, self._progress
        return taken

    def serve_sdk(self, send: SdkSend) -> list[str]:
        """Serve the ``"type": "sdk"`` servers over the Agent SDK's control channel (``send`` is its
        ``mcp_message`` request) and start them, waiting for each; their tools join at the next
        ``generation`` check. The names of those servers."""
        names = [s.name for s in self._servers.values() if s.config.transport == "sdk" and s.target is None]
        for name in names:
            srv = self._servers[name]
            srv.sdk_send = send
            if srv.status == "failed":
                srv.status, srv.error = "pending", None  # it failed only for want of the channel
        if names:
            self.start(names)
            self._arrived += 1
        return names

    def starting(self) -> list[str]:
        """The servers still on their way up (pending or connecting)."""
        return [s.name for s in self._servers.values() if s.status in ("pending", "connecting")]

    def close(self) -> None:
        """Stop every server and the loop. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop = self._loop
        for fut in list(self._inflight):
            fut.cancel()
        if loop is not None and loop.alive:

            async def close_all() -> None:
                await asyncio.gather(*(s.close() for s in self._servers.values()), return_exceptions=True)

            with contextlib.suppress(Exception):
                loop.call(close_all(), 20)
            loop.stop()
        _live.discard(self)

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tools --

    def tools(self, *, retry_failed: bool = True, start: bool = True) -> list[McpTool]:
        """The tools of every running server, as agentloop tools, servers in config order.

        With ``start``, servers never started are started (and waited for); with
        ``retry_failed`` so are servers that failed (each at most once per call).
        A server that is still failing, or still starting, contributes no tools and
        keeps its state in ``status()``.
        """
        want = [
            s.name for s in self._servers.values()
            if (start and s.status == "pending") or (retry_failed and s.status == "failed" and not s.tools)
        ]
        if want:
            self.start(want)
        out: list[McpTool] = []
        taken: set[str] = set()
        live = [s for s in self._servers.values() if s.status == "connected" or s.tools]
        self._names = model_names((s.name, t.name) for s in live for t in s.tools)
        self._server_of = {name: server for (server, _), name in self._names.items()}
        for s in self._servers.values():
            skipped: dict[str, str] = {}
            if s not in live:
                self._skipped[s.name] = skipped
                continue
            for t in s.tools:
                made = self._make_tool(s, t, taken, skipped)
                if made is not None:
                    taken.add(made.name)
                    out.append(made)
            self._skipped[s.name] = skipped
        return out

    def settle(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout`` s) for lists being fetched again after ``list_changed`` notifications."""
        pending = [t for s in self._servers.values() for t in s._refreshing]
        if not pending or self._loop is None or self._closed:
            return

        async def wait() -> None:
            await asyncio.wait(pending, timeout=timeout)

        with contextlib.suppress(Exception):
            self._loop.call(wait(), timeout + 1)

    def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> str:
        """A server's prompt, filled in with ``arguments``, as text.

        Raises:
            McpToolError: no such server, or it is unavailable or refused.
        """
        return str(self._fetch(server, "prompt", name, arguments))

    def read_resource(self, server: str, uri: str) -> str:
        """A server's resource as text (capped like a tool's output).

        Raises:
            McpToolError: no such server, or it is unavailable or refused.
        """
        return str(self.output.result(f"mcp__{_clean(server)}__resource", self._fetch(server, "resource", uri)))

    def _fetch(self, server: str, what: str, target: str, arguments: dict[str, str] | None = None) -> Any:
        s = self._servers.get(server)
        if s is None:
            raise McpToolError(f"no MCP server named {server!r}")
        fut = self._loop_thread().submit(s.fetch(what, target, arguments))
        self._inflight.add(fut)
        try:
            return _wait(fut, s.call_timeout + s.startup_timeout + 15, server, f"{what} {target}")
        finally:
            self._inflight.discard(fut)

    def sign_in(self, server: str, open_url: Callable[[str], None]) -> ServerStatus:
        """Sign in to a remote server (OAuth): ``open_url`` shows the authorization URL; waits for the redirect.

        Returns its status afterwards (``connected`` when it worked, with the reason when not).
        """
        s = self._servers.get(server)
        if s is None:
            raise McpToolError(f"no MCP server named {server!r}")
        if not s.uses_oauth():
            raise McpToolError(f"the MCP server {server!r} does not sign in with OAuth (it is not remote, or sends its own Authorization header)")
        from .oauth import SIGN_IN_TIMEOUT

        async def again() -> None:
            if s._lock is None:
                s._lock = asyncio.Lock()
            async with s._lock:
                saved = s.startup_timeout
                s.open_url, s.startup_timeout = open_url, SIGN_IN_TIMEOUT
                try:
                    await s._start()
                except Unavailable:
                    pass
                finally:
                    s.open_url, s.startup_timeout = None, saved

        self._loop_thread().call(again(), SIGN_IN_TIMEOUT + 30)
        return self.status_of(server)

    def sign_out(self, server: str) -> bool:
        """Forget a remote server's OAuth tokens and close its connection; True when there were tokens."""
        s = self._servers.get(server)
        if s is None or not s.uses_oauth() or s.auth_home is None:
            return False
        from .oauth import sign_out

        had = sign_out(s.auth_home, s.name, s.config.url or "")

        async def stop() -> None:
            await s._teardown()
            s.status, s.error, s.needs_auth = "failed", "signed out", True

        self._loop_thread().call(stop(), 30)
        return had

    def status_of(self, server: str) -> ServerStatus:
        return next(st for st in self.status() if st.name == server)

    def prompts(self) -> dict[str, list[Any]]:
        """Each connected server's prompts (``mcp_types.Prompt``), as last listed."""
        return {s.name: list(s.prompts) for s in self._servers.values() if s.status == "connected"}

    def resources(self) -> dict[str, list[Any]]:
        """Each connected server's resources (``mcp_types.Resource``), as last listed."""
        return {s.name: list(s.resources) for s in self._servers.values() if s.status == "connected"}

    @property
    def generation(self) -> int:
        """Changes whenever a server's tools, prompts or resources were fetched again (``list_changed``)."""
        return sum(s.generation for s in self._servers.values()) + self._arrived

    def name_of(self, server: str, tool: str) -> str:
        """The model-visible name of ``tool`` on ``server`` (``model_names``)."""
        return self._names.get((server, tool)) or tool_name(server, tool)

    def server_of(self, name: str) -> str | None:
        """The configured server of the MCP tool the model knows as ``name``; None for any other name."""
        return self._server_of.get(name)

    def _make_tool(self, s: _Server, t: Any, taken: set[str], skipped: dict[str, str]) -> McpTool | None:
        from agentloop.tools import InvalidToolSchema

        name = self.name_of(s.name, t.name)
        execution = getattr(t, "execution", None)
        if execution is not None and getattr(execution, "task_support", None) == "required":
            skipped[t.name] = "it can only run as a task (execution.taskSupport: required), which agentloop does not support"
            return None
        if name in taken:
            skipped[t.name] = f"the server lists a second tool named {t.name!r}"  # model_names keeps other names apart
            return None
        schema = dict(t.input_schema or {"type": "object"})
        annotations = _dump(t.annotations) if t.annotations is not None else {}
        server, remote = s.name, t.name

        def call(**arguments: Any) -> Any:
            return self.call(server, remote, arguments, name=name)

        call.__name__ = name
        call.__qualname__ = name
        try:
            return McpTool(
                name=name,
                description=t.description or t.title or t.name,
                parameters=_open_schema(schema),
                fn=call,
                read_only=bool(annotations.get("readOnlyHint", False)),
                fingerprint_override=s.fingerprint,
                server=s.name,
                remote_name=t.name,
                title=t.title,
                annotations=annotations,
                output_schema=t.output_schema,
                input_schema=schema,
            )
        except InvalidToolSchema as exc:
            skipped[t.name] = str(exc)
            return None

    def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None = None, *, name: str | None = None
    ) -> Any:
        """Call ``tool`` on ``server`` synchronously, from any thread but the loop's own.

        Returns:
            The value to record (``result_value``), capped by ``self.output``
            (``name``, the tool's agentloop name, is what the notices and the
            spilled file are named after).
        Raises:
            McpToolError: the call gave no result; the message is for the model.
        """
        s = self._servers.get(server)
        if s is None:
            raise McpToolError(f"no MCP server named {server!r}")
        loop = self._loop_thread()
        limit = s.call_timeout if timeout is None else timeout
        fut = loop.submit(s.call(tool, arguments, timeout))
        self._inflight.add(fut)
        label = name or self.name_of(server, tool)
        try:
            value = _wait(fut, limit + s.startup_timeout + _PROBE_TIMEOUT + 15, server, tool)
        except McpToolError as exc:
            message = str(exc)
            capped = self.output.error(label, message)
            if capped is message:
                raise
            raise McpToolError(capped) from None
        finally:
            self._inflight.discard(fut)
        return self.output.result(label, value)

    def cancel_all(self) -> int:
        """Cancel every call in flight (Ctrl+C). Returns how many were cancelled."""
        n = 0
        for fut in list(self._inflight):
            n += bool(fut.cancel())
        return n

    def status(self) -> list[ServerStatus]:
        out = []
        for s in self._servers.values():
            skipped = self._skipped.get(s.name, {})
            names = [self.name_of(s.name, t.name) for t in s.tools if t.name not in skipped]
            out.append(s.status_value(names, (f"{k}: {v}" for k, v in skipped.items())))
        return out


def _wait(fut: concurrent.futures.Future[Any], limit: float, server: str, tool: str) -> Any:
    """Wait for ``fut``, polling the run's interrupt flag so Ctrl+C cancels the call."""
    from agentloop.run import interrupt_flag

    flag = interrupt_flag()
    deadline = time.monotonic() + limit
    try:
        while True:
            if flag is not None and flag.is_set():
                fut.cancel()
                raise McpToolError(f"the call to {tool!r} on the MCP server {server!r} was cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                fut.cancel()
                raise McpToolError(f"the MCP server {server!r} did not answer {tool!r} in time; the call was cancelled")
            try:
                return fut.result(min(left, _POLL))  # in slices: a KeyboardInterrupt lands within one
            except concurrent.futures.TimeoutError:
                continue
            except concurrent.futures.CancelledError:
                raise McpToolError(f"the call to {tool!r} on the MCP server {server!r} was cancelled") from None
    except BaseException:
        fut.cancel()
        raise


_CURRENT: contextvars.ContextVar[_Server | None] = contextvars.ContextVar("agentloop_mcp_server", default=None)


class _GarbageFilter(logging.Filter):
    """Turns the SDK's traceback for each non-JSON stdout line into one notice per server (``saw_garbage``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Failed to parse JSONRPC message"):
            return True
        line = ""
        exc = record.exc_info[1] if record.exc_info else None
        with contextlib.suppress(Exception):
            line = str(exc.errors()[0].get("input", ""))  # type: ignore[union-attr]
        server = _CURRENT.get()
        if server is not None:
            server.saw_garbage(line)
            return False
        record.exc_info, record.exc_text = None, None  # no traceback, whoever the server is
        record.msg, record.args = "an MCP server printed a line on stdout that is not JSON-RPC: %r", (line[:120],)
        return True


logging.getLogger("mcp.client.stdio").addFilter(_GarbageFilter())


class _OneLineFilter(logging.Filter):
    """The SDK's tracebacks from a remote transport (an SSE server that answers without ``text/event-stream``...)
    become one debug line: the failure reaches the user as the server's status, agentloop's one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None or record.levelno >= logging.WARNING:
            text = record.getMessage() + (f": {type(exc).__name__}: {exc}" if exc is not None else "")
            record.msg, record.args = "MCP SDK: %s", (" ".join(text.split())[:300],)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


for _name in ("mcp.client.sse", "mcp.client.streamable_http"):
    logging.getLogger(_name).addFilter(_OneLineFilter())


async def _quiet(aw: Any) -> None:
    with contextlib.suppress(Exception):
        await aw


_live: weakref.WeakSet[McpManager] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for m in list(_live):
        with contextlib.suppress(Exception):
            m.close()

