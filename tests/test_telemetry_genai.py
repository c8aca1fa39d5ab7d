"""Traces checked against the OpenTelemetry GenAI semantic conventions, through a real OTLP receiver.

agentloop runs against the local fake provider (both wire protocols) and
exports through the real OTLP/HTTP exporter; the receiver here decodes the
real protobuf (``opentelemetry-proto``). What is checked, from the
conventions ("GenAI spans": Inference, Execute tool span; "Recording content
on attributes"; the attribute registry; the input and output messages JSON
schemas, copied into ``tests/data/genai-semconv/``):

- ``gen_ai.provider.name`` is the well-known value of the provider
  (``openai``, ``anthropic``), not ``_OTHER``;
- a ``chat`` span has ``server.address``/``server.port``,
  ``gen_ai.response.id``, ``gen_ai.usage.cache_read.input_tokens`` (counted in
  ``gen_ai.usage.input_tokens``);
- ``gen_ai.input.messages`` and ``gen_ai.output.messages`` follow the
  schemas (the ``parts`` shape) on every ``chat`` span;
- an ``execute_tool`` span has ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``;
- every ``gen_ai.*`` name exported is one the conventions define (the
  ``opentelemetry-semantic-conventions`` package's constants);
- a secret argument never leaves: arguments, inputs and outputs are
  redacted as the transcript redacts them.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as GA  # noqa: E402

from agentloop.testing.fakeprovider import FakeProvider  # noqa: E402

DATA = Path(__file__).parent / "data" / "genai-semconv"
INPUT_SCHEMA = json.loads((DATA / "gen-ai-input-messages.json").read_text())
OUTPUT_SCHEMA = json.loads((DATA / "gen-ai-output-messages.json").read_text())
KNOWN = {v for k, v in vars(GA).items() if k.startswith("GEN_AI_") and isinstance(v, str)}
SECRET = "sk-trace-secret-0123456789abcdef"


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


class _Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each ExportTraceServiceRequest as the collector would."""

    spans: list[dict[str, Any]]

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        req = ExportTraceServiceRequest()
        req.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    self.server.spans.append({  # type: ignore[attr-defined]
                        "name": sp.name, "kind": sp.kind, "path": self.path, "status": sp.status.code,
                        "attrs": {a.key: _value(a.value) for a in sp.attributes},
                    })
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Any]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.spans = []  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


def _env(tmp_path: Path, receiver: Any, vendor: str, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(tmp_path / "home"), OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_port}",
               OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    if vendor == "openai":
        env.update(OPENAI_API_KEY="sk-test-key-not-real", OPENAI_BASE_URL=f"{url}/v1")
    else:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-key-not-real", ANTHROPIC_BASE_URL=url)
    return env


MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_command_line_run_exports_the_conventions_attributes_for_each_wire_protocol(vendor: str, tmp_path: Path, receiver: Any) -> None:
    """GenAI spans, "Inference" and "Execute tool span"; the input and output messages JSON schemas."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "n.txt").write_text("hi from the file\n")
    script = {"cache": True, "replies": [
        {"text": "Reading it.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "n.txt"}}]},
        {"text": "It says hi."},
    ]}
    with FakeProvider(script) as fake:
        p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "what does n.txt say?", "--model", f"{vendor}:{MODELS[vendor]}",
                            "--output-format", "json"], cwd=proj, env=_env(tmp_path, receiver, vendor, fake.url),
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        port = int(fake.url.rsplit(":", 1)[1].split("/")[0])
    assert p.returncode == 0, p.stderr
    spans = receiver.spans
    assert sorted(s["name"] for s in spans) == sorted([f"chat {MODELS[vendor]}"] * 2 + ["execute_tool Read", "invoke_agent agentloop"])
    assert {s["path"] for s in spans} == {"/v1/traces"}
    names = {k for s in spans for k in s["attrs"] if k.startswith("gen_ai.")}
    assert names <= KNOWN, names - KNOWN  # no name the conventions do not define

    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert all(s["kind"] == 3 for s in chats)  # SPAN_KIND_CLIENT
    prefix = {"openai": "chatcmpl-", "anthropic": "msg_"}[vendor]
    for c in chats:
        a = c["attrs"]
        assert a[GA.GEN_AI_PROVIDER_NAME] == getattr(GA.GenAiProviderNameValues, vendor.upper()).value
        assert a[GA.GEN_AI_OPERATION_NAME] == "chat" and a[GA.GEN_AI_REQUEST_MODEL] == MODELS[vendor]
        assert a["server.address"] == "127.0.0.1" and a["server.port"] == port
        assert a[GA.GEN_AI_RESPONSE_ID].startswith(prefix)
        jsonschema.validate(json.loads(a[GA.GEN_AI_INPUT_MESSAGES]), INPUT_SCHEMA)
        jsonschema.validate(json.loads(a[GA.GEN_AI_OUTPUT_MESSAGES]), OUTPUT_SCHEMA)
        assert a[GA.GEN_AI_USAGE_INPUT_TOKENS] >= a[GA.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] + a[GA.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]
    assert chats[0]["attrs"][GA.GEN_AI_RESPONSE_ID] != chats[1]["attrs"][GA.GEN_AI_RESPONSE_ID]
    first, second = sorted(chats, key=lambda s: s["attrs"]["agentloop.step"])
    assert second["attrs"][GA.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] > 0  # the fake remembered the first call's prefix

    inp1 = json.loads(first["attrs"][GA.GEN_AI_INPUT_MESSAGES])
    assert inp1[-1] == {"role": "user", "parts": [{"type": "text", "content": "what does n.txt say?"}]}
    system = first["attrs"].get(GA.GEN_AI_SYSTEM_INSTRUCTIONS)
    if vendor == "anthropic":  # the system prompt goes apart from the chat, as the provider takes it
        assert system and json.loads(system)[0]["type"] == "text" and all(m["role"] != "system" for m in inp1)
    else:
        assert system is None and inp1[0]["role"] == "system"
    out1 = json.loads(first["attrs"][GA.GEN_AI_OUTPUT_MESSAGES])
    assert out1[0]["finish_reason"] == "tool_call" and out1[0]["parts"][0] == {"type": "text", "content": "Reading it."}
    call = out1[0]["parts"][1]
    assert call["type"] == "tool_call" and call["name"] == "Read" and call["arguments"] == {"file_path": "n.txt"}
    inp2 = json.loads(second["attrs"][GA.GEN_AI_INPUT_MESSAGES])
    assert inp2[-2]["parts"][-1] == call  # the call as sent back
    response = inp2[-1]["parts"][0]
    assert inp2[-1]["role"] == "tool" and response["type"] == "tool_call_response" and response["id"] == call["id"]
    assert "hi from the file" in json.dumps(response["response"])
    out2 = json.loads(second["attrs"][GA.GEN_AI_OUTPUT_MESSAGES])
    assert out2 == [{"role": "assistant", "parts": [{"type": "text", "content": "It says hi."}], "finish_reason": "stop"}]

    (tool,) = [s for s in spans if s["name"] == "execute_tool Read"]
    t = tool["attrs"]
    assert tool["kind"] == 1 and t[GA.GEN_AI_TOOL_CALL_ID] == call["id"]  # SPAN_KIND_INTERNAL
    assert json.loads(t[GA.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"file_path": "n.txt"}
    assert "hi from the file" in t[GA.GEN_AI_TOOL_CALL_RESULT] and t[GA.GEN_AI_TOOL_DESCRIPTION]
    (run,) = [s for s in spans if s["name"] == "invoke_agent agentloop"]
    assert run["attrs"][GA.GEN_AI_PROVIDER_NAME] == vendor
    assert run["attrs"][GA.GEN_AI_USAGE_INPUT_TOKENS] == sum(c["attrs"][GA.GEN_AI_USAGE_INPUT_TOKENS] for c in chats)
    jsonschema.validate(json.loads(run["attrs"][GA.GEN_AI_OUTPUT_MESSAGES]), OUTPUT_SCHEMA)


def test_a_secret_argument_reaches_the_model_but_never_the_traces(tmp_path: Path, receiver: Any) -> None:
    """"Recording content on attributes": contents are opt-in and sensitive; agentloop exports them redacted as its records are."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentloop import Budget, tool
    from agentloop.providers import open_model
    from agentloop.telemetry import Tracing

    @tool(secret_args=("$.token",))
    def call_api(token: str) -> str:
        """Call an API with a token."""
        return f"called with {token}"  # an echo: the record redacts this result too

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.server_port}/v1/traces")))
    tracing = Tracing(provider, capture_content=True)
    script = [{"tool_calls": [{"name": "call_api", "arguments": {"token": SECRET}}]}, {"text": "Done."}]
    with FakeProvider(script) as fake:
        model = open_model("openai:gpt-4o-mini", base_url=f"{fake.url}/v1", api_key="sk-test-key-not-real", env={})
        try:
            res = tracing.run(model, [call_api], "Call the API.", Budget(max_steps=4, max_usd_micros=100_000), run_id="r1")
        finally:
            model.close()
        sent = json.dumps(fake.requests)
    provider.shutdown()
    assert res.stop_reason == "no_tool_calls"
    assert SECRET in sent  # the model wrote it and gets its own call back
    leaks = [(s["name"], k) for s in receiver.spans for k, v in s["attrs"].items() if SECRET in str(v)]
    assert not leaks, leaks
    (t,) = [s["attrs"] for s in receiver.spans if s["name"] == "execute_tool call_api"]
    assert "$redacted" in json.loads(t[GA.GEN_AI_TOOL_CALL_ARGUMENTS])["token"]
    second = max((s["attrs"] for s in receiver.spans if s["name"] == "chat gpt-4o-mini"), key=lambda a: a["agentloop.step"])
    inp = json.loads(second[GA.GEN_AI_INPUT_MESSAGES])
    jsonschema.validate(inp, INPUT_SCHEMA)
    assert "$redacted" in json.dumps(inp[-2]["parts"][-1]["arguments"])  # the call sent back, as recorded
    assert "$redacted" in json.dumps(inp[-1]["parts"][0]["response"]) and "$redacted" in t[GA.GEN_AI_TOOL_CALL_RESULT]


@pytest.mark.parametrize(("spec", "base_url", "expected"), [
    ("openai:gpt-4o", None, "openai"),
    ("anthropic:claude-haiku-4-5", None, "anthropic"),
    ("openai:deepseek-chat", "https://api.deepseek.com/v1", "deepseek"),
    ("openai:llama-3.3-70b-versatile", "https://api.groq.com/openai/v1", "groq"),
    ("openai:gpt-4o", "https://my-team.openai.azure.com/openai/v1", "azure.ai.openai"),
    ("openai:llama3", "http://localhost:11434/v1", "openai"),
])
def test_the_provider_name_is_the_conventions_well_known_value(spec: str, base_url: str | None, expected: str) -> None:
    """GenAI spans, ``gen_ai.provider.name``: a well-known value MUST be used when one applies."""
    from agentloop.providers import open_model
    from agentloop.telemetry import genai

    model = open_model(spec, base_url=base_url, api_key="k-not-real", env={})
    assert genai.provider_name(genai.describe_model(model), spec) == expected
    assert expected in {v.value for v in GA.GenAiProviderNameValues}
    host, port = genai.server_of(model) or ("", 0)
    assert host and port in (443, 11434)


def test_a_call_a_fallback_answered_names_the_fallbacks_provider_and_endpoint(receiver: Any) -> None:
    """GenAI spans, ``server.address``/``server.port`` and ``gen_ai.provider.name``: the endpoint that answered.

    The primary (Anthropic protocol) is overloaded on every attempt; the fallback (OpenAI protocol, another
    server) answers, so the ``chat`` span names it, with its response id."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentloop import Budget
    from agentloop.providers import open_model
    from agentloop.telemetry import Tracing

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.server_port}/v1/traces")))
    tracing = Tracing(provider, capture_content=False)
    with FakeProvider({"replies": [{"fault": "529"}], "when_done": "repeat"}) as primary, FakeProvider([{"text": "from the fallback"}]) as fb:
        env = {"ANTHROPIC_API_KEY": "sk-ant-not-real", "OPENAI_API_KEY": "sk-not-real", "OPENAI_BASE_URL": f"{fb.url}/v1"}
        model = open_model("anthropic:claude-haiku-4-5", base_url=primary.url, fallback="openai:gpt-4o-mini", env=env,
                           max_attempts=1, sleep=lambda _s: None)
        try:
            res = tracing.run(model, [], "Hi.", Budget(max_steps=2, max_usd_micros=100_000), run_id="r1")
        finally:
            model.close()
        fb_port = int(fb.url.rsplit(":", 1)[1])
    provider.shutdown()
    assert res.answer == "from the fallback"
    (chat,) = [s["attrs"] for s in receiver.spans if s["name"].startswith("chat ")]
    assert chat[GA.GEN_AI_REQUEST_MODEL] == "claude-haiku-4-5" and chat[GA.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini"
    assert chat[GA.GEN_AI_PROVIDER_NAME] == "openai" and chat["server.port"] == fb_port
    assert chat[GA.GEN_AI_RESPONSE_ID].startswith("chatcmpl-")


def test_a_message_replaced_between_calls_is_exported_as_it_now_is() -> None:
    """Each ``chat`` span's ``gen_ai.input.messages`` is what that call sent ("Messages MUST be provided in the
    order they were sent to the model"), though the conversion of unchanged messages is kept between calls."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentloop.events import ModelRequest
    from agentloop.telemetry import Tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _, sink, _ = Tracing(provider, capture_content=True).wrap(object(), None, None, model_name="openai:gpt-4o")
    sink._take_tools([], None)
    first, old, last = {"role": "user", "content": "first"}, {"role": "assistant", "content": "a long answer"}, {"role": "user", "content": "next"}
    for messages in ([first, old, last], [first, {**old, "content": "[compacted]"}, last], [first, old]):
        sink.chat_started(ModelRequest(messages, (), 10))
        sink.finish()
    got = [[p["parts"][0]["content"] for p in json.loads(s.attributes[GA.GEN_AI_INPUT_MESSAGES])] for s in exporter.get_finished_spans()]
    assert got == [["first", "a long answer", "next"], ["first", "[compacted]", "next"], ["first", "a long answer"]]
