"""The MCP client against real servers written in Python: fastmcp (in process and over stdio) and the SDK's low-level Server."""

from __future__ import annotations

import _thread
import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentloop import Budget, MemoryTranscript, Registry, Tool, arun, run
from agentloop.events import ToolCall
from agentloop.mcp import McpManager, McpTool, ServerConfig
from agentloop.testing import ScriptedModel, reply
from mcp_servers import lowlevel, pyserver
from mcp_servers.helpers import PY, PYSERVER, SILENT, alive, descendants, running, wait_gone


def stdio_py(name: str = "py", **kw: Any) -> ServerConfig:
    return ServerConfig(name, "stdio", command=PY, args=(PYSERVER,), **kw)


@pytest.fixture
def inproc() -> Iterator[McpManager]:
    m = McpManager(in_process={"py": pyserver.server, "low": lowlevel.server})
    try:
        yield m
    finally:
        m.close()


@pytest.fixture
def stdio() -> Iterator[McpManager]:
    m = McpManager([stdio_py()], startup_timeout=20)
    try:
        yield m
    finally:
        m.close()


def invoke(reg: Registry, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return reg.invoke(ToolCall("c1", name, args)).to_json()


def test_tools_are_named_mcp_server_tool_and_keep_schema_annotations_and_server_version(inproc: McpManager) -> None:
    tools = {t.name: t for t in inproc.tools()}
    assert {"mcp__py__echo", "mcp__py__add", "mcp__py__picture", "mcp__py__fail", "mcp__low__passthrough"} <= set(tools)
    echo = tools["mcp__py__echo"]
    assert isinstance(echo, McpTool)
    assert echo.server == "py" and echo.remote_name == "echo"
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert echo.annotations["readOnlyHint"] is True and echo.read_only is True
    assert tools["mcp__py__fail"].read_only is False
    assert tools["mcp__py__add"].output_schema is not None and "total" in tools["mcp__py__add"].output_schema["properties"]
    assert echo.fingerprint == "mcp:pyserver@1.0.0"
    assert tools["mcp__low__passthrough"].fingerprint == "mcp:lowlevel@0.3.0"
    entry = echo.manifest_entry()
    assert entry["fingerprint"] == "mcp:pyserver@1.0.0"
    assert entry["mcp"]["server"] == "py" and entry["mcp"]["tool"] == "echo"
    assert entry["mcp"]["annotations"]["readOnlyHint"] is True
    assert tools["mcp__py__add"].manifest_entry()["mcp"]["outputSchema"]["type"] == "object"


def test_results_text_structured_and_image(inproc: McpManager) -> None:
    reg = Registry(inproc.tools())
    # one text block and nothing else is recorded as the text itself
    assert invoke(reg, "mcp__low__dotted_name", {}) == {"call_id": "c1", "name": "mcp__low__dotted_name", "ok": True, "content": "dotted ok"}
    # fastmcp also sends structured content for a str result: both are kept
    echoed = invoke(reg, "mcp__py__echo", {"text": "hi"})["content"]
    assert echoed == "echo: hi"  # fastmcp sends the text and {"result": text}: the model gets it once
    added = invoke(reg, "mcp__py__add", {"a": 1, "b": 2.5})
    assert added["ok"] and json.loads(added["content"]) == {"total": 3.5, "terms": 2}  # its JSON text, once
    pic = invoke(reg, "mcp__py__picture", {})
    assert pic["ok"]
    (block,) = pic["content"]["content"]
    assert block["type"] == "image" and block["mimeType"] == "image/png"
    import base64

    assert base64.b64decode(block["data"]) == pyserver.PNG


def test_an_error_result_is_ok_false_with_the_servers_message(inproc: McpManager) -> None:
    reg = Registry(inproc.tools())
    r = invoke(reg, "mcp__py__fail", {"message": "disk on fire"})
    assert r["ok"] is False and r["error"] == "disk on fire"
    assert r["detail"]["type"] == "McpToolError"


def test_unknown_tool_as_an_is_error_result_and_as_a_json_rpc_error(inproc: McpManager) -> None:
    inproc.tools()
    from agentloop.mcp import McpToolError

    with pytest.raises(McpToolError, match=r"Unknown tool: 'nosuch'"):  # fastmcp: a result with isError
        inproc.call("py", "nosuch", {})
    with pytest.raises(McpToolError, match=r"refused the call to 'nosuch': Unknown tool: nosuch \(JSON-RPC error -32602\)"):
        inproc.call("low", "nosuch", {})
    # the server is still usable after either
    assert inproc.call("py", "echo", {"text": "x"}) == "echo: x"
    assert inproc.call("low", "dotted.name", {}) == "dotted ok"


def test_invalid_arguments_are_refused_by_the_core_before_the_server_sees_them(inproc: McpManager) -> None:
    reg = Registry(inproc.tools())
    r = invoke(reg, "mcp__py__add", {"a": "one"})
    assert r["ok"] is False
    assert "$.a: 'one' is not of type 'number'" in r["error"] and "'b' is a required property" in r["error"]


def test_a_silent_object_schema_admits_extra_keys_for_mcp_tools(inproc: McpManager) -> None:
    reg = Registry(inproc.tools())
    t = reg.get("mcp__low__passthrough")
    assert isinstance(t, McpTool)
    assert t.input_schema == {"type": "object"} and t.parameters == {"type": "object", "additionalProperties": True}
    r = invoke(reg, "mcp__low__passthrough", {"anything": [1, 2], "goes": True})
    assert r["ok"] and r["content"]["structuredContent"] == {"anything": [1, 2], "goes": True}
    # negative control: a plain core tool with the same schema refuses the same arguments
    core = Registry([Tool("plain", "p", {"type": "object"}, lambda **kw: kw)])
    assert invoke(core, "plain", {"anything": 1})["ok"] is False


def test_a_tool_with_an_invalid_schema_is_left_out_with_the_reason(inproc: McpManager) -> None:
    names = [t.name for t in inproc.tools()]
    assert "mcp__low__badschema" not in names
    (low,) = [s for s in inproc.status() if s.name == "low"]
    assert low.status == "connected"
    assert "mcp__low__badschema" not in low.tools
    assert any(s.startswith("badschema: ") and "invalid schema" in s for s in low.skipped)


def test_structured_content_that_breaks_the_output_schema_is_ok_false(inproc: McpManager) -> None:
    r = invoke(Registry(inproc.tools()), "mcp__low__wrongshape", {})
    assert r["ok"] is False and "returned an unusable result for 'wrongshape'" in r["error"]


def test_tool_names_with_other_characters_become_underscores(inproc: McpManager) -> None:
    reg = Registry(inproc.tools())
    assert invoke(reg, "mcp__low__dotted_name", {})["content"] == "dotted ok"


def test_both_drivers_call_mcp_tools(inproc: McpManager) -> None:
    tools = inproc.tools()
    for driver in ("run", "arun"):
        t = MemoryTranscript()
        model = ScriptedModel([reply("", [("mcp__py__echo", {"text": "a"}), ("mcp__py__add", {"a": 1, "b": 1})], usage=(5, 5)), reply("ok", usage=(5, 5))])
        if driver == "run":
            r = run(model, tools, "go", Budget(max_steps=3), transcript=t)
        else:
            r = asyncio.run(arun(model, tools, "go", Budget(max_steps=3), transcript=t))
        assert r.stop_reason == "no_tool_calls"
        got = [rec.payload for rec in t.records if rec.kind == "tool_result"]
        assert [g["ok"] for g in got] == [True, True] and got[0]["content"] == "echo: a"


def test_stdio_server_written_with_fastmcp(stdio: McpManager) -> None:
    reg = Registry(stdio.tools())
    assert invoke(reg, "mcp__py__echo", {"text": "over stdio"})["content"] == "echo: over stdio"
    (st,) = stdio.status()
    assert st.status == "connected" and st.server_name == "pyserver" and st.transport == "stdio"


def test_env_expansion_reaches_the_server_process() -> None:
    cfg = stdio_py(env={"GREETING": "${AL_TEST_GREETING:-hello}", "TOKEN": "Bearer ${AL_TEST_TOKEN}"})
    with McpManager([cfg], environ={"AL_TEST_TOKEN": "s3cret"}, startup_timeout=20) as m:
        m.tools()
        assert m.call("py", "getenv", {"name": "GREETING"}) == "hello"
        assert m.call("py", "getenv", {"name": "TOKEN"}) == "Bearer s3cret"


def test_a_stdio_server_gets_claude_project_dir(tmp_path: Any) -> None:
    with McpManager([stdio_py()], cwd=str(tmp_path), startup_timeout=20) as m:
        m.tools()
        assert m.call("py", "getenv", {"name": "CLAUDE_PROJECT_DIR"}) == str(tmp_path)


def test_a_missing_variable_fails_that_server_only(inproc: McpManager) -> None:
    bad = stdio_py("needs", env={"K": "${AL_TEST_UNSET_VAR}"})
    with McpManager([bad], in_process={"ok": pyserver.server}, environ={}) as m:
        names = [t.name for t in m.tools()]
        assert "mcp__ok__echo" in names and not any(n.startswith("mcp__needs__") for n in names)
        (needs,) = [s for s in m.status() if s.name == "needs"]
        assert needs.status == "failed"
        assert "mcpServers.needs.env.K: environment variable AL_TEST_UNSET_VAR is not set" in (needs.error or "")


def test_a_server_that_never_answers_initialize_fails_in_time_and_is_retried() -> None:
    with McpManager([ServerConfig("mute", "stdio", command=PY, args=(SILENT,))], startup_timeout=1.0) as m:
        began = time.monotonic()
        assert m.tools() == []
        assert time.monotonic() - began < 10
        (st,) = m.status()
        assert st.status == "failed" and "did not finish starting within 1 s" in (st.error or "")
        assert m.tools() == []  # tried again, not stuck
        assert m._servers["mute"].attempts == 2
        assert not running(SILENT), "the silent server was left running"


def test_a_program_that_does_not_exist_fails_with_a_clear_message() -> None:
    with McpManager([ServerConfig("ghost", "stdio", command="/nonexistent/mcp-server")]) as m:
        assert m.tools() == []
        (st,) = m.status()
        assert st.status == "failed" and "no such program" in (st.error or "")


def test_a_server_that_exits_at_start_reports_its_stderr() -> None:
    cfg = ServerConfig("dies", "stdio", command=PY, args=("-c", "import sys; print('bad config: no key', file=sys.stderr); sys.exit(4)"))
    with McpManager([cfg], startup_timeout=10) as m:
        assert m.tools() == []
        (st,) = m.status()
        assert st.status == "failed" and "bad config: no key" in (st.error or "")


def test_a_server_killed_mid_session_gives_a_clear_error_then_restarts_on_next_use(stdio: McpManager) -> None:
    reg = Registry(stdio.tools())
    pid = int(invoke(reg, "mcp__py__getpid", {})["content"])
    os.kill(pid, signal.SIGKILL)
    assert wait_gone({pid}) == set()
    r = invoke(reg, "mcp__py__echo", {"text": "still there?"})
    if r["ok"]:  # the death was noticed before the call: it restarted at once
        assert stdio._servers["py"].attempts == 2
    else:
        assert "the MCP server 'py' stopped" in r["error"] and "restarted on the next call" in r["error"]
        (st,) = stdio.status()
        assert st.status == "failed"
        r = invoke(reg, "mcp__py__echo", {"text": "still there?"})
    assert r["ok"] and r["content"] == "echo: still there?"
    new_pid = int(invoke(reg, "mcp__py__getpid", {})["content"])
    assert new_pid != pid and alive(new_pid)


def test_a_server_that_crashes_during_a_call(stdio: McpManager) -> None:
    reg = Registry(stdio.tools())
    r = invoke(reg, "mcp__py__crash", {})
    assert r["ok"] is False and "the MCP server 'py' stopped during the call" in r["error"]
    (st,) = stdio.status()
    assert st.status == "failed" and "stopped during a call" in (st.error or "")
    assert invoke(reg, "mcp__py__echo", {"text": "back"})["ok"]


def test_a_slow_call_times_out_but_a_server_that_still_answers_is_kept() -> None:
    with McpManager([stdio_py()], startup_timeout=20, call_timeout=3.0) as m:
        reg = Registry(m.tools())
        pid = invoke(reg, "mcp__py__getpid", {})["content"]
        began = time.monotonic()
        r = invoke(reg, "mcp__py__wait", {"seconds": 30})
        assert time.monotonic() - began < 15
        assert r["ok"] is False and "did not answer 'wait' within 3 s" in r["error"]
        assert m.status()[0].status == "connected"
        assert invoke(reg, "mcp__py__getpid", {})["content"] == pid


def test_a_hung_server_is_stopped_and_replaced() -> None:
    with McpManager([stdio_py()], startup_timeout=20, call_timeout=2.0) as m:
        reg = Registry(m.tools())
        pid = int(invoke(reg, "mcp__py__getpid", {})["content"])
        os.kill(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            r = invoke(reg, "mcp__py__echo", {"text": "hello?"})
            assert time.monotonic() - began < 20
            assert r["ok"] is False and "stopped answering" in r["error"]
            (st,) = m.status()
            assert st.status == "failed" and "stopped answering" in (st.error or "")
            assert wait_gone({pid}) == set(), "the hung server was not stopped"
        finally:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        assert invoke(reg, "mcp__py__echo", {"text": "again"})["ok"]


def test_close_stops_every_server_and_leaves_no_child_process() -> None:
    m = McpManager([stdio_py("a"), stdio_py("b")], startup_timeout=20)
    m.tools()
    pids = {int(m.call(n, "getpid", {})) for n in ("a", "b")}
    assert all(alive(p) for p in pids) and pids <= descendants()
    m.close()
    assert wait_gone(pids, 1) == set()
    assert not running(PYSERVER)
    assert [s.status for s in m.status()] == ["closed", "closed"]
    m.close()  # idempotent


def test_ctrl_c_cancels_mcp_calls_in_flight_and_the_server_stays_usable(inproc: McpManager) -> None:
    tools = inproc.tools()

    def press_when_all_started() -> None:
        deadline = time.monotonic() + 20
        while len(inproc._inflight) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        _thread.interrupt_main()

    threading.Thread(target=press_when_all_started, daemon=True).start()
    model = ScriptedModel([reply("", [("mcp__py__wait", {"seconds": 30, "tag": str(i)}) for i in range(3)], usage=(5, 5))])
    began = time.monotonic()
    r = run(model, tools, "go", Budget(max_steps=3))
    assert r.stop_reason == "interrupted"
    assert time.monotonic() - began < 15
    deadline = time.monotonic() + 5
    while inproc._inflight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not inproc._inflight
    assert inproc.call("py", "wait", {"seconds": 0, "tag": "after"}) == "after"


def test_parallel_mcp_calls_are_in_flight_at_the_same_time(inproc: McpManager) -> None:
    tools = inproc.tools()
    calls = [("mcp__py__rendezvous", {"group": "overlap", "size": 6}) for _ in range(6)]
    model = ScriptedModel([reply("", calls, usage=(5, 5)), reply("ok", usage=(5, 5))])
    t = MemoryTranscript()
    run(model, tools, "go", Budget(max_steps=3), transcript=t)
    got = [rec.payload["content"] for rec in t.records if rec.kind == "tool_result"]
    assert got == ["met"] * 6


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_twenty_runs_of_mcp_calls_finishing_in_random_order_give_one_transcript(inproc: McpManager, driver: str) -> None:
    tools = inproc.tools()
    transcripts, orders = set(), set()
    for _ in range(20):
        pyserver.FINISHED.clear()
        model = ScriptedModel([reply("", [("mcp__py__jitter", {"tag": str(i)}) for i in range(5)], usage=(5, 5), step=1),
                               reply("ok", usage=(5, 5))])
        t = MemoryTranscript()
        if driver == "run":
            run(model, tools, "go", Budget(max_steps=3), transcript=t, run_id="r")
        else:
            asyncio.run(arun(model, tools, "go", Budget(max_steps=3), transcript=t, run_id="r"))
        orders.add(tuple(pyserver.FINISHED))
        transcripts.add(b"".join(t.lines))
    assert len(orders) > 1, "the calls always finished in the same order: the test proves nothing"
    assert len(transcripts) == 1


def test_ctrl_c_outside_a_run_cancels_the_call_and_the_server_stays_usable(inproc: McpManager) -> None:
    inproc.tools()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        inproc.call("py", "wait", {"seconds": 30})
    assert time.monotonic() - began < 10
    assert not inproc._inflight
    assert inproc.call("py", "wait", {"seconds": 0, "tag": "next"}) == "next"
