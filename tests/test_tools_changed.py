"""Tools that change during a run (an MCP server's list_changed) reach the run's next model turn.

The driver asks after each turn's tool calls; the loop records ``tools_changed``
after that turn's results, sends the new tools from the next request on, and
reserves for their size. Replay feeds the record back at the same point.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop import Budget, LocalLedger, MemoryTranscript, arun, run, tool, usd
from agentloop.budget import Price, tools_bound
from agentloop.events import ModelReply, ModelRequest, ToolCall, ToolResult, ToolSpec
from agentloop.loop import (
    LoopConfig,
    ModelReplied,
    Reserve,
    Reserved,
    ToolsChanged,
    ToolsDone,
    start,
    step,
)
from agentloop.replay import replay
from agentloop.testing import FunctionModel, reply
from agentloop.tools import Registry
from agentloop.transcript import TranscriptWriter, verify_file


@tool
def install(name: str) -> str:
    """Install a plugin, which brings a new tool."""
    return f"installed {name}"


@tool
def weather(city: str) -> str:
    """The weather in a city: today's sky, wind and temperature, as the plugin's service reports them."""
    return f"sunny in {city}"


class _Scenario:
    """A model that installs, then calls the tool the install brought, then answers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, ...]] = []

    def complete(self, req: ModelRequest) -> ModelReply:
        self.requests.append(tuple(t.name for t in req.tools))
        n = len(self.requests)
        if n == 1:
            return reply("", [("install", {"name": "weather"})])
        if n == 2:
            return reply("", [("weather", {"city": "Oslo"})])
        return reply("done")


class _RecordingLedger(LocalLedger):
    def __init__(self) -> None:
        super().__init__(None)
        self.amounts: list[int] = []
        self.tokens: list[int] = []

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        self.amounts.append(amount_micros)
        self.tokens.append(tokens)
        return super().reserve(amount_micros, tokens)


def _changed_after_install(change: bool = True) -> Any:
    """The driver's check: after the batch that ran ``install``, a registry that also has ``weather``."""
    state = {"asked": 0}

    def check() -> Registry | None:
        state["asked"] += 1
        if state["asked"] == 1 and change:
            return Registry([install, weather])
        return None

    return check


def _run(path: Path | None = None, ledger: Any = None, change: bool = True) -> tuple[Any, _Scenario, MemoryTranscript | None]:
    model = _Scenario()
    m = FunctionModel(model.complete, name="scripted")
    budget = Budget(max_steps=5, max_usd_micros=usd("5"))
    if path is not None:
        with TranscriptWriter(path) as w:
            r = run(m, [install], "install weather, then ask it", budget, transcript=w, run_id="r1",
                    ledger=ledger, tools_changed=_changed_after_install())
        return r, model, None
    t = MemoryTranscript()
    r = run(m, [install], "install weather, then ask it", budget, transcript=t, run_id="r1",
            ledger=ledger, tools_changed=_changed_after_install(change))
    return r, model, t


def test_a_tool_added_by_a_tool_call_is_offered_and_runs_in_the_next_turn_of_the_same_run(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    r, model, _ = _run(path)
    assert (r.stop_reason, r.steps, r.answer) == ("no_tool_calls", 3, "done")
    assert model.requests == [("install",), ("install", "weather"), ("install", "weather")]
    recs = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert [o["kind"] for o in recs] == [
        "run_start", "model_turn", "budget", "tool_result", "tools_changed", "model_turn", "budget", "tool_result",
        "model_turn", "budget", "stop",
    ]
    changed = recs[4]["payload"]
    assert changed["step"] == 1
    assert [t["name"] for t in changed["tools"]] == ["install", "weather"]
    # the same form as run_start's config.tools (the manifest: fingerprints and all)
    assert changed["tools"][0] == recs[0]["payload"]["config"]["tools"][0]
    weather_result = recs[7]["payload"]
    assert (weather_result["name"], weather_result["ok"], weather_result["content"]) == ("weather", True, "sunny in Oslo")


def test_a_transcript_with_tools_changed_verifies_and_replays_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path)
    assert verify_file(path).ok
    cli = subprocess.run(
        [sys.executable, "-m", "agentloop.cli.main", "verify", str(path)], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    res = replay(path)
    assert res.equal, res.summary()
    assert res.lines == path.read_bytes().splitlines(keepends=True)


def test_the_reservation_grows_with_the_bigger_tool_list() -> None:
    plain, grown = _RecordingLedger(), _RecordingLedger()
    _run(ledger=plain, change=False)  # no change: the model's "weather" call fails as unknown
    _run(ledger=grown)
    assert plain.tokens[0] == grown.tokens[0] and plain.amounts[0] == grown.amounts[0]
    # turn 2 sends the same messages in both runs; the new tool's bound is reserved on top
    added = tools_bound(Registry([install, weather]).specs()) - tools_bound(Registry([install]).specs())
    assert added > 100
    assert grown.tokens[1] - plain.tokens[1] == added
    assert grown.amounts[1] > plain.amounts[1]


def test_the_loop_reserves_for_the_new_tools_and_sends_them_in_the_next_request() -> None:
    price = Price(input=3, output=15)
    small = (ToolSpec("a", "", {"type": "object"}),)
    big = small + (ToolSpec("b", "y" * 4000, {"type": "object"}),)
    cfg = LoopConfig(model="m", budget=Budget(max_steps=4), price=price, tools=small)
    state, out = start(cfg, [{"role": "user", "content": "q"}])
    first = next(o for o in out if isinstance(o, Reserve))
    state, out = step(state, Reserved(True))
    state, out = step(state, ModelReplied(ModelReply("", (ToolCall("c1", "a", {}),))))
    state, out = step(state, ToolsChanged(big))
    assert out == []  # taken in after the results
    state, out = step(state, ToolsDone((ToolResult("c1", "a", True, "ok"),)))
    kinds = [o.kind for o in out if hasattr(o, "kind")]
    assert kinds == ["tool_result", "tools_changed"]
    payload = next(o.payload for o in out if getattr(o, "kind", None) == "tools_changed")
    assert payload == {"step": 1, "tools": [t.to_json() for t in big]}
    second = next(o for o in out if isinstance(o, Reserve))
    assert second.tokens - first.tokens > 4000  # the new description's bytes, at least
    state, out = step(state, Reserved(True))
    assert out[0].request.tools == big  # type: ignore[union-attr]


def test_the_loop_refuses_a_tools_change_outside_a_turn_s_tool_calls() -> None:
    cfg = LoopConfig(model="m", budget=Budget(max_steps=4), price=Price(input=3, output=15))
    state, _ = start(cfg, [{"role": "user", "content": "q"}])
    with pytest.raises(ValueError, match="ToolsChanged"):
        step(state, ToolsChanged(()))


def test_the_async_driver_takes_in_a_tools_change_as_the_sync_one_does(tmp_path: Path) -> None:
    _, _, a = _run()
    model = _Scenario()
    b = MemoryTranscript()
    asyncio.run(arun(FunctionModel(model.complete, name="scripted"), [install], "install weather, then ask it",
                     Budget(max_steps=5, max_usd_micros=usd("5")), transcript=b, run_id="r1",
                     tools_changed=_changed_after_install()))
    assert a is not None and a.getvalue() == b.getvalue()
    assert model.requests[1] == ("install", "weather")


def test_live_tools_replay_runs_the_added_tool_and_warns_when_it_is_not_given(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path)
    res = replay(path, tools=[install, weather], mode="live-tools")
    assert res.equal and not res.warnings, res.summary()
    res = replay(path, tools=[install], mode="live-tools")
    assert any("'weather'" in w and "not among the tools given" in w for w in res.warnings)
    assert not res.equal


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_node_verifier_accepts_a_tools_changed_record_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _run(path)
    js = Path(__file__).resolve().parent.parent / "verifiers" / "node" / "agentloop-verify.mjs"
    r = subprocess.run(["node", str(js), "verify", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok, 11 records" in r.stdout, r.stdout + r.stderr
