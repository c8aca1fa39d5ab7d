"""The Agent SDK's control protocol and flags, spoken raw on agentloop's stdin and stdout.

The specification is the SDK's own sources (``sdk.d.ts``'s ``SDKControlRequest``,
``SDKControlResponse``, ``SDKControlInitializeRequest``,
``SDKControlPermissionRequest``; the Python SDK's ``_internal/query.py``) and
Claude Code's CLI reference: the SDK starts the CLI with ``--output-format
stream-json --verbose --input-format stream-json`` and no ``-p``; a
``control_request`` is answered by one ``control_response`` with the same
``request_id``, ``success`` with a ``response`` or ``error`` with the reason;
``--permission-prompt-tool stdio`` sends permission questions as
``can_use_tool`` requests. Here the test plays the SDK, so it can also answer
wrongly.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.testing.fakeprovider import FakeProvider

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]
SDK_START = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
Msg = dict[str, Any]


class Cli:
    """agentloop started as the SDK starts it; ``send`` a line, ``until`` a line matches."""

    def __init__(self, base: Path, replies: list[Msg] | None, *flags: str, env: dict[str, str] | None = None):
        self.dir = base / "proj"
        self.dir.mkdir(exist_ok=True)
        (self.dir / "hello.txt").write_text("hi from the file\n")
        model = []
        if replies is not None:
            (base / "script.json").write_text(json.dumps(replies))
            model = ["--model", f"scripted:{base / 'script.json'}"]
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "ANTHROPIC_", "OPENAI_"))}
        e.update(AGENTLOOP_HOME=str(base / "home"), HOME=str(base / "user"), NO_COLOR="1", **(env or {}))
        self.p = subprocess.Popen([*AGENTLOOP, *SDK_START, *model, *flags], cwd=self.dir, env=e, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[Msg | None] = queue.Queue()
        self.seen: list[Msg] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, obj: Msg) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(obj) + "\n")
        self.p.stdin.flush()

    def prompt(self, text: str, uuid: str | None = None) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None, "session_id": "",
                   **({"uuid": uuid} if uuid else {})})

    def request(self, rid: str, body: Msg) -> Msg:
        self.send({"type": "control_request", "request_id": rid, "request": body})
        return self.until(lambda m: m.get("type") == "control_response" and m["response"].get("request_id") == rid)["response"]

    def until(self, pred: Callable[[Msg], bool], timeout: float = 60) -> Msg:
        while True:
            m = self.lines.get(timeout=timeout)
            if m is None:
                raise AssertionError(f"stdout ended first; stderr: {self.finish()[1]}")
            self.seen.append(m)
            if pred(m):
                return m

    def finish(self) -> tuple[int, str]:
        if self.p.stdin is not None and not self.p.stdin.closed:
            self.p.stdin.close()
        try:
            self.p.wait(60)
        finally:
            if self.p.poll() is None:
                self.p.kill()
        assert self.p.stderr is not None
        return int(self.p.returncode), self.p.stderr.read()


def _until_turn_begun(base: Path) -> None:
    """Wait (a generous deadline: a fixed wait loses on a loaded machine) until a turn's run has begun."""
    from _pty import turns_begun

    deadline = time.monotonic() + 60
    while not turns_begun(str(base / "home")):
        assert time.monotonic() < deadline, "no turn began"
        time.sleep(0.05)


def _is_result(m: Msg) -> bool:
    return m.get("type") == "result"


def _edit_script() -> list[Msg]:
    return [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}, "id": "t_read"}]},
        {"tool_calls": [{"name": "Edit", "arguments": {"file_path": "hello.txt", "old_string": "hi", "new_string": "bye"}, "id": "t_edit"}]},
        {"text": "done"},
    ]


def _tool_result(msgs: list[Msg], call_id: str) -> Msg:
    for m in msgs:
        if m.get("type") == "user" and isinstance(m["message"]["content"], list):
            for b in m["message"]["content"]:
                if b.get("tool_use_id") == call_id:
                    return dict(b)
    raise AssertionError(f"no result for {call_id}")


@pytest.mark.parametrize("answer, named", [
    ({"subtype": "success", "response": {"behavior": "maybe"}}, "malformed (behavior 'maybe'"),
    ({"subtype": "success"}, "malformed (a success needs a response object)"),
    ({"subtype": "success", "response": {"behavior": "allow", "updatedInput": "everything"}}, "updatedInput must be an object"),
    ({"subtype": "error", "error": "the host crashed"}, "the host crashed"),
])
def test_a_broken_answer_to_can_use_tool_refuses_the_call_and_says_why(tmp_path: Path, answer: Msg, named: str) -> None:
    cli = Cli(tmp_path, _edit_script(), "--permission-prompt-tool", "stdio")
    assert cli.request("init", {"subtype": "initialize", "hooks": None})["subtype"] == "success"
    cli.prompt("change it")
    ask = cli.until(lambda m: m.get("type") == "control_request")
    assert ask["request"]["subtype"] == "can_use_tool" and ask["request"]["tool_name"] == "Edit"
    assert ask["request"]["tool_use_id"] == "t_edit" and ask["request"]["input"]["new_string"] == "bye"
    cli.send({"type": "control_response", "response": {"request_id": ask["request_id"], **answer}})
    cli.until(_is_result)
    code, _ = cli.finish()
    result = _tool_result(cli.seen, "t_edit")
    assert result["is_error"] and named in json.dumps(result)
    assert (cli.dir / "hello.txt").read_text() == "hi from the file\n"
    assert code == 0


def test_allowed_arguments_that_a_deny_rule_refuses_are_refused(tmp_path: Path) -> None:
    cli = Cli(tmp_path, _edit_script(), "--permission-prompt-tool", "stdio", "--disallowedTools", "Edit(secret.txt)")
    (cli.dir / "secret.txt").write_text("hi there\n")
    cli.request("init", {"subtype": "initialize"})
    cli.prompt("change it")
    ask = cli.until(lambda m: m.get("type") == "control_request")
    moved = {**ask["request"]["input"], "file_path": str(cli.dir / "secret.txt")}
    cli.send({"type": "control_response", "response": {"subtype": "success", "request_id": ask["request_id"],
                                                        "response": {"behavior": "allow", "updatedInput": moved}}})
    cli.until(_is_result)
    cli.finish()
    assert "denied" in json.dumps(_tool_result(cli.seen, "t_edit"))
    assert (cli.dir / "secret.txt").read_text() == "hi there\n"


def test_a_request_agentloop_cannot_do_is_answered_with_an_error_naming_it_and_the_session_goes_on(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [{"text": "still here"}])
    cli.request("init", {"subtype": "initialize"})
    res = cli.request("r1", {"subtype": "rewind_files", "user_message_id": "x"})
    assert res["subtype"] == "error" and "rewind_files" in res["error"]
    cli.prompt("hello")
    assert cli.until(_is_result)["result"] == "still here"
    assert cli.finish()[0] == 0


@pytest.mark.parametrize("field, value", [
    ("agents", {"reviewer": {"description": "d", "prompt": "p"}}),
    ("jsonSchema", {"type": "object"}),
])
def test_initialize_with_what_agentloop_cannot_honour_is_an_error_naming_it(tmp_path: Path, field: str, value: Any) -> None:
    cli = Cli(tmp_path, [])
    res = cli.request("init", {"subtype": "initialize", field: value})
    cli.finish()
    assert res["subtype"] == "error" and field in res["error"]


def test_initialize_answers_with_commands_agents_and_models(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [])
    res = cli.request("init", {"subtype": "initialize"})
    cli.finish()
    body = res["response"]
    assert {"commands", "agents", "output_style", "available_output_styles", "models", "account"} <= set(body)
    assert body["models"][0]["value"].startswith("scripted:")


def test_the_system_prompt_fields_of_initialize_reach_the_model(tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        cli = Cli(tmp_path, None, "--model", "anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": "sk-test"})
        cli.request("init", {"subtype": "initialize", "systemPrompt": ["You are a test."], "appendSystemPrompt": "Answer in French."})
        cli.prompt("hello")
        cli.until(_is_result)
        cli.finish()
        system = json.dumps(fp.requests[0]["body"]["system"])
    assert "You are a test." in system and "Answer in French." in system
    assert "Claude Code" not in system  # systemPrompt replaced the built-in prompt


def test_set_permission_mode_refuses_bypass_unless_the_session_began_in_it(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [], "--allow-dangerously-skip-permissions")
    res = cli.request("m", {"subtype": "set_permission_mode", "mode": "bypassPermissions"})
    assert cli.request("p", {"subtype": "set_permission_mode", "mode": "plan"})["subtype"] == "success"
    assert cli.request("d", {"subtype": "set_permission_mode", "mode": "dontAsk"})["subtype"] == "error"
    code, err = cli.finish()
    assert res["subtype"] == "error" and "starting the session in it" in res["error"]
    assert "--allow-dangerously-skip-permissions is ignored" in err
    (tmp_path / "b").mkdir()
    cli = Cli(tmp_path / "b", [], "--permission-mode", "bypassPermissions")
    assert cli.request("m", {"subtype": "set_permission_mode", "mode": "default"})["subtype"] == "success"
    assert cli.request("m2", {"subtype": "set_permission_mode", "mode": "bypassPermissions"})["subtype"] == "success"
    cli.finish()


def test_interrupt_with_cancel_queued_drops_the_prompts_waiting(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [{"text": "slow", "delay_ms": 60_000}, {"text": "after"}])
    cli.request("init", {"subtype": "initialize"})
    cli.prompt("first", "u-1")
    cli.prompt("second, queued", "u-2")
    _until_turn_begun(tmp_path)  # the first prompt's turn is under way (its model call waits a minute)
    res = cli.request("i", {"subtype": "interrupt", "cancel_queued": True})
    assert res["subtype"] == "success" and res["response"] == {"still_queued": [], "cancelled": ["u-2"]}
    first = cli.until(_is_result)
    assert first["is_error"]
    cli.prompt("third")
    assert cli.until(_is_result)["result"] == "after"
    assert cli.finish()[0] == 0


@pytest.mark.parametrize("flag", [["--session-id", "not-a-uuid"], ["--task-budget", "1000"],
                                  ["--no-session-persistence"], ["--setting-sources", "project"], ["--permission-prompt-tool", "mcp__x__ask"]])
def test_a_flag_agentloop_cannot_honour_is_an_error_naming_it(tmp_path: Path, flag: list[str]) -> None:
    p = subprocess.run([*AGENTLOOP, *SDK_START, *flag], cwd=tmp_path, capture_output=True, text=True, timeout=60, input="",
                       env={**os.environ, "AGENTLOOP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")})
    assert p.returncode == 2 and flag[0] in p.stderr


def test_tools_leaves_the_model_only_the_built_in_tools_listed(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [], "--tools=Read,Glob")
    init = cli.until(lambda m: m.get("subtype") == "init")
    cli.finish()
    assert {"Read", "Glob"} <= set(init["tools"]) and "Bash" not in init["tools"] and "Edit" not in init["tools"]


def test_sdk_flags_that_change_nothing_here_are_accepted_with_a_warning(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [{"text": "fine"}], "--include-hook-events", "--betas=x", "--max-thinking-tokens=2048", "--thinking=adaptive",
              "--setting-sources=user,project,local", "--max-budget-usd=0.5", "--effort=max")
    cli.prompt("hello")
    assert cli.until(_is_result)["result"] == "fine"
    code, err = cli.finish()
    assert code == 0
    assert "--include-hook-events is ignored" in err and "--betas is ignored" in err and "spend cap $0.500000" in err


def test_session_id_names_the_new_session(tmp_path: Path) -> None:
    sid = "0b7c0a5e-8d0c-4d2e-9d7e-1f0f6a2b9c11"
    cli = Cli(tmp_path, [{"text": "named"}], f"--session-id={sid}")
    cli.prompt("hello")
    result = cli.until(_is_result)
    assert cli.finish()[0] == 0
    assert result["session_id"] == sid and result["transcript"].endswith(f"{sid}.jsonl")


def test_a_sigint_from_outside_still_ends_the_run_with_130(tmp_path: Path) -> None:
    """Only the SDK's interrupt request keeps the process: a signal is Ctrl+C, as in -p."""
    import signal

    cli = Cli(tmp_path, [])
    cli.request("init", {"subtype": "initialize"})
    cli.p.send_signal(signal.SIGINT)
    assert cli.finish()[0] == 130


def test_a_control_request_that_fails_inside_agentloop_is_an_error_answer_and_stdin_is_still_read(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [{"text": "still here"}])
    res = cli.request("bad", {"subtype": "initialize", "hooks": {"PreToolUse": [{"matcher": "Read", "hookCallbackIds": "hook_0"}]}})
    assert res["subtype"] == "error" and "hookCallbackIds" in res["error"]
    cli.prompt("hello")
    assert cli.until(_is_result)["result"] == "still here"
    assert cli.finish()[0] == 0


def test_a_plain_interrupt_keeps_the_queued_prompts_and_lists_them(tmp_path: Path) -> None:
    cli = Cli(tmp_path, [{"text": "slow", "delay_ms": 60_000}, {"text": "the queued one"}])
    cli.request("init", {"subtype": "initialize"})
    cli.prompt("first", "u-1")
    cli.prompt("second, queued", "u-2")
    _until_turn_begun(tmp_path)  # the first prompt's turn is under way (its model call waits a minute)
    res = cli.request("i", {"subtype": "interrupt"})
    assert res["response"] == {"still_queued": ["u-2"]}
    assert cli.until(_is_result)["is_error"]
    assert cli.until(_is_result)["result"] == "the queued one"
    assert cli.finish()[0] == 0
