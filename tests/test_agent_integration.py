"""Integration between the agent and its neighbours: prices from settings reach the provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agentloop.agent.agent import Agent
from agentloop.budget import Price
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.fixture()
def home(home):  # type: ignore[no-untyped-def]
    """The shared agentloop home (conftest.py), made, for tests that write its settings."""
    home.mkdir()
    return home


@pytest.fixture()
def proj(proj):  # type: ignore[no-untyped-def]
    """The shared project folder (conftest.py) with an empty .agentloop/."""
    (proj / ".agentloop").mkdir()
    return proj


def write(path, obj):  # type: ignore[no-untyped-def]
    path.write_text(json.dumps(obj))


# --- prices ------------------------------------------------------------------------


def test_prices_come_from_the_users_settings_and_never_from_the_project(tmp_path, home, proj, scripted):
    write(home / "settings.json", {"prices": {"user-model": {"input": 1_000_000, "output": 2_000_000}}})
    write(proj / ".agentloop" / "settings.json", {"prices": {"project-model": {"input": 0, "output": 0}}})
    for trust in (None, True):  # trusted or not, a project cannot make a model cheaper
        a = Agent(cwd=str(proj), model=scripted([{"text": "hi"}]), trust=trust)
        a.close()
        assert a.prices.resolve("user-model") == Price(1_000_000, 2_000_000)
        assert a.prices.resolve("project-model") != Price(0, 0)
        assert a.prices.resolve("claude-haiku-4-5-20251001") == Price(1_000_000, 5_000_000, 100_000, 1_250_000)
        assert any(w.startswith(f"{proj / '.agentloop' / 'settings.json'}: prices: a project cannot set prices") for w in a.config_warnings)


@pytest.mark.parametrize("bad", [{"m": 5}, {"m": {"input": 1}}, {"m": {"input": -1, "output": 2}}, ["m"]])
def test_a_bad_prices_entry_is_skipped_with_one_warning_naming_the_file(tmp_path, home, proj, bad, scripted):
    f = home / "settings.json"
    write(f, {"prices": bad if isinstance(bad, list) else {**bad, "good": {"input": 7, "output": 8}}})
    a = Agent(cwd=str(proj), model=scripted([{"text": "hi"}]))
    a.close()
    (w,) = a.config_warnings
    assert w.startswith(f"{f}: prices") and w.endswith("skipped") and "\n" not in w
    if not isinstance(bad, list):
        assert a.prices.resolve("good") == Price(7, 8)


def test_a_bad_prices_entry_is_one_warning_from_the_cli_and_the_run_goes_on(tmp_path, home, proj, scripted):
    f = home / "settings.json"
    write(f, {"prices": {"m": {"input": "lots", "output": 1}}})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(home)
    p = subprocess.run([AGENTLOOP, "-p", "x", "--model", scripted([{"text": "hi"}])], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == "hi\n"
    (line,) = [x for x in p.stderr.splitlines() if "warning" in x]
    assert str(f) in line and "prices.m" in line


def test_a_fallback_priced_dear_in_settings_is_reserved_for_and_keeps_the_full_allowance(tmp_path, home, proj):
    # Both names are unknown to the built-in table, so without the settings they cost the same (its highest).
    # The user prices the fallback's output at 4x the primary's (input the same): the loop reserves every call
    # at the dearest price of the chain (docs/budget.md), so the fallback may write the full max_tokens and
    # its bill still fits the reservation.
    write(home / "settings.json", {"prices": {
        "cheap-model": {"input": 1_000_000, "output": 1_000_000},
        "dear-model": {"input": 1_000_000, "output": 4_000_000},
    }})
    write(proj / ".agentloop" / "settings.json", {"maxSteps": 3})
    faults = [{"fault": "429", "retry_after": 0}] * 4
    with FakeProvider({"replies": [*faults, {"text": "from the fallback"}]}) as fp:
        a = Agent(cwd=str(proj), model="openai:cheap-model", fallback="openai:dear-model", base_url=fp.url + "/v1",
                  env={"AGENTLOOP_HOME": str(home)})
        assert a.model.fallback.price == Price(1_000_000, 4_000_000)
        res = a.ask("hello")
        sent = [r["body"] for r in fp.requests]
        path = a.session.path
        a.close("prompt_input_exit")
    assert res.answer == "from the fallback"
    assert [b["model"] for b in sent] == ["cheap-model"] * 4 + ["dear-model"]
    full, fb = sent[0]["max_tokens"], sent[-1]["max_tokens"]
    assert full > 1000 and fb == full
    budget = [r.payload for r in read_records(path) if r.kind == "budget"][0]
    assert budget["reserved_micros"] >= full * 4 and budget["cost_micros"] <= budget["reserved_micros"]


# --- context windows ---------------------------------------------------------------


@pytest.mark.parametrize(("model", "window"), [
    ("openai:gpt-5.4", 400_000),
    ("anthropic:claude-sonnet-4-6", 200_000),
    ("openai/gpt-4.1-mini", 1_047_576),
    ("gemini-2.5-pro", 1_048_576),
    ("scripted", 200_000),
    ("someone-elses-model", 128_000),
])
def test_the_agent_and_context_management_read_one_window_table(model, window):
    from agentloop.agent import agent as core
    from agentloop.agent.context import compaction as context

    assert core.context_window(model) == context.context_window(model) == window
    assert core.context_window(model, 4242) == 4242  # the "contextWindow" setting wins


def test_the_agents_window_follows_the_shared_table(tmp_path, home, proj, monkeypatch, scripted):
    from agentloop.agent.context import compaction as context

    monkeypatch.setattr(context, "_WINDOWS", (("scripted", 77_777),))
    a = Agent(cwd=str(proj), model=scripted([{"text": "hi"}]))
    assert a.window == 77_777


# --- the Agent tool's permission ---------------------------------------------------


def _policy(mode, rules=None):  # type: ignore[no-untyped-def]
    from agentloop.agent.permissions.rules import PermissionPolicy
    from agentloop.config.settings import SettingsSource

    src = [SettingsSource("/s.json", "project", {"permissions": rules})] if rules else []
    p = PermissionPolicy.from_settings(src, mode=mode, cwd="/")
    p.read_only_agent_types = frozenset({"Explore"})
    return p


GP = {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}
EXPLORE = {"description": "d", "prompt": "p", "subagent_type": "Explore"}


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk", "bypassPermissions"])
def test_starting_a_sub_agent_needs_no_permission(mode):
    assert _policy(mode).decide("Agent", GP).behavior == "allow"
    assert _policy(mode).decide("Agent", {"description": "d", "prompt": "p"}).behavior == "allow"
    assert _policy(mode).decide("Write", {"file_path": "/x", "content": ""}).behavior != "allow" or mode in ("acceptEdits", "bypassPermissions")


def test_deny_and_ask_rules_still_apply_to_the_agent_tool():
    assert _policy("default", {"deny": ["Agent"]}).decide("Agent", EXPLORE).behavior == "deny"
    assert _policy("bypassPermissions", {"deny": ["Agent(Explore)"]}).decide("Agent", EXPLORE).behavior == "deny"
    assert _policy("default", {"deny": ["Agent(Explore)"]}).decide("Agent", GP).behavior == "allow"
    assert _policy("default", {"ask": ["Agent(model:opus)"]}).decide("Agent", {**GP, "model": "opus"}).behavior == "ask"
    assert _policy("default", {"deny": ["Agent"]}).removed_tools(["Agent", "Read"]) == ["Agent"]


def test_plan_mode_starts_only_read_only_sub_agents():
    p = _policy("plan")
    assert p.decide("Agent", EXPLORE).behavior == "allow"
    assert p.decide("Agent", GP).behavior == "deny"
    assert p.decide("Agent", {**EXPLORE, "isolation": "worktree"}).behavior == "deny"
    assert p.decide("Agent", {**EXPLORE, "subagent_type": "NoSuchType"}).behavior == "deny"


def _delegate(scripted, kind, child_calls):  # type: ignore[no-untyped-def]
    return scripted([
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "d", "prompt": "go", "subagent_type": kind}}],
         "usage": [100, 10]},
        *[{"text": "", "tool_calls": [c], "usage": [50, 5]} for c in child_calls],
        {"text": "child done", "usage": [50, 5]},
        {"text": "parent done", "usage": [50, 5]},
    ])


def _records(a, kind):  # type: ignore[no-untyped-def]
    from agentloop.transcript import read_records

    return [r.payload for r in read_records(a.session.path) if r.kind == kind]


def _child_results(sub):  # type: ignore[no-untyped-def]
    from agentloop.transcript import read_records

    return [r.payload for r in read_records(sub["transcript"]) if r.kind == "tool_result"]


def test_the_agent_starts_a_sub_agent_without_asking_and_the_childs_calls_are_still_checked(tmp_path, home, proj, scripted):
    (proj / "notes.txt").write_text("hello\n")
    spec = _delegate(scripted, "general-purpose", [
        {"name": "Read", "arguments": {"file_path": "notes.txt"}},
        {"name": "Write", "arguments": {"file_path": "out.txt", "content": "x"}},
    ])
    a = Agent(cwd=str(proj), model=spec, max_usd_micros=1_000_000)  # default mode, no one to ask
    res = a.ask("delegate")
    a.close()
    assert res.answer == "parent done"
    (sub,) = _records(a, "subagent")
    assert sub["answer"] == "child done"
    read, write = _child_results(sub)
    assert read["ok"] and not write["ok"] and "not granted" in write["error"]
    assert not (proj / "out.txt").exists()


def test_plan_mode_starts_an_explore_sub_agent_and_refuses_a_general_one(tmp_path, home, proj, scripted):
    (proj / "notes.txt").write_text("hello\n")
    a = Agent(cwd=str(proj), model=_delegate(scripted, "Explore", [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]),
              permission_mode="plan", max_usd_micros=1_000_000)
    assert a.ask("look").answer == "parent done"
    (sub,) = _records(a, "subagent")
    assert sub["agent_type"] == "Explore" and _child_results(sub)[0]["ok"]
    a.close()
    b = Agent(cwd=str(proj), model=scripted([
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "d", "prompt": "go"}}], "usage": [100, 10]},
        {"text": "refused", "usage": [50, 5]},
    ]), permission_mode="plan")
    assert b.ask("change").answer == "refused"
    assert _records(b, "subagent") == []
    (r,) = [p for p in _records(b, "tool_result") if p["name"] == "Agent"]
    assert not r["ok"] and "plan mode" in r["error"]
    b.close()


# --- sub-agents and MCP tools -------------------------------------------------------


def test_a_sub_agent_gets_the_parents_mcp_tools_under_the_same_rules(tmp_path, home, proj, scripted):
    from mcp_servers.helpers import PY, PYSERVER, running

    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"py": {"command": PY, "args": [PYSERVER]}}}))
    write(proj / ".agentloop" / "settings.json", {"permissions": {"allow": ["mcp__py__*"], "deny": ["mcp__py__fail"]}})
    spec = _delegate(scripted, "general-purpose", [
        {"name": "mcp__py__echo", "arguments": {"text": "from the child"}},
        {"name": "mcp__py__fail", "arguments": {"message": "x"}},
    ])
    a = Agent(cwd=str(proj), model=spec, max_usd_micros=1_000_000, trust=True)
    try:
        assert a.ask("delegate").answer == "parent done"
    finally:
        a.close()
    assert not running(PYSERVER)
    (sub,) = _records(a, "subagent")
    echo, fail = _child_results(sub)
    assert echo["ok"] and "from the child" in json.dumps(echo["content"])
    assert not fail["ok"] and "mcp__py__fail" in fail["error"] and "denied" in fail["error"]
    from agentloop.transcript import read_records

    start = next(r.payload for r in read_records(sub["transcript"]) if r.kind == "run_start")
    names = {t["name"] for t in start["config"]["tools"]}
    assert {"mcp__py__echo", "mcp__py__add", "Read"} <= names and "Agent" not in names


def test_a_read_only_sub_agent_type_does_not_get_mcp_tools(tmp_path, home, proj, scripted):
    from mcp_servers.helpers import PY, PYSERVER

    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"py": {"command": PY, "args": [PYSERVER]}}}))
    spec = _delegate(scripted, "Explore", [{"name": "mcp__py__echo", "arguments": {"text": "x"}}])
    a = Agent(cwd=str(proj), model=spec, max_usd_micros=1_000_000)
    try:
        a.ask("look")
    finally:
        a.close()
    (sub,) = _records(a, "subagent")
    (r,) = _child_results(sub)
    assert not r["ok"] and "no tool named 'mcp__py__echo'" in r["error"], r["error"]
