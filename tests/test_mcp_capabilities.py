"""Client capabilities against the raw JSON-RPC test server: roots, elicitation, progress, log messages, cancellation, tasks.

MCP specification (2025-06-18): client features roots (``roots/list``) and
elicitation (``elicitation/create``, the user answers a form given by a
restricted JSON Schema, or declines); utilities progress (a ``progressToken``
in the request's ``_meta``, then ``notifications/progress``), logging
(``notifications/message``) and cancellation (``notifications/cancelled``
naming the request). A tool whose ``execution.taskSupport`` is ``required``
(2025-11-25) cannot be called without task support.
"""

from __future__ import annotations

import _thread
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _wait import until
from agentloop import Budget, Registry, run
from agentloop.cli.spinner import Spinner
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, ServerConfig
from agentloop.mcp.elicit import ask_fields
from agentloop.testing import ScriptedModel, reply
from mcp_servers.helpers import PY, RAW


def raw(record: Path | None = None) -> ServerConfig:
    return ServerConfig("raw", "stdio", command=PY, args=(RAW,), env={"RAW_RECORD": str(record)} if record else {})


def received(record: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in record.read_text().splitlines()]


@pytest.fixture
def notices() -> list[str]:
    return []


@pytest.fixture
def rec(tmp_path: Path) -> Path:
    return tmp_path / "received.jsonl"


@pytest.fixture
def m(tmp_path: Path, rec: Path, notices: list[str]) -> Iterator[McpManager]:
    mgr = McpManager([raw(rec)], cwd=str(tmp_path), environ={}, startup_timeout=30, call_timeout=20, notify=notices.append)
    try:
        mgr.tools()
        yield mgr
    finally:
        mgr.close()


def test_the_client_declares_roots_and_elicitation_and_no_sampling(m: McpManager, rec: Path) -> None:
    caps = received(rec)[0]["params"]["capabilities"]
    assert "roots" in caps and "elicitation" in caps
    assert "sampling" not in caps  # declined: servers do not get to call the agent's model


def test_roots_are_the_workspace_and_the_additional_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.agent.agent import Agent

    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    proj, extra = tmp_path / "proj", tmp_path / "extra"
    proj.mkdir()
    extra.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    script = tmp_path / "s.json"
    script.write_text("[]")
    a = Agent(cwd=str(proj), trust=True, model=f"scripted:{script}", add_dirs=[str(extra)])
    try:
        got = json.loads(a.mcp.call("raw", "roots", {}))
    finally:
        a.close("prompt_input_exit")
    assert got == {"roots": [{"uri": proj.resolve().as_uri(), "name": "proj"}, {"uri": extra.resolve().as_uri(), "name": "extra"}]}


def test_without_a_user_to_ask_elicitation_is_declined(m: McpManager) -> None:
    assert json.loads(m.call("raw", "ask", {"question": "who are you?"})) == {"action": "decline"}


def test_elicitation_asks_each_field_of_the_servers_schema(tmp_path: Path) -> None:
    answers = iter(["Ada", "three", "3", "y", "blue", "green"])
    asked: list[tuple[str, str]] = []
    questions: list[str] = []

    def elicit(server: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        asked.append((server, message))

        def read(q: str) -> str:
            questions.append(q)
            return next(answers)

        return ask_fields(schema, read)

    with McpManager([raw()], environ={}, startup_timeout=30, elicit=elicit) as mgr:
        mgr.tools()
        got = json.loads(mgr.call("raw", "ask", {"question": "who are you?"}))
    assert asked == [("raw", "who are you?")]
    assert got == {"action": "accept", "content": {"name": "Ada", "count": 3, "sure": True, "colour": "green"}}
    assert questions[0].startswith("  Your name")  # the schema's title
    assert questions[1] == questions[2] and "How many" in questions[1]  # "three" is no integer: asked again
    assert "1) red" in questions[-1] and "2) green" in questions[-1] and "optional" in questions[-1]


def test_the_repl_asks_an_elicitation_and_sends_the_answers(tmp_path: Path) -> None:
    from _pty import Term, env_for

    home = tmp_path / "home"
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": {"command": PY, "args": [RAW]}}}))
    (proj / ".agentloop/settings.json").write_text(json.dumps({"permissions": {"allow": ["mcp__raw"]}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "mcp__raw__ask", "arguments": {"question": "who are you?"}}], "usage": [10, 2]},
        {"text": "thanks", "usage": [10, 2]},
    ]))
    t = Term(["--trust", "--model", f"scripted:{script}"], cwd=str(proj), env=env_for(str(home)))
    try:
        t.wait_for(r"(?m)^>")
        t.wait_for(r"(?m)/ \$5\.000000 \(\d+%\) ?$")  # the server is up (the status line no longer says "mcp 0/1 starting")
        t.type("go")
        t.wait_for(r"The MCP server 'raw' asks: who are you\?")
        t.wait_for(r"Answer it\?")
        for pattern, answer in ((r"Answer it\?", "y"), (r"Your name", "Ada"), (r"How many", "2"), (r"sure", ""), (r"colour", "red")):
            t.wait_for(pattern)
            t.type(answer)
        t.wait_for(r'"action": "accept"')
        t.wait_for(r"thanks")
    finally:
        t.kill()
    out = t.text()
    assert '"name": "Ada"' in out and '"count": 2' in out and '"colour": "red"' in out


def test_each_call_carries_a_progress_token_and_progress_is_reported(m: McpManager) -> None:
    seen: list[tuple[str, str, str]] = []
    m.on_progress = lambda *a: seen.append(a)
    answer = m.call("raw", "progress", {"steps": 3})
    assert answer.startswith("token ") and answer != "token null"
    assert seen == [("raw", "progress", "1/3 step 1"), ("raw", "progress", "2/3 step 2"), ("raw", "progress", "3/3 step 3")]


def test_the_working_line_shows_progress() -> None:
    out: list[str] = []
    sp = Spinner(out.append, grace_s=0, interval_s=0.01)
    sp.start("running mcp__raw__progress")
    sp.detail = "2/3 step 2"
    deadline = time.monotonic() + 30
    while not any("2/3 step 2" in o for o in out) and time.monotonic() < deadline:
        time.sleep(0.01)
    sp.stop()
    assert any("running mcp__raw__progress… · 2/3 step 2" in o for o in out)


def test_server_log_messages_go_to_the_log_and_warnings_to_the_user(
    m: McpManager, notices: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="agentloop.mcp"):
        m.call("raw", "log", {"level": "info", "text": "just so you know"})
        m.call("raw", "log", {"level": "error", "text": "the disk is full"})
    logged = [r.getMessage() for r in caplog.records if r.name == "agentloop.mcp"]
    assert any("raw (rawlog) info: just so you know" in x for x in logged)
    assert any("raw (rawlog) error: the disk is full" in x for x in logged)
    assert notices == ["the MCP server 'raw' (rawlog) logged error: the disk is full"]


def test_a_timed_out_call_is_cancelled_with_notifications_cancelled(m: McpManager, rec: Path) -> None:
    """The SDK (2.3) already sends the notification when the call's task is cancelled, so this and the next
    test also pass on the code before this change: they guard it, and scripts/negative_control.py shows
    they fail when the cancellation does not reach the SDK."""
    with pytest.raises(Exception, match="did not answer 'hang' within 1 s; the call was cancelled"):
        m.call("raw", "hang", {}, timeout=1)
    until(lambda: any(x.get("method") == "notifications/cancelled" for x in received(rec)), 10)
    time.sleep(0.3)  # (and no second one comes)
    msgs = received(rec)
    (hang,) = [x for x in msgs if x.get("method") == "tools/call" and x["params"]["name"] == "hang"]
    cancels = [x for x in msgs if x.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [hang["id"]]


def test_an_interrupted_call_is_cancelled_with_notifications_cancelled(m: McpManager, rec: Path) -> None:
    def press() -> None:
        deadline = time.monotonic() + 20
        while not m._inflight and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        _thread.interrupt_main()

    threading.Thread(target=press, daemon=True).start()
    r = run(ScriptedModel([reply("", [("mcp__raw__hang", {})], usage=(5, 5))]), Registry(m.tools()), "go", Budget(max_steps=2))
    assert r.stop_reason == "interrupted"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        msgs = received(rec)
        if any(x.get("method") == "notifications/cancelled" for x in msgs):
            break
        time.sleep(0.05)
    (hang,) = [x for x in msgs if x.get("method") == "tools/call" and x["params"]["name"] == "hang"]
    assert [x["params"]["requestId"] for x in msgs if x.get("method") == "notifications/cancelled"] == [hang["id"]]


def test_a_tool_that_needs_task_support_is_not_offered(m: McpManager) -> None:
    names = {t.name for t in m.tools()}
    assert "mcp__raw__tasky" not in names and "mcp__raw__big" in names
    (st,) = m.status()
    assert any(s.startswith("tasky: it can only run as a task") for s in st.skipped)
    assert Registry(m.tools()).invoke(ToolCall("c", "mcp__raw__tasky", {})).ok is False
