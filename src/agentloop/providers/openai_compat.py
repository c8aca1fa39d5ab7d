"""OpenAI-compatible Chat Completions: api.openai.com, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter.

The only module that knows this wire format. Requests stream with
``stream_options.include_usage`` so the last chunk carries usage (servers that
ignore it leave usage unreported: the loop then estimates). Tool-call
arguments arrive as string fragments keyed by ``index`` and are joined and
parsed at the end. ``finish_reason == "length"`` is the cut at max tokens.
A ``reasoning_effort`` (the reasoning models': ``minimal`` ... ``xhigh``) is sent
as that field when set, never otherwise.
Cached prompt tokens (``usage.prompt_tokens_details.cached_tokens``) are
reported as cache reads, and taken out of the input count (OpenAI counts them
inside ``prompt_tokens``).
Tool messages take only text: an MCP result's images (``providers.images``)
are replaced there by a note and sent in a user message after the turn's tool
messages, as ``image_url`` parts with data URLs.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..budget import TOOLS_PROMPT_ALLOWANCE
from ..events import ModelRequest, ToolCall, Usage
from .base import Assembler, HTTPModel, StreamError, Turn, UsageError, reported_count
from .errors import ProviderError
from .images import tool_parts
from .openai_responses import RESPONSES_FAMILIES, responses_adapter
from .record import PATCH_FORMAT, ModelFamily, ProviderRecord

__all__ = ["RECORD", "OpenAIAssembler", "OpenAIModel", "to_openai"]

_CONTEXT_LIMIT = re.compile(rb"maximum context length is (\d+) tokens.*?\((\d+) in the messages")


def _split_images(m: Any, text: str, pending: list[dict[str, Any]]) -> str:
    """A tool message's text with its images (``providers.images``) replaced by a note; the images go to ``pending``.

    Chat Completions tool messages take only text, so the images follow the
    turn's tool messages in one user message, each after a line naming its call.
    """
    parts = tool_parts(text) if m.get("ok") is not False else None
    if parts is None:
        return text
    lines: list[str] = []
    n = 0
    for p in parts:
        if isinstance(p, str):
            lines.append(p)
            continue
        n += 1
        lines.append(f"[image {n} ({p.media_type}): attached in the next user message]")
        pending.append({"type": "text", "text": f"Image {n} returned by the tool call {m['tool_call_id']} ({m.get('name', 'tool')}):"})
        pending.append({"type": "image_url", "image_url": {"url": p.data_url()}})
    return "\n".join(lines)


def to_openai(messages: Any, tools: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # image parts from this turn's tool results
    for m in messages:
        role = m.get("role")
        c = m.get("content", "")
        text = c if isinstance(c, str) else orjson.dumps(c).decode()
        if role != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": _split_images(m, text, pending)})
        elif role == "assistant":
            calls = [
                {
                    "id": tc["id"],
                    "type": "function",
                    "function": {"name": tc["name"], "arguments": orjson.dumps(tc["arguments"]).decode()},
                }
                for tc in m.get("tool_calls", ())
            ]
            if out and out[-1]["role"] == "assistant" and not out[-1].get("tool_calls"):
                # a turn continued after a cut at max tokens: one message, as the model wrote it
                out[-1]["content"] = (out[-1]["content"] or "") + text
                if calls:
                    out[-1]["tool_calls"] = calls
                continue
            msg: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        else:
            out.append({"role": role, "content": text})
    if pending:
        out.append({"role": "user", "content": pending})
    otools = [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]
    return out, otools


class OpenAIAssembler(Assembler):
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.model: str | None = None
        self.out_chars = 0
        self.started = False
        self.done = False

    def feed(self, event: str, data: bytes) -> str | None:
        if data == b"[DONE]":
            self.done = True
            return None
        obj = orjson.loads(data)
        if "error" in obj and not obj.get("choices"):
            e = obj["error"]
            msg = e.get("message", str(e)) if isinstance(e, dict) else str(e)
            raise StreamError(f"stream error: {msg}", "server", True)
        self.started = True
        if self.model is None:
            self.model = obj.get("model")
        if self.response_id is None and isinstance(obj.get("id"), str):
            self.response_id = obj["id"]
        u = obj.get("usage")
        if u:
            self.usage = u
        self.idle = not obj.get("choices") and not u  # a chunk that carries nothing is not progress
        delta_text = None
        for ch in obj.get("choices") or ():
            d = ch.get("delta") or {}
            s = d.get("content")
            if s:
                self.parts.append(s)
                self.out_chars += len(s)
                delta_text = s if delta_text is None else delta_text + s
            tcs = d.get("tool_calls")
            if tcs:
                for tc in tcs:
                    slot = self.calls.setdefault(tc.get("index", len(self.calls)), {"id": None, "name": "", "args": []})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    f = tc.get("function") or {}
                    if f.get("name"):
                        slot["name"] += f["name"]
                    a = f.get("arguments")
                    if a:
                        slot["args"].append(a)
                        self.out_chars += len(a)
            fr = ch.get("finish_reason")
            if fr:
                self.finish = fr
                self.done = True  # some servers end the stream here, without [DONE]
        return delta_text

    def turn(self) -> Turn:
        calls: list[ToolCall] = []
        cut: str | None = None
        for i in sorted(self.calls):
            c = self.calls[i]
            js = "".join(c["args"])
            try:
                args: Any = orjson.loads(js) if js else {}
            except orjson.JSONDecodeError:
                if self.finish == "length":
                    cut = c["name"] or "?"
                    continue
                args = js
            calls.append(ToolCall(str(c["id"] or f"call_{i}"), c["name"], args))
        return Turn("".join(self.parts), calls, self._final_usage(), self.finish, self.model, cut, response_id=self.response_id)

    def _final_usage(self) -> Usage | None:
        """The reported usage, every count checked (``reported_count``); None when none was reported.

        Raises:
            UsageError: a count is missing, negative, not a whole number or past any real bound, or more
                prompt tokens are said to be cached than were sent.
        """
        u = self.usage
        if not u:
            return None
        prompt = reported_count(u, "prompt_tokens", required=True)
        out = reported_count(u, "completion_tokens", required=True)
        details = u.get("prompt_tokens_details") if isinstance(u, dict) else None
        cached = reported_count(details, "cached_tokens") if details is not None else 0
        if cached > prompt:
            raise UsageError(f"its usage has {cached} cached prompt tokens of {prompt}")
        return Usage(input_tokens=prompt - cached, output_tokens=out, cache_read_tokens=cached)

    def from_json(self, body: bytes) -> Turn:
        obj = orjson.loads(body)
        self.started = self.done = True
        self.model = obj.get("model")
        self.response_id = obj["id"] if isinstance(obj.get("id"), str) else None
        self.usage = obj.get("usage")
        for ch in obj.get("choices") or ():
            msg = ch.get("message") or {}
            if msg.get("content"):
                self.parts.append(msg["content"])
            for i, tc in enumerate(msg.get("tool_calls") or ()):
                f = tc.get("function") or {}
                self.calls[i] = {"id": tc.get("id"), "name": f.get("name", ""), "args": [f.get("arguments") or ""]}
            self.finish = ch.get("finish_reason") or self.finish
        return self.turn()

    def billed_so_far(self, request_bytes: int) -> Usage:
        u = self._final_usage()
        if u is not None:
            return u
        # nothing reported: the request's bound (its bytes and the tool prompt), the output received so far
        return Usage(input_tokens=request_bytes + TOOLS_PROMPT_ALLOWANCE, output_tokens=self.out_chars + 16)


class OpenAIModel(HTTPModel):
    vendor = "openai"

    @property
    def max_image_tokens(self) -> int:
        """OpenAI's documented most for one image: gpt-4o-mini bills a high-detail 2048x768 image at
        2,833 + 8 x 5,667 = 48,169 tokens; the others at most 1,536 patches x 2.46 (gpt-4.1-nano) or
        85 + 8 x 170 (gpt-4o): 6,000 covers them."""
        return 48_169 if "4o-mini" in self.target.model else 6_000

    def __init__(self, *args: Any, max_tokens_field: str | None = None, **kw: Any):
        super().__init__(*args, **kw)
        if max_tokens_field is None:
            # api.openai.com refuses max_tokens for its reasoning models; local servers know only max_tokens
            max_tokens_field = "max_completion_tokens" if "api.openai.com" in self.target.base_url else "max_tokens"
        self.max_tokens_field = max_tokens_field

    def url(self) -> str:
        return self.target.base_url.rstrip("/") + "/chat/completions"

    def headers(self) -> dict[str, str]:
        key = self.target.api_key or self.target.auth_token
        return {"authorization": f"Bearer {key}"} if key else {}

    def key_hint(self) -> str:
        return "OPENAI_API_KEY"

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        msgs, tools = to_openai(request.messages, request.tools)
        b: dict[str, Any] = {"model": self.target.model, "messages": msgs}
        if tools:
            b["tools"] = tools
        b[self.max_tokens_field] = max_tokens
        if self.reasoning_effort is not None:
            b["reasoning_effort"] = self.reasoning_effort
        if self.temperature is not None:
            b["temperature"] = self.temperature
        b["stream"] = True
        b["stream_options"] = {"include_usage": True}
        return b

    def assembler(self) -> Assembler:
        return OpenAIAssembler()

    def classify(self, status: int, headers: Any, body: bytes) -> ProviderError:
        err = super().classify(status, headers, body)
        if status == 429 and (b"insufficient_quota" in body or b"exceeded your current quota" in body):
            return self._err(f"{err}: the account is out of quota (spend limit); not retried", "quota", False, status)
        m = _CONTEXT_LIMIT.search(body) if status == 400 else None
        if m:  # "maximum context length is 8192 tokens. However, you requested 9000 tokens (5000 in the messages, 4000 in the completion)"
            return self._context_error(err, int(m.group(1)), int(m.group(2)))
        return err


_REASONING = "max_completion_tokens"
"""OpenAI's reasoning models refuse ``max_tokens`` ("Use 'max_completion_tokens' instead") wherever they are
served: api.openai.com, Azure OpenAI, gateways passing the request through."""

RECORD = ProviderRecord(
    name="openai",
    wire="chat_completions",
    adapter=OpenAIModel,
    key_env=("OPENAI_API_KEY",),
    base_env=("OPENAI_BASE_URL",),
    default_base="https://api.openai.com/v1",
    header_vars=(("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")),
    options=frozenset({"max_tokens_field"}),
    cheap_model="gpt-4o-mini",
    default_model="gpt-5",
    reasoning="effort",
    web_search=False,
    families=(
        # the GPT-5 family edits with apply_patch (OpenAI's apply_patch guide; Codex's one edit tool for them)
        ModelFamily("gpt-5", token_field=_REASONING, effort="medium", edit_format=PATCH_FORMAT),
        ModelFamily("o1", token_field=_REASONING, effort="medium"),
        ModelFamily("o3", token_field=_REASONING, effort="medium"),
        ModelFamily("o4", token_field=_REASONING, effort="medium"),
        *RESPONSES_FAMILIES,  # served only by the Responses API (openai_responses.py)
    ),
    adapters={"responses": responses_adapter},
    wire_providers={"responses": "openai-responses"},
    price_prefix="openai/",
    telemetry_name="openai",
    no_key=("no API key for openai: export OPENAI_API_KEY=sk-..., or point --base-url at a local "
            "OpenAI-compatible server (e.g. --base-url http://localhost:11434/v1 for Ollama)"),
)
"""The OpenAI provider: Chat Completions at api.openai.com or any compatible server (Codex's default model
family gets ``apply_patch``, the edit format it was trained on; the reasoning families their effort)."""
