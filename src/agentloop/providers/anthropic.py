"""The Anthropic Messages API: request building, stream assembly, token counting.

The only module that knows Anthropic's wire format. Neutral messages (see
``events.Message``) become ``system`` plus alternating ``user``/``assistant``
messages: an assistant's tool calls are ``tool_use`` blocks, consecutive tool
results are ``tool_result`` blocks in one user message (an MCP result's
images as ``image`` blocks inside it: ``providers.images``), and a conversation
that ends with an assistant message is sent as a prefill (that is how a turn
cut at ``max_tokens`` is continued).

Prompt caching: ``cache_control`` breakpoints go on the last tool definition,
on the system block marked ``cache_boundary`` (the static part of the system
prompt; the last system block when none is marked), and on the last block of
the conversation so far (so each turn reads the previous turn's prefix from
the cache, and the dynamic part of the system prompt is cached with it).
Anthropic allows four breakpoints; this uses at most three.

Extended thinking: with a ``thinking_budget`` the request asks for
``thinking: {type: enabled, budget_tokens}`` (shrunk to fit a smaller call,
left off below the API's minimum, and left off when the assistant turn being
continued has no thinking block, which the API would refuse). The reply's ``thinking`` and
``redacted_thinking`` blocks are kept whole, signatures included, as the
reply's ``reasoning``; an assistant message carrying them sends them back
first in its content, unchanged, as the API requires within a tool-use loop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from ..budget import TOOLS_PROMPT_ALLOWANCE
from ..events import Message, ModelRequest, ToolCall, Usage
from .base import (
    ERROR_BODY_BYTES,
    Assembler,
    HTTPModel,
    StreamError,
    Turn,
    UsageError,
    reported_count,
)
from .bounded import ACCEPT_ENCODING, raw_body, read_capped
from .errors import ProviderError
from .images import Image, tool_parts
from .record import EDIT_FORMAT, ModelAlias, ModelFamily, ProviderRecord

__all__ = ["API_VERSION", "RECORD", "THINKING_MIN", "AnthropicAssembler", "AnthropicModel", "to_anthropic"]

API_VERSION = "2026-10-21"
"""The ``anthropic-version`` the official SDK of this era sends (anthropic 2.14: ``_constants.py``)."""
EPHEMERAL = {"type": "ephemeral"}
_CONTEXT_LIMIT = re.compile(rb"exceed context limit: (\d+) \+ (\d+) > (\d+)")
THINKING_MIN = 1_024
"""The smallest ``budget_tokens`` the Messages API accepts for extended thinking."""


def _text_of(m: Message) -> str:
    c = m.get("content", "")
    return c if isinstance(c, str) else orjson.dumps(c).decode()


def _result_blocks(parts: list[str | Image]) -> list[dict[str, Any]]:
    """A tool result's text and images as ``tool_result`` content blocks (``providers.images``)."""
    return [
        {"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.data}}
        for p in parts
    ]


def to_anthropic(messages: Any, tools: Any, *, cache: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages, tools) in Anthropic's shape, with cache breakpoints when ``cache``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    boundary: int | None = None

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m.get("role")
        if role == "system":
            if m.get("cache_boundary"):
                boundary = len(system)
            system.append({"type": "text", "text": _text_of(m)})
        elif role == "user":
            t = _text_of(m)
            add("user", [{"type": "text", "text": t}] if t else [])
        elif role == "assistant":
            # reasoning blocks first, unchanged: the API checks their signatures
            # (another vendor's reasoning, after a /model switch, is not Anthropic's to check: left out)
            blocks: list[dict[str, Any]] = [dict(r) for r in m.get("reasoning", ())
                                            if isinstance(r, Mapping) and r.get("type") in ("thinking", "redacted_thinking")]
            t = _text_of(m)
            if t:
                blocks.append({"type": "text", "text": t})
            for c in m.get("tool_calls", ()):
                args = c.get("arguments")
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": args if isinstance(args, dict) else {}})
            add("assistant", blocks)
        elif role == "tool":
            text = _text_of(m)
            parts = tool_parts(text) if m.get("ok") is not False else None
            b: dict[str, Any] = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text if parts is None else _result_blocks(parts)}
            if m.get("ok") is False:
                b["is_error"] = True
            add("user", [b])
    # a message left with no blocks (an empty user text) is not accepted by the API
    for msg in out:
        if not msg["content"]:
            msg["content"] = [{"type": "text", "text": "(empty)"}]
    # a trailing assistant message is a prefill: the API refuses trailing whitespace there
    if out and out[-1]["role"] == "assistant":
        last = out[-1]["content"][-1]
        if last.get("type") == "text":
            last["text"] = last["text"].rstrip() or "(empty)"
    atools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
    if cache:
        if atools:
            atools[-1]["cache_control"] = EPHEMERAL
        if system:  # the static part's end (the marked boundary), else the system prompt's end
            system[boundary if boundary is not None else -1]["cache_control"] = EPHEMERAL
        if out and out[-1]["role"] == "user":
            out[-1]["content"][-1]["cache_control"] = EPHEMERAL
    return system, out, atools


def _may_think(msgs: list[dict[str, Any]]) -> bool:
    """Whether thinking may be asked for: the API refuses it when the assistant turn being continued (a
    prefill, or the call whose results are being sent) does not start with a thinking block, as when
    thinking was off for that turn."""
    for m in reversed(msgs):
        if m["role"] == "assistant":
            return bool(m["content"]) and m["content"][0].get("type") in ("thinking", "redacted_thinking")
        if any(b.get("type") != "tool_result" for b in m["content"]):
            return True  # a user's own message starts a new turn: nothing to continue
    return True


def _thinking_block(b: Mapping[str, Any]) -> dict[str, Any]:
    """A ``thinking`` block as the API wants it back (its text and signature, whole), or a
    ``redacted_thinking`` block as received."""
    cb = b["block"]
    if cb.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": cb.get("data", "")}
    return {
        "type": "thinking",
        "thinking": (cb.get("thinking") or "") + "".join(b["parts"]),
        "signature": (cb.get("signature") or "") + b.get("signature", ""),
    }


class AnthropicAssembler(Assembler):
    """Builds the final message from ``message_start`` ... ``message_stop``."""


    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        """The usage counts as reported (checked when read: ``_final_usage``)."""
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.out_chars = 0
        self.started = False
        self.done = False
        self.final_count: bool | None = None
        """Streamed: whether the ``message_delta`` carried the final ``output_tokens`` (message_start's is a placeholder)."""

    def feed(self, event: str, data: bytes) -> str | None:
        obj = orjson.loads(data)
        t = obj["type"]
        self.idle = t == "ping"
        if t == "content_block_delta":
            d = obj["delta"]
            dt = d["type"]
            b = self.blocks[obj["index"]]
            if dt == "text_delta":
                s = d["text"]
                b["parts"].append(s)
                self.out_chars += len(s)
                return s  # type: ignore[no-any-return]
            if dt == "input_json_delta":
                s = d["partial_json"]
                b["parts"].append(s)
                self.out_chars += len(s)
            elif dt == "thinking_delta":
                s = str(d.get("thinking", ""))
                b["parts"].append(s)
                self.out_chars += len(s)
            elif dt == "signature_delta":
                sig = str(d.get("signature", ""))
                b["signature"] = b.get("signature", "") + sig
                self.kept_chars += len(sig)  # kept whole in the record: counted against the stream's limit
            return None
        if t == "content_block_start":
            cb = obj["content_block"]
            self.blocks[obj["index"]] = {"block": cb, "parts": []}
            self.kept_chars += len(data)  # a block that arrives whole (redacted thinking, a server tool's result)
            if cb.get("type") == "fallback" and isinstance(cb.get("to"), dict):
                self.model = cb["to"].get("model") or self.model
            if cb.get("type") == "text" and cb.get("text"):
                return str(cb["text"])
            return None
        if t == "content_block_stop":
            ended = self.blocks.get(obj.get("index")) if isinstance(obj.get("index"), int) else None
            if ended is not None and ended["block"].get("type") in ("thinking", "redacted_thinking"):
                self.thought = _thinking_block(ended)  # shown now, before the text that follows it
            return None
        if t == "ping":
            return None
        if t == "message_start":
            m = obj["message"]
            self.started = True
            self.final_count = False
            self.model = m.get("model") or self.model
            self.response_id = m["id"] if isinstance(m.get("id"), str) else self.response_id
            self._usage(m.get("usage") or {})
            return None
        if t == "message_delta":
            d = obj.get("delta") or {}
            if d.get("stop_reason") is not None:
                self.stop_reason = d["stop_reason"]
                self.done = True  # everything that matters has arrived; message_stop only closes
            u = obj.get("usage") or {}
            self.final_count = bool(self.final_count) or (isinstance(u, Mapping) and u.get("output_tokens") is not None)
            self._usage(u)
            return None
        if t == "message_stop":
            self.done = True
            return None
        if t == "error":
            e = obj.get("error") or {}
            et = str(e.get("type", ""))
            msg = f"stream error {et}: {e.get('message', '')}"
            if et == "overloaded_error":
                raise StreamError(msg, "overloaded", True)
            if et in ("api_error", "rate_limit_error", "timeout_error"):
                raise StreamError(msg, "rate_limit" if et == "rate_limit_error" else "server", True)
            raise StreamError(msg, "bad_request", False)
        return None  # new event types are tolerated

    def _usage(self, u: Any) -> None:
        if not isinstance(u, Mapping):
            self.usage["input_tokens"] = u  # refused when read, with the rest
            return
        for k in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            v = u.get(k)
            if v is not None:
                self.usage[k] = v

    def _final_usage(self) -> Usage | None:
        """The reported usage, every count checked (``reported_count``); None when none was reported.

        Raises:
            UsageError: a count is missing, negative, not a whole number or past any real bound.
        """
        u = self.usage
        if not u:
            return None
        if self.final_count is False:
            raise UsageError("its message_delta has no output_tokens (the final count)")
        return Usage(
            input_tokens=reported_count(u, "input_tokens", required=True),
            output_tokens=reported_count(u, "output_tokens", required=True),
            cache_read_tokens=reported_count(u, "cache_read_input_tokens"),
            cache_write_tokens=reported_count(u, "cache_creation_input_tokens"),
        )

    def turn(self) -> Turn:
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        cut: str | None = None
        for i in sorted(self.blocks):
            b = self.blocks[i]
            cb = b["block"]
            bt = cb.get("type")
            if bt in ("thinking", "redacted_thinking"):
                reasoning.append(_thinking_block(b))
            elif bt == "text":
                texts.append((cb.get("text") or "") + "".join(b["parts"]))
            elif bt in ("tool_use", "server_tool_use"):
                js = "".join(b["parts"])
                if js:
                    try:
                        args = orjson.loads(js)
                    except orjson.JSONDecodeError:
                        if self.stop_reason == "max_tokens":
                            cut = cb.get("name", "?")
                            continue
                        args = js  # the model's mistake: validation refuses a non-object
                else:
                    args = cb.get("input", {})
                if bt == "tool_use":
                    calls.append(ToolCall(str(cb["id"]), str(cb["name"]), args))
        return Turn("".join(texts), calls, self._final_usage(), self.stop_reason, self.model, cut, reasoning, self.response_id)

    def from_json(self, body: bytes) -> Turn:
        obj = orjson.loads(body)
        self.started = self.done = True
        self.model = obj.get("model")
        self.response_id = obj["id"] if isinstance(obj.get("id"), str) else None
        self.stop_reason = obj.get("stop_reason")
        self._usage(obj.get("usage") or {})
        for i, cb in enumerate(obj.get("content") or []):
            self.blocks[i] = {"block": cb, "parts": []}
        return self.turn()

    def billed_so_far(self, request_bytes: int) -> Usage:
        u = self.usage
        # what was not reported: the request's bound (its bytes and the tool prompt), the output received so far
        inp = reported_count(u, "input_tokens") if "input_tokens" in u else request_bytes + TOOLS_PROMPT_ALLOWANCE
        out = max(reported_count(u, "output_tokens"), self.out_chars + 16)
        return Usage(inp, out, reported_count(u, "cache_read_input_tokens"), reported_count(u, "cache_creation_input_tokens"))

    def message(self) -> dict[str, Any]:
        """The final message as plain JSON, in Anthropic's own shape (for comparison with the SDK)."""
        content: list[dict[str, Any]] = []
        for i in sorted(self.blocks):
            b = self.blocks[i]
            cb = dict(b["block"])
            if cb.get("type") == "text":
                cb["text"] = (cb.get("text") or "") + "".join(b["parts"])
            elif cb.get("type") in ("thinking", "redacted_thinking"):
                cb = _thinking_block(b)
            elif cb.get("type") in ("tool_use", "server_tool_use") and b["parts"]:
                js = "".join(b["parts"])
                try:
                    cb["input"] = orjson.loads(js)
                except orjson.JSONDecodeError:
                    cb["input"] = js
            content.append(cb)
        return {"model": self.model, "content": content, "stop_reason": self.stop_reason, "usage": dict(self.usage)}


class AnthropicModel(HTTPModel):
    vendor = "anthropic"
    system_apart = True
    counts_tokens = True
    """``count_tokens`` asks the API: the loop may reserve from an exact count when the bound does not fit."""
    max_image_tokens = 2_000
    """Anthropic documents about 1,600 tokens for an image at its largest size (width x height / 750)."""

    def __init__(self, *args: Any, cache: bool = True, **kw: Any):
        super().__init__(*args, **kw)
        self.cache = cache

    def url(self) -> str:
        return _join(self.target.base_url, "/v1/messages")

    def headers(self) -> dict[str, str]:
        # as the official SDK sends a key (anthropic 2.14 ``_client.py``: a bearer token)
        h = {"anthropic-version": API_VERSION}
        if self.target.auth_token:  # a gateway's token (Claude Code: ANTHROPIC_AUTH_TOKEN, "prefixed with Bearer")
            h["authorization"] = f"Bearer {self.target.auth_token}"
            if self.target.api_key:
                h["x-api-key"] = self.target.api_key
        elif self.target.api_key:
            h["authorization"] = f"Bearer {self.target.api_key}"
        return h

    def key_hint(self) -> str:
        return "ANTHROPIC_API_KEY"

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        system, msgs, tools = to_anthropic(request.messages, request.tools, cache=self.cache)
        b: dict[str, Any] = {"model": self.target.model, "max_tokens": max_tokens, "messages": msgs}
        if system:
            b["system"] = system
        if tools:
            b["tools"] = tools
        budget = self.thinking_room(max_tokens) if _may_think(msgs) else None
        if budget is not None:
            b["thinking"] = {"type": "enabled", "budget_tokens": budget}
        elif self.temperature is not None:  # the API refuses a temperature with thinking on
            b["temperature"] = self.temperature
        b["stream"] = True
        return b

    def thinking_room(self, max_tokens: int) -> int | None:
        """Extended thinking's ``budget_tokens`` for a call of ``max_tokens``, or None for no thinking.

        The API wants at least 1,024 and less than ``max_tokens`` (thinking counts toward it). A
        retry or a dearer fallback may get fewer tokens than asked: the budget then shrinks so a
        quarter of the call stays for the answer, and thinking is left off below the minimum.
        """
        if not self.thinking_budget:
            return None
        budget = min(self.thinking_budget, max_tokens - max(1, max_tokens // 4))
        return budget if budget >= THINKING_MIN else None

    def assembler(self) -> Assembler:
        return AnthropicAssembler()

    def classify(self, status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
        err = super().classify(status, headers, body)
        low = body.lower()
        if status == 400 and (b"credit balance" in low or b"billing" in low):
            return self._err(f"{err}: the account has no credit left (spend limit)", "quota", False, status)
        m = _CONTEXT_LIMIT.search(body) if status == 400 else None
        if m:  # "input length and `max_tokens` exceed context limit: 197626 + 21333 > 200000"
            return self._context_error(err, int(m.group(3)), int(m.group(1)))
        return err

    def count_tokens(self, request: ModelRequest) -> int | None:
        """Exact input tokens from ``/v1/messages/count_tokens`` (free; no inference)."""
        import httpx

        system, msgs, tools = to_anthropic(request.messages, request.tools, cache=False)
        b: dict[str, Any] = {"model": self.target.model, "messages": msgs}
        if system:
            b["system"] = system
        if tools:
            b["tools"] = tools
        self.refresh_key()
        h = {"content-type": "application/json", "accept-encoding": ACCEPT_ENCODING, **self.headers(), **self.target.headers, **self.extra_headers}
        url = _join(self.target.base_url, "/v1/messages/count_tokens")
        try:  # its body read in bounded time and memory, as every body is (providers/bounded.py)
            with self.client().stream("POST", url, headers=h, content=orjson.dumps(b)) as r:
                raw, encoded = raw_body(r)
                got = read_capped(raw, encoded, ERROR_BODY_BYTES, self.policy.stall_timeout)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, None) from None
        if r.status_code != 200:
            raise self.classify(r.status_code, r.headers, got)
        n = orjson.loads(got).get("input_tokens")
        return n if isinstance(n, int) else None


def _join(base: str, path: str) -> str:
    base = base.rstrip("/")
    if base.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return base + path


RECORD = ProviderRecord(
    name="anthropic",
    wire="messages",
    adapter=AnthropicModel,
    key_env=("ANTHROPIC_API_KEY",),
    token_env=("ANTHROPIC_AUTH_TOKEN",),
    key_helper=True,
    base_env=("ANTHROPIC_BASE_URL",),
    default_base="https://api.anthropic.com",
    headers_env="ANTHROPIC_CUSTOM_HEADERS",
    options=frozenset({"cache"}),
    bare_prefixes=("claude-",),
    # Claude Code's model aliases; ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL override the id each names.
    # The ids are the newest of each family in agentloop's price table.
    aliases=(
        ModelAlias("opus", "claude-opus-4-6", "ANTHROPIC_DEFAULT_OPUS_MODEL"),
        ModelAlias("sonnet", "claude-sonnet-4-6", "ANTHROPIC_DEFAULT_SONNET_MODEL"),
        ModelAlias("haiku", "claude-haiku-4-5", "ANTHROPIC_DEFAULT_HAIKU_MODEL"),
    ),
    default_model="sonnet",
    model_env=("ANTHROPIC_MODEL",),
    cheap_model="haiku",
    cheap_model_env=("ANTHROPIC_SMALL_FAST_MODEL",),
    reasoning="budget",
    # extended thinking's models (platform.claude.com, "Extended thinking", supported models)
    families=tuple(ModelFamily(p, thinking=True) for p in ("claude-opus-4", "claude-sonnet-4", "claude-haiku-4-5", "claude-3-7-sonnet")),
    web_search=True,
    edit_format=EDIT_FORMAT,
    price_prefix="anthropic/",
    telemetry_name="anthropic",
    no_key=("no API key for anthropic: export ANTHROPIC_API_KEY=sk-ant-..., or use an OpenAI-compatible "
            "local server with --model openai:<name> --base-url URL"),
    # the seed's production checklist: "Opus -> Sonnet, with notice"; the longest matching name wins
    overload_fallbacks=(
        ("claude-opus-4-6", "claude-sonnet-4-6"),
        ("claude-opus-4-5", "claude-sonnet-4-5"),
        ("claude-opus-4-1", "claude-sonnet-4"),
        ("claude-opus-4", "claude-sonnet-4"),
    ),
)
"""The Anthropic provider: the Messages API at api.anthropic.com or a gateway in front of it."""
