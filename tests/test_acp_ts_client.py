"""``agentloop acp`` driven by the Agent Client Protocol's TypeScript SDK (its client app over ndJsonStream).

Every message of every session here, both ways, is checked against the JSON
schema the SDK ships (``schema/v1/schema.json``): a request's params by its
method, a result by the request it answers, an error as an ``Error``. The
sections cited are pages of agentclientprotocol.com/protocol/v1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_client.harness import drive, requests, schema_violations, updates

INIT = {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
FORMS = {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}}}


def new(cwd: Path, servers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"method": "session/new", "params": {"cwd": str(cwd), "mcpServers": servers or []}}


def prompt(*blocks: dict[str, Any] | str) -> dict[str, Any]:
    content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
    return {"method": "session/prompt", "params": {"sessionId": "$sid", "prompt": content}}


def clean(run: dict[str, Any]) -> dict[str, Any]:
    """The run, once its messages fit the schema and its stderr holds no traceback."""
    assert schema_violations(run["wire"]) == []
    assert "Traceback" not in run["stderr"]
    return run


def session_file(home: Path, sid: str) -> list[dict[str, Any]]:
    path = next(home.glob(f"projects/*/sessions/{sid}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def user_texts(home: Path, sid: str) -> str:
    """Everything the model was given as the user's messages in the session."""
    out = []
    for rec in session_file(home, sid):
        if rec.get("kind") == "run_start":
            out += [m.get("content", "") for m in rec["payload"].get("messages", []) if m.get("role") == "user"]
    return "\n".join(str(x) for x in out)


# -- one session with edits, a command and a mode change, shared by the tests below --------------


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("acp")
    proj = tmp / "proj"
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "greet.md").write_text(
        "---\ndescription: Greet someone by name\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS.\n")
    (proj / "notes.txt").write_text("alpha\nbeta\n")
    script = [
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}]},
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "sub/new.txt", "content": "fresh\n"}}]},
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo first; sleep 1.5; echo second"}}]},
        {"text": "Tidied."},
        {"text": "Hello, Bob."},
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "planned.txt", "content": "no\n"}}]},
        {"text": "Refused in plan mode."},
    ]
    steps = [INIT, new(proj), prompt("tidy the notes"), prompt("/greet Bob"),
             {"method": "session/set_mode", "params": {"sessionId": "$sid", "modeId": "plan"}},
             {"method": "session/set_mode", "params": {"sessionId": "$sid", "modeId": "bypassPermissions"}},
             prompt("write while planning"),
             {"method": "session/prompt", "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}},
             {"method": "session/set_mode", "params": {"sessionId": "no-such-session", "modeId": "plan"}}]
    run = clean(drive(tmp, proj, steps, script=script, args=["--permission-mode", "default", "--trust"]))
    sid = run["steps"][1]["result"]["sessionId"]
    loaded = clean(drive(tmp, proj, [INIT, {"method": "session/load", "params": {"sessionId": sid, "cwd": str(proj), "mcpServers": []}},
                                     {"method": "session/load", "params": {"sessionId": "20990101-000000-000000", "cwd": str(proj),
                                                                           "mcpServers": []}}],
                         script=[{"text": "unused"}], args=["--trust"]))
    return {"run": run, "loaded": loaded, "proj": proj, "sid": sid, "home": tmp / "home"}


def test_a_session_with_edits_a_command_and_modes_fits_the_schema_in_every_message(edited: dict[str, Any]) -> None:
    """Schema: every request, result, notification and error of initialize, session/new, session/prompt,
    session/request_permission, session/update, session/set_mode and session/load."""
    run = edited["run"]
    assert [s.get("result", {}).get("stopReason") for s in run["steps"][2:4]] == ["end_turn", "end_turn"]
    assert run["steps"][6]["result"] == {"stopReason": "end_turn"}
    kinds = {u["sessionUpdate"] for u in updates(run["wire"])}
    assert {"tool_call", "tool_call_update", "agent_message_chunk", "available_commands_update", "current_mode_update"} <= kinds
    assert len(run["wire"]) > 30


def test_tool_calls_name_their_files_by_absolute_paths(edited: dict[str, Any]) -> None:
    """tool-calls#following-the-agent: a location's ``path`` is absolute, and so is a diff's."""
    proj, run = edited["proj"], edited["run"]
    starts = updates(run["wire"], "tool_call")
    assert [s["kind"] for s in starts] == ["read", "edit", "edit", "execute", "edit"]
    assert [loc["path"] for s in starts[:3] for loc in s["locations"]] == [
        str(proj / "notes.txt"), str(proj / "notes.txt"), str(proj / "sub" / "new.txt")]
    diffs = [c for u in updates(run["wire"], "tool_call_update") for c in u.get("content") or [] if c["type"] == "diff"]
    assert diffs and all(d["path"].startswith("/") for d in diffs)


def test_a_permission_request_for_an_edit_or_a_write_shows_the_diff(edited: dict[str, Any]) -> None:
    """tool-calls#requesting-permission and #content: the tool call in the request carries a ``diff``
    (path, oldText, newText) of the file as it is and as it would be; a new file has no oldText."""
    proj, run = edited["proj"], edited["run"]
    asked = requests(run["wire"], "session/request_permission")
    diffs = {c["path"]: c for r in asked for c in r["toolCall"].get("content") or []}
    assert diffs[str(proj / "notes.txt")] == {"type": "diff", "path": str(proj / "notes.txt"), "oldText": "alpha\nbeta\n",
                                              "newText": "alpha\ngamma\n"}
    created = diffs[str(proj / "sub" / "new.txt")]
    assert created["newText"] == "fresh\n" and created.get("oldText") is None
    assert (proj / "notes.txt").read_text() == "alpha\ngamma\n"
    assert [r["toolCall"]["kind"] for r in asked] == ["edit", "edit", "execute"]


def test_bash_output_reaches_the_editor_while_the_command_runs(edited: dict[str, Any]) -> None:
    """tool-calls#updating: ``tool_call_update`` with the output so far, before the call completes."""
    run = edited["run"]
    bash = next(s["toolCallId"] for s in updates(run["wire"], "tool_call") if s["kind"] == "execute")
    seen = [u for u in updates(run["wire"], "tool_call_update") if u["toolCallId"] == bash]
    texts = [(u.get("status"), u["content"][0]["content"]["text"]) for u in seen]
    assert ("in_progress", "first\n") in texts, texts
    assert texts[-1][0] == "completed" and "second" in texts[-1][1]
    assert texts.index(("in_progress", "first\n")) < len(texts) - 1


def test_the_users_commands_are_offered_and_run_from_a_prompt(edited: dict[str, Any]) -> None:
    """slash-commands: ``available_commands_update`` lists each command with its description and input
    hint; a prompt ``/greet Bob`` runs the command (its body, with the argument, reaches the model)."""
    run = edited["run"]
    (offered,) = updates(run["wire"], "available_commands_update")
    assert {"name": "greet", "description": "Greet someone by name", "input": {"hint": "NAME"}} in offered["availableCommands"]
    assert "Say hello to Bob." in user_texts(edited["home"], edited["sid"])
    at = next(i for i, w in enumerate(run["wire"]) if w["msg"].get("method") == "session/update"
              and w["msg"]["params"]["update"]["sessionUpdate"] == "available_commands_update")
    created = next(i for i, w in enumerate(run["wire"]) if w["from"] == "agent" and "sessionId" in (w["msg"].get("result") or {}))
    assert created < at  # after the response that names the session


def test_session_modes_are_the_permission_modes_and_set_mode_changes_them(edited: dict[str, Any]) -> None:
    """session-modes: ``modes`` in the session/new response, ``session/set_mode``, ``current_mode_update``.
    bypassPermissions is not offered to a session that did not start in it."""
    run = edited["run"]
    modes = run["steps"][1]["result"]["modes"]
    assert modes["currentModeId"] == "default"
    assert [m["id"] for m in modes["availableModes"]] == ["default", "acceptEdits", "plan"]
    assert run["steps"][4] == {"method": "session/set_mode", "result": {}}
    assert [u["currentModeId"] for u in updates(run["wire"], "current_mode_update")] == ["plan"]
    assert run["steps"][5]["error"]["code"] == -32602 and "bypassPermissions" in json.dumps(run["steps"][5]["error"])
    # plan mode is agentloop's: the Write of the turn after it is refused without a question
    planned = next(s for s in updates(run["wire"], "tool_call") if "planned.txt" in s["title"])
    (refused,) = [u for u in updates(run["wire"], "tool_call_update") if u["toolCallId"] == planned["toolCallId"]]
    assert refused["status"] == "failed" and not (edited["proj"] / "planned.txt").exists()
    assert all("planned.txt" not in json.dumps(r) for r in requests(run["wire"], "session/request_permission"))


def test_an_unknown_session_id_is_resource_not_found_without_a_traceback(edited: dict[str, Any]) -> None:
    """Schema ``ErrorCode``: -32002, "a given resource, such as a session ... was not found", for
    session/prompt, session/set_mode and session/load; stderr holds no traceback (``clean``)."""
    assert [s["error"]["code"] for s in edited["run"]["steps"][7:9]] == [-32002, -32002]
    assert edited["loaded"]["steps"][2]["error"]["code"] == -32002


def test_loading_a_session_replays_its_text_and_its_tool_calls(edited: dict[str, Any]) -> None:
    """session-setup#loading-sessions: the whole conversation is streamed back before the response,
    tool calls (``tool_call`` then ``tool_call_update`` with the result) included."""
    proj, wire = edited["proj"], edited["loaded"]["wire"]
    got = updates(wire)
    kinds = [u["sessionUpdate"] for u in got]
    assert kinds[0] == "user_message_chunk" and "agent_message_chunk" in kinds
    starts = [u for u in got if u["sessionUpdate"] == "tool_call"]
    assert [s["kind"] for s in starts] == ["read", "edit", "edit", "execute", "edit"]
    assert starts[1]["locations"] == [{"path": str(proj / "notes.txt")}]
    done = {u["toolCallId"]: u for u in got if u["sessionUpdate"] == "tool_call_update"}
    assert done[starts[3]["toolCallId"]]["status"] == "completed" and "second" in json.dumps(done[starts[3]["toolCallId"]])
    response_at = next(i for i, w in enumerate(wire) if w["from"] == "agent" and w["msg"].get("id") == 1)
    last_replayed = max(i for i, w in enumerate(wire) if w["msg"].get("method") == "session/update"
                        and w["msg"]["params"]["update"]["sessionUpdate"] != "available_commands_update")
    assert last_replayed < response_at


# -- stop reasons -------------------------------------------------------------------------------


def test_the_spend_cap_ends_a_turn_as_a_limit_on_requests_not_as_a_refusal(tmp_path: Path) -> None:
    """prompt-turn#stop-reasons: ``max_turn_requests`` when the cap refuses the next model call (the
    conversation is kept; ``refusal`` would tell the editor to drop the prompt); the reason is said."""
    run = clean(drive(tmp_path, tmp_path, [INIT, new(tmp_path), prompt("go")], script=[{"text": "never"}],
                      args=["--max-usd", "0.000001"]))
    assert run["steps"][2]["result"] == {"stopReason": "max_turn_requests"}
    said = "".join(u["content"]["text"] for u in updates(run["wire"], "agent_message_chunk"))
    assert "cost_budget" in said and "never" not in said


def test_a_model_error_is_a_json_rpc_error_not_an_ended_turn(tmp_path: Path) -> None:
    """prompt-turn#stop-reasons lists no stop reason for a failure: the prompt request fails with -32603
    and the model's error in ``data``, with no traceback on stderr."""
    script = [{"text": "", "tool_calls": [{"name": "Glob", "arguments": {"pattern": "*"}}]}]  # the model fails on its second call
    run = clean(drive(tmp_path, tmp_path, [INIT, new(tmp_path), prompt("go")], script=script))
    err = run["steps"][2]["error"]
    assert err["code"] == -32603 and err["data"]["stopReason"] == "model_error" and "scripted model" in err["data"]["message"]


# -- what a prompt and a session bring ---------------------------------------------------------


def test_resources_in_a_prompt_reach_the_model_as_their_content(tmp_path: Path) -> None:
    """content#resource-link and #embedded-resource: a link to a workspace file is read and given as its
    content; an embedded text resource is given as its text; a link outside the workspace is named as
    not included, never passed on as a bare URI."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "spec.md").write_text("The widget must be blue.\n")
    (tmp_path / "secret.txt").write_text("outside the workspace\n")
    blocks = ["Check these:",
              {"type": "resource_link", "uri": (proj / "spec.md").as_uri(), "name": "spec.md"},
              {"type": "resource", "resource": {"uri": "untitled:scratch", "text": "scratch buffer text", "mimeType": "text/plain"}},
              {"type": "resource_link", "uri": (tmp_path / "secret.txt").as_uri(), "name": "secret.txt"}]
    run = clean(drive(tmp_path, proj, [INIT, new(proj), prompt(*blocks)], script=[{"text": "ok"}]))
    sid = run["steps"][1]["result"]["sessionId"]
    given = user_texts(tmp_path / "home", sid)
    assert "The widget must be blue." in given and "scratch buffer text" in given
    assert "outside the workspace" not in given and "its content is not included" in given


def test_the_editors_mcp_servers_are_started_and_their_tools_used(tmp_path: Path) -> None:
    """session-setup#mcp-servers: a stdio server (command, args, env) and an http one (url, headers) given in
    session/new are started like configured ones and their tools are the model's (the npm reference
    server "everything", over stdio and over streamable HTTP)."""
    import subprocess

    from mcp_servers.helpers import EVERYTHING, free_port, npm_servers, wait_port

    npm_servers()
    proj = tmp_path / "proj"
    proj.mkdir()
    port = free_port()
    web = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_port(port, 60)
        servers = [{"name": "local", "command": "node", "args": [str(EVERYTHING), "stdio"], "env": [{"name": "EV_TOKEN", "value": "env-secret-9"}]},
                   {"type": "http", "name": "web", "url": f"http://127.0.0.1:{port}/mcp",
                    "headers": [{"name": "Authorization", "value": "Bearer hdr-secret-7"}]}]
        script = [{"text": "", "tool_calls": [{"name": "mcp__local__echo", "arguments": {"message": "over stdio"}}]},
                  {"text": "", "tool_calls": [{"name": "mcp__web__echo", "arguments": {"message": "over http"}}]},
                  {"text": "echoed"}]
        run = clean(drive(tmp_path, proj, [INIT, new(proj, servers), prompt("echo")], script=script, timeout=180))
    finally:
        web.kill()
        web.wait(10)
    assert run["steps"][0]["result"]["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
    assert run["steps"][2]["result"] == {"stopReason": "end_turn"}
    done = json.dumps([u for u in updates(run["wire"], "tool_call_update") if u.get("status") == "completed"])
    assert "Echo: over stdio" in done and "Echo: over http" in done
    kept = "".join(f.read_text(errors="replace") for f in (tmp_path / "home").rglob("*") if f.is_file())
    assert kept, "the session left no record to look in"
    assert "hdr-secret-7" not in kept and "env-secret-9" not in kept  # the editor's credentials are in no record or log
    assert "hdr-secret-7" not in run["stderr"] and "env-secret-9" not in run["stderr"]


def test_http_and_sse_servers_of_the_editor_become_mcp_config_entries() -> None:
    """session-setup#mcp-servers: the http and sse forms (url, headers as name/value pairs) as
    agentloop's configuration has them; stdio's env pairs likewise."""
    from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

    from agentloop.cli.acp_session import mcp_config

    doc = mcp_config([
        HttpMcpServer(type="http", name="h", url="https://example.test/mcp", headers=[{"name": "X-Key", "value": "k"}]),
        SseMcpServer(type="sse", name="s", url="http://127.0.0.1:9/sse", headers=[]),
        McpServerStdio(name="p", command="srv", args=["-v"], env=[{"name": "A", "value": "1"}]),
    ])
    assert doc is not None
    assert json.loads(doc) == {"mcpServers": {
        "h": {"type": "http", "url": "https://example.test/mcp", "headers": {"X-Key": "k"}},
        "s": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "p": {"type": "stdio", "command": "srv", "args": ["-v"], "env": {"A": "1"}}}}
    assert mcp_config([]) is None


# -- questions to the person at the editor ---------------------------------------------------


ASK = {"name": "AskUserQuestion", "arguments": {"questions": [
    {"question": "Which colour?", "header": "Colour", "options": [{"label": "Red"}, {"label": "Blue", "description": "calm"}]}]}}


def test_ask_user_question_is_a_form_when_the_editor_renders_forms(tmp_path: Path) -> None:
    """elicitation (form mode, session scope): the question goes out as ``elicitation/create`` tied to
    the session and the tool call; the accepted answer is the tool's result."""
    run = clean(drive(tmp_path, tmp_path, [FORMS, new(tmp_path), prompt("ask me")],
                      script=[{"text": "", "tool_calls": [ASK]}, {"text": "noted"}],
                      answers={"elicitation": {"action": "accept", "content": {"q0": "Blue"}}}))
    (form,) = requests(run["wire"], "elicitation/create")
    assert form["mode"] == "form" and form["sessionId"] == run["steps"][1]["result"]["sessionId"]
    assert form["requestedSchema"]["properties"]["q0"]["enum"] == ["Red", "Blue"] and form["toolCallId"]
    (done,) = [u for u in updates(run["wire"], "tool_call_update") if u.get("status") == "completed"]
    assert "Which colour? -> Blue" in json.dumps(done)


def test_ask_user_question_offers_one_permission_option_per_answer_without_forms(tmp_path: Path) -> None:
    """tool-calls#requesting-permission: without form support, each answer is an option of a permission
    request (plus one to decline); the option chosen is the answer."""
    run = clean(drive(tmp_path, tmp_path, [INIT, new(tmp_path), prompt("ask me")],
                      script=[{"text": "", "tool_calls": [ASK]}, {"text": "noted"}], answers={"permission": "Red"}))
    (asked,) = requests(run["wire"], "session/request_permission")
    assert [o["name"] for o in asked["options"]] == ["Red", "Blue", "Decline to answer"]
    assert asked["toolCall"]["title"] == "Which colour?"
    (done,) = [u for u in updates(run["wire"], "tool_call_update") if u.get("status") == "completed"]
    assert "Which colour? -> Red" in json.dumps(done)


def test_a_declined_question_tells_the_model_to_decide(tmp_path: Path) -> None:
    """tool-calls#requesting-permission: the reject option declines; the call fails with what to do instead."""
    run = clean(drive(tmp_path, tmp_path, [INIT, new(tmp_path), prompt("ask me")],
                      script=[{"text": "", "tool_calls": [ASK]}, {"text": "noted"}], answers={"permission": "Decline to answer"}))
    (done,) = [u for u in updates(run["wire"], "tool_call_update") if u["toolCallId"] == "call_0_0"]
    assert done["status"] == "failed" and "declined" in json.dumps(done)


def test_an_approved_plan_leaves_plan_mode_and_the_editor_is_told(tmp_path: Path) -> None:
    """session-modes#from-the-agent: ExitPlanMode approved in the editor's form switches the mode, sent
    as ``current_mode_update``."""
    plan = {"name": "ExitPlanMode", "arguments": {"plan": "1. Edit the file"}}
    run = clean(drive(tmp_path, tmp_path, [FORMS, new(tmp_path), prompt("plan it")],
                      script=[{"text": "", "tool_calls": [plan]}, {"text": "planned"}], args=["--permission-mode", "plan"],
                      answers={"elicitation": {"action": "accept", "content": {"approve": True}}}))
    assert run["steps"][1]["result"]["modes"]["currentModeId"] == "plan"
    assert [u["currentModeId"] for u in updates(run["wire"], "current_mode_update")] == ["default"]


def test_an_unexpected_error_in_a_handler_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """What the SDK logs when a handler fails (it answers -32603) is one line naming the error; the
    traceback goes to agentloop's log only."""
    import logging

    from agentloop.cli.acp_runtime import OneLineErrors

    try:
        raise KeyError("sessionId")
    except KeyError:
        import sys

        record = logging.LogRecord("root", logging.ERROR, __file__, 1, "Unhandled error while handling request method=%s",
                                   ("session/prompt",), sys.exc_info())
    OneLineErrors().emit(record)
    err = capsys.readouterr().err
    assert err == "agentloop acp: Unhandled error while handling request method=session/prompt: KeyError: 'sessionId'\n"


def test_a_cancelled_permission_request_refuses_the_call(tmp_path: Path) -> None:
    """tool-calls#requesting-permission: the ``cancelled`` outcome is no approval; the file is not written."""
    write = {"name": "Write", "arguments": {"file_path": "made.txt", "content": "x\n"}}
    run = clean(drive(tmp_path, tmp_path, [INIT, new(tmp_path), prompt("write")], script=[{"text": "", "tool_calls": [write]},
                                                                                          {"text": "ok"}],
                      args=["--permission-mode", "default"], answers={"permission": "cancel"}))
    assert len(requests(run["wire"], "session/request_permission")) == 1
    (done,) = [u for u in updates(run["wire"], "tool_call_update") if u["toolCallId"] == "call_0_0"]
    assert done["status"] == "failed" and not (tmp_path / "made.txt").exists()


def test_a_session_open_in_this_process_loads_again_and_a_relative_cwd_is_refused(tmp_path: Path) -> None:
    """Schema ``NewSessionRequest.cwd``: "Must be an absolute path" (-32602 otherwise); session/load of a session the
    agent already has open replays it rather than failing on its own lock."""
    steps = [INIT, new(tmp_path), prompt("hello"),
             {"method": "session/load", "params": {"sessionId": "$sid", "cwd": str(tmp_path), "mcpServers": []}},
             {"method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}]
    run = clean(drive(tmp_path, tmp_path, steps, script=[{"text": "Hi there."}]))
    assert "result" in run["steps"][3], run["steps"][3]
    replayed = [u["content"]["text"] for u in updates(run["wire"], "user_message_chunk")]
    assert replayed == ["hello"]
    assert run["steps"][4]["error"]["code"] == -32602 and "absolute" in json.dumps(run["steps"][4]["error"])


def test_an_mcp_servers_question_is_a_form_and_its_prompts_are_commands_in_the_editor(tmp_path: Path) -> None:
    """elicitation: an MCP server's ``elicitation/create`` (the reference server's form of strings,
    formats, numbers and enums) reaches the editor as an ACP form, and the editor's answer goes back."""
    from mcp_servers.helpers import EVERYTHING, npm_servers

    npm_servers()
    server = {"name": "ev", "command": "node", "args": [str(EVERYTHING), "stdio"], "env": []}
    script = [{"text": "", "tool_calls": [{"name": "mcp__ev__trigger-elicitation-request", "arguments": {}}]}, {"text": "asked"},
              {"text": "sunny"}]
    run = clean(drive(tmp_path, tmp_path, [FORMS, new(tmp_path, [server]), prompt("ask"), prompt("/mcp__ev__args-prompt Paris")],
                      script=script, timeout=180,
                      args=["--permission-mode", "bypassPermissions"],
                      answers={"elicitation": {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}}))
    (form,) = requests(run["wire"], "elicitation/create")
    assert {"name", "check", "email", "untitledSingleSelectEnum"} <= set(form["requestedSchema"]["properties"])
    (done,) = [u for u in updates(run["wire"], "tool_call_update") if u.get("status") in ("completed", "failed")]
    assert "Ada Lovelace" in json.dumps(done), done
    # slash-commands: the server's prompts are offered beside the user's commands, and run from a prompt
    (offered,) = updates(run["wire"], "available_commands_update")
    assert {"name": "mcp__ev__args-prompt", "description": "A prompt with two arguments, one required and one optional (MCP ev)",
            "input": {"hint": "<city> <state>"}} in offered["availableCommands"]
    assert "What's weather in Paris?" in user_texts(tmp_path / "home", run["steps"][1]["result"]["sessionId"])
