"""The fake provider's OpenAI Responses API (``POST /responses``): events as the ``openai`` SDK's types define them.

A reply (``fakeprovider``'s script) on this protocol takes, besides ``text``,
``tool_calls``, ``stop_reason``, ``usage``, ``model`` and the faults:

- ``reasoning``: a reasoning item comes first, its summary this text (streamed
  as ``response.reasoning_summary_text.delta``) when the request asks for one
  (``reasoning.summary``), its ``encrypted_content`` an opaque string when the
  request includes ``reasoning.encrypted_content``. Its reasoning tokens (the
  text's characters // 4 + 1, or ``usage.reasoning_tokens``) are counted in
  ``output_tokens``, as the API counts them.
- ``usage`` may also give ``reasoning_tokens`` and ``cached_tokens``.
- ``web_search``: as on the Anthropic protocol (``{"query", "results": [{"url", "title"}]}`` or
  ``{"query", "error": ...}``), answered when the request offers ``{"type": "web_search"}``: each a
  ``web_search_call`` item (its ``action.sources`` when the request includes
  ``web_search_call.action.sources``), at most ``max_tool_calls``, results filtered by
  ``filters.allowed_domains``; the results cited as ``url_citation`` annotations of the text.
- ``fault``: ``"failed"`` (a ``response.failed`` with a ``server_error``, before any output item),
  ``"error_event"`` (an ``error`` event mid-stream); the others as on every protocol.

As the API does with ``store: false``, a request that sends back a reasoning
item carrying an ``id``, or without its ``encrypted_content``, or with one this
server never issued (altered, or made up), is refused with a 400. ``stop_reason``
``max_tokens`` ends in ``response.incomplete`` (``max_output_tokens``), a
call's arguments cut in half. Cached input is the longest previously seen
prefix of whole items (tools, instructions, then each input item).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

__all__ = ["ResponsesReply", "refusal", "response_object"]

CREATED_AT = 1_700_000_000


def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _split(s: str, n: int) -> list[str]:
    n = max(1, n)
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


def encrypted(text: str, n: int) -> str:
    """The opaque ``encrypted_content`` this server issues for a reasoning item."""
    return "gAAAAB" + hashlib.sha256(f"{n}:{text}".encode()).hexdigest()


def refusal(body: dict[str, Any], issued: set[str]) -> str | None:
    """Why the API would refuse this request's reasoning items (``store: false``), or None."""
    for item in body.get("input") or []:
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        if "id" in item and body.get("store") is False:
            return (f"Item with id '{item['id']}' not found. Items are not persisted when `store` is set to false. "
                    "Try again with `store` set to true, or remove this item from your input.")
        enc = item.get("encrypted_content")
        if enc is None and body.get("store") is False:
            return "A reasoning item sent back with `store` set to false needs its `encrypted_content`."
        if enc is not None and enc not in issued:
            return "The encrypted content for item rs_ could not be verified."
    return None


def response_object(body: dict[str, Any], rid: str, model: str, status: str, output: list[dict[str, Any]],
                    usage: Any = None, incomplete: str | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``Response`` as the SDK's ``openai.types.responses.Response`` defines it."""
    return {
        "id": rid, "object": "response", "created_at": CREATED_AT, "status": status, "model": model,
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools") or [],
        "error": error, "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "store": body.get("store", True), "temperature": body.get("temperature"), "metadata": {},
        "usage": usage,
    }


class ResponsesReply:
    """One scripted reply on the Responses protocol: its output items, usage and events."""

    def __init__(self, body: dict[str, Any], r: dict[str, Any], n: int, calls: list[dict[str, Any]], prompt: int, cached: int,
                 issue: Callable[[str], None], covers: Callable[[str, str], bool]):
        self.body, self.r, self.n = body, r, n
        self.covers = covers
        """Whether a domain filter entry covers a URL (the fake's, shared with the Anthropic protocol)."""
        self.model = str(r.get("model") or body.get("model") or "fake")
        self.rid = f"resp_fake{n:04d}"
        self.size = int(r.get("chunk_size", 8))
        self.seq = 0
        self.cut_at: int | None = None
        self.stop = r.get("stop_reason") or ("tool_use" if calls else "end_turn")
        self.items = self._items(calls, issue)
        self.usage = self._usage(prompt, cached, calls)

    def _items(self, calls: list[dict[str, Any]], issue: Callable[[str], None]) -> list[dict[str, Any]]:
        r, n = self.r, self.n
        items: list[dict[str, Any]] = []
        opts = self.body.get("reasoning") if isinstance(self.body.get("reasoning"), dict) else None
        if r.get("reasoning") and opts is not None:
            th = str(r["reasoning"])
            item: dict[str, Any] = {"id": f"rs_fake{n:04d}", "type": "reasoning",
                                    "summary": [{"type": "summary_text", "text": th}] if opts.get("summary") else []}
            if "reasoning.encrypted_content" in (self.body.get("include") or []):
                item["encrypted_content"] = encrypted(th, n)
                issue(item["encrypted_content"])
            items.append(item)
        searched = self._searches()
        items += searched
        text = str(r.get("text", ""))
        cites = [{"type": "url_citation", "url": x["url"], "title": x.get("title", ""), "start_index": 0, "end_index": len(text)}
                 for s in searched for x in s.pop("_results")]
        if text or not calls:
            items.append({"id": f"msg_fake{n:04d}", "type": "message", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": cites}]})
        for i, c in enumerate(calls):
            args = _canon(c["arguments"])
            last = i == len(calls) - 1
            if self.stop == "max_tokens" and last:
                args = args[: max(1, len(args) // 2)]  # cut inside the last call's arguments, as a real model is
            items.append({"id": f"fc_fake{n:04d}_{i}", "type": "function_call", "status": "incomplete" if self.stop == "max_tokens" and last else "completed",
                          "call_id": c["id"], "name": c["name"], "arguments": args})
        return items

    def _searches(self) -> list[dict[str, Any]]:
        """The reply's ``web_search`` searches as ``web_search_call`` items, when the request offers the tool: at most
        ``max_tool_calls``, results filtered by ``filters.allowed_domains`` (subdomains included); the cited results
        under ``_results`` (taken out before the item is sent)."""
        tool = next((t for t in self.body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "web_search"), None)
        if tool is None or not self.r.get("web_search"):
            return []
        allowed = (tool.get("filters") or {}).get("allowed_domains")
        limit = self.body.get("max_tool_calls")
        sources = "web_search_call.action.sources" in (self.body.get("include") or [])
        out: list[dict[str, Any]] = []
        for i, srch in enumerate(self.r["web_search"]):
            if isinstance(limit, int) and i >= limit:
                break  # the API makes no more calls than max_tool_calls
            found = [x for x in srch.get("results", []) if not allowed or any(self.covers(d, x["url"]) for d in allowed)]
            action: dict[str, Any] = {"type": "search", "query": srch.get("query", "")}
            if sources:
                action["sources"] = [{"type": "url", "url": x["url"]} for x in found]
            out.append({"id": f"ws_fake{self.n:04d}_{i}", "type": "web_search_call", "status": "failed" if srch.get("error") else "completed",
                        "action": action, "_results": [] if srch.get("error") else found})
        return out

    def _usage(self, prompt: int, cached: int, calls: list[dict[str, Any]]) -> Any:
        r = self.r
        if r.get("usage") == "none":
            return None
        given = r.get("usage")
        u: dict[str, Any] = given if isinstance(given, dict) else {}
        thought = u.get("reasoning_tokens", len(str(r.get("reasoning", ""))) // 4 + 1 if r.get("reasoning") else 0)
        if r.get("usage") == "max":
            out: Any = int(self.body.get("max_output_tokens") or 0)
        else:
            chars = len(str(r.get("text", ""))) + sum(len(c["name"]) + len(_canon(c["arguments"])) for c in calls)
            out = u.get("output_tokens", chars // 4 + 1 + (thought if isinstance(thought, int) else 0))
        inp = u.get("input_tokens", prompt)
        cached = u.get("cached_tokens", min(cached, inp) if isinstance(inp, int) else cached)
        total = inp + out if isinstance(inp, int) and isinstance(out, int) else 0
        return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                "output_tokens": out, "output_tokens_details": {"reasoning_tokens": thought}, "total_tokens": total}

    # --- the stream ------------------------------------------------------------

    def ev(self, obj: dict[str, Any]) -> bytes:
        obj["sequence_number"] = self.seq
        self.seq += 1
        return b"event: " + str(obj["type"]).encode() + b"\ndata: " + json.dumps(obj).encode() + b"\n\n"

    def final(self) -> dict[str, Any]:
        """The whole response: completed, or incomplete at max tokens."""
        cut = self.stop == "max_tokens"
        return response_object(self.body, self.rid, self.model, "incomplete" if cut else "completed", self.items, self.usage,
                               "max_output_tokens" if cut else None)

    def events(self) -> list[bytes]:
        """Every event of the reply, in order, up to its ``response.completed`` (or its fault)."""
        start = response_object(self.body, self.rid, self.model, "in_progress", [])
        out = [self.ev({"type": "response.created", "response": start}), self.ev({"type": "response.in_progress", "response": start})]
        if self.r.get("fault") == "failed":  # the model failed before it wrote anything
            err = {"code": "server_error", "message": "The model failed to generate a response."}
            out.append(self.ev({"type": "response.failed", "response": response_object(self.body, self.rid, self.model, "failed",
                                                                                        [], None, None, err)}))
            return out
        for i, item in enumerate(self.items):
            out += self._item_events(i, item)
            if self.r.get("fault") == "error_event" and i == 0:
                out.append(self.ev({"type": "error", "code": "server_error", "message": "The server had an error while processing your request.",
                                    "param": None}))
                return out
        fin = self.final()
        out.append(self.ev({"type": "response.incomplete" if fin["status"] == "incomplete" else "response.completed", "response": fin}))
        return out

    def endless(self) -> tuple[list[bytes], Callable[[], bytes]]:
        """The start of a reply that never ends: its first events, and a text delta to repeat."""
        start = response_object(self.body, self.rid, self.model, "in_progress", [])
        item = {"id": f"msg_fake{self.n:04d}", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        head = [self.ev({"type": "response.created", "response": start}),
                self.ev({"type": "response.output_item.added", "output_index": 0, "item": item})]
        return head, lambda: self.ev({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": item["id"],
                                      "delta": "x" * self.size, "logprobs": []})

    def _item_events(self, i: int, item: dict[str, Any]) -> list[bytes]:
        kind = item["type"]
        added = {**item, "status": "in_progress"}
        if kind == "reasoning":
            added = {"id": item["id"], "type": "reasoning", "summary": []}
        elif kind == "message":
            added["content"] = []
        elif kind == "function_call":
            added["arguments"] = ""
        elif kind == "web_search_call":
            added = {"id": item["id"], "type": "web_search_call", "status": "in_progress", "action": {"type": "search", "query": ""}}
        out = [self.ev({"type": "response.output_item.added", "output_index": i, "item": added})]
        if kind == "web_search_call":
            for step in ("in_progress", "searching", "completed"):
                out.append(self.ev({"type": f"response.web_search_call.{step}", "item_id": item["id"], "output_index": i}))
        elif kind == "reasoning":
            out += self._summary_events(i, item)
        elif kind == "message":
            out += self._text_events(i, item)
        else:
            base = {"item_id": item["id"], "output_index": i}
            for piece in _split(item["arguments"], self.size):
                if self.cut_at is None:
                    self.cut_at = self.seq  # an event's index in the stream is its sequence number
                out.append(self.ev({"type": "response.function_call_arguments.delta", **base, "delta": piece}))
            out.append(self.ev({"type": "response.function_call_arguments.done", **base, "name": item["name"], "arguments": item["arguments"]}))
        out.append(self.ev({"type": "response.output_item.done", "output_index": i, "item": item}))
        return out

    def _summary_events(self, i: int, item: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        for k, part in enumerate(item["summary"]):
            base = {"item_id": item["id"], "output_index": i, "summary_index": k}
            out.append(self.ev({"type": "response.reasoning_summary_part.added", **base, "part": {"type": "summary_text", "text": ""}}))
            for piece in _split(part["text"], self.size):
                out.append(self.ev({"type": "response.reasoning_summary_text.delta", **base, "delta": piece}))
            out.append(self.ev({"type": "response.reasoning_summary_text.done", **base, "text": part["text"]}))
            out.append(self.ev({"type": "response.reasoning_summary_part.done", **base, "part": part}))
        return out

    def _text_events(self, i: int, item: dict[str, Any]) -> list[bytes]:
        text = item["content"][0]["text"]
        base = {"item_id": item["id"], "output_index": i, "content_index": 0}
        out = [self.ev({"type": "response.content_part.added", **base, "part": {"type": "output_text", "text": "", "annotations": []}})]
        for piece in _split(text, self.size) if text else []:
            out.append(self.ev({"type": "response.output_text.delta", **base, "delta": piece, "logprobs": []}))
        out.append(self.ev({"type": "response.output_text.done", **base, "text": text, "logprobs": []}))
        out.append(self.ev({"type": "response.content_part.done", **base, "part": item["content"][0]}))
        return out
