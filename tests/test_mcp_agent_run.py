"""A scripted run that uses MCP tools end to end: the transcript verifies, and replays in full mode with no server running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloop import Budget, run
from agentloop.mcp import McpManager, ServerConfig
from agentloop.replay import ReplayError, replay
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import TranscriptWriter, read_records, verify_file
from mcp_servers.helpers import PY, PYSERVER, running


def server(version: str = "1.0.0") -> ServerConfig:
    return ServerConfig("py", "stdio", command=PY, args=(PYSERVER,), env={"PYSERVER_VERSION": version})


def script() -> ScriptedModel:
    return ScriptedModel([
        reply("looking", [("mcp__py__echo", {"text": "a"}), ("mcp__py__add", {"a": 2, "b": 3}), ("mcp__py__picture", {})],
              usage=(100, 20), step=1),
        reply("trying", [("mcp__py__fail", {"message": "no such record"}), ("mcp__py__nosuch", {}), ("mcp__py__add", {"a": "x"})],
              usage=(150, 20), step=2),
        reply("the sum is 5", usage=(200, 10)),
    ])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    with McpManager([server()], startup_timeout=60) as m:
        tools = m.tools()
        model = script()
        with model:
            r = run(model, tools, "add 2 and 3", Budget(max_steps=5), transcript=TranscriptWriter(path), run_id="mcp-e2e")
        assert r.stop_reason == "no_tool_calls" and r.answer == "the sum is 5"
    assert not running(PYSERVER), "an MCP server outlived its manager"
    return path


def test_the_recorded_run_holds_every_kind_of_mcp_result(recorded: Path) -> None:
    recs = list(read_records(str(recorded)))
    start = recs[0].payload
    fps = {t["name"]: t["fingerprint"] for t in start["config"]["tools"]}
    assert fps["mcp__py__echo"] == "mcp:pyserver@1.0.0"
    results = [r.payload for r in recs if r.kind == "tool_result"]
    assert [r["ok"] for r in results] == [True, True, True, False, False, False]
    assert json.loads(results[1]["content"]) == {"total": 5.0, "terms": 2}  # structured content sent once
    assert results[2]["content"]["content"][0]["type"] == "image"
    assert results[3]["error"] == "no such record"
    assert "no tool named 'mcp__py__nosuch'" in results[4]["error"]
    assert "$.a: 'x' is not of type 'number'" in results[5]["error"]


def test_the_transcript_verifies(recorded: Path) -> None:
    report = verify_file(str(recorded))
    assert report.ok and report.count > 10


def test_full_replay_with_no_server_running_is_byte_identical(recorded: Path) -> None:
    assert not running(PYSERVER)
    result = replay(str(recorded), mode="full")
    assert result.equal, result.summary()
    assert result.warnings == []


def test_replay_warns_when_the_mcp_server_version_changed(recorded: Path) -> None:
    with McpManager([server("2.0.0")], startup_timeout=60) as m:
        tools = m.tools()
    result = replay(str(recorded), mode="full", tools=tools)
    assert result.equal
    echo = [w for w in result.warnings if "'mcp__py__echo'" in w]
    assert echo and "mcp:pyserver@1.0.0" in echo[0] and "mcp:pyserver@2.0.0" in echo[0]
    # negative control: the same version gives no warning
    with McpManager([server("1.0.0")], startup_timeout=60) as m:
        same = m.tools()
    assert replay(str(recorded), mode="full", tools=same).warnings == []


def test_a_changed_tool_result_is_caught(recorded: Path, tmp_path: Path) -> None:
    lines = recorded.read_bytes().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if b'"kind":"tool_result"' in ln)
    rec = json.loads(lines[i])
    rec["payload"]["content"] = "forged"
    lines[i] = json.dumps(rec, separators=(",", ":"), sort_keys=True).encode() + b"\n"
    forged = tmp_path / "forged.jsonl"
    forged.write_bytes(b"".join(lines))
    assert not verify_file(str(forged)).ok
    with pytest.raises(ReplayError):
        replay(str(forged), mode="full")
