"""``-p`` output type-checked against the Agent SDK's own published types.

The specification is the npm package ``@anthropic-ai/claude-agent-sdk``'s
``sdk.d.ts`` (``SDKMessage`` and the Messages API types it imports from
``@anthropic-ai/sdk``), installed pinned by ``scripts/setup-test-peers``, and
Claude Code's documentation:

- Headless mode ("Get structured output", "Stream responses"): ``--output-format
  json`` prints one ``result``; ``stream-json`` one message a line;
  ``--include-partial-messages`` adds ``stream_event`` lines carrying the raw
  Messages API stream events; ``--json-schema`` puts the validated value in
  ``structured_output``.
- CLI reference: ``--input-format stream-json``, ``--include-partial-messages``,
  ``--json-schema``, ``--max-turns``, ``--verbose``.
- Agent SDK reference (TypeScript), "Message Types": ``SDKSystemMessage``
  (``init``: ``skills``, ``plugins``, ``agents``...), ``SDKAssistantMessage``
  (``parent_tool_use_id``), ``SDKResultMessage`` (``modelUsage`` of
  ``ModelUsage``, ``errors`` on error subtypes, ``structured_output``),
  ``SDKPartialAssistantMessage``, ``SDKAPIRetryMessage`` (``api_retry``).

Every scenario's captured stdout is written as one TypeScript constant typed
``Array<SDKMessage & AgentloopExtras>`` and the file is checked with ``tsc
--noEmit --strict`` once for the module: a missing field, a wrong literal, a
misspelled or unknown field (object literals are checked for excess
properties) fails the scenario's test. ``AgentloopExtras`` names the fields
agentloop documents beside Claude Code's (``claude_format``), and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SDK_MODULES = REPO / ".cache" / "npm-sdk" / "node_modules"
TSC = SDK_MODULES / "typescript" / "bin" / "tsc"
AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]

EXTRAS = """
type AgentloopExtras = {
  agentloop_version?: string;
  agentloop_stop_reason?: string;
  error?: string | null;
  cost_micros?: number;
  session_cost_micros?: number;
  transcript?: string;
};
"""


def _need_sdk() -> None:
    if TSC.is_file() and (SDK_MODULES / "@anthropic-ai" / "claude-agent-sdk" / "sdk.d.ts").is_file():
        return
    msg = f"the Agent SDK's types are not installed in {SDK_MODULES.parent}; run scripts/setup-test-peers"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def typecheck(scenarios: dict[str, list[dict[str, Any]]], where: Path) -> dict[str, list[str]]:
    """``tsc --noEmit --strict`` over every scenario's messages at once: each scenario's errors."""
    where.mkdir(parents=True, exist_ok=True)
    link = where / "node_modules"
    if not link.exists():
        link.symlink_to(SDK_MODULES)
    lines = ['import type { SDKMessage } from "@anthropic-ai/claude-agent-sdk";', *EXTRAS.strip().splitlines()]
    spans: dict[str, tuple[int, int]] = {}
    for name, msgs in scenarios.items():
        first = len(lines) + 1
        lines.append(f"export const {name}: Array<SDKMessage & AgentloopExtras> = [")
        for m in msgs:
            lines.append(json.dumps(m, ensure_ascii=False) + ",")  # one message a line: an error's line names it
        lines.append("];")
        spans[name] = (first, len(lines))
    (where / "out.ts").write_text("\n".join(lines) + "\n")
    p = subprocess.run(
        ["node", str(TSC), "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "esnext",
         "--moduleResolution", "bundler", "--types", "node", "out.ts"],
        cwd=where, capture_output=True, text=True, timeout=300,
    )
    errors: dict[str, list[str]] = {name: [] for name in scenarios}
    for ln in p.stdout.splitlines():
        m = re.match(r"out\.ts\((\d+),\d+\): (.*)", ln)
        if m is None:
            continue
        at = int(m.group(1))
        name = next((n for n, (a, b) in spans.items() if a <= at <= b), "?")
        errors.setdefault(name, []).append(f"{lines[at - 1][:300]}\n  -> {m.group(2)}")
    assert p.returncode in (0, 2) and not errors.get("?"), p.stdout + p.stderr
    return errors


# --- the scenarios: each one -p run, its stdout as messages ---

READ_THEN_ANSWER = [
    {"text": "Reading the file.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}], "usage": [100, 10]},
    {"text": "The file says hi.", "usage": [150, 5]},
]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

MCP_BLOCKS_SERVER = textwrap.dedent('''
    import base64
    from fastmcp import FastMCP
    from mcp.types import EmbeddedResource, ImageContent, TextContent, TextResourceContents

    PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
    server = FastMCP("blocks")

    @server.tool(annotations={"readOnlyHint": True})
    def shot() -> list:
        """A caption, a picture and a note."""
        return [
            TextContent(type="text", text="the caption"),
            ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png"),
            EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///note.txt", mimeType="text/plain", text="the note")),
        ]

    server.run(show_banner=False)
''')


class Runs:
    """Runs ``agentloop -p`` in a project of its own, with a private home."""

    def __init__(self, base: Path):
        self.base = base
        self.n = 0

    def env(self) -> dict[str, str]:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
        e.update(AGENTLOOP_HOME=str(self.base / "home"), HOME=str(self.base / "user"), NO_COLOR="1")
        return e

    def run(self, replies: list[dict[str, Any]] | None, args: list[str], *, input: str | None = None,
            env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
        self.n += 1
        proj = self.base / f"proj{self.n}"
        proj.mkdir(parents=True)
        (proj / "hello.txt").write_text("hi from the file\n")
        model: list[str] = []
        if replies is not None:
            script = self.base / f"script{self.n}.json"
            script.write_text(json.dumps(replies))
            model = ["--model", f"scripted:{script}"]
        p = subprocess.run([*AGENTLOOP, "-p", *args, *model], cwd=proj, env={**self.env(), **(env or {})}, input=input,
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL if input is None else None)
        return p, [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]


def _fake_run(runs: Runs, name: str, replies: list[dict[str, Any]], args: list[str]) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``-p`` against the local fake provider speaking Anthropic's Messages API (its faults, its thinking blocks)."""
    script = runs.base / f"{name}.json"
    script.write_text(json.dumps({"replies": replies}))
    srv = subprocess.Popen([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", str(script), "--port", "0"],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        url = srv.stdout.readline().strip()
        return runs.run(None, [*args, "--model", "anthropic:claude-haiku-4-5"], env={"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-test"})
    finally:
        srv.terminate()
        srv.wait(10)


def _explore(i: int) -> dict[str, Any]:
    return {"name": "Agent", "id": f"toolu_{i}", "arguments": {"description": f"look {i}", "prompt": f"Say {i}", "subagent_type": "Explore"}}


def _scenarios(runs: Runs) -> dict[str, tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]]:
    stream = ["--output-format", "stream-json", "--verbose"]
    mcp = runs.base / "blocks_server.py"
    mcp.write_text(MCP_BLOCKS_SERVER)
    mcp_config = json.dumps({"mcpServers": {"blocks": {"command": sys.executable, "args": [str(mcp)]}}})
    out = {
        "json_result": runs.run(READ_THEN_ANSWER, ["read hello.txt", "--output-format", "json"]),
        "json_verbose": runs.run(READ_THEN_ANSWER, ["read hello.txt", "--output-format", "json", "--verbose"]),
        "stream_verbose": runs.run(READ_THEN_ANSWER, ["read hello.txt", *stream]),
        "stream_partial": runs.run(READ_THEN_ANSWER, ["read hello.txt", *stream, "--include-partial-messages"]),
        "stream_input": runs.run(
            [{"text": "first answer"}, {"text": "second answer"}], ["--input-format", "stream-json", *stream, "--include-partial-messages"],
            input="".join(json.dumps({"type": "user", "message": {"role": "user", "content": t}}) + "\n" for t in ("one", "two")),
        ),
        "max_turns": runs.run(READ_THEN_ANSWER, ["read hello.txt", *stream, "--max-turns", "1"]),
        "subagent": runs.run([
            {"text": "", "tool_calls": [{"name": "Agent", "id": "toolu_agent_1",
                                         "arguments": {"description": "look around", "prompt": "Read hello.txt", "subagent_type": "Explore"}}]},
            {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}]},
            {"text": "It says hi."},
            {"text": "The helper says the file says hi."},
        ], ["look", *stream, "--include-partial-messages"]),
        "subagents_together": runs.run(
            [{"text": "", "tool_calls": [_explore(1), _explore(2)]}, {"text": "child answer"}, {"text": "child answer"}, {"text": "both done"}],
            ["look twice", *stream],
        ),
        "mcp_blocks": runs.run(
            [{"text": "", "tool_calls": [{"name": "mcp__blocks__shot", "arguments": {}}]}, {"text": "seen"}],
            ["show it", *stream, "--mcp-config", mcp_config, "--allowedTools", "mcp__blocks__shot"],
        ),
        "api_retry": _fake_run(runs, "retry", [{"fault": "529", "retry_after": 0}, {"fault": "500"}, {"text": "ok"}], ["hi", *stream]),
        "fallback": _fake_run(runs, "fallback", [
            {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}]},
            *[{"fault": "529", "retry_after": 0}] * 4,
            {"text": "It says hi."},
        ], ["read it", "--output-format", "json", "--fallback-model", "anthropic:claude-sonnet-4-5"]),
        "thinking_partial": _fake_run(runs, "thinking", [{"thinking": "check the file first", "text": "It is fine."}],
                                      ["hi", *stream, "--include-partial-messages", "--thinking", "2000"]),
        "schema_ok": runs.run([{"text": '{"n": 3}'}], ["count", "--output-format", "json", "--json-schema", json.dumps(SCHEMA)]),
        "schema_retried": runs.run([{"text": "three"}, {"text": 'Here:\n```json\n{"n": 3}\n```'}],
                                   ["count", *stream, "--json-schema", json.dumps(SCHEMA)]),
        "schema_failed": runs.run([{"text": "three"}, {"text": '{"n": "3"}'}, {"text": "3"}],
                                  ["count", "--output-format", "json", "--json-schema", json.dumps(SCHEMA)]),
    }
    return out


BAD = {
    # the harness's own control: each of these breaks the SDK's types, and tsc must say so
    "control_no_parent": [{"type": "assistant", "message": {}, "session_id": "s", "uuid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}],
    "control_unknown_field": [{"type": "system", "subtype": "informational", "content": "x", "level": "warning", "text": "x",
                               "session_id": "s", "uuid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}],
    "control_old_notice": [{"type": "system", "subtype": "notice", "text": "x", "session_id": "s", "uuid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}],
}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _need_sdk()
    base = tmp_path_factory.mktemp("sdk")
    runs = _scenarios(Runs(base))
    errors = typecheck({**{k: v[1] for k, v in runs.items()}, **BAD}, base / "ts")
    return {"runs": runs, "errors": errors}


def messages(captured: dict[str, Any], name: str, code: int = 0) -> list[dict[str, Any]]:
    """A scenario's messages, after checking its exit code and that they type-check."""
    p, msgs = captured["runs"][name]
    assert p.returncode == code, p.stderr
    assert captured["errors"][name] == [], "\n".join(captured["errors"][name])
    return msgs


def test_the_type_check_catches_messages_that_break_the_sdk_types(captured: dict[str, Any]) -> None:
    """The harness has teeth: a message without ``parent_tool_use_id``, a field the type lacks, and the
    old ``notice`` subtype are each refused by ``tsc`` against ``sdk.d.ts``."""
    for name in BAD:
        assert captured["errors"][name], name


def test_json_output_is_an_sdk_result_with_model_usage_in_full(captured: dict[str, Any]) -> None:
    """Headless mode, ``--output-format json``; SDK reference ``SDKResultMessage`` and ``ModelUsage``:
    every ``modelUsage`` entry has ``maxOutputTokens`` and ``contextWindow``; ``usage`` is a whole usage."""
    (result,) = messages(captured, "json_result")
    assert result["type"] == "result" and result["subtype"] == "success" and result["result"] == "The file says hi."
    (usage,) = result["modelUsage"].values()
    assert usage["maxOutputTokens"] > 0 and usage["contextWindow"] > 0
    assert usage["inputTokens"] == 250 and usage["outputTokens"] == 15
    assert result["usage"]["server_tool_use"] == {"web_search_requests": 0, "web_fetch_requests": 0}
    # --verbose is agentloop's logging switch: json stays the one documented result object
    (verbose,) = messages(captured, "json_verbose")
    assert verbose["type"] == "result" and verbose["result"] == "The file says hi."


def test_model_usage_has_an_entry_for_each_model_that_answered(captured: dict[str, Any]) -> None:
    """SDK ``SDKResultMessage.modelUsage`` (``Record<string, ModelUsage>``): the model that answered the first
    turn and the fallback that answered after it was overloaded each have their own entry, the costs adding up."""
    (result,) = messages(captured, "fallback")
    usage = result["modelUsage"]
    assert set(usage) == {"claude-haiku-4-5", "claude-sonnet-4-5"}
    assert all(u["outputTokens"] > 0 and u["maxOutputTokens"] > 0 for u in usage.values())
    assert abs(sum(u["costUSD"] for u in usage.values()) - result["total_cost_usd"]) < 1e-9


def test_stream_json_is_init_then_turns_then_result(captured: dict[str, Any]) -> None:
    """Headless mode, "Stream responses"; SDK reference ``SDKSystemMessage``: ``init`` carries ``skills``,
    ``plugins``, ``agents`` and ``claude_code_version``; turns and tool results follow; ``result`` last."""
    msgs = messages(captured, "stream_verbose")
    init = msgs[0]
    assert init["subtype"] == "init" and {"skills", "plugins", "agents", "claude_code_version"} <= set(init)
    assert "Explore" in init["agents"] and "general-purpose" in init["agents"]
    assert [m["type"] for m in msgs] == ["system", "assistant", "user", "assistant", "result"]
    tool_result = msgs[2]["message"]["content"][0]
    assert tool_result["type"] == "tool_result" and "hi from the file" in str(tool_result["content"])


def test_partial_messages_carry_the_whole_anthropic_stream(captured: dict[str, Any]) -> None:
    """CLI reference ``--include-partial-messages``; SDK ``SDKPartialAssistantMessage``: each model call is
    ``message_start``, content blocks (text deltas, the call's ``input_json_delta``) with start and stop,
    ``message_delta`` (stop reason) and ``message_stop``, under the id its ``assistant`` message has."""
    msgs = messages(captured, "stream_partial")
    first = msgs[1:msgs.index(next(m for m in msgs if m["type"] == "assistant")) + 1]
    events = [m["event"] for m in first if m["type"] == "stream_event"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == 2 and kinds.count("content_block_stop") == 2
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")
    assert text == "Reading the file."
    (args,) = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"]
    assert json.loads(args) == {"file_path": "hello.txt"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assistant = first[-1]
    assert assistant["type"] == "assistant" and events[0]["message"]["id"] == assistant["message"]["id"]


def test_each_streamed_turn_has_its_own_message_id(captured: dict[str, Any]) -> None:
    """CLI reference ``--input-format stream-json``: two prompts, two results; the ``BetaMessage`` of each
    turn has an id of its own (Messages API: every message has a unique id)."""
    msgs = messages(captured, "stream_input")
    ids = [m["message"]["id"] for m in msgs if m["type"] == "assistant"]
    assert len(ids) == 2 and len(set(ids)) == 2
    started = [m["event"]["message"]["id"] for m in msgs if m["type"] == "stream_event" and m["event"]["type"] == "message_start"]
    assert started == ids  # each turn's stream events carry its assistant message's id
    assert [m["result"] for m in msgs if m["type"] == "result"] == ["first answer", "second answer"]
    ids = [m["message"]["id"] for m in messages(captured, "stream_verbose") if m["type"] == "assistant"]
    assert len(set(ids)) == len(ids) == 2


def test_max_turns_result_names_its_error(captured: dict[str, Any]) -> None:
    """CLI reference ``--max-turns``; SDK ``SDKResultError``: ``error_max_turns`` carries ``errors``."""
    result = messages(captured, "max_turns", code=1)[-1]
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert result["errors"] and "turns" in result["errors"][0]


def test_sub_agent_turns_are_streamed_under_their_agent_call(captured: dict[str, Any]) -> None:
    """SDK reference ``SDKAssistantMessage.parent_tool_use_id`` (sub-agents, "Subagents in the SDK"): the
    child's prompt, turns and tool results come between the ``Agent`` call and its result, each naming it."""
    msgs = messages(captured, "subagent")
    child = [m for m in msgs if m.get("parent_tool_use_id") == "toolu_agent_1"]
    kinds = [m["type"] for m in child if m["type"] != "stream_event"]
    assert kinds == ["user", "assistant", "user", "assistant"]
    assert child[0]["message"]["content"][0]["text"] == "Read hello.txt"
    assert any(m["type"] == "stream_event" for m in child)  # partial messages of the child, too
    top = [m for m in msgs if m.get("parent_tool_use_id") is None and m["type"] in ("assistant", "user")]
    assert [m["type"] for m in top] == ["assistant", "user", "assistant"]
    call_at = msgs.index(top[0])
    result_at = msgs.index(top[1])
    assert all(call_at < msgs.index(m) < result_at for m in child)
    ids = [m["message"]["id"] for m in msgs if m["type"] == "assistant"]
    assert len(set(ids)) == len(ids) == 4


def test_sub_agents_run_side_by_side_each_stream_under_their_own_call(captured: dict[str, Any]) -> None:
    """Two read-only sub-agents started in one turn run together: each one's messages name its own
    ``Agent`` call, and both calls' ``tool_result`` messages follow before the parent's next turn."""
    msgs = messages(captured, "subagents_together")
    for i in (1, 2):
        mine = [m for m in msgs if m.get("parent_tool_use_id") == f"toolu_{i}"]
        assert [m["type"] for m in mine] == ["user", "assistant"] and mine[0]["message"]["content"][0]["text"] == f"Say {i}"
    results = [m["message"]["content"][0]["tool_use_id"] for m in msgs if m["type"] == "user" and m.get("parent_tool_use_id") is None]
    assert results == ["toolu_1", "toolu_2"]
    assert [m["type"] for m in msgs[-2:]] == ["assistant", "result"]


def test_mcp_images_and_resources_arrive_as_content_blocks(captured: dict[str, Any]) -> None:
    """SDK ``SDKUserMessage`` (``MessageParam``): an MCP result's text, image and embedded resource are
    ``tool_result`` content blocks (``text``, ``image`` with a base64 source, the resource's text), not JSON text."""
    msgs = messages(captured, "mcp_blocks")
    (tr,) = [m for m in msgs if m["type"] == "user"]
    blocks = tr["message"]["content"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "text"]
    assert blocks[0]["text"] == "the caption" and blocks[2]["text"] == "the note"
    assert blocks[1]["source"]["type"] == "base64" and blocks[1]["source"]["media_type"] == "image/png"


def test_provider_retries_are_api_retry_messages(captured: dict[str, Any]) -> None:
    """SDK reference ``SDKAPIRetryMessage``: each retry of the provider call is ``system``/``api_retry``
    with its attempt, the retries allowed, the wait, the HTTP status and the error's kind."""
    msgs = messages(captured, "api_retry")
    retries = [m for m in msgs if m.get("subtype") == "api_retry"]
    assert [(r["attempt"], r["error_status"], r["error"]) for r in retries] == [(1, 529, "overloaded"), (2, 500, "server_error")]
    assert all(r["max_retries"] >= 2 and r["retry_delay_ms"] >= 0 for r in retries)
    assert msgs[-1]["subtype"] == "success" and msgs[-1]["result"] == "ok"


def test_thinking_blocks_are_streamed_as_thinking_and_signature_deltas(captured: dict[str, Any]) -> None:
    """Messages API streaming (extended thinking): a ``thinking`` block is ``content_block_start``,
    ``thinking_delta``, ``signature_delta`` and ``content_block_stop``; the ``assistant`` message has it whole."""
    msgs = messages(captured, "thinking_partial")
    events = [m["event"] for m in msgs if m["type"] == "stream_event"]
    deltas = [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"]
    assert "thinking_delta" in deltas and "signature_delta" in deltas and "text_delta" in deltas
    thought = "".join(e["delta"]["thinking"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "thinking_delta")
    assert thought == "check the file first"
    (assistant,) = [m for m in msgs if m["type"] == "assistant"]
    assert [b["type"] for b in assistant["message"]["content"]] == ["thinking", "text"]


def test_a_bad_json_schema_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    """Bad input: a ``--json-schema`` that is not JSON, or not a JSON Schema, is one line naming it; exit 2."""
    runs = Runs(tmp_path)
    for bad, words in (("{not json", "not JSON"), ('{"type": 5}', "not a valid JSON Schema"), ("[1]", "a JSON Schema is a JSON object")):
        p, out = runs.run([{"text": "never"}], ["count", "--output-format", "json", "--json-schema", bad])
        assert p.returncode == 2 and out == [] and "Traceback" not in p.stderr
        (line,) = [ln for ln in p.stderr.splitlines() if "--json-schema" in ln]
        assert words in line


def test_json_schema_without_print_mode_is_refused(tmp_path: Path) -> None:
    """CLI reference: ``--json-schema`` is for print mode; the REPL does not take it in silence."""
    env = Runs(tmp_path).env()
    p = subprocess.run([*AGENTLOOP, "--json-schema", json.dumps(SCHEMA), "--model", "scripted:none.json"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "--json-schema goes with -p" in p.stderr and "Traceback" not in p.stderr


def test_json_schema_puts_the_answer_in_structured_output(captured: dict[str, Any]) -> None:
    """CLI reference ``--json-schema``; headless "Get structured output": the validated value is ``structured_output``."""
    (result,) = messages(captured, "schema_ok")
    assert result["subtype"] == "success" and result["structured_output"] == {"n": 3}


def test_json_schema_asks_again_when_the_answer_does_not_match(captured: dict[str, Any]) -> None:
    """An answer that is not JSON is sent back with the problem; the second, fenced, matches."""
    result = messages(captured, "schema_retried")[-1]
    assert result["subtype"] == "success" and result["structured_output"] == {"n": 3} and result["num_turns"] == 2


def test_json_schema_gives_up_with_the_sdk_subtype(captured: dict[str, Any]) -> None:
    """SDK ``SDKResultError``: no matching answer after the retries is ``error_max_structured_output_retries``
    with the last problem in ``errors``; exit 1."""
    (result,) = messages(captured, "schema_failed", code=1)
    assert result["subtype"] == "error_max_structured_output_retries" and result["is_error"] is True
    assert result["errors"][0].startswith("the final answer does not match the schema at (the top)")  # "3": the last
    assert "structured_output" not in result
