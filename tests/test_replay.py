"""Replay: the same loop, answering from the record, in three modes."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop import (
    Budget,
    LocalLedger,
    MemoryTranscript,
    ModelReply,
    ToolError,
    TranscriptWriter,
    run,
    tool,
)
from agentloop import loop as loop_mod
from agentloop.demo import act_core, demo_tools
from agentloop.replay import ReplayError, ReplayExhausted, ReplayModel, replay
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import read_records, verify_file


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    act_core(str(d))
    return d


def _demo_files(d: Path) -> list[Path]:
    files = sorted(d.glob("demo-*.jsonl"))
    assert len(files) >= 5
    return files


def _write(tmp_path: Path, t: MemoryTranscript, name: str = "run.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(t.getvalue())
    return p


def _record(tmp_path: Path, script: list[Any], tools: Any = None, budget: Budget | None = None, **kw: Any) -> Path:
    t = MemoryTranscript()
    run(ScriptedModel(script), demo_tools() if tools is None else tools, "task", budget or Budget(max_steps=10), transcript=t, **kw)
    return _write(tmp_path, t)


# --- full mode -----------------------------------------------------------------


def test_full_replay_of_every_demo_transcript_is_byte_identical(demo_dir: Path, tmp_path: Path) -> None:
    for f in _demo_files(demo_dir):
        out = tmp_path / f"replay-{f.name}"
        r = replay(f, mode="full", out=out)
        assert r.equal, r.summary(f.name)
        assert out.read_bytes() == f.read_bytes()
        assert r.first_difference is None and r.differences == [] and r.warnings == []
        assert r.records == r.original_records == verify_file(f).count


def test_full_replay_runs_no_tool_code(tmp_path: Path) -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    path = _record(tmp_path, [reply("", [("count", {"n": 1})], step=1), reply("ok")], tools=[count])
    assert calls == [1]
    r = replay(path, tools=[count], mode="full")
    assert r.equal and calls == [1]


def test_a_changed_loop_gives_not_equal_and_names_the_first_differing_record(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = demo_dir / "demo-answer.jsonl"
    real = loop_mod.cost_micros
    monkeypatch.setattr(loop_mod, "cost_micros", lambda u, p: real(u, p) + 1)
    r = replay(f, mode="full")
    assert not r.equal
    d = r.first_difference
    assert d is not None
    assert (d.index, d.kind, d.replay_kind) == (2, "budget", "budget")
    assert any(c.startswith("$.cost_micros:") for c in d.changes)
    assert "record 2 (budget, step 1)" in r.summary()
    assert r.decisions_equal  # the same model turns and stop: only the money changed


def test_a_loop_that_asks_for_more_turns_than_recorded_ends_in_model_error(demo_dir: Path, tmp_path: Path) -> None:
    # A run stopped by a 3-step budget, written again (a fresh, valid chain) with a 4-step budget:
    # the loop now asks for a fourth turn that the record does not hold.
    looser = tmp_path / "looser.jsonl"
    with TranscriptWriter(looser) as w:
        for rec in read_records(demo_dir / "demo-budget-steps.jsonl"):
            payload = rec.payload
            if rec.kind == "run_start":
                payload["config"]["budget"]["max_steps"] = 4
            w.append(rec.kind, payload)
    assert verify_file(looser).ok
    r = replay(looser, mode="full")
    assert not r.equal and not r.decisions_equal
    assert r.result is not None and r.result.stop_reason == "model_error"
    assert "ReplayExhausted" in (r.result.error or "")


# --- refusing what does not verify --------------------------------------------


@pytest.mark.parametrize("mode", ["full", "live-tools", "dry-run"])
def test_a_tampered_transcript_is_refused_in_every_mode(demo_dir: Path, tmp_path: Path, mode: str) -> None:
    lines = (demo_dir / "demo-answer.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"sum":42', b'"sum":43')
    assert b'"sum":43' in lines[3]
    bad = tmp_path / "tampered.jsonl"
    bad.write_bytes(b"".join(lines))
    with pytest.raises(ReplayError, match=r"fails verification at record 3: hash_mismatch"):
        replay(bad, tools=demo_tools(), mode=mode)


def test_a_rehashed_but_relinked_record_is_refused_too(demo_dir: Path, tmp_path: Path) -> None:
    # the attacker fixes the record's own hash but cannot fix the next record's prev
    from agentloop.transcript import make_line

    lines = (demo_dir / "demo-answer.jsonl").read_bytes().splitlines(keepends=True)
    o = orjson.loads(lines[3])
    o["payload"]["content"] = {"sum": 43}
    _, lines[3] = make_line(o["seq"], o["prev"], o["kind"], o["payload"])
    bad = tmp_path / "relinked.jsonl"
    bad.write_bytes(b"".join(lines))
    with pytest.raises(ReplayError, match="prev_mismatch"):
        replay(bad, mode="full")


def test_a_torn_tail_and_garbage_are_refused(demo_dir: Path, tmp_path: Path) -> None:
    data = (demo_dir / "demo-answer.jsonl").read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[:-10])
    with pytest.raises(ReplayError, match="fails verification"):
        replay(torn)
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"not json\n")
    with pytest.raises(ReplayError, match="bad_json"):
        replay(junk)
    with pytest.raises(ReplayError, match="cannot read"):
        replay(tmp_path / "missing.jsonl")


def test_replay_refuses_to_overwrite_an_existing_output(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "exists.jsonl"
    out.write_bytes(b"x")
    with pytest.raises(ReplayError, match="exists and is not empty"):
        replay(demo_dir / "demo-answer.jsonl", out=out)


def test_unknown_mode_and_live_tools_without_tools_are_refused(demo_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown replay mode"):
        replay(demo_dir / "demo-answer.jsonl", mode="fast")
    with pytest.raises(ValueError, match="pass tools="):
        replay(demo_dir / "demo-answer.jsonl", mode="live-tools")


# --- live-tools and dry-run ----------------------------------------------------


def test_live_tools_replay_of_every_demo_transcript_is_equal_with_the_demo_tools(demo_dir: Path) -> None:
    for f in _demo_files(demo_dir):
        r = replay(f, tools=demo_tools(), mode="live-tools")
        assert r.equal, r.summary(f.name)


def test_live_tools_reports_every_divergence(tmp_path: Path) -> None:
    state = {"v": 1}

    @tool
    def reading() -> int:
        """A sensor."""
        return state["v"]

    script = [reply("", [("reading", {})], step=i) for i in (1, 2, 3)] + [reply("done")]
    path = _record(tmp_path, script, tools=[reading])
    state["v"] = 2
    r = replay(path, tools=[reading], mode="live-tools")
    assert not r.equal and r.decisions_equal
    results = [d for d in r.differences if d.kind == "tool_result"]
    assert [d.step for d in results] == [1, 2, 3]
    assert all("$.content: 1 -> 2" in d.changes for d in results)
    assert r.first_difference == results[0]
    assert r.summary().count("also:") == len(r.differences) - 1


def test_dry_run_skips_tools_and_counts_the_steps_that_depended_on_them(demo_dir: Path) -> None:
    r = replay(demo_dir / "demo-recover.jsonl", mode="dry-run")
    assert r.skipped_calls == 4
    assert [(n.run, n.step) for n in r.tool_dependent_steps] == [(1, 2), (1, 3), (1, 4), (1, 5)]
    assert not r.equal and r.decisions_equal
    assert "4 step(s) depended on tool output" in r.summary()
    tokens = replay(demo_dir / "demo-budget-tokens.jsonl", mode="dry-run")  # its tools never ran
    assert tokens.equal and tokens.skipped_calls == 0 and tokens.tool_dependent_steps == []


def test_dry_run_runs_no_tool_code(tmp_path: Path) -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    path = _record(tmp_path, [reply("", [("count", {"n": 1})], step=1), reply("ok")], tools=[count])
    replay(path, tools=[count], mode="dry-run")
    assert calls == [1]


# --- every way a run ends replays --------------------------------------------


def test_runs_that_ended_in_model_errors_replay_byte_identically(tmp_path: Path) -> None:
    for i, failure in enumerate([RuntimeError("provider down: 503"), KeyError("k"), ValueError(), lambda r: "not a reply"]):
        t = MemoryTranscript()
        run(ScriptedModel([reply("", [("echo", {"text": "x"})], step=1), failure]), demo_tools(), "t", Budget(max_steps=5), transcript=t)
        path = _write(tmp_path, t, f"err{i}.jsonl")
        kinds = [r.kind for r in read_records(path)]
        assert "model_error" in kinds
        r = replay(path)
        assert r.equal, r.summary()


@pytest.mark.parametrize("mode", ["full", "dry-run"])
def test_a_replay_that_runs_no_tool_makes_no_reference_cycles_so_pausing_the_collector_frees_all(mode: str, tmp_path: Path) -> None:
    # replay() pauses the collector for the whole replay in these modes: safe only while it makes no cycles
    t = MemoryTranscript()
    run(ScriptedModel([reply("", [("echo", {"text": f"{i}"})], step=i) for i in range(1, 201)] + [reply("done")]),
        demo_tools(), "t", Budget(max_steps=300), transcript=t)
    files = [_write(tmp_path, t, "long.jsonl"), *sorted((Path(__file__).parent / "golden").glob("v1-*.jsonl"))]
    gc.collect()
    gc.disable()
    try:
        for path in files:
            errors = sum(1 for r in read_records(path) if r.kind == "model_error" or (r.kind == "overrun" and r.payload.get("billed_at_reservation")))
            replay(path, mode=mode)
            left = gc.collect()
            # a recorded model error is raised again from a class made for it, and a class is a cycle: per error, not per step
            assert left <= 200 * errors, (path.name, left)
    finally:
        gc.enable()


def test_the_collector_is_running_again_after_a_replay_that_fails(demo_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((demo_dir / "demo-answer.jsonl").read_bytes().replace(b'"sum":42', b'"sum":43'))
    assert gc.isenabled()
    with pytest.raises(ReplayError):
        replay(bad, mode="full")
    assert gc.isenabled()
    replay(demo_dir / "demo-answer.jsonl", mode="dry-run")
    assert gc.isenabled()


def test_interrupted_runs_replay_byte_identically(tmp_path: Path) -> None:
    @tool
    def slow() -> str:
        """Interrupted."""
        raise KeyboardInterrupt

    def interrupt_model(req: Any) -> ModelReply:
        raise KeyboardInterrupt

    for i, script in enumerate([
        [reply("", [("slow", {})], step=1)],
        [reply("", [("echo", {"text": "x"})], step=1), interrupt_model],
    ]):
        t = MemoryTranscript()
        reg = demo_tools()
        reg.register(slow)
        res = run(ScriptedModel(script), reg, "t", Budget(max_steps=5), transcript=t)
        assert res.stop_reason == "interrupted"
        path = _write(tmp_path, t, f"int{i}.jsonl")
        r = replay(path, mode="full")
        assert r.equal, r.summary()


def test_a_run_refused_by_a_shared_ledger_replays_byte_identically(tmp_path: Path) -> None:
    t = MemoryTranscript()
    script = [reply("", [("echo", {"text": "x"})], step=i) for i in range(1, 11)]
    res = run(ScriptedModel(script), demo_tools(), "t", Budget(max_steps=10), transcript=t, ledger=LocalLedger(9_200))
    assert res.stop_reason == "cost_budget" and "ledger" in (res.error or "")
    r = replay(_write(tmp_path, t))
    assert r.equal, r.summary()


def test_sentinel_loop_detection_and_token_budget_replay_byte_identically(tmp_path: Path) -> None:
    cases: list[tuple[list[Any], dict[str, Any], Budget]] = [
        ([reply("DONE", [("echo", {"text": "x"})])], {"sentinel": "DONE"}, Budget(max_steps=5)),
        ([reply("", [("echo", {"text": "same"})], step=i) for i in range(1, 4)], {"loop_threshold": 3}, Budget(max_steps=9)),
        ([reply("", [("echo", {"text": "x"})], usage=(900, 200))], {}, Budget(max_tokens=1000)),
    ]
    for i, (script, kw, budget) in enumerate(cases):
        t = MemoryTranscript()
        run(ScriptedModel(script), demo_tools(), "t", budget, transcript=t, **kw)
        r = replay(_write(tmp_path, t, f"c{i}.jsonl"), tools=demo_tools(), mode="live-tools")
        assert r.equal, r.summary()


def test_a_session_of_several_runs_with_other_records_replays_whole(tmp_path: Path) -> None:
    t = MemoryTranscript()
    t.append("session_start", {"session": "s1", "cwd_hash": "0123456789abcdef"})
    r1 = run(ScriptedModel([reply("", [("add", {"a": 1, "b": 2})], step=1), reply("3")]), demo_tools(), "1+2?",
             Budget(max_steps=5), transcript=t, run_id="r1")
    t.append("hook", {"event": "Stop", "exit": 0})
    msgs = r1.messages + [{"role": "user", "content": "and 3+4?"}]
    run(ScriptedModel([reply("", [("add", {"a": 3, "b": 4})], step=1), reply("7")]), demo_tools(), msgs,
        Budget(max_steps=5), transcript=t, run_id="r2")
    t.append("session_end", {"reason": "exit"})
    path = _write(tmp_path, t)
    for mode in ("full", "live-tools"):
        r = replay(path, tools=demo_tools(), mode=mode)
        assert r.equal, r.summary()
        assert len(r.results) == 2 and [x.answer for x in r.results] == ["3", "7"]
    dry = replay(path, mode="dry-run")
    assert [(n.run, n.step) for n in dry.tool_dependent_steps] == [(1, 2), (2, 2)]


def test_a_foreign_record_inside_a_run_keeps_its_place(tmp_path: Path) -> None:
    t = MemoryTranscript()
    reg = demo_tools()

    def executor(calls: Any) -> Any:
        t.append("hook", {"event": "PreToolUse", "tools": [c.name for c in calls]})
        return [reg.invoke(c) for c in calls]

    run(ScriptedModel([reply("", [("echo", {"text": "x"})], step=1), reply("ok")]), reg, "t", Budget(max_steps=5),
        transcript=t, executor=executor)
    path = _write(tmp_path, t)
    assert [r.kind for r in read_records(path)][3] == "hook"
    assert replay(path).equal


def test_a_cut_off_run_is_replayed_as_far_as_it_goes_and_said_so(tmp_path: Path, demo_dir: Path) -> None:
    lines = (demo_dir / "demo-recover.jsonl").read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:7]))
    r = replay(cut)
    assert any("no stop record" in w for w in r.warnings)
    assert r.equal and r.records == 7  # the replay stops where the record does
    assert r.result is not None and r.result.stop_reason == "interrupted"


def test_the_replay_model_answers_in_order_and_keeps_raw_without_reading_it() -> None:
    t = MemoryTranscript()
    run(ScriptedModel([reply("a", [("echo", {"text": "x"})], step=1), reply("b")]), demo_tools(), "t", Budget(max_steps=5), transcript=t)
    turns = [r for r in t.records if r.kind == "model_turn"]
    m = ReplayModel(turns)
    from agentloop.events import ModelRequest

    req = ModelRequest([], (), 10)
    assert m.complete(req).text == "a" and m.complete(req).text == "b"
    with pytest.raises(ReplayExhausted, match="holds 2 model turns"):
        m.complete(req)


def test_a_failing_tool_result_with_tool_error_replays_in_live_mode(tmp_path: Path) -> None:
    @tool
    def picky(x: int) -> int:
        """Refuses odd numbers."""
        if x % 2:
            raise ToolError(f"{x} is odd")
        return x

    path = _record(tmp_path, [reply("", [("picky", {"x": 3}), ("picky", {"x": 4})], step=1), reply("ok")], tools=[picky])
    assert replay(path, tools=[picky], mode="live-tools").equal


def test_a_run_with_model_loop_checks_replays_byte_identically_charging_the_recorded_side_calls(tmp_path: Path) -> None:
    from agentloop.agent.context.loop_check import LoopCheck
    from agentloop.budget import Price

    cheap = ScriptedModel([reply("NOT_LOOPING", usage=(50, 2)), reply("LOOPING", usage=(60, 2))], name="cheap")
    check = LoopCheck(cheap, model_name="cheap", price=Price(input=1_000_000, output=2_000_000), after=2, every=2)
    script = [reply("", [("echo", {"text": f"round {i}"})], usage=(100, 10), step=i) for i in range(1, 10)]
    t = MemoryTranscript()
    res = run(ScriptedModel(script), demo_tools(), "t", Budget(max_steps=20), transcript=t, prepare=check.prepare)
    assert res.stop_reason == "loop_detected" and cheap.remaining == 0
    kinds = [r.kind for r in t.records]
    assert kinds.count("loop_check") == 2
    path = _write(tmp_path, t)
    r = replay(path)  # no cheap model, no loop check: the record answers for both
    assert r.equal, r.summary()
    assert r.result is not None and r.result.spent_micros == res.spent_micros


def test_the_demo_replay_act_holds_every_claim_and_refuses_a_damaged_file(tmp_path: Path) -> None:
    from agentloop.demo.replay_act import act_replay

    act_core(str(tmp_path))
    runs = act_replay(str(tmp_path))
    assert len(runs) >= 6
    assert all(r.held for r in runs), [(r.name, c.text) for r in runs for c in r.claims if not c.held]
    assert (tmp_path / "replay-answer.jsonl").read_bytes() == (tmp_path / "demo-answer.jsonl").read_bytes()
    # a file that fails verification is listed as refused
    p = tmp_path / "demo-recover.jsonl"
    p.write_bytes(p.read_bytes().replace(b'"sum":42', b'"sum":41'))
    again = {r.name: r for r in act_replay(str(tmp_path))}
    assert again["replay recover"].stop_reason == "refused" and again["replay recover"].held


def test_the_demo_replay_act_fails_its_claims_when_the_loop_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.demo.replay_act import act_replay

    act_core(str(tmp_path))
    real = loop_mod.cost_micros
    monkeypatch.setattr(loop_mod, "cost_micros", lambda u, p: real(u, p) + 1)
    runs = act_replay(str(tmp_path))
    failed = {c.text for r in runs for c in r.claims if not c.held}
    assert "full replay (no tool runs) writes a byte-identical transcript" in failed


def test_replay_takes_the_file_bytes_too(demo_dir: Path) -> None:
    data = (demo_dir / "demo-answer.jsonl").read_bytes()
    r = replay(data)
    assert r.equal and b"".join(r.lines) == data
    with pytest.raises(ReplayError, match="holds no records"):
        replay(b"")


def test_a_real_agent_session_file_replays_byte_identically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("hello notes\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "Reading it.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]},
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf /"}}], "usage": [150, 10]},
        {"text": "It says hello notes.", "usage": [200, 5]},
        {"text": "", "tool_calls": [{"name": "Glob", "arguments": {"pattern": "*.txt"}}]},
        {"text": "One file."},
    ]))
    a = Agent(cwd=str(proj), model=f"scripted:{script}")
    assert a.ask("what is in notes.txt?").answer == "It says hello notes."
    assert a.ask("and which txt files?").answer == "One file."
    a.close("prompt_input_exit")
    kinds = [r.kind for r in read_records(a.session.path)]
    assert kinds[0] == "session_start" and kinds.count("run_start") == 2 and kinds[-1] == "session_end"
    r = replay(a.session.path)
    assert r.equal, r.summary()
    assert [x.answer for x in r.results] == ["It says hello notes.", "One file."]


def test_a_ctrl_c_during_a_replay_stops_it_instead_of_being_reported_as_a_difference(tmp_path: Path) -> None:
    # In live-tools mode a tool stands for the person pressing Ctrl+C in the middle of the replay.
    pressed = {"at": 3, "calls": 0}

    @tool
    def count(n: int) -> int:
        """Counts."""
        pressed["calls"] += 1
        if pressed["calls"] == pressed["at"]:
            raise KeyboardInterrupt
        return n

    t = MemoryTranscript()
    pressed["at"] = 0  # never, while recording
    run(ScriptedModel([reply("", [("count", {"n": i})], step=i) for i in range(1, 6)] + [reply("done")]),
        [count], "count", Budget(max_steps=10), transcript=t)
    path = _write(tmp_path, t, "count.jsonl")
    pressed.update(at=3, calls=0)
    with pytest.raises(KeyboardInterrupt):
        replay(path, tools=[count], mode="live-tools")
    assert gc.isenabled()
    pressed.update(at=0, calls=0)
    assert replay(path, tools=[count], mode="live-tools").equal
    # while a run that the record holds as interrupted still replays equal
    assert replay(Path(__file__).parent / "golden" / "v1-interrupted.jsonl", mode="full").equal
