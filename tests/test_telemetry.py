"""OpenTelemetry traces, checked against the GenAI semantic conventions.

The conventions (OpenTelemetry semantic conventions, "GenAI agent spans",
"GenAI spans"): an agent run is an ``invoke_agent`` span; a model call is a
``chat {gen_ai.request.model}`` span of kind CLIENT with ``gen_ai.usage.*``
and ``gen_ai.response.finish_reasons``; a tool call is an
``execute_tool {gen_ai.tool.name}`` span with ``gen_ai.tool.call.id``;
message contents are recorded only when content capture is turned on
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from agentloop import Budget, MemoryTranscript, tool  # noqa: E402
from agentloop.telemetry import Tracing  # noqa: E402
from agentloop.testing import ScriptedModel, reply  # noqa: E402

SECRET = "sk-otel-secret-0123456789abcdef"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool(secret_args=("$.token",))
def call_api(token: str) -> str:
    """Call an API with a token."""
    return "called"


def _tracing(capture: bool = False) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider, capture_content=capture), exporter


def _run(tracing: Tracing, script: list[Any], tools: list[Any]) -> tuple[Any, MemoryTranscript]:
    t = MemoryTranscript()
    res = tracing.run(ScriptedModel(script, name="gpt-4o-mini"), tools, "Find it.", Budget(max_steps=5, max_usd_micros=100_000),
                      transcript=t, model_name="gpt-4o-mini", run_id="r1")
    return res, t


def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children() -> None:
    tracing, exporter = _tracing()
    res, t = _run(tracing, [reply("", [("lookup", {"key": "a"})], usage=(100, 10)), reply("Found.", usage=(150, 5))], [lookup])
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    run = by_name["invoke_agent agentloop"]
    chats = [s for s in spans if s.name == "chat gpt-4o-mini"]
    tool_span = by_name["execute_tool lookup"]
    assert run.kind == SpanKind.INTERNAL and run.parent is None
    assert len(chats) == 2 and all(c.kind == SpanKind.CLIENT and c.parent.span_id == run.context.span_id for c in chats)
    assert tool_span.parent.span_id == run.context.span_id
    a = chats[0].attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "gpt-4o-mini"
    assert a["gen_ai.usage.input_tokens"] == 100 and a["gen_ai.usage.output_tokens"] == 10
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("tool_call",)  # the output schema's FinishReason
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup" and tool_span.attributes["gen_ai.tool.call.id"] == "call_0"
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent" and run.attributes["agentloop.stop_reason"] == "no_tool_calls"
    assert run.attributes["agentloop.cost_micros"] == res.spent_micros


def test_each_span_points_at_its_transcript_record() -> None:
    tracing, exporter = _tracing()
    _, t = _run(tracing, [reply("", [("lookup", {"key": "a"})], usage=(100, 10)), reply("Found.", usage=(150, 5))], [lookup])
    recs = [json.loads(line) for line in t.getvalue().splitlines()]
    seq_kind = {r["seq"]: (r["kind"], r["hash"]) for r in recs}
    for s in exporter.get_finished_spans():
        seq, h = s.attributes["agentloop.record.seq"], s.attributes["agentloop.record.hash"]
        kind = {"chat": "model_turn", "execute_tool": "tool_result", "invoke_agent": "stop"}[s.attributes["gen_ai.operation.name"]]
        assert seq_kind[seq] == (kind, h), s.name
    costs = [s.attributes["agentloop.cost_micros"] for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert costs == [r["payload"]["cost_micros"] for r in recs if r["kind"] == "budget"]


def test_contents_are_not_exported_unless_asked_and_redacted_values_never_are() -> None:
    script = [reply("", [("call_api", {"token": SECRET})], usage=(10, 1)), reply(f"done {SECRET[:4]}", usage=(10, 1))]
    tracing, exporter = _tracing(capture=False)
    _run(tracing, script, [call_api])
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.result")) for s in exporter.get_finished_spans() for k in s.attributes)
    tracing, exporter = _tracing(capture=True)
    _run(tracing, script, [call_api])
    exported = json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])
    assert "gen_ai.output.messages" in exported and "called" in exported
    assert SECRET not in exported  # the records' redacted forms are what is exported


def test_a_sub_agent_run_nests_under_the_tool_call_that_started_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("x\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "read a.txt", "subagent_type": "Explore"}}]},
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]},
        {"text": "child done"},
        {"text": "parent done"},
    ]))
    tracing, exporter = _tracing()
    a = Agent(cwd=str(proj), model=f"scripted:{script}", tracing=tracing)
    try:
        a.ask("delegate")
    finally:
        a.close()
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    agent_tool = next(s for s in spans if s.name == "execute_tool Agent")
    assert len(runs) == 2
    parent_run = next(s for s in runs if s.parent is None)
    child_run = next(s for s in runs if s.parent is not None)
    assert child_run.parent.span_id == agent_tool.context.span_id and agent_tool.parent.span_id == parent_run.context.span_id
    assert child_run.context.trace_id == parent_run.context.trace_id
    assert parent_run.attributes["gen_ai.conversation.id"] == a.session.id
    child_read = next(s for s in spans if s.name == "execute_tool Read")  # the child's own tool call
    assert child_read.parent.span_id == child_run.context.span_id


class _Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: decodes each ExportTraceServiceRequest it is sent."""

    spans: list[Any] = []

    def do_POST(self) -> None:  # noqa: N802
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers["Content-Length"]))
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            service = next((a.value.string_value for a in rs.resource.attributes if a.key == "service.name"), None)
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    attrs = {a.key: a.value for a in sp.attributes}
                    attrs["_ids"] = (sp.trace_id.hex(), sp.span_id.hex(), sp.parent_span_id.hex())  # type: ignore[assignment]
                    type(self).spans.append((service, self.path, sp.name, attrs))
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def test_the_command_line_exports_to_a_real_otlp_http_receiver(tmp_path: Path) -> None:
    _Receiver.spans = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proj = tmp_path / "proj"
        proj.mkdir()
        (proj / "n.txt").write_text("hi\n")
        script = tmp_path / "s.json"
        script.write_text(json.dumps([
            {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "n.txt"}}], "usage": [100, 10]},
            {"text": "It says hi.", "usage": [150, 5]},
        ]))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_"))}
        env.update(AGENTLOOP_HOME=str(tmp_path / "home"), OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_port}",
                   OTEL_SERVICE_NAME="agentloop-test")
        p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "read n.txt", "--model", f"scripted:{script}",
                            "--output-format", "json"], cwd=proj, env=env, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
    finally:
        server.shutdown()
    names = sorted(s[2] for s in _Receiver.spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool Read", "invoke_agent agentloop"], names
    assert {s[0] for s in _Receiver.spans} == {"agentloop-test"} and {s[1] for s in _Receiver.spans} == {"/v1/traces"}
    run = next(s[3] for s in _Receiver.spans if s[2].startswith("invoke_agent"))
    result = json.loads(p.stdout)
    assert run["gen_ai.conversation.id"].string_value == result["session_id"]
    assert run["agentloop.cost_micros"].int_value == result["cost_micros"]


def test_without_the_variables_nothing_of_opentelemetry_is_loaded(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    code = (
        "import sys\nfrom agentloop.cli.main import main\n"
        f"rc = main(['-p', 'hi', '--model', 'scripted:{script}'])\n"
        "print('LOADED' if any(m.startswith(('opentelemetry.sdk', 'agentloop.telemetry')) for m in sys.modules) else 'CLEAN')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "home")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.stdout.strip().endswith("CLEAN"), p.stdout + p.stderr


def test_an_unsupported_protocol_is_one_warning_and_no_tracing(tmp_path: Path) -> None:
    from agentloop.telemetry import from_environment

    said: list[str] = []
    assert from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, said.append) is None
    assert len(said) == 1 and "grpc" in said[0]
    assert from_environment({}) is None
    assert from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}) is None


def test_batch_tasks_run_in_worker_processes_nest_under_the_batchs_span(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from _batch import add_task, write_tasks

    _Receiver.spans = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(3)])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_"))}
        env.update(AGENTLOOP_HOME=str(tmp_path / "home"), OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_port}")
        p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "batch", path, "--out", str(tmp_path / "out"), "--workers", "2",
                            "--json"], env=env, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr
    finally:
        server.shutdown()
    spans = {s[2]: s for s in _Receiver.spans if s[2].startswith("invoke_workflow")}
    (workflow,) = spans.values()
    trace_id, span_id, _ = workflow[3]["_ids"]
    runs = [s for s in _Receiver.spans if s[2].startswith("invoke_agent")]
    assert len(runs) == 3
    assert all(r[3]["_ids"][0] == trace_id and r[3]["_ids"][2] == span_id for r in runs)
    assert sorted(r[3]["agentloop.run_id"].string_value for r in runs) == ["t0000", "t0001", "t0002"]


def test_a_later_prompts_run_that_refers_to_the_recorded_tools_still_describes_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's second ``run_start`` refers to the tool list recorded before instead of repeating it
    (transcript format 5.1): its spans still carry each tool's description, taken from that list."""
    from agentloop.agent.agent import Agent
    from agentloop.transcript import read_records

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("x\n")
    script = tmp_path / "s.json"
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]}
    script.write_text(json.dumps([read, {"text": "one"}, read, {"text": "two"}]))
    tracing, exporter = _tracing()
    a = Agent(cwd=str(proj), model=f"scripted:{script}", tracing=tracing)
    try:
        a.ask("first")
        a.ask("second")
    finally:
        a.close()
    starts = [r.payload for r in read_records(a.session.path) if r.kind == "run_start"]
    assert isinstance(starts[0]["config"]["tools"], list) and set(starts[1]["config"]["tools"]) == {"same_as"}
    reads = [s for s in exporter.get_finished_spans() if s.name == "execute_tool Read"]
    assert len(reads) == 2 and all(s.attributes.get("gen_ai.tool.description") for s in reads)
    assert reads[0].attributes["gen_ai.tool.description"] == reads[1].attributes["gen_ai.tool.description"]
