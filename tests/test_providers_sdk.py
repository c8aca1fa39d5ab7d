"""Our wire formats, checked against the official ``openai`` and ``anthropic`` SDKs.

Three directions: the SDKs parse what our fake server sends into their own
types; our adapters send what the SDKs send for the same conversation; and the
recorded Anthropic streams give the same final message through our adapter
as through the SDK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from agentloop.events import ModelRequest, ToolSpec
from agentloop.providers import open_model
from agentloop.providers.anthropic import AnthropicAssembler
from agentloop.providers.sse import parse_events
from agentloop.testing.fakeprovider import FakeProvider

DATA = Path(__file__).parent / "data" / "anthropic-sse"
FILES = sorted(p.name for p in DATA.glob("*.txt"))

WEATHER = {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
SCRIPT = [
    {"text": "Let me look that up for you, one moment.", "chunk_size": 5},
    {"text": "Checking.", "tool_calls": [{"name": "get_weather", "arguments": {"location": "Paris", "units": ["c", "f"]}}], "chunk_size": 3},
    {"tool_calls": [{"name": "get_weather", "arguments": {"location": "Oslo"}}, {"name": "get_weather", "arguments": {"location": "Rome"}}]},
    {"text": "Cut here", "stop_reason": "max_tokens"},
]


@pytest.fixture()
def fake() -> Any:
    with FakeProvider({"replies": SCRIPT * 2}) as fp:
        yield fp


# --- the SDKs accept what our server sends ---------------------------------


def test_anthropic_sdk_streams_our_server_into_its_own_message_types(fake: Any) -> None:
    c = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.url, max_retries=0)
    msgs = [{"role": "user", "content": "weather?"}]
    tools = [{"name": "get_weather", "description": "d", "input_schema": WEATHER}]
    finals = []
    for _ in range(4):
        with c.messages.stream(model="claude-haiku-4-5", max_tokens=100, messages=msgs, tools=tools) as s:  # type: ignore[arg-type]
            texts = list(s.text_stream)
            finals.append((texts, s.get_final_message()))
    t0, m0 = finals[0]
    assert "".join(t0) == SCRIPT[0]["text"] and len(t0) > 1
    assert isinstance(m0, anthropic.types.Message) and m0.stop_reason == "end_turn"
    m1 = finals[1][1]
    assert [b.type for b in m1.content] == ["text", "tool_use"]
    assert m1.content[1].input == {"location": "Paris", "units": ["c", "f"]}  # type: ignore[union-attr]
    assert m1.stop_reason == "tool_use" and m1.usage.input_tokens > 0
    m2 = finals[2][1]
    assert [b.input for b in m2.content if b.type == "tool_use"] == [{"location": "Oslo"}, {"location": "Rome"}]  # type: ignore[union-attr]
    assert finals[3][1].stop_reason == "max_tokens"


def test_anthropic_sdk_parses_our_non_streamed_message(fake: Any) -> None:
    c = anthropic.Anthropic(api_key="k", base_url=fake.url, max_retries=0)
    c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    m = c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert m.content[1].name == "get_weather" and m.stop_reason == "tool_use"  # type: ignore[union-attr]


def test_openai_sdk_streams_our_server_into_its_own_chunk_types(fake: Any) -> None:
    c = openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
    msgs = [{"role": "user", "content": "weather?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": WEATHER}}]
    results = []
    for _ in range(4):
        stream = c.chat.completions.create(model="gpt-4o-mini", messages=msgs, tools=tools, stream=True, stream_options={"include_usage": True})  # type: ignore[arg-type,call-overload]
        chunks = list(stream)
        assert all(isinstance(ch, openai.types.chat.ChatCompletionChunk) for ch in chunks)
        results.append(chunks)
    text = "".join(ch.choices[0].delta.content or "" for ch in results[0] if ch.choices)
    assert text == SCRIPT[0]["text"]
    assert results[0][-1].usage is not None and results[0][-1].usage.completion_tokens > 0
    args = "".join(
        tc.function.arguments or ""
        for ch in results[1] if ch.choices and ch.choices[0].delta.tool_calls
        for tc in ch.choices[0].delta.tool_calls if tc.function
    )
    assert json.loads(args) == {"location": "Paris", "units": ["c", "f"]}
    finishes = [ch.choices[0].finish_reason for r in results for ch in r if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["stop", "tool_calls", "tool_calls", "length"]


def test_openai_sdk_parses_our_non_streamed_completion_and_stream_helper(fake: Any) -> None:
    c = openai.OpenAI(api_key="k", base_url=fake.url + "/v1", max_retries=0)
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert r.choices[0].message.content == SCRIPT[0]["text"] and r.usage is not None
    with c.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as s:
        final = s.get_final_completion()
    tc = final.choices[0].message.tool_calls
    assert tc is not None and json.loads(tc[0].function.arguments) == {"location": "Paris", "units": ["c", "f"]}  # type: ignore[union-attr]


# --- our adapters send what the SDKs send ----------------------------------

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"location": "Paris"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "ok": True, "content": "18C"},
    {"role": "user", "content": "And tomorrow?"},
]
TOOLS = (ToolSpec("get_weather", "Current weather", WEATHER),)


def _capture_ours(spec: str, body: bytes, **kw: Any) -> httpx.Request:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    m = open_model(spec, api_key="sk-secret-0123456789", transport=httpx.MockTransport(handler), env={}, **kw)
    m.complete(ModelRequest(CONVERSATION, TOOLS, 321))
    return seen[0]


def _capture_sdk(make: Any, body: bytes) -> httpx2.Request:
    seen: list[httpx2.Request] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    make(httpx2.Client(transport=httpx2.MockTransport(handler)))
    return seen[0]


def test_our_anthropic_request_matches_the_sdks_for_the_same_conversation() -> None:
    sse = (DATA / "basic_response.txt").read_bytes()
    ours = _capture_ours("anthropic:claude-sonnet-4-6", sse)
    eph = {"type": "ephemeral"}

    def sdk(http: httpx2.Client) -> None:
        c = anthropic.Anthropic(api_key="sk-secret-0123456789", http_client=http, max_retries=0)
        with c.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=321,
            system=[{"type": "text", "text": "You are terse.", "cache_control": eph}],
            tools=[{"name": "get_weather", "description": "Current weather", "input_schema": WEATHER, "cache_control": eph}],
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"location": "Paris"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
                    {"type": "text", "text": "And tomorrow?", "cache_control": eph},
                ]},
            ],
        ) as s:
            s.get_final_message()

    theirs = _capture_sdk(sdk, sse)
    assert json.loads(ours.content) == json.loads(theirs.content)
    assert ours.url.path == theirs.url.path == "/v1/messages"
    for h in ("authorization", "anthropic-version", "content-type"):
        assert ours.headers[h] == theirs.headers[h], h


def test_our_openai_request_matches_the_sdks_for_the_same_conversation() -> None:
    sse = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    ours = _capture_ours("openai:gpt-4o-mini", sse)

    def sdk(http: httpx2.Client) -> None:
        c = openai.OpenAI(api_key="sk-secret-0123456789", http_client=http, max_retries=0)
        list(c.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "What is the weather in Paris?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                {"role": "user", "content": "And tomorrow?"},
            ],
            tools=[{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": WEATHER}}],
            max_completion_tokens=321,
            stream=True,
            stream_options={"include_usage": True},
        ))

    theirs = _capture_sdk(sdk, sse)
    assert json.loads(ours.content) == json.loads(theirs.content)
    assert str(ours.url) == str(theirs.url) == "https://api.openai.com/v1/chat/completions"
    assert ours.headers["authorization"] == theirs.headers["authorization"]
    assert ours.headers["content-type"] == theirs.headers["content-type"]


# --- recorded Anthropic streams: our final message == the SDK's --------------


def _sdk_final(body: bytes) -> anthropic.types.Message:
    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    c = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)), max_retries=0)
    with c.messages.stream(model="m", max_tokens=1024, messages=[{"role": "user", "content": "x"}]) as s:
        return s.get_final_message()


def _ours(body: bytes, chunk: int) -> Any:
    def handler(req: httpx.Request) -> httpx.Response:
        # served in small pieces, so events and JSON are cut across reads
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter([body[i : i + chunk] for i in range(0, len(body), chunk)]))

    m = open_model("anthropic:m", api_key="k", transport=httpx.MockTransport(handler), env={}, max_attempts=1)
    return m.complete(ModelRequest([{"role": "user", "content": "x"}], (), 1024))


@pytest.mark.parametrize("name", FILES)
def test_recorded_anthropic_stream_assembles_like_the_sdk(name: str) -> None:
    body = (DATA / name).read_bytes()
    sdk = _sdk_final(body).model_dump(mode="json", warnings=False)
    asm = AnthropicAssembler()
    for ev, data in parse_events(body):
        asm.feed(ev, data)
    ours = asm.message()
    assert ours["stop_reason"] == sdk["stop_reason"]
    assert ours["model"] == sdk["model"] or any(b["type"] == "fallback" for b in sdk["content"])
    for k in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        assert ours["usage"].get(k, 0) == (sdk["usage"].get(k) or 0), k
    assert [b["type"] for b in ours["content"]] == [b["type"] for b in sdk["content"]]
    for a, b in zip(ours["content"], sdk["content"]):
        if a["type"] == "text":
            assert a["text"] == b["text"]
        if a["type"] == "tool_use" and name != "incomplete_partial_json_response.txt":
            assert (a["id"], a["name"], a["input"]) == (b["id"], b["name"], b["input"])


@pytest.mark.parametrize("name", [f for f in FILES if f != "incomplete_partial_json_response.txt"])
@pytest.mark.parametrize("chunk", [7, 4096])
def test_recorded_anthropic_stream_gives_the_sdks_reply_through_our_adapter(name: str, chunk: int) -> None:
    body = (DATA / name).read_bytes()
    sdk = _sdk_final(body)
    reply = _ours(body, chunk)
    assert reply.text == "".join(b.text for b in sdk.content if b.type == "text")
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        (b.id, b.name, b.input) for b in sdk.content if b.type == "tool_use"
    ]
    assert reply.finish_reason == sdk.stop_reason
    assert reply.usage is not None
    assert reply.usage.input_tokens == sdk.usage.input_tokens
    assert reply.usage.output_tokens == sdk.usage.output_tokens
    assert reply.usage.cache_read_tokens == (sdk.usage.cache_read_input_tokens or 0)
    fb = [b for b in sdk.content if b.type == "fallback"]
    # the model that answered: a fallback block names it
    assert reply.model == (fb[0].to["model"] if fb else sdk.model)  # type: ignore[attr-defined]


def test_recorded_stream_cut_inside_tool_arguments_is_a_cut_reply_without_the_call_not_a_guess() -> None:
    """The half-written call is not guessed at: the reply comes back cut at max_tokens, with no
    call, for the loop to continue."""
    body = (DATA / "incomplete_partial_json_response.txt").read_bytes()
    sdk = _sdk_final(body)
    assert sdk.stop_reason == "max_tokens"
    reply = _ours(body, 64)
    assert reply.finish_reason == "max_tokens" and reply.tool_calls == ()


# --- negative controls: the comparisons above can fail -------------------------------


def test_the_request_comparison_sees_a_missing_cache_breakpoint() -> None:
    sse = (DATA / "basic_response.txt").read_bytes()
    with_cache = json.loads(_capture_ours("anthropic:claude-sonnet-4-6", sse).content)
    without = json.loads(_capture_ours("anthropic:claude-sonnet-4-6", sse, cache=False).content)
    assert with_cache != without and "cache_control" not in json.dumps(without)


def test_the_stream_comparison_sees_a_lost_delta() -> None:
    body = (DATA / "tool_use_response.txt").read_bytes()
    blocks = body.split(b"\n\n")
    lost = b"\n\n".join(b for b in blocks if b'"partial_json":"ar"' not in b)
    assert lost != body
    sdk = _sdk_final(body)
    asm = AnthropicAssembler()
    for ev, data in parse_events(lost):
        asm.feed(ev, data)
    ours = asm.message()
    sdk_tool = next(b for b in sdk.content if b.type == "tool_use")
    assert ours["content"][1]["input"] != sdk_tool.input  # type: ignore[union-attr]
