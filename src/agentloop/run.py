"""The drivers: ``run`` (sync) and ``arun`` (async) perform what the loop asks.

Both drive the same state machine in ``loop.py``; neither decides anything.
Replay, the terminal agent and the batch runner are drivers of that same loop
with different models, tool executors and ledgers.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .budget import Budget, Ledger, Price, PriceTable
from .events import (
    Message,
    Model,
    ModelReply,
    ModelRequest,
    Observer,
    Stopped,
    TextDelta,
    ToolCall,
    ToolFinished,
    ToolResult,
    ToolStarted,
    TurnRecorded,
    Usage,
)
from .loop import (
    Append,
    CallModel,
    Finished,
    LoopConfig,
    ModelFailed,
    ModelReplied,
    Outbound,
    Reserve,
    Reserved,
    RunTools,
    Settle,
    State,
    ToolsDone,
    halt,
    interrupt,
    recount_chars,
    start,
    step,
)
from .redact import DEFAULT_MAX_VALUE_BYTES
from .tools import Registry, Tool
from .transcript import MemoryTranscript, Sink

__all__ = ["RunResult", "arun", "make_config", "run"]

Executor = Callable[[Sequence[ToolCall]], list[ToolResult]]
AsyncExecutor = Callable[[Sequence[ToolCall]], Awaitable[list[ToolResult]]]
Record = Callable[[str, Any], None]
Prepare = Callable[[State, Record], "str | None | Awaitable[str | None]"]
"""Called before each model call with the loop's state and a way to record.

It may rewrite ``state.messages`` in place (mask old tool output, compact):
the driver then recomputes ``state.chars`` and sends the new list. Records it
makes go through the run's sink, counted. Returning a stop reason (e.g.
``"loop_detected"``) ends the run there, before the call. ``arun`` awaits it
when it returns an awaitable.
"""


@dataclass(frozen=True)
class RunResult:
    answer: str
    stop_reason: str
    steps: int
    usage: Usage
    tokens: int
    spent_micros: int
    messages: list[Message] = field(repr=False)
    error: str | None = None
    """Why the run ended with ``model_error`` or ``cost_budget``, for people."""
    records: int = 0
    last_hash: str = ""


def _registry(tools: Registry | Iterable[Tool | Callable[..., Any]] | None) -> Registry:
    if tools is None:
        return Registry()
    return tools if isinstance(tools, Registry) else Registry(tools)


def _model_name(model: object, given: str | None) -> str:
    if given:
        return given
    name = getattr(model, "name", None)
    return name if isinstance(name, str) and name else type(model).__name__


def make_config(
    model: object,
    registry: Registry,
    budget: Budget,
    *,
    prices: PriceTable | Mapping[str, Price] | None = None,
    model_name: str | None = None,
    sentinel: str | None = None,
    max_output_tokens: int = 4096,
    loop_threshold: int | None = None,
    run_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    redaction_salt: bytes | str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    record_raw: bool = False,
) -> LoopConfig:
    """Resolve everything that decides a run into one recordable value."""
    if not isinstance(budget, Budget):
        raise TypeError("budget is required and must be a Budget (Budget.unlimited() exists)")
    if prices is None:
        from .prices import default_prices

        table = default_prices()
    elif isinstance(prices, PriceTable):
        table = prices
    else:
        table = PriceTable(prices)
    name = _model_name(model, model_name)
    return LoopConfig(
        model=name,
        budget=budget,
        price=table.resolve(name),
        tools=registry.specs(),
        manifest=tuple(registry.manifest()),
        sentinel=sentinel,
        max_output_tokens=max_output_tokens,
        loop_threshold=loop_threshold,
        run_id=run_id,
        meta=dict(meta or {}),
        redaction_salt=redaction_salt,
        max_value_bytes=max_value_bytes,
        record_raw=record_raw,
    )


class _Drive:
    """The effects shared by both drivers: recording, ledgers, observers."""

    def __init__(self, sink: Sink, ledger: Ledger | None, observer: Observer | None):
        self.sink = sink
        self.ledger = ledger
        self.observer = observer
        self.records = 0
        self.last_hash = ""
        self.ready: CallModel | None = None
        """The call ``prepare`` already saw: it is made, not prepared again."""

    def record(self, kind: str, payload: Any) -> None:
        rec = self.sink.append(kind, payload)
        self.records += 1
        self.last_hash = rec.hash

    def prepared(self, state: State, out: CallModel, reason: str | None) -> list[Outbound]:
        """After ``prepare``: the call to make, or the stop it asked for."""
        recount_chars(state)
        if reason is not None:
            return halt(state, reason)
        self.ready = CallModel(replace(out.request, messages=state.messages))
        return [self.ready]

    def emit(self, ev: Any) -> None:
        if self.observer is not None:
            self.observer(ev)

    def simple(self, state: State, out: Outbound) -> Any:
        """Perform an outbound that needs no model or tool; returns an inbound or None."""
        if isinstance(out, Append):
            rec = self.sink.append(out.kind, out.payload)
            self.records += 1
            self.last_hash = rec.hash
            if out.kind == "model_turn" and self.observer is not None:
                self.emit(TurnRecorded(state.steps, ModelReply.from_json(out.payload["reply"]), state.spent_micros))
            return None
        if isinstance(out, Reserve):
            granted = True
            if self.ledger is not None:
                granted = bool(self.ledger.reserve(out.amount_micros, out.tokens))
            return Reserved(granted)
        if isinstance(out, Settle):
            if self.ledger is not None:
                self.ledger.settle(out.reserved_micros, out.actual_micros, out.reserved_tokens, out.actual_tokens)
            return None
        if isinstance(out, Finished):
            self.emit(Stopped(out.reason))
            return None
        raise AssertionError(f"not a simple outbound: {out!r}")

    def request_with_stream(self, req: ModelRequest) -> ModelRequest:
        if self.observer is None:
            return req
        obs = self.observer
        return ModelRequest(req.messages, req.tools, req.max_output_tokens, on_text=lambda t: obs(TextDelta(t)))

    def result(self, state: State) -> RunResult:
        return RunResult(
            answer=state.answer,
            stop_reason=state.stop_reason or "model_error",
            steps=state.steps,
            usage=state.usage,
            tokens=state.tokens,
            spent_micros=state.spent_micros,
            messages=state.messages,
            error=state.error,
            records=self.records,
            last_hash=self.last_hash,
        )


def _check_reply(reply: object) -> ModelReplied | ModelFailed:
    if isinstance(reply, ModelReply):
        return ModelReplied(reply)
    return ModelFailed(f"the model returned a {type(reply).__name__}, not a ModelReply")


def _failure(exc: BaseException) -> ModelFailed:
    text = str(exc)
    return ModelFailed(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def run(
    model: Model,
    tools: Registry | Iterable[Tool | Callable[..., Any]] | None,
    messages: Sequence[Message] | str,
    budget: Budget,
    *,
    transcript: Sink | None = None,
    sentinel: str | None = None,
    prices: PriceTable | Mapping[str, Price] | None = None,
    model_name: str | None = None,
    max_output_tokens: int = 4096,
    loop_threshold: int | None = None,
    run_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    ledger: Ledger | None = None,
    observer: Observer | None = None,
    executor: Executor | None = None,
    config: LoopConfig | None = None,
    redaction_salt: bytes | str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    record_raw: bool = False,
    prepare: Prepare | None = None,
) -> RunResult:
    """Run the loop to a stop, synchronously.

    ``messages`` may be a plain prompt (one user message). ``budget`` is
    required. Records go to ``transcript`` (in memory when omitted).
    ``executor`` replaces how a turn's tool calls are run (the terminal agent
    wraps permissions and hooks around it; replay answers from a record).
    ``redaction_salt`` keys the hashes kept of redacted values (sensitive
    tools, secret arguments); ``max_value_bytes`` is where recorded values are
    truncated; ``record_raw`` keeps each provider response in the record.
    ``prepare(state, record)`` runs before each model call and may rewrite
    ``state.messages`` in place (context masking and compaction) or return a
    stop reason (see ``Prepare``).

    Returns:
        A ``RunResult``; the run's own failures are its ``stop_reason``.
    Raises:
        TypeError: ``budget`` is missing or not a ``Budget``.
        TranscriptError: the transcript could not be written (nothing after
            the failed record is written).
    """
    registry = _registry(tools)
    cfg = config or make_config(
        model, registry, budget, prices=prices, model_name=model_name, sentinel=sentinel,
        max_output_tokens=max_output_tokens, loop_threshold=loop_threshold, run_id=run_id, meta=meta,
        redaction_salt=redaction_salt, max_value_bytes=max_value_bytes, record_raw=record_raw,
    )
    msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
    drive = _Drive(transcript if transcript is not None else MemoryTranscript(), ledger, observer)
    run_tools = executor or _sequential(registry, drive)
    state, pending = start(cfg, msgs)
    try:
        while pending:
            out = pending.pop(0)
            inbound: Any
            if isinstance(out, CallModel) and prepare is not None and out is not drive.ready:
                reason = prepare(state, drive.record)
                if inspect.isawaitable(reason):
                    raise TypeError("run() takes a synchronous prepare; arun() awaits one")
                pending = drive.prepared(state, out, reason) + pending
                continue
            if isinstance(out, CallModel):
                try:
                    inbound = _check_reply(model.complete(drive.request_with_stream(out.request)))
                except Exception as exc:  # any failure of the model ends the run as data
                    inbound = _failure(exc)
            elif isinstance(out, RunTools):
                inbound = ToolsDone(tuple(run_tools(out.calls)))
            else:
                inbound = drive.simple(state, out)
            if inbound is not None:
                state, more = step(state, inbound)
                pending = more + pending
    except KeyboardInterrupt:
        for out in interrupt(state):
            drive.simple(state, out)
    return drive.result(state)


def _sequential(registry: Registry, drive: _Drive) -> Executor:
    def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        results = []
        for c in calls:
            drive.emit(ToolStarted(c))
            r = registry.invoke(c)
            drive.emit(ToolFinished(r))
            results.append(r)
        return results

    return execute


async def arun(
    model: Any,
    tools: Registry | Iterable[Tool | Callable[..., Any]] | None,
    messages: Sequence[Message] | str,
    budget: Budget,
    *,
    transcript: Sink | None = None,
    sentinel: str | None = None,
    prices: PriceTable | Mapping[str, Price] | None = None,
    model_name: str | None = None,
    max_output_tokens: int = 4096,
    loop_threshold: int | None = None,
    run_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    ledger: Ledger | None = None,
    observer: Observer | None = None,
    executor: AsyncExecutor | None = None,
    config: LoopConfig | None = None,
    max_parallel: int = 10,
    redaction_salt: bytes | str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    record_raw: bool = False,
    prepare: Prepare | None = None,
) -> RunResult:
    """The async twin of ``run``: same loop, same records, same result.

    The model may offer ``acomplete`` (awaited) or only ``complete`` (run in a
    thread). When every call of a turn is to a read-only tool, the calls run
    at the same time (at most ``max_parallel``); their results are recorded in
    the order of the calls, whatever order they finish in.
    """
    registry = _registry(tools)
    cfg = config or make_config(
        model, registry, budget, prices=prices, model_name=model_name, sentinel=sentinel,
        max_output_tokens=max_output_tokens, loop_threshold=loop_threshold, run_id=run_id, meta=meta,
        redaction_salt=redaction_salt, max_value_bytes=max_value_bytes, record_raw=record_raw,
    )
    msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
    drive = _Drive(transcript if transcript is not None else MemoryTranscript(), ledger, observer)
    run_tools = executor or _parallel(registry, drive, max_parallel)
    state, pending = start(cfg, msgs)
    try:
        while pending:
            out = pending.pop(0)
            inbound: Any
            if isinstance(out, CallModel) and prepare is not None and out is not drive.ready:
                maybe = prepare(state, drive.record)
                reason = await maybe if inspect.isawaitable(maybe) else maybe
                pending = drive.prepared(state, out, reason) + pending
                continue
            if isinstance(out, CallModel):
                req = drive.request_with_stream(out.request)
                try:
                    if hasattr(model, "acomplete"):
                        reply = await model.acomplete(req)
                    else:
                        reply = await asyncio.to_thread(model.complete, req)
                    inbound = _check_reply(reply)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    inbound = _failure(exc)
            elif isinstance(out, RunTools):
                inbound = ToolsDone(tuple(await run_tools(out.calls)))
            else:
                inbound = drive.simple(state, out)
            if inbound is not None:
                state, more = step(state, inbound)
                pending = more + pending
    except (KeyboardInterrupt, asyncio.CancelledError):
        for out in interrupt(state):
            drive.simple(state, out)
    return drive.result(state)


def _parallel(registry: Registry, drive: _Drive, limit: int) -> AsyncExecutor:
    sem = asyncio.Semaphore(max(1, limit))

    async def one(c: ToolCall) -> ToolResult:
        async with sem:
            drive.emit(ToolStarted(c))
            r = await registry.ainvoke(c)
            drive.emit(ToolFinished(r))
            return r

    async def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        all_read_only = all((t := registry.get(c.name)) is not None and t.read_only for c in calls)
        if all_read_only and len(calls) > 1:
            return list(await asyncio.gather(*(one(c) for c in calls)))
        return [await one(c) for c in calls]

    return execute
