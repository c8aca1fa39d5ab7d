"""Stdio MCP servers inherit the user's environment minus the agent's provider keys and unallowed secret-named variables; structured results reach the model once.

Claude Code MCP docs (https://code.claude.com/docs/en/mcp): a local stdio
server runs as a process on the user's machine with the user's environment;
``env`` entries (``--env KEY=value``) are added to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentloop import Registry
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from mcp_servers.helpers import PY, PYSERVER, RAW

USER_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "AL_SHELL_SETTING": "exported-in-the-shell",
    "AL_SHELL_TOKEN": "a-token-in-the-shell",
    "OPENAI_API_KEY": "sk-openai-of-the-agent",
    "ANTHROPIC_API_KEY": "sk-ant-of-the-agent",
    "MY_PROVIDER_KEY": "key-the-agent-reads",
}


def getenv(m: McpManager, name: str) -> Any:
    return m.call("py", "getenv", {"name": name})


def test_a_stdio_server_inherits_the_users_environment_but_not_the_agents_provider_keys() -> None:
    cfg = ServerConfig("py", "stdio", command=PY, args=(PYSERVER,))
    with McpManager([cfg], environ=USER_ENV, withhold=["MY_PROVIDER_KEY"], startup_timeout=30) as m:
        m.tools()
        assert getenv(m, "AL_SHELL_SETTING") == "exported-in-the-shell"
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_PROVIDER_KEY", "AL_SHELL_TOKEN"):
            assert getenv(m, key) == "<unset>", key
    with McpManager([cfg], environ=USER_ENV, allow_env=["AL_SHELL_TOKEN"], startup_timeout=30) as m:
        m.tools()
        assert getenv(m, "AL_SHELL_TOKEN") == "a-token-in-the-shell"  # the user's allowedEnvVars names it


def test_a_provider_key_reaches_a_server_only_when_its_env_names_it() -> None:
    cfg = ServerConfig("py", "stdio", command=PY, args=(PYSERVER,), env={"OPENAI_API_KEY": "${OPENAI_API_KEY}"})
    with McpManager([cfg], environ=USER_ENV, startup_timeout=30) as m:
        m.tools()
        assert getenv(m, "OPENAI_API_KEY") == "sk-openai-of-the-agent"
        assert getenv(m, "ANTHROPIC_API_KEY") == "<unset>"


@pytest.mark.parametrize("key_env", ["MY_PROVIDER_KEY", "LLM_ACCESS"])
def test_the_agent_withholds_the_key_variable_it_was_configured_with(key_env: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``--api-key-env NAME``: the key that pays for the model reaches no stdio server, whatever NAME is (one
    without KEY or TOKEN in it too), neither by that name nor its value under another."""
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"py": {"command": PY, "args": [PYSERVER]}}}))
    script = tmp_path / "s.json"
    script.write_text("[]")
    env = {**USER_ENV, "AGENTLOOP_HOME": str(tmp_path / "home"), key_env: "paid-model-access-0123456789",
           "A_COPY_OF_IT": "paid-model-access-0123456789"}
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}", env=env, api_key_env=key_env)
    try:
        m = a.mcp
        assert getenv(m, "AL_SHELL_SETTING") == "exported-in-the-shell"
        assert getenv(m, "AL_SHELL_TOKEN") == "<unset>"
        assert getenv(m, key_env) == "<unset>" and getenv(m, "A_COPY_OF_IT") == "<unset>"
        assert getenv(m, "OPENAI_API_KEY") == "<unset>"
        assert getenv(m, "CLAUDE_PROJECT_DIR") == str(proj)
    finally:
        a.close("prompt_input_exit")


def test_structured_content_is_sent_once_unless_the_text_says_something_else() -> None:
    with McpManager([ServerConfig("raw", "stdio", command=PY, args=(RAW,))],
                    in_process={}, environ={}, startup_timeout=30) as m:
        reg = Registry(m.tools())
        both = reg.invoke(ToolCall("c", "mcp__raw__summary", {})).to_json()["content"]
        assert both == {"content": [{"type": "text", "text": "3 rows"}], "structuredContent": {"rows": [1, 2, 3]}}
    from mcp_servers import pyserver

    with McpManager(in_process={"py": pyserver.server}) as m:
        reg = Registry(m.tools())
        added = reg.invoke(ToolCall("c", "mcp__py__add", {"a": 1, "b": 2})).to_json()["content"]
        assert isinstance(added, str) and json.loads(added) == {"total": 3.0, "terms": 2}
        assert added.count("total") == 1
        echoed = reg.invoke(ToolCall("c", "mcp__py__echo", {"text": "hi"})).to_json()["content"]
        assert echoed == "echo: hi"
