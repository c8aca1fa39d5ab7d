"""Checkpoints and rewind.

Claude Code's checkpointing documentation: each prompt is a checkpoint of
the files Claude's edits changed; ``/rewind`` restores the code, the
conversation, or both, to a point; changes made by Bash commands are not
tracked. agentloop also keeps the record: every change is a ``file_change``
record (path, hashes before and after), a rewind is a ``rewind`` record, and
the chain is never cut.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.checkpoints import Checkpoints
from agentloop.transcript import read_records, verify_file

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _write(path: str, content: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": path, "content": content}}]}


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "Edit", "arguments": {"file_path": path, "old_string": old, "new_string": new}}]}


def _read(path: str) -> dict[str, Any]:
    """Write and Edit of an existing file need a Read of it first, as in Claude Code."""
    return {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": path}}]}


SCRIPT = [
    _read("a.txt"), _write("a.txt", "alpha 1\n"), {"text": "wrote a"},      # prompt 1
    _edit("a.txt", "alpha 1", "alpha 2"), _write("b.txt", "beta 1\n"), {"text": "edited a, wrote b"},  # prompt 2
    _edit("b.txt", "beta 1", "beta 2"), _write("c.txt", "gamma\n"), {"text": "edited b, wrote c"},    # prompt 3
]


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with a file and Write/Edit allowed."""
    d = proj
    (d / "a.txt").write_text("original a\n")
    (d / ".agentloop").mkdir()
    (d / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write", "Edit"]}}))
    return d


def _state(proj: Path) -> dict[str, bytes]:
    return {n: (proj / n).read_bytes() for n in ("a.txt", "b.txt", "c.txt") if (proj / n).exists()}


def _session(scripted: Callable[..., str], proj: Path) -> tuple[str, list[dict[str, bytes]]]:
    """Three prompts; the files before each prompt and after the last."""
    a = Agent(cwd=str(proj), trust=True, model=scripted(SCRIPT))
    states = [_state(proj)]
    for i in range(3):
        a.ask(f"prompt {i + 1}")
        states.append(_state(proj))
    sid = a.session.id
    a.close("done")
    return sid, states


@pytest.mark.parametrize("turn", [1, 2, 3])
def test_rewinding_to_each_prompt_puts_every_file_back_byte_for_byte(tmp_path: Path, proj: Path, turn: int, scripted: Callable[..., str]) -> None:
    sid, states = _session(scripted, proj)
    b = Agent(cwd=str(proj), trust=True, model=scripted([], "e.json"), resume=sid)
    try:
        out = b.rewind(turn)
        assert out["left"] == []
        assert _state(proj) == states[turn - 1]
        path = b.session.path
    finally:
        b.close("done")
    assert verify_file(path).ok  # the chain is never cut
    kinds = [r.kind for r in read_records(path)]
    assert kinds.count("rewind") == 1 and kinds.count("file_change") == 5


def test_each_change_is_recorded_with_hashes_the_checkpoints_hold(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    sid, _ = _session(scripted, proj)
    home = Path(os.environ["AGENTLOOP_HOME"])
    path = next(home.glob(f"projects/*/sessions/{sid}.jsonl"))
    changes = [r.payload for r in read_records(str(path)) if r.kind == "file_change"]
    assert [(Path(c["path"]).name, c["turn"]) for c in changes] == [("a.txt", 1), ("a.txt", 2), ("b.txt", 2), ("b.txt", 3), ("c.txt", 3)]
    assert changes[0]["before"] == hashlib.sha256(b"original a\n").hexdigest() and changes[2]["before"] is None
    store = Checkpoints(str(home))
    last = {c["path"]: c["after"] for c in changes}
    for p, after in last.items():
        assert store.get(after) == Path(p).read_bytes()  # the last change of each file is what is on disk
    for c in changes:
        store.get(c["after"])  # every blob there, and matching its hash
        assert oct(os.stat(store.path_of(c["after"])).st_mode & 0o777) == "0o600"
        assert c["tool_call_id"].startswith("call_")


def test_a_tampered_checkpoint_is_refused_and_nothing_is_written(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    sid, states = _session(scripted, proj)
    home = os.environ["AGENTLOOP_HOME"]
    before_a = hashlib.sha256(b"original a\n").hexdigest()
    Path(Checkpoints(home).path_of(before_a)).write_bytes(b"forged\n")
    b = Agent(cwd=str(proj), trust=True, model=scripted([], "e.json"), resume=sid)
    try:
        from agentloop.agent.agent import AgentError

        with pytest.raises(AgentError, match="does not match its hash"):
            b.rewind(1, conversation=False)
        assert (proj / "a.txt").read_bytes() != b"forged\n"
    finally:
        b.close("done")


def test_a_file_changed_by_hand_since_is_left_alone_unless_forced(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    sid, states = _session(scripted, proj)
    (proj / "b.txt").write_text("edited by hand\n")
    b = Agent(cwd=str(proj), trust=True, model=scripted([], "e.json"), resume=sid)
    try:
        out = b.rewind(2)
        assert [Path(p).name for p in out["left"]] == ["b.txt"]
        assert (proj / "b.txt").read_text() == "edited by hand\n" and not (proj / "c.txt").exists()
        out = b.rewind(2, force=True)
        assert _state(proj) == states[1]
    finally:
        b.close("done")


def test_rewinding_the_conversation_sends_the_next_prompt_from_there(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    a = Agent(cwd=str(proj), trust=True, model=scripted([*SCRIPT[:5], {"text": "after rewind"}]))
    try:
        a.ask("prompt 1")
        a.ask("prompt 2")
        a.rewind(2, files=False)
        users = [m["content"] for m in a.session.messages if m.get("role") == "user"]
        assert users == ["prompt 1"]
        a.ask("prompt 2 again")
        path = a.session.path
    finally:
        a.close("done")
    from agentloop.conversation import Conversation

    recs = list(read_records(path))
    conv = Conversation()
    for r in recs[: max(i for i, r in enumerate(recs) if r.kind == "run_start") + 1]:
        conv.feed(r.kind, r.payload)
    assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["prompt 1", "prompt 2 again"]
    assert verify_file(path).ok
    from agentloop.replay import replay

    assert replay(path, mode="full").equal


def test_a_session_resumed_after_a_conversation_rewind_starts_from_the_rewound_point(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    from agentloop.agent.session.store import Session

    a = Agent(cwd=str(proj), trust=True, model=scripted(SCRIPT[:5]))
    try:
        a.ask("prompt 1")
        a.ask("prompt 2")
        a.rewind(2, files=False)
        sid = a.session.id
    finally:
        a.close("done")
    s = Session.resume(str(proj), sid)
    try:
        assert [m["content"] for m in s.messages if m.get("role") == "user"] == ["prompt 1"]
    finally:
        s.close()


def test_the_command_line_lists_the_prompts_and_rewinds_without_the_repl(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    sid, states = _session(scripted, proj)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    p = subprocess.run([*AGENTLOOP, "rewind", sid], cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [line.split()[0] for line in p.stdout.splitlines()] == ["1", "2", "3"] and "Bash" in p.stderr
    p = subprocess.run([*AGENTLOOP, "rewind", sid[:15], "--to", "3"], cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert _state(proj) == states[2]
    p = subprocess.run([*AGENTLOOP, "rewind", sid, "--to", "9"], cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no prompt 9" in p.stderr


def test_the_repl_rewind_lists_prompts_says_bash_is_not_tracked_and_rewinds(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    p = subprocess.run([*AGENTLOOP, "--model", scripted(SCRIPT[:2])], cwd=proj, env=env, capture_output=True, text=True,
                       timeout=60, input="make a\n/rewind\n/rewind 1\n")
    assert p.returncode == 0, p.stderr
    assert "1  make a" in p.stdout and "not tracked" in p.stdout
    assert (proj / "a.txt").read_text() == "original a\n"
