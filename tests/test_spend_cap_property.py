"""The spend cap is a guarantee: an adversarial provider billing up to the documented bound never passes it.

The provider (a real ``AnthropicModel`` over an in-process ``httpx.MockTransport``)
bills every attempt a random usage up to the bound ``docs/budget.md`` documents,
and sometimes exactly at it: input tokens up to the request's UTF-8 bytes plus
the stated allowances, spread over plain input, cache writes and cache reads,
and output up to the attempt's ``max_tokens``. ``documented_bound`` below is
written from the documentation, not imported from ``budget.py``. Its replies
are random scripts: tool calls whose outputs mix English, code, Chinese,
emoji and base64; replies cut at max tokens (continued by the loop); 500s
and streams cut after they were billed (retried, then a dearer fallback);
sub-agents, one at a time and in parallel, up to ten in one reply. The settled
spend never passes the cap for a run, a session, a parent with its children,
and a fleet sharing one ledger; and no call is ever billed past its
reservation. A lying provider (negative, fractional, huge or missing counts,
a cheaper model's name) never lowers the settled spend below what it really
billed. The negative control reserves as before the bound (characters / 4)
and sees the cap passed.
"""

from __future__ import annotations

import base64
import json
import os
import random
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop.agent.context.side_calls import Answer, LoopAccount, metered
from agentloop.budget import Budget, CallBound, LocalLedger, Price, PriceTable, cost_micros
from agentloop.events import ModelRequest, Usage
from agentloop.providers.anthropic import AnthropicModel
from agentloop.providers.base import RetryPolicy, Target
from agentloop.run import RunResult, make_config, run
from agentloop.tools import Registry, tool

PRICES = PriceTable({
    "claude-haiku-4-5": Price(1_000_000, 5_000_000, 100_000, 1_250_000),
    "claude-sonnet-4-5": Price(3_000_000, 15_000_000, 300_000, 3_750_000),
    "claude-opus-4-1": Price(15_000_000, 75_000_000, 1_500_000, 18_750_000),
})

# --- the documented bound (docs/budget.md), written independently of budget.py ---


def _b(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def documented_bound(req: ModelRequest) -> int:
    n = 16  # once a request
    if req.tools:
        n += 600 + sum(_b(_canon({"name": t.name, "description": t.description, "parameters": t.parameters})) + 32 for t in req.tools)
    for m in req.messages:
        c = m.get("content", "")
        n += _b(c) if isinstance(c, str) else _b(_canon(c))
        calls = m.get("tool_calls", ())
        for call in calls:
            n += _b(call["name"]) + _b(call["id"]) + _b(_canon(call["arguments"]))
        for k in ("tool_call_id", "name"):
            if isinstance(m.get(k), str):
                n += _b(m[k])
        n += 16 + 16 * (len(calls) + (1 if m.get("role") == "tool" else 0))
    return n


# --- tool output that tokenizes densely ---


def mixed_text(kind: str, n: int, seed: int) -> str:
    r = random.Random(seed)
    if kind == "english":
        words = ["the", "budget", "holds", "before", "spending", "reservation", "of", "a", "call"]
        return " ".join(r.choice(words) for _ in range(n))
    if kind == "code":
        return "".join(f"def f{i}(x):\n    return x * {r.randint(0, 99)}  # {{}}[]\n" for i in range(max(1, n // 8)))
    if kind == "chinese":
        return "".join(chr(r.randint(0x4E00, 0x9FFF)) for _ in range(n))
    if kind == "emoji":
        return "".join(chr(r.randint(0x1F300, 0x1F64F)) for _ in range(n))
    return base64.b64encode(r.randbytes(n)).decode()


KINDS = ("english", "code", "chinese", "emoji", "base64")


@tool(read_only=True)
def emit(kind: str, n: int, seed: int) -> str:
    """Produce text of a kind."""
    return mixed_text(kind, n, seed)


# --- the adversary --------------------------------------------------------------


class Adversary:
    """Bills every attempt up to the documented bound; answers with random scripts; injects faults."""

    def __init__(self, seed: int, exact: float, faults: float, spawn: float, cut: float, many: bool = False, lie: float = 0.0,
                 children: int | None = None, interrupt: float = 0.0, background: float = 0.0):
        self.background = background
        """How often an Agent call asks to run in the background."""
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.exact, self.faults, self.spawn, self.cut = exact, faults, spawn, cut
        self.many = many
        """Up to ten children in one reply, of a read-only type or not (all run together)."""
        self.children = children
        """Exactly this many children in every reply that starts any."""
        self.lie = lie
        """How often a reply's usage lies (a count negative, fractional, huge or missing) and names the cheapest model."""
        self.local = threading.local()
        self.billed_past_bound = 0
        self.true_micros = 0
        """What the replies that arrived whole really cost, at the price of the model that was called."""
        self.lies = 0
        self.interrupt = interrupt
        """How often the person presses Esc while the model answers (after the provider began billing)."""
        self.interrupted = 0

    def pick(self) -> random.Random:
        with self.lock:
            return random.Random(self.rng.random())

    def usage(self, r: random.Random, bound: int, max_tokens: int) -> tuple[dict[str, int], int]:
        at_bound = r.random() < self.exact
        total_in = bound if at_bound else r.randint(1, bound)
        write = total_in if at_bound else r.randint(0, total_in)
        read = r.randint(0, total_in - write)
        out = max_tokens if at_bound else r.randint(1, max(1, max_tokens))
        return {"input_tokens": total_in - write - read, "cache_creation_input_tokens": write, "cache_read_input_tokens": read}, out

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        neutral: ModelRequest = self.local.request
        bound = documented_bound(neutral)
        r = self.pick()
        max_tokens = int(body["max_tokens"])
        u_in, out = self.usage(r, bound, max_tokens)
        if self.interrupt and r.random() < self.interrupt:
            with self.lock:
                self.interrupted += 1
                self.true_micros += cost_micros(Usage(u_in["input_tokens"], 0, u_in["cache_read_input_tokens"],
                                                      u_in["cache_creation_input_tokens"]), PRICES.resolve(body["model"]))
            raise KeyboardInterrupt  # Esc: the request was read (and billed), the reply never arrives
        roll = r.random()
        if roll < self.faults / 2:
            return httpx.Response(500, json={"type": "error", "error": {"type": "api_error", "message": "boom"}})
        events = [("message_start", {"type": "message_start", "message": {"model": body["model"], "usage": {**u_in, "output_tokens": 1}}})]
        if roll < self.faults:  # billed, then cut
            events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "par"}}))
            return _sse(events)
        names = {t["name"] for t in body.get("tools", [])}
        choice = r.random()
        stop = "tool_use"
        if "Agent" in names and choice < self.spawn:
            k = 1 if r.random() < 0.5 else 2  # one child, or two in parallel
            kind = "Explore"
            if self.many:
                k, kind = r.randint(2, 10), r.choice(["Explore", "general-purpose"])
            if self.children is not None:
                k, kind = self.children, r.choice(["Explore", "general-purpose"])
            calls = [("Agent", {"description": "look", "prompt": f"task {r.randint(0, 9)}", "subagent_type": kind,
                                **({"run_in_background": True} if r.random() < self.background else {})}) for _ in range(k)]
        elif choice < 0.75:
            calls = [("emit", {"kind": r.choice(KINDS), "n": r.randint(1, 400), "seed": r.randint(0, 10**6)}) for _ in range(r.randint(1, 2))]
        else:
            calls = []
            stop = "max_tokens" if r.random() < self.cut else "end_turn"
        i = 0
        if not calls or r.random() < 0.3:
            text = mixed_text(r.choice(KINDS), r.randint(1, 30), r.randint(0, 99))
            events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
            i = 1
        for name, args in calls:
            cid = f"toolu_{r.randint(0, 10**12):012d}"
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
            i += 1
        with self.lock:
            self.true_micros += cost_micros(Usage(u_in["input_tokens"], out, u_in["cache_read_input_tokens"],
                                                  u_in["cache_creation_input_tokens"]), PRICES.resolve(body["model"]))
        told: Any = out
        if r.random() < self.lie:
            told = self._lie(r, events[0][1]["message"])
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": told}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return _sse(events)

    def _lie(self, r: random.Random, start: dict[str, Any]) -> Any:
        """Make this reply lie: the cheapest model's name, and a count that is negative, fractional, huge or missing."""
        with self.lock:
            self.lies += 1
        start["model"] = "claude-haiku-4-5"
        told = r.choice([-1, -10**6, 1.5, 1e30, 10**18, "12", None])
        # a missing cache count is a provider without caching; a missing input or output count is a lie
        where = r.choice(["input_tokens", "output_tokens"] + ([] if told is None else ["cache_creation_input_tokens"]))
        if where == "output_tokens":
            return told
        if told is None:
            start["usage"].pop(where)
        else:
            start["usage"][where] = told
        return start["usage"].get("output_tokens", 1)


def _sse(events: list[tuple[str, dict[str, Any]]]) -> httpx.Response:
    data = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)


class _Model(AnthropicModel):
    counts_tokens = False  # the exact count path is tested in test_providers_count.py

    def __init__(self, adv: Adversary, name: str, **kw: Any):
        super().__init__(Target("anthropic", name, "http://adversary.invalid", "k"), transport=httpx.MockTransport(adv.handle),
                         policy=RetryPolicy(max_attempts=2, sleep=lambda s: None, rand=lambda: 0.0), **kw)
        self.adv = adv
        self.price = PRICES.resolve(name)
        self.max_continuations = 2

    def complete(self, request: ModelRequest) -> Any:
        self.adv.local.request = request  # what the adversary bills against: the neutral request the loop sent
        return super().complete(request)


def open_adversary(adv: Adversary, fallback: bool, name: str = "claude-haiku-4-5") -> _Model:
    fb = _Model(adv, "claude-sonnet-4-5") if fallback else None
    return _Model(adv, name, fallback=fb)


def check_turns(results: Sequence[RunResult], lies: bool = False) -> None:
    """No call was billed past its reservation; with ``lies``, a reply whose figures were not believed (charged
    its reservation, as an overrun) is the one overrun allowed."""
    for r in results:
        assert r.stop_reason != "budget_overrun" or (lies and "cannot" in (r.error or "")), r.error


# --- the properties ------------------------------------------------------------

knobs = dict(
    seed=st.integers(0, 2**32),
    cap=st.integers(2_000, 200_000),
    exact=st.sampled_from([0.0, 0.3, 1.0]),
    faults=st.sampled_from([0.0, 0.2, 0.5]),
    fallback=st.booleans(),
    max_out=st.integers(1, 600),
)
SETTINGS = settings(max_examples=int(os.environ.get("AGENTLOOP_PROPERTY_EXAMPLES", "25")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _prompt() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You emit text. " + mixed_text("chinese", 20, 1)}, {"role": "user", "content": "go 🚀"}]


@SETTINGS
@given(**knobs)
def test_a_run_never_settles_past_its_cap(seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int) -> None:
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.5)
    r = run(open_adversary(adv, fallback), [emit], _prompt(), Budget(max_steps=12, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out)
    check_turns([r])
    assert r.spent_micros <= cap


@SETTINGS
@given(**knobs)
def test_a_session_of_prompts_never_settles_past_its_cap(seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int) -> None:
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.3)
    model = open_adversary(adv, fallback)
    spent, msgs, results = 0, _prompt(), []
    for k in range(4):  # as the terminal agent does: each prompt's budget is what the session has left
        r = run(model, [emit], [*msgs, {"role": "user", "content": f"again {k}"}], Budget(max_steps=6, max_usd_micros=cap - spent),
                prices=PRICES, max_output_tokens=max_out)
        results.append(r)
        spent += r.spent_micros
        msgs = list(r.messages)
    check_turns(results)
    assert spent <= cap


@SETTINGS
@given(**knobs)
def test_a_parent_with_its_children_never_settles_past_its_cap(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int
) -> None:
    from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor

    tmp = tmp_path_factory.mktemp("children")
    adv = Adversary(seed, exact, faults, spawn=0.5, cut=0.3)
    model = open_adversary(adv, fallback)
    runner = SubagentRunner(model=model, make_tools=lambda cwd: Registry([emit]), cwd=str(tmp), transcript_dir=str(tmp / "t"),
                            prices=PRICES, model_name="claude-haiku-4-5", max_steps=5)
    registry = Registry([emit, runner.tool()])

    def prepare(state: Any, record: Any) -> None:
        runner.parent.bind(state, record)
        return None

    r = run(model, registry, _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES, max_output_tokens=max_out,
            prepare=prepare, executor=parallel_executor(lambda calls: [registry.invoke(c) for c in calls], runner))
    check_turns([r])
    assert all(c["stop_reason"] != "budget_overrun" for c in runner.children)
    assert r.spent_micros <= cap  # the children's spend is charged to the parent


@SETTINGS
@given(**{**knobs, "cap": st.integers(40_000, 200_000), "max_out": st.integers(100, 600)})  # room for several children
def test_many_children_in_one_reply_never_settle_past_the_parents_cap(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int
) -> None:
    """Up to ten Agent calls in one reply, all run together: each child's calls draw from what the parent and
    its siblings left, so together they never pass the parent's cap."""
    from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor

    tmp = tmp_path_factory.mktemp("many")
    adv = Adversary(seed, 1.0, faults, spawn=0.9, cut=0.3, many=True)  # every call billed at its bound
    model = open_adversary(adv, fallback)
    runner = SubagentRunner(model=model, make_tools=lambda cwd: Registry([emit]), cwd=str(tmp), transcript_dir=str(tmp / "t"),
                            prices=PRICES, model_name="claude-haiku-4-5", max_steps=3, default_isolation="none")
    registry = Registry([emit, runner.tool()])

    def prepare(state: Any, record: Any) -> None:
        runner.parent.bind(state, record)
        return None

    r = run(model, registry, _prompt(), Budget(max_steps=4, max_usd_micros=cap), prices=PRICES, max_output_tokens=max_out,
            prepare=prepare, executor=parallel_executor(lambda calls: [registry.invoke(c) for c in calls], runner))
    check_turns([r])
    assert all(c["stop_reason"] != "budget_overrun" for c in runner.children)
    assert r.spent_micros <= cap and adv.true_micros <= cap  # what was settled, and what the provider really billed
    assert runner.parent.held_micros == 0


@SETTINGS
@given(**{**knobs, "cap": st.integers(20_000, 200_000), "max_out": st.integers(100, 600)})
def test_a_session_with_background_children_never_settles_past_its_cap(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int
) -> None:
    """Children started with ``run_in_background`` outlive the turn that started them: their calls draw from the
    session's room while the parent's own turns reserve through the same room (``ParentLedger``), and their bills
    land in the run that delivers their reports. Over a session of turns, and one more after every child is done,
    what was settled and what the provider really billed never pass the session's cap."""
    from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor

    tmp = tmp_path_factory.mktemp("background")
    adv = Adversary(seed, exact, faults, spawn=0.7, cut=0.3, background=0.8)
    model = open_adversary(adv, fallback)
    runner = SubagentRunner(model=model, make_tools=lambda cwd: Registry([emit]), cwd=str(tmp), transcript_dir=str(tmp / "t"),
                            prices=PRICES, model_name="claude-haiku-4-5", max_steps=3, default_isolation="none")
    registry = Registry([emit, runner.tool()])

    def prepare(state: Any, record: Any) -> None:
        runner.parent.bind(state, record)
        return None

    spent = 0
    results = []
    for turn in range(4):
        if turn == 3:
            runner.background.wait()
        if cap - spent <= 0:
            break
        budget = Budget(max_steps=4, max_usd_micros=cap - spent)
        ledger = runner.parent.for_run(budget)
        note = runner.background.deliver()
        r = run(model, registry, _prompt() + ([{"role": "user", "content": note}] if note else []), budget, prices=PRICES,
                max_output_tokens=max_out, prepare=prepare, ledger=ledger,
                executor=parallel_executor(lambda calls: [registry.invoke(c) for c in calls], runner))
        results.append(r)
        spent += r.spent_micros
    runner.background.wait()
    check_turns(results)
    assert all(c["stop_reason"] != "budget_overrun" for c in runner.children)
    assert spent <= cap and adv.true_micros <= cap
    if not runner.background.running and not runner.parent.pending:
        assert adv.true_micros <= spent + 0  # every bill landed in a run


@SETTINGS
@given(seed=knobs["seed"], exact=knobs["exact"], faults=knobs["faults"], max_out=st.integers(2_000, 32_000))
def test_ten_concurrent_children_on_a_dear_model_never_settle_past_the_default_cap(
    tmp_path_factory: pytest.TempPathFactory, seed: int, exact: float, faults: float, max_out: int
) -> None:
    """Ten Agent calls in every reply that starts any, all run at once, on a model at $75 per million output
    tokens under the default $5 cap: each call's reservation is a large part of the room, so children wait
    for each other's calls to settle, and together they never pass the cap."""
    from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor

    tmp = tmp_path_factory.mktemp("ten")
    adv = Adversary(seed, exact, faults, spawn=0.9, cut=0.3, children=10)
    model = open_adversary(adv, False, "claude-opus-4-1")
    runner = SubagentRunner(model=model, make_tools=lambda cwd: Registry([emit]), cwd=str(tmp), transcript_dir=str(tmp / "t"),
                            prices=PRICES, model_name="claude-opus-4-1", max_steps=3, default_isolation="none")
    registry = Registry([emit, runner.tool()])

    def prepare(state: Any, record: Any) -> None:
        runner.parent.bind(state, record)
        return None

    cap = 5_000_000
    r = run(model, registry, _prompt(), Budget(max_steps=3, max_usd_micros=cap), prices=PRICES, max_output_tokens=max_out,
            prepare=prepare, executor=parallel_executor(lambda calls: [registry.invoke(c) for c in calls], runner))
    check_turns([r])
    assert all(c["stop_reason"] != "budget_overrun" for c in runner.children)
    assert r.spent_micros <= cap and adv.true_micros <= cap
    assert runner.parent.held_micros == 0 and runner.parent.drawn.spent == 0


@SETTINGS
@given(**knobs, lie=st.sampled_from([0.3, 1.0]))
def test_a_lying_provider_never_lowers_the_spend_below_its_real_bill(
    seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int, lie: float
) -> None:
    """Replies that name the cheapest model and report negative, fractional, huge or missing counts: each
    such reply is charged at its reservation (a recorded overrun that stops the run), a reply is priced
    at the dearest model it could have come from, and the settled spend is never below what the provider
    really billed for the replies it sent whole, nor above the cap."""
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.3, lie=lie)
    r = run(open_adversary(adv, fallback), [emit], _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out)
    check_turns([r], lies=True)
    assert 0 <= adv.true_micros <= r.spent_micros <= cap
    if adv.lies:  # the first lie stopped the run, charged its reservation as an overrun
        assert r.stop_reason == "budget_overrun" and "usage that cannot be billed" in (r.error or ""), r.error


@SETTINGS
@given(**knobs, workers=st.integers(2, 4))
def test_a_fleet_sharing_one_ledger_never_settles_past_its_cap(
    seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int, workers: int
) -> None:
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.3)
    ledger = LocalLedger(cap)
    results: list[RunResult] = []

    def worker() -> None:
        # as a batch worker: its own budget has no money cap; the fleet ledger holds the cap
        results.append(run(open_adversary(adv, fallback), [emit], _prompt(), Budget(max_steps=6), prices=PRICES,
                           max_output_tokens=max_out, ledger=ledger))

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check_turns(results)
    assert ledger.spent <= cap and ledger.reserved == 0
    assert sum(r.spent_micros for r in results) == ledger.spent


def test_negative_control_a_reservation_of_characters_over_4_lets_the_spend_pass_the_cap() -> None:
    """Sabotage: reserve as before the bound (``legacy_estimate``: input at characters // 4). The adversary,
    billing within the documented bound, then takes runs past their caps."""
    passed = 0
    for seed in range(30):
        adv = Adversary(seed, exact=1.0, faults=0.0, spawn=0.0, cut=0.0)
        model = open_adversary(adv, False)
        cfg = make_config(model, Registry([emit]), Budget(max_steps=8, max_usd_micros=20_000), prices=PRICES, max_output_tokens=50)
        r = run(model, [emit], _prompt(), cfg.budget, config=replace(cfg, legacy_estimate=True))
        passed += r.spent_micros > 20_000
    assert passed > 0


def test_the_documented_bound_is_what_the_loop_reserves_for(tmp_path: Path) -> None:
    """The test's bound (from the docs) and ``budget.input_bound`` agree, so the property tests the documented promise."""
    from agentloop.budget import input_bound

    msgs = [*_prompt(), {"role": "assistant", "content": "x", "tool_calls": [{"id": "t1", "name": "emit", "arguments": {"kind": "emoji"}}]},
            {"role": "tool", "tool_call_id": "t1", "name": "emit", "ok": True, "content": mixed_text("emoji", 50, 3)}]
    req = ModelRequest(msgs, Registry([emit]).specs(), 10)
    assert documented_bound(req) == input_bound(msgs, req.tools)


def test_a_side_call_billed_past_its_bound_stops_the_run_and_replays(tmp_path: Path) -> None:
    """A compaction summary billed far past its reservation: the run stops with budget_overrun before the next call."""
    from agentloop.agent.context.compaction import Compactor
    from agentloop.replay import replay
    from agentloop.testing import ScriptedModel, reply
    from agentloop.transcript import TranscriptWriter, read_records

    @tool(read_only=True)
    def big(n: int) -> str:
        """A large output."""
        return f"{n}:" + "y" * 3000

    path = tmp_path / "t.jsonl"
    cm = Compactor(window=1000, keep_recent=1, mask_threshold=100, transcript_path=str(path),
                        summarizer=ScriptedModel([reply("summary", usage=(1_000_000, 5))]))
    steps = [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(4)]
    with TranscriptWriter(path) as w:
        r = run(ScriptedModel(steps), [big], [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
                Budget(max_steps=10, max_usd_micros=10_000_000), transcript=w, prepare=cm.prepare)
    assert r.stop_reason == "budget_overrun" and "side call" in (r.error or "")
    kinds = [x.kind for x in read_records(path)]
    assert "overrun" in kinds and kinds[-1] == "stop"
    assert replay(path).equal


@SETTINGS
@given(**knobs, interrupt=st.sampled_from([0.2, 0.6]))
def test_an_interrupted_stream_is_charged_what_the_provider_billed_and_never_past_the_cap(
    seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int, interrupt: float
) -> None:
    """Esc while the model answers: the provider billed the input it read. The call is charged its reservation,
    so the settled spend is never below what the provider billed, nor past the cap."""
    adv = Adversary(seed, exact, faults, spawn=0.0, cut=0.3, interrupt=interrupt)
    r = run(open_adversary(adv, fallback), [emit], _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out)
    check_turns([r])
    assert 0 <= adv.true_micros <= r.spent_micros <= cap
    if adv.interrupted:
        assert r.stop_reason == "interrupted" and r.spent_micros > 0


LIES_OF_A_SIDE_CALL = st.one_of(
    st.builds(lambda i, o: (Usage(i, o), 0), st.integers(0, 3_000), st.integers(0, 400)),  # honest or not: the rule decides
    st.builds(lambda o: (Usage(1, o), 0), st.integers(-10**6, -1)),
    st.builds(lambda o: (Usage(1, o), 0), st.integers(10**5, 10**9)),
    st.builds(lambda n: (Usage(1, 1), n), st.integers(0, 1_000)),  # a server tool's count of its own uses
)


@SETTINGS
@given(seed=st.integers(0, 2**32), cap=st.integers(2_000, 200_000), lies=st.lists(LIES_OF_A_SIDE_CALL, min_size=1, max_size=6),
       max_out=st.integers(1, 600))
def test_side_calls_and_server_tools_reporting_any_figures_never_settle_past_the_cap(
    seed: int, cap: int, lies: list[tuple[Usage, int]], max_out: int
) -> None:
    """Before each turn a side call (a compaction summary, a loop check, WebFetch's prompt, WebSearch's search with
    ``max_uses`` 5) reports figures from the list: within what its request allowed, it is charged as billed; past
    it (output past max_tokens, tokens past the byte bound, uses past max_uses, negative counts) it is charged its
    reservation, as an overrun, and the run stops before its next call. The cap holds either way."""
    adv = Adversary(seed, 0.3, 0.0, spawn=0.0, cut=0.3)
    queue = list(lies)
    settled: list[tuple[int, int, bool]] = []

    def prepare(state: Any, record: Any) -> None:
        if not queue:
            return None
        usage, uses = queue.pop(0)
        bound = CallBound(2_000, 300, PRICES.resolve("claude-sonnet-4-5"), uses=5, use_micros=10_000)
        _, call = metered(lambda: Answer("side", usage, uses), bound, LoopAccount(record), "web_search")
        if call.skipped is None:
            price = PRICES.resolve("claude-sonnet-4-5")
            beyond = (min(usage.input_tokens, usage.output_tokens) < 0 or usage.output_tokens > 300 or uses > 5
                      or cost_micros(usage, price) + uses * 10_000 > bound.micros)
            settled.append((call.cost_micros, bound.micros, beyond))
        return None

    r = run(open_adversary(adv, False), [emit], _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES,
            max_output_tokens=max_out, prepare=prepare)
    assert r.spent_micros <= cap
    for cost, reserved, beyond in settled:
        assert cost <= reserved and (cost == reserved if beyond else True)
    if any(beyond for _, _, beyond in settled):
        assert r.stop_reason == "budget_overrun" and settled[-1][2]  # the first lie was the last side call made
