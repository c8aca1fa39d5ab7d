"""OpenTelemetry traces of runs, model calls and tool calls (GenAI semantic conventions).

Off unless configured: the library takes a tracer provider (``Tracing``);
the command line turns tracing on when the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set (``from_environment``).
OpenTelemetry is an optional extra (``agentloop[otel]``): without it nothing
of it is imported, and a configured endpoint gets one warning line.

Rules:

1. Spans follow the OpenTelemetry GenAI semantic conventions: one
   ``invoke_agent`` span a run (INTERNAL), a ``chat {model}`` span a model
   call (CLIENT) and an ``execute_tool {tool}`` span a tool call (INTERNAL),
   both children of their run's span. A ``chat`` span carries the
   provider (``gen_ai.provider.name``, a well-known value: ``genai.py``),
   the model asked and the one that answered, the endpoint
   (``server.address``, ``server.port``), the provider's response id
   (``gen_ai.response.id``; a replay has none), the usage with the cache
   reads and writes, and the finish reason; an ``execute_tool`` span the
   tool's name, description and call id.
2. Each span points at the exact transcript record it stands for:
   ``agentloop.record.seq`` and ``agentloop.record.hash`` (the ``model_turn``
   of a call, the ``tool_result`` of a tool, the ``stop`` of a run), with
   ``agentloop.cost_micros`` (integer micro-dollars), ``agentloop.run_id``
   and ``agentloop.stop_reason``.
3. Nesting: a run started while a tool call's span is current (a sub-agent,
   run by the ``Agent`` tool in the calling thread) is its child, through
   OpenTelemetry's context. A batch task is the child of the batch's span
   when the worker is given its ``traceparent``.
4. Contents are exported only when asked for, with ``capture_content=True``
   or the conventions' variable
   ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``: each
   ``chat`` span's input (``gen_ai.input.messages``, and
   ``gen_ai.system_instructions`` where the provider takes the system prompt
   apart) and output (``gen_ai.output.messages``), in the conventions'
   ``parts`` shape; the run's first messages and answer on its span; each
   tool's ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``.
   For the viewers' span lists, the run's span also gets its prompt and answer
   as ``input.value``/``output.value`` and a ``chat`` span its answer (or the
   calls it makes) as ``output.value``, in text.
   All of it is redacted exactly as the run's records are (``redact.Policy``
   from the recorded tools manifest, or the records themselves), so a value
   the transcript redacts (a secret argument, a sensitive tool's output) is
   never exported.
5. Spans are timed here, outside the core: the loop and the drivers read no
   clock. Tracing wraps the model, the transcript sink and the observer of a
   run; it decides nothing and changes no record.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .spans import TracedModel, TracedSink

__all__ = ["CONTENT_ENV", "Tracing", "from_environment"]

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class Tracing:
    """Traces runs into a tracer provider (``opentelemetry.sdk.trace.TracerProvider`` or any API provider).

    ``wrap(model, transcript, observer, ...)`` gives the three to pass to
    ``agentloop.run``; ``run``/``arun`` do that for you.
    """

    def __init__(self, tracer_provider: Any = None, *, capture_content: bool | None = None, agent_name: str = "agentloop"):
        from opentelemetry import trace

        self._trace = trace
        self.tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("agentloop")
        if capture_content is None:
            capture_content = os.environ.get(CONTENT_ENV, "").strip().lower() == "true"
        self.capture_content = capture_content
        self.agent_name = agent_name
        self.provider: Any = tracer_provider
        """The provider given (``from_environment`` shuts it down, flushing, when the CLI exits)."""

    # -- the library's way in --

    def run(self, model: Any, tools: Any, messages: Any, budget: Any, **kw: Any) -> Any:
        from agentloop.run import run

        m, sink, obs = self.wrap(model, kw.pop("transcript", None), kw.pop("observer", None),
                                 model_name=kw.get("model_name"), run_id=kw.get("run_id"))
        return sink.finish(run(m, tools, messages, budget, transcript=sink, observer=obs, **kw))

    async def arun(self, model: Any, tools: Any, messages: Any, budget: Any, **kw: Any) -> Any:
        from agentloop.run import arun

        m, sink, obs = self.wrap(model, kw.pop("transcript", None), kw.pop("observer", None),
                                 model_name=kw.get("model_name"), run_id=kw.get("run_id"))
        return sink.finish(await arun(m, tools, messages, budget, transcript=sink, observer=obs, **kw))

    def wrap(self, model: Any, transcript: Any, observer: Any, *, model_name: str | None = None,
             run_id: str | None = None, conversation_id: str | None = None) -> tuple[Any, TracedSink, Callable[[Any], None]]:
        """(model, sink, observer) that trace one run. Call ``sink.finish(result)`` after it (``run`` does)."""
        from agentloop.transcript import MemoryTranscript

        sink = TracedSink(self, transcript if transcript is not None else MemoryTranscript(), model, model_name, run_id, conversation_id)
        return TracedModel(model, sink), sink, sink.observer(observer)


def from_environment(env: Mapping[str, str] | None = None, warn: Callable[[str], None] | None = None) -> Tracing | None:
    """Tracing as the standard ``OTEL_*`` variables ask for it, or None (rule: off unless configured).

    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` turns it on (OTLP over
    HTTP/protobuf, batched); ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keeps it off;
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the service (the SDK reads them).
    A protocol other than http/protobuf, or a missing ``opentelemetry`` package, is said in one
    warning line and tracing stays off.
    """
    e = os.environ if env is None else env
    if not (e.get("OTEL_EXPORTER_OTLP_ENDPOINT") or e.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return None
    if e.get("OTEL_SDK_DISABLED", "").lower() == "true" or e.get("OTEL_TRACES_EXPORTER", "").lower() == "none":
        return None
    say = warn or (lambda text: print(f"agentloop: warning: {text}", file=sys.stderr))
    proto = (e.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or e.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").lower()
    if proto != "http/protobuf":
        say(f"OTEL_EXPORTER_OTLP_PROTOCOL={proto} is not supported (only http/protobuf): no traces are exported")
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        say("OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: pip install 'agentloop[otel]'")
        return None
    resource = Resource.create({"service.name": e.get("OTEL_SERVICE_NAME") or "agentloop"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return Tracing(provider, capture_content=e.get(CONTENT_ENV, "").strip().lower() == "true")
