"""Model-visible MCP tool names never collide, and permission rules name a server exactly.

Claude Code MCP docs (https://code.claude.com/docs/en/mcp) and permissions
(https://code.claude.com/docs/en/permissions): tools are
``mcp__<server>__<tool>``; the rules ``mcp__server`` and ``mcp__server__*``
cover the tools of that one server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop import Registry
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig, model_names
from mcp_servers.helpers import PY, RAW

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
LONG = "a_tool_whose_name_goes_on_and_on_far_past_what_any_provider_accepts_in_a_function_name"


def raw(name: str, tools: str) -> ServerConfig:
    return ServerConfig(name, "stdio", command=PY, args=(RAW,), env={"RAW_TOOLS": tools})


@pytest.fixture(scope="module")
def two() -> Iterator[McpManager]:
    m = McpManager([raw("a", f"b__add_tool,get.file,get file,get/file,get_file,{LONG},"), raw("a__b", "add_tool")],
                   startup_timeout=30, environ={})
    try:
        yield m
    finally:
        m.close()


def call(m: McpManager, name: str) -> Any:
    res = Registry(m.tools()).invoke(ToolCall("c", name, {"k": 1})).to_json()
    assert res["ok"], res
    return res["content"]


def test_names_that_clean_up_alike_stay_distinct_and_each_reaches_its_own_tool(two: McpManager) -> None:
    tools = two.tools()
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and all(VALID.match(n) for n in names), names
    assert two.name_of("a", "get_file") == "mcp__a__get_file"  # the one that needed no change keeps the plain name
    for remote in ("get.file", "get file", "get/file"):
        name = two.name_of("a", remote)
        assert name.startswith("mcp__a__get_file_") and name != "mcp__a__get_file"
        assert call(two, name) == f'{remote}: {{"k": 1}}'
    assert call(two, "mcp__a__get_file") == 'get_file: {"k": 1}'


def test_a_tool_named_like_another_servers_tool_does_not_hide_it(two: McpManager) -> None:
    mine, theirs = two.name_of("a", "b__add_tool"), two.name_of("a__b", "add_tool")
    assert mine != theirs
    assert {mine, theirs} <= {t.name for t in two.tools()}
    assert call(two, mine) == 'b__add_tool: {"k": 1}'
    assert call(two, theirs) == 'add_tool: {"k": 1}'
    assert two.server_of(mine) == "a" and two.server_of(theirs) == "a__b"


def test_long_and_empty_tool_names_are_offered_within_64_characters(two: McpManager) -> None:
    two.tools()
    long_name, empty = two.name_of("a", LONG), two.name_of("a", "")
    assert len(long_name) <= 64 and VALID.match(long_name) and long_name.startswith("mcp__a__a_tool_whose")
    assert VALID.match(empty) and empty.startswith("mcp__a___") and len(empty) > len("mcp__a__")
    assert call(two, long_name).startswith(f"{LONG}: ")
    assert call(two, empty) == ': {"k": 1}'
    skipped = [k for st in two.status() for k in st.skipped]
    assert not any(k.startswith((LONG, ": ")) for k in skipped), skipped


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "a__b", "b", "x" * 60, "s-1"]),
                          st.text(alphabet="ab_./ -x", max_size=70)), max_size=12))
def test_the_mapping_is_distinct_bounded_and_independent_of_order(pairs: list[tuple[str, str]]) -> None:
    got = model_names(pairs)
    assert len(set(got.values())) == len(got)
    assert all(VALID.match(n) for n in got.values())
    assert model_names(list(reversed(pairs))) == got


def test_a_rule_for_server_a_never_covers_server_a__b(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "a": {"command": PY, "args": [RAW], "env": {"RAW_TOOLS": "b__add_tool"}},
        "a__b": {"command": PY, "args": [RAW], "env": {"RAW_TOOLS": "add_tool,drop"}},
    }}))
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {
        "allow": ["mcp__a__*"], "deny": ["mcp__a__b__drop"]}}))
    script = tmp_path / "s.json"
    script.write_text("[]")
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}")
    try:
        m = a.mcp
        assert a.policy.decide(m.name_of("a", "b__add_tool"), {}).behavior == "allow"
        assert a.policy.decide(m.name_of("a", "big"), {}).behavior == "allow"
        theirs = a.policy.decide(m.name_of("a__b", "add_tool"), {})
        assert theirs.behavior != "allow", theirs
        assert a.policy.decide(m.name_of("a__b", "drop"), {}).behavior == "deny"  # a rule naming a tool still works
        assert m.name_of("a__b", "drop") in a.policy.removed_tools(a.registry.names())
    finally:
        a.close("prompt_input_exit")
