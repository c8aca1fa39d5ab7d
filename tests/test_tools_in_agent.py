"""The new built-in tools through the real agent on the scripted model: permissions by tool
name, hooks by tool name, plan mode, the spend cap, replay of the session.

Claude Code's references: permission rules name a tool ("Tool names are the exact strings you
use in permission rules", tools reference), hook matchers match tool names (hooks reference,
"matcher"), and plan mode ends through ExitPlanMode (tools reference: "Prompts the user to exit
plan mode and start coding").
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.replay import replay
from agentloop.transcript import read_records

TODOS = [{"content": "Write the file", "status": "in_progress", "activeForm": "Writing the file"}]
PATCH = "*** Begin Patch\n*** Add File: made.txt\n+made by a patch\n*** End Patch"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": name, "arguments": arguments}], "usage": [100, 10]}


def final(text: str = "done") -> dict[str, Any]:
    return {"text": text, "usage": [100, 5]}


def results(a: Agent) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]


def settings(proj: Path, body: dict[str, Any]) -> None:
    (proj / ".agentloop").mkdir(exist_ok=True)
    (proj / ".agentloop" / "settings.json").write_text(json.dumps(body))


def test_new_tools_run_in_the_agent_and_the_session_replays_byte_for_byte(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / "nb.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": "1",
                                                          "outputs": [], "execution_count": None}],
                                               "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    settings(proj, {"permissions": {"allow": ["NotebookEdit", "apply_patch"]}})
    replies = [call("TodoWrite", todos=TODOS), call("Read", file_path="nb.ipynb"),
               call("NotebookEdit", notebook_path="nb.ipynb", cell_id="a", new_source="2"),
               call("apply_patch", input=PATCH), final()]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies))
    a.ask("go")
    assert a.session_link.todos == TODOS
    a.close("done")
    got = results(a)
    assert [r["ok"] for r in got] == [True] * 4, got
    assert json.loads((proj / "nb.ipynb").read_text())["cells"][0]["source"] == ["2"]
    assert (proj / "made.txt").read_text() == "made by a patch\n"
    assert replay(a.session.path).equal


def test_rules_by_tool_name_deny_the_new_tools(proj: Path, scripted: Callable[..., str]) -> None:
    settings(proj, {"permissions": {"deny": ["TodoWrite", "apply_patch"], "allow": ["Edit"]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("TodoWrite", todos=TODOS), call("apply_patch", input=PATCH), final()]))
    assert "TodoWrite" not in a.shown_tools().names() and "apply_patch" not in a.shown_tools().names()
    a.ask("go")
    a.close("done")
    assert [r["ok"] for r in results(a)] == [False, False]
    assert not (proj / "made.txt").exists() and a.session_link.todos == []


def test_apply_patch_cannot_write_what_an_edit_deny_rule_or_the_protected_paths_cover(proj: Path, scripted: Callable[..., str]) -> None:
    settings(proj, {"permissions": {"allow": ["apply_patch"], "deny": ["Edit(secret/**)"]}})
    to_secret = "*** Begin Patch\n*** Add File: secret/x.txt\n+x\n*** End Patch"
    to_hooks = "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch"
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("apply_patch", input=to_secret), call("apply_patch", input=to_hooks), final()]))
    a.ask("go")
    a.close("done")
    first, second = results(a)
    assert not first["ok"] and "Edit(secret/**)" in first["error"]
    assert not second["ok"] and "protected path" in second["error"]
    assert not (proj / "secret").exists() and not (proj / ".git").exists()


def test_a_hook_matching_a_new_tools_name_blocks_it(proj: Path, scripted: Callable[..., str]) -> None:
    hook = proj / "block.sh"
    hook.write_text("#!/bin/sh\necho 'todo lists are off here' >&2\nexit 2\n")
    hook.chmod(0o755)
    settings(proj, {"hooks": {"PreToolUse": [{"matcher": "TodoWrite", "hooks": [{"type": "command", "command": str(hook)}]}]}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("TodoWrite", todos=TODOS), final()]))
    a.ask("go")
    a.close("done")
    (r,) = results(a)
    assert not r["ok"] and "todo lists are off here" in r["error"] and a.session_link.todos == []


def test_plan_mode_lets_the_session_tools_run_and_exit_plan_mode_ends_it_when_approved(proj: Path, scripted: Callable[..., str]) -> None:
    replies = [call("Write", file_path="x.txt", content="x"), call("TodoWrite", todos=TODOS),
               call("ExitPlanMode", plan="1. write x.txt"), call("Write", file_path="x.txt", content="x"), final()]
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), permission_mode="plan",
              env={**os.environ}, ask_permission=lambda call, decision: "yes")
    asked: list[str] = []

    def elicit(source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        asked.append(message)
        return {"approve": True}

    a.elicit = elicit
    a.ask("plan it, then do it")
    a.close("done")
    write1, todo, exit_plan, write2 = results(a)
    assert not write1["ok"] and "plan mode" in write1["error"]
    assert todo["ok"] and exit_plan["ok"] and "Plan mode is off" in exit_plan["content"]
    assert asked == ["The plan:\n1. write x.txt"] and a.policy.mode == "default"
    assert write2["ok"] and (proj / "x.txt").read_text() == "x"


def test_in_print_mode_exit_plan_mode_keeps_plan_mode(proj: Path, scripted: Callable[..., str]) -> None:
    a = Agent(cwd=str(proj), trust=True, model=scripted([call("ExitPlanMode", plan="1. do"), final("the plan: 1. do")]),
              permission_mode="plan")
    a.ask("plan")
    a.close("done")
    (r,) = results(a)
    assert not r["ok"] and "plan mode stays on" in r["error"] and a.policy.mode == "plan"


def test_the_spend_cap_holds_with_the_new_tools(proj: Path, scripted: Callable[..., str]) -> None:
    replies = [call("TodoWrite", todos=TODOS)] * 50 + [final()]
    cap = 120_000  # micro-USD: a few turns of the scripted model's price (the system prompt and tool schemas included)
    a = Agent(cwd=str(proj), trust=True, model=scripted(replies), max_usd_micros=cap)
    r = a.ask("go")
    a.close("done")
    assert r.stop_reason != "no_tool_calls" and 0 < len(results(a)) < 50
    assert a.stats.spent_micros <= cap


def test_each_model_is_offered_the_edit_format_its_record_names_and_told_of_it(proj: Path) -> None:
    """Codex's models (the GPT-5 family) are trained on apply_patch: they get it as their one edit tool and the
    system prompt names it; Claude's get Edit; a model whose provider does not say gets both, as before.
    WebSearch is not offered where the provider has no server-side search (its own description says so)."""
    keys = {**os.environ, "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    shown, prompt = {}, {}
    for spec in ("anthropic:claude-sonnet-4-5", "openai:gpt-5", "openai:gpt-5.4-mini", "openai:gpt-4o"):
        a = Agent(cwd=str(proj), trust=True, model=spec, env=keys)
        shown[spec] = a.shown_tools().names()
        prompt[spec] = a.system_messages()[0]["content"]
        a.close("done")
    assert "apply_patch" not in shown["anthropic:claude-sonnet-4-5"] and "Edit" in shown["anthropic:claude-sonnet-4-5"]
    for spec in ("openai:gpt-5", "openai:gpt-5.4-mini"):
        assert "apply_patch" in shown[spec] and "Edit" not in shown[spec]
        assert "apply_patch to change" in prompt[spec] and "Edit or Write" not in prompt[spec]
    assert {"apply_patch", "Edit"} <= set(shown["openai:gpt-4o"])
    assert prompt["openai:gpt-4o"] == prompt["anthropic:claude-sonnet-4-5"]  # the same bytes as before
    assert "WebSearch" in shown["anthropic:claude-sonnet-4-5"]
    assert not any("WebSearch" in shown[s] for s in shown if s.startswith("openai:"))


def test_the_repl_draws_the_task_list_whole(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    import subprocess
    import sys

    todos = [*TODOS, {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(tmp_path / "home"), NO_COLOR="1")
    agentloop = os.path.join(os.path.dirname(sys.executable), "agentloop")
    p = subprocess.run([agentloop, "--model", scripted([call("TodoWrite", todos=todos), final()])], input="plan it\n",
                       cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "⎿ [>] Write the file" in p.stdout and "⎿ [ ] Run the tests" in p.stdout
