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
   both children of their run's span, with the ``gen_ai.*`` attributes for
   the operation, provider, model, usage, finish reasons and tool name and
   call id.
2. Each span points at the exact transcript record it stands for:
   ``agentloop.record.seq`` and ``agentloop.record.hash`` (the ``model_turn``
   of a call, the ``tool_result`` of a tool, the ``stop`` of a run), with
   ``agentloop.cost_micros`` (integer micro-dollars), ``agentloop.run_id``
   and ``agentloop.stop_reason``.
3. Nesting: a run started while a tool call's span is current (a sub-agent,
   run by the ``Agent`` tool in the calling thread) is its child, through
   OpenTelemetry's context. A batch task is the child of the batch's span
   when the worker is given its ``traceparent``.
4. Contents (messages, tool arguments and results) are exported only when
   asked for, with ``capture_content=True`` or the conventions' variable
   ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; they are
   taken from the records as written, so a value the transcript redacts is
   never exported.
5. Spans are timed here, outside the core: the loop and the drivers read no
   clock. Tracing wraps the model, the transcript sink and the observer of a
   run; it decides nothing and changes no record.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["CONTENT_ENV", "Tracing", "from_environment"]

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_FINISHED = ("no_tool_calls", "sentinel")


def _provider_of(model: str) -> str:
    prefix = model.split(":", 1)[0] if ":" in model else ""
    return {"openai": "openai", "anthropic": "anthropic", "scripted": "_OTHER"}.get(prefix, "_OTHER")


def _finish(reply: Mapping[str, Any]) -> str:
    if reply.get("tool_calls"):
        return "tool_calls"
    fr = reply.get("finish_reason")
    return str(fr) if fr else "stop"


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
             run_id: str | None = None, conversation_id: str | None = None) -> tuple[Any, _TracedSink, Callable[[Any], None]]:
        """(model, sink, observer) that trace one run. Call ``sink.finish(result)`` after it (``run`` does)."""
        from agentloop.transcript import MemoryTranscript

        sink = _TracedSink(self, transcript if transcript is not None else MemoryTranscript(), model_name or getattr(model, "name", None),
                           run_id, conversation_id)
        return _TracedModel(model, sink), sink, sink.observer(observer)


class _TracedModel:
    """The model, with a ``chat`` span opened at each call (closed when its record is written)."""

    def __init__(self, inner: Any, sink: _TracedSink):
        self.inner = inner
        self.sink = sink
        self.name = getattr(inner, "name", None)
        for attr in ("max_continuations", "fallback_prices", "prices"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, request: Any) -> Any:
        self.sink.chat_started(request)
        try:
            return self.inner.complete(request)
        except BaseException as exc:
            self.sink.chat_failed(exc)
            raise

    async def acomplete(self, request: Any) -> Any:
        self.sink.chat_started(request)
        try:
            if hasattr(self.inner, "acomplete"):
                return await self.inner.acomplete(request)
            import asyncio

            return await asyncio.to_thread(self.inner.complete, request)
        except BaseException as exc:
            self.sink.chat_failed(exc)
            raise


class _TracedSink:
    """The transcript sink: every record a span stands for passes here, so spans carry its seq and hash."""

    def __init__(self, tracing: Tracing, inner: Any, model: str | None, run_id: str | None, conversation_id: str | None):
        self.t = tracing
        self.inner = inner
        self.model = model or "unknown"
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.run_span: Any = None
        self.chat: Any = None
        self.tools: dict[str, Any] = {}
        self.tool_ends: dict[str, int] = {}
        self.tool_tokens: dict[str, Any] = {}
        self._token: Any = None

    def __getattr__(self, name: str) -> Any:  # a Session sink's own methods (note, listeners...) stay reachable
        return getattr(self.inner, name)

    # -- spans --

    def _ctx(self) -> Any:
        return self.t._trace.set_span_in_context(self.run_span) if self.run_span is not None else None

    def _start_run(self, payload: Any) -> None:
        from opentelemetry.trace import SpanKind

        cfg = payload.get("config", {}) if isinstance(payload, dict) else {}
        model = str(cfg.get("model") or self.model)
        self.model = model
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.t.agent_name,
            "gen_ai.provider.name": _provider_of(model),
            "gen_ai.request.model": model,
        }
        rid = cfg.get("run_id") or self.run_id
        if rid:
            attrs["agentloop.run_id"] = str(rid)
        if self.conversation_id:
            attrs["gen_ai.conversation.id"] = self.conversation_id
        budget = cfg.get("budget") or {}
        if budget.get("max_usd_micros") is not None:
            attrs["agentloop.budget.max_usd_micros"] = int(budget["max_usd_micros"])
        if budget.get("unlimited"):
            attrs["agentloop.budget.unlimited"] = True
        if self.t.capture_content:
            attrs["gen_ai.input.messages"] = json.dumps(payload.get("messages", []), ensure_ascii=False)
        self.run_span = self.t.tracer.start_span(f"invoke_agent {self.t.agent_name}", kind=SpanKind.INTERNAL, attributes=attrs)

    def chat_started(self, request: Any) -> None:
        from opentelemetry.trace import SpanKind

        if self.chat is not None:  # a call whose record never came (an interrupt): close it first
            self.chat.end()
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider_of(self.model),
            "gen_ai.request.model": self.model.split(":", 1)[-1],
        }
        mt = getattr(request, "max_output_tokens", None)
        if mt:
            attrs["gen_ai.request.max_tokens"] = int(mt)
        self.chat = self.t.tracer.start_span(f"chat {attrs['gen_ai.request.model']}", kind=SpanKind.CLIENT,
                                             context=self._ctx(), attributes=attrs)

    def chat_failed(self, exc: BaseException) -> None:
        if self.chat is not None:
            from opentelemetry.trace import Status, StatusCode

            self.chat.set_attribute("error.type", type(exc).__name__)
            self.chat.set_status(Status(StatusCode.ERROR, str(exc)[:200]))

    def observer(self, outer: Callable[[Any], None] | None) -> Callable[[Any], None]:
        from agentloop.events import ToolFinished, ToolStarted

        def observe(ev: Any) -> None:
            if isinstance(ev, ToolStarted):
                self._tool_started(ev.call)
            elif isinstance(ev, ToolFinished):
                self._tool_finished(ev.result)
            if outer is not None:
                outer(ev)

        return observe

    def executor(self, inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """An executor that traces each call of a turn it runs (a sub-agent's, which emits no tool
        events): the spans of one turn's calls share the turn's start and end."""
        from agentloop.events import ToolFinished

        def execute(calls: Any) -> Any:
            for c in calls:
                self._tool_started(c, attach=False)
            results = inner(calls)
            for r in results:
                self.observer(None)(ToolFinished(r))
            return results

        return execute

    def _tool_started(self, call: Any, attach: bool = True) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry.trace import SpanKind

        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        span = self.t.tracer.start_span(f"execute_tool {call.name}", kind=SpanKind.INTERNAL, context=self._ctx(), attributes=attrs)
        self.tools[call.id] = span
        if attach:  # a run the tool starts in this thread (a sub-agent) nests under this span (rule 3)
            self.tool_tokens[call.id] = otel_context.attach(self.t._trace.set_span_in_context(span))

    def _tool_finished(self, result: Any) -> None:
        import time

        from opentelemetry import context as otel_context

        token = self.tool_tokens.pop(result.call_id, None)
        if token is not None:
            try:
                otel_context.detach(token)
            except ValueError:  # finished in another thread than it started in
                pass
        self.tool_ends[result.call_id] = time.time_ns()

    # -- the sink --

    def append(self, kind: str, payload: Any) -> Any:
        if kind == "run_start" and self.run_span is None:
            self._start_run(payload)
        rec = self.inner.append(kind, payload)
        try:
            self._on_record(kind, payload, rec)
        except Exception as exc:  # tracing must never break a run
            print(f"agentloop: tracing: {type(exc).__name__}: {exc}", file=sys.stderr)
        return rec

    def _on_record(self, kind: str, payload: Any, rec: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        if kind == "model_turn" and self.chat is not None:
            reply = payload.get("reply") or {}
            usage = reply.get("usage") or {}
            attrs: dict[str, Any] = {
                "gen_ai.response.model": str(reply.get("model") or self.model.split(":", 1)[-1]),
                "gen_ai.response.finish_reasons": [_finish(reply)],
                "gen_ai.usage.input_tokens": int(usage.get("input_tokens", 0)),
                "gen_ai.usage.output_tokens": int(usage.get("output_tokens", 0)),
                "agentloop.step": int(payload.get("step", 0)),
                "agentloop.usage_estimated": bool(payload.get("usage_estimated")),
                "agentloop.record.seq": rec.seq,
                "agentloop.record.hash": rec.hash,
            }
            if self.t.capture_content:
                out = {"role": "assistant", "content": reply.get("text", ""), "tool_calls": reply.get("tool_calls", [])}
                attrs["gen_ai.output.messages"] = json.dumps([out], ensure_ascii=False)
            self.chat.set_attributes(attrs)
        elif kind == "budget" and self.chat is not None:
            self.chat.set_attribute("agentloop.cost_micros", int(payload.get("cost_micros", 0)))
            self.chat.end()
            self.chat = None
        elif kind == "model_error" and self.chat is not None:
            self.chat.set_attribute("agentloop.record.seq", rec.seq)
            self.chat.set_attribute("agentloop.record.hash", rec.hash)
            self.chat.set_attribute("agentloop.cost_micros", int(payload.get("cost_micros", 0)))
            self.chat.set_status(Status(StatusCode.ERROR, str(payload.get("error", ""))[:200]))
            self.chat.end()
            self.chat = None
        elif kind == "tool_result":
            cid = str(payload.get("call_id"))
            span = self.tools.pop(cid, None)
            if span is not None:
                tattrs: dict[str, Any] = {"agentloop.record.seq": rec.seq, "agentloop.record.hash": rec.hash}
                if not payload.get("ok"):
                    tattrs["error.type"] = "tool_error"
                    span.set_status(Status(StatusCode.ERROR))
                if self.t.capture_content:
                    key = "content" if payload.get("ok") else "error"
                    v = payload.get(key)
                    tattrs["gen_ai.tool.call.result"] = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                span.set_attributes(tattrs)
                span.end(end_time=self.tool_ends.pop(cid, None))
        elif kind == "stop" and self.run_span is not None:
            s = self.run_span
            usage = payload.get("usage") or {}
            reason = str(payload.get("reason"))
            s.set_attribute("agentloop.stop_reason", reason)
            s.set_attribute("agentloop.cost_micros", int(payload.get("spent_micros", 0)))
            s.set_attribute("gen_ai.usage.input_tokens", int(usage.get("input_tokens", 0)))
            s.set_attribute("gen_ai.usage.output_tokens", int(usage.get("output_tokens", 0)))
            s.set_attribute("agentloop.record.seq", rec.seq)
            s.set_attribute("agentloop.record.hash", rec.hash)
            if reason not in _FINISHED:
                s.set_attribute("error.type", reason)
                s.set_status(Status(StatusCode.ERROR, str(payload.get("error") or reason)[:200]))
            if self.t.capture_content and payload.get("answer"):
                s.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "content": payload["answer"]}], ensure_ascii=False))

    def finish(self, result: Any = None) -> Any:
        """End what is still open (the run's span last); returns ``result``."""
        for span in self.tools.values():
            span.end()
        self.tools.clear()
        if self.chat is not None:
            self.chat.end()
            self.chat = None
        if self.run_span is not None:
            self.run_span.end()
            self.run_span = None
        return result


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
