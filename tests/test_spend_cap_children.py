"""Sub-agents started in one model turn never let the provider bill past the parent's cap.

A parent that asks for many children in one reply: each child reserves before it runs, from what the
parent has left after its siblings (those running and those already done in the same turn), so the
sum of what every child and the parent were billed stays under the cap. Run through the terminal
agent against the local fake provider speaking the OpenAI protocol, billing every call its whole
``max_tokens`` of output (an honest provider at its dearest).

Claude Code's sub-agents documentation ("Subagents", running several at once) describes several
Agent calls in one reply; agentloop's promise is that the cap holds for all of them together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

OUT_PRICE = 600_000  # gpt-4o-mini, micro-USD per million output tokens (prices.py)
IN_PRICE = 150_000


def _agent_calls(n: int, kind: str) -> list[dict[str, Any]]:
    return [{"name": "Agent", "arguments": {"description": f"part {i}", "prompt": f"do part {i}", "subagent_type": kind}}
            for i in range(n)]


def _billed(requests: list[dict[str, Any]]) -> int:
    """What the fake provider billed, at least: each call's whole max_tokens of output (micro-USD, rounded down)."""
    return sum(int(r["body"].get("max_tokens") or r["body"].get("max_completion_tokens") or 0) * OUT_PRICE for r in requests) // 1_000_000


def _run(proj: Path, home: Path, cap: int, first: dict[str, Any]) -> tuple[Any, list[dict[str, Any]], str]:
    script = {"replies": [first, {"text": "done", "usage": "max"}], "when_done": "repeat"}
    with FakeProvider(script) as fp:
        a = Agent(cwd=str(proj), model="openai:gpt-4o-mini", base_url=fp.url + "/v1", max_usd_micros=cap,
                  env={"AGENTLOOP_HOME": str(home)})
        try:
            res = a.ask("split the work")
        finally:
            a.close()
        return res, fp.requests, a.session.path


def test_ten_children_started_in_one_reply_stay_under_the_parents_cap(tmp_path: Path, home: Path, proj: Path) -> None:
    """Ten children run at once, each drawing every call's reservation from the parent's one room: the room
    pays for a few calls billed their whole output, not ten, so some children stop on the cap, and the sum
    the provider billed never passes it."""
    cap = 40_000  # $0.04: a call billed its whole output allowance (the system prompt and tools on top) fits a few times, not ten
    res, requests, path = _run(proj, home, cap, {"tool_calls": _agent_calls(10, "general-purpose"), "usage": "max"})
    children = [r.payload for r in read_records(path) if r.kind == "subagent"]
    assert len(children) == 10
    ran = [c for c in children if c["steps"] > 0]
    assert 2 <= len(ran) < 10, [c["stop_reason"] for c in children]  # some ran; the cap stopped the rest
    assert all(c["stop_reason"] == "cost_budget" for c in children if c["steps"] == 0)
    # the parent's records come out in call order, whichever child finished first
    assert [c["description"] for c in children] == [f"part {i}" for i in range(10)]
    assert _billed(requests) <= cap  # what the provider billed, counted by the test
    assert res.spent_micros <= cap and res.stop_reason != "budget_overrun"
    handed = [r.payload for r in read_records(path) if r.kind == "side_cost" and r.payload.get("purpose") == "subagent"]
    assert sum(h["cost_micros"] for h in handed) == sum(c["spent_micros"] for c in children)


def test_children_run_together_each_with_the_whole_room(tmp_path: Path, home: Path, proj: Path) -> None:
    """Children of one reply start with all the parent has left (not a half, not a split), draw call by call
    from it, and each call goes through the one tool-call pipeline."""
    cap = 60_000
    calls = _agent_calls(4, "Explore") + [{"name": "Agent", "arguments": {"description": "no prompt", "subagent_type": "Explore"}}]
    res, requests, path = _run(proj, home, cap, {"tool_calls": calls, "usage": "max"})
    children = [r.payload for r in read_records(path) if r.kind == "subagent"]
    assert len(children) == 4, [r.payload for r in read_records(path) if r.kind in ("tool_result", "stop")]
    allowed = [c["allowed_micros"] for c in children]
    first_turn = [r.payload for r in read_records(path) if r.kind == "budget"][0]["cost_micros"]
    # all the parent had left, less only what siblings' calls were already billed when a child started
    assert max(allowed) == cap - first_turn and all(0 < a <= cap - first_turn for a in allowed), allowed
    assert _billed(requests) <= cap and res.spent_micros <= cap
    # the call without its prompt gets the schema's refusal, as any call would, not a failure while running
    (bad,) = [r.payload for r in read_records(path) if r.kind == "tool_result" and not r.payload["ok"]]
    assert "prompt" in json.dumps(bad["error"]) and "while running" not in json.dumps(bad["error"]), bad
