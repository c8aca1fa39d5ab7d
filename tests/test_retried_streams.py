"""A model call whose stream breaks off and is tried again: what was shown of the broken attempt is
withdrawn or marked on every surface, so what a reader joins is the final answer once.

- The provider: before every attempt but the first, the request's ``on_restart`` is called, so
  the text streamed so far is known not to be the reply's.
- ``-p --output-format stream-json --include-partial-messages``: Claude Code's stream events are
  the Messages API's raw events ("Stream responses in real-time": ``stream_event`` wraps each raw
  event; the Messages API's streaming page: every stream starts with ``message_start``). A retry is
  a new request, so its events start a new message; the deltas joined under the final message's id
  are its text.
- ACP: a chunk once sent cannot be taken back (``agent_message_chunk`` only appends), so a retry
  sends only what extends the text the editor has, or marks the restart (docs/retried-streams.md).
- The REPL: the broken text is followed by a line saying it is withdrawn, then the retry's text.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.cli.acp_updates import RETRY_MARK, AnswerText
from agentloop.events import ModelRequest
from agentloop.providers import open_model
from agentloop.testing.fakeprovider import FakeProvider

ANSWER = "Hello from the retried stream, a reply long enough to be cut in the middle."
CUT = {"text": ANSWER, "fault": "cut", "chunk_size": 4}
WHOLE = {"text": ANSWER, "chunk_size": 4}
AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e.update(AGENTLOOP_HOME=str(home), NO_COLOR="1", **extra)
    return e


# -- the provider --


@pytest.mark.parametrize("spec", ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"])
def test_a_retry_tells_the_request_that_the_streamed_text_is_withdrawn(spec: str) -> None:
    heard: list[str | None] = []  # each delta, None for a restart
    with FakeProvider({"replies": [CUT, WHOLE, WHOLE]}) as fp:
        base = fp.url + "/v1" if spec.startswith("openai") else fp.url
        model = open_model(spec, base_url=base, api_key="sk-test", max_attempts=3, backoff_base=0.01, sleep=lambda d: None)
        req = ModelRequest([{"role": "user", "content": "hi"}], (), 400, on_text=heard.append, on_restart=lambda: heard.append(None))
        reply = model.complete(req)
        clean: list[str | None] = []
        model.complete(ModelRequest([{"role": "user", "content": "hi"}], (), 400, on_text=clean.append,
                                    on_restart=lambda: clean.append(None)))
    assert heard.count(None) == 1
    broken, final = heard[: heard.index(None)], heard[heard.index(None) + 1:]
    assert broken and "".join(str(t) for t in broken) != ANSWER  # the first attempt showed part of it
    assert "".join(str(t) for t in final) == reply.text == ANSWER
    assert None not in clean  # a call that did not break off withdraws nothing


# -- ACP's answer text, unit by unit --


def _answer() -> tuple[AnswerText, list[str]]:
    sent: list[str] = []
    return AnswerText(sent.append), sent


def test_acp_a_retry_that_retells_the_text_sends_only_what_extends_it() -> None:
    a, sent = _answer()
    for t in ("Hello ", "fr"):
        a.delta(t)
    a.restart()
    for t in ("Hel", "lo f", "rom here"):
        a.delta(t)
    a.end()
    assert "".join(sent) == "Hello from here" and RETRY_MARK not in sent


def test_acp_a_retry_that_says_something_else_is_marked_and_sent_whole() -> None:
    a, sent = _answer()
    a.delta("Hello fr")
    a.restart()
    for t in ("Hi ", "there"):
        a.delta(t)
    a.end()
    assert "".join(sent) == "Hello fr" + RETRY_MARK + "Hi there"


def test_acp_a_retry_that_says_less_than_was_sent_is_marked_at_the_end() -> None:
    a, sent = _answer()
    a.delta("Hello friend")
    a.restart()
    a.delta("Hello")
    a.end()
    assert "".join(sent) == "Hello friend" + RETRY_MARK + "Hello"
    a.delta("next call")  # the next call starts clean
    assert sent[-1] == "next call"


def test_acp_a_restart_before_any_text_changes_nothing() -> None:
    a, sent = _answer()
    a.restart()
    a.delta("Hello")
    a.end()
    assert sent == ["Hello"]


# -- ACP, end to end --


def test_acp_the_editor_gets_a_retried_answer_once(tmp_path: Path) -> None:
    acp = pytest.importorskip("acp")
    from acp.schema import ClientCapabilities

    chunks: list[str] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                chunks.append(update.content.text)

        async def request_permission(self, *a: Any, **kw: Any) -> Any:
            raise AssertionError("no permission asked")

        def on_connect(self, conn: Any) -> None:
            pass

    proj = tmp_path / "proj"
    proj.mkdir()
    with FakeProvider({"replies": [CUT, WHOLE]}) as fp:
        env = _clean_env(tmp_path / "home", ANTHROPIC_BASE_URL=fp.url, ANTHROPIC_API_KEY="sk-test")

        async def session() -> None:
            async with acp.spawn_agent_process(Client(), *AGENTLOOP, "acp", "--model", "anthropic:claude-haiku-4-5",
                                               cwd=proj, env=env) as (conn, _proc):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
                sid = (await conn.new_session(cwd=str(proj), mcp_servers=[])).session_id
                resp = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[acp.text_block("hi")]), 60)
                assert resp.stop_reason == "end_turn"

        asyncio.run(session())
        assert len([r for r in fp.requests if r["protocol"]]) == 2  # the stream was cut once and retried
    assert "".join(chunks) == ANSWER


# -- -p stream-json --


def test_stream_json_a_retry_starts_a_new_message_whose_deltas_join_to_the_answer(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    with FakeProvider({"replies": [CUT, WHOLE]}) as fp:
        env = _clean_env(tmp_path / "home", ANTHROPIC_BASE_URL=fp.url, ANTHROPIC_API_KEY="sk-test")
        p = subprocess.run([*AGENTLOOP, "-p", "hi", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
                            "--model", "anthropic:claude-haiku-4-5"], cwd=proj, env=env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    msgs = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    retry_at = next(i for i, m in enumerate(msgs) if m.get("subtype") == "api_retry")
    events = [(i, m["event"]) for i, m in enumerate(msgs) if m["type"] == "stream_event"]
    starts = [(i, e["message"]["id"]) for i, e in events if e["type"] == "message_start"]
    assert len(starts) == 2 and starts[0][0] < retry_at < starts[1][0] and starts[0][1] != starts[1][1]
    (final,) = [m for m in msgs if m["type"] == "assistant"]
    assert final["message"]["id"] == starts[1][1]
    joined = "".join(e["delta"]["text"] for i, e in events if i > starts[1][0] and e["type"] == "content_block_delta"
                     and e["delta"]["type"] == "text_delta")
    assert joined == final["message"]["content"][0]["text"] == ANSWER
    after = [e for i, e in events if i > starts[1][0]]
    assert after[0]["type"] == "content_block_start" and after[0]["index"] == 0 and after[-1]["type"] == "message_stop"


# -- the REPL, in a real terminal --


def test_repl_marks_the_broken_text_withdrawn_before_the_retry(tmp_path: Path) -> None:
    sys.path.insert(0, os.path.dirname(__file__))
    from _pty import Term, env_for

    proj = tmp_path / "proj"
    proj.mkdir()
    with FakeProvider({"replies": [CUT, WHOLE]}) as fp:
        env = env_for(str(tmp_path / "home"))
        env.pop("NO_COLOR")
        t = Term(["--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1"], cwd=str(proj), env=env)
        try:
            t.wait_for(r"(?m)^>\s*$")
            m = t.mark()
            t.type("hi")
            t.wait_for(r"retried stream, a reply long enough to be cut in the middle\.", after=m)
            shown = t.text(m)
            t.type("/exit")
            t.wait_exit()
        finally:
            t.kill()
    mark = shown.index("the reply above broke off and is withdrawn; the retried reply follows")
    assert shown.index("Hello from") < mark  # the broken text came first
    assert shown[mark:].count(ANSWER) == 1 and shown.count(ANSWER) == 1, shown
