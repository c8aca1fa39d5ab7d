"""The spend cap holds over OpenAI's Responses API as over the Messages API: an adversarial provider
billing up to the documented bound never passes it, and one that lies never lowers the spend.

The provider is a real ``ResponsesModel`` over an in-process ``httpx.MockTransport`` speaking the Responses
stream (``response.created`` ... ``response.completed``). It bills each attempt a random usage up to the
bound: input up to the request's documented bound (``test_spend_cap_property.documented_bound``, plus the
reasoning items sent back, counted by their JSON's bytes as the budget counts reasoning blocks), part of it
cached; output up to the attempt's ``max_output_tokens``, most of it hidden reasoning. Its replies hold a
reasoning item (sent back on the next turn), calls of ``emit`` and text, some cut at max tokens
(``response.incomplete``); 500s and streams cut after a reasoning item began (charged the whole
``max_output_tokens``). A lying reply names the cheapest model and reports a count negative, fractional,
huge or missing, more reasoning than output, or more cached input than input.
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from agentloop.budget import Budget, Price, PriceTable, cost_micros
from agentloop.canonical import canonical
from agentloop.events import ModelRequest, Usage
from agentloop.providers.base import RetryPolicy, Target
from agentloop.providers.openai_responses import ResponsesModel
from agentloop.run import run
from test_spend_cap_property import (
    KINDS,
    SETTINGS,
    check_turns,
    documented_bound,
    emit,
    knobs,
    mixed_text,
)

PRICES = PriceTable({
    "gpt-5.1-codex-mini": Price(250_000, 2_000_000, 25_000, 0),
    "gpt-5-codex": Price(1_250_000, 10_000_000, 125_000, 0),
    "codex-mini-latest": Price(1_500_000, 6_000_000, 375_000, 0),
})


def bound(req: ModelRequest) -> int:
    return documented_bound(req) + sum(len(canonical(m["reasoning"])) for m in req.messages if m.get("reasoning"))


def _sse(events: list[dict[str, Any]]) -> httpx.Response:
    data = "".join(f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n" for i, e in enumerate(events)).encode()
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)


class ResponsesAdversary:
    def __init__(self, seed: int, exact: float, faults: float, cut: float, lie: float = 0.0):
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.exact, self.faults, self.cut, self.lie = exact, faults, cut, lie
        self.local = threading.local()
        self.true_micros = 0
        self.lies = 0
        self.n = 0

    def usage(self, r: random.Random, most_in: int, max_tokens: int) -> dict[str, Any]:
        at = r.random() < self.exact
        inp = most_in if at else r.randint(1, most_in)
        out = max_tokens if at else r.randint(1, max(1, max_tokens))
        return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": r.randint(0, inp)}, "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": r.randint(0, out)}, "total_tokens": inp + out}

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with self.lock:
            r = random.Random(self.rng.random())
            self.n += 1
            n = self.n
        max_tokens = int(body["max_output_tokens"])
        u = self.usage(r, bound(self.local.request), max_tokens)
        roll = r.random()
        if roll < self.faults / 2:
            return httpx.Response(500, json={"error": {"message": "boom", "type": "server_error", "code": "server_error"}})
        resp = {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": body["model"], "status": "in_progress", "output": [],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
        rs = {"id": f"rs_{n}", "type": "reasoning", "summary": [], "encrypted_content": f"enc{n}-" + "x" * r.randint(0, 200)}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": resp},
                                        {"type": "response.output_item.added", "output_index": 0, "item": {"id": rs["id"], "type": "reasoning", "summary": []}}]
        if roll < self.faults:  # billed, then cut while it reasons
            return _sse(events)
        events.append({"type": "response.output_item.done", "output_index": 0, "item": rs})
        output, cut = [rs], r.random() < self.cut
        for item in self._items(r, n, body):
            events.append({"type": "response.output_item.added", "output_index": len(output), "item": item})
            events.append({"type": "response.output_item.done", "output_index": len(output), "item": item})
            output.append(item)
        usage: Any = u
        with self.lock:
            self.true_micros += cost_micros(Usage(u["input_tokens"] - u["input_tokens_details"]["cached_tokens"], u["output_tokens"],
                                                  u["input_tokens_details"]["cached_tokens"]), PRICES.resolve(body["model"]))
        final = {**resp, "status": "incomplete" if cut else "completed", "output": output,
                 "incomplete_details": {"reason": "max_output_tokens"} if cut else None, "usage": usage}
        if r.random() < self.lie:
            final["usage"] = self._lie(r, u)
            final["model"] = "gpt-5.1-codex-mini"
        events.append({"type": "response.incomplete" if cut else "response.completed", "response": final})
        return _sse(events)

    def _items(self, r: random.Random, n: int, body: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if r.random() < 0.4 or not body.get("tools"):
            items.append({"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": mixed_text(r.choice(KINDS), r.randint(1, 30), r.randint(0, 99)), "annotations": []}]})
        if body.get("tools") and r.random() < 0.7:
            for k in range(r.randint(1, 2)):
                args = {"kind": r.choice(KINDS), "n": r.randint(1, 400), "seed": r.randint(0, 10**6)}
                items.append({"id": f"fc_{n}_{k}", "type": "function_call", "status": "completed", "call_id": f"call_{n}_{k}",
                              "name": "emit", "arguments": json.dumps(args)})
        return items

    def _lie(self, r: random.Random, u: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.lies += 1
        lied = json.loads(json.dumps(u))
        told = r.choice([-1, -10**6, 1.5, 1e30, 10**18, "12", None])
        where = r.choice(["input_tokens", "output_tokens", "reasoning", "cached"])
        if where == "reasoning":
            lied["output_tokens_details"]["reasoning_tokens"] = lied["output_tokens"] + r.randint(1, 10**6)
        elif where == "cached":
            lied["input_tokens_details"]["cached_tokens"] = lied["input_tokens"] + r.randint(1, 10**6)
        elif told is None:
            lied.pop(where)
        else:
            lied[where] = told
        return lied


class _Model(ResponsesModel):
    def __init__(self, adv: ResponsesAdversary, name: str, **kw: Any):
        super().__init__(Target("openai-responses", name, "http://adversary.invalid/v1", "k"), transport=httpx.MockTransport(adv.handle),
                         policy=RetryPolicy(max_attempts=2, sleep=lambda s: None, rand=lambda: 0.0), reasoning_effort="medium", **kw)
        self.adv = adv
        self.price = PRICES.resolve(name)
        self.max_continuations = 2

    def complete(self, request: ModelRequest) -> Any:
        self.adv.local.request = request
        return super().complete(request)


def _open(adv: ResponsesAdversary, fallback: bool) -> _Model:
    return _Model(adv, "gpt-5-codex", fallback=_Model(adv, "codex-mini-latest") if fallback else None)


def _prompt() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You emit text. " + mixed_text("chinese", 20, 1)}, {"role": "user", "content": "go 🚀"}]


@SETTINGS
@given(**knobs)
def test_a_responses_run_never_settles_past_its_cap(seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int) -> None:
    adv = ResponsesAdversary(seed, exact, faults, cut=0.3)
    r = run(_open(adv, fallback), [emit], _prompt(), Budget(max_steps=10, max_usd_micros=cap), prices=PRICES, max_output_tokens=max_out)
    check_turns([r])
    assert adv.true_micros <= r.spent_micros <= cap


@SETTINGS
@given(**knobs, lie=st.sampled_from([0.3, 1.0]))
def test_a_lying_responses_provider_never_lowers_the_spend_below_its_real_bill(
    seed: int, cap: int, exact: float, faults: float, fallback: bool, max_out: int, lie: float
) -> None:
    adv = ResponsesAdversary(seed, exact, faults, cut=0.3, lie=lie)
    r = run(_open(adv, fallback), [emit], _prompt(), Budget(max_steps=8, max_usd_micros=cap), prices=PRICES, max_output_tokens=max_out)
    check_turns([r], lies=True)
    assert 0 <= adv.true_micros <= r.spent_micros <= cap
    if adv.lies:
        assert r.stop_reason == "budget_overrun" and "usage that cannot be billed" in (r.error or ""), r.error
