"""Read-only tools of one turn run at the same time, in both drivers, and are recorded in call order."""

from __future__ import annotations

import _thread
import asyncio
import random
import threading
import time
from typing import Any

import pytest

from agentloop import Budget, MemoryTranscript, Tool, arun, run
from agentloop.budget import LocalLedger
from agentloop.events import ToolFinished, ToolStarted
from agentloop.run import interrupt_flag
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import verify_lines

OBJ: dict[str, Any] = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}


def ro(name: str, fn: Any) -> Tool:
    return Tool(name, name, OBJ, fn, read_only=True)


def turn(name: str, n: int, step: int = 1) -> Any:
    return reply("", [(name, {"i": i}) for i in range(n)], usage=(10, 5), step=step)


def script(name: str, n: int) -> ScriptedModel:
    return ScriptedModel([turn(name, n), reply("done", usage=(10, 5))])


def lines_of(t: MemoryTranscript) -> list[bytes]:
    return list(t.lines)


def test_read_only_calls_of_one_turn_run_at_the_same_time_in_run() -> None:
    barrier = threading.Barrier(5, timeout=10)

    def meet(i: int) -> int:
        barrier.wait()  # breaks (and the tool fails) unless all five are running at once
        return i

    t = MemoryTranscript()
    r = run(script("meet", 5), [ro("meet", meet)], "go", Budget(max_steps=5), transcript=t)
    assert r.stop_reason == "no_tool_calls"
    results = [rec.payload for rec in t.records if rec.kind == "tool_result"]
    assert [p["content"] for p in results] == [0, 1, 2, 3, 4]
    assert all(p["ok"] for p in results)


def test_a_turn_with_a_writing_tool_runs_its_calls_one_at_a_time_in_order() -> None:
    active = 0
    most = 0
    order: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
            order.append(f"start{i}")
        time.sleep(0.01)
        with lock:
            active -= 1
            order.append(f"end{i}")
        return i

    writer = Tool("write", "w", OBJ, work, read_only=False)
    model = ScriptedModel([reply("", [("read", {"i": 0}), ("write", {"i": 1}), ("read", {"i": 2})], usage=(1, 1)), reply("ok", usage=(1, 1))])
    run(model, [ro("read", work), writer], "go", Budget(max_steps=5))
    assert most == 1
    assert order == ["start0", "end0", "start1", "end1", "start2", "end2"]


@pytest.mark.parametrize("limit", [1, 3])
def test_max_parallel_bounds_how_many_run_at_once(limit: int) -> None:
    active = 0
    most = 0
    started = 0
    lock = threading.Lock()
    # The first `limit` calls meet at a barrier, so reaching the limit does not hang
    # on thread timing; the rest only hold their slot a moment. More at once than
    # the limit shows up in `most`.
    barrier = threading.Barrier(limit, timeout=10)

    def work(i: int) -> int:
        nonlocal active, most, started
        with lock:
            active += 1
            most = max(most, active)
            started += 1
            first = started <= limit
        if first:
            barrier.wait()
        time.sleep(0.02)
        with lock:
            active -= 1
        return i

    t = MemoryTranscript()
    r = run(script("w", 8), [ro("w", work)], "go", Budget(max_steps=5), max_parallel=limit, transcript=t)
    assert r.stop_reason == "no_tool_calls"
    assert all(rec.payload["ok"] for rec in t.records if rec.kind == "tool_result")
    assert most == limit


def _sleepy(seed_box: list[int], finish: list[int]) -> Tool:
    lock = threading.Lock()

    def nap(i: int) -> dict[str, int]:
        time.sleep(random.Random(seed_box[0] * 100 + i).uniform(0, 0.03))
        with lock:
            finish.append(i)
        return {"i": i, "square": i * i}

    async def anap(i: int) -> dict[str, int]:
        await asyncio.sleep(random.Random(seed_box[0] * 100 + i).uniform(0, 0.03))
        with lock:
            finish.append(i)
        return {"i": i, "square": i * i}

    return Tool("nap", "nap", OBJ, nap, read_only=True), Tool("anap", "anap", OBJ, anap, read_only=True)  # type: ignore[return-value]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_twenty_runs_with_random_sleeps_give_one_identical_transcript(driver: str) -> None:
    seed_box = [0]
    finish: list[int] = []
    nap, anap = _sleepy(seed_box, finish)  # type: ignore[misc]
    transcripts = set()
    orders = set()
    for k in range(20):
        seed_box[0] = k
        finish.clear()
        t = MemoryTranscript()
        model = ScriptedModel([turn("nap", 3, 1), turn("anap", 3, 2), reply("done", usage=(10, 5))])
        if driver == "run":
            run(model, [nap, anap], "go", Budget(max_steps=5), transcript=t, run_id="r")
        else:
            asyncio.run(arun(model, [nap, anap], "go", Budget(max_steps=5), transcript=t, run_id="r"))
        assert verify_lines(lines_of(t)).ok
        transcripts.add(b"".join(lines_of(t)))
        orders.add(tuple(finish))
    assert len(orders) > 1, "the tools always finished in the same order: the test proves nothing"
    assert len(transcripts) == 1


def test_observer_sees_every_start_and_finish_on_the_driver_thread() -> None:
    seen: list[tuple[str, str, bool]] = []
    main = threading.get_ident()

    def obs(ev: Any) -> None:
        if isinstance(ev, (ToolStarted, ToolFinished)):
            cid = ev.call.id if isinstance(ev, ToolStarted) else ev.result.call_id
            seen.append((type(ev).__name__, cid, threading.get_ident() == main))

    run(script("q", 4), [ro("q", lambda i: i)], "go", Budget(max_steps=5), observer=obs)
    assert sorted(c for k, c, _ in seen if k == "ToolStarted") == [f"call_1_{i}" for i in range(4)]
    assert sorted(c for k, c, _ in seen if k == "ToolFinished") == [f"call_1_{i}" for i in range(4)]
    assert all(on_main for *_, on_main in seen)


def test_run_without_an_observer_makes_no_tool_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody observes, so a call one at a time makes no ``ToolStarted``/``ToolFinished`` (they were a
    fiftieth of a step's instructions in bench/peers); with an observer each call still makes both, in order."""
    import importlib

    run_module = importlib.import_module("agentloop.run")  # the module, not the function the package exports

    made: list[str] = []
    monkeypatch.setattr(run_module, "ToolStarted", lambda c: made.append("started") or ToolStarted(c))
    monkeypatch.setattr(run_module, "ToolFinished", lambda r: made.append("finished") or ToolFinished(r))
    writer = Tool("w", "w", OBJ, lambda i: i, read_only=False)
    model = ScriptedModel([reply("", [("w", {"i": 0}), ("w", {"i": 1})], usage=(1, 1)), reply("ok", usage=(1, 1))])
    assert run(model, [writer], "go", Budget(max_steps=5)).stop_reason == "no_tool_calls"
    assert made == []
    seen: list[Any] = []
    model = ScriptedModel([reply("", [("w", {"i": 0}), ("w", {"i": 1})], usage=(1, 1)), reply("ok", usage=(1, 1))])
    run(model, [writer], "go", Budget(max_steps=5), observer=seen.append)
    assert made == ["started", "finished"] * 2
    assert [type(e).__name__ for e in seen if isinstance(e, (ToolStarted, ToolFinished))] == ["ToolStarted", "ToolFinished"] * 2


def test_ctrl_c_in_run_cancels_every_call_in_flight() -> None:
    started = threading.Semaphore(0)
    stopped: list[int] = []

    def hold(i: int) -> int:
        flag = interrupt_flag()
        assert flag is not None
        started.release()
        if flag.wait(20):
            stopped.append(i)
        return i

    def press_ctrl_c() -> None:
        for _ in range(4):
            started.acquire(timeout=20)
        _thread.interrupt_main()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    t = MemoryTranscript()
    began = time.monotonic()
    r = run(script("hold", 4), [ro("hold", hold)], "go", Budget(max_steps=5), transcript=t)
    took = time.monotonic() - began
    assert r.stop_reason == "interrupted"
    assert took < 10
    deadline = time.monotonic() + 5
    while len(stopped) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(stopped) == [0, 1, 2, 3]
    assert [rec.kind for rec in t.records][-1] == "stop"
    assert not any(rec.kind == "tool_result" for rec in t.records)


def test_cancelling_arun_sets_the_flag_of_every_sync_call_in_flight() -> None:
    started = threading.Semaphore(0)
    stopped: list[int] = []

    def hold(i: int) -> int:
        flag = interrupt_flag()
        assert flag is not None
        started.release()
        if flag.wait(20):
            stopped.append(i)
        return i

    async def main() -> Any:
        task = asyncio.ensure_future(arun(script("hold", 3), [ro("hold", hold)], "go", Budget(max_steps=5)))
        for _ in range(3):
            await asyncio.to_thread(started.acquire, True, 20)
        task.cancel()
        return await task

    r = asyncio.run(main())
    assert r.stop_reason == "interrupted"
    deadline = time.monotonic() + 5
    while len(stopped) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(stopped) == [0, 1, 2]


def test_no_flag_outside_a_tool_call() -> None:
    assert interrupt_flag() is None


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_shared_ledger_balances_after_parallel_turns_and_after_an_interrupt(driver: str) -> None:
    ledger = LocalLedger(max_usd_micros=10_000_000)
    model = ScriptedModel([turn("q", 6, 1), turn("q", 6, 2), reply("done", usage=(10, 5))])
    tools = [ro("q", lambda i: i)]
    if driver == "run":
        r = run(model, tools, "go", Budget(max_steps=5, max_usd_micros=1_000_000), ledger=ledger, model_name="gpt-4o")
    else:
        r = asyncio.run(arun(model, tools, "go", Budget(max_steps=5, max_usd_micros=1_000_000), ledger=ledger, model_name="gpt-4o"))
    assert r.stop_reason == "no_tool_calls"
    assert ledger.reserved == 0 and ledger.reserved_tokens == 0
    assert ledger.spent == r.spent_micros > 0

    def boom(i: int) -> int:
        if i == 2:
            raise KeyboardInterrupt
        return i

    ledger2 = LocalLedger(max_usd_micros=10_000_000)
    r2 = run(script("b", 4), [ro("b", boom)], "go", Budget(max_steps=5, max_usd_micros=1_000_000), ledger=ledger2, model_name="gpt-4o")
    assert r2.stop_reason == "interrupted"
    assert ledger2.reserved == 0 and ledger2.spent == r2.spent_micros


def test_run_parallel_serves_other_executors_in_call_order() -> None:
    from agentloop.events import ToolCall, ToolResult
    from agentloop.run import run_parallel

    barrier = threading.Barrier(4, timeout=10)
    seen: list[Any] = []

    def invoke(c: ToolCall) -> ToolResult:
        barrier.wait()
        time.sleep(random.uniform(0, 0.02))
        return ToolResult(c.id, c.name, True, content=c.arguments["i"])

    calls = [ToolCall(f"c{i}", "t", {"i": i}) for i in range(4)]
    out = run_parallel(calls, invoke, emit=seen.append)
    assert [r.content for r in out] == [0, 1, 2, 3]
    assert sum(isinstance(e, ToolStarted) for e in seen) == 4 and sum(isinstance(e, ToolFinished) for e in seen) == 4
