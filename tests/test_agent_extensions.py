"""The terminal Agent with hooks, context management, loop detection and sub-agents installed from settings."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.subagents.runner import verify_tree
from agentloop.transcript import read_records, verify_file

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def proj(proj: Path) -> Path:
    """The shared project folder (conftest.py) with one small file."""
    (proj / "notes.txt").write_text("hello notes\n")
    return proj


def settings(proj: Path, data: dict[str, Any]) -> None:
    (proj / ".agentloop").mkdir(exist_ok=True)
    (proj / ".agentloop" / "settings.json").write_text(json.dumps(data))


def bash_call(cmd: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": cmd}}], "usage": [100, 10]}


def final(text: str = "done") -> dict[str, Any]:
    return {"text": text, "usage": [100, 5]}


def hook_script(proj: Path, name: str, body: str) -> str:
    p = proj / name
    p.write_text("#!/usr/bin/env bash\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def records(a: Agent, kind: str) -> list[Any]:
    return [r.payload for r in read_records(a.session.path) if r.kind == kind]


def test_the_shipped_guard_denies_a_dangerous_command_and_the_decision_is_in_the_session(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    shutil.copytree(ROOT / "examples" / "hooks", proj / "examples" / "hooks")
    settings(proj, json.loads((ROOT / "examples" / "hooks" / "settings.json").read_text()))
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("rm -rf /"), bash_call("echo safe"), final()]), permission_mode="bypassPermissions")
    res = a.ask("clean up")
    a.close("other")
    assert res.stop_reason == "no_tool_calls"
    results = records(a, "tool_result")
    assert not results[0]["ok"] and "guard-dangerous-commands" in results[0]["error"]
    assert results[1]["ok"] and "safe" in json.dumps(results[1]["content"])
    hooks = records(a, "hook")
    pre = [h for h in hooks if h["event"] == "PreToolUse"]
    assert pre[0]["permission_decision"] == "deny" and pre[0]["blocked"]
    assert [h["event"] for h in hooks][:2] == ["SessionStart", "UserPromptSubmit"]
    audit = (proj / ".audit.jsonl").read_text().splitlines()  # the project's hook runs in the sandbox: .claude/ is read-only
    assert any('"command": "echo safe"' in x for x in audit)
    assert verify_file(a.session.path).ok


def test_updated_input_rewrites_the_command_that_runs(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    cmd = hook_script(proj, "rw.sh", """python3 -c '
import json,sys
d=json.load(sys.stdin)
c=d["tool_input"]["command"].replace("hello","rewritten")
print(json.dumps({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":c}}}))'
""")
    settings(proj, {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo hello"), final()]), permission_mode="bypassPermissions")
    a.ask("go")
    a.close()
    (r,) = records(a, "tool_result")
    assert r["ok"] and "rewritten" in json.dumps(r["content"]) and "hello" not in json.dumps(r["content"])


def test_permission_rules_still_apply_after_a_hook_allows(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    cmd = hook_script(proj, "allow.sh", """echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'\n""")
    settings(proj, {"permissions": {"deny": ["Bash(echo *)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("echo hi"), final()]))
    a.ask("go")
    a.close()
    (r,) = records(a, "tool_result")
    assert not r["ok"] and "denied" in r["error"]


def test_a_blocked_prompt_runs_nothing_and_is_recorded(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    cmd = hook_script(proj, "p.sh", "echo 'no secrets please' >&2; exit 2\n")
    settings(proj, {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final()]))
    with pytest.raises(AgentError, match="no secrets please"):
        a.ask("my key is sk-123")
    assert a.session.stats.turns == 0


def test_post_tool_use_context_reaches_the_model_and_stop_hooks_keep_it_going(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    post = hook_script(proj, "post.sh", """echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: 2 warnings"}}'\n""")
    marker = proj / "stopped-once"
    stop = hook_script(proj, "stop.sh", f"""if [ ! -e {marker} ]; then touch {marker}; echo '{{"decision":"block","reason":"run the tests too"}}'; fi\n""")
    settings(proj, {"hooks": {
        "PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": post}]}],
        "Stop": [{"hooks": [{"type": "command", "command": stop}]}],
    }})
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([read, final("read it"), final("tests pass")]))
    res = a.ask("read notes")
    a.close()
    assert res.answer == "tests pass"  # the Stop hook's reason started another turn
    (r,) = records(a, "tool_result")
    msgs = [m for m in a.session.messages if m.get("role") == "tool"]
    assert "lint: 2 warnings" in msgs[0]["content"] and "hello notes" in msgs[0]["content"]
    starts = [x for x in read_records(a.session.path) if x.kind == "run_start"]
    assert starts[-1].payload["messages"][-1] == {"role": "user", "content": "run the tests too"}
    stops = [h for h in records(a, "hook") if h["event"] == "Stop"]
    assert [s["blocked"] for s in stops] == [True, False]


def test_continue_false_from_a_hook_ends_the_run_before_the_next_model_call(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    post = hook_script(proj, "post.sh", """echo '{"continue": false, "stopReason": "quota reached"}'\n""")
    settings(proj, {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": post}]}]}})
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]}
    notices: list[str] = []
    a = Agent(cwd=str(proj), trust=True, model=scripted([read, final("never")]))
    a.on_notice = notices.append
    res = a.ask("read")
    assert res.stop_reason == "interrupted" and res.steps == 1
    assert any("quota reached" in n for n in notices)
    # the next prompt starts clean
    assert a.ask("again").answer == "never"
    a.close()


def test_session_start_context_and_session_end(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    log = proj / "end.log"
    start = hook_script(proj, "start.sh", "echo 'The build is broken on main.'\n")
    end = hook_script(proj, "end.sh", f"cat > {log}\n")
    settings(proj, {"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": start}]}],
                              "SessionStop": [{"hooks": [{"type": "command", "command": end}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final()]))
    a.ask("hi")
    a.close("prompt_input_exit")
    assert any(m["content"] == "The build is broken on main." for m in a.session.messages if m["role"] == "user")
    ev = json.loads(log.read_text())
    assert ev["hook_event_name"] == "SessionEnd" and ev["reason"] == "prompt_input_exit" and ev["session_id"] == a.session.id


def test_the_agent_stops_a_five_turn_loop_and_not_a_varied_run(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    read = {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([read] * 5))
    res = a.ask("read")
    a.close()
    assert res.stop_reason == "loop_detected" and res.steps == 5
    for i in range(6):
        (proj / f"f{i}.txt").write_text(str(i))
    varied = [{"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": f"f{i}.txt"}}], "usage": [100, 10]} for i in range(6)]
    b = Agent(cwd=str(proj), trust=True, model=scripted([*varied, final()]))
    assert b.ask("read all").stop_reason == "no_tool_calls"
    b.close()


def test_context_is_compacted_inside_an_agent_session_and_on_compact(tmp_path: Path, proj: Path) -> None:
    (proj / "big.txt").write_text(("x" * 99 + "\n") * 200)
    settings(proj, {"contextWindow": 8000})
    reads = [{"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "big.txt", "offset": i + 1}}], "usage": [100, 10]} for i in range(12)]
    a = Agent(cwd=str(proj), trust=True, model=_SummaryAware(reads))
    a.ask("read it many times")
    comps = records(a, "compaction")
    assert any(c["status"] == "compacted" for c in comps)
    a.compact("keep file names")
    assert records(a, "compaction")[-1]["status"] in ("compacted", "nothing")
    a.close()
    assert verify_file(a.session.path).ok


class _SummaryAware:
    """A scripted model that also writes compaction summaries when asked."""

    name = "scripted"

    def __init__(self, replies: list[dict[str, Any]]):
        from agentloop.testing import parse_replies  # the one scripted-model format

        self.replies = [r.reply for r in parse_replies(replies)]
        self.i = 0

    def complete(self, req: Any) -> Any:
        from agentloop.agent.context.compaction import COMPACT_PROMPT
        from agentloop.events import ModelReply, Usage

        if not req.tools and str(req.messages[0]["content"]).startswith(COMPACT_PROMPT):
            return ModelReply(text="Summary: read big.txt several times.", usage=Usage(50, 10))
        if self.i >= len(self.replies):
            return ModelReply(text="done", usage=Usage(10, 2))
        self.i += 1
        return self.replies[self.i - 1]


def test_the_agent_tool_runs_a_sub_agent_whose_transcript_the_session_points_to(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "what is in notes.txt?", "subagent_type": "Explore"}}], "usage": [100, 10]},
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [50, 5]},  # the child
        {"text": "notes.txt says hello notes", "usage": [60, 5]},  # the child's answer
        final("the sub-agent found it"),
    ]
    settings(proj, {"permissions": {"allow": ["Agent"]}})  # the child's own calls are still checked
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=1_000_000)
    res = a.ask("delegate")
    a.close()
    assert res.answer == "the sub-agent found it"
    (sub,) = records(a, "subagent")
    assert sub["answer"] == "notes.txt says hello notes" and sub["spent_micros"] > 0
    assert sub["transcript"].startswith(str(Path(a.session.dir) / a.session.id / "subagents"))
    assert verify_tree(a.session.path) == []
    assert res.spent_micros >= sub["spent_micros"]


def test_a_malformed_hook_is_skipped_with_one_warning_naming_the_file_and_the_rest_applies(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    # Claude Code settings: a bad entry is reported and skipped; the file's other entries load.
    marker = proj / "ran"
    settings(proj, {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "timeout": 5}]}],
                              "SessionStart": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([final()]))
    a.close()
    (w,) = [w for w in a.config_warnings if "hooks." in w]
    assert w.startswith(str(proj / ".agentloop" / "settings.json") + ": hooks.PreToolUse[0].hooks[0].command ")
    assert "command" in w and "skipped" in w and "\n" not in w
    assert marker.exists()


def test_a_sub_agents_calls_go_through_the_agents_pipeline_so_a_hooks_refusal_is_redacted(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    # One tool-call pipeline: a child's call is refused by the same PreToolUse hook
    # as the parent's, and what the hook said reaches the child's model only through the same redaction.
    import os

    token = "tok-9f8e7d6c5b4a3210"
    guard = hook_script(proj, "guard.sh", "cat >/dev/null\n"
                        'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
                        f'"permissionDecisionReason": "reading needs {token}"}}}}\'\n')
    settings(proj, {"permissions": {"allow": ["Agent", "Read"]},
                    "hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": guard}]}]}})
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "read notes.txt", "subagent_type": "Explore"}}], "usage": [100, 10]},
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [50, 5]},  # the child
        {"text": "the hook refused", "usage": [60, 5]},  # the child's answer
        final("the sub-agent could not read it"),
    ]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=1_000_000,
              env={**os.environ, "DEPLOY_TOKEN": token})
    a.ask("delegate")
    a.close()
    (sub,) = records(a, "subagent")
    (result,) = [r.payload for r in read_records(sub["transcript"]) if r.kind == "tool_result"]
    assert "a PreToolUse hook denied Read" in result["error"]
    assert token not in Path(sub["transcript"]).read_text()
    assert "[redacted: DEPLOY_TOKEN]" in result["error"]
