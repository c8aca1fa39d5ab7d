"""MCP output limits, against a real stdio server (tests/mcp_servers/raw.py).

Claude Code MCP docs (https://code.claude.com/docs/en/mcp, "MCP output limits
and warnings"): Claude Code warns when an MCP tool's output exceeds 10,000
tokens, the maximum is 25,000 tokens by default and ``MAX_MCP_OUTPUT_TOKENS``
sets it; a larger result is persisted to disk and replaced by a reference to
the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop import Registry
from agentloop.agent.context.compaction import MASK_PREFIX, ContextManager
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from mcp_servers.helpers import PY, RAW

FIVE_MB = 5 * 1024 * 1024


def raw(name: str = "raw", **env: str) -> ServerConfig:
    return ServerConfig(name, "stdio", command=PY, args=(RAW,), env=env)


def expected(size: int) -> str:
    line = "0123456789abcdef" * 4 + "\n"
    return (line * (size // len(line) + 1))[:size]


@pytest.fixture
def notices() -> list[str]:
    return []


@pytest.fixture
def manager(tmp_path: Path, notices: list[str]) -> Iterator[McpManager]:
    m = McpManager([raw()], startup_timeout=30, environ={}, notify=notices.append)
    m.output.spill_dir = str(tmp_path / "tool-results")
    try:
        yield m
    finally:
        m.close()


def invoke(m: McpManager, args: dict[str, Any]) -> dict[str, Any]:
    return Registry(m.tools()).invoke(ToolCall("c1", "mcp__raw__big", args)).to_json()


def spilled_path(text: str) -> str:
    marker = "The full output is in " if "The full output" in text else "The full error is in "
    return text.split(marker, 1)[1].split(" : ", 1)[0]


def test_a_5_mb_mcp_result_is_capped_spilled_whole_to_a_file_and_the_model_told_where(
    manager: McpManager, tmp_path: Path, notices: list[str]
) -> None:
    res = invoke(manager, {"size": FIVE_MB})
    assert res["ok"]
    content = res["content"]
    assert isinstance(content, str) and len(content) < 5_000, len(content)
    assert "over the limit of 25,000 tokens" in content and "MAX_MCP_OUTPUT_TOKENS" in content
    path = spilled_path(content)
    assert os.path.dirname(path) == os.path.realpath(tmp_path / "tool-results")
    assert Path(path).read_text() == expected(FIVE_MB)
    assert content.startswith(expected(FIVE_MB)[:1000])
    assert len(notices) == 1 and "mcp__raw__big" in notices[0] and path in notices[0]


def test_an_output_past_10000_tokens_warns_and_is_sent_whole(manager: McpManager, notices: list[str]) -> None:
    res = invoke(manager, {"size": 60_000})  # 15,000 tokens: warned, under the cap
    assert res["ok"] and res["content"] == expected(60_000)
    assert len(notices) == 1 and "over 10,000" in notices[0] and "mcp__raw__big" in notices[0]
    notices.clear()
    assert invoke(manager, {"size": 40_000})["content"] == expected(40_000)  # 10,000 tokens: quiet
    assert notices == []


def test_an_error_result_past_the_cap_is_capped_and_spilled_too(manager: McpManager) -> None:
    res = invoke(manager, {"size": 200_000, "error": True})
    assert not res["ok"] and len(res["error"]) < 5_000
    assert "The full error is in" in res["error"]
    assert Path(spilled_path(res["error"])).read_text() == expected(200_000)


def test_MAX_MCP_OUTPUT_TOKENS_sets_the_cap(tmp_path: Path) -> None:
    with McpManager([raw()], startup_timeout=30, environ={"MAX_MCP_OUTPUT_TOKENS": "1000"}) as m:
        m.output.spill_dir = str(tmp_path)
        assert m.config_warnings == []
        small = invoke(m, {"size": 4_000})
        assert small["content"] == expected(4_000)
        capped = invoke(m, {"size": 4_100})["content"]
        assert "over the limit of 1,000 tokens" in capped and len(capped) < 4_100
        assert Path(spilled_path(capped)).read_text() == expected(4_100)


def test_a_MAX_MCP_OUTPUT_TOKENS_that_is_not_a_number_is_named_in_a_warning_and_the_default_kept() -> None:
    m = McpManager([raw()], environ={"MAX_MCP_OUTPUT_TOKENS": "lots"})
    try:
        assert m.output.max_tokens == 25_000
        assert len(m.config_warnings) == 1 and "MAX_MCP_OUTPUT_TOKENS='lots'" in m.config_warnings[0]
    finally:
        m.close()


def test_the_agent_spills_capped_mcp_outputs_into_the_sessions_tool_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__raw__big", "Read"]}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "mcp__raw__big", "arguments": {"size": 300_000}}], "usage": [100, 10]},
        {"text": "done", "usage": [100, 5]},
    ]))
    seen: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}")
    a.on_notice = seen.append
    try:
        a.ask("go")
        spill = os.path.realpath(os.path.join(a.session.dir, a.session.id, "tool-results"))
        files = os.listdir(spill)
        assert len(files) == 1 and files[0].startswith("mcp__raw__big-")
        assert Path(spill, files[0]).read_text() == expected(300_000)
        read = a.registry.invoke(ToolCall("r", "Read", {"file_path": os.path.join(spill, files[0]), "limit": 2}))
        assert read.ok and "0123456789abcdef" in str(read.content)
        assert any("over the limit of 25,000" in s for s in seen)
    finally:
        a.close("prompt_input_exit")


def test_the_masking_note_says_the_transcript_keeps_only_a_head_and_hash_past_64_kib() -> None:
    from agentloop.redact import DEFAULT_MAX_VALUE_BYTES, truncated

    msgs: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, size in enumerate([100_000, 3_000, 10, 10, 10, 10, 10]):
        msgs.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "name": "t", "arguments": {}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "y" * size})
    cm = ContextManager(window=10**6, transcript_path="/s/t.jsonl")
    masked, _ = cm.mask(msgs)  # type: ignore[arg-type]
    assert masked == ["c0", "c1"]
    big, small = msgs[2]["content"], msgs[4]["content"]
    assert big.startswith(MASK_PREFIX + "100000 chars;")
    assert "keeps its first 64 KiB and the SHA-256 of the whole" in big and "whole output is kept" not in big
    assert "the whole output is kept in the session transcript /s/t.jsonl" in small
    # what the note says is what the transcript does
    assert isinstance(truncated("y" * 100_000, DEFAULT_MAX_VALUE_BYTES), dict)
    assert truncated("y" * 3_000, DEFAULT_MAX_VALUE_BYTES) == "y" * 3_000
