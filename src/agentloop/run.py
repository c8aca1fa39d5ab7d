"""The drivers: ``run`` (sync) and ``arun`` (async) perform what the loop asks.

Both drive the same state machine in ``loop.py``; neither decides anything.
Replay, the terminal agent and the batch runner are drivers of that same loop
with different models, tool executors and ledgers.
"""

from __future__ import annotations

import contextvars
import inspect
import queue
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict

from .budget import Budget, Price, PriceTable, SharedLedger
from .conversation import Continues
from .events import (
    Message,
    Model,
    ModelReply,
    ModelRequest,
    Observer,
    Stopped,
    TextDelta,
    TextWithdrawn,
    ThinkingDone,
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
    CountInput,
    Finished,
    InputCounted,
    LoopConfig,
    ModelFailed,
    ModelReplied,
    Outbound,
    Phase,
    Reserve,
    Reserved,
    RunTools,
    Settle,
    SideCostAnswer,
    SideCostAsked,
    SideCostSettled,
    State,
    ToolsChanged,
    ToolsDone,
    after_prepare,
    interrupt,
    start,
    step,
)
from .model_description import PlainModel, as_model, describe
from .redact import DEFAULT_MAX_VALUE_BYTES
from .tools import Registry, Tool
from .transcript import MemoryTranscript, Sink

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RunOptions", "RunResult", "SideCosts", "arun", "interrupt_flag", "make_config", "may_overlap", "run", "run_parallel", "schedule", "turn_rules", "waves", "current_wave", "Wave", "ascheduled"]

Executor = Callable[[Sequence[ToolCall]], list[ToolResult]]
AsyncExecutor = Callable[[Sequence[ToolCall]], Awaitable[list[ToolResult]]]
Record = Callable[[str, Any], None]
ToolsChangedCheck = Callable[[], "Registry | ToolsChanged | None"]
"""Called after each turn's tool calls: None when the tools are as they were, else the new tools.

A ``Registry``: the driver runs later calls with it (unless the run was given
an ``executor``, which is the caller's to keep in step) and reports its tools
to the loop, which records ``tools_changed`` and shows them to the model from
the next turn on. A ``ToolsChanged``: reported as is (replay, which runs no
registry of its own).
"""
Prepare = Callable[[State, Record], "str | None | Awaitable[str | None]"]
"""Called before each model call with the loop's state and a way to record (a ``SideCosts``, which
is also how a cost beside the model turn enters the loop).

It may rewrite ``state.messages`` in place (mask old tool output, compact);
then it keeps ``state.messages_bound`` right through the loop (``loop.shrink_bound``, or ``loop.recount_bound``,
which is O(messages): too slow to run every turn of a long session), and
the driver sends the new list. Records it
makes go through the run's sink, counted. Returning a stop reason (e.g.
``"loop_detected"``) ends the run there, before the call. ``arun`` awaits it
when it returns an awaitable.
"""


class RunOptions(TypedDict, total=False):
    """What ``run`` and ``arun`` take by keyword beside how they run a turn's tools (``executor``): declared once
    for both (``run``'s docstring says what each does). A key left out takes its default (``_DEFAULTS``)."""

    transcript: Sink | None
    sentinel: str | None
    prices: PriceTable | Mapping[str, Price] | None
    model_name: str | None
    max_output_tokens: int
    loop_threshold: int | None
    run_id: str | None
    meta: Mapping[str, Any] | None
    ledger: SharedLedger | None
    observer: Observer | None
    config: LoopConfig | None
    redaction_salt: bytes | str | None
    max_value_bytes: int
    record_raw: bool
    prepare: Prepare | None
    max_parallel: int
    continues: Continues | None
    tools_changed: ToolsChangedCheck | None


_DEFAULTS: RunOptions = {"max_output_tokens": 4096, "max_value_bytes": DEFAULT_MAX_VALUE_BYTES, "record_raw": False, "max_parallel": 10}
"""The defaults of ``RunOptions`` that are not None."""

def _options(given: RunOptions, who: str) -> RunOptions:
    """``given`` over the defaults. Raises TypeError naming a keyword ``run`` and ``arun`` do not take."""
    unknown = sorted(set(given) - RunOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"{who}() got an unexpected keyword argument {unknown[0]!r}")
    return {**_DEFAULTS, **given}


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


def count_input(model: object, request: ModelRequest) -> InputCounted:
    """A ``CountInput`` answered by the model's ``count_tokens`` (a failure is data). The loop asks only
    when the config says the model counts (``ModelDescription.can_count``), or a replay recorded a count."""
    counter = getattr(model, "count_tokens", None)
    if counter is None:
        return InputCounted(None, "the model cannot count tokens")
    try:
        n = counter(request)
    except Exception as exc:  # counting is advice: its failure leaves the bound standing
        return InputCounted(None, str(exc) if getattr(exc, "verbatim", False) else f"{type(exc).__name__}: {exc}")
    return InputCounted(n if isinstance(n, int) and not isinstance(n, bool) else None, None if isinstance(n, int) else "no count")


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
    d = describe(model)
    name = model_name or d.name
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
        max_continuations=max(0, d.max_continuations),
        fallback_prices={f.name: table.resolve(f.name) for f in d.fallbacks},
        image_tokens=d.chain_image_tokens,
        can_count=False,  # a count is a hint, never a bound: a call the byte bound refuses is refused (docs/budget.md)
    )


class SideCosts:
    """What ``prepare`` is given to record with, and the one way a cost beside the model turn enters the run.

    Calling it records through the run's sink. ``ask`` and ``settle`` hand the
    loop ``SideCostAsked`` and ``SideCostSettled`` (``loop`` rule 6): the
    loop decides whether a side call may be made, and charges and records
    what it cost; nothing else writes the loop's state. A cost settled while
    the turn's tools run (a child agent's), or from another thread, waits in
    a queue until the driver feeds it, on its own thread, before the turn's
    results.
    """

    def __init__(self, drive: _Driver):
        self._ref = weakref.ref(drive)  # not a cycle: replay pauses the collector, and a run must leave none
        self._lock = threading.Lock()
        self._queued: list[SideCostSettled] = []
        self._owner = threading.get_ident()
        self.deferring = False
        """Set by the driver while a turn's tools run: settled costs wait for it."""

    def _drive(self) -> _Driver:
        drive = self._ref()
        if drive is None:
            raise RuntimeError("the run these side costs belonged to is over")
        return drive

    def __call__(self, kind: str, payload: Any) -> None:
        self._drive().record(kind, payload)

    def _deferred(self) -> bool:
        return self.deferring or threading.get_ident() != self._owner

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        """Room for a side call whose bound is ``micros`` and ``tokens``: None when the loop granted it
        (then ``settle`` it), else why not. Only from ``prepare``, before a model call.

        Raises:
            RuntimeError: asked while the turn's tools run or from another thread (a caller's bug).
        """
        if self._deferred():
            raise RuntimeError("a side cost is asked for only from prepare, on the driver's thread")
        self.drain()
        answer = self._drive().side_cost(SideCostAsked(purpose, micros, tokens))
        if answer is None:
            raise AssertionError("the loop did not answer a side cost's ask")
        return None if answer.granted else answer.reason or "refused"

    def settle(
        self, purpose: str, usage: Usage, cost_micros: int, *, reserved_micros: int | None = None,
        reserved_tokens: int | None = None, overrun: str | None = None, legacy: bool = False,
    ) -> None:
        """What a side cost was billed: the loop charges and records it (now, or queued while tools run)."""
        ev = SideCostSettled(purpose, usage, cost_micros, reserved_micros, reserved_tokens, overrun, legacy)
        if self._deferred():
            with self._lock:
                self._queued.append(ev)
            return
        self.drain()
        self._drive().side_cost(ev)

    def __enter__(self) -> None:
        """``with costs:`` while a turn's tools run: costs settled meanwhile (a child's spend) wait for the driver."""
        self.deferring = True

    def __exit__(self, *exc: object) -> None:
        self.deferring = False

    def queued(self) -> tuple[int, int]:
        """What the costs settled but not yet fed to the loop come to, (micro-USD, tokens): a child's
        siblings in the same turn reserve from what is left after them."""
        with self._lock:
            return (sum(max(0, e.cost_micros) for e in self._queued), sum(max(0, e.usage.total) for e in self._queued))

    def drain(self) -> None:
        """Feed the loop the costs that were queued (the driver's thread only)."""
        if not self._queued:  # the common case, read without the lock: nothing settles once the tools are done
            return
        with self._lock:
            queued, self._queued = self._queued, []
        for ev in queued:
            self._drive().side_cost(ev)


class _Driver:
    """What both drivers share: the loop's state, recording, ledgers, observers.

    ``next()`` performs every outbound that needs neither the model nor a
    tool and returns the next one that does; the driver performs that one
    (synchronously or awaiting) and hands the inbound back to ``feed``.
    """

    def __init__(self, sink: Sink, ledger: SharedLedger | None, observer: Observer | None, registry: Registry | None = None):
        self.registry = registry if registry is not None else Registry()
        """The tools the default executors run: replaced when ``tools_changed`` reports new ones."""
        self.sink = sink
        self.ledger = ledger
        self.observer = observer
        self.records = 0
        self.last_hash = ""
        self.ready: CallModel | None = None
        """The call ``prepare`` already saw: it is made, not prepared again."""
        self.calling = False
        """The model call is being made (its request may have reached the provider): an interrupt charges it."""
        self.state: State
        self.pending: list[Outbound] = []
        self.costs = SideCosts(self)

    def begin(self, cfg: LoopConfig, messages: Sequence[Message], continues: Continues | None) -> None:
        self.state, self.pending = start(cfg, messages, continues)

    def side_cost(self, inbound: SideCostAsked | SideCostSettled) -> SideCostAnswer | None:
        """Feed a side cost's event and perform what the loop asks for it (records, the ledger); its answer."""
        self.state, out = step(self.state, inbound)
        answer = None
        while out:
            o = out.pop(0)
            if isinstance(o, SideCostAnswer):
                answer = o
                continue
            nxt = self.perform(self.state, o)
            if nxt is not None:
                self.state, more = step(self.state, nxt)
                out = more + out
        return answer

    def next(self) -> CallModel | RunTools | CountInput | None:
        """Perform outbounds until one needs the model or the tools; None when the run is over."""
        pending = self.pending
        while pending:
            out = pending.pop(0)
            if self.perform_inline(out):  # records, and settling with no ledger: most outbounds, done inline
                continue
            if isinstance(out, (CallModel, RunTools, CountInput)):
                return out
            inbound = self.perform(self.state, out)
            if inbound is not None:
                self.feed(inbound)
                pending = self.pending
        return None

    def feed(self, inbound: Any) -> None:
        """Step the loop with what the driver performed; its outbounds come first."""
        self.state, more = step(self.state, inbound)
        self.pending = more + self.pending if self.pending else more

    def run_tools(self, execute: Executor, calls: Sequence[ToolCall]) -> list[ToolResult]:
        with self.costs:  # a child's spend settled while they run waits for this thread
            return execute(calls)

    def tools_done(self, results: Sequence[ToolResult], changed: ToolsChangedCheck | None) -> None:
        """Feed a turn's results, after asking ``changed`` whether the tools changed while they ran."""
        self.costs.drain()  # a child's spend, settled while the tools ran: the loop takes it before their results
        new = changed() if changed is not None else None
        if isinstance(new, Registry):
            self.registry = new
            self.feed(ToolsChanged(new.specs(), tuple(new.manifest())))
        elif new is not None:
            self.feed(new)
        self.feed(ToolsDone(tuple(results)))

    def after_prepare(self, out: CallModel, reason: str | None) -> None:
        self.pending = self.prepared(self.state, out, reason) + self.pending

    def calling_model(self, call: Callable[[], ModelReplied | ModelFailed]) -> ModelReplied | ModelFailed:
        """``call()`` (the model call) with ``calling`` set while it runs: an interrupt then charges the call."""
        self.calling = True
        answer = call()
        self.calling = False
        return answer

    def interrupted(self, exc: BaseException | None = None) -> None:
        """Stop the run (``loop.interrupt``); ``exc`` a replay's interrupt says whether the call was in flight."""
        self.costs.deferring = False
        if self.state.phase in (Phase.CALL, Phase.TOOLS) and not self.state.side_waiting:
            self.costs.drain()  # what children spent before the interrupt is still the run's
        in_call = getattr(exc, "in_call", self.calling)
        self.calling = False
        for out in interrupt(self.state, in_call=in_call is True):
            self.perform(self.state, out)

    def record(self, kind: str, payload: Any) -> None:
        rec = self.sink.append(kind, payload)
        self.records += 1
        self.last_hash = rec.hash

    def perform_inline(self, out: Outbound) -> bool:
        """Perform ``out`` at once when it is a record nobody observes or a settle with no ledger.

        The commonest outbounds of a step, kept off ``perform``'s general path (a twentieth of a step).
        """
        t = type(out)
        if t is Append and self.observer is None:
            assert isinstance(out, Append)
            self.record(out.kind, out.payload)
            return True
        return t is Settle and self.ledger is None

    def prepared(self, state: State, out: CallModel, reason: str | None) -> list[Outbound]:
        """After ``prepare``: the call to make, or the stop the loop makes of it."""
        self.costs.drain()
        stop = after_prepare(self.state, reason)
        if stop is not None:
            return stop
        self.ready = CallModel(replace(out.request, messages=state.messages))
        return [self.ready]

    def emit(self, ev: Any) -> None:
        if self.observer is not None:
            self.observer(ev)

    def perform(self, state: State, out: Outbound) -> Any:
        """Perform an outbound that needs no model or tool; returns an inbound or None."""
        if isinstance(out, Append):
            self.record(out.kind, out.payload)
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
        raise AssertionError(f"not an outbound the driver performs itself: {out!r}")

    def request_with_stream(self, req: ModelRequest) -> ModelRequest:
        if self.observer is None:
            return req
        obs = self.observer
        return replace(req, on_text=lambda t: obs(TextDelta(t)), on_restart=lambda: obs(TextWithdrawn()),
                       on_thinking=lambda b: obs(ThinkingDone(b)))

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
    usage = getattr(exc, "usage", None)  # a provider's billed failed attempts
    unaccounted = getattr(exc, "unaccounted", False) is True  # billed, with figures no one can settle from
    return ModelFailed(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, usage if isinstance(usage, Usage) else None, unaccounted)


def _setup(model: object, tools: Registry | Iterable[Tool | Callable[..., Any]] | None, messages: Sequence[Message] | str,
           budget: Budget, o: RunOptions) -> _Driver:
    """What both drivers do before the first outbound: the registry (``drive.registry``), the config (``make_config``
    with the options' config keys, when no ``config`` is given), the started loop."""
    registry = _registry(tools)
    config, ledger = o.get("config"), o.get("ledger")
    cfg = config or make_config(
        model, registry, budget, prices=o.get("prices"), model_name=o.get("model_name"), sentinel=o.get("sentinel"),
        max_output_tokens=o["max_output_tokens"], loop_threshold=o.get("loop_threshold"), run_id=o.get("run_id"),
        meta=o.get("meta"), redaction_salt=o.get("redaction_salt"), max_value_bytes=o["max_value_bytes"], record_raw=o["record_raw"],
    )
    if config is None and ledger is not None:
        cfg = replace(cfg, shared_cap=True)
    msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
    transcript = o.get("transcript")
    drive = _Driver(transcript if transcript is not None else MemoryTranscript(), ledger, o.get("observer"), registry)
    drive.begin(cfg, msgs, o.get("continues"))
    return drive


def run(
    model: Model | PlainModel,
    tools: Registry | Iterable[Tool | Callable[..., Any]] | None,
    messages: Sequence[Message] | str,
    budget: Budget,
    *,
    executor: Executor | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Run the loop to a stop, synchronously.

    ``model`` may be a plain callable ``(messages, manifest) -> ModelReply`` (``as_model``).
    ``messages`` may be a plain prompt (one user message). ``budget`` is required. Records go to ``transcript`` (in memory when omitted).
    ``executor`` replaces how a turn's tool calls are run (the terminal agent
    wraps permissions and hooks around it; replay answers from a record).
    ``redaction_salt`` keys the hashes kept of redacted values (sensitive
    tools, secret arguments); ``max_value_bytes`` is where recorded values are
    truncated; ``record_raw`` keeps each provider response in the record.
    ``prepare(state, record)`` runs before each model call and may rewrite
    ``state.messages`` in place (context masking and compaction) or return a
    stop reason (see ``Prepare``). A turn's calls run in ``waves``: consecutive
    calls to read-only (or ``concurrent``) tools at the same time on threads (at
    most ``max_parallel``), every other call alone (``schedule``), and their
    results are recorded in the order of the calls; Ctrl+C sets
    ``interrupt_flag()`` for every call in flight. ``continues`` lets the
    ``run_start`` refer to the conversation the transcript already holds
    instead of repeating it (``conversation`` rule 1). ``tools_changed()``
    is asked after each turn's tool calls whether the tools changed (an MCP
    server's ``list_changed``): new tools are recorded (``tools_changed``)
    and the next turn of the same run sees them (see ``ToolsChangedCheck``).

    Returns:
        A ``RunResult``; the run's own failures are its ``stop_reason``.
    Raises:
        TypeError: ``budget`` is missing or not a ``Budget``.
        TranscriptError: the transcript could not be written (nothing after
            the failed record is written).
    """
    called: Model = as_model(model)
    o = _options(options, "run")
    drive = _setup(called, tools, messages, budget, o)
    run_tools = executor or _threaded(drive, o["max_parallel"])
    prepare, tools_changed = o.get("prepare"), o.get("tools_changed")
    try:
        while (out := drive.next()) is not None:
            if isinstance(out, CallModel):
                if prepare is not None and out is not drive.ready:
                    reason = prepare(drive.state, drive.costs)
                    if inspect.isawaitable(reason):
                        raise TypeError("run() takes a synchronous prepare; arun() awaits one")
                    drive.after_prepare(out, reason)
                    continue
                drive.feed(drive.calling_model(lambda: _call(called, drive, out.request)))
            elif isinstance(out, RunTools):
                drive.tools_done(drive.run_tools(run_tools, out.calls), tools_changed)
            else:
                drive.feed(count_input(called, out.request))
    except KeyboardInterrupt as exc:
        drive.interrupted(exc)
    return drive.result(drive.state)


_INTERRUPT: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("agentloop_interrupt", default=None)
_GRACE_SECONDS = 2.0
"""How long an interrupted turn waits for its threads to notice the flag."""


def interrupt_flag() -> threading.Event | None:
    """The flag set when the user interrupts the tool calls in flight (Ctrl+C).

    Set for every call of a turn at once. A tool that runs long polls it and
    stops early (MCP tools cancel their request). None outside a tool call.
    """
    return _INTERRUPT.get()


def may_overlap(registry: Registry, call: ToolCall) -> bool:
    """Whether the tool ``call`` names declares that its calls may run beside others (read-only, or
    ``concurrent``): the one reading of those declarations for ``waves`` (the agent adds its permission and hooks)."""
    t = registry.get(call.name)
    return t is not None and (t.read_only or t.concurrent)


Admit = Callable[[ToolCall], "ToolResult | None"]
"""Asked of each call when its turn to start comes, on the scheduler's thread: None when its reservation holds
(it may start), else the result it gets instead (it never starts)."""


class Wave:
    """Calls of one turn that the scheduler runs side by side (``waves``). A tool finds its wave and its own
    call with ``current_wave()``, and may wait until every earlier call of the wave is done
    (``wait_before``): the sub-agents write their records in call order by it."""

    def __init__(self, calls: Sequence[ToolCall]):
        self.calls = tuple(calls)
        self._done: set[int] = set()
        self._cond = threading.Condition()
        self._abandoned = False

    def done(self, index: int) -> None:
        """The scheduler: the ``index``-th call of the wave has returned (whatever its result)."""
        with self._cond:
            self._done.add(index)
            self._cond.notify_all()

    def abandon(self) -> None:
        """The scheduler: the wave was interrupted; calls not started never will be, so nobody waits for them."""
        with self._cond:
            self._abandoned = True
            self._cond.notify_all()

    def wait_before(self, call: ToolCall) -> None:
        """Wait until every call of the wave before ``call`` is done (the earliest one not done is always running),
        or the wave is abandoned."""
        k = next((i for i, c in enumerate(self.calls) if c is call), 0)
        with self._cond:
            while not self._abandoned and not all(i in self._done for i in range(k)):
                self._cond.wait()


_WAVE: contextvars.ContextVar[tuple[Wave, ToolCall] | None] = contextvars.ContextVar("agentloop_wave", default=None)
_RULES: contextvars.ContextVar[tuple[int | None, Admit | None]] = contextvars.ContextVar("agentloop_rules", default=(None, None))


def current_wave() -> tuple[Wave, ToolCall] | None:
    """The wave the current call runs in (its calls side by side, this one included) and this call; None when
    it runs alone."""
    return _WAVE.get()


def waves(calls: Sequence[ToolCall], alongside: Callable[[ToolCall], bool]) -> list[tuple[int, ...]]:
    """The one decision of how a turn's calls run: the indices of the calls, in waves run one after the other.

    Consecutive calls that ``alongside`` passes (their tools' records say they may run beside others, and the
    caller's rules agree) form one wave and run side by side; every other call is a wave of its own, so a call
    that may change something never overlaps another, and no call starts before every earlier one that it may
    not overlap has finished. Results are recorded in call order whatever the waves (replay byte for byte).
    """
    out: list[tuple[int, ...]] = []
    run_: list[int] = []
    for i, c in enumerate(calls):
        if alongside(c):
            run_.append(i)
            continue
        if run_:
            out.append(tuple(run_))
            run_ = []
        out.append((i,))
    if run_:
        out.append(tuple(run_))
    return out


class turn_rules:
    """``with turn_rules(limit=, admit=):`` the turn's calls scheduled inside are held to ``limit`` at once and to
    ``admit`` (``Admit``): how a part that owns a budget (the sub-agents' room) or a setting
    (``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY``) joins the one scheduler without a scheduler of its own."""

    def __init__(self, *, limit: int | None = None, admit: Admit | None = None):
        self.rules = (limit, admit)
        self.token: contextvars.Token[tuple[int | None, Admit | None]] | None = None

    def __enter__(self) -> None:
        self.token = _RULES.set(self.rules)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _RULES.reset(self.token)


def _admitted(calls: Sequence[ToolCall], wave: tuple[int, ...], admit: Admit | None,
              results: list[ToolResult | None], emit: Callable[[Any], None] | None) -> list[int]:
    """The calls of ``wave`` whose reservation holds, asked in call order; the others get their refusal."""
    if admit is None:
        return list(wave)
    go = []
    for i in wave:
        refused = admit(calls[i])
        if refused is None:
            go.append(i)
            continue
        results[i] = refused
        if emit is not None:
            emit(ToolFinished(refused))
    return go


def _threaded(drive: _Driver, limit: int) -> Executor:
    """``run()``'s executor: its calls through ``schedule``, side by side when each tool is read-only.

    Observer events are emitted from the driver's thread only, and results
    come back in the order of the calls whatever order they finish in.
    """

    flag = threading.Event()  # one per run: once set (Ctrl+C) the run stops, so it is never cleared

    def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        registry = drive.registry  # the tools as they are now (``tools_changed`` may replace them)
        emit = drive.emit if drive.observer is not None else None  # unobserved: no events made, a step's cost
        return schedule(calls, registry.invoke, emit, alongside=lambda c: may_overlap(registry, c), limit=limit, flag=flag)

    return execute


def schedule(
    calls: Sequence[ToolCall],
    one: Callable[[ToolCall], ToolResult],
    emit: Callable[[Any], None] | None,
    *,
    alongside: Callable[[ToolCall], bool],
    limit: int = 10,
    flag: threading.Event | None = None,
    on_interrupt: Callable[[ToolCall | None], object] | None = None,
    admit: Admit | None = None,
) -> list[ToolResult]:
    """A turn's calls, each through ``one``, their results in call order: the one scheduler of every driver
    (``run()``, ``arun()`` through ``ascheduled``, replay, the terminal agent's and its sub-agents' turns).

    The calls run in ``waves(calls, alongside)``: a wave of several side by
    side on threads (at most ``limit``, or ``turn_rules``' limit), a wave of
    one on this thread. Each call is first asked of ``admit`` (or
    ``turn_rules``'): a call whose reservation does not hold never starts,
    and its refusal is its result. ``emit`` gets ``ToolStarted`` and
    ``ToolFinished`` on this thread (None: nobody observes, and no event is
    made). ``flag`` (what ``interrupt_flag()`` gives the tools) is set for
    every call when this thread is interrupted (Ctrl+C) or a call raises, and
    the exception goes on up; ``on_interrupt`` is told of a Ctrl+C first: the
    call in flight, or None when calls ran side by side.
    """
    flag = flag if flag is not None else threading.Event()
    ruled_limit, ruled_admit = _RULES.get()
    limit = ruled_limit if ruled_limit is not None else limit
    admit = admit if admit is not None else ruled_admit
    results: list[ToolResult | None] = [None] * len(calls)
    token = _INTERRUPT.set(flag)
    try:
        for wave in (waves(calls, alongside) if len(calls) > 1 else [(0,)] if calls else []):
            go = _admitted(calls, wave, admit, results, emit)
            if len(go) > 1:
                _side_by_side(one, emit, calls, go, results, flag, max(1, limit), on_interrupt)
            elif go:
                results[go[0]] = _alone(one, emit, calls[go[0]], on_interrupt)
    except BaseException:
        flag.set()
        raise
    finally:
        _INTERRUPT.reset(token)
    return [r for r in results if r is not None]


def _alone(one: Callable[[ToolCall], ToolResult], emit: Callable[[Any], None] | None, c: ToolCall,
           on_interrupt: Callable[[ToolCall | None], object] | None) -> ToolResult:
    if emit is not None:
        emit(ToolStarted(c))
    try:
        r = one(c)
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt(c)
        raise
    if emit is not None:
        emit(ToolFinished(r))
    return r


def _side_by_side(one: Callable[[ToolCall], ToolResult], emit: Callable[[Any], None] | None, calls: Sequence[ToolCall],
                  go: list[int], results: list[ToolResult | None], flag: threading.Event, limit: int,
                  on_interrupt: Callable[[ToolCall | None], object] | None) -> None:
    together = Wave([calls[i] for i in go])
    try:
        done = _on_threads(one, emit if emit is not None else _unobserved, together, flag, limit)
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt(None)
        raise
    for i, r in zip(go, done):
        results[i] = r


def _unobserved(ev: Any) -> None:
    """``schedule``'s ``emit`` on threads when nobody observes."""


def run_parallel(
    calls: Sequence[ToolCall],
    invoke: Callable[[ToolCall], ToolResult],
    *,
    emit: Callable[[Any], None] | None = None,
    max_parallel: int = 10,
) -> list[ToolResult]:
    """Run ``invoke`` for every call at the same time on threads; results in call order (``schedule`` with
    every call alongside)."""
    return schedule(calls, invoke, emit or (lambda ev: None), alongside=lambda c: True, limit=max_parallel)


def _on_threads(
    invoke: Callable[[ToolCall], ToolResult],
    emit: Callable[[Any], None],
    wave: Wave,
    flag: threading.Event,
    limit: int,
) -> list[ToolResult]:
    calls = wave.calls
    n = len(calls)
    results: list[ToolResult | None] = [None] * n
    events: queue.SimpleQueue[tuple[str, int, BaseException | None]] = queue.SimpleQueue()
    next_index = iter(range(n))
    take = threading.Lock()

    def work() -> None:
        _INTERRUPT.set(flag)
        while not flag.is_set():
            with take:
                i = next(next_index, None)
            if i is None:
                return
            events.put(("start", i, None))
            _WAVE.set((wave, calls[i]))
            try:
                results[i] = invoke(calls[i])
            except BaseException as exc:  # not the model's mistake: re-raised on the driver's thread
                wave.done(i)
                events.put(("raise", i, exc))
                return
            wave.done(i)
            events.put(("done", i, None))

    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(work,), name=f"agentloop-tool-{k}", daemon=True)
        for k in range(min(limit, n))
    ]
    try:
        for t in threads:
            t.start()
        _collect(emit, calls, results, events)
    except BaseException:  # Ctrl+C, or a tool's BaseException: stop every call in flight
        flag.set()
        wave.abandon()
        for t in threads:
            if t.is_alive():
                t.join(_GRACE_SECONDS / len(threads))
        raise
    return [r for r in results if r is not None]


def _collect(
    emit: Callable[[Any], None],
    calls: Sequence[ToolCall],
    results: list[ToolResult | None],
    events: queue.SimpleQueue[tuple[str, int, BaseException | None]],
) -> None:
    """Relay the workers' events to the observer until every call is done.

    Runs inside the caller's handler, as does starting the threads: a
    KeyboardInterrupt can arrive as soon as the first call has started.
    """
    finished = 0
    while finished < len(calls):
        try:
            kind, i, exc = events.get(timeout=0.5)
        except queue.Empty:
            kind, i, exc = "idle", -1, None
        if kind == "start":
            emit(ToolStarted(calls[i]))
        elif kind == "raise" and exc is not None:
            raise exc
        elif kind == "done":
            r = results[i]
            assert r is not None
            emit(ToolFinished(r))
            finished += 1


async def arun(
    model: Any,
    tools: Registry | Iterable[Tool | Callable[..., Any]] | None,
    messages: Sequence[Message] | str,
    budget: Budget,
    *,
    executor: AsyncExecutor | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """The async twin of ``run``: same loop, same records, same result.

    The model may offer ``acomplete`` (awaited) or only ``complete`` (run in a
    thread). A turn's calls run in the same ``waves`` as ``run``'s
    (``ascheduled``, at most ``max_parallel`` at once); their results are
    recorded in the order of the calls, whatever order they finish in.
    """
    import asyncio  # deferred, as in every function here: the synchronous run() never loads it
    model = as_model(model)
    o = _options(options, "arun")
    drive = _setup(model, tools, messages, budget, o)
    run_tools = executor or _parallel(drive, o["max_parallel"])
    prepare, tools_changed = o.get("prepare"), o.get("tools_changed")
    try:
        while (out := drive.next()) is not None:
            if isinstance(out, CallModel):
                if prepare is not None and out is not drive.ready:
                    maybe = prepare(drive.state, drive.costs)
                    drive.after_prepare(out, await maybe if inspect.isawaitable(maybe) else maybe)
                    continue
                drive.calling = True
                answer = await _acall(model, drive.request_with_stream(out.request))
                drive.calling = False
                drive.feed(answer)
            elif isinstance(out, RunTools):
                with drive.costs:
                    results = await run_tools(out.calls)
                drive.tools_done(results, tools_changed)
            else:
                drive.feed(await asyncio.to_thread(count_input, model, out.request))
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        drive.interrupted(exc)
    return drive.result(drive.state)


def _call(model: Model, drive: _Driver, request: ModelRequest) -> ModelReplied | ModelFailed:
    """The model's reply to ``request`` (streamed to the observer), or its failure as data."""
    try:
        return _check_reply(model.complete(drive.request_with_stream(request)))
    except Exception as exc:  # any failure of the model ends the run as data
        return _failure(exc)


async def _acall(model: Any, req: ModelRequest) -> ModelReplied | ModelFailed:
    """The model's reply to ``req``, awaited: ``acomplete`` when it has one, else ``complete`` on a thread."""
    import asyncio

    try:
        if hasattr(model, "acomplete"):
            reply = await model.acomplete(req)
        else:
            reply = await asyncio.to_thread(model.complete, req)
        return _check_reply(reply)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # any failure of the model ends the run as data
        return _failure(exc)


def _parallel(drive: _Driver, limit: int) -> AsyncExecutor:
    """``arun()``'s executor: ``ascheduled`` over the run's tools, side by side when each tool is read-only."""

    async def execute(calls: Sequence[ToolCall]) -> list[ToolResult]:
        registry = drive.registry
        return await ascheduled(calls, registry.ainvoke, drive.emit, alongside=lambda c: may_overlap(registry, c), limit=limit)

    return execute


async def ascheduled(
    calls: Sequence[ToolCall],
    one: Callable[[ToolCall], Awaitable[ToolResult]],
    emit: Callable[[Any], None],
    *,
    alongside: Callable[[ToolCall], bool],
    limit: int = 10,
    admit: Admit | None = None,
) -> list[ToolResult]:
    """``schedule`` for awaitable calls: the same ``waves`` and the same ``admit`` (or ``turn_rules``'), a wave of
    several gathered (at most ``limit`` at once), a wave of one awaited alone; results in call order. The
    interrupt flag is set for every call when the task is cancelled or a call raises."""
    import asyncio

    ruled_limit, ruled_admit = _RULES.get()
    sem = asyncio.Semaphore(max(1, ruled_limit if ruled_limit is not None else limit))
    admit = admit if admit is not None else ruled_admit

    async def started(c: ToolCall, wave: Wave | None = None, k: int = 0) -> ToolResult:
        async with sem:
            emit(ToolStarted(c))
            if wave is not None:
                _WAVE.set((wave, c))  # this task's own context
            try:
                r = await one(c)
            finally:
                if wave is not None:
                    wave.done(k)
            emit(ToolFinished(r))
            return r

    flag = threading.Event()
    token = _INTERRUPT.set(flag)  # copied into each task, and by to_thread into its thread
    results: list[ToolResult | None] = [None] * len(calls)
    try:
        for wave in (waves(calls, alongside) if len(calls) > 1 else [(0,)] if calls else []):
            go = _admitted(calls, wave, admit, results, emit)
            if len(go) > 1:
                together = Wave([calls[i] for i in go])
                try:
                    done = await asyncio.gather(*(started(c, together, k) for k, c in enumerate(together.calls)))
                except BaseException:
                    together.abandon()
                    raise
                for i, r in zip(go, done):
                    results[i] = r
            elif go:
                results[go[0]] = await started(calls[go[0]])
    except BaseException:
        flag.set()
        raise
    finally:
        _INTERRUPT.reset(token)
    return [r for r in results if r is not None]
