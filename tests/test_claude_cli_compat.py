"""Claude Code's command line and headless output, as a script written for ``claude -p`` uses them.

Issue 18, points 7 and 8. The specification is Claude Code's documentation:

- CLI reference: ``claude "query"`` starts the REPL with a first prompt;
  ``claude -p "query"`` answers once; ``cat file | claude -p "query"`` adds
  the piped content; ``--max-turns``, ``--allowedTools``, ``--disallowedTools``,
  ``--system-prompt``, ``--append-system-prompt``, ``--input-format
  stream-json``, ``--include-partial-messages``,
  ``--dangerously-skip-permissions``; ``-c`` continues the most recent
  conversation.
- Headless mode and the Agent SDK's message types: the ``json`` result has
  ``type: "result"``, ``subtype`` (``success``, ``error_max_turns``,
  ``error_during_execution``...), ``is_error``, ``duration_ms``,
  ``duration_api_ms``, ``num_turns``, ``result``, ``session_id``,
  ``total_cost_usd`` (a number), ``usage`` (Messages API token names) and
  ``permission_denials`` ({``tool_name``, ``tool_use_id``, ``tool_input``});
  ``stream-json`` starts with a ``system``/``init`` message and carries
  ``assistant`` messages of content blocks and tool results as ``user``
  messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.conversation import Conversation
from agentloop.transcript import read_records

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    e["NO_COLOR"] = "1"
    return e


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with one small file."""
    (proj / "hello.txt").write_text("hi from the file\n")
    return proj


def agentloop(args: list[str], *, cwd: Path, env: dict[str, str], input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTLOOP, *args], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL if input is None else None)


ANSWER = [{"text": "Done.", "usage": [10, 2]}]
READ_THEN_ANSWER = [
    {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}], "usage": [100, 10]},
    {"text": "The file says hi.", "usage": [150, 5]},
]


def claude_script(stdout: str) -> dict[str, Any]:
    """What a script written against Claude Code's documented json output reads, and nothing else."""
    obj = json.loads(stdout)
    assert obj["type"] == "result"
    assert isinstance(obj["total_cost_usd"], (int, float)) and not isinstance(obj["total_cost_usd"], bool)
    assert isinstance(obj["is_error"], bool) and isinstance(obj["num_turns"], int)
    assert isinstance(obj["duration_ms"], int) and isinstance(obj["duration_api_ms"], int)
    assert set(obj["usage"]) >= {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
    assert isinstance(obj["permission_denials"], list) and isinstance(obj["session_id"], str)
    assert ("result" in obj) == (obj["subtype"] == "success")  # the SDK's SDKResultError has errors instead
    return {k: obj.get(k) for k in ("subtype", "is_error", "result", "total_cost_usd", "num_turns", "permission_denials", "session_id")}


def test_json_output_reads_as_claude_codes_result(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "what does hello.txt say?", "--model", scripted(READ_THEN_ANSWER), "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    r = claude_script(p.stdout)
    assert r["subtype"] == "success" and r["is_error"] is False and r["result"] == "The file says hi." and r["num_turns"] == 2
    # jq '.total_cost_usd > 1' must be false for a tiny run: a number, not a string
    assert 0 < r["total_cost_usd"] < 0.001
    obj = json.loads(p.stdout)
    assert obj["cost_micros"] == round(r["total_cost_usd"] * 1_000_000)  # agentloop's exact figure, beside it


def test_a_run_out_of_turns_is_error_max_turns_and_exit_1(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "x", "--model", scripted(READ_THEN_ANSWER), "--max-turns", "1", "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 1
    r = claude_script(p.stdout)
    assert r["subtype"] == "error_max_turns" and r["is_error"] is True


def test_a_refused_call_is_listed_in_permission_denials(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    replies = [{"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "new.txt", "content": "x"}}]}, {"text": "Could not."}]
    p = agentloop(["-p", "write it", "--model", scripted(replies), "--output-format", "json"], cwd=proj, env=env)
    r = claude_script(p.stdout)
    assert r["permission_denials"] == [{"tool_name": "Write", "tool_use_id": "call_0_0",
                                        "tool_input": {"file_path": "new.txt", "content": "x"}}]
    assert not (proj / "new.txt").exists()


def test_allowed_tools_on_the_command_line_let_a_call_run_in_print_mode(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    replies = [{"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "new.txt", "content": "x"}}]}, {"text": "Wrote."}]
    p = agentloop(["-p", "write it", "--model", scripted(replies), "--allowedTools", "Write,Read", "--output-format", "json"], cwd=proj, env=env)
    assert claude_script(p.stdout)["permission_denials"] == [] and (proj / "new.txt").read_text() == "x"


def test_disallowed_tools_on_the_command_line_deny_even_a_read(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "read", "--model", scripted(READ_THEN_ANSWER), "--disallowed-tools", "Read(./hello.txt)", "--output-format", "json"],
                  cwd=proj, env=env)
    assert [d["tool_name"] for d in claude_script(p.stdout)["permission_denials"]] == ["Read"]


def test_dangerously_skip_permissions_is_bypass_mode(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    replies = [{"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "new.txt", "content": "y"}}]}, {"text": "Wrote."}]
    p = agentloop(["-p", "write", "--model", scripted(replies), "--dangerously-skip-permissions", "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert (proj / "new.txt").read_text() == "y"


def _first_run_start(path: str) -> dict[str, Any]:
    return next(r.payload for r in read_records(path) if r.kind == "run_start")


def test_system_prompt_replaces_and_append_system_prompt_adds(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "x", "--model", scripted(ANSWER), "--system-prompt", "You are terse.", "--output-format", "json"], cwd=proj, env=env)
    systems = [m for m in _first_run_start(json.loads(p.stdout)["transcript"])["messages"] if m["role"] == "system"]
    assert [m["content"] for m in systems] == ["You are terse."]
    p = agentloop(["-p", "x", "--model", scripted(ANSWER, "a.json"), "--append-system-prompt", "Always cite files.",
                   "--output-format", "json"], cwd=proj, env=env)
    systems = [m["content"] for m in _first_run_start(json.loads(p.stdout)["transcript"])["messages"] if m["role"] == "system"]
    assert systems[-1].endswith("Always cite files.") and "Working directory" in systems[-1]  # the end of the dynamic part


def test_piped_stdin_is_added_to_the_prompt(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "explain", "--model", scripted(ANSWER), "--output-format", "json"], cwd=proj, env=env,
                  input="Traceback: something broke\n")
    assert p.returncode == 0, p.stderr
    user = _first_run_start(json.loads(p.stdout)["transcript"])["messages"][-1]
    assert user == {"role": "user", "content": "explain\n\nTraceback: something broke\n"}
    p = agentloop(["-p", "--model", scripted(ANSWER, "b.json"), "--output-format", "json"], cwd=proj, env=env, input="only stdin\n")
    assert _first_run_start(json.loads(p.stdout)["transcript"])["messages"][-1]["content"] == "only stdin\n"


def test_a_positional_prompt_starts_the_repl_with_it(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["explain this", "--model", scripted(ANSWER)], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "Done." in p.stdout
    assert "invalid choice" not in p.stderr


def test_stream_json_input_takes_claude_codes_user_messages(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    replies = [{"text": "first answer"}, {"text": "second answer"}]
    lines = [
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "one"}]}},
        {"type": "user", "message": {"role": "user", "content": "two"}},
    ]
    p = agentloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--model", scripted(replies)],
                  cwd=proj, env=env, input="".join(json.dumps(x) + "\n" for x in lines))
    assert p.returncode == 0, p.stderr
    out = [json.loads(x) for x in p.stdout.splitlines()]
    assert out[0]["type"] == "system" and out[0]["subtype"] == "init" and "permissionMode" in out[0] and "mcp_servers" in out[0]
    assert [o["result"] for o in out if o["type"] == "result"] == ["first answer", "second answer"]
    recs = list(read_records(out[-1]["transcript"]))
    conv = Conversation()
    for r in recs:
        conv.feed(r.kind, r.payload)
    assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["one", "two"]


def test_a_bad_stream_json_line_is_one_clear_error(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--model", scripted(ANSWER)],
                  cwd=proj, env=env, input='{"type": "assistant"}\n')
    assert p.returncode == 2 and "stdin line 1: not a user message" in p.stderr and "Traceback" not in p.stderr


def test_continue_with_no_earlier_session_starts_one(tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    p = agentloop(["-c", "-p", "hi", "--model", scripted(ANSWER), "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert claude_script(p.stdout)["result"] == "Done."


def test_settings_on_the_command_line_apply_above_the_projects_files(
        tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    """Claude Code's ``--settings``: a settings file or JSON string to load; the command line is the
    user's own, so it applies in a folder that is not trusted."""
    p = agentloop(["-p", "read", "--model", scripted(READ_THEN_ANSWER), "--output-format", "json",
                   "--settings", '{"permissions": {"deny": ["Read(./hello.txt)"]}}'], cwd=proj, env=env)
    assert [d["tool_name"] for d in claude_script(p.stdout)["permission_denials"]] == ["Read"]
    allow = tmp_path / "allow.json"
    allow.write_text(json.dumps({"permissions": {"allow": ["Write"]}}))
    replies = [{"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "w.txt", "content": "w"}}]}, {"text": "ok"}]
    p = agentloop(["-p", "write", "--model", scripted(replies, "w.json"), "--settings", str(allow), "--output-format", "json"],
                  cwd=proj, env=env)
    assert claude_script(p.stdout)["permission_denials"] == [] and (proj / "w.txt").read_text() == "w"
    p = agentloop(["-p", "x", "--model", scripted(ANSWER, "b.json"), "--settings", "{ nope"], cwd=proj, env=env)
    assert p.returncode == 2 and "--settings (the JSON given): not valid JSON" in p.stderr and "Traceback" not in p.stderr


def test_mcp_config_loads_servers_and_strict_uses_only_them(
        tmp_path: Path, proj: Path, env: dict[str, str], scripted: Callable[..., str]) -> None:
    """Claude Code's ``--mcp-config`` loads MCP servers from JSON files or strings; ``--strict-mcp-config``
    uses only those."""
    sys.path.insert(0, str(Path(__file__).parent))
    from mcp_servers.helpers import PY, PYSERVER

    cfg = {"mcpServers": {"cli": {"command": PY, "args": [PYSERVER]}}}
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": PY, "args": [PYSERVER]}}}))
    p = agentloop(["-p", "x", "--model", scripted(ANSWER), "--output-format", "stream-json", "--trust",
                   "--mcp-config", json.dumps(cfg)], cwd=proj, env=env)
    init = json.loads(p.stdout.splitlines()[0])
    assert {s["name"]: s["status"] for s in init["mcp_servers"]} == {"cli": "connected", "proj": "connected"}, p.stderr
    p = agentloop(["-p", "x", "--model", scripted(ANSWER, "b.json"), "--output-format", "stream-json", "--trust",
                   "--mcp-config", json.dumps(cfg), "--strict-mcp-config"], cwd=proj, env=env)
    init = json.loads(p.stdout.splitlines()[0])
    assert [s["name"] for s in init["mcp_servers"]] == ["cli"]
