"""The loop as a state machine: ``step(state, inbound) -> (state, outbound)``.

Rules:

1. ``step`` performs no effect. It never calls a model, runs a tool, writes a
   file or reads a clock. It says what it needs next (``Reserve``,
   ``CallModel``, ``RunTools``), and what to record (``Append``); a driver
   does those things and hands back the answer.
2. The step budget is checked before each turn, so steps never exceed it.
3. Before each model call the loop reserves an upper bound of its cost:
   ``budget.input_bound`` of what is sent (UTF-8 bytes plus stated
   allowances, see ``docs/budget.md``) at the dearest input rate of the model
   and its fallbacks, plus ``max_output_tokens`` at the output price. If it
   does not fit the run's cap, or the driver's shared ledger refuses it, the
   run stops with ``cost_budget`` and the call is not made (a token count is
   never a bound: only files that recorded ``can_count`` reserve from one,
   when replayed). A reply is settled by ``budget.bill``: figures the request
   cannot have been billed (output past ``max_tokens``, a bill past the
   reservation) are charged the whole reservation and stop the run with
   ``budget_overrun`` (an ``overrun`` record): the bound failed, and that is
   never a success. A failed call is charged at most its reservation; an
   interrupt while the model answers, its reservation (``interrupt``).
4. Within one turn: record the turn, then ``sentinel``, then
   ``no_tool_calls``, then the budgets (tokens, then money), then loop
   detection. A turn that stops the run never has its tools run.
5. Every decision ends in the transcript; nothing else decides what happens.
6. Costs beside the model turn (a compaction summary, a loop check, a child
   agent's run) enter as inbound events, and only the loop writes them into
   its ``State``: ``SideCostAsked`` (before a side call, from a driver's
   ``prepare``) is refused when the run's cap, less what it spent and the
   turn it holds, has no room for the call's bound, or when the shared
   ledger refuses it; ``SideCostSettled`` adds the bill to the run's spend,
   tokens and usage. Each is a ``side_cost`` record. A bill past its
   reservation (or a child stopped by ``budget_overrun``) stops the run with
   ``budget_overrun`` before its next call; a token budget passed by side
   costs stops it with ``token_budget``.

Phases (``Phase``; the moves are one table, ``TRANSITIONS``, and a move not
in it raises; what each phase takes from the driver is ``_INBOUND``)::

    phase    asked of the driver   takes                          next
    new      (nothing yet)         -                              reserve, count, done
    reserve  Reserve               Reserved                       call, done
    count    CountInput            InputCounted                   reserve, done
    call     CallModel             ModelReplied, ModelFailed;     tools, reserve or count
                                   side costs (below)             (a continuation), done
    tools    RunTools              ToolsChanged, SideCostSettled  (stays), then ToolsDone:
                                   (a child's run), ToolsDone     reserve, count, done
    done     Finished              nothing                        done (an interrupt that
                                                                  came while the stop was written)

Side costs (rule 6) are a sub-machine inside ``call`` (a settle alone also in
``tools``), held in ``State.side_asked`` and ``State.side_waiting``; the turn's
own phase does not move::

    side state  takes                    the loop                           next
    idle        SideCostAsked, no room   side_cost (refused), answer no     idle
    idle        SideCostAsked, fits      Reserve (the shared ledger)        waiting
    waiting     Reserved, granted        SideCostAnswer(True)               held
    waiting     Reserved, refused        side_cost (refused), answer no     idle
    held        SideCostSettled          Settle, side_cost                  idle
    idle        SideCostSettled          side_cost (a child's run: no ask)  idle
    held, waiting  halt, interrupt       Settle at 0 (freed)                idle

Any other side event raises (one side cost at a time; none while waiting).

Theory of operation: a driver calls ``start`` and then feeds ``step`` the
inbound event that answers the last outbound request, until ``Finished``.
``State`` is mutated in place by ``step`` (for speed: messages are appended,
never copied) and belongs to one driver.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Union, cast

from .budget import (
    IMAGE_TOKENS,
    MAX_MICROS,
    REQUEST_ALLOWANCE,
    Budget,
    CallBound,
    Price,
    bill,
    capped_bill,
    cost_micros,
    count_images,
    dearest,
    estimate_micros,
    format_usd,
    input_rate,
    message_bound,
    over_cap,
    reservation_micros,
    tools_bound,
    usage_problem,
)
from .canonical import canonical
from .conversation import Continues, continued_prefix, recorded_tools
from .events import Message, ModelReply, ModelRequest, ToolCall, ToolResult, ToolSpec, Usage
from .redact import (
    DEFAULT_MAX_VALUE_BYTES,
    Policy,
    is_marker,
    marker_info,
    size_correction,
    stand_in,
)

__all__ = [
    "Append",
    "CallModel",
    "CountInput",
    "Finished",
    "LoopConfig",
    "Phase",
    "TRANSITIONS",
    "ModelFailed",
    "ModelReplied",
    "InputCounted",
    "Reserve",
    "Reserved",
    "RunTools",
    "Settle",
    "SideCostAnswer",
    "SideCostAsked",
    "SideCostSettled",
    "State",
    "ToolsChanged",
    "ToolsDone",
    "after_prepare",
    "recount_bound",
    "shrink_bound",
    "side_room",
    "start",
    "step",
]

STOP_REASONS = (
    "no_tool_calls",
    "sentinel",
    "step_budget",
    "token_budget",
    "cost_budget",
    "budget_overrun",
    "model_error",
    "loop_detected",
    "interrupted",
)


class Phase(str, Enum):
    """Where a run is: what the loop last asked its driver for (see ``TRANSITIONS``)."""

    NEW = "new"
    """Made by ``start``, before the first turn is asked for."""
    RESERVE = "reserve"
    """A turn's reservation was asked (``Reserve``): ``Reserved`` answers it."""
    COUNT = "count"
    """An exact input count was asked (``CountInput``): ``InputCounted`` answers it."""
    CALL = "call"
    """The model call was asked (``CallModel``): ``ModelReplied`` or ``ModelFailed`` answers it; side costs
    are asked and settled here (the side-cost table in the module's docstring)."""
    TOOLS = "tools"
    """The turn's tool calls were asked (``RunTools``): ``ToolsDone`` answers them (after any ``ToolsChanged``
    and a child's ``SideCostSettled``)."""
    DONE = "done"
    """Stopped (``Finished``): nothing more is taken."""


TRANSITIONS: dict[tuple[Phase, str], Phase] = {
    # (phase, what the loop does) -> the next phase; anything else is a bug and raises (``_move``)
    (Phase.NEW, "reserve"): Phase.RESERVE,  # the first turn's bound fits: reserve it
    (Phase.NEW, "count"): Phase.COUNT,  # the bound does not fit and the model can count
    (Phase.NEW, "stop"): Phase.DONE,  # no step, no money for the first turn
    (Phase.RESERVE, "granted"): Phase.CALL,  # the shared ledger granted the turn
    (Phase.RESERVE, "stop"): Phase.DONE,  # refused: cost_budget
    (Phase.COUNT, "reserve"): Phase.RESERVE,  # the count (with its margin) fits
    (Phase.COUNT, "stop"): Phase.DONE,  # no count, or the count does not fit either
    (Phase.CALL, "tools"): Phase.TOOLS,  # a reply with tool calls, within every budget
    (Phase.CALL, "reserve"): Phase.RESERVE,  # a reply cut at max tokens, continued
    (Phase.CALL, "count"): Phase.COUNT,  # the same, when the continuation's bound does not fit
    (Phase.CALL, "stop"): Phase.DONE,  # a final reply, a failure, a budget, a loop, a halt
    (Phase.TOOLS, "reserve"): Phase.RESERVE,  # the results are in: the next turn
    (Phase.TOOLS, "count"): Phase.COUNT,
    (Phase.TOOLS, "stop"): Phase.DONE,  # the next turn is past a budget, or an interrupt
    (Phase.DONE, "stop"): Phase.DONE,  # an interrupt that reached the driver while it wrote the stop
}
"""The loop's phases as one table, in the manner of h11's: a move not listed here raises."""


def _move(state: State, event: str) -> None:
    nxt = TRANSITIONS.get((state.phase, event))
    if nxt is None:
        raise ValueError(f"the loop in phase {state.phase.value!r} cannot {event!r} (no such move in loop.TRANSITIONS)")
    state.phase = nxt


@dataclass(frozen=True)
class LoopConfig:
    """Everything that decides a run, recorded whole in its ``run_start``."""

    model: str
    """The model's name, used for its price."""
    budget: Budget
    price: Price
    """The resolved price of ``model``: recorded so a replay spends the same."""
    tools: tuple[ToolSpec, ...] = ()
    manifest: tuple[dict[str, Any], ...] = ()
    """The tools as recorded: with fingerprints, read-only marks, redaction."""
    sentinel: str | None = None
    max_output_tokens: int = 4096
    loop_threshold: int | None = None
    """Stop with ``loop_detected`` when the same tool calls repeat this many turns."""
    run_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    """Caller-supplied facts to record (a start time, a session id...): never read."""
    redaction_salt: bytes | str | None = field(default=None, repr=False, compare=False)
    """Keys the hashes of redacted values (``redact.py``); never recorded."""
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
    """Values whose text form is larger are truncated in the record (recorded when not the default)."""
    record_raw: bool = False
    """Keep each reply's ``raw`` provider response in its ``model_turn`` (recorded when on)."""
    fallback_prices: dict[str, Price] = field(default_factory=dict)
    """Prices of models that may answer instead of ``model`` (a provider's fallback), by name: a
    reply is priced at the dearest of them and ``model``, whatever model it names (recorded when set)."""
    max_continuations: int = 0
    """A reply cut at max tokens (``finish_reason`` ``max_tokens`` or ``length``) with no tool
    calls is continued by up to this many more turns, each reserved like any other (recorded when on)."""
    image_tokens: int = IMAGE_TOKENS
    """At most how many input tokens one image in a tool result is billed as, by the model's vendor
    (taken from the model's ``max_image_tokens``; recorded when not the default)."""
    can_count: bool = False
    """The model counts input tokens exactly (Anthropic's count_tokens): when the bound does not fit,
    the loop asks for a count before refusing (recorded when on)."""
    shared_cap: bool = False
    """The run reserves against a shared ledger (a batch's fleet cap): a bill past a reservation stops it
    even when its own budget has no money cap (recorded when on)."""
    priced_by_name: bool = False
    """Price a reply at the model it names (files written before replies were priced at the dearest of
    the chain): only for replaying them. New runs with fallbacks record ``"pricing": "dearest"``."""
    legacy_estimate: bool = False
    """Reserve as files written before the bound did (input at characters // 4, at the model's own
    price, no overrun check): only for replaying them. New runs record ``"reservation": "bound"``."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "budget": self.budget.to_json(),
            "price": self.price.to_json(),
            "tools": list(self.manifest) if self.manifest else [t.to_json() for t in self.tools],
            "sentinel": self.sentinel,
            "max_output_tokens": self.max_output_tokens,
            "loop_threshold": self.loop_threshold,
            "run_id": self.run_id,
            "meta": self.meta,
        }
        if self.max_value_bytes != DEFAULT_MAX_VALUE_BYTES:
            out["max_value_bytes"] = self.max_value_bytes
        if self.record_raw:
            out["record_raw"] = True
        if self.max_continuations:
            out["max_continuations"] = self.max_continuations
        if self.fallback_prices:
            out["fallback_prices"] = {k: v.to_json() for k, v in sorted(self.fallback_prices.items())}
            if not self.priced_by_name:
                out["pricing"] = "dearest"
        if self.image_tokens != IMAGE_TOKENS:
            out["image_tokens"] = self.image_tokens
        if self.can_count:
            out["can_count"] = True
        if self.shared_cap:
            out["shared_cap"] = True
        if not self.legacy_estimate:
            out["reservation"] = "bound"
        return out


# The messages between the loop and its driver (inbound and outbound) are
# slotted dataclasses, not frozen ones: about a dozen are made a step, and a
# frozen dataclass costs twice as much to build (each field goes through
# object.__setattr__; measured as 14% of the loop's own instructions a step).
# They live for one exchange and are read-only by contract; the values they
# carry (events.py) stay frozen.

# --- inbound: what a driver hands back ---------------------------------------


@dataclass(slots=True)
class Reserved:
    granted: bool


@dataclass(slots=True)
class ModelReplied:
    reply: ModelReply


@dataclass(slots=True)
class ModelFailed:
    error: str
    """A description for people: never includes a key (providers scrub them)."""
    usage: Usage | None = None
    """What failed attempts may have been billed (a stream cut after it started): spent and recorded."""
    unaccounted: bool = False
    """The provider billed the call but its figures cannot be settled from (a lying usage): the loop
    charges the whole reservation."""


@dataclass(slots=True)
class ToolsDone:
    results: tuple[ToolResult, ...]
    """One result per requested call, in the order of the calls."""


@dataclass(slots=True)
class ToolsChanged:
    """The tools changed during a turn's tool calls (an MCP server's ``list_changed``).

    Fed while the loop waits for a turn's results (phase ``tools``), before
    ``ToolsDone``: after those results the loop records ``tools_changed`` and
    the next model call carries these tools, reserved at their size.
    """

    tools: tuple[ToolSpec, ...]
    manifest: tuple[dict[str, Any], ...] = ()
    """The tools as recorded (as ``run_start``'s config holds them); empty: the specs' own JSON."""


@dataclass(slots=True)
class InputCounted:
    tokens: int | None
    """The exact input tokens of the request, or None when it could not be counted."""
    error: str | None = None


@dataclass(slots=True)
class SideCostAsked:
    """Room for a cost beside the model turn, asked before it is incurred (a compaction summary, a loop check).

    Fed while the loop waits for a model call (phase ``call``: from a driver's
    ``prepare``). The loop answers with ``SideCostAnswer``; when it grants the
    room it first asks the shared ledger (``Reserve``, answered by ``Reserved``).
    A granted ask must be followed by its ``SideCostSettled`` before the next one.
    """

    purpose: str
    micros: int
    """The call's reservation: the most it can be billed (its bound)."""
    tokens: int


@dataclass(slots=True)
class SideCostSettled:
    """What a cost beside the model turn was billed: charged to the run and recorded (``side_cost``).

    Fed in phase ``call`` (settling a granted ``SideCostAsked``) or ``tools``
    (a child agent's run, which its parent reserved for itself: no ask).
    """

    purpose: str
    usage: Usage
    cost_micros: int
    reserved_micros: int | None = None
    """What the cost was held to (a child's budget; None: uncapped); an ask's own amount when one was granted."""
    reserved_tokens: int | None = None
    overrun: str | None = None
    """The cost's own run was billed past a reservation (a child stopped by ``budget_overrun``): the run stops too."""
    legacy: bool = False
    """Replay of a file written before ``side_cost`` records: its cost is charged, not recorded again."""


Inbound = Union[Reserved, ModelReplied, ModelFailed, ToolsDone, ToolsChanged, InputCounted, SideCostAsked, SideCostSettled]

# --- outbound: what the loop asks of its driver ------------------------------


@dataclass(slots=True)
class Append:
    kind: str
    payload: Any


@dataclass(slots=True)
class Reserve:
    amount_micros: int
    tokens: int


@dataclass(slots=True)
class Settle:
    reserved_micros: int
    actual_micros: int
    reserved_tokens: int
    actual_tokens: int


@dataclass(slots=True)
class CallModel:
    request: ModelRequest


@dataclass(slots=True)
class CountInput:
    request: ModelRequest


@dataclass(slots=True)
class RunTools:
    calls: tuple[ToolCall, ...]


@dataclass(slots=True)
class Finished:
    reason: str


@dataclass(slots=True)
class SideCostAnswer:
    """The loop's decision on a ``SideCostAsked``: made, or not made and why (recorded either way)."""

    granted: bool
    reason: str | None = None


Outbound = Union[Append, Reserve, Settle, CallModel, CountInput, RunTools, Finished, SideCostAnswer]


@dataclass
class State:
    config: LoopConfig
    messages: list[Message]
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    tokens: int = 0
    spent_micros: int = 0
    reserved_micros: int = 0
    reserved_tokens: int = 0
    phase: Phase = Phase.NEW
    """Where the run is (``Phase``); changed only through ``TRANSITIONS``."""
    pending: tuple[ToolCall, ...] = ()
    answer: str = ""
    stop_reason: str | None = None
    error: str | None = None
    messages_bound: int = 0
    """At most how many input tokens the messages can be billed as (``budget.message_bound``), kept incrementally."""
    framing_bound: int = 0
    """At most how many input tokens the tools and the request's framing add (``budget.tools_bound``)."""
    repeats: int = 0
    continuations: int = 0
    """Turns in a row that continue a reply cut at max tokens."""
    last_calls_print: str | None = None
    policy: Policy = field(default_factory=Policy)
    """What is redacted or truncated in the record (from the config's manifest)."""
    secrets: list[str] = field(default_factory=list)
    """The secret argument values of the pending calls: looked for in their results."""
    request: ModelRequest | None = None
    """The last request made: reused while ``messages`` is the same list (it is mutated in place)."""
    bound: int = 0
    """The input tokens the pending reservation was made for (the bound, or a count)."""
    images: int = 0
    """Images in the tool results sent so far, each bounded at ``config.image_tokens`` (never recounted down)."""
    overrun: str | None = None
    """A side cost (a side call, a child run) was billed past its reservation: the run stops before its next call."""
    side_asked: tuple[str, int, int] | None = None
    """The granted side cost not yet settled: (purpose, micros, tokens)."""
    side_waiting: bool = False
    """A side cost's reservation was sent to the shared ledger: the next ``Reserved`` answers it."""
    tools_changed: ToolsChanged | None = None
    """Tools that changed during the pending calls: taken in (and recorded) after their results."""

    @property
    def done(self) -> bool:
        return self.stop_reason is not None


def _message_bound(m: Message, image_tokens: int = IMAGE_TOKENS, legacy: bool = False) -> int:
    """At most how many input tokens ``m`` can be billed as (``budget.message_bound``); for a legacy
    config, its characters as files written before the bound counted them."""
    if legacy:
        return _legacy_chars(m)
    return message_bound(m, 0, image_tokens)


def _legacy_chars(m: Message) -> int:
    content = m.get("content", "")
    if type(content) is str:
        n = len(content)
    else:
        n = int(marker_info(content).get("chars", 0)) if is_marker(content) else len(str(content))
    for c in m.get("tool_calls", ()):
        b = canonical(c["arguments"])
        n += len(c["name"]) + len(b)
        if b'"$redacted":' in b or b'"$truncated":' in b:
            n += size_correction(c["arguments"])
    return n + 4


def start(config: LoopConfig, messages: Sequence[Message], continues: Continues | None = None) -> tuple[State, list[Outbound]]:
    """Begin a run: record its start, then ask for the first turn.

    ``continues``: the conversation the records before this run add up to
    (``conversation.Conversation``). When the messages, as recorded, begin
    with exactly it, the ``run_start`` refers to it instead of repeating it
    (format 2, ``conversation`` rule 1); otherwise every message is recorded.
    """
    msgs = [dict(m) for m in messages]
    policy = Policy.from_manifest(config.manifest, config.redaction_salt, config.max_value_bytes)
    state = State(config=config, messages=msgs, policy=policy)
    legacy = config.legacy_estimate
    state.messages_bound = sum(_message_bound(m, config.image_tokens, legacy) for m in msgs)
    state.framing_bound = _framing_bound(config)
    recorded = policy.messages_for_record(msgs)
    k = continued_prefix(recorded, continues)
    start_json: dict[str, Any]
    if k and continues is not None:
        cfg = config.to_json()
        cfg["tools"] = recorded_tools(cfg["tools"], continues)
        start_json = {"format": 2, "config": cfg, "continues": continues.to_json(), "messages": recorded[k:]}
    else:
        start_json = {"format": 1, "config": config.to_json(), "messages": recorded}
    out: list[Outbound] = [Append("run_start", start_json)]
    out += _next_turn(state)
    return state, out


def _framing_bound(config: LoopConfig) -> int:
    """At most how many input tokens the config's tools and the request's framing add."""
    if config.legacy_estimate:
        return len(canonical([t.to_json() for t in config.tools]))
    return REQUEST_ALLOWANCE + tools_bound(config.tools)


def _stop(state: State, reason: str) -> list[Outbound]:
    state.stop_reason = reason
    _move(state, "stop")
    payload: dict[str, Any] = {
        "reason": reason,
        "steps": state.steps,
        "usage": state.usage.to_json(),
        "tokens": state.tokens,
        "spent_micros": state.spent_micros,
        "answer": state.answer,
    }
    if state.error is not None:
        payload["error"] = state.error
    return [Append("stop", payload), Finished(reason)]


def _next_turn(state: State) -> list[Outbound]:
    cfg = state.config
    b = cfg.budget
    if b.max_steps is not None and state.steps >= b.max_steps:
        return _stop(state, "step_budget")
    if state.overrun is not None:
        return overrun_stop(state)
    if over_cap(state.tokens, 0, 0, b.max_tokens):  # side costs (a child's run) can pass it between turns
        return _stop(state, "token_budget")
    if cfg.legacy_estimate:
        in_tokens = (state.messages_bound + state.framing_bound) // 4
        amount = estimate_micros(in_tokens, cfg.max_output_tokens, cfg.price)
        if b.max_usd_micros is not None and over_cap(state.spent_micros, 0, amount, b.max_usd_micros):
            state.error = f"the next call needs a reservation of {amount} micro-USD; {b.max_usd_micros - state.spent_micros} are left"
            return _stop(state, "cost_budget")
        return _reserve(state, in_tokens, amount)
    in_tokens = state.messages_bound + state.framing_bound + state.images * cfg.image_tokens
    price = _dearest(cfg)
    amount = reservation_micros(in_tokens, cfg.max_output_tokens, price)
    if b.max_usd_micros is not None and over_cap(state.spent_micros, 0, amount, b.max_usd_micros):
        if cfg.can_count:
            state.bound = in_tokens
            _move(state, "count")
            return [CountInput(_request(state))]
        state.error = _refusal(cfg, in_tokens, amount, b.max_usd_micros - state.spent_micros, price)
        return _stop(state, "cost_budget")
    return _reserve(state, in_tokens, amount)


def _reserve(state: State, in_tokens: int, amount: int) -> list[Outbound]:
    tokens = in_tokens + state.config.max_output_tokens
    state.bound = in_tokens
    state.reserved_micros = amount
    state.reserved_tokens = tokens
    _move(state, "reserve")
    return [Reserve(amount, tokens)]


def _refusal(cfg: LoopConfig, in_tokens: int, amount: int, left: int, price: Price, counted: int | None = None) -> str:
    """Why the next call is not made, with the bound it would need."""
    how = (
        f"an exact count of {counted}, plus 5% and {COUNT_SLACK}" if counted is not None else "the request's UTF-8 bytes plus allowances"
    )
    return (
        f"the next call needs a reservation of {amount} micro-USD ({format_usd(amount)}), the most it can be billed: "
        f"at most {in_tokens} input tokens "
        f"(by {how}) at {input_rate(price)} micro-USD per million, and max_tokens {cfg.max_output_tokens} at "
        f"{price.output}; {left} micro-USD are left"
    )


COUNT_SLACK = 64
"""Tokens added to an exact count, with 5%: Anthropic documents count_tokens as an estimate that may differ slightly."""


def _with_margin(counted: int) -> int:
    return counted + -(-counted // 20) + COUNT_SLACK


def _on_counted(state: State, event: InputCounted) -> list[Outbound]:
    cfg = state.config
    b = cfg.budget
    price = _dearest(cfg)
    bound = state.bound
    left = (b.max_usd_micros - state.spent_micros) if b.max_usd_micros is not None else 0
    payload: dict[str, Any] = {"step": state.steps + 1, "bound": bound}
    if event.tokens is None or event.tokens < 0:
        payload["error"] = event.error or "the model could not count"
        out: list[Outbound] = [Append("token_count", payload)]
        amount = reservation_micros(bound, cfg.max_output_tokens, price)
        state.error = _refusal(cfg, bound, amount, left, price)
        return out + _stop(state, "cost_budget")
    tokens = _with_margin(event.tokens)
    amount = reservation_micros(tokens, cfg.max_output_tokens, price)
    payload.update({"counted": event.tokens, "reserved_tokens": tokens, "needed_micros": amount, "left_micros": left})
    out = [Append("token_count", payload)]
    if over_cap(state.spent_micros, 0, amount, b.max_usd_micros):
        state.error = _refusal(cfg, tokens, amount, left, price, counted=event.tokens)
        return out + _stop(state, "cost_budget")
    return out + _reserve(state, tokens, amount)


def _calls_print(calls: Sequence[dict[str, Any]]) -> str:
    """Over the calls as recorded, so a secret argument never reaches the print."""
    h = hashlib.sha256()
    for c in calls:
        h.update(c["name"].encode() + b"\0")
        try:
            h.update(canonical(c["arguments"]))
        except ValueError:
            h.update(repr(c["arguments"]).encode())
        h.update(b"\1")
    return h.hexdigest()


def step(state: State, event: Inbound) -> tuple[State, list[Outbound]]:
    """Advance the run by one inbound event.

    Returns:
        The state (the same object, advanced) and what the driver must do next.
    Raises:
        ValueError: the event does not answer what the loop asked for (a
            driver bug, not the model's mistake).
    """
    handler = _INBOUND.get((state.phase, type(event)))
    if handler is None:
        raise _cannot_take(state, event)
    return state, handler(state, event)


def _cannot_take(state: State, event: object) -> ValueError:
    return ValueError(f"the loop is in phase {state.phase.value!r} and cannot take {type(event).__name__}")


def _on_model_replied(state: State, event: ModelReplied) -> list[Outbound]:
    return _on_reply(state, event.reply)


def _on_tools_changed(state: State, event: ToolsChanged) -> list[Outbound]:
    state.tools_changed = event  # taken in after the turn's results
    return []


def _on_side_answer(state: State, event: Reserved) -> list[Outbound]:
    """The shared ledger's answer to a side cost's reservation (the only ``Reserved`` phase ``call`` takes)."""
    if not state.side_waiting:
        raise _cannot_take(state, event)
    return _on_side_reserved(state, event)


def _on_side_ask(state: State, event: SideCostAsked) -> list[Outbound]:
    if state.side_asked is not None or state.side_waiting:  # one side cost at a time
        raise _cannot_take(state, event)
    return _on_side_asked(state, event)


def _on_side_bill(state: State, event: SideCostSettled) -> list[Outbound]:
    if state.side_waiting:
        raise _cannot_take(state, event)
    return _on_side_settled(state, event)




def side_room(state: State) -> tuple[int | None, int | None]:
    """Rule 6: what a cost beside the model turn may use, (micro-USD, tokens): the caps less what the run
    has spent and the turn it holds; None where there is no cap. A parent's children are carved out of it."""
    b = state.config.budget
    money = None if b.max_usd_micros is None else b.max_usd_micros - state.spent_micros - state.reserved_micros
    tokens = None if b.max_tokens is None else b.max_tokens - state.tokens - state.reserved_tokens
    return money, tokens


def _on_side_asked(state: State, event: SideCostAsked) -> list[Outbound]:
    """Rule 6: a side call's bound must fit ``side_room``."""
    money, tokens = side_room(state)
    why: str | None = None
    if event.micros < 0 or event.tokens < 0:
        why = f"a side cost cannot reserve a negative amount ({event.micros} micro-USD, {event.tokens} tokens)"
    elif money is not None and event.micros > money:
        why = f"the budget has no room: needs a reservation of {event.micros} micro-USD (its bound); {money} are left"
    elif tokens is not None and event.tokens > tokens:
        why = f"the budget has no room: needs {event.tokens} tokens; {tokens} are left"
    if why is not None:
        return _side_refused(state, event.purpose, event.micros, event.tokens, "budget", why)
    state.side_asked = (event.purpose, event.micros, event.tokens)
    state.side_waiting = True
    return [Reserve(event.micros, event.tokens)]


def _on_side_reserved(state: State, event: Reserved) -> list[Outbound]:
    state.side_waiting = False
    asked = state.side_asked
    assert asked is not None
    if not event.granted:
        state.side_asked = None
        why = f"the shared ledger refused a reservation of {asked[1]} micro-USD"
        return _side_refused(state, asked[0], asked[1], asked[2], "ledger", why)
    return [SideCostAnswer(True)]


def _side_refused(state: State, purpose: str, micros: int, tokens: int, by: str, why: str) -> list[Outbound]:
    payload = {"step": state.steps, "purpose": purpose, "needed_micros": micros, "needed_tokens": tokens, "refused": why, "by": by}
    return [Append("side_cost", payload), SideCostAnswer(False, why)]


def _on_side_settled(state: State, event: SideCostSettled) -> list[Outbound]:
    """Rule 6: the bill is the run's; past its reservation the run stops before its next call."""
    cfg = state.config
    asked = state.side_asked
    state.side_asked = None
    usage, cost = event.usage, event.cost_micros
    bad = usage_problem(usage) or (None if type(cost) is int and 0 <= cost <= MAX_MICROS else f"a cost of {cost!r} micro-USD")
    if bad is not None:  # never a negative or unbounded spend: the most it was allowed, and the run stops
        held = asked[1] if asked is not None else event.reserved_micros
        usage, cost = Usage(), held if held is not None else 0
        if event.overrun is None:
            event = replace(event, overrun=f"a side call ({event.purpose}) reported a bill that cannot be settled from: {bad}")
    state.usage = state.usage + usage
    state.tokens += usage.total
    state.spent_micros += cost
    if event.legacy:  # its record is the older file's own (a ``call`` inside a compaction or loop check)
        if event.overrun is not None:
            state.overrun = event.overrun
        return []
    out: list[Outbound] = []
    reserved, reserved_tokens = event.reserved_micros, event.reserved_tokens
    if asked is not None:
        reserved, reserved_tokens = asked[1], asked[2]
        out.append(Settle(asked[1], cost, asked[2], usage.total))
    over = event.overrun
    if over is None and reserved is not None and cost > reserved and (cfg.budget.max_usd_micros is not None or cfg.shared_cap):
        over = f"a side call ({event.purpose}) was billed {cost} micro-USD, past its reservation of {reserved}"
    payload: dict[str, Any] = {
        "step": state.steps,
        "purpose": event.purpose,
        "reserved_micros": reserved,
        "reserved_tokens": reserved_tokens,
        "usage": usage.to_json(),
        "cost_micros": cost,
        "spent_micros": state.spent_micros,
        "tokens": state.tokens,
    }
    if over is not None:
        payload["overrun"] = over
        state.overrun = over
    out.append(Append("side_cost", payload))
    return out


def _on_reserved(state: State, event: Reserved) -> list[Outbound]:
    if not event.granted:
        state.error = f"the shared ledger refused a reservation of {state.reserved_micros} micro-USD"
        state.reserved_micros = state.reserved_tokens = 0
        return _stop(state, "cost_budget")
    _move(state, "granted")
    return [CallModel(_request(state))]


def _request(state: State) -> ModelRequest:
    req = state.request  # the same every turn while the messages list is: built once
    if req is None or req.messages is not state.messages:
        req = state.request = ModelRequest(state.messages, state.config.tools, state.config.max_output_tokens)
    return req


def _price_of(cfg: LoopConfig, answered: str | None) -> Price:
    """A reply's price: the dearest of the models the request could have reached (the model and its
    fallbacks), whatever name the reply gives; a reply names its model, but the name is the provider's
    word, not a fact the loop can check. Files written before this priced a reply at the model it
    named (``priced_by_name``)."""
    if not cfg.fallback_prices:
        return cfg.price
    if not cfg.priced_by_name:
        return _dearest(cfg)
    if not answered or answered == cfg.model:
        return cfg.price
    best, price = -1, cfg.price
    for name, p in [(cfg.model, cfg.price), *cfg.fallback_prices.items()]:
        if (answered == name or answered.startswith(name + "-")) and len(name) > best:
            best, price = len(name), p
    return price


def _dearest(cfg: LoopConfig) -> Price:
    """The highest price, field by field, of the model and its fallbacks (any of them may have answered)."""
    if not cfg.fallback_prices:  # the model alone: its own price (the common case, once a turn)
        return cfg.price
    return dearest([cfg.price, *cfg.fallback_prices.values()])


def _call_bound(state: State, price: Price) -> CallBound:
    """What the pending call was reserved for: the input bound, the output asked, at ``price``."""
    return CallBound(state.bound, state.config.max_output_tokens, price)


def _on_failed(state: State, event: ModelFailed) -> list[Outbound]:
    """The call failed: what its attempts were billed is spent (rule 3), believed up to the call's
    reservation and never past it (``budget.capped_bill``). A bill whose figures cannot be read
    (``unaccounted``: more than the request allowed) is charged the whole reservation, as an overrun."""
    if event.unaccounted and not state.config.legacy_estimate:
        return _charged_reservation(state, event.error)
    state.error = event.error
    payload: dict[str, Any] = {"step": state.steps + 1, "error": event.error}
    cost = tokens = 0
    usage = event.usage if event.usage is not None and usage_problem(event.usage) is None else None
    unbelieved = event.unaccounted or usage is not event.usage
    if usage is not None and usage.total:
        if state.config.legacy_estimate:
            cost, tokens = cost_micros(usage, _dearest(state.config)), usage.total
        else:  # a failed call's figures are at most its reservation (an estimate of its own input is no bill)
            b = capped_bill(_call_bound(state, _dearest(state.config)), usage)
            cost, tokens, usage = b.cost_micros, b.usage.total, b.usage
        state.usage = state.usage + usage
        payload["usage"] = usage.to_json()
    if unbelieved:
        cost, tokens = max(cost, state.reserved_micros), max(tokens, state.reserved_tokens)
        payload["billed_at_reservation"] = True
    if cost or tokens:
        state.tokens += tokens
        state.spent_micros += cost
        payload["cost_micros"] = cost
    out: list[Outbound] = [
        Settle(state.reserved_micros, cost, state.reserved_tokens, tokens),
        Append("model_error", payload),
    ]
    state.reserved_micros = state.reserved_tokens = 0
    return out + _stop(state, "model_error")


def _unbelievable(state: State, reply: ModelReply) -> str | None:
    """Why the reply's figures cannot be settled from, or None: never a negative or unbounded spend, and under
    a cap never one the request cannot have been billed (``budget.bill``: the call is charged its reservation)."""
    cfg = state.config
    if reply.usage is None or cfg.legacy_estimate:
        return None
    capped = cfg.budget.max_usd_micros is not None or cfg.shared_cap
    if not capped and usage_problem(reply.usage) is None:
        return None
    checked = bill(_call_bound(state, _price_of(cfg, reply.model)), reply.usage, what="the model")
    return f"UsageError: {checked.overrun}" if checked.at_reservation else None


def _charged_reservation(state: State, why: str) -> list[Outbound]:
    """A reply (or failure) with figures no provider can have billed: the call is charged its whole
    reservation, recorded as an ``overrun``, and the run stops with ``budget_overrun``."""
    reserved, reserved_tokens = state.reserved_micros, state.reserved_tokens
    state.spent_micros += reserved
    state.tokens += reserved_tokens
    state.error = why
    payload = {"step": state.steps + 1, "reserved_micros": reserved, "cost_micros": reserved,
               "billed_at_reservation": True, "error": why}
    out: list[Outbound] = [Settle(reserved, reserved, reserved_tokens, reserved_tokens), Append("overrun", payload)]
    state.reserved_micros = state.reserved_tokens = 0
    return out + _stop(state, "budget_overrun")


def _on_reply(state: State, reply: ModelReply) -> list[Outbound]:
    cfg = state.config
    unbelievable = _unbelievable(state, reply)
    if unbelievable is not None:
        return _charged_reservation(state, unbelievable)
    estimated = reply.usage is None
    msg: Message = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        msg["tool_calls"] = [c.to_json() for c in reply.tool_calls]
    if reply.reasoning:  # sent back as received: the vendor checks the blocks' signatures
        msg["reasoning"] = [dict(b) for b in reply.reasoning]
    legacy = cfg.legacy_estimate
    msg_bound = _message_bound(msg, cfg.image_tokens, legacy)
    if reply.usage is None and legacy:
        usage = Usage(input_tokens=(state.messages_bound + state.framing_bound) // 4, output_tokens=(msg_bound - 4) // 4)
    elif reply.usage is None:  # no figures: the reservation's bound for input, the reply's bytes (at most max_tokens) for output
        usage = Usage(input_tokens=state.bound, output_tokens=min(cfg.max_output_tokens, msg_bound))
    else:
        usage = reply.usage
    cost = cost_micros(usage, _price_of(cfg, reply.model))
    reserved = state.reserved_micros
    state.steps += 1
    state.usage = state.usage + usage
    state.tokens += usage.total
    state.spent_micros += cost
    state.answer = state.answer + reply.text if state.continuations else reply.text
    calls_json, state.secrets = state.policy.calls_for_record(reply.tool_calls)
    reply_json = reply.to_json(calls_json)
    turn: dict[str, Any] = {"step": state.steps, "reply": reply_json, "usage_estimated": estimated}
    if cfg.record_raw and reply.raw is not None:
        turn["raw"] = state.policy.raw_for_record(reply.raw, [c.name for c in reply.tool_calls], state.secrets)
    out: list[Outbound] = [
        Append("model_turn", turn),
        Settle(state.reserved_micros, cost, state.reserved_tokens, usage.total),
        Append(
            "budget",
            {
                "step": state.steps,
                "reserved_micros": state.reserved_micros,
                "cost_micros": cost,
                "spent_micros": state.spent_micros,
                "tokens": state.tokens,
            },
        ),
    ]
    state.reserved_micros = state.reserved_tokens = 0
    state.messages.append(msg)
    state.messages_bound += msg_bound

    b = cfg.budget
    if cost > reserved and not legacy and (b.max_usd_micros is not None or cfg.shared_cap):
        out.append(Append("overrun", {"step": state.steps, "reserved_micros": reserved, "cost_micros": cost, "usage": usage.to_json()}))
        state.error = (
            f"the provider billed {cost} micro-USD for a call reserved at {reserved} (step {state.steps}; "
            f"usage {usage.input_tokens} in, {usage.cache_write_tokens} cache write, {usage.cache_read_tokens} cache read, "
            f"{usage.output_tokens} out): past the bound, so the cap can no longer be promised"
        )
        return out + _stop(state, "budget_overrun")
    if cfg.sentinel and cfg.sentinel in reply.text:
        return out + _stop(state, "sentinel")
    if not reply.tool_calls:
        if reply.finish_reason in ("max_tokens", "length") and state.continuations < cfg.max_continuations:
            return out + _continue(state)
        return out + _stop(state, "no_tool_calls")
    state.continuations = 0
    past = _past_caps(state)
    if past is not None:
        return out + _stop(state, past)
    if cfg.loop_threshold:
        fp = _calls_print(calls_json)
        state.repeats = state.repeats + 1 if fp == state.last_calls_print else 1
        state.last_calls_print = fp
        if state.repeats >= cfg.loop_threshold:
            out.append(Append("loop_detected", {"step": state.steps, "method": "heuristic", "fingerprint": fp, "repeats": state.repeats}))
            return out + _stop(state, "loop_detected")
    state.pending = reply.tool_calls
    _move(state, "tools")
    return out + [RunTools(reply.tool_calls)]


def _past_caps(state: State) -> str | None:
    """The stop a settled turn's spend calls for: ``token_budget`` or ``cost_budget`` (a cap already
    passed), or None."""
    b = state.config.budget
    if over_cap(state.tokens, 0, 0, b.max_tokens):
        return "token_budget"
    if over_cap(state.spent_micros, 0, 0, b.max_usd_micros):
        return "cost_budget"
    return None


def _continue(state: State) -> list[Outbound]:
    """The reply was cut at max tokens: the next turn continues it (the adapters send it as a prefill)."""
    past = _past_caps(state)
    if past is not None:
        return _stop(state, past)
    state.continuations += 1
    return [Append("continuation", {"step": state.steps, "count": state.continuations})] + _next_turn(state)


def tool_message(result: ToolResult) -> Message:
    """What the model is shown of a result: its content, or the runtime's error text."""
    if result.ok:
        c = result.content
        text = c if isinstance(c, str) else stand_in(marker_info(c)) if is_marker(c) else canonical(c).decode()
    else:
        # a replayed redacted error is its marker (a dict), whatever the field's type says: read untyped,
        # so the compiled build (which checks declared types) takes it as the source does
        e: Any = cast(Any, result).error
        text = f"ERROR: {stand_in(marker_info(e)) if is_marker(e) else e}"
    return {"role": "tool", "tool_call_id": result.call_id, "name": result.name, "ok": result.ok, "content": text}


def _on_tools(state: State, event: ToolsDone) -> list[Outbound]:
    calls = state.pending
    results = event.results
    if len(results) != len(calls) or [r.call_id for r in results] != [c.id for c in calls]:
        raise ValueError("ToolsDone must hold one result per call, in the order of the calls")
    out: list[Outbound] = []
    policy, secrets = state.policy, state.secrets
    for r in results:
        out.append(Append("tool_result", policy.result_for_record({"step": state.steps, **r.to_json()}, secrets)))
        msg = tool_message(r)
        state.messages.append(msg)
        state.messages_bound += _message_bound(msg, state.config.image_tokens, state.config.legacy_estimate)
        if r.ok:
            state.images += count_images(r.content)
    state.pending = ()
    state.secrets = []
    if state.tools_changed is not None:
        out.append(_take_tools(state, state.tools_changed))
        state.tools_changed = None
    return out + _next_turn(state)


def _take_tools(state: State, event: ToolsChanged) -> Append:
    """The next requests carry the new tools, reserved at their size and redacted by their manifest."""
    cfg = replace(state.config, tools=tuple(event.tools), manifest=tuple(event.manifest))
    state.config = cfg
    state.framing_bound = _framing_bound(cfg)
    state.policy = Policy.from_manifest(cfg.manifest, cfg.redaction_salt, cfg.max_value_bytes)
    state.request = None  # built again with the new tools
    tools = list(cfg.manifest) if cfg.manifest else [t.to_json() for t in cfg.tools]
    return Append("tools_changed", {"step": state.steps, "tools": tools})


def shrink_bound(state: State, saved: int) -> None:
    """A driver's ``prepare`` took ``saved`` UTF-8 bytes out of ``state.messages`` in place (masking old
    tool output): the messages' bound falls by as much (the bound counts bytes). O(1), unlike
    ``recount_bound``; the one way a driver lowers the figure the next reservation is made from."""
    if type(saved) is not int or saved < 0:
        raise ValueError(f"a driver can only take a whole, non-negative number of bytes out of the messages, not {saved!r}")
    state.messages_bound -= saved


def recount_bound(state: State) -> None:
    """Recompute ``state.messages_bound`` after a driver changed ``state.messages`` (compaction, masking)."""
    cfg = state.config
    state.messages_bound = sum(_message_bound(m, cfg.image_tokens, cfg.legacy_estimate) for m in state.messages)


def after_prepare(state: State, reason: str | None) -> list[Outbound] | None:
    """After a driver's ``prepare``: the stop it asked for, the stop a side cost it settled made
    necessary (rule 6), or None: make the call."""
    if reason is not None:
        return halt(state, reason)
    if state.overrun is not None:
        return overrun_stop(state)
    return None


def overrun_stop(state: State) -> list[Outbound]:
    """Stop the run because a side call or a child was billed past its reservation (``state.overrun``)."""
    msg = state.overrun or "a call was billed past its reservation"
    return [Append("overrun", {"step": state.steps, "error": msg})] + halt(state, "budget_overrun", msg)


def halt(state: State, reason: str, error: str | None = None) -> list[Outbound]:
    """Stop the run now with ``reason``: for checks a driver makes between turns (a model's loop check)."""
    if error is not None:
        state.error = error
    out: list[Outbound] = _release_side(state)
    if state.reserved_micros or state.reserved_tokens:
        out.append(Settle(state.reserved_micros, 0, state.reserved_tokens, 0))
        state.reserved_micros = state.reserved_tokens = 0
    return out + _stop(state, reason)


def interrupt(state: State, in_call: bool = False) -> list[Outbound]:
    """Stop the run now with ``interrupted`` (Ctrl+C, Esc or a stop request).

    ``in_call``: the interrupt came while the model call was being made (its request sent, its reply
    streaming). The provider bills what it read and wrote before the connection closed, and no
    figures come back: the call is charged its whole reservation (at least its input, at most what it
    was allowed), recorded in a ``model_error`` marked ``interrupted``, never 0.
    """
    out: list[Outbound] = _release_side(state)
    if in_call and state.phase is Phase.CALL and (state.reserved_micros or state.reserved_tokens):
        reserved, reserved_tokens = state.reserved_micros, state.reserved_tokens
        state.spent_micros += reserved
        state.tokens += reserved_tokens
        payload = {"step": state.steps + 1, "error": "interrupted while the model was answering: charged the call's reservation, "
                   "the most the provider can bill for what it read and wrote", "interrupted": True,
                   "cost_micros": reserved, "billed_at_reservation": True}
        out += [Settle(reserved, reserved, reserved_tokens, reserved_tokens), Append("model_error", payload)]
        state.reserved_micros = state.reserved_tokens = 0
    if state.reserved_micros or state.reserved_tokens:
        out.append(Settle(state.reserved_micros, 0, state.reserved_tokens, 0))
        state.reserved_micros = state.reserved_tokens = 0
    return out + _stop(state, "interrupted")


def _release_side(state: State) -> list[Outbound]:
    """A granted side cost that will never be settled (the run stops first): its reservation is freed."""
    asked = state.side_asked
    state.side_asked = None
    state.side_waiting = False
    return [Settle(asked[1], 0, asked[2], 0)] if asked is not None else []


_INBOUND: dict[tuple[Phase, type], Callable[[State, Any], list[Outbound]]] = {
    # (phase, inbound event) -> its handler: what each phase takes; anything else raises (``step``)
    (Phase.RESERVE, Reserved): _on_reserved,
    (Phase.COUNT, InputCounted): _on_counted,
    (Phase.CALL, ModelReplied): _on_model_replied,
    (Phase.CALL, ModelFailed): _on_failed,
    (Phase.CALL, Reserved): _on_side_answer,
    (Phase.CALL, SideCostAsked): _on_side_ask,
    (Phase.CALL, SideCostSettled): _on_side_bill,
    (Phase.TOOLS, ToolsDone): _on_tools,
    (Phase.TOOLS, ToolsChanged): _on_tools_changed,
    (Phase.TOOLS, SideCostSettled): _on_side_bill,
}
