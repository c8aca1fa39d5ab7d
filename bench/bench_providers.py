"""Parse-and-assemble overhead per streamed turn: our adapters vs the official SDKs, same bytes, same run.

For each vendor, one realistic streamed turn (text deltas, then a tool call whose
arguments arrive as JSON fragments) is served from memory in 1 KB reads:

- full: a whole ``complete()`` through our adapter over ``httpx.MockTransport``,
  against the official SDK's streaming helper (``messages.stream(...)
  .get_final_message()`` / ``chat.completions.stream(...).get_final_completion()``)
  over ``httpx2.MockTransport``. Both include their HTTP client's overhead.
- core: our SSE decoder and assembler alone, against the SDK's own SSE decoder
  alone (bytes to events, nothing assembled): a lower bound for the SDK.

Figures are microseconds per KB of SSE (median of rounds, interleaved), and the
ratio ours/SDK (below 1.0 means we are faster). Target: ratio <= 1.0.

    .venv/bin/python bench/bench_providers.py [--kb 32] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import anthropic
import httpx
import httpx2
import openai
from anthropic._streaming import SSEDecoder as AnthropicSDKDecoder
from openai._streaming import SSEDecoder as OpenAISDKDecoder

from agentloop.events import ModelRequest
from agentloop.providers import open_model
from agentloop.providers.anthropic import AnthropicAssembler
from agentloop.providers.openai_compat import OpenAIAssembler
from agentloop.providers.sse import SSEDecoder

WORDS = "the quick brown fox jumps over a lazy dog while streaming tokens arrive in small pieces ".split()


def anthropic_body(kb: int) -> bytes:
    def ev(name: str, obj: object) -> str:
        return f"event: {name}\ndata: {json.dumps(obj)}\n\n"

    out = [ev("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                                 "content": [], "stop_reason": None, "stop_sequence": None,
                                 "usage": {"input_tokens": 900, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 800, "output_tokens": 1}}}),
           ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    size, i = 0, 0
    while size < kb * 1024 * 0.7:
        piece = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3)) + " "
        s = ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
        out.append(s)
        size += len(s)
        i += 1
    out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(ev("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}}))
    args = json.dumps({"path": "notes.txt", "content": " ".join(WORDS) * max(1, kb // 4)})
    for j in range(0, len(args), 12):
        out.append(ev("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": args[j : j + 12]}}))
    out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 2000}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


def openai_body(kb: int) -> bytes:
    def chunk(delta: dict[str, object], fin: str | None = None) -> str:
        return "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}) + "\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    size, i = 0, 0
    while size < kb * 1024 * 0.7:
        s = chunk({"content": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3)) + " "})
        out.append(s)
        size += len(s)
        i += 1
    args = json.dumps({"path": "notes.txt", "content": " ".join(WORDS) * max(1, kb // 4)})
    out.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}))
    for j in range(0, len(args), 12):
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[j : j + 12]}}]}))
    out.append(chunk({}, "tool_calls"))
    out.append("data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini", "choices": [],
                                      "usage": {"prompt_tokens": 900, "completion_tokens": 2000, "total_tokens": 2900, "prompt_tokens_details": {"cached_tokens": 800}}}) + "\n\n")
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def pieces(body: bytes, n: int = 1024) -> list[bytes]:
    return [body[i : i + n] for i in range(0, len(body), n)]


def ours_full(vendor: str, body: bytes) -> Callable[[], object]:
    parts = pieces(body)

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(parts))

    m = open_model(f"{vendor}:m", api_key="k", env={}, transport=httpx.MockTransport(handler), max_attempts=1)
    req = ModelRequest([{"role": "user", "content": "x"}], (), 4096)
    return lambda: m.complete(req)


def sdk_full(vendor: str, body: bytes) -> Callable[[], object]:
    parts = pieces(body)

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=iter(parts))

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    if vendor == "anthropic":
        ac = anthropic.Anthropic(api_key="k", http_client=http, max_retries=0)

        def run_a() -> object:
            with ac.messages.stream(model="m", max_tokens=4096, messages=[{"role": "user", "content": "x"}]) as s:
                return s.get_final_message()

        return run_a
    oc = openai.OpenAI(api_key="k", http_client=http, max_retries=0)

    def run_o() -> object:
        with oc.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as s:
            return s.get_final_completion()

    return run_o


def ours_core(vendor: str, body: bytes) -> Callable[[], object]:
    parts = pieces(body)

    def go() -> object:
        d = SSEDecoder()
        a = AnthropicAssembler() if vendor == "anthropic" else OpenAIAssembler()
        for p in parts:
            for ev, data in d.feed(p):
                a.feed(ev, data)
        for ev, data in d.close():
            a.feed(ev, data)
        return a.turn()

    return go


def sdk_core(vendor: str, body: bytes) -> Callable[[], object]:
    parts = pieces(body)
    cls = AnthropicSDKDecoder if vendor == "anthropic" else OpenAISDKDecoder
    return lambda: sum(1 for _ in cls().iter_bytes(iter(parts)))


def timeit(fn: Callable[[], object], min_time: float = 0.15) -> float:
    """Seconds per call."""
    fn()
    n, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= min_time:
            return t / n
        n *= 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", type=int, default=32, help="size of the streamed turn in KB of SSE")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    print(f"{'vendor':<10}{'what':<6}{'KB':>6}{'ours us/KB':>12}{'SDK us/KB':>12}{'ours/SDK':>10}")
    worst = 0.0
    for vendor, make in (("anthropic", anthropic_body), ("openai", openai_body)):
        body = make(a.kb)
        kb = len(body) / 1024
        for what, o, s in (("full", ours_full, sdk_full), ("core", ours_core, sdk_core)):
            fo, fs = o(vendor, body), s(vendor, body)
            to: list[float] = []
            ts: list[float] = []
            for _ in range(a.rounds):
                to.append(timeit(fo))
                ts.append(timeit(fs))
            mo, ms = statistics.median(to) * 1e6 / kb, statistics.median(ts) * 1e6 / kb
            worst = max(worst, mo / ms)
            print(f"{vendor:<10}{what:<6}{kb:>6.1f}{mo:>12.1f}{ms:>12.1f}{mo / ms:>10.2f}")
    print(f"worst ratio ours/SDK: {worst:.2f} (target <= 1.00: {'met' if worst <= 1.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
