"""Redaction, truncation and raw responses: what reaches the transcript, and how replay copes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentloop import Budget, MemoryTranscript, ModelReply, Tool, ToolError, run, tool
from agentloop.events import ModelRequest, ToolCall
from agentloop.redact import parse_path
from agentloop.replay import replay
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import read_records, verify_file

SECRET = "sk-proj-" + "Zq81fG3kLmN0pR7sT2uVwX9yA4bC6dE5hJ"
ENV = "AGENTLOOP_TEST_PLANTED_KEY"
SALT = b"test-salt-0001"


def _tools(declared: bool) -> list[Tool]:
    @tool(sensitive=declared)
    def get_key() -> str:
        """Read the service key from the environment."""
        return os.environ[ENV]

    @tool(secret_args=("$.token",) if declared else ())
    def call_api(endpoint: str, token: str) -> dict[str, Any]:
        """Call the service."""
        if endpoint == "/refuse":
            raise ToolError(f"the service refused token {token}")
        return {"status": 200, "token_chars": len(token)}

    strict = Tool(
        "strict_api", "A service with a token format.",
        {"type": "object", "properties": {"token": {"type": "string", "pattern": "^tok_"}}, "required": ["token"]},
        fn=lambda token: "ok", secret_args=("$.token",) if declared else (),
    )

    @tool(secret_args=("$.auth.key",) if declared else ())
    def nested(auth: dict[str, str], note: str) -> str:
        """A nested secret."""
        return note

    return [get_key, call_api, strict, nested]


def _key_from(req: ModelRequest) -> str:
    return str(req.messages[-1]["content"])  # the model uses what the tool told it


def _script() -> list[Any]:
    raw_with_key = lambda req: ModelReply(  # noqa: E731
        tool_calls=(ToolCall("c2", "call_api", {"endpoint": "/v1", "token": _key_from(req)}),),
        raw=json.dumps({"choices": [{"message": {"tool_calls": [{"arguments": {"token": _key_from(req)}}]}}]}),
    )
    return [
        reply("", [("get_key", {})], step=1),
        raw_with_key,
        lambda req: reply("", [("call_api", {"endpoint": "/refuse", "token": SECRET}),
                               ("strict_api", {"token": SECRET}),
                               ("nested", {"auth": {"key": SECRET, "user": "ann"}, "note": "hi"})], step=3),
        reply("done"),
    ]


def _planted_run(monkeypatch: pytest.MonkeyPatch, declared: bool, salt: bytes | None = SALT) -> MemoryTranscript:
    monkeypatch.setenv(ENV, SECRET)
    t = MemoryTranscript()
    model = ScriptedModel(_script())
    res = run(model, _tools(declared), "Use the service.", Budget(max_steps=10), transcript=t,
              redaction_salt=salt, record_raw=True)
    assert res.stop_reason == "no_tool_calls" and model.remaining == 0
    # a second run of the same session starts from the whole history, secrets and all
    model2 = ScriptedModel([reply("", [("call_api", {"endpoint": "/v2", "token": SECRET})], step=1), reply("again")])
    run(model2, _tools(declared), res.messages + [{"role": "user", "content": "Once more."}], Budget(max_steps=5),
        transcript=t, redaction_salt=salt, record_raw=True)
    return t


def _leaks(data: bytes) -> list[str]:
    forms = {
        "plain": SECRET.encode(),
        "json": json.dumps(SECRET).encode()[1:-1],
        "base64": base64.b64encode(SECRET.encode()),
        "hex": SECRET.encode().hex().encode(),
        "middle": SECRET[6:30].encode(),
    }
    return [name for name, f in forms.items() if f in data]


def test_a_planted_secret_appears_in_no_byte_of_the_transcript(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    t = _planted_run(monkeypatch, declared=True)
    data = t.getvalue()
    assert _leaks(data) == []
    p = tmp_path / "secret.jsonl"
    p.write_bytes(data)
    assert verify_file(p).ok
    # and its replays, written to disk, hold none either
    for mode, tools in (("full", None), ("live-tools", _tools(True)), ("dry-run", None)):
        out = tmp_path / f"replay-{mode}.jsonl"
        replay(p, mode=mode, tools=tools, out=out, redaction_salt=SALT)
        assert _leaks(out.read_bytes()) == [], mode


def test_the_scan_finds_the_secret_when_nothing_is_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    # the negative control: the same run without declarations leaks everywhere
    data = _planted_run(monkeypatch, declared=False).getvalue()
    assert "plain" in _leaks(data)
    lines = [orjson.loads(x) for x in data.splitlines()]
    kinds_with_secret = {o["kind"] for o in lines if SECRET in json.dumps(o)}
    assert kinds_with_secret == {"run_start", "model_turn", "tool_result"}


def test_redaction_markers_keep_the_size_and_a_salted_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    t = _planted_run(monkeypatch, declared=True)
    results = [r.payload for r in t.records if r.kind == "tool_result"]
    key = results[0]
    assert key["name"] == "get_key"
    m = key["content"]["$redacted"]
    assert m["why"] == "sensitive"
    assert m["bytes"] == len(SECRET.encode()) and m["chars"] == len(SECRET)
    assert m["salted_sha256"] == hmac.new(SALT, SECRET.encode(), hashlib.sha256).hexdigest()
    turns = [r.payload for r in t.records if r.kind == "model_turn"]
    token = turns[1]["reply"]["tool_calls"][0]["arguments"]["token"]["$redacted"]
    assert token["why"] == "secret_arg" and token["salted_sha256"] == m["salted_sha256"]
    assert turns[1]["reply"]["tool_calls"][0]["arguments"]["endpoint"] == "/v1"  # the rest stays readable
    assert turns[1]["raw"]["$redacted"]["why"] == "contains_redacted_arguments"
    nested_args = turns[2]["reply"]["tool_calls"][2]["arguments"]
    assert nested_args["auth"]["user"] == "ann" and "$redacted" in nested_args["auth"]["key"]
    refused, strict = results[2], results[3]
    assert "$redacted" in refused["error"] and "$redacted" in refused["detail"]
    assert strict["ok"] is False and "$redacted" in strict["error"]  # the validator quoted the token
    assert results[1]["content"] == {"status": 200, "token_chars": len(SECRET)}  # no secret in it: kept


def test_without_a_salt_markers_keep_only_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    t = _planted_run(monkeypatch, declared=True, salt=None)
    data = t.getvalue()
    assert b"salted_sha256" not in data and b"$redacted" in data and _leaks(data) == []


def test_full_replay_of_a_redacted_run_is_byte_identical_and_names_the_steps_it_cannot_reproduce(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(_planted_run(monkeypatch, declared=True).getvalue())
    r = replay(p, mode="full")
    assert r.equal, r.summary()
    notes = {(n.run, n.step): n.reason for n in r.unreproducible_steps}
    assert sorted(notes) == [(1, 1), (1, 2), (1, 3), (2, 1)]
    assert "get_key" in notes[(1, 1)] and "redacted" in notes[(1, 1)]
    assert "call_api" in notes[(1, 2)]
    assert "could not be reproduced" in r.summary()


def test_live_tools_replay_of_a_redacted_run_runs_the_tools_and_compares_by_salted_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(_planted_run(monkeypatch, declared=True).getvalue())
    r = replay(p, mode="live-tools", tools=_tools(True), redaction_salt=SALT)
    assert r.equal, r.summary()
    # calls whose arguments were redacted answer from the record, and say so
    reasons = [n.reason for n in r.unreproducible_steps]
    assert any("call_api" in x and "answered from the record" in x for x in reasons)
    assert not any("get_key" in x for x in reasons)  # it really ran: its output was compared
    # a changed secret behind a sensitive tool is caught through the hash
    monkeypatch.setenv(ENV, SECRET[:-1] + "Q")
    changed = replay(p, mode="live-tools", tools=_tools(True), redaction_salt=SALT)
    assert not changed.equal
    assert changed.first_difference is not None and changed.first_difference.kind == "tool_result"
    assert any("salted_sha256" in c for c in changed.first_difference.changes)
    # without the salt the hashes cannot match, and the replay says why
    monkeypatch.setenv(ENV, SECRET)
    unsalted = replay(p, mode="live-tools", tools=_tools(True))
    assert not unsalted.equal and any("pass the same redaction salt" in w for w in unsalted.warnings)


# --- large values --------------------------------------------------------------


def _big_run(tmp_path: Path, size: int, **kw: Any) -> Path:
    @tool
    def dump(n: int) -> str:
        """A large output."""
        return "é" + "x" * (n - 2)

    t = MemoryTranscript()
    script = [reply("", [("dump", {"n": size})], step=1), reply("", [("dump", {"n": 10})], step=2), reply("ok")]
    run(ScriptedModel(script), [dump], "t", Budget(max_steps=5), transcript=t, **kw)
    p = tmp_path / "big.jsonl"
    p.write_bytes(t.getvalue())
    return p


def test_values_over_64_kib_are_truncated_with_the_original_and_kept_byte_counts(tmp_path: Path) -> None:
    p = _big_run(tmp_path, 100_000)
    results = [r.payload for r in read_records(p) if r.kind == "tool_result"]
    m = results[0]["content"]["$truncated"]
    original = "é" + "x" * 99_998
    assert m["bytes"] == len(original.encode()) == 100_000
    assert m["kept_bytes"] == 65_536 and len(m["head"].encode()) == 65_536
    assert original.startswith(m["head"])
    assert m["sha256"] == hashlib.sha256(original.encode()).hexdigest()
    assert results[1]["content"] == "é" + "x" * 8  # small values stay whole
    assert p.stat().st_size < 80_000
    assert b"max_value_bytes" not in p.read_bytes()  # the default is not recorded


def test_the_size_limit_is_configurable_and_recorded(tmp_path: Path) -> None:
    p = _big_run(tmp_path, 5_000, max_value_bytes=1_000)
    recs = list(read_records(p))
    assert recs[0].payload["config"]["max_value_bytes"] == 1_000
    m = [r.payload for r in recs if r.kind == "tool_result"][0]["content"]["$truncated"]
    assert (m["bytes"], m["kept_bytes"]) == (5_000, 1_000)


def test_a_run_with_truncated_values_replays_byte_identically_in_full_and_live_modes(tmp_path: Path) -> None:
    p = _big_run(tmp_path, 100_000)

    @tool
    def dump(n: int) -> str:
        """A large output."""
        return "é" + "x" * (n - 2)

    full = replay(p, mode="full")
    assert full.equal and any("truncated" in n.reason for n in full.unreproducible_steps)
    assert replay(p, mode="live-tools", tools=[dump]).equal


# --- raw provider responses -------------------------------------------------------


def _raw_run(tmp_path: Path, record_raw: bool) -> Path:
    raw = '{"id":"resp_1","choices":[{"message":{"content":"the answer is 42","reasoning":"because"}}],  "x": 1.50}'
    t = MemoryTranscript()
    run(ScriptedModel([ModelReply(text="the answer is 42", raw=raw)]), [], "t", Budget(max_steps=2), transcript=t,
        record_raw=record_raw)
    p = tmp_path / f"raw-{record_raw}.jsonl"
    p.write_bytes(t.getvalue())
    return p


def test_raw_responses_are_kept_only_when_asked_and_exactly_as_received(tmp_path: Path) -> None:
    off = [r for r in read_records(_raw_run(tmp_path, False)) if r.kind == "model_turn"][0]
    assert "raw" not in off.payload
    recs = list(read_records(_raw_run(tmp_path, True)))
    assert recs[0].payload["config"]["record_raw"] is True
    turn = [r for r in recs if r.kind == "model_turn"][0]
    assert turn.payload["raw"] == '{"id":"resp_1","choices":[{"message":{"content":"the answer is 42","reasoning":"because"}}],  "x": 1.50}'


def test_replay_never_reads_the_raw_response(tmp_path: Path) -> None:
    # a raw response that contradicts the recorded reply: the replay follows the reply
    raw = {"choices": [{"message": {"tool_calls": [{"name": "explode", "arguments": {}}]}}]}
    t = MemoryTranscript()
    run(ScriptedModel([ModelReply(text="fine", raw=raw)]), [], "t", Budget(max_steps=2), transcript=t, record_raw=True)
    p = tmp_path / "raw.jsonl"
    p.write_bytes(t.getvalue())
    r = replay(p, mode="full")
    assert r.equal and r.result is not None and r.result.answer == "fine" and r.result.stop_reason == "no_tool_calls"


def test_raw_bytes_are_kept_as_text() -> None:
    t = MemoryTranscript()
    run(ScriptedModel([ModelReply(text="a", raw=b'data: {"x":1}\n\n')]), [], "t", Budget(max_steps=2), transcript=t, record_raw=True)
    assert [r.payload for r in t.records if r.kind == "model_turn"][0]["raw"] == 'data: {"x":1}\n\n'


# --- paths and loop prints -----------------------------------------------------------


def test_secret_paths_are_read_or_refused_naming_the_tool() -> None:
    assert parse_path("$.a.b[0][*]") == ("a", "b", 0, None)
    assert parse_path('$["odd key"]') == ("odd key",)
    for bad in ("token", "$", "$..x", "$.a[x]"):
        with pytest.raises(ValueError):
            parse_path(bad)
    bad_tool = Tool("t", "d", {"type": "object"}, fn=lambda: None, secret_args=("token",))
    with pytest.raises(ValueError, match="tool 't'.*must start with"):
        run(ScriptedModel([reply("x")]), [bad_tool], "t", Budget(max_steps=1))


def test_a_repeated_secret_call_is_still_detected_as_a_loop_without_the_secret_in_the_print(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [reply("", [("call_api", {"endpoint": "/x", "token": SECRET})], step=i) for i in (1, 2, 3)]
    t = MemoryTranscript()
    res = run(ScriptedModel(script), _tools(True), "t", Budget(max_steps=9), transcript=t, loop_threshold=3, redaction_salt=SALT)
    assert res.stop_reason == "loop_detected"
    assert _leaks(t.getvalue()) == []
