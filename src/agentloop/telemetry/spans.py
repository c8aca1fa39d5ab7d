"""The spans of one traced run: the model wrapper that opens ``chat`` spans, the sink that ends them.

``Tracing.wrap`` (``telemetry/__init__.py``) builds these; the rules are in
that module's docstring, and the conventions' vocabulary in ``genai.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..model_description import describe
from . import genai

__all__ = ["TracedModel", "TracedSink"]

_FINISHED = ("no_tool_calls", "sentinel")


def _dumps(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)


def _plain(which: str, text: str) -> dict[str, str]:
    """A viewer's input or output column as text (OpenInference's ``input.value``/``output.value``, which
    Phoenix lists spans by: without them an agent span shows nothing there and a chat span its response
    id and model)."""
    return {f"{which}.value": text, f"{which}.mime_type": "text/plain"}


def _warn(exc: BaseException) -> None:
    print(f"agentloop: tracing: {type(exc).__name__}: {exc}", file=sys.stderr)


class TracedModel:
    """The model, with a ``chat`` span opened at each call (closed when its record is written)."""

    def __init__(self, inner: Any, sink: TracedSink):
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
            reply = self.inner.complete(request)
        except BaseException as exc:
            self.sink.chat_failed(exc)
            raise
        self.sink.chat_replied(reply)
        return reply

    async def acomplete(self, request: Any) -> Any:
        self.sink.chat_started(request)
        try:
            if hasattr(self.inner, "acomplete"):
                reply = await self.inner.acomplete(request)
            else:
                import asyncio

                reply = await asyncio.to_thread(self.inner.complete, request)
        except BaseException as exc:
            self.sink.chat_failed(exc)
            raise
        self.sink.chat_replied(reply)
        return reply


class TracedSink:
    """The transcript sink: every record a span stands for passes here, so spans carry its seq and hash."""

    def __init__(self, tracing: Any, inner: Any, model: Any, spec: str | None, run_id: str | None, conversation_id: str | None):
        self.t = tracing
        self.inner = inner
        self.adapter = genai.describe_model(model)
        name = describe(model, "unknown").name
        self.spec = spec or name
        self.provider = genai.provider_name(self.adapter, self.spec)
        self.model = str(self.adapter.target.model) if self.adapter is not None else name
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.run_span: Any = None
        self.chat: Any = None
        self.tools: dict[str, Any] = {}
        self.tool_ends: dict[str, int] = {}
        self.tool_tokens: dict[str, Any] = {}
        self.policy: Any = None
        self.descriptions: dict[str, str] = {}
        self.converted: list[tuple[Any, tuple[str, list[str]]]] = []
        """The last call's messages, each with its parts as JSON text: a message the next call sends again
        (the same object, after the same ones, under the same redaction) is not converted again."""
        self.converted_policy: Any = None

    def __getattr__(self, name: str) -> Any:  # a Session sink's own methods (note, listeners...) stay reachable
        return getattr(self.inner, name)

    # -- what the run's records say about redaction --

    def _take_tools(self, tools: Any, limit: Any) -> None:
        """The redaction of this run's records (``redact.Policy``), from its recorded tools manifest."""
        from agentloop.redact import DEFAULT_MAX_VALUE_BYTES, Policy

        entries = [t for t in tools or () if isinstance(t, Mapping)]
        self.policy = Policy.from_manifest(entries, None, int(limit or DEFAULT_MAX_VALUE_BYTES))
        self.descriptions = {str(t.get("name")): str(t["description"]) for t in entries if t.get("description")}

    # -- spans --

    def _ctx(self) -> Any:
        return self.t._trace.set_span_in_context(self.run_span) if self.run_span is not None else None

    def _start_run(self, payload: Any) -> None:
        from opentelemetry.trace import SpanKind

        cfg = payload.get("config", {}) if isinstance(payload, dict) else {}
        self._take_tools(cfg.get("tools"), cfg.get("max_value_bytes"))
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.t.agent_name,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
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
        if self.t.capture_content:  # the messages as recorded: redacted already
            chat, system = genai.input_parts(payload.get("messages") or [], genai.system_apart(self.adapter))
            attrs["gen_ai.input.messages"] = _dumps(chat)
            if system:
                attrs["gen_ai.system_instructions"] = _dumps(system)
            prompt = genai.last_user_text(payload.get("messages") or [])
            if prompt:
                attrs.update(_plain("input", prompt))
        self.run_span = self.t.tracer.start_span(f"invoke_agent {self.t.agent_name}", kind=SpanKind.INTERNAL, attributes=attrs)

    def _server(self, adapter: Any) -> dict[str, Any]:
        where = genai.server_of(adapter)
        return {} if where is None else {"server.address": where[0], "server.port": where[1]}

    def chat_started(self, request: Any) -> None:
        from opentelemetry.trace import SpanKind

        if self.chat is not None:  # a call whose record never came (an interrupt): close it first
            self.chat.end()
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
            **self._server(self.adapter),
        }
        if self.conversation_id:
            attrs["gen_ai.conversation.id"] = self.conversation_id
        mt = getattr(request, "max_output_tokens", None)
        if mt:
            attrs["gen_ai.request.max_tokens"] = int(mt)
        self.chat = self.t.tracer.start_span(f"chat {self.model}", kind=SpanKind.CLIENT, context=self._ctx(), attributes=attrs)
        if self.t.capture_content:
            try:
                self._chat_input(request)
            except Exception as exc:  # tracing must never break a run
                _warn(exc)

    def _chat_input(self, request: Any) -> None:
        """The call's input, redacted as the transcript redacts it (``redact.Policy``): never exported whole when it
        cannot be redacted."""
        if self.policy is None:
            return
        messages = list(getattr(request, "messages", ()) or ())
        recorded = self.policy.messages_for_record(messages)
        kept = self.converted if self.converted_policy is self.policy else []
        converted: list[tuple[Any, tuple[str, list[str]]]] = []
        same = True
        for i, (m, rec) in enumerate(zip(messages, recorded)):
            same = same and i < len(kept) and kept[i][0] is m
            if same:  # the same message as last call, after the same ones: converted the same
                converted.append(kept[i])
            else:
                role, parts = genai.message_parts(rec)
                converted.append((m, (role, [_dumps(p) for p in parts])))
        self.converted, self.converted_policy = converted, self.policy
        chat, system = genai.input_json([e for _, e in converted], genai.system_apart(self.adapter))
        self.chat.set_attribute("gen_ai.input.messages", chat)
        if system:
            self.chat.set_attribute("gen_ai.system_instructions", system)

    def chat_replied(self, reply: Any) -> None:
        """What only the live reply knows: the provider's response id, and which endpoint answered."""
        if self.chat is None:
            return
        rid = getattr(reply, "response_id", None)
        if isinstance(rid, str) and rid:
            self.chat.set_attribute("gen_ai.response.id", rid)
        fb = getattr(self.adapter, "fallback", None)
        answered = getattr(reply, "model", None)
        while fb is not None and answered:  # a fallback answered: its endpoint is the server
            if getattr(fb.target, "model", None) == answered and answered != self.model:
                self.chat.set_attributes({**self._server(fb), "gen_ai.provider.name": genai.provider_name(fb, None)})
                break
            fb = getattr(fb, "fallback", None)

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

        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if call.name in self.descriptions:
            attrs["gen_ai.tool.description"] = self.descriptions[call.name]
        if self.t.capture_content and self.policy is not None:
            try:  # the arguments as the model_turn record holds them
                attrs["gen_ai.tool.call.arguments"] = _dumps(self.policy.call_arguments(call.name, call.arguments))
            except Exception as exc:  # tracing must never break a run
                _warn(exc)
        span = self.t.tracer.start_span(f"execute_tool {call.name}", kind=SpanKind.INTERNAL, context=self._ctx(), attributes=attrs)
        self.tools[call.id] = span
        if attach:  # a run the tool starts in this thread (a sub-agent) nests under this span (rule 3)
            self.tool_tokens[call.id] = otel_context.attach(self.t._trace.set_span_in_context(span))

    def _tool_finished(self, result: Any) -> None:
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
            try:
                self._start_run(payload)
            except Exception as exc:  # tracing must never break a run
                _warn(exc)
        rec = self.inner.append(kind, payload)
        try:
            self._on_record(kind, payload, rec)
        except Exception as exc:  # tracing must never break a run
            _warn(exc)
        return rec

    def _on_record(self, kind: str, payload: Any, rec: Any) -> None:
        if kind == "model_turn" and self.chat is not None:
            self._model_turn(payload, rec)
        elif kind == "budget" and self.chat is not None:
            self.chat.set_attribute("agentloop.cost_micros", int(payload.get("cost_micros", 0)))
            self.chat.end()
            self.chat = None
        elif kind == "model_error" and self.chat is not None:
            self._model_error(payload, rec)
        elif kind == "tool_result":
            self._tool_result(payload, rec)
        elif kind == "tools_changed":
            self._take_tools(payload.get("tools"), self.policy.limit if self.policy is not None else None)
        elif kind == "stop" and self.run_span is not None:
            self._stop(payload, rec)

    def _model_turn(self, payload: Any, rec: Any) -> None:
        reply = payload.get("reply") or {}
        attrs: dict[str, Any] = {
            "gen_ai.response.model": str(reply.get("model") or self.model),
            "gen_ai.response.finish_reasons": [genai.finish_reason(reply)],
            **genai.usage_attributes(reply.get("usage") or {}),
            "agentloop.step": int(payload.get("step", 0)),
            "agentloop.usage_estimated": bool(payload.get("usage_estimated")),
            "agentloop.record.seq": rec.seq,
            "agentloop.record.hash": rec.hash,
        }
        if self.t.capture_content:  # the reply as recorded: its calls' arguments redacted already
            attrs["gen_ai.output.messages"] = _dumps([genai.output_message(reply)])
            attrs.update(_plain("output", genai.output_text(reply)))
        self.chat.set_attributes(attrs)

    def _model_error(self, payload: Any, rec: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.chat.set_attribute("agentloop.record.seq", rec.seq)
        self.chat.set_attribute("agentloop.record.hash", rec.hash)
        self.chat.set_attribute("agentloop.cost_micros", int(payload.get("cost_micros", 0)))
        self.chat.set_status(Status(StatusCode.ERROR, str(payload.get("error", ""))[:200]))
        self.chat.end()
        self.chat = None

    def _tool_result(self, payload: Any, rec: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        cid = str(payload.get("call_id"))
        span = self.tools.pop(cid, None)
        if span is None:
            return
        attrs: dict[str, Any] = {"agentloop.record.seq": rec.seq, "agentloop.record.hash": rec.hash}
        if not payload.get("ok"):
            attrs["error.type"] = "tool_error"
            span.set_status(Status(StatusCode.ERROR))
        if self.t.capture_content:  # as recorded: redacted already
            key = "content" if payload.get("ok") else "error"
            attrs["gen_ai.tool.call.result"] = _dumps(payload.get(key))
        span.set_attributes(attrs)
        span.end(end_time=self.tool_ends.pop(cid, None))

    def _stop(self, payload: Any, rec: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        s = self.run_span
        reason = str(payload.get("reason"))
        usage = genai.usage_attributes(payload.get("usage") or {})
        s.set_attributes({
            "agentloop.stop_reason": reason,
            "agentloop.cost_micros": int(payload.get("spent_micros", 0)),
            **usage,
            "agentloop.record.seq": rec.seq,
            "agentloop.record.hash": rec.hash,
        })
        if reason not in _FINISHED:
            s.set_attribute("error.type", reason)
            s.set_status(Status(StatusCode.ERROR, str(payload.get("error") or reason)[:200]))
        if self.t.capture_content and payload.get("answer"):
            out = genai.output_message({"text": payload["answer"], "finish_reason": "stop"})
            s.set_attribute("gen_ai.output.messages", _dumps([out]))
            s.set_attributes(_plain("output", str(payload["answer"])))

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
