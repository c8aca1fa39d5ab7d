"""Hooks exactly as Claude Code documents them, run by the terminal agent with real hook scripts.

The specification is Claude Code's hooks reference
(https://code.claude.com/docs/en/hooks); each test quotes what it checks.
Each test runs twice: settings in agentloop's ``.agentloop/settings.json``
and in Claude Code's ``.claude/settings.json`` (the same shape; both are read).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _hookkit import executable, layout, settings  # noqa: F401 (layout: both settings layouts, autouse)
from _wait import until
from agentloop.agent.agent import Agent
from agentloop.transcript import read_records
from mcp_servers.helpers import alive as _alive


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with a note and a secret."""
    (proj / "notes.txt").write_text("hello notes\n")
    (proj / "secrets").mkdir()
    (proj / "secrets" / "key.txt").write_text("s3cr3t\n")
    return proj


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": name, "arguments": arguments}], "usage": [100, 10]}


def final(text: str = "done") -> dict[str, Any]:
    return {"text": text, "usage": [100, 5]}


def tool_results(a: Agent) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def pre(cmd: str, matcher: str = "Bash", **extra: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": cmd, **extra}]}]}


DECIDE_PY = """#!/usr/bin/env python3
# answers PreToolUse with the permissionDecision named in $DECISION
import json, os, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "permissionDecision": os.environ["DECISION"],
                  "permissionDecisionReason": "decided by decide.py"}}))
"""


def decide_hook(proj: Path, decision: str) -> str:
    return f"DECISION={decision} " + executable(proj / "decide.py", DECIDE_PY)


def test_permission_decision_allow_skips_the_prompt_in_print_mode(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """PreToolUse decision control: ``"allow"`` skips the permission prompt.

    Without a terminal (``-p``) a prompt means a refusal, so before this the call was refused.
    """
    settings(proj, {"hooks": pre(decide_hook(proj, "allow"))})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command="echo approved-by-hook"), final()]))
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert r["ok"] and "approved-by-hook" in json.dumps(r["content"])


@pytest.mark.parametrize(("decision", "runs"), [("allow", False), ("deny", False)])
def test_json_from_a_hook_that_exits_non_zero_never_widens_but_its_denial_holds(
        tmp_path: Path, proj: Path, scripted: Callable[..., str], decision: str, runs: bool) -> None:
    """Exit codes: "Claude Code only processes JSON on exit 0"; any other code but 2 is a
    non-blocking error. So an ``allow`` printed before ``exit 1`` approves nothing (the call
    asks, and without a terminal is refused); a ``deny`` printed before ``exit 1`` is kept all
    the same: a guard is held to its word, never loosened by its own crash."""
    cmd = f"DECISION={decision} " + executable(proj / "decide1.sh", "#!/usr/bin/env bash\n"
                                               f'{executable(proj / "decide.py", DECIDE_PY)}\nexit 1\n')
    settings(proj, {"hooks": pre(cmd)})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command="touch ran"), final()]))
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert not r["ok"]
    assert (proj / "ran").exists() is runs


def test_permission_decision_allow_does_not_override_an_ask_rule(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """"Deny and ask rules are still evaluated regardless of what the hook returns"."""
    settings(proj, {"permissions": {"ask": ["Bash(echo *)"]}, "hooks": pre(decide_hook(proj, "allow"))})
    asked: list[str] = []

    def ask(c: Any, d: Any) -> str:
        asked.append(c.name)
        return "deny"

    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command="echo hi"), final()]), ask_permission=ask)
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert asked == ["Bash"] and not r["ok"] and "refused" in r["error"]


def test_permission_decision_ask_prompts_once_and_the_answer_decides(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """``"ask"`` prompts the user to confirm; the user's yes is not followed by a second prompt."""
    settings(proj, {"hooks": pre(decide_hook(proj, "ask"))})
    asked: list[str] = []

    def ask(c: Any, d: Any) -> str:
        asked.append(c.arguments["command"])
        return "allow"

    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command="echo asked"), final()]), ask_permission=ask)
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert r["ok"] and asked == ["echo asked"]


def test_permission_decision_deny_denies_even_in_bypass_mode(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """``"deny"`` prevents the tool call; ``permissionDecisionReason`` "For "deny", shown to Claude"."""
    settings(proj, {"hooks": pre(decide_hook(proj, "deny"))})
    marker = proj / "ran"
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command=f"touch {marker}"), final()]), permission_mode="bypassPermissions")
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert not r["ok"] and "decided by decide.py" in r["error"]
    assert not marker.exists()


GUARD_SECRETS_BASH = """#!/usr/bin/env bash
# denies Read/Edit/Write under the project's secrets/ directory
file=$(jq -r '.tool_input.file_path // empty')
case "$file" in
  "$CLAUDE_PROJECT_DIR"/secrets/*) printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"secrets are off limits"}}' ;;
esac
exit 0
"""


@pytest.mark.parametrize("spelling", ["secrets/key.txt", "./secrets/key.txt", "notes/../secrets/key.txt"])
def test_file_paths_reach_hooks_absolute_so_a_relative_spelling_cannot_bypass_them(tmp_path: Path, proj: Path, spelling: str, scripted: Callable[..., str]) -> None:
    """PreToolUse input: "``tool_input.file_path`` is always absolute: Claude Code expands ``~`` and
    relative paths before hooks run, so a hook that matches on paths can't be bypassed via ``~`` or a
    relative spelling of the same path"."""
    settings(proj, {"hooks": pre(executable(proj / "guard.sh", GUARD_SECRETS_BASH), "Read|Edit|Write")})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Read", file_path=spelling), final()]))
    a.ask("read the key")
    a.close()
    (r,) = tool_results(a)
    assert not r["ok"] and "secrets are off limits" in r["error"]
    assert "s3cr3t" not in json.dumps(a.session.messages)


LOG_STDIN = """#!/usr/bin/env bash
cat >> "$LOG"; echo >> "$LOG"
"""


def logged(proj: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (proj / "hook.log").read_text().splitlines() if x.strip()]


def test_tool_response_has_claude_codes_shape_for_bash_write_edit_and_read(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """PostToolUse input: "``Bash`` returns an object with ``stdout``, ``stderr``, ``interrupted``, and
    ``isImage`` fields"; for ``Write`` the documented example is ``{"filePath": "/path/to/file.txt",
    "success": true}``; file-tool ``tool_input`` paths "arrive in the same format as for PreToolUse:
    always absolute"."""
    hook = executable(proj / "log.sh", LOG_STDIN)
    settings(proj, {"permissions": {"allow": ["Bash", "Write", "Edit"]},
                    "hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]}})
    replies = [
        call("Bash", command="echo out-line"),
        call("Write", file_path="new.txt", content="one\n"),
        call("Edit", file_path="new.txt", old_string="one", new_string="two"),
        call("Read", file_path="new.txt"),
        final(),
    ]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), env={**os.environ, "LOG": str(proj / "hook.log")})
    a.ask("go")
    a.close()
    bash, write, edit, read = (e["tool_response"] for e in logged(proj))
    new = str(proj / "new.txt")
    assert bash == {"stdout": "out-line", "stderr": "", "interrupted": False, "isImage": False}
    assert write["filePath"] == new and write["success"] is True and write["type"] == "create" and write["content"] == "one\n"
    assert edit["filePath"] == new and edit["oldString"] == "one" and edit["newString"] == "two" and edit["success"] is True
    assert read["type"] == "text" and read["file"]["filePath"] == new and "two" in read["file"]["content"]
    assert [e["tool_input"].get("file_path") for e in logged(proj)] == [None, new, new, new]


IF_LOG = """#!/usr/bin/env bash
jq -c '{cmd: .tool_input.command, file: .tool_input.file_path}' >> "$LOG"
"""


def test_if_conditions_filter_handlers_with_permission_rule_syntax(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Common fields, ``if``: "Permission rule syntax to filter when this hook runs, such as
    ``"Bash(git *)"`` [...] ``Bash(git *)`` / ``npm test && git push``: yes, each subcommand is
    checked"; "On other events, a hook with ``if`` set never runs"."""
    hook = executable(proj / "log.sh", IF_LOG)
    settings(proj, {"permissions": {"allow": ["Bash"]}, "hooks": {
        "PreToolUse": [{"matcher": "Bash|Read", "hooks": [
            {"type": "command", "command": hook, "if": "Bash(git *)"},
            {"type": "command", "command": hook + " #read", "if": "Read(*.md)"},
        ]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook + " #prompt", "if": "Bash(*)"}]}],
    }})
    (proj / "README.md").write_text("# readme\n")
    replies = [call("Bash", command="echo hi"), call("Bash", command="echo a && git status"), call("Read", file_path="notes.txt"),
               call("Read", file_path="README.md"), final()]
    warnings: list[str] = []
    import logging

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    catcher = Catch()
    logging.getLogger("agentloop.agent").addHandler(catcher)
    try:
        a = Agent(cwd=str(proj), trust=True, model=scripted(replies), env={**os.environ, "LOG": str(proj / "hook.log")})
        a.ask("go")
        a.close()
    finally:
        logging.getLogger("agentloop.agent").removeHandler(catcher)
    ran = [json.loads(x) for x in (proj / "hook.log").read_text().splitlines()]
    assert ran == [{"cmd": "echo a && git status", "file": None}, {"cmd": None, "file": str(proj / "README.md")}]
    assert any("UserPromptSubmit" in w and ".if" in w for w in warnings)


@pytest.mark.parametrize("event", ["Setup", "PermissionDenied", "PostToolBatch", "TeammateIdle", "FileChanged"])
def test_a_configured_event_agentloop_does_not_fire_is_warned_about_at_load(tmp_path: Path, proj: Path, event: str, caplog: pytest.LogCaptureFixture, scripted: Callable[..., str]) -> None:
    """Every event Claude Code documents either fires or is named, when configured, in a warning at load."""
    settings(proj, {"hooks": {event: [{"hooks": [{"type": "command", "command": "true"}]}]}})
    with caplog.at_level("WARNING", logger="agentloop"):
        a = Agent(cwd=str(proj), trust=True, model=scripted([final()]))
        a.close()
    assert any(event in r.getMessage() and "does not fire" in r.getMessage() for r in caplog.records)


ASYNC_HOOK = """#!/usr/bin/env bash
# waits (up to 20 s) for the test to say go, then reports like the reference's run-tests-async.sh
for i in $(seq 200); do [ -e "$GO" ] && break; sleep 0.1; done
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Tests passed after editing"}}'
touch "$DONE"
"""


def test_async_handlers_run_in_the_background_and_their_context_arrives_next_turn(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """"Run hooks in the background": "set ``"async": true`` to run the hook in the background while
    Claude continues working [...] that content is delivered to Claude as context on the next
    conversation turn"."""

    hook = executable(proj / "async.sh", ASYNC_HOOK)
    settings(proj, {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": hook, "async": True, "timeout": 30}]}]}})
    env = {**os.environ, "GO": str(proj / "go"), "DONE": str(proj / "done")}
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Read", file_path="notes.txt"), final("first"), final("second")]), env=env)
    assert a.ask("read").answer == "first"
    assert not (proj / "done").exists()  # the turn did not wait for the hook
    (proj / "go").touch()
    assert until(lambda: not [t for t in a.hooks.runner._async_running if t.is_alive()])  # type: ignore[attr-defined]
    a.ask("next")
    a.close()
    users = [m["content"] for m in a.session.messages if m.get("role") == "user"]
    assert users[-1].startswith("next") and "Tests passed after editing" in users[-1]


def test_a_background_handler_still_running_is_killed_when_the_session_ends(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Async hooks belong to their session: one still running when it ends (the end of a ``-p``
    run) is killed with everything it started, so nothing of it is left behind or writes later."""

    hook = executable(proj / "slow.sh", '#!/usr/bin/env bash\necho $$ > "$PIDS"\n(sleep 30; touch "$LATE") &\necho $! >> "$PIDS"\nwait\n')
    # in the user's own settings: on the host, where its process ids are the test's (a project's hook runs in the
    # sandbox's PID namespace: test_project_hooks_sandboxed.py checks that one ends with the session)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(
        {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": hook, "async": True, "timeout": 60}]}]}}))
    pids, late = proj / "pids", proj / "late"
    env = {**os.environ, "PIDS": str(pids), "LATE": str(late)}
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Read", file_path="notes.txt"), final("first")]), env=env)
    assert a.ask("read").answer == "first"
    until(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    started = [int(p) for p in pids.read_text().split()]
    assert all(_alive(p) for p in started)
    a.close()
    until(lambda: not any(_alive(p) for p in started), 10)  # (killed: gone at once; the wait is for a loaded machine)
    assert not any(_alive(p) for p in started), "a background hook outlived its session"




def test_the_settings_env_key_reaches_bash_and_hooks(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Claude Code settings: ``env`` holds "Environment variables that will be applied to every session"."""
    hook = executable(proj / "env.sh", '#!/usr/bin/env bash\necho "hook sees $DEPLOY_TARGET" > "$CLAUDE_PROJECT_DIR/hook-env.txt"\n')
    settings(proj, {"env": {"DEPLOY_TARGET": "staging"}, "permissions": {"allow": ["Bash"]},
                    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("Bash", command="echo tool sees $DEPLOY_TARGET"), final()]))
    a.ask("go")
    a.close()
    (r,) = tool_results(a)
    assert "tool sees staging" in json.dumps(r["content"])
    assert (proj / "hook-env.txt").read_text().strip() == "hook sees staging"


def test_session_start_fires_with_source_compact_after_compact(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """SessionStart matcher ``compact``: fires after "Auto or manual compaction"; its stdout is context."""
    hook = executable(proj / "start.sh", '#!/usr/bin/env bash\nsrc=$(jq -r .source)\necho "re-primed after $src"\n')
    settings(proj, {"hooks": {"SessionStart": [{"matcher": "compact", "hooks": [{"type": "command", "command": hook}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final("a"), {"text": "Summary: said a.", "usage": [10, 5]}, final("b")]))
    assert not any("re-primed" in str(m.get("content")) for m in a.session.messages)
    a.ask("one " + "long context " * 4000)  # /compact on a short session says so and calls no model
    a.compact("")
    a.close()
    (primed,) = [m for m in a.session.messages if "re-primed after compact" in str(m.get("content"))]
    assert primed["role"] == "user" and str(primed["content"]).endswith("\n\nre-primed after compact")


class _Summarising:
    """A scripted model that also answers compaction requests (no tools, the compaction prompt)."""

    name = "scripted"

    def __init__(self, replies: list[Any]):
        self.replies = replies

    def complete(self, req: Any) -> Any:
        from agentloop.agent.context.compaction import COMPACT_PROMPT
        from agentloop.events import ModelReply, ToolCall, Usage

        if not req.tools and str(req.messages[0]["content"]).startswith(COMPACT_PROMPT):
            return ModelReply(text="Summary: read big.txt several times.", usage=Usage(50, 10))
        if not self.replies:
            return ModelReply(text="done", usage=Usage(10, 2))
        r = self.replies.pop(0)
        calls = tuple(ToolCall(f"c{len(self.replies)}", c["name"], c["arguments"]) for c in r.get("tool_calls", []))
        return ModelReply(text=r.get("text", ""), tool_calls=calls, usage=Usage(100, 10))


def test_session_start_fires_with_source_compact_after_automatic_compaction(tmp_path: Path, proj: Path) -> None:
    """SessionStart matcher ``compact``: "Auto or manual compaction"; the context reaches the model."""
    hook = executable(proj / "start.sh", '#!/usr/bin/env bash\nsrc=$(jq -r .source)\necho "re-primed after $src"\n')
    settings(proj, {"contextWindow": 8000, "hooks": {"SessionStart": [{"matcher": "compact", "hooks": [{"type": "command", "command": hook}]}]}})
    (proj / "big.txt").write_text(("x" * 99 + "\n") * 200)
    reads = [call("Read", file_path="big.txt", offset=i + 1) for i in range(12)]
    a = Agent(cwd=str(proj), trust=True, model=_Summarising(reads))
    a.ask("read it many times")
    a.close()
    recs = [r.payload for r in read_records(a.session.path)]
    assert any(r.get("status") == "compacted" and r.get("trigger") == "auto" for r in recs)
    starts = [r for r in recs if r.get("event") == "SessionStart"]
    assert [s["matcher_value"] for s in starts] == ["compact"] * len(starts) and starts
    assert any("re-primed after compact" in str(m.get("content")) for m in a.session.messages)


TRANSCRIPT_READER_PY = """#!/usr/bin/env python3
# the common Stop-hook pattern: read transcript_path as Claude Code's JSONL and inspect the last turn
import json, os, sys
event = json.load(sys.stdin)
lines = [json.loads(x) for x in open(event["transcript_path"]) if x.strip()]
summary = {
    "types": [l["type"] for l in lines],
    "last_assistant_text": [b["text"] for l in lines if l["type"] == "assistant"
                            for b in l["message"]["content"] if b["type"] == "text"][-1],
    "tool_uses": [b["name"] for l in lines if l["type"] == "assistant" for b in l["message"]["content"] if b["type"] == "tool_use"],
    "tool_results": [b["tool_use_id"] for l in lines if l["type"] == "user" and isinstance(l["message"]["content"], list)
                     for b in l["message"]["content"] if b["type"] == "tool_result"],
    "path": event["transcript_path"],
}
open(os.environ["OUT"], "w").write(json.dumps(summary))
"""


def test_transcript_path_gives_hooks_claude_codes_message_lines_beside_the_session(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Common input fields: ``transcript_path`` is the "Path to conversation JSON"; hooks written for
    Claude Code parse it as JSONL of ``{"type": "user"|"assistant", "message": {...}}`` lines."""
    from agentloop.transcript import verify_file

    hook = executable(proj / "reader.py", TRANSCRIPT_READER_PY)
    settings(proj, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}})
    replies = [{"text": "let me look", "tool_calls": [{"id": "t1", "name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]},
               final("notes say hello")]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), env={**os.environ, "OUT": str(proj / "out.json")})
    a.ask("what do the notes say?")
    a.close()
    got = json.loads((proj / "out.json").read_text())
    assert got["types"] == ["user", "assistant", "user", "assistant"]
    assert got["last_assistant_text"] == "notes say hello"
    assert got["tool_uses"] == ["Read"] and got["tool_results"] == ["t1"]
    assert got["path"] != a.session.path and Path(got["path"]).parent == Path(a.session.path).parent / a.session.id
    assert verify_file(a.session.path).ok  # the hash-chained session is untouched


PUBLIC_HOOKS = Path(__file__).parent / "data" / "claude-code-hooks-karanb192"


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="the public hook is a node script")
def test_a_public_secrets_guard_runs_unchanged_and_its_ask_mode_prompts_once(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """karanb192/claude-code-hooks' protect-secrets.js (MIT), unchanged: a ``.env`` read is denied
    ("``deny``" prevents the tool call) and, with its documented ``HOOK_ASK_HIGH=true`` set through
    the settings ``env`` key, writing ``credentials.json`` returns ``"ask"``: "``ask`` prompts the user
    to confirm" — once; the user's yes is the approval."""
    import shutil

    hooks_dir = proj / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    shutil.copy(PUBLIC_HOOKS / "protect-secrets.js", hooks_dir / "protect-secrets.js")
    (proj / ".env").write_text("API_KEY=sk-live-123\n")
    settings(proj, {"env": {"HOOK_ASK_HIGH": "true"}, "hooks": {"PreToolUse": [{"matcher": "Read|Edit|Write|Bash", "hooks": [
        {"type": "command", "command": 'node "$CLAUDE_PROJECT_DIR"/.claude/hooks/protect-secrets.js'}]}]}})
    asked: list[str] = []

    def ask(c: Any, d: Any) -> str:
        asked.append(f"{c.name} {c.arguments.get('file_path')}")
        return "allow"

    home = tmp_path / "user-home"
    home.mkdir()
    replies = [call("Read", file_path=".env"), call("Write", file_path="credentials.json", content="{}\n"), final()]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), ask_permission=ask, env={**os.environ, "HOME": str(home)})
    a.ask("set up credentials")
    a.close()
    env_read, write = tool_results(a)
    assert not env_read["ok"] and "[env-file]" in env_read["error"] and "sk-live" not in json.dumps(a.session.messages)
    assert write["ok"] and (proj / "credentials.json").read_text() == "{}\n"
    assert asked == ["Write credentials.json"]
    # its log under ~/.claude stays inside the sandbox: a project's hook runs there (record 0015)
    assert not (home / ".claude" / "hooks-logs").exists()


@pytest.mark.parametrize(("fault", "error"), [
    ("401", "authentication_failed"), ("quota", "billing_error"), ("404", "invalid_request"),
])
def test_stop_failure_names_the_kind_of_api_error_and_its_matcher_selects_it(
        tmp_path: Path, proj: Path, fault: str, error: str) -> None:
    """StopFailure: the input's ``error`` (also the matcher value) is the kind of failure, one of
    ``rate_limit``, ``authentication_failed``, ``billing_error``, ``invalid_request``,
    ``server_error``, ``max_output_tokens``, ``unknown``; here from a real HTTP error response."""
    from agentloop.testing.fakeprovider import FakeProvider

    hook = executable(proj / "log.sh", LOG_STDIN)
    other = executable(proj / "other.sh", '#!/usr/bin/env bash\ntouch "$CLAUDE_PROJECT_DIR/other-matched"\n')
    settings(proj, {"hooks": {"StopFailure": [{"matcher": error, "hooks": [{"type": "command", "command": hook}]},
                                              {"matcher": "rate_limit", "hooks": [{"type": "command", "command": other}]}]}})
    reply: dict[str, Any] = {"fault": fault} if fault != "404" else {"text": "never"}
    with FakeProvider({"replies": [reply]}) as fp:
        base = fp.url + ("/v1" if fault != "404" else "/nowhere")
        a = Agent(cwd=str(proj), trust=True, model="openai:gpt-4o-mini", base_url=base,
                  env={**os.environ, "LOG": str(proj / "hook.log"), "OPENAI_API_KEY": "sk-test"})
        res = a.ask("hello")
        a.close()
    assert res.stop_reason == "model_error"
    (failure,) = logged(proj)
    assert failure["hook_event_name"] == "StopFailure" and failure["error"] == error
    assert not (proj / "other-matched").exists()


def test_a_model_error_fires_stop_failure_instead_of_stop(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Stop: "API errors fire StopFailure instead"; StopFailure: "Output and exit code are ignored"."""
    hook = executable(proj / "log.sh", LOG_STDIN)
    blocker = executable(proj / "block.sh", "#!/usr/bin/env bash\ncat >/dev/null\necho 'keep going' >&2\nexit 2\n")
    settings(proj, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}],
                              "StopFailure": [{"hooks": [{"type": "command", "command": hook}, {"type": "command", "command": blocker}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final("only answer")]), env={**os.environ, "LOG": str(proj / "hook.log")})
    a.ask("one")
    res = a.ask("two")  # the scripted model has no reply left: the run ends with model_error
    a.close()
    assert res.stop_reason == "model_error"
    events = [(e["hook_event_name"], e.get("last_assistant_message")) for e in logged(proj)]
    assert events[0] == ("Stop", "only answer")
    assert [e for e, _ in events] == ["Stop", "StopFailure"]
    failure = logged(proj)[1]
    assert failure["error"] == "unknown" and "scripted model" in failure["error_details"]
