"""Traces read back from a real viewer: Arize Phoenix, run locally.

Phoenix takes OTLP/HTTP on ``/v1/traces`` and converts the GenAI semantic
conventions' attributes to its own (OpenInference) when spans arrive
(Phoenix release notes, "OTel GenAI Semantic Convention Auto-Conversion":
``gen_ai.input.messages`` to ``llm.input_messages.*``,
``gen_ai.output.messages`` to ``llm.output_messages.*``, ``gen_ai.usage.*``
to ``llm.token_count.*``, tool calls to ``tool.*``). What the viewer shows
is what it stored, read back through its REST API
(``GET /v1/projects/{project}/spans``): the input and output of each model
call, the tool call with its arguments and output, and the token counts.

Phoenix is installed by ``scripts/setup-test-peers`` into ``.cache/phoenix``
(a venv of its own); without it this test skips, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentloop.testing.fakeprovider import FakeProvider

PHOENIX = Path(os.environ.get("AGENTLOOP_PHOENIX") or Path(__file__).resolve().parents[1] / ".cache" / "phoenix" / "bin" / "phoenix")

pytestmark = pytest.mark.skipif(not PHOENIX.exists(), reason=f"Arize Phoenix is not installed at {PHOENIX} (scripts/setup-test-peers installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(PHOENIX_WORKING_DIR=str(work), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(_free_port()), PHOENIX_TELEMETRY_ENABLED="false")
    log = (work / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not start: {(work / 'phoenix.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _spans(url: str, want: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        got = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 100}, timeout=10).json()["data"]
        if len(got) >= want or time.monotonic() > deadline:
            return list(got)
        time.sleep(0.5)


def _messages(attrs: dict[str, Any], which: str) -> dict[int, dict[str, Any]]:
    """``llm.input_messages.N.message.KEY`` flattened attributes, as {N: {KEY: value}}."""
    out: dict[int, dict[str, Any]] = {}
    prefix = f"llm.{which}_messages."
    for k, v in attrs.items():
        if k.startswith(prefix):
            n, _, key = k[len(prefix):].partition(".message.")
            out.setdefault(int(n), {})[key] = v
    return out


def _text(msg: dict[str, Any]) -> str:
    """A flattened message's text: ``content``, or its ``contents.N`` text parts joined."""
    if "content" in msg:
        return str(msg["content"])
    n = sorted(int(k.split(".")[1]) for k in msg if k.startswith("contents.") and k.endswith(".message_content.text"))
    return "".join(str(msg[f"contents.{i}.message_content.text"]) for i in n)


def test_phoenix_shows_each_model_calls_input_and_output_and_the_tool_calls(phoenix: str, tmp_path: Path) -> None:
    """Two calls in one reply: the next chat span's input holds each result as a message of its own (Phoenix
    keeps one tool call id per flattened message), and the span list's input and output columns
    (``input.value``/``output.value``) show the prompt and the answers, not the response's id and model."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "n.txt").write_text("hi from the file\n")
    (proj / "m.txt").write_text("and bye from the other\n")
    script = {"cache": True, "replies": [
        {"text": "Reading it.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "n.txt"}},
                                               {"name": "Read", "arguments": {"file_path": "m.txt"}}]},
        {"text": "It says hi."},
    ]}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_", "OPENAI_", "ANTHROPIC_"))}
    with FakeProvider(script) as fake:
        env.update(AGENTLOOP_HOME=str(tmp_path / "home"), OTEL_EXPORTER_OTLP_ENDPOINT=phoenix,
                   OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
                   ANTHROPIC_API_KEY="sk-ant-test-key-not-real", ANTHROPIC_BASE_URL=fake.url)
        p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "what does n.txt say?", "--model", "anthropic:claude-haiku-4-5"],
                           cwd=proj, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    spans = _spans(phoenix, 5)
    kinds = sorted((s["name"], s["span_kind"]) for s in spans)
    assert kinds == [("chat claude-haiku-4-5", "LLM")] * 2 + [("execute_tool Read", "TOOL")] * 2 + [("invoke_agent agentloop", "AGENT")], kinds
    chats = sorted((s["attributes"] for s in spans if s["span_kind"] == "LLM"), key=lambda a: a["agentloop.step"])
    for a in chats:
        assert a["llm.provider"] == "anthropic" and a["llm.model_name"] == "claude-haiku-4-5"
        assert a["llm.token_count.prompt"] == a["gen_ai.usage.input_tokens"] > 0
    assert chats[1]["llm.token_count.prompt_details.cache_read"] > 0

    first_in, first_out = _messages(chats[0], "input"), _messages(chats[0], "output")
    assert first_in[0]["role"] == "system" and "agentloop" in _text(first_in[0])  # the system instructions
    assert first_in[max(first_in)] == {"role": "user", "content": "what does n.txt say?"}
    out = first_out[0]
    assert out["role"] == "assistant" and out["content"] == "Reading it." and out["finish_reason"] == "tool_call"
    assert out["tool_calls.0.tool_call.function.name"] == "Read"
    assert json.loads(out["tool_calls.0.tool_call.function.arguments"]) == {"file_path": "n.txt"}

    second_in = _messages(chats[1], "input")
    first_result, second_result = second_in[max(second_in) - 1], second_in[max(second_in)]
    assert first_result["role"] == second_result["role"] == "tool"
    assert "hi from the file" in _text(first_result) and "bye from the other" in _text(second_result)
    assert first_result["tool_call_id"] == out["tool_calls.0.tool_call.id"]
    assert second_result["tool_call_id"] == out["tool_calls.1.tool_call.id"]
    assert _messages(chats[1], "output")[0]["content"] == "It says hi."

    # The span list's columns: the answer on each chat span, the prompt and answer on the agent's.
    assert chats[0]["output.value"].startswith("Reading it.") and chats[1]["output.value"] == "It says hi."
    (agent,) = [s["attributes"] for s in spans if s["span_kind"] == "AGENT"]
    assert agent["input.value"] == "what does n.txt say?" and agent["output.value"] == "It says hi."

    tools = sorted((s["attributes"] for s in spans if s["span_kind"] == "TOOL"), key=lambda t: t["output.value"])
    assert [t["tool.name"] for t in tools] == ["Read", "Read"]
    assert "bye from the other" in tools[0]["output.value"] and "hi from the file" in tools[1]["output.value"]
