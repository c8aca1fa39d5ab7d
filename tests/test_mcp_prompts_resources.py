"""MCP prompts as slash commands, resources attached with @server:uri, and the model's resource tools.

Claude Code MCP docs (https://code.claude.com/docs/en/mcp): prompts become
commands ``/mcp__servername__promptname`` taking space-separated arguments;
``@server:protocol://resource/path`` mentions attach a resource; the model
lists and reads resources with ListMcpResourcesTool and ReadMcpResourceTool
(Claude Code settings, tools available to Claude: neither needs permission).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.mcp.client import McpToolError
from agentloop.transcript import read_records
from mcp_servers.helpers import PY, RAW


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    return proj


def test_a_prompt_is_a_slash_command_and_a_resource_mention_attaches_it(tmp_path: Path, scripted: Callable[..., str]) -> None:
    from _pty import Term, env_for

    home = tmp_path / "home"
    proj = project(tmp_path)
    spec = scripted([{"text": "hello Ada", "usage": [10, 2]}, {"text": "read it", "usage": [10, 2]}])
    t = Term(["--trust", "--model", spec], cwd=str(proj), env=env_for(str(home)))
    try:
        t.wait_for(r"(?m)^>")
        t.wait_for(r"(?m)/ \$5\.000000 \(\d+%\) ?$")  # the server is up: the status line no longer says "mcp 0/1 starting"
        t.type("/help")
        t.wait_for(r"/mcp__raw__greet — MCP prompt of raw: Say hello")
        t.type("/mcp__raw__greet")
        t.wait_for(r"error: /mcp__raw__greet needs who: /mcp__raw__greet <who>")
        t.type("/mcp__raw__greet Ada")
        t.wait_for(r"hello Ada")
        t.type("what is in @raw:raw://readme?")
        t.wait_for(r"attached raw:raw://readme")
        t.wait_for(r"read it")
        t.type("/quit")
        t.wait_exit()
    finally:
        t.kill()
    (path,) = glob.glob(str(home / "projects" / "*" / "sessions" / "*.jsonl"))
    users = [r.payload["messages"][-1]["content"] for r in read_records(path) if r.kind == "run_start"]
    assert users[0] == "Say hello to Ada."
    assert users[1].startswith("what is in @raw:raw://readme?")
    assert '<resource server="raw" uri="raw://readme">\nthe contents of raw://readme\n</resource>' in users[1]


def test_the_model_lists_and_reads_resources_without_asking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted: Callable[..., str]) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj = project(tmp_path)
    spec = scripted([
        {"text": "", "tool_calls": [{"name": "ListMcpResourcesTool", "arguments": {}},
                                    {"name": "ReadMcpResourceTool", "arguments": {"server": "raw", "uri": "raw://readme"}},
                                    {"name": "ReadMcpResourceTool", "arguments": {"server": "raw", "uri": "raw://nothing"}}],
         "usage": [10, 2]},
        {"text": "done", "usage": [10, 2]},
    ])
    a = Agent(cwd=str(proj), trust=True, model=spec)  # no one to ask: a tool needing permission would be denied
    try:
        assert {"ListMcpResourcesTool", "ReadMcpResourceTool"} <= set(a.registry.names())
        a.ask("what resources are there?")
    finally:
        a.close("prompt_input_exit")
    results = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    listed, read, missing = results
    assert listed["ok"] and json.loads(listed["content"]) == [
        {"server": "raw", "uri": "raw://readme", "name": "readme", "mimeType": "text/plain"}]
    assert read["ok"] and read["content"] == "the contents of raw://readme"
    assert not missing["ok"] and "no resource raw://nothing" in missing["error"]


def test_a_prompt_with_too_few_arguments_says_its_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted: Callable[..., str]) -> None:
    from agentloop.agent.agent import Agent
    from agentloop.mcp.agent import run_prompt

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    a = Agent(cwd=str(project(tmp_path)), trust=True, model=scripted([]))
    try:
        with pytest.raises(McpToolError, match=r"/mcp__raw__greet needs who: /mcp__raw__greet <who>"):
            run_prompt(a.mcp_servers, "mcp__raw__greet", "")
        assert run_prompt(a.mcp_servers, "mcp__raw__greet", "Grace Hopper") == "Say hello to Grace Hopper."
        assert run_prompt(a.mcp_servers, "mcp__raw__nosuch", "") is None
    finally:
        a.close("prompt_input_exit")


def test_the_repl_completes_resource_mentions_and_prompt_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted: Callable[..., str]) -> None:
    from prompt_toolkit.document import Document

    from agentloop.agent.agent import Agent
    from agentloop.cli.repl import Repl, _completer

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    a = Agent(cwd=str(project(tmp_path)), trust=True, model=scripted([]))
    try:
        repl = Repl.__new__(Repl)
        repl.agent = a
        repl.commands = {}
        done = _completer(repl)
        mentions = [c.text for c in done.get_completions(Document("look at @raw:raw"), None)]
        assert mentions == ["raw:raw://readme"]
        commands = [c.text for c in done.get_completions(Document("/mcp__raw"), None)]
        assert commands == ["/mcp__raw__greet"]
    finally:
        a.close("prompt_input_exit")


def test_print_mode_runs_an_mcp_prompt_command(tmp_path: Path, scripted: Callable[..., str]) -> None:
    """``agentloop -p "/mcp__raw__greet Ada"`` sends the prompt's text, as the REPL does."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    proj = project(tmp_path)
    spec = scripted([{"text": "hello Ada", "usage": [10, 2]}])
    env = {**os.environ, "AGENTLOOP_HOME": str(home), "HOME": str(home), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "agentloop.cli.main", "--trust", "--model", spec]
    done = subprocess.run([*argv, "-p", "/mcp__raw__greet Ada"], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "hello Ada" in done.stdout
    (path,) = glob.glob(str(home / "projects" / "*" / "sessions" / "*.jsonl"))
    (start,) = [r.payload for r in read_records(path) if r.kind == "run_start"]
    assert start["messages"][-1]["content"] == "Say hello to Ada."
    missing = subprocess.run([*argv, "-p", "/mcp__raw__greet"], cwd=proj, env=env,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert "/mcp__raw__greet needs who" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_slash_mcp_lists_each_servers_prompts_and_resources_as_they_are_used(tmp_path: Path, scripted: Callable[..., str]) -> None:
    """Claude Code's /mcp shows a server's tools, prompts and resources; the prompts by the slash command
    that runs them, the resources by the @server:uri mention that attaches them."""
    from agentloop.agent.agent import Agent

    proj = project(tmp_path)
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "hi"}]))
    try:
        status = a.mcp_status()
    finally:
        a.close("done")
    assert "prompt /mcp__raw__greet — Say hello" in status
    assert "resource @raw:raw://readme — readme" in status
