"""The Python Claude Agent SDK (``claude-agent-sdk``, pinned in pyproject's dev extra) drives agentloop as its CLI.

The specification is the SDK itself and Claude Code's documentation of it:

- Agent SDK reference (Python): ``ClaudeAgentOptions(cli_path=...)`` runs
  another executable as the CLI; ``query()`` and ``ClaudeSDKClient`` start it
  with ``--output-format stream-json --verbose --input-format stream-json``
  (no ``-p``) and speak the control protocol on its stdin and stdout:
  ``initialize`` first, then user messages; ``interrupt()``,
  ``set_permission_mode()`` and ``set_model()`` are control requests.
- "Handling permissions": ``can_use_tool`` is called for a tool the rules
  would ask about (``--permission-prompt-tool stdio``); ``PermissionResultDeny``'s
  ``message`` tells the model why; ``PermissionResultAllow`` lets it run.
- ``system_prompt={"type": "preset", "preset": "claude_code", "append": ...}``
  adds text to the system prompt; ``max_budget_usd`` caps the spend;
  ``include_partial_messages`` streams ``StreamEvent``s; hooks are callbacks
  the CLI calls back over the control protocol (``hook_callback``).

Each test runs agentloop (this checkout) through the SDK against the scripted
model or the local fake provider speaking the Messages API.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
    query,
)

from agentloop.testing.fakeprovider import FakeProvider  # noqa: E402

SRC = Path(__file__).resolve().parent.parent / "src"


class Project:
    """A project folder, a private home, and an ``agentloop`` executable for the SDK's ``cli_path``."""

    def __init__(self, base: Path):
        self.base = base
        self.dir = base / "proj"
        self.dir.mkdir()
        (self.dir / "hello.txt").write_text("hi from the file\n")
        self.cli = base / "agentloop"
        self.cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentloop.cli.main "$@"\n')
        self.cli.chmod(0o755)
        self.stderr: list[str] = []

    def script(self, replies: list[dict[str, Any]]) -> str:
        path = self.base / f"script{len(list(self.base.glob('script*')))}.json"
        path.write_text(json.dumps(replies))
        return f"scripted:{path}"

    def options(self, model: str, env: dict[str, str] | None = None, **kw: Any) -> ClaudeAgentOptions:
        e = {"PYTHONPATH": str(SRC), "AGENTLOOP_HOME": str(self.base / "home"), "HOME": str(self.base / "user"),
             "NO_COLOR": "1", "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1", **(env or {})}
        return ClaudeAgentOptions(cli_path=str(self.cli), cwd=str(self.dir), model=model, env=e,
                                  stderr=self.stderr.append, **kw)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def _run(fn: Callable[[], Any]) -> Any:
    return anyio.run(fn)


async def _one(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": text}}


def _read_then_edit() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "hello.txt", "old_string": "hi from", "new_string": "bye from"},
                         "id": "t_edit"}]},
        {"text": "done"},
    ]


def _tool_results(msgs: list[Any]) -> dict[str, Any]:
    out = {}
    for m in msgs:
        if isinstance(m, UserMessage) and isinstance(m.content, list):
            for b in m.content:
                if getattr(b, "tool_use_id", None):
                    out[b.tool_use_id] = b
    return out


def test_a_one_shot_query_gets_the_init_the_answer_and_the_result(project: Project) -> None:
    async def go() -> list[Any]:
        return [m async for m in query(prompt="say hello", options=project.options(project.script([{"text": "hello there"}])))]

    msgs = _run(go)
    assert isinstance(msgs[0], SystemMessage) and msgs[0].subtype == "init"
    texts = [b.text for m in msgs if isinstance(m, AssistantMessage) for b in m.content]
    assert texts == ["hello there"]
    assert isinstance(msgs[-1], ResultMessage) and msgs[-1].subtype == "success" and msgs[-1].result == "hello there"


def test_streaming_input_over_several_turns_keeps_one_session(project: Project) -> None:
    model = project.script([{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}])

    async def go() -> list[ResultMessage]:
        results = []
        async with ClaudeSDKClient(project.options(model)) as client:
            for prompt in ("one", "two", "three"):
                await client.query(prompt)
                results += [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
        return results

    results = _run(go)
    assert [r.result for r in results] == ["first answer", "second answer", "third answer"]
    assert len({r.session_id for r in results}) == 1


def _edit_with(project: Project, decide: Callable[[str, dict[str, Any]], Any], **kw: Any) -> tuple[list[Any], list[tuple[str, dict[str, Any]]]]:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, args: dict[str, Any], ctx: Any) -> Any:
        asked.append((name, args))
        return decide(name, args)

    async def go() -> list[Any]:
        opts = project.options(project.script(_read_then_edit()), can_use_tool=can_use_tool, **kw)
        return [m async for m in query(prompt=_one("change the greeting"), options=opts)]

    return _run(go), asked


def test_can_use_tool_denies_an_edit_and_its_message_reaches_the_model(project: Project) -> None:
    msgs, asked = _edit_with(project, lambda n, a: PermissionResultDeny(message="not in this file, please"))
    assert [n for n, _ in asked] == ["Edit"]  # Read needs no permission: it is not asked about
    result = _tool_results(msgs)["t_edit"]
    assert result.is_error and "not in this file, please" in str(result.content)
    assert (project.dir / "hello.txt").read_text() == "hi from the file\n"
    assert isinstance(msgs[-1], ResultMessage) and [d["tool_name"] for d in msgs[-1].permission_denials] == ["Edit"]


def test_can_use_tool_allows_an_edit_and_it_is_made(project: Project) -> None:
    msgs, asked = _edit_with(project, lambda n, a: PermissionResultAllow())
    assert [n for n, _ in asked] == ["Edit"] and asked[0][1]["old_string"] == "hi from"
    assert not _tool_results(msgs)["t_edit"].is_error
    assert (project.dir / "hello.txt").read_text() == "bye from the file\n"


def test_can_use_tool_may_allow_other_arguments_which_are_the_ones_run(project: Project) -> None:
    msgs, _ = _edit_with(project, lambda n, a: PermissionResultAllow(updated_input={**a, "new_string": "hello from"}))
    assert (project.dir / "hello.txt").read_text() == "hello from the file\n"


def test_set_permission_mode_accept_edits_lets_the_edit_through_without_asking(project: Project) -> None:
    asked: list[str] = []

    async def can_use_tool(name: str, args: dict[str, Any], ctx: Any) -> Any:
        asked.append(name)
        return PermissionResultDeny(message="no")

    async def go() -> None:
        async with ClaudeSDKClient(project.options(project.script(_read_then_edit()), can_use_tool=can_use_tool)) as client:
            await client.set_permission_mode("acceptEdits")
            await client.query("change the greeting")
            [m async for m in client.receive_response()]

    _run(go)
    assert asked == []
    assert (project.dir / "hello.txt").read_text() == "bye from the file\n"


def test_interrupt_stops_the_turn_and_the_next_prompt_is_answered_in_the_same_process(project: Project) -> None:
    model = project.script([{"text": "too slow", "delay_ms": 60_000}, {"text": "after the interrupt"}])

    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(project.options(model)) as client:
            await client.query("take your time")
            await anyio.sleep(2)
            with anyio.fail_after(20):
                await client.interrupt()
                first = [m async for m in client.receive_response()]
                await client.query("and now?")
                second = [m async for m in client.receive_response()]
            return first, second

    first, second = _run(go)
    assert isinstance(first[-1], ResultMessage) and first[-1].is_error
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "after the interrupt"
    assert first[-1].session_id == second[-1].session_id


def test_an_appended_system_prompt_reaches_the_model(project: Project) -> None:
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        async def go() -> list[Any]:
            opts = project.options("anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": "sk-test"},
                                   system_prompt={"type": "preset", "preset": "claude_code", "append": "Always answer like a pirate."})
            return [m async for m in query(prompt="hello", options=opts)]

        msgs = _run(go)
        system = json.dumps(fp.requests[0]["body"]["system"])
    assert isinstance(msgs[-1], ResultMessage) and msgs[-1].result == "ok"
    assert "Always answer like a pirate." in system


def test_include_partial_messages_streams_the_text_as_stream_events(project: Project) -> None:
    async def go() -> list[Any]:
        opts = project.options(project.script([{"text": "streamed words"}]), include_partial_messages=True)
        return [m async for m in query(prompt="hello", options=opts)]

    events = [m.event for m in _run(go) if isinstance(m, StreamEvent)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta") == "streamed words"


def test_max_budget_usd_is_the_spend_cap(project: Project) -> None:
    async def go() -> list[Any]:
        opts = project.options(project.script([{"text": "cheap"}]), max_budget_usd=0.25)
        return [m async for m in query(prompt="hello", options=opts)]

    _run(go)
    assert any("spend cap $0.250000" in line for line in project.stderr)


def test_a_hook_callback_is_called_and_can_block_a_tool(project: Project) -> None:
    seen: list[dict[str, Any]] = []

    async def pre_tool_use(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        seen.append(data)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "reading is off today"}}

    async def go() -> list[Any]:
        model = project.script([{"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]},
                                {"text": "could not read"}])
        opts = project.options(model, hooks={"PreToolUse": [HookMatcher(matcher="Read", hooks=[pre_tool_use])]})
        return [m async for m in query(prompt=_one("read it"), options=opts)]

    msgs = _run(go)
    assert [d["tool_name"] for d in seen] == ["Read"] and seen[0]["hook_event_name"] == "PreToolUse"
    result = _tool_results(msgs)["t_read"]
    assert result.is_error and "reading is off today" in str(result.content)


def test_set_model_answers_the_next_prompt_with_the_model_named(project: Project) -> None:
    first = project.script([{"text": "from the first model"}])
    second = project.script([{"text": "from the second model"}])

    async def go() -> list[str | None]:
        out = []
        async with ClaudeSDKClient(project.options(first)) as client:
            await client.query("one")
            out += [m.result async for m in client.receive_response() if isinstance(m, ResultMessage)]
            await client.set_model(second)
            await client.query("two")
            out += [m.result async for m in client.receive_response() if isinstance(m, ResultMessage)]
        return out

    assert _run(go) == ["from the first model", "from the second model"]


def test_a_hook_that_asks_puts_the_question_to_can_use_tool_and_its_deny_holds(project: Project) -> None:
    """Hooks reference: ``permissionDecision: "ask"`` asks the user; here the user is the SDK's canUseTool."""
    asked: list[str] = []

    async def ask_hook(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}

    async def can_use_tool(name: str, args: dict[str, Any], ctx: Any) -> Any:
        asked.append(name)
        return PermissionResultDeny(message="no reading today")

    async def go() -> list[Any]:
        model = project.script([{"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]},
                                {"text": "could not"}])
        opts = project.options(model, can_use_tool=can_use_tool, hooks={"PreToolUse": [HookMatcher(matcher="Read", hooks=[ask_hook])]})
        return [m async for m in query(prompt=_one("read it"), options=opts)]

    result = _tool_results(_run(go))["t_read"]
    assert asked == ["Read"]
    assert result.is_error and "no reading today" in str(result.content)


def _calc_server(calls: list[dict[str, Any]], *, broken: bool = False) -> Any:
    """An in-process SDK MCP server ``calc`` with one tool ``add`` (``create_sdk_mcp_server`` + ``@tool``)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("add", "add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"the sum is {args['a'] + args['b']}"}]}

    return create_sdk_mcp_server("calc", tools=[add])


def _add_then_answer() -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 40}, "id": "t_add"}]}, {"text": "done"}]


def test_an_in_process_sdk_mcp_server_s_tool_is_called_by_the_model_and_its_result_reaches_it(project: Project) -> None:
    """Agent SDK reference, "Custom tools": ``create_sdk_mcp_server`` servers run in the SDK's process; the CLI
    reaches them with ``mcp_message`` control requests (the answer's ``mcp_response`` is the server's JSON-RPC
    reply), and their tools are ``mcp__<server>__<tool>``, allowed like any MCP tool by ``allowed_tools``."""
    calls: list[dict[str, Any]] = []

    async def go() -> list[Any]:
        opts = project.options(project.script(_add_then_answer()), mcp_servers={"calc": _calc_server(calls)},
                               allowed_tools=["mcp__calc__add"])
        return [m async for m in query(prompt="add 2 and 40", options=opts)]

    msgs = _run(go)
    init = msgs[0]
    assert isinstance(init, SystemMessage) and "mcp__calc__add" in init.data["tools"]
    assert {"name": "calc", "status": "connected"} in init.data["mcp_servers"]
    assert calls == [{"a": 2, "b": 40}]
    result = _tool_results(msgs)["t_add"]
    assert not result.is_error and "the sum is 42" in str(result.content)
    assert isinstance(msgs[-1], ResultMessage) and msgs[-1].subtype == "success" and msgs[-1].result == "done"


def test_an_in_process_sdk_mcp_server_s_tool_goes_through_the_permission_rules(project: Project) -> None:
    """Permissions apply to SDK MCP tools as to any MCP tool: with no allow rule the call is asked about
    (``can_use_tool``), and a deny there keeps the server's tool from running."""
    calls: list[dict[str, Any]] = []
    asked: list[str] = []

    async def decide(name: str, args: dict[str, Any], ctx: Any) -> Any:
        asked.append(name)
        return PermissionResultDeny(message="no sums today")

    async def go() -> list[Any]:
        opts = project.options(project.script(_add_then_answer()), mcp_servers={"calc": _calc_server(calls)},
                               can_use_tool=decide)
        client = ClaudeSDKClient(opts)
        async with client:
            await client.query("add 2 and 40")
            return [m async for m in client.receive_response()]

    msgs = _run(go)
    assert asked == ["mcp__calc__add"] and calls == []
    result = _tool_results(msgs)["t_add"]
    assert result.is_error and "no sums today" in str(result.content)
