"""Images in MCP tool results reach the model as the vendor's own image content, not as base64 inside JSON text.

Checked three ways: our request bodies are what the official SDKs send for the
same conversation written in their native shapes; every message we send is
accepted by the SDKs' own parameter types (checked structurally, with negative
controls showing the check rejects an image in an OpenAI tool message); and a
real MCP server's image goes through a real run to the fake provider.
"""

from __future__ import annotations

import base64
import collections.abc
import json
import types
import typing
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import typing_extensions

from agentloop import Budget, run
from agentloop.events import ModelRequest, ToolResult, ToolSpec
from agentloop.loop import tool_message
from agentloop.providers import open_model
from agentloop.providers.anthropic import to_anthropic
from agentloop.providers.images import Image, tool_parts
from agentloop.providers.openai_compat import to_openai
from agentloop.testing.fakeprovider import FakeProvider

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 20).decode()
SHOT = {"type": "object", "properties": {}}
TOOLS = (ToolSpec("mcp__web__shot", "a screenshot", SHOT),)


def mcp_result(*blocks: dict[str, Any], structured: Any = None) -> ToolResult:
    """What agentloop.mcp.client.result_value records for a result with images."""
    content: dict[str, Any] = {"content": list(blocks)}
    if structured is not None:
        content["structuredContent"] = structured
    return ToolResult("call_1", "mcp__web__shot", True, content=content)


def conversation(result: ToolResult, after: str | None = "What does it show?") -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Take a screenshot."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "mcp__web__shot", "arguments": {}}]},
        tool_message(result),  # exactly what the loop sends: the result as canonical JSON text
    ]
    if after is not None:
        msgs.append({"role": "user", "content": after})
    return msgs


SHOT_RESULT = mcp_result({"type": "text", "text": "the page"}, {"type": "image", "data": PNG, "mimeType": "image/png"})


# --- which results are split ---------------------------------------------------------


def test_an_mcp_image_result_is_split_into_text_and_images_in_order():
    r = mcp_result({"type": "image", "data": PNG, "mimeType": "image/png"}, {"type": "text", "text": "caption"},
                   {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, structured={"w": 1})
    parts = tool_parts(tool_message(r)["content"])
    assert parts == [Image("image/png", PNG), "caption", '{"data":"AAAA","mimeType":"audio/wav","type":"audio"}',
                     '{"structuredContent":{"w":1}}']


@pytest.mark.parametrize("text", [
    "plain text",
    '{"content":[{"type":"text","text":"no image"}]}',
    json.dumps({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}], "other": 1}, sort_keys=True),
    json.dumps({"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]}),
    json.dumps({"content": [{"type": "image", "data": PNG, "mimeType": "image/svg+xml"}]}),
    json.dumps({"content": [{"type": "image", "data": PNG}]}),
    '{"content":[',
])
def test_anything_else_stays_text(text):
    assert tool_parts(text) is None
    system, msgs, _ = to_anthropic([{"role": "tool", "tool_call_id": "c", "ok": True, "content": text}], (), cache=False)
    assert msgs[0]["content"][0]["content"] == text
    out, _ = to_openai([{"role": "tool", "tool_call_id": "c", "ok": True, "content": text}], ())
    assert out == [{"role": "tool", "tool_call_id": "c", "content": text}]


def test_a_failed_result_is_never_split():
    text = tool_message(SHOT_RESULT)["content"]
    _, msgs, _ = to_anthropic([{"role": "tool", "tool_call_id": "c", "ok": False, "content": text}], (), cache=False)
    assert msgs[0]["content"][0]["content"] == text


# --- the SDKs' own parameter types accept what we send --------------------------------


def _strip(tp: Any) -> Any:
    while typing_extensions.get_origin(tp) in (typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.Annotated,
                                               typing.Annotated):
        tp = typing_extensions.get_args(tp)[0]
    return tp


def accepts(tp: Any, value: Any, where: str = "$") -> list[str]:
    """Where ``value`` does not fit the SDK type ``tp`` (a TypedDict, Union, Literal, Iterable...); [] when it fits."""
    tp = _strip(tp)
    origin, args = typing_extensions.get_origin(tp), typing_extensions.get_args(tp)
    if tp in (Any, object):
        return []
    if origin in (typing.Union, types.UnionType):
        tries = [accepts(a, value, where) for a in args]
        return [] if any(not t for t in tries) else [f"{where}: fits no member of {tp}: " + "; ".join(min(tries, key=len))]
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in args else [f"{where}: {value!r} not in {args}"]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [e for i, v in enumerate(value) for e in accepts(args[0], v, f"{where}[{i}]")]
    if origin in (dict, collections.abc.Mapping):
        return [] if isinstance(value, dict) else [f"{where}: not an object"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: not an object ({tp.__name__})"]
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        errs = [f"{where}: unknown key {k!r} for {tp.__name__}" for k in value if k not in hints]
        errs += [f"{where}: missing {k!r} for {tp.__name__}" for k in tp.__required_keys__ if k not in value]
        return errs + [e for k, v in value.items() if k in hints for e in accepts(hints[k], v, f"{where}.{k}")]
    if tp is type(None):
        return [] if value is None else [f"{where}: not null"]
    if tp in (str, int, float, bool):
        ok = isinstance(value, tp) and not (tp is int and isinstance(value, bool))
        return [] if ok else [f"{where}: not a {tp.__name__}"]
    base = origin or tp
    if isinstance(base, type):  # IO[bytes], PathLike: the SDKs' file inputs, never JSON
        return [] if isinstance(value, base) else [f"{where}: not a {base.__name__}"]
    raise AssertionError(f"the checker does not know {tp!r} at {where}")


def test_the_sdk_type_check_rejects_an_image_inside_an_openai_tool_message():
    """Negative control: why the image moves to a user message."""
    bad = {"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}]}
    assert accepts(openai.types.chat.ChatCompletionMessageParam, bad)
    good_user = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}]}
    assert accepts(openai.types.chat.ChatCompletionMessageParam, good_user) == []


def test_the_sdk_type_check_rejects_an_unsupported_anthropic_image():
    bad = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/svg+xml", "data": PNG}}]}]}
    assert accepts(anthropic.types.MessageParam, bad)


@pytest.mark.parametrize("after", ["What does it show?", None])
def test_what_we_send_fits_the_sdks_message_types(after):
    msgs = conversation(SHOT_RESULT, after)
    system, amsgs, atools = to_anthropic(msgs, TOOLS)
    for m in amsgs:
        assert accepts(anthropic.types.MessageParam, m) == []
    omsgs, _ = to_openai(msgs, TOOLS)
    for m in omsgs:
        assert accepts(openai.types.chat.ChatCompletionMessageParam, m) == []


# --- our bodies are the SDKs' bodies for the same conversation ----------------------


def _capture_ours(spec: str, body: bytes, messages: list[dict[str, Any]]) -> Any:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    m = open_model(spec, api_key="sk-test-0123456789", transport=httpx.MockTransport(handler), env={}, max_attempts=1)
    m.complete(ModelRequest(messages, TOOLS, 321))
    return json.loads(seen[0].content)


def _capture_sdk(make: Any, body: bytes) -> Any:
    seen: list[httpx2.Request] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    make(httpx2.Client(transport=httpx2.MockTransport(handler)))
    return json.loads(seen[0].content)


ANTHROPIC_SSE = b"".join(
    b"event: %s\ndata: %s\n\n" % (e.encode(), json.dumps(d).encode()) for e, d in [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                                                                "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a page"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ])
OPENAI_SSE = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
              b'"delta":{"content":"a page"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


def test_our_anthropic_request_with_a_tool_image_is_the_sdks():
    ours = _capture_ours("anthropic:claude-sonnet-4-6", ANTHROPIC_SSE, conversation(SHOT_RESULT))
    eph = {"type": "ephemeral"}

    def sdk(http: httpx2.Client) -> None:
        c = anthropic.Anthropic(api_key="sk-test-0123456789", http_client=http, max_retries=0)
        with c.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=321,
            system=[{"type": "text", "text": "You are terse.", "cache_control": eph}],
            tools=[{"name": "mcp__web__shot", "description": "a screenshot", "input_schema": SHOT, "cache_control": eph}],
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "Take a screenshot."}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "mcp__web__shot", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": [
                        {"type": "text", "text": "the page"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    ]},
                    {"type": "text", "text": "What does it show?", "cache_control": eph},
                ]},
            ],
        ) as s:
            s.get_final_message()

    assert ours == _capture_sdk(sdk, ANTHROPIC_SSE)
    assert PNG not in json.dumps(ours["messages"][2]["content"][0]["content"][0])  # not inside the text


def test_our_openai_request_with_a_tool_image_is_the_sdks():
    ours = _capture_ours("openai:gpt-4o-mini", OPENAI_SSE, conversation(SHOT_RESULT))

    def sdk(http: httpx2.Client) -> None:
        c = openai.OpenAI(api_key="sk-test-0123456789", http_client=http, max_retries=0)
        list(c.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Take a screenshot."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "mcp__web__shot", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "the page\n[image 1 (image/png): attached in the next user message]"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Image 1 returned by the tool call call_1 (mcp__web__shot):"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ]},
                {"role": "user", "content": "What does it show?"},
            ],
            tools=[{"type": "function", "function": {"name": "mcp__web__shot", "description": "a screenshot", "parameters": SHOT}}],
            max_completion_tokens=321,
            stream=True,
            stream_options={"include_usage": True},
        ))

    assert ours == _capture_sdk(sdk, OPENAI_SSE)


def test_openai_images_follow_all_of_a_turns_tool_messages():
    msgs = conversation(SHOT_RESULT, after=None)
    msgs[2]["tool_calls"].append({"id": "call_2", "name": "Read", "arguments": {}})
    msgs.append({"role": "tool", "tool_call_id": "call_2", "name": "Read", "ok": True, "content": "text"})
    out, _ = to_openai(msgs, TOOLS)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert out[-1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"


# --- end to end: a real MCP server's image, a real run, the fake provider ---------------


@pytest.mark.parametrize("vendor", ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"])
def test_an_mcp_servers_image_reaches_the_model_as_an_image(tmp_path, vendor):
    from agentloop.mcp import McpManager, ServerConfig
    from mcp_servers.helpers import PY, PYSERVER

    script = {"replies": [{"tool_calls": [{"name": "mcp__py__picture", "arguments": {}}]}, {"text": "a pixel"}]}
    with McpManager([ServerConfig("py", "stdio", command=PY, args=(PYSERVER,))], startup_timeout=60) as mgr, FakeProvider(script) as fp:
        base = fp.url + ("/v1" if vendor.startswith("openai") else "")
        m = open_model(vendor, base_url=base, env={}, max_attempts=1)
        r = run(m, mgr.tools(), "show me", Budget(max_steps=3))
        second = fp.requests[1]["body"]
    assert r.answer == "a pixel"
    if vendor.startswith("openai"):
        (tool,) = [x for x in second["messages"] if x["role"] == "tool"]
        assert "base64" not in tool["content"] and "[image 1 (image/png)" in tool["content"]
        url = second["messages"][-1]["content"][1]["image_url"]["url"]
    else:
        (res,) = [b for x in second["messages"] for b in x["content"] if b.get("type") == "tool_result"]
        (img,) = [b for b in res["content"] if b["type"] == "image"]
        url = f"data:{img['source']['media_type']};base64,{img['source']['data']}"
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG")
