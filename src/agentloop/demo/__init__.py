"""The demo: real runs on the scripted model, written to disk, verified from disk.

Each act makes runs and states claims about them; the demo holds only if
every claim holds. Acts from other parts of agentloop (replay, anchors) are
listed in ``ACTS`` and run after these.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..budget import Budget, usd
from ..events import ModelReply, ToolCall, Usage
from ..providers.scripted import ScriptedModel
from ..run import RunResult, run
from ..tools import Registry, ToolError, tool
from ..transcript import TranscriptWriter, verify_file

__all__ = ["ACTS", "Claim", "DemoRun", "demo_tools", "reply", "run_demo"]


def reply(text: str = "", calls: list[tuple[str, Any]] | None = None, *, usage: tuple[int, int] | None = None,
          step: int | None = None) -> ModelReply:
    """One scripted reply; its calls are named ``call_<step>_<i>`` (``call_<i>`` without a step). The demo's
    own, so the shipped demo needs nothing of the test kit."""
    prefix = f"call_{step}_" if step is not None else "call_"
    tcs = tuple(ToolCall(f"{prefix}{i}", name, args) for i, (name, args) in enumerate(calls or ()))
    return ModelReply(text=text, tool_calls=tcs, usage=Usage(*usage) if usage is not None else None)


@dataclass
class Claim:
    text: str
    held: bool


@dataclass
class DemoRun:
    name: str
    path: str
    records: int
    stop_reason: str
    spent_micros: int
    verified: bool
    claims: list[Claim] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(c.held for c in self.claims)


def demo_tools() -> Registry:
    @tool(read_only=True)
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers.

        Args:
            a: the first addend
            b: the second addend
        """
        return {"sum": a + b}

    @tool(read_only=True)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @tool
    def fail(reason: str = "on purpose") -> None:
        """A tool that always breaks."""
        raise RuntimeError(f"the tool is broken {reason}")

    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up in a small table."""
        table = {"capital_of_italy": "Rome", "answer": "42"}
        if key not in table:
            raise ToolError(f"no such key {key!r}; known keys: {', '.join(sorted(table))}")
        return table[key]

    return Registry([add, echo, fail, lookup])


def _execute(out_dir: str, name: str, script: list[Any], budget: Budget, prompt: str, **kw: Any) -> tuple[DemoRun, RunResult, ScriptedModel]:
    path = os.path.join(out_dir, f"demo-{name}.jsonl")
    if os.path.exists(path):
        os.remove(path)
    model = ScriptedModel(script)
    with TranscriptWriter(path, durability="fsync") as w:
        result = run(model, demo_tools(), prompt, budget, transcript=w, run_id=f"demo-{name}", **kw)
    report = verify_file(path)
    dr = DemoRun(name, path, report.count, result.stop_reason, result.spent_micros, report.ok)
    dr.claims.append(Claim("the transcript verifies from disk", report.ok))
    dr.claims.append(Claim("the script was used exactly", model.remaining == 0 and not model.overrun))
    return dr, result, model


def _kinds(path: str) -> list[tuple[str, Any]]:
    from ..transcript import read_records

    return [(r.kind, r.payload) for r in read_records(path)]


def act_core(out_dir: str) -> list[DemoRun]:
    runs = []

    dr, res, _ = _execute(
        out_dir, "answer",
        [reply("", [("add", {"a": 40, "b": 2})], step=1), reply("40 + 2 = 42.")],
        Budget(max_steps=5, max_usd_micros=usd("0.05")),
        "What is 40 + 2? Use the add tool.",
    )
    dr.claims.append(Claim("stops with no_tool_calls and answers 42", res.stop_reason == "no_tool_calls" and "42" in res.answer))
    runs.append(dr)

    dr, res, _ = _execute(
        out_dir, "recover",
        [
            reply("", [("multiply", {"a": 6, "b": 7})], step=1),
            reply("", [("add", {"a": "six", "b": 7, "c": 1})], step=2),
            reply("", [("fail", {})], step=3),
            reply("", [("add", {"a": 6, "b": 36})], step=4),
            reply("It is 42."),
        ],
        Budget(max_steps=10, max_usd_micros=usd("0.05")),
        "Compute 6 * 7, any way you can.",
    )
    results = [p for k, p in _kinds(dr.path) if k == "tool_result"]
    oks = [r["ok"] for r in results]
    dr.claims.append(Claim("three failures then a success, the run goes on", oks == [False, False, False, True]))
    if len(results) == 4:
        dr.claims.append(Claim("unknown tool names the tools that exist", "have: add, echo, fail, lookup" in results[0]["error"]))
        dr.claims.append(Claim("both schema errors reported at once", "$.a" in results[1]["error"] and "'c'" in results[1]["error"]))
        dr.claims.append(Claim("the raise is neutral for the model, full for people",
                               "broken" not in results[2]["error"] and results[2]["detail"]["type"] == "RuntimeError"))
    dr.claims.append(Claim("stops with no_tool_calls", res.stop_reason == "no_tool_calls"))
    runs.append(dr)

    loop = [reply("", [("echo", {"text": f"round {i}"})], step=i) for i in range(1, 4)]
    dr, res, _ = _execute(out_dir, "budget-steps", loop, Budget(max_steps=3, max_usd_micros=usd("0.05")), "Echo forever.")
    turns = sum(1 for k, _ in _kinds(dr.path) if k == "model_turn")
    dr.claims.append(Claim("step_budget, and steps == model records == 3", res.stop_reason == "step_budget" and res.steps == turns == 3))
    runs.append(dr)

    big = [reply("", [("echo", {"text": "hi"})], usage=(900, 200), step=1)]
    dr, res, _ = _execute(out_dir, "budget-tokens", big, Budget(max_steps=10, max_tokens=1000), "Say hi.")
    tool_records = sum(1 for k, _ in _kinds(dr.path) if k == "tool_result")
    dr.claims.append(Claim("token_budget, and the turn's tool never ran", res.stop_reason == "token_budget" and tool_records == 0))
    runs.append(dr)

    two = [reply("", [("echo", {"text": f"call {i}"})], usage=(1000, 1000), step=i) for i in (1, 2)]
    dr, res, model = _execute(out_dir, "budget-cost", two, Budget(max_steps=10, max_usd_micros=10_000), "Spend.", max_output_tokens=2000)
    dr.claims.append(Claim("cost_budget before the third call, never over the cap",
                           res.stop_reason == "cost_budget" and model.calls == 2 and res.spent_micros <= 10_000))
    runs.append(dr)
    return runs


Act = Callable[[str], list[DemoRun]]
ACTS: list[tuple[str, str]] = [
    ("core", "agentloop.demo:act_core"),
    ("anchors", "agentloop.demo.anchor_act:act_anchor"),
    ("replay", "agentloop.demo.replay_act:act_replay"),
]
"""(name, "module:function") of each act, run in order."""


def run_demo(out_dir: str) -> list[DemoRun]:
    import importlib

    os.makedirs(out_dir, exist_ok=True)
    runs: list[DemoRun] = []
    for _name, ref in ACTS:
        modname, _, fn = ref.partition(":")
        act: Act = getattr(importlib.import_module(modname), fn)
        runs.extend(act(out_dir))
    return runs
