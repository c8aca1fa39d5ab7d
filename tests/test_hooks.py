"""Hooks: real bash and Python scripts run as subprocesses through HookRunner."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.agent.hooks.runner import (
    HookOutputError,
    HookRunner,
    parse_hook_output,
)
from agentloop.config.settings import ConfigError, SettingsSource
from mcp_servers.helpers import wait_gone

PY = sys.executable


def script(tmp: Path, name: str, body: str) -> str:
    p = tmp / name
    p.write_text(body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def bash(tmp: Path, name: str, body: str) -> str:
    return script(tmp, name, "#!/usr/bin/env bash\n" + body)


def py(tmp: Path, name: str, body: str) -> str:
    return script(tmp, name, f"#!{PY}\nimport json, sys, os\n" + body)


def runner(tmp: Path, hooks: dict[str, Any], *more: dict[str, Any]) -> HookRunner:
    sources = [SettingsSource(str(tmp / f"settings{i}.json"), "project", {"hooks": h}) for i, h in enumerate((hooks, *more))]
    return HookRunner.from_settings(sources, project_dir=str(tmp), session_id="s1", transcript_path=str(tmp / "t.jsonl"))


def pre(cmd: str, matcher: str = "Bash", **extra: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": cmd, **extra}]}]}


BASH_INPUT = {"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "tool_use_id": "call_1"}


# --- invocation ----------------------------------------------------------------


def test_a_hook_receives_claude_code_stdin_fields_and_both_project_dir_variables(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    cmd = py(tmp_path, "dump.py", f"""
d = json.load(sys.stdin)
d["env_claude"] = os.environ.get("CLAUDE_PROJECT_DIR")
d["env_agentloop"] = os.environ.get("AGENTLOOP_PROJECT_DIR")
d["cwd_real"] = os.getcwd()
open({str(out)!r}, "w").write(json.dumps(d))
""")
    r = runner(tmp_path, pre(cmd))
    outcome = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.blocked
    seen = json.loads(out.read_text())
    assert seen["hook_event_name"] == "PreToolUse"
    assert seen["session_id"] == "s1"
    assert seen["transcript_path"] == str(tmp_path / "t.jsonl")
    assert seen["cwd"] == str(tmp_path)
    assert seen["tool_name"] == "Bash" and seen["tool_input"] == {"command": "ls -la"} and seen["tool_use_id"] == "call_1"
    assert seen["env_claude"] == seen["env_agentloop"] == str(tmp_path)
    assert os.path.realpath(seen["cwd_real"]) == os.path.realpath(tmp_path)


def test_matchers_follow_claude_code_exact_lists_and_regexes(tmp_path: Path) -> None:
    ok = bash(tmp_path, "ok.sh", "exit 0\n")
    r = runner(tmp_path, {"PreToolUse": [
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": ok + " a"}]},
        {"matcher": "Edit, Read", "hooks": [{"type": "command", "command": ok + " b"}]},
        {"matcher": "mcp__memory__.*", "hooks": [{"type": "command", "command": ok + " c"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": ok + " d"}]},
        {"hooks": [{"type": "command", "command": ok + " e"}]},
    ]})
    names = lambda v: sorted(h.command[-1] for h in r.matching("PreToolUse", v))  # noqa: E731
    assert names("Edit") == ["a", "b", "d", "e"]
    assert names("Write") == ["a", "d", "e"]
    assert names("Writer") == ["d", "e"]  # exact names, not prefixes
    assert names("mcp__memory__create") == ["c", "d", "e"]


def test_identical_handlers_from_two_settings_files_run_once(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    cmd = bash(tmp_path, "count.sh", f"echo x >> {counter}\n")
    r = runner(tmp_path, pre(cmd), pre(cmd, matcher="*"))
    outcome = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert len(outcome.results) == 1
    assert counter.read_text().count("x") == 1


def test_matching_handlers_run_in_parallel(tmp_path: Path) -> None:
    # A barrier, not a stopwatch: each handler marks that it started, then waits
    # (up to 10 s) for the other two. Run one after another, the first could only
    # time out and say "alone", however fast or loaded the machine.
    gate = tmp_path / "gate"
    gate.mkdir()
    body = (
        f"touch {gate}/$1.started\n"
        "for _ in $(seq 100); do\n"
        f"  if [ $(ls {gate} | grep -c started) -ge 3 ]; then echo together > {gate}/$1.out; exit 0; fi\n"
        "  sleep 0.1\n"
        "done\n"
        f"echo alone > {gate}/$1.out\n"
    )
    hook = bash(tmp_path, "wait.sh", body)
    r = runner(tmp_path, {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": f"{hook} {n}"} for n in "abc"]}]})
    outcome = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert len(outcome.results) == 3
    assert {n: (gate / f"{n}.out").read_text().strip() for n in "abc"} == dict.fromkeys("abc", "together")


# --- exit codes ----------------------------------------------------------------


def test_exit_0_with_plain_text_proceeds_and_only_prompt_events_add_it_to_context(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "say.sh", "echo 'remember the tests'\n")
    r = runner(tmp_path, {**pre(cmd), "UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]})
    tool = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not tool.blocked and tool.additional_context == () and tool.permission_decision is None
    prompt = r.run("UserPromptSubmit", {"prompt": "hi"})
    assert not prompt.blocked and prompt.additional_context == ("remember the tests",)


def test_exit_2_blocks_pre_tool_use_with_stderr_as_the_reason_and_ignores_stdout(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "block.sh", """echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'
echo 'rm is not allowed here' >&2
exit 2
""")
    outcome = runner(tmp_path, pre(cmd)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert outcome.blocked and outcome.permission_decision == "deny"
    assert outcome.reason == "rm is not allowed here"
    assert outcome.to_record()["handlers"][0]["exit_code"] == 2


def test_exit_2_on_user_prompt_submit_rejects_the_prompt(tmp_path: Path) -> None:
    cmd = py(tmp_path, "p.py", "sys.stderr.write('no prompts today'); sys.exit(2)\n")
    outcome = runner(tmp_path, {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]}).run("UserPromptSubmit", {"prompt": "x"})
    assert outcome.blocked and outcome.reason == "no prompts today"


def test_exit_2_on_post_tool_use_is_feedback_for_the_model_not_a_block(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "post.sh", "echo 'lint failed: 3 errors' >&2; exit 2\n")
    r = runner(tmp_path, {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": cmd}]}]})
    outcome = r.run("PostToolUse", {**BASH_INPUT, "tool_response": "ok"}, matcher_value="Bash")
    assert not outcome.blocked
    assert outcome.feedback == ("lint failed: 3 errors",)


@pytest.mark.parametrize("code", [1, 3, 42, 127, 255])
def test_other_exit_codes_are_non_blocking_errors(tmp_path: Path, code: int) -> None:
    cmd = bash(tmp_path, f"e{code}.sh", f"echo 'boom' >&2; exit {code}\n")
    outcome = runner(tmp_path, pre(cmd)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.blocked and outcome.permission_decision is None
    (res,) = outcome.results
    assert res.exit_code == code and res.failure is not None and "boom" in res.failure


def test_a_missing_script_is_a_non_blocking_error(tmp_path: Path) -> None:
    outcome = runner(tmp_path, pre(str(tmp_path / "nope.sh"))).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.blocked
    assert outcome.results[0].exit_code == 127 and outcome.results[0].failure


def test_valid_json_on_a_non_zero_exit_decides_alone(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "j.sh", """echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"json says no"}}'
exit 1
""")
    outcome = runner(tmp_path, pre(cmd)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert outcome.blocked and outcome.reason == "json says no"


def test_invalid_json_is_a_non_blocking_failure(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "bad.sh", "echo '{\"hookSpecificOutput\": {oops'\n")
    outcome = runner(tmp_path, pre(cmd)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.blocked
    assert "invalid output" in (outcome.results[0].failure or "")


def test_a_hook_printing_10_mb_is_cut_off_and_does_not_hurt(tmp_path: Path) -> None:
    cmd = py(tmp_path, "big.py", "sys.stdout.write('{' + 'x' * (10 * 1024 * 1024))\n")
    t0 = time.monotonic()
    outcome = runner(tmp_path, pre(cmd, timeout=30)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert time.monotonic() - t0 < 10
    (res,) = outcome.results
    assert res.exit_code == 0 and not res.timed_out
    assert res.failure is not None and "10485761 bytes" in res.failure
    assert not outcome.blocked
    rec = json.dumps(outcome.to_record())
    assert len(rec) < 20_000  # the record never carries the flood


def test_a_hook_sleeping_past_its_timeout_is_killed_with_its_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    cmd = bash(tmp_path, "slow.sh", f"""
sleep 300 &
echo $! >> {pids}
( sleep 300 ) &
echo $! >> {pids}
{PY} -c 'import time; time.sleep(300)' &
echo $! >> {pids}
echo $$ >> {pids}
sleep 300
""")
    t0 = time.monotonic()
    outcome = runner(tmp_path, pre(cmd, timeout=3)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert time.monotonic() - t0 < 15
    (res,) = outcome.results
    assert res.timed_out and res.exit_code is None and "timed out" in (res.failure or "")
    assert not outcome.blocked  # non-blocking by default
    listed = [int(x) for x in pids.read_text().split()]
    assert len(listed) == 4
    # SIGKILL is sent; the kernel needs a moment to finish them (zombies count as gone)
    assert wait_gone(set(listed), 5) == set(), "processes survived the timeout"


def test_a_fail_closed_hook_blocks_when_it_fails(tmp_path: Path) -> None:
    crash = bash(tmp_path, "crash.sh", "exit 1\n")
    open_r = runner(tmp_path, pre(crash)).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    closed_r = runner(tmp_path, pre(crash, onFailure="block")).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not open_r.blocked  # the negative control: the same crash, fail-open
    assert closed_r.blocked and closed_r.permission_decision == "deny"
    assert "fail closed" in (closed_r.reason or "")


def test_a_fail_closed_hook_that_times_out_blocks(tmp_path: Path) -> None:
    slow = bash(tmp_path, "slow.sh", "sleep 30\n")
    outcome = runner(tmp_path, pre(slow, timeout=0.5, onFailure="block")).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert outcome.blocked and outcome.results[0].timed_out


def test_a_fail_closed_hook_that_succeeds_does_not_block(tmp_path: Path) -> None:
    ok = bash(tmp_path, "ok.sh", "exit 0\n")
    outcome = runner(tmp_path, pre(ok, onFailure="block")).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.blocked


# --- JSON answers ----------------------------------------------------------------


def test_updated_input_rewrites_the_whole_command(tmp_path: Path) -> None:
    cmd = py(tmp_path, "rewrite.py", """
d = json.load(sys.stdin)
c = d["tool_input"]["command"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
    "updatedInput": {"command": c.replace("rm -rf", "rm -ri")}}}))
""")
    outcome = runner(tmp_path, pre(cmd)).run(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build", "timeout": 5}}, matcher_value="Bash"
    )
    assert outcome.permission_decision == "allow"
    assert outcome.updated_input == {"command": "rm -ri build"}  # replaces the whole object
    assert outcome.to_record()["updated_input"] == {"command": "rm -ri build"}


def test_a_deny_from_one_hook_beats_an_allow_from_another(tmp_path: Path) -> None:
    allow = bash(tmp_path, "allow.sh", """echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo hi"}}}'\n""")
    deny = py(tmp_path, "deny.py", """print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not today"}}))\n""")
    for order in ((allow, deny), (deny, allow)):
        r = runner(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": c} for c in order]}]})
        outcome = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
        assert outcome.blocked and outcome.permission_decision == "deny" and outcome.reason == "not today"
        assert outcome.updated_input is None  # a denied call is not rewritten


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        (["allow", "ask"], "ask"),
        (["ask", "defer"], "defer"),
        (["allow", "defer", "ask"], "defer"),
        (["allow", "allow"], "allow"),
        (["defer", "deny", "allow"], "deny"),
    ],
)
def test_permission_decisions_combine_deny_over_defer_over_ask_over_allow(tmp_path: Path, decisions: list[str], expected: str) -> None:
    hooks = []
    for i, d in enumerate(decisions):
        c = bash(tmp_path, f"d{i}.sh", f"""echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"{d}"}}}}'\n""")
        hooks.append({"type": "command", "command": c})
    r = runner(tmp_path, {"PreToolUse": [{"matcher": "*", "hooks": hooks}]})
    outcome = r.run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert outcome.permission_decision == expected
    assert outcome.blocked == (expected == "deny")


def test_continue_false_system_message_and_additional_context_are_reported(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "c.sh", """echo '{"continue": false, "stopReason": "quota reached", "systemMessage": "heads up", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "the build is red"}}'\n""")
    r = runner(tmp_path, {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": cmd}]}]})
    outcome = r.run("PostToolUse", {**BASH_INPUT, "tool_response": "x"}, matcher_value="Bash")
    assert outcome.stop and outcome.stop_reason == "quota reached"
    assert outcome.system_messages == ("heads up",)
    assert outcome.additional_context == ("the build is red",)
    rec = outcome.to_record()
    assert rec["stop"] is True and rec["system_messages"] == ["heads up"]


def test_decision_block_on_stop_keeps_the_agent_going_with_the_reason(tmp_path: Path) -> None:
    cmd = bash(tmp_path, "s.sh", """echo '{"decision": "block", "reason": "tests are still failing"}'\n""")
    r = runner(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": cmd}]}]})
    outcome = r.run("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
    assert outcome.blocked and outcome.reason == "tests are still failing"


def test_session_stop_is_accepted_as_an_alias_of_session_end(tmp_path: Path) -> None:
    marker = tmp_path / "ended"
    cmd = bash(tmp_path, "end.sh", f"cat > {marker}\n")
    r = runner(tmp_path, {"SessionStop": [{"hooks": [{"type": "command", "command": cmd}]}]})
    assert r.has("SessionEnd")
    r.run("SessionEnd", {"reason": "other"}, matcher_value="other")
    assert json.loads(marker.read_text())["hook_event_name"] == "SessionEnd"


def test_no_matching_handler_means_no_process_and_an_empty_outcome(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cmd = bash(tmp_path, "m.sh", f"touch {marker}\n")
    outcome = runner(tmp_path, pre(cmd, matcher="Edit")).run("PreToolUse", BASH_INPUT, matcher_value="Bash")
    assert not outcome.ran and not marker.exists()


# --- configuration errors --------------------------------------------------------


@pytest.mark.parametrize(
    ("hooks", "needle"),
    [
        ({"PreToolUs": []}, "hooks.PreToolUs: unknown hook event"),
        ({"PreToolUse": {}}, "hooks.PreToolUse must be a list"),
        ({"PreToolUse": [{"matcher": "(", "hooks": []}]}, "hooks.PreToolUse[0].matcher is not a valid regular expression"),
        ({"PreToolUse": [{"hooks": [{"type": "command"}]}]}, "hooks.PreToolUse[0].hooks[0].command"),
        ({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}, "timeout must be a positive"),
        ({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "onFailure": "explode"}]}]}, "onFailure"),
        ({"PreToolUse": [{"hooks": [{"type": "shell", "command": "x"}]}]}, ".type must be"),
    ],
)
def test_a_malformed_hooks_section_is_one_error_naming_the_file_and_place(tmp_path: Path, hooks: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as ei:
        runner(tmp_path, hooks)
    msg = str(ei.value)
    assert msg.startswith(str(tmp_path / "settings0.json") + ": ")
    assert needle in msg


def test_unsupported_handler_types_are_skipped_with_a_warning(tmp_path: Path) -> None:
    r = runner(tmp_path, {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "is this ok?"}]}], "Notification": []})
    assert r.handlers == () and len(r.warnings) == 1 and "'prompt'" in r.warnings[0]


# --- the parser (fuzzed) -----------------------------------------------------------


def test_the_parser_reads_plain_text_and_claude_code_json() -> None:
    assert parse_hook_output(b"  hello\n").text == "hello"
    a = parse_hook_output(b'{"hookSpecificOutput": {"permissionDecision": "ask", "updatedInput": {"a": 1}}}')
    assert a.json and a.permission_decision == "ask" and a.updated_input == {"a": 1}


@pytest.mark.parametrize(
    "raw",
    [
        b"{", b"{]", b"{\"continue\": \"no\"}", b"{\"decision\": \"maybe\"}", b"\xff\xfe{",
        b"{\"hookSpecificOutput\": []}", b"{\"hookSpecificOutput\": {\"permissionDecision\": \"yes\"}}",
        b"{\"hookSpecificOutput\": {\"updatedInput\": \"rm\"}}", b"{\"reason\": 5}",
        b"{" + b"\"a\":[" * 100_000, b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"a": 1' + b"0" * 5000 + b"}",
    ],
)
def test_the_parser_raises_only_its_own_error_on_garbage(raw: bytes) -> None:
    with pytest.raises(HookOutputError):
        parse_hook_output(raw)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda s: "{" + s), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(
        ["continue", "decision", "reason", "hookSpecificOutput", "permissionDecision", "updatedInput", "systemMessage",
         "additionalContext", "stopReason", "suppressOutput", "updatedToolOutput", "x"]), c, max_size=5),
    max_leaves=20).map(lambda v: json.dumps({"hookSpecificOutput": v, "continue": v} if not isinstance(v, dict) else v))))
def test_the_parser_never_raises_anything_but_hook_output_error(raw: bytes | str) -> None:
    try:
        parse_hook_output(raw)
    except HookOutputError:
        pass
