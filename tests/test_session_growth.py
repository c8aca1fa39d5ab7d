"""A session file grows with what happened: a later run_start refers to the conversation it continues.

Issue 15, point 7. A ``run_start`` after the first in a conversation records
only the messages added since (format 2, ``agentloop.conversation`` rule 1);
resume and replay rebuild the rest from the records before it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.store import Session
from agentloop.conversation import Continues, Conversation
from agentloop.loop import LoopConfig, start
from agentloop.replay import ReplayError, replay
from agentloop.transcript import read_records, verify_file


def _script(tmp_path: Path, prompts: int) -> str:
    steps: list[dict[str, Any]] = []
    for i in range(prompts):
        steps.append({"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": f"f{i % 3}.txt"}}], "usage": [100, 10]})
        steps.append({"text": f"answer {i}", "usage": [200, 5]})
    p = tmp_path / "script.json"
    p.write_text(json.dumps(steps))
    return f"scripted:{p}"


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with three 2 KB files."""
    d = proj
    for i in range(3):
        (d / f"f{i}.txt").write_text(f"file {i}\n" + "x" * 2000 + "\n")
    return d


def _run_starts(path: str) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(path) if r.kind == "run_start"]


def test_a_later_run_start_refers_to_the_conversation_instead_of_repeating_it(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 4))
    for i in range(4):
        assert a.ask(f"read file {i}").answer == f"answer {i}"
    path = a.session.path
    a.close("done")
    starts = _run_starts(path)
    assert starts[0]["format"] == 1 and "continues" not in starts[0]
    for p in starts[1:]:
        assert p["format"] == 2
        # only the new prompt is recorded; the rest is named by the record before it
        assert [m["role"] for m in p["messages"]] == ["user"]
        assert p["continues"]["messages"] > 1
    assert verify_file(path).ok


def test_each_run_start_names_the_record_just_before_it(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 3))
    for i in range(3):
        a.ask(f"read file {i}")
    path = a.session.path
    a.close("done")
    recs = list(read_records(path))
    for i, r in enumerate(recs):
        if r.kind == "run_start" and "continues" in r.payload:
            assert r.payload["continues"]["seq"] == i - 1
            assert r.payload["continues"]["hash"] == recs[i - 1].hash


def test_replay_of_a_continued_session_is_byte_identical(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 5))
    for i in range(5):
        a.ask(f"read file {i}")
    path = a.session.path
    a.close("done")
    r = replay(path, mode="full")
    assert r.equal, r.summary(path)


def test_resume_rebuilds_the_same_conversation_and_continues_it(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 4))
    for i in range(3):
        a.ask(f"read file {i}")
    sid, before = a.session.id, [dict(m) for m in a.session.messages]
    a.close("done")
    s = Session.resume(str(proj), sid)
    try:
        assert s.messages == before
    finally:
        s.close()
    b = Agent(cwd=str(proj), model=_script(tmp_path, 4), resume=sid)
    b.ask("read file 3")  # the resumed conversation, rebuilt from format 2 records, is continued again
    b.ask("read file 4")
    path = b.session.path
    b.close("done")
    starts = _run_starts(path)
    assert [p["format"] for p in starts] == [1, 2, 2, 2, 2]
    assert verify_file(path).ok
    assert replay(path, mode="full").equal


def test_a_changed_conversation_is_recorded_whole(tmp_path: Path) -> None:
    """The loop writes the short form only when the messages really begin with the rebuilt conversation."""
    cfg = _config()
    prior = Continues(4, "ab" * 32, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    same = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]
    _, out = start(cfg, same, prior)
    p = out[0].payload  # type: ignore[union-attr]
    assert p["format"] == 2 and p["messages"] == [{"role": "user", "content": "again"}] and p["continues"]["messages"] == 2
    changed = [{"role": "system", "content": "new"}, *same[1:]]
    _, out = start(cfg, changed, prior)
    p = out[0].payload  # type: ignore[union-attr]
    assert p["format"] == 1 and "continues" not in p and len(p["messages"]) == 3


def _config() -> LoopConfig:
    from agentloop.budget import Budget, Price

    return LoopConfig(model="m", budget=Budget(max_steps=3, max_usd_micros=1000), price=Price(1, 1), tools=(), manifest=())


def test_replay_refuses_a_reference_to_a_record_that_is_not_the_one_before(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 2))
    a.ask("read file 0")
    a.ask("read file 1")
    path = a.session.path
    a.close("done")
    lines = Path(path).read_bytes().splitlines(keepends=True)
    # re-chain the file with the second run_start pointing one record too far back
    from agentloop.transcript import MemoryTranscript

    mem = MemoryTranscript()
    for line in lines:
        obj = orjson.loads(line)
        if obj["kind"] == "run_start" and "continues" in obj["payload"]:
            obj["payload"]["continues"]["seq"] -= 1
        mem.append(obj["kind"], obj["payload"])
    forged = tmp_path / "forged.jsonl"
    forged.write_bytes(mem.getvalue())
    assert verify_file(str(forged)).ok  # the chain is whole: only replay can tell
    with pytest.raises(ReplayError, match="continues a record that is not the one before it"):
        replay(str(forged), mode="full")


def test_the_rebuilt_conversation_follows_turns_results_and_masking() -> None:
    conv = Conversation()
    conv.feed("run_start", {"format": 1, "messages": [{"role": "user", "content": "go"}]})
    conv.feed("model_turn", {"reply": {"text": "", "tool_calls": [{"id": "c1", "name": "Read", "arguments": {"p": 1}}]}})
    conv.feed("tool_result", {"call_id": "c1", "name": "Read", "ok": True, "content": "x" * 100})
    conv.feed("context", {"masked": ["c1"], "where": "s.jsonl"})
    m = conv.messages
    assert [x["role"] for x in m] == ["user", "assistant", "tool"]
    assert m[2]["content"].startswith("[tool output masked: 100 chars")
    # an interrupted call is answered, as the next run sends it
    conv.feed("model_turn", {"reply": {"text": "", "tool_calls": [{"id": "c2", "name": "Bash", "arguments": {}}]}})
    assert conv.messages[-1]["tool_call_id"] == "c2" and conv.messages[-1]["ok"] is False


# -- the tool schemas, recorded once (conversation rule 3) --


def test_a_later_run_start_refers_to_the_tool_list_recorded_before(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 4))
    for i in range(4):
        a.ask(f"read file {i}")
    path = a.session.path
    a.close("done")
    recs = list(read_records(path))
    starts = [(r.seq, r.payload) for r in recs if r.kind == "run_start"]
    first_seq, first = starts[0]
    assert isinstance(first["config"]["tools"], list) and first["config"]["tools"]
    for _, p in starts[1:]:
        assert p["config"]["tools"] == {"same_as": first_seq}  # the schemas are stored once
    assert verify_file(path).ok
    r = replay(path, mode="full")
    assert r.equal, r.summary(path)


def test_a_changed_tool_list_is_recorded_again_and_later_runs_refer_to_the_new_one(tmp_path: Path) -> None:
    cfg = _config()
    listed = [{"name": "Read", "description": "read a file", "parameters": {"type": "object"}}]
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    same = dataclasses.replace(cfg, manifest=tuple(listed))
    _, out = start(same, [*msgs, {"role": "user", "content": "again"}], Continues(4, "ab" * 32, msgs, (2, listed)))
    assert out[0].payload["config"]["tools"] == {"same_as": 2}  # type: ignore[union-attr]
    other = dataclasses.replace(cfg, manifest=({**listed[0], "description": "changed"},))
    _, out = start(other, [*msgs, {"role": "user", "content": "again"}], Continues(4, "ab" * 32, msgs, (2, listed)))
    assert out[0].payload["config"]["tools"] == [{**listed[0], "description": "changed"}]  # type: ignore[union-attr]
    conv = Conversation()
    conv.feed("run_start", {"format": 1, "config": {"tools": listed}, "messages": msgs}, 0)
    conv.feed("tools_changed", {"step": 1, "tools": [*listed, {"name": "Late"}]}, 3)
    conv.feed("run_start", {"format": 2, "config": {"tools": {"same_as": 3}}, "continues": {}, "messages": []}, 5)
    assert conv.tools == (3, [*listed, {"name": "Late"}])


def _rechained(path: str, tmp_path: Path, edit: Any) -> str:
    from agentloop.transcript import MemoryTranscript

    mem = MemoryTranscript()
    for line in Path(path).read_bytes().splitlines():
        obj = orjson.loads(line)
        edit(obj)
        mem.append(obj["kind"], obj["payload"])
    forged = tmp_path / "forged.jsonl"
    forged.write_bytes(mem.getvalue())
    assert verify_file(str(forged)).ok  # the chain is whole: only replay can tell
    return str(forged)


@pytest.mark.parametrize("target", ["a record without a list", "a record after it", "not a number"])
def test_replay_refuses_a_tool_reference_to_anything_but_the_latest_list(tmp_path: Path, proj: Path, target: str) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 2))
    a.ask("read file 0")
    a.ask("read file 1")
    path = a.session.path
    a.close("done")
    n = len(list(read_records(path)))

    def edit(obj: dict[str, Any]) -> None:
        tools = obj["payload"].get("config", {}).get("tools") if obj["kind"] == "run_start" else None
        if isinstance(tools, dict):
            tools["same_as"] = {"a record without a list": tools["same_as"] + 1, "a record after it": n - 1,
                                "not a number": "0"}[target]

    with pytest.raises(ReplayError, match=r"its run_start's tools refer to|config\.tools\.same_as is a string"):
        replay(_rechained(path, tmp_path, edit), mode="full")


def test_a_session_with_its_tools_stored_once_resumes_and_replays(tmp_path: Path, proj: Path) -> None:
    a = Agent(cwd=str(proj), model=_script(tmp_path, 4))
    a.ask("read file 0")
    a.ask("read file 1")
    sid = a.session.id
    a.close("done")
    b = Agent(cwd=str(proj), model=_script(tmp_path, 4), resume=sid)
    b.ask("read file 2")
    path = b.session.path
    b.close("done")
    starts = [(r.seq, r.payload["config"]["tools"]) for r in read_records(path) if r.kind == "run_start"]
    # resume folds the records from the conversation's first run_start on: it knows the list and refers to it
    assert isinstance(starts[0][1], list) and starts[1][1] == starts[2][1] == {"same_as": starts[0][0]}
    r = replay(path, mode="full")
    assert r.equal, r.summary(path)
