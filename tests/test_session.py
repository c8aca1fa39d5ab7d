"""Sessions: where they live, resuming from the tail, the lock, listing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from agentloop import Budget, run
from agentloop.agent.session.store import (
    Session,
    SessionBusy,
    SessionError,
    close_dangling_calls,
    latest_id,
    list_sessions,
    new_session_id,
    rebuild,
    resolve_id,
    sessions_dir,
)
from agentloop.testing import ScriptedModel, reply
from agentloop.tools import tool
from agentloop.transcript import verify_file


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _turn(s: Session, prompt: str, steps: list, max_steps: int = 10):  # type: ignore[no-untyped-def]
    model = ScriptedModel(steps)
    msgs = [*s.messages, {"role": "user", "content": prompt}]
    res = run(model, [add], msgs, Budget(max_steps=max_steps), transcript=s, run_id=f"{s.id}/x")
    s.messages = list(res.messages)
    close_dangling_calls(s.messages)
    s.stats.turns += 1
    s.stats.spent_micros += res.spent_micros
    s.append("session_cost", s.stats.to_json())
    return res


def test_sessions_live_under_the_real_path_hash_so_a_symlink_finds_them(tmp_path):
    real = tmp_path / "proj"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    home = str(tmp_path / "home")
    assert sessions_dir(str(link), home) == sessions_dir(str(real), home)
    d = sessions_dir(str(real), home)
    parts = d.split(os.sep)
    assert parts[-3] == "projects" and len(parts[-2]) == 16 and parts[-1] == "sessions"
    assert int(parts[-2], 16) >= 0


def test_session_ids_sort_in_time_order():
    from datetime import datetime, timezone

    a = new_session_id(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    b = new_session_id(datetime(2026, 1, 2, 3, 4, 6, tzinfo=timezone.utc))
    c = new_session_id(datetime(2026, 11, 1, 0, 0, 0, tzinfo=timezone.utc))
    assert a.startswith("20260102-030405-") and sorted([c, b, a]) == [a, b, c]


def test_every_record_is_on_disk_as_soon_as_it_is_written(tmp_path):
    s = Session.create(str(tmp_path), str(tmp_path / "home"))
    s.note("session_start", {"x": 1})
    assert not os.path.exists(s.path), "a session where nothing happened has no file yet"
    seen = []

    def model_step(req):  # type: ignore[no-untyped-def]
        with open(s.path, "rb") as f:
            seen.append(sum(1 for _ in f))
        return reply("done", usage=(10, 2))

    _turn(s, "hi", [model_step])
    assert seen == [2], "session_start and run_start were on disk before the model was called"
    s.close()
    assert verify_file(s.path).ok


def test_a_resumed_session_continues_the_same_chain_and_rebuilds_its_messages(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    s.messages = [{"role": "system", "content": "sys"}]
    _turn(s, "first", [reply("", [("add", {"a": 1, "b": 2})], usage=(10, 5)), reply("three", usage=(12, 1))])
    _turn(s, "second", [reply("ok", usage=(20, 1))])
    in_memory = s.messages
    stats = s.stats.to_json()
    count = s.count
    s.close()

    r = Session.resume(cwd, s.id, home)
    assert r.messages == in_memory
    assert r.stats.to_json() == stats
    assert r.count == count
    _turn(r, "third", [reply("fine", usage=(30, 1))])
    r.close()
    rep = verify_file(r.path)
    assert rep.ok and rep.count == count + 4 + 1  # run_start, model_turn, budget, stop, session_cost


def test_resume_reads_only_the_tail(tmp_path, monkeypatch):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    s.messages = [{"role": "system", "content": "sys"}]
    for i in range(300):
        _turn(s, f"p{i}", [reply(f"a{i}", usage=(10, 1))])
        s.messages = s.messages[-4:]  # as compaction would keep it bounded
    s.close()
    size = os.path.getsize(s.path)
    import agentloop.agent.session.store as mod

    read = []
    real_open = open

    class Counting:
        def __init__(self, f):  # type: ignore[no-untyped-def]
            self.f = f

        def __getattr__(self, k):  # type: ignore[no-untyped-def]
            return getattr(self.f, k)

        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *a):  # type: ignore[no-untyped-def]
            self.f.close()

        def read(self, n=-1):  # type: ignore[no-untyped-def]
            data = self.f.read(n)
            read.append(len(data))
            return data

    monkeypatch.setattr(mod, "open", lambda p, m="r", *a, **k: Counting(real_open(p, m, *a, **k)), raising=False)
    r = Session.resume(cwd, s.id, home)
    assert r.messages[-1] == {"role": "assistant", "content": "a299"}
    assert sum(read) < size / 4, f"resume read {sum(read)} of {size} bytes"
    r.close()


def test_a_second_process_is_refused_and_writes_nothing(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    _turn(s, "hi", [reply("yo", usage=(1, 1))])
    before = open(s.path, "rb").read()
    code = textwrap.dedent(
        f"""
        import sys
        from agentloop.agent.session.store import Session, SessionBusy
        try:
            Session.resume({cwd!r}, {s.id!r}, {home!r})
        except SessionBusy as exc:
            print(exc); sys.exit(3)
        sys.exit(0)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr
    assert f"session {s.id} is in use by another agentloop process (pid {os.getpid()})" in p.stdout
    assert open(s.path, "rb").read() == before
    s.close()
    # Released: now the other process gets it.
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_lock_is_per_open_so_two_opens_in_one_process_conflict_too(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    _turn(s, "hi", [reply("yo", usage=(1, 1))])
    with pytest.raises(SessionBusy):
        Session.resume(cwd, s.id, home)
    s.close()
    Session.resume(cwd, s.id, home).close()


def test_an_interrupted_run_leaves_calls_that_are_answered_on_resume(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)

    def boom(**kw):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    from agentloop.tools import Tool

    slow = Tool("slow", "slow", {"type": "object"}, boom)
    msgs = [{"role": "user", "content": "go"}]
    res = run(ScriptedModel([reply("", [("slow", {})], usage=(1, 1))]), [slow], msgs, Budget(max_steps=5), transcript=s)
    assert res.stop_reason == "interrupted"
    s.close()
    r = Session.resume(cwd, s.id, home)
    last = r.messages[-1]
    assert last["role"] == "tool" and last["ok"] is False and "interrupted" in last["content"]
    assert r.messages[-2]["tool_calls"][0]["id"] == last["tool_call_id"]
    r.close()


def test_a_torn_tail_from_a_crash_is_cut_on_resume_and_the_chain_goes_on(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    _turn(s, "hi", [reply("yo", usage=(1, 1))])
    s.close()
    good = open(s.path, "rb").read()
    with open(s.path, "ab") as f:
        f.write(b'{"hash":"00')  # a crash in the middle of an append
    r = Session.resume(cwd, s.id, home)
    assert open(r.path, "rb").read().startswith(good)
    assert [m["content"] for m in r.messages if m["role"] != "system"] == ["hi", "yo"]
    _turn(r, "again", [reply("still here", usage=(1, 1))])
    r.close()
    assert verify_file(r.path).ok
    # What follows the good prefix is whole records that go on from it; the torn
    # bytes are gone. (Searching the file for b'{"hash":"00' is no test: one real
    # record in 256 starts that way.)
    after = open(r.path, "rb").read()[len(good):]
    lines = after.splitlines()
    assert after.endswith(b"\n") and lines
    first = json.loads(good.splitlines()[-1])["seq"] + 1
    assert [json.loads(x)["seq"] for x in lines] == list(range(first, first + len(lines)))


def test_a_changed_record_in_the_tail_is_refused(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)
    _turn(s, "hi", [reply("the answer", usage=(1, 1))])
    s.close()
    data = open(s.path, "rb").read()
    assert data.count(b"the answer") >= 2
    # Change the model_turn (not the last line, which read_tail checks itself).
    lines = data.split(b"\n")
    i = next(i for i, ln in enumerate(lines) if b'"kind":"model_turn"' in ln)
    lines[i] = lines[i].replace(b"the answer", b"the ANSWER")
    open(s.path, "wb").write(b"\n".join(lines))
    with pytest.raises(SessionError, match="record 1 .*hash_mismatch"):
        Session.resume(cwd, s.id, home)


def test_listing_shows_date_first_prompt_turns_cost_and_a_verified_mark(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    a = Session.create(cwd, home, sid="20260101-000000-aaaaaa")
    a.note("session_start", {"started_at": "2026-01-01T00:00:00Z"})
    _turn(a, "fix the bug", [reply("done", usage=(1000, 100))])
    _turn(a, "and the test", [reply("done", usage=(1000, 100))])
    a.close()
    b = Session.create(cwd, home, sid="20260102-000000-bbbbbb")
    _turn(b, "second session", [reply("ok", usage=(1, 1))])
    b.close()
    found = {x.id: x for x in list_sessions(cwd, home)}
    sa = found[a.id]
    assert (sa.first_prompt, sa.turns, sa.verified, sa.started) == ("fix the bug", 2, True, "2026-01-01T00:00:00Z")
    assert sa.spent_micros == a.stats.spent_micros > 0
    assert found[b.id].started == "2026-01-02T00:00:00Z"  # from the id when no session_start
    # Negative control: a changed byte anywhere is caught by the listing's verification.
    data = bytearray(open(a.path, "rb").read())
    i = data.index(b"fix the bug")
    data[i] = ord("F")
    open(a.path, "wb").write(bytes(data))
    again = {x.id: x for x in list_sessions(cwd, home)}
    assert again[a.id].verified is False and "hash_mismatch" in (again[a.id].problem or "")
    assert again[b.id].verified is True


def test_ids_resolve_by_unique_prefix(tmp_path):
    home, cwd = str(tmp_path / "home"), str(tmp_path)
    for sid in ("20260101-000000-aaaaaa", "20260101-000000-aaabbb", "20260102-000000-cccccc"):
        s = Session.create(cwd, home, sid=sid)
        _turn(s, "x", [reply("y", usage=(1, 1))])
        s.close()
    d = sessions_dir(cwd, home)
    assert resolve_id(d, "20260102") == "20260102-000000-cccccc"
    with pytest.raises(SessionError, match="ambiguous"):
        resolve_id(d, "20260101-000000-aaa")
    with pytest.raises(SessionError, match="no session"):
        resolve_id(d, "1999")
    with pytest.raises(SessionError, match="not a session id"):
        resolve_id(d, "../x")
    os.utime(os.path.join(d, "20260101-000000-aaaaaa.jsonl"), (4e9, 4e9))
    assert latest_id(cwd, home) == "20260101-000000-aaaaaa"


def test_rebuild_matches_the_loop_for_every_kind_of_turn(tmp_path):
    s = Session.create(str(tmp_path), str(tmp_path / "home"))
    res = run(
        ScriptedModel([reply("", [("add", {"a": 1, "b": 2}), ("add", {"a": "x"}), ("nope", {})], usage=(1, 1)), reply("3", usage=(1, 1))]),
        [add], [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], Budget(max_steps=5), transcript=s,
    )
    s.close()
    lines = open(s.path, "rb").read().splitlines()
    assert rebuild(lines) == res.messages
    assert json.loads(lines[0])["kind"] == "run_start"


WINDOW = 1000  # small enough that the run both masks and compacts


def test_masking_and_compaction_inside_a_run_are_made_again_on_resume(tmp_path):
    from agentloop.agent.context.compaction import MASK_PREFIX, SUMMARY_PREFIX, Compactor
    from agentloop.agent.context.side_calls import LoopAccount

    home, cwd = str(tmp_path / "home"), str(tmp_path)
    s = Session.create(cwd, home)

    @tool(read_only=True)
    def big(n: int) -> str:
        """A large output."""
        return f"{n}:" + "y" * 3000

    cm = Compactor(window=WINDOW, keep_recent=1, mask_threshold=100, transcript_path=s.path,
                        summarizer=ScriptedModel([reply("the summary of it all", usage=(10, 5))]))
    steps = [reply(f"step {i}", [("big", {"n": i})], usage=(10, 1), step=i) for i in range(4)]

    def compact_then_answer(req):  # type: ignore[no-untyped-def]
        return reply("done", usage=(10, 1))

    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
    def prepare(state, record):  # type: ignore[no-untyped-def]
        cm.prepare(state, record)
        if state.steps == 4:  # before the last call: compact the start of the conversation
            cm.compact(state.messages, record, account=LoopAccount(record), price=state.config.price, trigger="manual")
        return None

    res = run(ScriptedModel([*steps, compact_then_answer]), [big], msgs, Budget(max_steps=10), transcript=s, prepare=prepare)
    assert res.stop_reason == "no_tool_calls"
    masked = [m for m in res.messages if m.get("role") == "tool" and str(m["content"]).startswith(MASK_PREFIX)]
    summaries = [m for m in res.messages if str(m.get("content", "")).startswith(SUMMARY_PREFIX)]
    assert masked and summaries, "the run really masked and compacted (else this test shows nothing)"
    s.close()
    lines = open(s.path, "rb").read().splitlines()
    assert rebuild(lines) == res.messages
    # Negative control: without making the rewrites again, the rebuild is not what the model saw.
    plain = [ln for ln in lines if json.loads(ln)["kind"] not in ("context", "compaction")]
    assert rebuild(plain) != res.messages
    r = Session.resume(cwd, s.id, home)
    assert r.messages == res.messages
    r.close()
