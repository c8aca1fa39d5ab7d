"""The Agent: one user turn through the loop, with permissions, memory and a session."""

from __future__ import annotations

import json
import logging
import os

import pytest

from agentloop.agent.agent import (
    Agent,
    AgentError,
    NoContext,
    NoHooks,
    PromptDecision,
    scripted_model,
)
from agentloop.agent.session.store import Session, list_sessions
from agentloop.events import TextDelta, ToolFinished, ToolResult, ToolStarted
from agentloop.testing import FunctionModel
from agentloop.transcript import read_records, verify_file


@pytest.fixture()
def proj(proj):  # type: ignore[no-untyped-def]
    """The shared project folder (conftest.py) with one small file."""
    (proj / "notes.txt").write_text("hello notes\n")
    return proj


def kinds(path):  # type: ignore[no-untyped-def]
    return [r.kind for r in read_records(path)]


def test_a_turn_runs_tools_streams_text_and_records_session_facts(tmp_path, proj, scripted):
    spec = scripted([
        {"text": "Reading it.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}], "usage": [100, 10]},
        {"text": "It says hello notes.", "usage": [200, 5]},
    ])
    (proj / "AGENTS.md").write_text("Always answer in English.\n")
    a = Agent(cwd=str(proj), model=spec)
    seen = []
    res = a.ask("what is in notes.txt?", observer=seen.append)
    assert res.stop_reason == "no_tool_calls" and res.answer == "It says hello notes."
    text = "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert text == "Reading it.It says hello notes."
    started = [e.call.name for e in seen if isinstance(e, ToolStarted)]
    finished = [e.result for e in seen if isinstance(e, ToolFinished)]
    assert started == ["Read"] and finished[0].ok and "hello notes" in finished[0].content
    # the system prompt: the static part (the cache boundary), then the dynamic part with the memory files
    assert a.session.messages[0].get("cache_boundary") is True and "Always answer" not in a.session.messages[0]["content"]
    assert "Always answer in English." in a.session.messages[1]["content"]
    a.close("prompt_input_exit")
    recs = list(read_records(a.session.path))
    assert [r.kind for r in recs][0] == "session_start"
    start = recs[0].payload
    assert start["memory_files"] == [os.path.realpath(proj / "AGENTS.md")] and start["source"] == "startup"
    cost = [r.payload for r in recs if r.kind == "session_cost"][-1]
    assert cost["spent_micros"] == res.spent_micros > 0
    assert cost["tools"] == {"Read": {"ok": 1, "failed": 0}}
    assert cost["usage"]["input_tokens"] == 300 and cost["usage"]["output_tokens"] == 15
    assert recs[-1].kind == "session_end" and recs[-1].payload["reason"] == "prompt_input_exit"
    assert verify_file(a.session.path).ok


def test_ask_without_a_terminal_means_deny_and_the_model_is_told(tmp_path, proj, scripted):
    spec = scripted([
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "x.txt", "content": "x"}}]},
        {"text": "could not"},
    ])
    a = Agent(cwd=str(proj), model=spec)
    res = a.ask("write x")
    assert not (proj / "x.txt").exists()
    tool_msg = [m for m in res.messages if m["role"] == "tool"][0]
    assert tool_msg["ok"] is False and "not granted" in tool_msg["content"]
    a.close()


def test_ask_goes_to_the_callback_and_always_adds_a_session_rule(tmp_path, proj, scripted):
    calls = [{"name": "Write", "arguments": {"file_path": f"f{i}.txt", "content": "x"}} for i in range(3)]
    spec = scripted([{"text": "", "tool_calls": [c]} for c in calls] + [{"text": "done"}])
    answers = iter(["deny", "always"])
    asked = []

    def ask(call, decision):  # type: ignore[no-untyped-def]
        asked.append((call.arguments["file_path"], decision.behavior))
        return next(answers)

    a = Agent(cwd=str(proj), model=spec, ask_permission=ask)
    a.ask("write three")
    assert asked == [("f0.txt", "ask"), ("f1.txt", "ask")], "the third write was allowed by the session rule"
    assert not (proj / "f0.txt").exists() and (proj / "f1.txt").exists() and (proj / "f2.txt").exists()
    assert ("allow", "Write", "session") in a.policy.describe()
    a.close()


def test_deny_rules_from_settings_refuse_the_call_and_name_the_rule(tmp_path, proj, scripted):
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm *)"]}}))
    (proj / "keep.txt").write_text("k")
    spec = scripted([{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "ls && rm keep.txt"}}]}, {"text": "no"}])
    a = Agent(cwd=str(proj), model=spec, permission_mode="bypassPermissions", ask_permission=lambda c, d: "allow")
    res = a.ask("clean")
    msg = [m for m in res.messages if m["role"] == "tool"][0]
    assert (proj / "keep.txt").exists()
    assert msg["ok"] is False and "Bash(rm *)" in msg["content"]
    a.close()


def test_the_session_budget_spans_turns_and_stops_the_next_turn_before_the_call(tmp_path, proj, scripted):
    replies = [{"text": "a", "usage": [1000, 100]}, {"text": "b", "usage": [1000, 100]}]
    probe = Agent(cwd=str(proj), model=scripted(replies[:1], "probe.json"))
    probe.ask("one")
    probe.close()
    reserved = [r.payload["reserved_micros"] for r in read_records(probe.session.path) if r.kind == "budget"][0]
    # The scripted model costs 1 USD/Mtok in, 2 out: 1200 micro-USD a turn. With a cap of the
    # first reservation + 1000, the first turn fits and the second (same size) cannot.
    a = Agent(cwd=str(proj), model=scripted(replies), max_usd_micros=reserved + 1000)
    r1 = a.ask("one")
    assert r1.stop_reason == "no_tool_calls" and a.stats.spent_micros == 1200
    r2 = a.ask("two")
    assert r2.stop_reason == "cost_budget" and r2.steps == 0
    assert a.stats.spent_micros == 1200
    a.close()
    # Negative control: with room for both, both run.
    b = Agent(cwd=str(proj), model=scripted(replies, "b.json"), max_usd_micros=2 * reserved + 2400)
    assert [b.ask("one").stop_reason, b.ask("two").stop_reason] == ["no_tool_calls", "no_tool_calls"]
    b.close()


def test_warnings_fire_once_at_80_and_95_percent_of_budget_and_context(tmp_path, proj, scripted, home):
    # a small window, so believable usage fills it (a reply claiming more input than its request's byte bound is
    # not believed: it is billed its reservation as an overrun, docs/budget.md)
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text('{"contextWindow": 2000}')
    spec = scripted([{"text": "a", "usage": [1_600, 0]}, {"text": "b", "usage": [1_910, 0]}, {"text": "c", "usage": [1_910, 0]}])
    a = Agent(cwd=str(proj), model=spec)
    assert a.window == 2000
    a.context = NoContext()  # the installed context manager warns by itself (tested with it)
    a.ask("x")
    w = a.warnings()
    assert [(x.what, x.level) for x in w] == [("context window", 0.8)]
    a.ask("y")
    assert [(x.what, x.level) for x in a.warnings()] == [("context window", 0.95)]
    a.ask("z")
    assert a.warnings() == []
    a.close()


def test_budget_warnings(tmp_path, proj, scripted):
    a = Agent(cwd=str(proj), model=scripted([{"text": "a", "usage": [0, 0]}]), max_usd_micros=1000)
    a.session.stats.spent_micros = 850
    assert [(x.what, x.level) for x in a.warnings()] == [("budget", 0.8)]
    a.session.stats.spent_micros = 960
    assert [(x.what, x.level) for x in a.warnings()] == [("budget", 0.95)]
    a.close()


def test_hook_extension_points_are_called_in_order(tmp_path, proj, scripted):
    events = []

    class Recorder(NoHooks):
        def user_prompt_submit(self, agent, prompt):  # type: ignore[no-untyped-def]
            events.append(("prompt", prompt))
            return PromptDecision(prompt.upper())

        def pre_tool_use(self, agent, call):  # type: ignore[no-untyped-def]
            events.append(("pre", call.name))
            if call.arguments.get("file_path") == "secret":
                return ToolResult(call.id, call.name, False, error="blocked by hook")
            return call

        def post_tool_use(self, agent, call, result):  # type: ignore[no-untyped-def]
            events.append(("post", call.name, result.ok))
            return result

        def stop(self, agent, result):  # type: ignore[no-untyped-def]
            events.append(("stop", result.stop_reason))
            return None

        def session_end(self, agent, reason):  # type: ignore[no-untyped-def]
            events.append(("end", reason))

    spec = scripted([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "secret"}}, {"name": "Read", "arguments": {"file_path": "notes.txt"}}]},
        {"text": "ok"},
    ])
    a = Agent(cwd=str(proj), model=spec)
    a.hooks = Recorder()
    res = a.ask("hi")
    a.close("clear")
    assert res.messages[2]["content"] == "HI"  # after the two system messages
    assert events == [("prompt", "hi"), ("pre", "Read"), ("pre", "Read"), ("post", "Read", True), ("stop", "no_tool_calls"), ("end", "clear")]


def test_resume_and_continue_pick_up_the_conversation(tmp_path, proj, scripted):
    spec = scripted([{"text": "first answer", "usage": [10, 1]}, {"text": "second answer", "usage": [10, 1]}])
    a = Agent(cwd=str(proj), model=spec)
    a.ask("first")
    sid = a.session.id
    a.close()
    b = Agent(cwd=str(proj), model=spec.replace("script.json", "script.json"), continue_last=True)
    assert b.session.id == sid and not b.session.created
    assert [m["content"] for m in b.session.messages if m["role"] != "system"] == ["first", "first answer"]
    assert b.stats.turns == 1 and b.stats.spent_micros == a.stats.spent_micros
    b.close()
    recs = list(read_records(b.session.path))
    assert [r.payload["source"] for r in recs if r.kind == "session_start"] == ["startup", "resume"]


def test_a_session_where_nothing_was_asked_leaves_no_file(tmp_path, proj, scripted):
    a = Agent(cwd=str(proj), model=scripted([]))
    path = a.session.path
    a.close()
    assert not os.path.exists(path)
    assert list_sessions(str(proj)) == []


def test_user_mistakes_are_agent_errors_with_one_line(tmp_path, proj, scripted):
    with pytest.raises(AgentError, match="no model configured"):
        Agent(cwd=str(proj), env={"AGENTLOOP_HOME": str(tmp_path / "h")})
    with pytest.raises(AgentError, match="cannot read the scripted model"):
        Agent(cwd=str(proj), model="scripted:/nonexistent.json")
    with pytest.raises(AgentError, match="unknown permission mode"):
        Agent(cwd=str(proj), model=scripted([]), permission_mode="yolo")
    with pytest.raises(AgentError, match="needs a provider"):
        Agent(cwd=str(proj), model="gpt-4o")
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text("{ nope")
    with pytest.raises(AgentError, match=r"settings.json: not valid JSON at line 1"):
        Agent(cwd=str(proj), model=scripted([]))
    (proj / ".agentloop" / "settings.json").write_text("{}")
    a = Agent(cwd=str(proj), model=scripted([]), continue_last=True)  # Claude Code's -c with nothing to continue: a new one
    assert a.session.created
    a.close()


def test_the_scripted_model_fails_loudly_past_its_end(tmp_path, proj, scripted):
    a = Agent(cwd=str(proj), model=scripted([{"text": "only one"}]))
    assert a.ask("1").stop_reason == "no_tool_calls"
    r = a.ask("2")
    assert r.stop_reason == "model_error" and "has 1 replies" in (r.error or "")
    a.close()
    m = scripted_model(scripted([{"text": "x", "tool_calls": [{"name": "A", "arguments": {}}]}])[9:])
    assert m.name == "scripted"


def test_every_log_line_carries_the_session_id(tmp_path, proj, scripted):
    from agentloop.agent.agent import SessionLogFilter

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    h = Keep()
    h.addFilter(SessionLogFilter())
    lg = logging.getLogger("agentloop")
    lg.addHandler(h)
    old = lg.level
    lg.setLevel(logging.INFO)
    try:
        a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]))
        a.ask("go")
        logging.getLogger("agentloop.providers").info("from another module")
        a.close()
    finally:
        lg.removeHandler(h)
        lg.setLevel(old)
    assert records and all(getattr(r, "session_id", None) == a.session.id for r in records)


def test_a_resumed_session_held_by_another_agent_is_refused(tmp_path, proj, scripted):
    from agentloop.agent.session.store import SessionBusy

    a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]))
    a.ask("go")
    with pytest.raises(SessionBusy):
        Agent(cwd=str(proj), model=scripted([]), resume=a.session.id)
    a.close()
    assert isinstance(Session.resume(str(proj), a.session.id[:10]), Session)


def test_session_durability_comes_from_flags_or_settings(tmp_path, proj, scripted):
    a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]), durability="fsync")
    a.ask("go")
    assert a.session._writer is not None and a.session._writer.durability == "fsync"
    a.close()
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"sessionDurability": "sometimes"}))
    b = Agent(cwd=str(proj), model=scripted([]), trust=True)  # a bad value is skipped with a warning
    b.close()
    assert any('sessionDurability sometimes: must be "flush" or "fsync"; skipped' in w for w in b.config_warnings)


def test_a_bare_name_deny_rule_takes_the_tool_out_of_the_models_view_and_a_call_to_it_is_still_denied(tmp_path, proj, scripted):
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash", "Write(*.secret)"]}}))
    seen: list[list[str]] = []
    spec = scripted([{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "touch made.txt"}}]}, {"text": "no"}])
    a = Agent(cwd=str(proj), model=spec, permission_mode="bypassPermissions")
    inner = a.model
    a.model = FunctionModel(lambda req: (seen.append([t.name for t in req.tools]), inner.complete(req))[1])
    res = a.ask("try")
    a.close()
    assert seen and all("Bash" not in names and "Read" in names and "Write" in names for names in seen)
    start = [r.payload for r in read_records(a.session.path) if r.kind == "run_start"][0]
    assert "Bash" not in [t["name"] for t in start["config"]["tools"]]
    msg = [m for m in res.messages if m["role"] == "tool"][0]
    assert msg["ok"] is False and not (proj / "made.txt").exists()


def _calls(scripted, calls, name="calls.json"):  # type: ignore[no-untyped-def]
    return scripted([{"text": "", "tool_calls": [c]} for c in calls] + [{"text": "done"}], name)


def test_always_for_a_bash_line_approves_exactly_that_line_and_a_star_stays_a_star(tmp_path, proj, scripted):
    # approving "rm tmpd/*.tmp" once let "rm tmpd/../important.txt tmpd/x.tmp" run unasked
    (proj / "tmpd").mkdir()
    (proj / "tmpd" / "x.tmp").write_text("")
    (proj / "important.txt").write_text("keep")
    cmds = ["rm tmpd/*.tmp", "rm tmpd/../important.txt tmpd/x.tmp", "rm tmpd/*.tmp"]
    spec = _calls(scripted, [{"name": "Bash", "arguments": {"command": c}} for c in cmds])
    answers = iter(["always", "deny"])
    asked = []

    def ask(call, decision):  # type: ignore[no-untyped-def]
        asked.append(call.arguments["command"])
        return next(answers)

    a = Agent(cwd=str(proj), model=spec, ask_permission=ask)
    a.ask("clean up")
    assert asked == cmds[:2], "the second line differs from the approved one and must be asked about"
    assert (proj / "important.txt").read_text() == "keep"
    assert ("allow", "Bash(rm tmpd/*.tmp)", "session") in a.policy.describe()
    a.close()


def test_always_for_a_line_with_a_parenthesis_does_not_allow_every_later_command(tmp_path, proj, scripted):
    # before: a command holding ")" was remembered as the bare rule "Bash", allowing everything after
    cmds = ["(mkdir -p d)", "touch made.txt"]
    spec = _calls(scripted, [{"name": "Bash", "arguments": {"command": c}} for c in cmds])
    answers = iter(["always", "deny"])
    asked = []

    def ask(call, decision):  # type: ignore[no-untyped-def]
        asked.append(call.arguments["command"])
        return next(answers)

    a = Agent(cwd=str(proj), model=spec, ask_permission=ask)
    a.ask("go")
    assert asked == cmds and not (proj / "made.txt").exists()
    a.close()


def test_accept_edits_cannot_make_the_agent_permanent_without_asking(tmp_path, proj, scripted):
    # in acceptEdits the agent wrote .agentloop/settings.local.json and .git/hooks/post-checkout,
    # and the next plain session ran both. With no one to ask (as in -p) such writes are refused.
    (proj / ".git" / "hooks").mkdir(parents=True)
    writes = {
        ".agentloop/settings.local.json": '{"permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"}}',
        ".git/hooks/post-checkout": "#!/bin/sh\ntouch pwned\n",
        ".GIT/config": "[core]\n",
        ".mcp.json": '{"mcpServers": {}}',
        ".claude/settings.json": "{}",
        "notes2.txt": "fine",
    }
    spec = _calls(scripted, [{"name": "Write", "arguments": {"file_path": p, "content": c}} for p, c in writes.items()])
    a = Agent(cwd=str(proj), model=spec, permission_mode="acceptEdits")
    res = a.ask("persist yourself")
    for p in writes:
        assert (proj / p).exists() == (p == "notes2.txt"), p
    refused = [m["content"] for m in res.messages if m["role"] == "tool" and not m["ok"]]
    assert len(refused) == 5 and all("not granted" in r for r in refused)
    a.close()


def test_bypass_mode_asks_before_writing_the_agentloop_home(tmp_path, monkeypatch, scripted):
    proj = tmp_path / "proj"
    proj.mkdir()
    home = proj / "state"  # the agentloop home inside the workspace, so only the permission stands in the way
    monkeypatch.setenv("AGENTLOOP_HOME", str(home))
    spec = _calls(scripted, [{"name": "Write", "arguments": {"file_path": "state/settings.json", "content": "{}"}}])
    asked = []
    a = Agent(cwd=str(proj), model=spec, permission_mode="bypassPermissions",
              ask_permission=lambda c, d: asked.append(d.reason) or "deny")
    a.ask("widen")
    assert asked and "protected" in asked[0]
    assert not (home / "settings.json").exists()
    a.close()


def test_read_only_bash_runs_without_a_prompt_even_with_no_one_to_ask(tmp_path, proj, scripted):
    # Claude Code runs read-only commands (ls, cat, pwd, git status...) without a prompt
    cmds = ["ls && cat notes.txt | wc -l", "pwd", "ls > listing.txt"]
    spec = _calls(scripted, [{"name": "Bash", "arguments": {"command": c}} for c in cmds])
    a = Agent(cwd=str(proj), model=spec)  # no ask_permission: as in -p
    res = a.ask("look around")
    results = [m for m in res.messages if m["role"] == "tool"]
    assert [m["ok"] for m in results] == [True, True, False]
    assert "notes.txt" in results[0]["content"] and not (proj / "listing.txt").exists()
    a.close()
