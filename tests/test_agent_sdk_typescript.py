"""The TypeScript Claude Agent SDK (``@anthropic-ai/claude-agent-sdk``, pinned by ``scripts/setup-test-peers``)
drives agentloop as its CLI.

The specification is the SDK itself and its reference (TypeScript):
``options.pathToClaudeCodeExecutable`` runs another executable as Claude Code
(the SDK's optional native binaries are not installed here, so it must);
``query()`` with a string prompt or an ``AsyncIterable`` of user messages
(streaming input); ``canUseTool`` answers permission questions (``{behavior:
"deny", message}`` tells the model why); ``Query.interrupt()`` stops the turn
and the conversation goes on; ``hooks`` are callbacks; ``includePartialMessages``
adds ``stream_event`` messages; ``systemPrompt: {type: "preset", append}`` is
sent in the ``initialize`` control request and appends to the system prompt.

``tests/data/agent_sdk_ts_drive.mjs`` runs one scenario with node and prints
what it saw as one JSON object.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.testing.fakeprovider import FakeProvider

REPO = Path(__file__).resolve().parent.parent
SDK_MODULES = REPO / ".cache" / "npm-sdk" / "node_modules"
DRIVER = REPO / "tests" / "data" / "agent_sdk_ts_drive.mjs"


@pytest.fixture
def drive(tmp_path: Path) -> Any:
    if shutil.which("node") is None or not (SDK_MODULES / "@anthropic-ai" / "claude-agent-sdk" / "sdk.mjs").is_file():
        msg = f"node or the Agent SDK is missing ({SDK_MODULES}); run scripts/setup-test-peers"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    (tmp_path / "node_modules").symlink_to(SDK_MODULES)
    shutil.copy(DRIVER, tmp_path / "drive.mjs")
    cli = tmp_path / "agentloop"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentloop.cli.main "$@"\n')
    cli.chmod(0o755)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "hello.txt").write_text("hi from the file\n")

    def run(scenario: str, replies: list[dict[str, Any]] | None, env: dict[str, str] | None = None, model: str | None = None) -> Any:
        if replies is not None:
            (tmp_path / f"{scenario}.json").write_text(json.dumps(replies))
            model = f"scripted:{tmp_path / f'{scenario}.json'}"
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "ANTHROPIC_", "OPENAI_"))}
        e.update(PYTHONPATH=str(REPO / "src"), AGENTLOOP_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "user"), NO_COLOR="1",
                 **(env or {}))
        p = subprocess.run(["node", str(tmp_path / "drive.mjs"), scenario, str(cli), str(proj), str(model)], cwd=tmp_path,
                           env=e, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout.strip().splitlines()[-1])
        assert "error" not in out, out["error"]
        return out

    run.proj = proj  # type: ignore[attr-defined]
    return run


def _read_then_edit() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "hello.txt", "old_string": "hi from", "new_string": "bye from"}, "id": "t_edit"}]},
        {"text": "done"},
    ]


def _result_of(blocks: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(b for b in blocks if b.get("tool_use_id") == call_id)


def test_a_one_shot_query_gets_the_init_the_answer_and_the_result(drive: Any) -> None:
    out = drive("oneShot", [{"text": "hello there"}])
    assert out["types"] == ["system", "assistant", "result"]
    assert out["result"]["subtype"] == "success" and out["result"]["result"] == "hello there"


def test_streaming_input_over_several_turns_keeps_one_session(drive: Any) -> None:
    out = drive("turns", [{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}])
    assert [r[0] for r in out["results"]] == ["first answer", "second answer", "third answer"]
    assert len({r[1] for r in out["results"]}) == 1


def test_can_use_tool_denies_an_edit_with_a_message_the_model_sees(drive: Any) -> None:
    out = drive("canUseTool", _read_then_edit(), env={"DECIDE": "deny"})
    assert [a[0] for a in out["asked"]] == ["Edit"]
    result = _result_of(out["toolResults"], "t_edit")
    assert result["is_error"] and "not in this file, please" in json.dumps(result)
    assert (drive.proj / "hello.txt").read_text() == "hi from the file\n"


def test_can_use_tool_allows_an_edit_and_it_is_made(drive: Any) -> None:
    out = drive("canUseTool", _read_then_edit(), env={"DECIDE": "allow"})
    assert [a[0] for a in out["asked"]] == ["Edit"]
    assert not _result_of(out["toolResults"], "t_edit").get("is_error")
    assert (drive.proj / "hello.txt").read_text() == "bye from the file\n"


def test_interrupt_stops_the_turn_and_the_next_turn_runs_in_the_same_session(drive: Any) -> None:
    out = drive("interrupt", [{"text": "too slow", "delay_ms": 60_000}, {"text": "after the interrupt"}])
    assert out["errors"] == []
    (first, _, sid1), (second, text, sid2) = out["results"]
    assert first != "success" and second == "success" and text == "after the interrupt" and sid1 == sid2


def test_a_hook_callback_is_called_and_its_deny_reaches_the_model(drive: Any) -> None:
    out = drive("hook", [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]}, {"text": "no"}])
    assert out["seen"] == ["Read"]
    result = _result_of(out["toolResults"], "t_read")
    assert result["is_error"] and "reading is off today" in json.dumps(result)


def test_include_partial_messages_streams_the_text(drive: Any) -> None:
    events = drive("partial", [{"text": "streamed words"}])["events"]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta") == "streamed words"


def test_an_appended_system_prompt_sent_in_initialize_reaches_the_model(drive: Any) -> None:
    with FakeProvider({"replies": [{"text": "arr"}]}) as fp:
        out = drive("appendSystemPrompt", None, env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": "sk-test"},
                    model="anthropic:claude-haiku-4-5")
        system = json.dumps(fp.requests[0]["body"]["system"])
    assert out["result"]["result"] == "arr"
    assert "Always answer like a pirate." in system


def test_an_in_process_sdk_mcp_server_s_tool_is_called_and_its_result_reaches_the_model(drive: Any) -> None:
    """TypeScript reference, "Custom tools": ``createSdkMcpServer({name, tools: [tool(...)]})`` in ``mcpServers``
    runs in the SDK's process; the SDK names it in ``initialize``'s ``sdkMcpServers`` and answers the CLI's
    ``mcp_message`` requests; its tools are ``mcp__<server>__<tool>`` (allowed here by ``allowedTools``)."""
    replies = [{"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 40}, "id": "t_add"}]}, {"text": "done"}]
    out = drive("sdkMcpServer", replies)
    assert out["calls"] == [{"a": 2, "b": 40}]
    result = _result_of(out["toolResults"], "t_add")
    assert not result.get("is_error") and "the sum is 42" in json.dumps(result)
    assert out["result"]["subtype"] == "success" and out["result"]["result"] == "done"
