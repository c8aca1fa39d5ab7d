"""A record that chains but that agentloop never wrote is refused by name, never believed.

The chain proves a file unchanged since its writer wrote it; anyone can be that
writer. So every reader of a session (``-c``/``--resume``, ``rewind``, ``replay``,
``sessions``, ACP's ``session/load``) checks each payload against its kind's
shape (``agentloop.record_shapes``, one shape per kind) and names the first bad
record: the file, its line, and what is wrong, with exit 2; never a traceback
(exit 70) and never a negative or absurd total. The forged files here are made
by the real chain code (``TranscriptWriter``, ``make_line``), so they verify.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.store import (
    Session,
    SessionDamaged,
    list_sessions,
    sessions_dir,
    summarize,
)
from agentloop.line import make_line
from agentloop.record_shapes import SHAPES, payload_problem
from agentloop.replay import ReplayError, replay
from agentloop.transcript import TranscriptError, TranscriptWriter, read_records, verify_file

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]

USAGE = {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0}
STATS = {"spent_micros": 40, "usage": USAGE, "turns": 1, "model_calls": 1, "last_input_tokens": 10,
         "estimated_tokens": 0, "tools": {"Read": {"ok": 1, "failed": 0}}}
CALL = {"id": "c1", "name": "Read", "arguments": {"file_path": "a.txt"}}
MESSAGE = {"role": "assistant", "content": "hi", "tool_calls": [CALL]}

VALID: dict[str, dict[str, Any]] = {
    "run_start": {"format": 2, "messages": [{"role": "user", "content": "hi"}, MESSAGE],
                  "continues": {"seq": 3, "hash": "ab" * 32, "messages": 1},
                  "config": {"model": "m", "budget": {"max_steps": 5, "max_tokens": None, "max_usd_micros": 9, "unlimited": False},
                             "price": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 0},
                             "tools": [{"name": "Read", "description": "d", "parameters": {}, "read_only": True}],
                             "max_output_tokens": 100, "loop_threshold": 5, "fallback_prices": {"n": {"input": 1, "output": 1}},
                             "max_value_bytes": 10, "max_continuations": 1, "image_tokens": 5, "can_count": True, "shared_cap": False}},
    "model_turn": {"step": 1, "usage_estimated": False,
                   "reply": {"text": "t", "tool_calls": [CALL], "usage": USAGE, "model": "m", "finish_reason": "stop",
                             "reasoning": [{"type": "thinking"}]}},
    "budget": {"step": 1, "reserved_micros": 5, "cost_micros": 4, "spent_micros": 4, "tokens": 12},
    "tool_result": {"step": 1, "call_id": "c1", "name": "Read", "ok": False, "error": "e", "detail": {"x": 1}},
    "tools_changed": {"step": 1, "tools": [{"name": "Read", "description": "d", "parameters": {}, "read_only": True}]},
    "model_error": {"step": 1, "error": "e", "usage": USAGE},
    "loop_detected": {"step": 1, "method": "heuristic", "fingerprint": "f", "repeats": 3},
    "token_count": {"step": 1, "bound": 5, "counted": 4, "reserved_tokens": 4, "needed_micros": 3, "left_micros": 2, "error": "e"},
    "overrun": {"step": 1, "reserved_micros": 5, "cost_micros": 9, "usage": USAGE, "error": "e"},
    "side_cost": {"step": 1, "purpose": "compaction", "reserved_micros": 5, "reserved_tokens": 5, "usage": USAGE,
                  "cost_micros": 4, "spent_micros": 8, "tokens": 12, "needed_micros": 3, "needed_tokens": 3,
                  "refused": "r", "by": "budget"},
    "stop": {"reason": "no_tool_calls", "steps": 1, "usage": USAGE, "tokens": 12, "spent_micros": 4, "answer": "a", "error": "e"},
    "session_cost": STATS,
    "session_end": {**STATS, "reason": "exit"},
    "session_start": {"started_at": "2026-01-01T00:00:00Z"},
    "compaction": {"call": {"cost_micros": 3, "usage": USAGE}, "status": "compacted", "head": 1, "summarized_messages": 2, "summary": "s"},
    "context": {"step": 1, "where": "w", "masked": ["c1"], "evicted": ["c2"], "files": {"c1": "f"}},
    "rewind": {"messages": [MESSAGE]},
    "fork": {"messages": [MESSAGE], "verified_records": 3},
    "file_change": {"path": "a.txt", "before": None, "after": "ab", "turn": 1},
    "loop_check": {"step": 1, "cost_micros": 3, "usage": USAGE},
}

FREE = frozenset({"arguments", "parameters", "detail", "files", "meta", "reasoning", "fingerprint"})
"""Members whose inside is the tool's, the vendor's or a person's, not agentloop's: any JSON."""


def _wrong(v: Any) -> list[Any]:
    """Values of other shapes than ``v``: what a forger writes instead."""
    if isinstance(v, bool):
        return ["yes", 0, {"x": 1}]
    if isinstance(v, int):
        return ["7", -1, -10**18, 10**16, True, 1.5, [], {"n": 1}]
    if isinstance(v, str):
        return [5, {"x": 1}, ["s"], True]
    if isinstance(v, list):
        return ["oops", {"x": 1}, 3]
    if isinstance(v, dict):
        return ["oops", [1], 3, True]
    return []


def _mutations(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, wrong value) for the members of ``value``, to any depth."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        if k in FREE:
            continue
        for w in _wrong(v):
            yield (*path, k), w
        yield from _mutations(v, (*path, k))


def _set(payload: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(payload)
    at = out
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return out


def test_every_shaped_kind_has_a_valid_example_that_passes() -> None:
    assert set(VALID) == set(SHAPES)
    for kind, payload in VALID.items():
        assert payload_problem(kind, payload) is None, kind


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_every_generated_bad_shape_of_a_kind_is_named_by_its_path(kind: str) -> None:
    seen = 0
    for path, wrong in _mutations(VALID[kind]):
        bad = payload_problem(kind, _set(VALID[kind], path, wrong))
        where = "payload" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
        assert bad is not None and bad.startswith(where), (kind, path, wrong, bad)
        seen += 1
    for wrong in ("a string", [1], 5, None):  # the payload itself
        assert payload_problem(kind, wrong) is not None
    assert seen >= 3


def test_what_the_redactor_writes_in_place_of_a_value_passes() -> None:
    """A failed call's error, a detail and a message's content may be a marker (redact.py)."""
    from agentloop.redact import redacted, truncated

    marker, cut = redacted("secret", "sensitive", b"salt"), truncated("x" * 100, 16)
    assert payload_problem("tool_result", {**VALID["tool_result"], "error": marker, "detail": cut}) is None
    msgs = [{"role": "user", "content": cut}, {"role": "tool", "tool_call_id": "c1", "content": marker}]
    assert payload_problem("run_start", {**VALID["run_start"], "messages": msgs}) is None
    assert payload_problem("tool_result", {**VALID["tool_result"], "error": {"not": "a marker"}}) is not None


def test_money_and_counts_are_never_negative_or_past_any_real_bound() -> None:
    for spent in (-1, -10**12 * 10**6, 10**15 + 1, 2**63):
        assert "outside" in (payload_problem("session_cost", {"spent_micros": spent}) or "")
    assert payload_problem("session_cost", {"spent_micros": 10**15}) is None
    assert payload_problem("my_own_kind", {"spent_micros": -5}) is None  # unknown kinds are the writer's own


def test_records_agentloop_writes_pass_their_shapes(proj: Path, scripted: Callable[..., str]) -> None:
    """The negative control of the checks: a real session's every record passes."""
    sid, path = _session(proj, scripted)
    for r in read_records(path):
        assert payload_problem(r.kind, r.payload) is None, r
    golden = Path(__file__).parent / "golden"
    for f in sorted(golden.glob("*.jsonl")):
        for r in read_records(f):
            assert payload_problem(r.kind, r.payload) is None, (f.name, r.seq)


# --- forged sessions, read by every reader -------------------------------------------

SCRIPT = [
    {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "a.txt"}}]},
    {"text": "read a"},
]


@pytest.fixture()
def proj(proj: Path) -> Path:
    (proj / "a.txt").write_text("alpha\n")
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
    return proj


def _session(proj: Path, scripted: Callable[..., str]) -> tuple[str, Path]:
    a = Agent(cwd=str(proj), trust=True, model=scripted(SCRIPT))
    a.ask("read a")
    sid = a.session.id
    a.close("done")
    path = Path(sessions_dir(str(proj))) / f"{sid}.jsonl"
    assert verify_file(path).ok
    return sid, path


def _rewrite(path: Path, change: Callable[[list[dict[str, Any]]], None]) -> int:
    """The session's records changed by ``change``, written again by the real chain code
    (each ``continues`` reference made to match): a forgery that verifies. Returns the
    index of the first record that differs."""
    old = [json.loads(ln) for ln in path.read_bytes().splitlines()]
    recs = copy.deepcopy(old)
    change(recs)
    out, prev = [], "0" * 64
    for seq, r in enumerate(recs):
        cont = r["payload"].get("continues") if isinstance(r["payload"], dict) else None
        if r["kind"] == "run_start" and isinstance(cont, dict):
            cont.update(seq=seq - 1, hash=prev)
        prev, line = make_line(seq, prev, r["kind"], r["payload"])
        out.append(line)
    path.write_bytes(b"".join(out))
    assert verify_file(path).ok
    return next(i for i, (a, b) in enumerate(zip(old, recs)) if a["payload"] != b["payload"])


def _append(path: Path, kind: str, payload: Any) -> int:
    with TranscriptWriter(str(path), resume=True) as w:
        rec = w.append(kind, payload)
    assert verify_file(path).ok
    return rec.seq


def _first(recs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    payload: dict[str, Any] = next(r for r in recs if r["kind"] == kind)["payload"]
    return payload


def _readers_refuse(proj: Path, sid: str, path: Path, index: int, what: str, kind: str) -> None:
    """Resume, rewind's reader, replay and the listing each name record ``index`` and ``what``."""
    where = f"record {index} (line {index + 1}, "
    with pytest.raises(SessionDamaged) as info:
        Session.resume(str(proj), sid)
    assert info.value.forged and where in str(info.value) and what in str(info.value) and str(path) in str(info.value)
    with pytest.raises(TranscriptError, match=rf"record {index} \(line {index + 1}, .*{what}"):
        list(read_records(path))
    if kind == "budget":  # replay never reads a budget payload: the loop derives it again, so a forged one differs
        assert not replay(path).equal
    else:
        with pytest.raises(ReplayError) as replayed:
            replay(path)
        assert where in str(replayed.value) and what in str(replayed.value)
    s = summarize(str(path))
    assert not s.verified and s.problem and where in s.problem
    assert 0 <= s.spent_micros <= 10**15


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_a_forged_record_of_each_kind_that_chains_is_refused_by_every_reader(
    proj: Path, scripted: Callable[..., str], kind: str
) -> None:
    sid, path = _session(proj, scripted)
    bad = _set(VALID[kind], next(iter(_mutations(VALID[kind])))[0], "forged")
    if payload_problem(kind, bad) is None:  # a member a string fits: make it an object
        bad = _set(VALID[kind], next(iter(_mutations(VALID[kind])))[0], {"forged": True})
    index = _append(path, kind, bad)
    _readers_refuse(proj, sid, path, index, str(payload_problem(kind, bad)).split(" is ")[0], kind)


FORGERIES: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    "tool_calls a string": (lambda rs: _first(rs, "model_turn")["reply"].update(tool_calls="Read a.txt"),
                            "payload.reply.tool_calls is a string, expected an array"),
    "reply.model an object": (lambda rs: _first(rs, "model_turn")["reply"].update(model={"name": "x"}),
                              "payload.reply.model is an object, expected a string"),
    "a session total of -$10^12": (lambda rs: _first(rs, "session_cost").update(spent_micros=-10**18),
                                   "payload.spent_micros is -1000000000000000000, outside"),
}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    return subprocess.run([*AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_resume_rewind_and_replay_exit_2_naming_the_file_line_and_fault_of_a_forged_record(
    proj: Path, scripted: Callable[..., str], forgery: str
) -> None:
    sid, path = _session(proj, scripted)
    change, what = FORGERIES[forgery]
    index = _rewrite(path, change)
    before = path.read_bytes()
    more = scripted([{"text": "unused"}], "more.json")
    for args in (["-c", "-p", "go on", "--model", more], ["--resume", sid, "-p", "go on", "--model", more],
                 ["rewind", sid], ["rewind", sid, "--to", "1"], ["replay", str(path)]):
        p = _run(args, proj)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr
        assert str(path) in p.stderr and f"record {index} (line {index + 1}, " in p.stderr and what in p.stderr, p.stderr
    assert path.read_bytes() == before
    p = _run(["sessions"], proj)
    assert p.returncode == 0 and "NO" in p.stdout and what in p.stdout and "-$" not in p.stdout, p.stdout


def test_a_forged_total_in_the_listings_cache_is_read_again_from_the_session(proj: Path, scripted: Callable[..., str]) -> None:
    sid, path = _session(proj, scripted)
    [s] = list_sessions(str(proj))
    index = Path(sessions_dir(str(proj))) / "index.json"
    cache = json.loads(index.read_text())
    cache[sid]["summary"]["spent_micros"] = -10**18
    index.write_text(json.dumps(cache))
    [again] = list_sessions(str(proj))
    assert again.spent_micros == s.spent_micros >= 0


def test_force_on_a_forged_session_goes_on_in_a_new_session_from_the_records_before_it(
    proj: Path, scripted: Callable[..., str]
) -> None:
    sid, path = _session(proj, scripted)
    change, _ = FORGERIES["tool_calls a string"]
    index = _rewrite(path, change)
    before = path.read_bytes()
    p = _run(["-c", "--force", "-p", "go on", "--model", scripted([{"text": "went on"}], "more.json")], proj)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "went on\n" and f"fails verification at record {index} (bad_payload)" in p.stderr
    assert path.read_bytes() == before
    [new] = [n for n in os.listdir(path.parent) if n.endswith(".jsonl") and n != path.name]
    assert verify_file(path.parent / new).ok

