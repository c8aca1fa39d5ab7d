"""OpenAI's Responses API (``POST /v1/responses``): the wire format of OpenAI's coding models.

The only module that knows this wire format. It sits beside Chat Completions
(``openai_compat.py``): ``openai-responses:<model>`` chooses it, and so does
``openai:<model>`` for the models served only here (``responses_only``: the
``gpt-5-codex`` family and ``codex-mini-latest``, and their successors).

Requests. Leading system messages become ``instructions``; a later one a
``developer`` message. User text is an ``input_text`` message, an assistant's
text an ``assistant`` message, its calls ``function_call`` items (``call_id``
the neutral call's id) and tool results ``function_call_output`` items (an MCP
result's images as ``input_image`` parts: ``providers.images``). Nothing is
stored on OpenAI's side (``store: false``): the whole conversation is sent each
turn, and a reasoning model is asked for its reasoning items' encrypted
content (``include: ["reasoning.encrypted_content"]``) and a reasoning summary
(``reasoning: {effort, summary: "auto"}``). Its reasoning items are kept as
received, whole (the reply's ``reasoning``, recorded byte for byte), and sent
back on the next turns in front of the assistant's calls and so before their
outputs, as Codex does; without their ``id``, which with ``store: false``
names nothing the server holds (OpenAI refuses such an id: "Items are not
persisted when `store` is set to false"; Codex does not serialize it either).

Streaming: ``response.created`` ... ``response.completed``. Text arrives as
``response.output_text.delta``; a call's arguments as
``response.function_call_arguments.delta`` and whole in ``.done``; each item
whole in ``response.output_item.done`` (a reasoning item's complete
``encrypted_content`` only there). ``response.incomplete`` with
``max_output_tokens`` is the cut at max tokens (the loop continues it);
``response.failed`` and ``error`` are read like the error responses (rate
limits and server errors retried, quota and bad requests not).

Usage (``response.usage``): ``input_tokens`` counts
``input_tokens_details.cached_tokens`` (reported as cache reads and taken out
of the input) and ``output_tokens`` counts
``output_tokens_details.reasoning_tokens`` (billed as output: a reply whose
reasoning is said to exceed its output cannot be billed). A stream cut before
its usage after a reasoning item began is counted at the attempt's whole
``max_tokens`` of output: the reasoning is billed but never streamed (so no
retry fits in the call's reservation); cut before any, at what arrived. A
reasoning model's stream may go ``REASONING_STALL`` seconds without an event
(Codex's idle timeout) unless another stall timeout is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from ..budget import TOOLS_PROMPT_ALLOWANCE
from ..events import Message, ModelRequest, ToolCall, Usage
from .base import (
    Assembler,
    EventDecoder,
    HTTPModel,
    RetryPolicy,
    StreamError,
    Turn,
    UsageError,
    post_search,
    reported_count,
)
from .errors import ProviderError
from .images import tool_parts
from .record import PATCH_FORMAT, ModelFamily, ProviderRecord

__all__ = ["RECORD", "RESPONSES_ONLY", "ResponsesAssembler", "ResponsesModel", "is_reasoning_model", "responses_only", "to_responses"]

RESPONSES_ONLY = ("gpt-5-codex", "gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.3-codex", "gpt-5.4-codex", "gpt-5.5-codex", "codex-mini")
"""The name prefixes of OpenAI's models served only by the Responses API: ``gpt-5-codex``,
``gpt-5.1-codex(-mini|-max)``, ``codex-mini-latest`` and the names their successors take. The
``openai`` provider's record sends them here (``RESPONSES_FAMILIES``)."""
_REASONING = re.compile(r"(?:gpt-5|o1|o3|o4|codex)")
"""OpenAI's reasoning families: they take ``reasoning`` and return reasoning items."""
REASONING_INCLUDE = "reasoning.encrypted_content"
REASONING_STALL = 300.0
"""Seconds a reasoning model's stream may go without an event (Codex's ``stream_idle_timeout_ms``), when no
other stall timeout is given: its hidden reasoning sends nothing."""


def responses_only(model: str) -> bool:
    """Whether OpenAI serves ``model`` only through the Responses API (Chat Completions answers 404)."""
    return model.strip().lower().startswith(RESPONSES_ONLY)


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning families (asked for reasoning items and summaries)."""
    return _REASONING.match(model.strip().lower()) is not None


def _text_of(m: Message) -> str:
    c = m.get("content", "")
    return c if isinstance(c, str) else orjson.dumps(c).decode()


def _tool_output(m: Message) -> str | list[dict[str, Any]]:
    """A tool message's output: its text, or its text and images as ``input_text``/``input_image`` parts."""
    text = _text_of(m)
    parts = tool_parts(text) if m.get("ok") is not False else None
    if parts is None:
        return text
    return [{"type": "input_text", "text": p} if isinstance(p, str) else {"type": "input_image", "image_url": p.data_url()} for p in parts]


def sent_reasoning(item: Mapping[str, Any]) -> dict[str, Any]:
    """A kept reasoning item as it is sent back: as received, without the ``id`` nothing stored answers to."""
    return {k: v for k, v in item.items() if k != "id"}


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [sent_reasoning(r) for r in m.get("reasoning", ()) if isinstance(r, Mapping) and r.get("type") == "reasoning"]
    t = _text_of(m)
    if t:
        out.append({"type": "message", "role": "assistant", "content": t})
    for c in m.get("tool_calls", ()):
        args = c.get("arguments")
        out.append({"type": "function_call", "call_id": c["id"], "name": c["name"],
                    "arguments": args if isinstance(args, str) else orjson.dumps(args).decode()})
    return out


def to_responses(messages: Any, tools: Any) -> tuple[str | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """(instructions, input items, tools) in the Responses API's shape."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            if items:
                items.append({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": _text_of(m)}]})
            else:
                instructions.append(_text_of(m))
        elif role == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": _text_of(m)}]})
        elif role == "assistant":
            items += _assistant_items(m)
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": _tool_output(m)})
    rtools = [{"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False} for t in tools]
    return ("\n\n".join(instructions) if instructions else None), items, rtools


def _stream_error(err: Any, where: str) -> StreamError:
    """An ``error`` event's or a failed response's ``{code, message}`` as a retried or final failure."""
    e = err if isinstance(err, Mapping) else {}
    code = str(e.get("code") or e.get("type") or "")
    msg = f"{where} {code}: {e.get('message', '')}".strip()
    low = code.lower()
    if "quota" in low:
        return StreamError(f"{msg}: the account is out of quota (spend limit); not retried", "quota", False)
    if "rate_limit" in low:
        return StreamError(msg, "rate_limit", True)
    if low in ("server_error", "internal_error", "api_error", "overloaded", "server_is_overloaded", "") or "timeout" in low:
        return StreamError(msg, "server", True)
    return StreamError(msg, "bad_request", False)


def responses_usage(u: Any) -> Usage:
    """A response's ``usage``, every count checked (``reported_count``): cached input out of the input, as
    cache reads; reasoning inside the output, billed as output.

    Raises:
        UsageError: a count is missing, negative, not a whole number or past any real bound; more input said
            cached than was sent, or more reasoning than output.
    """
    inp = reported_count(u, "input_tokens", required=True)
    out = reported_count(u, "output_tokens", required=True)
    idet, odet = u.get("input_tokens_details"), u.get("output_tokens_details")
    cached = reported_count(idet, "cached_tokens") if idet is not None else 0
    thought = reported_count(odet, "reasoning_tokens") if odet is not None else 0
    if cached > inp:
        raise UsageError(f"its usage has {cached} cached input tokens of {inp}")
    if thought > out:
        raise UsageError(f"its usage has {thought} reasoning tokens of {out} output tokens (the output counts the reasoning)")
    return Usage(input_tokens=inp - cached, output_tokens=out, cache_read_tokens=cached)


class ResponsesAssembler(Assembler):
    """Builds one turn from ``response.created`` ... ``response.completed`` (or ``.incomplete``)."""

    def __init__(self, max_tokens: int = 0) -> None:
        self.items: dict[int, dict[str, Any]] = {}
        """Each output item by its ``output_index``: ``added`` and ``done`` as received, text and argument pieces."""
        self.usage: Any = None
        self.status: str | None = None
        self.incomplete: str | None = None
        self.model: str | None = None
        self.thinking = False
        """A reasoning item began: from then on the model may have reasoned unseen up to all of ``max_tokens``."""
        self.max_tokens = max_tokens
        self.out_chars = 0
        self.started = False
        self.done = False

    def _slot(self, i: Any) -> dict[str, Any]:
        return self.items.setdefault(int(i), {"added": None, "done": None, "parts": [], "args": None})

    def feed(self, event: str, data: bytes) -> str | None:
        obj = orjson.loads(data)
        t = obj["type"]
        self.idle = False
        if t == "response.output_text.delta":
            s = str(obj["delta"])
            self._slot(obj["output_index"])["parts"].append(s)
            self.out_chars += len(s)
            return s
        if t == "response.function_call_arguments.delta":
            s = str(obj["delta"])
            self._slot(obj["output_index"])["parts"].append(s)
            self.out_chars += len(s)
        elif t == "response.function_call_arguments.done":
            self._slot(obj["output_index"])["args"] = str(obj["arguments"])
        elif t in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self.out_chars += len(str(obj.get("delta", "")))
        elif t == "response.output_item.added":
            item = dict(obj["item"])
            self._slot(obj["output_index"])["added"] = item
            self.thinking = self.thinking or item.get("type") == "reasoning"
        elif t == "response.output_item.done":
            item = dict(obj["item"])
            self._slot(obj["output_index"])["done"] = item
            if item.get("type") == "reasoning":
                self.kept_chars += len(data)  # kept whole in the record: counted against the stream's limit
        elif t in ("response.created", "response.in_progress", "response.queued"):
            self._response(obj["response"])
        elif t in ("response.completed", "response.incomplete"):
            self._response(obj["response"])
            self.done = True
        elif t == "response.failed":
            r = obj.get("response") or {}
            self._response(r)
            raise _stream_error(r.get("error"), "the response failed:")
        elif t == "error":
            raise _stream_error(obj, "stream error")
        return None  # other events (content parts, summaries' parts, searches) carry nothing kept

    def _response(self, r: Mapping[str, Any]) -> None:
        self.started = True
        self.model = r.get("model") or self.model
        if isinstance(r.get("id"), str):
            self.response_id = r["id"]
        self.status = r.get("status") or self.status
        if r.get("usage") is not None:
            self.usage = r["usage"]
        details = r.get("incomplete_details")
        if isinstance(details, Mapping):
            self.incomplete = str(details.get("reason") or "")

    def turn(self) -> Turn:
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        cut: str | None = None
        finish = "max_tokens" if self.incomplete == "max_output_tokens" else (self.status or "completed")
        for i in sorted(self.items):
            slot = self.items[i]
            item = slot["done"] or slot["added"] or {}
            kind = item.get("type")
            if kind == "reasoning":
                reasoning.append(item)  # whole, as received: sent back and recorded as it is
            elif kind == "message":
                texts.append(self._message_text(slot))
            elif kind == "function_call":
                js = slot["done"]["arguments"] if slot["done"] is not None else slot["args"] if slot["args"] is not None else "".join(slot["parts"])
                try:
                    args: Any = orjson.loads(js) if js else {}
                except orjson.JSONDecodeError:
                    if finish == "max_tokens":
                        cut = str(item.get("name") or "?")
                        continue
                    args = js  # the model's mistake: validation refuses a non-object
                calls.append(ToolCall(str(item.get("call_id") or item.get("id") or f"call_{i}"), str(item.get("name", "")), args))
        return Turn("".join(texts), calls, self._final_usage(), finish, self.model, cut, reasoning, self.response_id)

    @staticmethod
    def _message_text(slot: Mapping[str, Any]) -> str:
        done = slot["done"]
        if done is not None and isinstance(done.get("content"), list):
            return "".join(str(c.get("text", "")) for c in done["content"] if isinstance(c, Mapping) and c.get("type") == "output_text")
        return "".join(slot["parts"])

    def _final_usage(self) -> Usage | None:
        """The reported usage, every count checked (``reported_count``); None when none was reported.

        Raises:
            UsageError: a count is missing, negative, not a whole number or past any real bound; more input
                said cached than was sent, or more reasoning than output.
        """
        return None if self.usage is None else responses_usage(self.usage)

    def from_json(self, body: bytes) -> Turn:
        obj = orjson.loads(body)
        self._response(obj)
        self.done = True
        for i, item in enumerate(obj.get("output") or ()):
            self.items[i] = {"added": None, "done": dict(item), "parts": [], "args": None}
        return self.turn()

    def billed_so_far(self, request_bytes: int) -> Usage:
        u = self._final_usage()
        if u is not None:
            return u
        # nothing reported: the request's bound; the output received so far, or all the model may have reasoned unseen
        out = max(self.out_chars + 16, self.max_tokens if self.thinking else 0)
        return Usage(input_tokens=request_bytes + TOOLS_PROMPT_ALLOWANCE, output_tokens=out)


class ResponsesModel(HTTPModel):
    vendor = "openai-responses"

    def __init__(self, *args: Any, max_tokens_field: str | None = None, **kw: Any):
        super().__init__(*args, **kw)  # the output budget is always max_output_tokens: an openai: option for it is moot here
        if self.reasons and self.policy.stall_timeout == RetryPolicy.stall_timeout:
            # a reasoning model may think for minutes without an event: Codex waits 300 s (its stream idle timeout)
            self.policy = replace(self.policy, stall_timeout=REASONING_STALL)

    @property
    def max_image_tokens(self) -> int:
        """As on Chat Completions (``OpenAIModel.max_image_tokens``): the same models, the same images."""
        return 48_169 if "4o-mini" in self.target.model else 6_000

    @property
    def reasons(self) -> bool:
        """This model is asked for reasoning items (a reasoning family, or an effort was given)."""
        return self.reasoning_effort is not None or is_reasoning_model(self.target.model)

    def url(self) -> str:
        return self.target.base_url.rstrip("/") + "/responses"

    def headers(self) -> dict[str, str]:
        key = self.target.api_key or self.target.auth_token  # a key, else a gateway's token: both as OpenAI's bearer
        return {"authorization": f"Bearer {key}"} if key else {}

    def key_hint(self) -> str:
        return "OPENAI_API_KEY"

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        instructions, items, tools = to_responses(request.messages, request.tools)
        b: dict[str, Any] = {"model": self.target.model}
        if instructions is not None:
            b["instructions"] = instructions
        b["input"] = items
        if tools:
            b["tools"] = tools
        b["max_output_tokens"] = max_tokens
        b["store"] = False
        if self.reasons:
            r: dict[str, Any] = {"summary": "auto"}
            if self.reasoning_effort is not None:
                r = {"effort": self.reasoning_effort, **r}
            b["reasoning"] = r
            b["include"] = [REASONING_INCLUDE]
        if self.temperature is not None:
            b["temperature"] = self.temperature
        b["stream"] = True
        return b

    def assembler(self) -> Assembler:
        return ResponsesAssembler()

    def _pump_start(self, max_tokens: int) -> tuple[EventDecoder, Assembler, list[bytes]]:
        dec, asm, raw = super()._pump_start(max_tokens)
        if isinstance(asm, ResponsesAssembler):
            asm.max_tokens = max_tokens
        return dec, asm, raw

    def classify(self, status: int, headers: Any, body: bytes) -> ProviderError:
        err = super().classify(status, headers, body)
        if status == 429 and (b"insufficient_quota" in body or b"exceeded your current quota" in body):
            return self._err(f"{err}: the account is out of quota (spend limit); not retried", "quota", False, status)
        return err


# --- the built-in web search ------------------------------------------------------------------------

SEARCH_INCLUDE = "web_search_call.action.sources"
SearchParts = tuple[str, list[dict[str, Any]], list[str], Usage, int]
"""(text, results, errors, usage, searches): what ``web_search.SearchOutcome`` is made of."""


def run_responses_search(
    model: ResponsesModel, query: str, *, max_tokens: int, max_uses: int,
    allowed_domains: list[str] | None = None, blocked_domains: list[str] | None = None,
) -> SearchParts:
    """One request offering the built-in ``{"type": "web_search"}`` tool, asked to search for ``query``
    (``max_tool_calls`` at most ``max_uses``), not streamed, its body read in bounded time and memory.
    Its text, results, errors, usage and searches (``web_search.SearchOutcome``'s fields); each
    ``web_search_call`` item counts as a search billed.

    Raises:
        ProviderError: the request failed, or ``blocked_domains`` was asked for (OpenAI's search filters
            by allowed domains only: no search is made rather than one that ignores the block).
    """

    if blocked_domains:
        raise model._err("OpenAI's web search takes allowed_domains only: blocked_domains cannot be honoured there, so no "
                         "search was made (use allowed_domains)", "bad_request", False)
    tool: dict[str, Any] = {"type": "web_search"}
    if allowed_domains:
        tool["filters"] = {"allowed_domains": list(allowed_domains)}
    body = {"model": model.target.model, "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": f"Search the web for: {query}\n\nThen list what the results say, briefly."}]}],
        "tools": [tool], "max_tool_calls": max_uses, "max_output_tokens": max_tokens, "store": False, "include": [SEARCH_INCLUDE]}
    return post_search(model, model.url(), body, read_responses_search)


def read_responses_search(resp: Any) -> SearchParts:
    """A response's text, cited results, failed searches, usage (required) and searches (``web_search_call`` items)."""
    if not isinstance(resp, Mapping):
        raise UsageError(f"the reply is {type(resp).__name__}, not a response")
    results: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    texts: list[str] = []
    searches = 0
    for item in resp.get("output") or ():
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "web_search_call":
            searches += 1
            got_action = item.get("action")
            action: Mapping[str, Any] = got_action if isinstance(got_action, Mapping) else {}
            q = str(action.get("query") or "")
            if item.get("status") == "failed":
                errors.append(f"{q}: failed")
            for src in action.get("sources") or ():
                if isinstance(src, Mapping) and src.get("url"):
                    results.setdefault(str(src["url"]), {"query": q, "url": str(src["url"]), "title": "", "page_age": None})
        elif item.get("type") == "message":
            for c in item.get("content") or ():
                if not isinstance(c, Mapping) or c.get("type") != "output_text":
                    continue
                texts.append(str(c.get("text", "")))
                for a in c.get("annotations") or ():
                    if isinstance(a, Mapping) and a.get("type") == "url_citation" and a.get("url"):
                        got = results.setdefault(str(a["url"]), {"query": "", "url": str(a["url"]), "title": "", "page_age": None})
                        got["title"] = got["title"] or str(a.get("title") or "")
    usage = responses_usage(resp.get("usage"))
    return "".join(texts).strip(), list(results.values()), errors, usage, searches


# --- the record ---------------------------------------------------------------------------------------

RESPONSES_FAMILIES = tuple(ModelFamily(p, wire="responses", effort="medium", edit_format=PATCH_FORMAT) for p in RESPONSES_ONLY)
"""The families the ``openai`` provider serves over this wire (Codex's models: its effort and edit format)."""


def responses_adapter() -> type[ResponsesModel]:
    return ResponsesModel


RECORD = ProviderRecord(
    name="openai-responses",
    wire="responses",
    adapter=ResponsesModel,
    key_env=("OPENAI_API_KEY",),
    base_env=("OPENAI_BASE_URL",),
    default_base="https://api.openai.com/v1",
    header_vars=(("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")),
    cheap_model="gpt-5-mini",
    default_model="gpt-5-codex",
    reasoning="effort",
    families=(
        ModelFamily("gpt-5", effort="medium", edit_format=PATCH_FORMAT),
        ModelFamily("o1", effort="medium"),
        ModelFamily("o3", effort="medium"),
        ModelFamily("o4", effort="medium"),
        *RESPONSES_FAMILIES,
    ),
    web_search=True,
    price_prefix="openai/",
    telemetry_name="openai",
    no_key=("no API key for openai-responses: export OPENAI_API_KEY=sk-..., or point --base-url at a server "
            "speaking OpenAI's Responses API (its /v1)"),
)
"""OpenAI's Responses API, asked for by ``openai-responses:<model>`` (the ``openai`` provider's record sends
its Responses-only models here itself: ``RESPONSES_FAMILIES``)."""
