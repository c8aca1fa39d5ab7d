"""What both adapters share: the HTTP call, the stream pump, retries and fallback.

Theory of operation. A vendor adapter (``openai_compat.py``, ``anthropic.py``)
knows only its wire format: the URL and headers, the request body built from
the neutral messages, an ``Assembler`` that turns SSE events into a
``Turn``, and how to read an error response into a ``ProviderError``.
``HTTPModel`` does the rest, the same way for both, sync and async.

The retry policy, in order:

- 429: wait ``retry-after`` (or ``retry-after-ms``; else back off) and retry.
  A 429 that says the account is out of quota is fatal, not retried.
- 5xx, 529 ``overloaded``, a dropped connection, a stream cut short, a stall
  (no SSE event for ``stall_timeout`` seconds), a malformed event: back off
  with full jitter (``backoff_base * 2**n`` capped at ``backoff_max``) and
  retry, up to ``max_attempts`` per model; then, when a fallback model is set,
  try it (with a notice), else fail.
- A 400 that says the input plus ``max_tokens`` passes the model's context
  window and gives the figures (``kind="context"``): retried at once asking for
  the output that fits (``_Attempts.room``), which only lowers the spend.
- A 401 from a model whose credentials can be had anew (``renew_credentials``: an
  ``apiKeyHelper``'s key, Vertex's Google token): new credentials once, and the
  call retried once with them, outside ``max_attempts``; a second 401 is final.
- Any other 400, 401/403 (authentication), 404, a body that is not an event stream:
  fatal at once, with the reason.

The budget covers retries. The loop reserves one call: the bound of its input
(at the dearest input rate of the model and its fallbacks) plus
``max_output_tokens``. An attempt that failed after its stream started
may have been billed; its tokens are added to the reply's usage (so the loop
records what was spent), and the next attempt's ``max_tokens`` shrinks by
them, counting wasted input tokens as output tokens (input, even a cache
write, is never dearer than output in any price table we know; a wasted
attempt whose usage was not reported counts its request's bytes). So the sum of every attempt costs
no more than the one reservation. When nothing is left to shrink to, the
call fails with ``kind="budget"`` instead of retrying.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson

from ..budget import IMAGE_TOKENS, MAX_REPORTED_TOKENS, Price, dearest, output_left
from ..events import ModelReply, ModelRequest, ToolCall, Usage
from ..model_description import ModelDescription
from .bounded import ACCEPT_ENCODING, BodyDecoder, araw_body, aread_capped, raw_body, read_capped
from .errors import ProviderError, scrub
from .record import ProviderRecord
from .sse import SSEDecoder

if TYPE_CHECKING:  # loaded when a model first calls (rule 4 of record.py: the registry loads no HTTP client)
    import httpx

__all__ = ["Assembler", "HTTPModel", "RetryPolicy", "StreamError", "Target", "Turn", "UsageError", "reported_count"]

log = logging.getLogger("agentloop.providers")


async def _asleep(seconds: float) -> None:
    """``asyncio.sleep``, with asyncio loaded when a retry first waits (the registry loads this module at every start)."""
    import asyncio

    await asyncio.sleep(seconds)


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    """Attempts per model (the first try included) before falling back or failing."""
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    max_retry_after: float = 60.0
    """A longer ``retry-after`` is cut to this."""
    stall_timeout: float = 30.0
    """Seconds without progress (an event that carries something: pings and empty chunks do not count) before a
    stream is aborted and retried."""
    call_deadline: float = 600.0
    """Seconds one attempt may take in all, however its bytes arrive (Claude Code's ``API_TIMEOUT_MS`` default)."""
    connect_timeout: float = 10.0
    sleep: Callable[[float], None] = time.sleep
    asleep: Callable[[float], Any] = _asleep
    rand: Callable[[], float] = random.random

    def delay(self, attempt: int, err: ProviderError) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if err.retry_after is not None:
            return max(0.0, min(err.retry_after, self.max_retry_after))
        cap = min(self.backoff_max, self.backoff_base * (2.0 ** (attempt - 1)))
        return self.rand() * cap


class StreamError(Exception):
    """An assembler met an error event in the stream (e.g. Anthropic's ``overloaded_error``)."""

    def __init__(self, message: str, kind: str, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class UsageError(Exception):
    """A usage the provider reported that no bill can be settled from (``reported_count``)."""


def reported_count(usage: object, key: str, *, required: bool = False) -> int:
    """One token count of a provider's usage object, checked: a whole number from 0 to
    ``MAX_REPORTED_TOKENS``; absent is 0 unless ``required``.

    Raises:
        UsageError: the usage is not an object, or the count is missing (when required), negative, not a
            whole number, or past any real bound.
    """
    if not isinstance(usage, Mapping):
        raise UsageError(f"its usage is {type(usage).__name__}, not an object")
    v = usage.get(key)
    if v is None:
        if required:
            raise UsageError(f"its usage has no {key}")
        return 0
    if isinstance(v, float) and v.is_integer() and abs(v) <= MAX_REPORTED_TOKENS:
        v = int(v)
    if type(v) is not int:
        raise UsageError(f"its usage {key} is {str(v)[:40]!r}, not a whole number")
    if v < 0:
        raise UsageError(f"its usage {key} is negative ({v})")
    if v > MAX_REPORTED_TOKENS:
        raise UsageError(f"its usage {key} is {v}, past any real bound")
    return v


def output_allowance(max_tokens: int) -> int:
    """The most output tokens a reply to a call allowed ``max_tokens`` may report: a tenth and 64 more,
    for providers that count differently (thinking, stop sequences); past it the figure is not believed."""
    return max_tokens + max_tokens // 10 + 64


MAX_REPLY_CHARS = 2 << 20
"""No streamed reply is read past this many characters, whatever its max_tokens: with its continuations
and escapes, the records that hold it stay far below the transcript's line limit."""

RAW_KEEP_BYTES = 16 << 20
"""At most this much of a stream's bytes is kept for its ``raw`` record."""

ERROR_BODY_BYTES = 64 << 10
"""At most this much of an error response's decoded body is read (its message is near the start)."""

MAX_REPLY_BYTES = 16 << 20
"""The most bytes a reply's kept parts (text, tool calls, reasoning blocks with their signatures) may take as
JSON: with its ``raw`` record (``RAW_KEEP_BYTES``) its ``model_turn`` stays under the transcript's line limit."""


@dataclass(frozen=True)
class StreamLimit:
    """How much of one streamed reply is read before it is cut (a provider that ignores ``max_tokens``).

    Output arrives as text, not tokens, so the limit is in characters: 64 for each token the call allows
    (``output_allowance``; no tokenizer we know has a longer token), at least 64K and at most
    ``MAX_REPLY_CHARS``. The stream's bytes (framing included) are cut at 64 times that and 16 MiB more,
    and one event at 16 MiB: memory and time stay bounded whatever the server sends.
    """

    chars: int
    bytes: int
    event_bytes: int = 16 << 20

    @classmethod
    def for_max_tokens(cls, max_tokens: int) -> StreamLimit:
        chars = min(max(64 << 10, 64 * output_allowance(max(0, max_tokens))), MAX_REPLY_CHARS)
        return cls(chars, 64 * chars + (16 << 20))


@dataclass
class Turn:
    """One HTTP call's assembled answer, before it becomes a ``ModelReply``."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    cut_tool: str | None = None
    """The name of a tool call whose arguments never completed (cut at max_tokens)."""
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    """The vendor's reasoning blocks as received (Anthropic's ``thinking``, with signatures)."""
    response_id: str | None = None
    """The provider's id of the response (traced, not recorded)."""


class EventDecoder(Protocol):
    """What frames a stream into events: ``sse.SSEDecoder``, or a platform's own framing (``bedrock.py``)."""

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]: ...

    def close(self) -> list[tuple[str, bytes]]: ...

    @property
    def pending(self) -> bytes | int:
        """The bytes of an event not yet complete (or how many there are)."""
        ...


class Assembler:
    """Turns one stream's events into a ``Turn``. Subclasses know the vendor's events."""

    started: bool = False
    """An event showed the server began answering: the attempt may be billed."""
    done: bool = False
    """The stream's final event arrived."""
    out_chars: int = 0
    """Characters of output received so far (text, tool-call arguments, thinking)."""
    kept_chars: int = 0
    """Characters kept beside the output (signatures, blocks that arrive whole): held to the same limit."""
    received: int = 0
    """Bytes of the stream received so far."""
    limit: StreamLimit | None = None
    """Where the stream is cut (set by the model for each attempt)."""
    response_id: str | None = None
    """The provider's id of the response, once an event carried it."""
    idle: bool = False
    """The last event carried nothing (a ping, a chunk with no choices): it is not progress."""
    thought: dict[str, Any] | None = None
    """A thinking block the last event ended, for the request's ``on_thinking`` (taken and cleared)."""

    def feed(self, event: str, data: bytes) -> str | None:
        """Take one event; return a text delta to show, if it carries one."""
        raise NotImplementedError

    def from_json(self, body: bytes) -> Turn:
        """A whole non-streamed response (a server that ignored ``stream``)."""
        raise NotImplementedError

    def turn(self) -> Turn:
        raise NotImplementedError

    def billed_so_far(self, request_bytes: int) -> Usage:
        """What an aborted attempt may have cost: reported figures, else estimates."""
        raise NotImplementedError


def _hand_thought(asm: Assembler, request: ModelRequest) -> None:
    """A thinking block that ended, to the request's ``on_thinking`` (shown before the text after it)."""
    thought, asm.thought = asm.thought, None
    if thought is not None and request.on_thinking is not None:
        request.on_thinking(thought)


@dataclass(frozen=True)
class Target:
    """One model at one endpoint with one key: the primary, or the fallback."""

    vendor: str
    model: str
    base_url: str
    api_key: str | None = field(repr=False)
    auth_token: str | None = field(default=None, repr=False)
    """A gateway's bearer token (Claude Code's ``ANTHROPIC_AUTH_TOKEN``), sent as ``Authorization: Bearer``."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Headers the user's environment adds for this endpoint (``ANTHROPIC_CUSTOM_HEADERS``, ``OpenAI-Organization``)."""
    key_source: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    """Where the key came from when a command gives it (Claude Code's ``apiKeyHelper``): asked again before each
    request (it re-runs after its TTL) and, when it has a ``renew`` method, made to run again after a 401."""
    retired: tuple[str, ...] = field(default=(), repr=False)
    """Keys this target held before its ``key_source`` gave new ones: still scrubbed from every message."""

    @property
    def secrets(self) -> list[str]:
        """What must never appear in a message, a record or a child: the key, the token, the keys it held
        before, and the values of headers whose names look secret (``X-Gateway-Key``, ``Proxy-Authorization``)."""
        from ..config.credentials import secret_named

        held = [v for k, v in self.headers.items() if secret_named(k.replace("-", "_"))]
        return [s for s in (self.api_key, self.auth_token, *self.retired, *held) if s]


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    v = headers.get("retry-after")
    if not v:
        return None
    try:
        return float(v)
    except ValueError:
        pass
    try:
        # loaded when a server names a date, not at every start
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _json_error_message(body: bytes) -> tuple[str, str]:
    """(error type or code, message) from a vendor's JSON error body, best effort."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "", body[:300].decode("utf-8", "replace").strip()
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        kind = str(err.get("code") or err.get("type") or "")
        return kind, str(err.get("message") or "")
    if isinstance(err, str):
        return "", err
    return "", body[:300].decode("utf-8", "replace").strip()


class HTTPModel:
    """A model behind an HTTP API. Subclasses set ``vendor`` and the wire-format hooks."""

    vendor = ""
    stream_content_type = "text/event-stream"
    system_apart = False
    """The wire format takes the system prompt apart from the chat (telemetry groups it so)."""
    record: ProviderRecord | None = None
    """The provider's record (``providers/record.py``), set when the model is opened through the registry."""

    @property
    def telemetry_name(self) -> str:
        """``gen_ai.provider.name`` as the provider's record declares it (the vendor when opened without one)."""
        return self.record.telemetry_name if self.record is not None else self.vendor

    def __init__(
        self,
        target: Target,
        *,
        fallback: HTTPModel | None = None,
        transport: httpx.BaseTransport | None = None,
        policy: RetryPolicy | None = None,
        record_raw: bool = False,
        on_notice: Callable[[str], None] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        temperature: float | None = None,
        thinking_budget: int | None = None,
        reasoning_effort: str | None = None,
    ):
        self.target = target
        self.name = target.model
        """The name the price table knows this model by."""
        self.fallback = fallback
        self.transport = transport
        self.policy = policy or RetryPolicy()
        self.record_raw = record_raw
        self.on_notice = on_notice
        self.extra_headers = dict(extra_headers or {})
        self.temperature = temperature
        self.thinking_budget = thinking_budget
        """Anthropic: extended thinking's ``budget_tokens`` (None: not asked for). Others ignore it."""
        self.reasoning_effort = reasoning_effort
        """OpenAI: ``reasoning_effort`` (None: not sent). Others ignore it."""
        self._active: HTTPModel | None = None
        """The fallback, once the primary has failed for good."""
        self._client: httpx.Client | None = None
        self.price: Price | None = None
        """This model's price (set by ``open_model``): a dearer fallback is given fewer tokens."""
        self.max_continuations = 0
        """Turns cut at max tokens that the loop may continue (read by ``run.make_config``)."""
        self.fallback_on: frozenset[str] | None = None
        """The kinds of failure (``ProviderError.kind``) that pass to the fallback; None: any that is retried."""
        self.attempts = 0
        """HTTP calls made, retries included (for tests and progress displays)."""

    counts_tokens = False
    """The vendor counts input tokens exactly (``count_tokens``); a subclass says so."""
    @property
    def max_image_tokens(self) -> int:
        """At most how many tokens one image costs with this vendor; a subclass says its own."""
        return IMAGE_TOKENS

    @property
    def description(self) -> ModelDescription:
        """This model and its fallbacks as the drivers see them (``model_description``), from what it declares."""
        fb = self.fallback.description if self.fallback is not None else None
        mine = ModelDescription(self.name, self.vendor, (), self.max_continuations, self.max_image_tokens, self.counts_tokens, self.price)
        return mine if fb is None else mine.then(fb)

    # --- the wire format: subclasses --------------------------------------

    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def assembler(self) -> Assembler:
        raise NotImplementedError

    def classify(self, status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
        """An error response as a ``ProviderError``; subclasses refine (quota, overloaded)."""
        code, msg = _json_error_message(body)
        where = f"{self.vendor} {self.target.model} at {self.target.base_url}"
        detail = f": {msg}" if msg else ""
        if status == 429:
            return self._err(f"rate limited (429) by {where}{detail}", "rate_limit", True, status, parse_retry_after(headers))
        if status in (401, 403):
            return self._err(
                f"authentication failed ({status}) at {where}{detail}; check {self.key_hint()}", "auth", False, status
            )
        if status == 529 or code == "overloaded_error":
            return self._err(f"{where} is overloaded ({status}){detail}", "overloaded", True, status, parse_retry_after(headers))
        if status >= 500 or status in (408, 409):
            return self._err(f"server error {status} from {where}{detail}", "server", True, status, parse_retry_after(headers))
        if status == 404:
            return self._err(f"not found (404) at {where}{detail}: check the model name and --base-url", "bad_request", False, status)
        return self._err(f"request refused ({status}) by {where}{detail}", "bad_request", False, status)

    def key_hint(self) -> str:
        return "the API key"

    def _context_error(self, err: ProviderError, limit: int, used: int) -> ProviderError:
        """A 400 saying the input plus ``max_tokens`` passes the window of ``limit`` tokens, the input
        taking ``used``: retried at once with what fits (less output, never more spend), else final."""
        room = limit - used - 16
        if room < 1:
            return self._err(f"{err}: the conversation alone fills the model's context window", "context", False, err.status)
        out = self._err(f"{err}: asking for at most {room} output tokens instead", "context", True, err.status, 0.0)
        out.room = room
        return out

    # --- shared machinery ---------------------------------------------------

    def secrets(self) -> list[str]:
        """What no message, notice or raw record of this adapter may show: the target's key, token and secret
        headers (``Target.secrets``); a platform adapter adds what it signs with (Bedrock, Vertex)."""
        return self.target.secrets

    def _err(
        self,
        msg: str,
        kind: str,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        billed: bool = False,
    ) -> ProviderError:
        return ProviderError(
            scrub(msg, self.secrets()), kind=kind, retryable=retryable, status=status, retry_after=retry_after, billed=billed
        )

    def _notice(self, text: str) -> None:
        clean = scrub(text, self.secrets())
        text = text.with_text(clean) if isinstance(text, RetryNotice) else clean
        log.warning("%s", text)
        if self.on_notice is not None:
            self.on_notice(text)

    def _timeout(self) -> httpx.Timeout:
        import httpx
        p = self.policy
        return httpx.Timeout(connect=p.connect_timeout, read=p.stall_timeout, write=p.stall_timeout, pool=p.connect_timeout)

    def client(self) -> httpx.Client:
        import httpx
        if self._client is None:
            self._client = httpx.Client(transport=self.transport, timeout=self._timeout())
        return self._client

    def aclient(self) -> httpx.AsyncClient:
        """A new async client for one call: an async client belongs to one event loop, and one
        left open is finalized at an arbitrary moment, so each call opens and closes its own."""
        import httpx
        t = self.transport
        at = t if isinstance(t, httpx.AsyncBaseTransport) else None
        return httpx.AsyncClient(transport=at, timeout=self._timeout())

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.fallback is not None:
            self.fallback.close()

    def refresh_key(self) -> None:
        """Take the key its ``key_source`` gives now (an ``apiKeyHelper`` re-run after its TTL); before each request.

        Raises:
            ProviderError: the source gives no key (kind ``auth``, the source's one-line reason).
        """
        source = self.target.key_source
        if source is not None:
            self._use_key(self._ask(source))

    def renew_credentials(self) -> bool:
        """After a 401: have the credentials made anew once (the key source run again); True when there are new
        ones to retry with. A platform with its own credentials says how (``vertex.py``).

        Raises:
            ProviderError: the source gives no key (kind ``auth``).
        """
        renew = getattr(self.target.key_source, "renew", None)
        if renew is None:
            return False
        old = self.target.api_key
        self._use_key(self._ask(renew))
        return self.target.api_key != old

    def _ask(self, source: Callable[[], str]) -> str:
        try:
            return source()
        except ProviderError:
            raise
        except Exception as exc:  # the helper's ProviderConfigError: its one line names the file that set it
            raise self._err(str(exc), "auth", False) from None

    def _use_key(self, key: str) -> None:
        """Send ``key`` from now on (as the key and as the bearer token, as a helper's key goes), keeping the
        old one among the secrets scrubbed."""
        import dataclasses

        t = self.target
        if key != t.api_key:
            gone = tuple(s for s in (t.api_key, t.auth_token) if s and s != key and s not in t.retired)
            self.target = dataclasses.replace(t, api_key=key, auth_token=key, retired=(*t.retired, *gone))

    def _prepare(self, request: ModelRequest, max_tokens: int) -> tuple[str, dict[str, str], bytes]:
        self.refresh_key()
        body = orjson.dumps(self.body(request, max_tokens))
        h = {"content-type": "application/json", "accept": self.stream_content_type, "accept-encoding": ACCEPT_ENCODING,
             **self.headers(), **self.target.headers, **self.extra_headers}
        url = self.url()
        return url, self.sign(url, h, body), body

    def sign(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """The headers a request goes with, once its body is known (a platform that signs requests: ``bedrock.py``).

        Raises:
            ProviderError: the credentials cannot be had (kind ``auth``).
        """
        return headers

    def stream_decoder(self) -> EventDecoder:
        """What frames this vendor's stream into events: SSE, unless a subclass says otherwise."""
        return SSEDecoder()

    def raw_text(self, raw: list[bytes]) -> str:
        """A stream's bytes as its ``raw`` record keeps them (text as text; a binary framing may say otherwise)."""
        return b"".join(raw).decode("utf-8", "replace")

    def _check_response(self, status: int, headers: httpx.Headers, body_if_error: bytes | None) -> None:
        if status != 200:
            raise self.classify(status, headers, body_if_error or b"")

    def _content_kind(self, headers: httpx.Headers) -> str:
        ct = headers.get("content-type", "").split(";")[0].strip().lower()
        if ct == self.stream_content_type:
            return "sse"
        if ct == "application/json":
            return "json"
        raise self._err(
            f"{self.target.base_url} answered with content type {ct or 'none'!r}, not an event stream: "
            "is --base-url pointing at the API (for OpenAI-compatible servers it usually ends in /v1)?",
            "content_type",
            False,
        )

    # --- one attempt ----------------------------------------------------------

    def _decoder(self, headers: Mapping[str, str]) -> BodyDecoder:
        try:
            return BodyDecoder(headers)
        except ValueError as exc:
            raise self._err(f"{self.target.base_url} answered with {exc}", "content_type", False) from None

    def _check_body(self, got: bytearray, max_tokens: int, clock: list[float] | None = None) -> None:
        """A whole JSON response (a server that ignored ``stream``) is read no further than its reply could
        need: eight bytes for each character a stream may carry (escapes included), and 1 MiB more; and for
        no longer than the call's deadline."""
        if clock is not None and time.monotonic() - clock[1] > self.policy.call_deadline:
            raise self._err(f"{self.target.base_url} took more than {self.policy.call_deadline:g}s for one call", "deadline", False)
        limit = 8 * StreamLimit.for_max_tokens(max_tokens).chars + (1 << 20)
        if len(got) > limit:
            err = self._err(f"{self.vendor} {self.target.model} at {self.target.base_url} kept sending: a response body past {limit} bytes",
                            "runaway", False)
            err.unaccounted = True
            raise err

    def _pump_start(self, max_tokens: int) -> tuple[EventDecoder, Assembler, list[bytes]]:
        asm = self.assembler()
        asm.limit = StreamLimit.for_max_tokens(max_tokens)
        return self.stream_decoder(), asm, []

    def _bounded(self, dec: EventDecoder, asm: Assembler) -> None:
        """Cut a stream that ran past its ``StreamLimit``: billed, and charged at the call's reservation."""
        lim = asm.limit
        if lim is None:
            return
        if asm.out_chars + asm.kept_chars > lim.chars:
            why = f"{asm.out_chars + asm.kept_chars} characters of output, past what its max_tokens allows ({lim.chars})"
        elif asm.received > lim.bytes:
            why = f"{asm.received} bytes of stream, past {lim.bytes}"
        elif _size(dec.pending) > lim.event_bytes:
            why = f"an event of more than {lim.event_bytes} bytes"
        else:
            return
        err = self._err(f"{self.vendor} {self.target.model} at {self.target.base_url} kept streaming: cut after {why}",
                        "runaway", False)
        err.unaccounted = True
        raise err

    def _pump(
        self, dec: EventDecoder, asm: Assembler, chunk: bytes, raw: list[bytes], request: ModelRequest, last_event: list[float]
    ) -> None:
        """Feed one piece of the stream; ``last_event`` is (the last progress, the attempt's start)."""
        asm.received += len(chunk)
        if self.record_raw and asm.received <= RAW_KEEP_BYTES:
            raw.append(chunk)
        events = dec.feed(chunk)
        self._feed_events(events, asm, request)
        now = time.monotonic()
        if events and not asm.idle:
            last_event[0] = now
        elif now - last_event[0] > self.policy.stall_timeout:
            raise self._err(f"no progress from {self.target.base_url} for {self.policy.stall_timeout:g}s (pings and empty "
                            "chunks are not progress)", "stall", True, billed=asm.started)
        if now - last_event[1] > self.policy.call_deadline:
            raise self._err(f"{self.target.base_url} took more than {self.policy.call_deadline:g}s for one call",
                            "deadline", False, billed=asm.started)
        self._bounded(dec, asm)

    def _feed_events(self, events: list[tuple[str, bytes]], asm: Assembler, request: ModelRequest) -> None:
        on_text = request.on_text
        idle = True
        for ev, data in events:
            try:
                delta = asm.feed(ev, data)
            except StreamError as exc:
                raise self._err(str(exc), exc.kind, exc.retryable, retry_after=exc.retry_after, billed=asm.started) from None
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise self._err(
                    f"malformed {ev!r} event from {self.target.base_url}: {type(exc).__name__}: {str(exc)[:200]}",
                    "malformed",
                    True,
                    billed=asm.started,
                ) from None
            idle = idle and asm.idle
            if delta and on_text is not None:
                on_text(delta)
            if asm.thought is not None:
                _hand_thought(asm, request)
        asm.idle = idle

    def _pump_end(self, dec: EventDecoder, asm: Assembler, request: ModelRequest, limits: tuple[int, int]) -> Turn:
        for ev, data in dec.close():
            try:
                delta = asm.feed(ev, data)
            except StreamError as exc:
                raise self._err(str(exc), exc.kind, exc.retryable, retry_after=exc.retry_after, billed=asm.started) from None
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise self._err(f"malformed {ev!r} event from {self.target.base_url}: {exc}", "malformed", True, billed=asm.started) from None
            if delta and request.on_text is not None:
                request.on_text(delta)
            if asm.thought is not None:
                _hand_thought(asm, request)
        if not asm.done:
            raise self._err(
                f"the stream from {self.target.base_url} ended before its final event", "cut", True, billed=asm.started
            )
        return self._checked(asm.turn, limits)

    def _checked(self, make: Callable[[], Turn], limits: tuple[int, int]) -> Turn:
        """The assembled turn, its usage believed only as far as the request allowed: ``limits`` is (the
        attempt's max_tokens, its body's bytes). Output past max_tokens and its margin is a usage error
        (``unaccounted``); input past the reservation's bound is the loop's to catch (an ``overrun``: a
        provider that inflates input is billing, and the bill is recorded as it says)."""
        try:
            turn = make()
        except UsageError as exc:
            raise self._usage_error(str(exc)) from None
        kept = len(turn.text.encode("utf-8", "surrogatepass")) + len(orjson.dumps([c.arguments for c in turn.tool_calls]))
        kept += len(orjson.dumps(turn.reasoning))
        if kept > MAX_REPLY_BYTES:  # no record may pass the transcript's line limit: the reply is refused, billed
            err = self._err(f"{self.vendor} {self.target.model} at {self.target.base_url} sent a reply of {kept} bytes "
                            f"(text, calls and reasoning blocks), past {MAX_REPLY_BYTES}", "runaway", False)
            err.unaccounted = True
            raise err
        u = turn.usage
        if u is not None:
            max_tokens = limits[0]
            if u.output_tokens > output_allowance(max_tokens):
                raise self._usage_error(f"it reported {u.output_tokens} output tokens for a call allowed {max_tokens}")
        return turn

    def _usage_error(self, why: str) -> ProviderError:
        """A reply billed with figures no one can settle from: a final error the loop charges at the call's reservation."""
        err = self._err(f"{self.vendor} {self.target.model} at {self.target.base_url} answered with a usage that cannot be billed: {why}",
                        "usage", False)
        err.unaccounted = True
        return err

    def _transport_error(self, exc: httpx.HTTPError, asm: Assembler | None) -> ProviderError:
        import httpx
        started = asm is not None and asm.started
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return self._err(f"cannot connect to {self.target.base_url}: {exc}", "connect", True)
        if isinstance(exc, httpx.TimeoutException):
            return self._err(
                f"no event from {self.target.base_url} for {self.policy.stall_timeout:g}s: the stream was aborted",
                "stall",
                True,
                billed=started,
            )
        return self._err(f"the connection to {self.target.base_url} broke: {type(exc).__name__}: {exc}", "cut", True, billed=started)

    def _attempt(self, request: ModelRequest, max_tokens: int) -> tuple[Turn, list[bytes]]:
        import httpx
        url, headers, body = self._prepare(request, max_tokens)
        self.attempts += 1
        asm: Assembler | None = None
        try:
            with self.client().stream("POST", url, headers=headers, content=body) as resp:
                body_raw, encoded = raw_body(resp)
                if resp.status_code != 200:
                    err_body = read_capped(body_raw, encoded, ERROR_BODY_BYTES, self.policy.stall_timeout)
                    raise self.classify(resp.status_code, resp.headers, err_body)
                kind, decoder = self._content_kind(resp.headers), self._decoder(encoded)
                last = [time.monotonic()] * 2
                if kind == "json":
                    a = self.assembler()
                    got = bytearray()
                    for raw_chunk in body_raw:
                        for part in decoder.feed(raw_chunk):
                            got += part
                            self._check_body(got, max_tokens, last)
                    return self._from_json(a, bytes(got), (max_tokens, len(body))), []
                dec, asm, raw = self._pump_start(max_tokens)
                for raw_chunk in body_raw:
                    for chunk in decoder.feed(raw_chunk):
                        self._pump(dec, asm, chunk, raw, request, last)
                return self._pump_end(dec, asm, request, (max_tokens, len(body))), raw
        except httpx.HTTPError as exc:
            raise self._with_partial(self._transport_error(exc, asm), asm, len(body)) from None
        except ProviderError as err:
            raise self._with_partial(err, asm, len(body)) from None

    async def _aattempt(self, request: ModelRequest, max_tokens: int) -> tuple[Turn, list[bytes]]:
        import httpx
        url, headers, body = self._prepare(request, max_tokens)
        self.attempts += 1
        asm: Assembler | None = None
        try:
            async with self.aclient() as client, client.stream("POST", url, headers=headers, content=body) as resp:
                abody_raw, encoded = araw_body(resp)
                if resp.status_code != 200:
                    err_body = await aread_capped(abody_raw, encoded, ERROR_BODY_BYTES, self.policy.stall_timeout)
                    raise self.classify(resp.status_code, resp.headers, err_body)
                kind, decoder = self._content_kind(resp.headers), self._decoder(encoded)
                last = [time.monotonic()] * 2
                if kind == "json":
                    a = self.assembler()
                    got = bytearray()
                    async for raw_chunk in abody_raw:
                        for part in decoder.feed(raw_chunk):
                            got += part
                            self._check_body(got, max_tokens, last)
                    return self._from_json(a, bytes(got), (max_tokens, len(body))), []
                dec, asm, raw = self._pump_start(max_tokens)
                async for raw_chunk in abody_raw:
                    for chunk in decoder.feed(raw_chunk):
                        self._pump(dec, asm, chunk, raw, request, last)
                return self._pump_end(dec, asm, request, (max_tokens, len(body))), raw
        except httpx.HTTPError as exc:
            raise self._with_partial(self._transport_error(exc, asm), asm, len(body)) from None
        except ProviderError as err:
            raise self._with_partial(err, asm, len(body)) from None

    def _from_json(self, asm: Assembler, body: bytes, limits: tuple[int, int]) -> Turn:
        def whole() -> Turn:
            try:
                return asm.from_json(body)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise self._err(f"malformed JSON response from {self.target.base_url}: {exc}", "malformed", True) from None

        return self._checked(whole, limits)

    # --- the policy -----------------------------------------------------------

    def _chain_price(self) -> Price | None:
        """The dearest price over this model and its fallbacks, field by field: the loop reserves at it
        (``loop._dearest``). None when a price is not known (``open_model`` without ``prices``)."""
        ps = [m.price for m in self.description.chain]
        return None if None in ps else dearest(p for p in ps if p is not None)

    def _next_max_tokens(self, request: ModelRequest, wasted: Usage, primary: HTTPModel | None = None) -> int:
        """``max_tokens`` for the next attempt: what the reservation has left after billed failures
        (``budget.output_left``, at the chain's dearest price)."""
        return output_left(request.max_output_tokens, wasted, (primary or self)._chain_price())

    def _reply(self, turn: Turn, wasted: Usage, raw: list[bytes]) -> ModelReply:
        finish = turn.finish_reason
        if turn.cut_tool is not None:
            # A call cut inside its arguments cannot run. Hand back what came before it as a reply
            # cut at max tokens: the loop continues it (a new turn, reserved like any other, the
            # text and reasoning so far sent back), so the model writes the call again with the
            # whole room the thinking and text no longer take. Past max_continuations the run
            # stops with the text instead of an error.
            self._notice(
                f"the reply was cut at max_tokens inside the arguments of a call to {turn.cut_tool!r}; "
                "continuing it (--max-output-tokens or maxOutputTokens gives more room)"
            )
            finish = "max_tokens"
        usage = turn.usage
        if wasted.total:
            usage = (usage or Usage()) + wasted
        raw_out: Any = None
        if self.record_raw:
            raw_out = {"vendor": self.vendor, "stream": scrub(self.raw_text(raw), self.secrets())}
        return ModelReply(
            text=turn.text,
            tool_calls=() if turn.cut_tool is not None else tuple(turn.tool_calls),
            usage=usage,
            model=turn.model or self.target.model,
            finish_reason=finish,
            raw=raw_out,
            reasoning=tuple(turn.reasoning),
            response_id=turn.response_id,
        )

    def _after_failure(
        self, err: ProviderError, attempt: int, wasted: Usage, request: ModelRequest, partial: Usage, primary: HTTPModel | None = None
    ) -> Usage:
        """Decide whether to retry; returns the new waste. Raises when the error is final,
        carrying what the failed attempts may have cost (``usage``) for the loop to record."""
        if err.billed:
            wasted = wasted + partial
        if not err.retryable:
            err.usage = wasted if wasted.total else None
            raise err
        if self._next_max_tokens(request, wasted, primary) < 1:
            final = self._err(
                f"{err}; not retried: a retry would spend past this call's reservation "
                f"(its failed attempts may have been billed {wasted.total} tokens, counted from the request's bytes where "
                f"not reported, against max_tokens {request.max_output_tokens}; the call is charged at most its reservation)",
                "budget",
                False,
            )
            final.usage = wasted
            raise final from None
        return wasted

    def complete(self, request: ModelRequest) -> ModelReply:
        """One turn, streamed, with retries and fallback.

        Raises:
            ProviderError: the call failed for good (the message says why).
        """
        tries = _Attempts(self, request)
        while (model := tries.next()) is not None:
            try:
                turn, raw = model._attempt(request, model._fitting_max_tokens(request, tries.wasted, self, tries.room))
                return model._reply(turn, tries.wasted, raw)
            except ProviderError as err:
                wait = tries.failed(model, err)
                if wait is not None:
                    model.policy.sleep(wait)
        raise tries.gave_up()

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        """The async twin of ``complete``."""
        import httpx
        if self.transport is not None and not isinstance(self.transport, httpx.AsyncBaseTransport):
            import asyncio

            return await asyncio.to_thread(self.complete, request)  # a sync-only transport: keep using it
        tries = _Attempts(self, request)
        while (model := tries.next()) is not None:
            try:
                turn, raw = await model._aattempt(request, model._fitting_max_tokens(request, tries.wasted, self, tries.room))
                return model._reply(turn, tries.wasted, raw)
            except ProviderError as err:
                wait = tries.failed(model, err)
                if wait is not None:
                    await model.policy.asleep(wait)
        raise tries.gave_up()

    def _fitting_max_tokens(self, request: ModelRequest, wasted: Usage, primary: HTTPModel, room: int | None = None) -> int:
        n = self._next_max_tokens(request, wasted, primary)
        if room is not None:  # the model's window is smaller than the input plus max_tokens: ask for what fits
            n = min(n, room)
        if n < 1:
            err = self._err(
                f"{self.vendor}:{self.target.model} costs more than this call's reservation "
                f"(made at {primary.target.model}'s price) can cover; not called",
                "budget",
                False,
            )
            err.usage = wasted if wasted.total else None
            raise err
        return n

    def _partial(self, err: ProviderError, request: ModelRequest) -> Usage:
        p = err.partial
        return p if err.billed and isinstance(p, Usage) else Usage()

    def _with_partial(self, err: ProviderError, asm: Assembler | None, request_bytes: int) -> ProviderError:
        if err.billed and asm is not None and err.partial is None:
            try:
                err.partial = asm.billed_so_far(request_bytes)
            except UsageError as exc:  # billed, with figures that cannot be believed: not retried
                return self._usage_error(f"{exc} (then: {err})")
        return err

    def _fall_back(self, model: HTTPModel, last: ProviderError | None) -> HTTPModel | None:
        nxt = model.fallback
        if nxt is not None and model.fallback_on is not None and (last is None or last.kind not in model.fallback_on):
            return None  # a fallback for overload only (the default one): another failure is the model's own
        if nxt is not None:
            self._active = nxt  # the rest of the run stays on the fallback: no more retries against a failing primary
            self._notice(
                f"{model.vendor}:{model.target.model} failed {model.policy.max_attempts} times ({last}); "
                f"falling back to {nxt.vendor}:{nxt.target.model}"
            )
        return nxt

    def _gave_up(self, last: ProviderError | None, wasted: Usage) -> ProviderError:
        if last is None:
            return self._err("the model was never called", "server", False)
        err = self._err(f"gave up after {self.policy.max_attempts} attempts: {last}", last.kind, False, last.status)
        err.usage = wasted if wasted.total else None
        return err

    def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact input tokens of ``request``, where the vendor can count them; else None."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.vendor}:{self.target.model} at {self.target.base_url}>"


def _size(pending: bytes | int) -> int:
    return pending if isinstance(pending, int) else len(pending)


class RetryNotice(str):
    """A retry's notice: its text, with the figures a program reads beside it (``-p`` stream-json's
    ``api_retry``): the retry's number (1 for the first), the retries allowed, the wait, the HTTP
    status (None without one) and the error's kind."""

    attempt: int
    max_retries: int
    retry_delay_ms: int
    status: int | None
    kind: str

    def __new__(cls, text: str, attempt: int, max_retries: int, retry_delay_ms: int, status: int | None, kind: str) -> RetryNotice:
        self = super().__new__(cls, text)
        self.attempt, self.max_retries, self.retry_delay_ms, self.status, self.kind = attempt, max_retries, retry_delay_ms, status, kind
        return self

    def with_text(self, text: str) -> RetryNotice:
        return RetryNotice(text, self.attempt, self.max_retries, self.retry_delay_ms, self.status, self.kind)


class _Attempts:
    """One call's retry decisions, shared by ``complete`` and ``acomplete``.

    Which model to try next (``max_attempts`` each, then the fallback), what
    the failed attempts cost, and how long to wait before the next one; the
    two drivers differ only in how they send an attempt and how they sleep.
    """

    def __init__(self, primary: HTTPModel, request: ModelRequest):
        self.primary = primary
        self.request = request
        self.model: HTTPModel | None = primary._active or primary
        self.attempt = 0
        """The number of the current attempt on ``model`` (1-based)."""
        self.wasted = Usage()
        """What the billed failed attempts cost so far."""
        self.last: ProviderError | None = None
        self.room: int | None = None
        """The most ``max_tokens`` the next attempt may ask for, when an error said the window is smaller."""
        self.renewed = False
        """The credentials were made anew after a 401 in this call (once a call)."""

    def next(self) -> HTTPModel | None:
        """The model for the next attempt; None when every model in the chain has failed. Before
        any attempt but the first, the request's ``on_restart`` hears that the text streamed so far
        is withdrawn (the surfaces that showed it take it back or mark it)."""
        while self.model is not None:
            if self.attempt < self.model.policy.max_attempts:
                self.attempt += 1
                if self.last is not None and self.request.on_restart is not None:
                    self.request.on_restart()
                return self.model
            self.model = self.primary._fall_back(self.model, self.last)
            self.attempt = 0
        return None

    def failed(self, model: HTTPModel, err: ProviderError) -> float | None:
        """Count a failed attempt: raises when ``err`` is final; else the seconds to wait (None: no retry on ``model``)."""
        request = self.request
        if err.status == 401 and not self.renewed and not err.billed:
            self.renewed = True
            if model.renew_credentials():  # new credentials: the call once more with them, outside max_attempts
                self.attempt -= 1
                self.last = err
                model._notice(f"{err}; retrying once with new credentials")
                return 0.0
        self.wasted = model._after_failure(err, self.attempt, self.wasted, request, model._partial(err, request), self.primary)
        self.last = err
        if err.room is not None:
            self.room = err.room if self.room is None else min(self.room, err.room)
        if self.attempt >= model.policy.max_attempts:
            return None
        d = model.policy.delay(self.attempt, err)
        model._notice(RetryNotice(f"{err}; retrying in {d:.1f}s (attempt {self.attempt + 1} of {model.policy.max_attempts})",
                                  self.attempt, model.policy.max_attempts - 1, int(d * 1000), err.status, err.kind))
        return d

    def gave_up(self) -> ProviderError:
        return self.primary._gave_up(self.last, self.wasted)


R = TypeVar("R")


def post_search(model: HTTPModel, url: str, body: dict[str, Any], read: Callable[[Any], R]) -> R:
    """One search request to ``url`` (not streamed), with the model's key and headers; its body read in bounded
    time and memory and handed to ``read``. The one request path of both search tools (Anthropic's, and the
    Responses API's ``openai_responses.run_responses_search``).

    Raises:
        ProviderError: the model's own errors; a reply past ``MAX_REPLY_BYTES``, or one whose figures
            ``read`` cannot settle from (``UsageError``), is charged at the reservation.
    """
    import httpx

    model.refresh_key()
    h = {"content-type": "application/json", "accept-encoding": ACCEPT_ENCODING, **model.headers(), **model.target.headers, **model.extra_headers}
    try:
        with model.client().stream("POST", url, headers=h, content=orjson.dumps(body)) as r:
            raw, encoded = raw_body(r)
            if r.status_code != 200:
                raise model.classify(r.status_code, r.headers, read_capped(raw, encoded, ERROR_BODY_BYTES, model.policy.stall_timeout))
            got = read_capped(raw, encoded, MAX_REPLY_BYTES + 1, model.policy.call_deadline)
    except httpx.HTTPError as exc:
        raise model._transport_error(exc, None) from None
    if len(got) > MAX_REPLY_BYTES:  # read no further: billed, and charged at the reservation
        err = model._err(f"the web search's reply passed {MAX_REPLY_BYTES} bytes", "runaway", False)
        err.unaccounted = True
        raise err
    try:
        return read(orjson.loads(got))
    except UsageError as exc:  # billed, with figures no one can settle from: charged at the reservation
        raise model._usage_error(str(exc)) from None
    except orjson.JSONDecodeError as exc:
        raise model._err(f"malformed JSON response from {model.target.base_url}: {exc}", "malformed", False) from None
