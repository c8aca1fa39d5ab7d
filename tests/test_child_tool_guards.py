"""Every guard the parent applies to a built-in tool holds for the same tool in a sub-agent.

The calls are made from the tool records (``agent/tools/catalog.py``), not from
a list of tools: each tool the registry makes that touches a path (its record's
``paths``) or writes files (``rule="edit"``) is sent at a denied folder and at
a protected one, once by the parent and once by a child; whatever the parent
refuses, the child must refuse. Claude Code's sub-agents page: a subagent's
tool calls go through the same permission system as the main conversation
(code.claude.com/docs/en/sub-agents), and its deny rules apply to every tool
that edits (Edit rules) or reads (Read rules) files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.subagents.agent_tool import AGENT
from agentloop.agent.toolbox import ToolSetup
from agentloop.agent.tools.catalog import RECORDS
from agentloop.agent.tools.record import ToolRecord
from agentloop.budget import usd
from agentloop.testing.fakeprovider import FakeProvider

SPEC = "anthropic:claude-sonnet-4-5"
RULES = (("deny", "Edit(secret/**)"), ("deny", "Read(secret/**)"))
GUARDED = [r for r in RECORDS if r.run is not None and (r.paths or r.rule == "edit")]
"""The registry's tools that a path guard applies to: from the records."""


def _value(prop: dict[str, Any]) -> Any:
    """A valid value of a schema property (the guard must refuse the call before it would run)."""
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "integer": 1, "boolean": False, "array": [], "object": {}}[prop.get("type", "string")]


def _calls(r: ToolRecord, target: str) -> list[dict[str, Any]]:
    """Calls of ``r`` that touch ``target``: one per path argument (the others at a harmless place); for an edit
    tool whose paths are inside its input (apply_patch), a patch adding ``target``."""
    props = r.schema["properties"]
    base = {k: _value(props[k]) for k in r.schema.get("required", []) if k not in r.paths}
    if not r.paths:
        return [{"name": r.name, "arguments": {"input": f"*** Begin Patch\n*** Add File: {target}\n+planted\n*** End Patch"}}]
    out = []
    for p in r.paths:
        args = dict(base, **{q: f"free/{r.name}.txt" for q in r.paths if q != p})
        args[p] = target if r.rule == "edit" else target.rsplit("/", 1)[0] if r.default_path else target
        out.append({"name": r.name, "arguments": args})
    return out


def _all_calls() -> list[dict[str, Any]]:
    calls = []
    for r in GUARDED:
        calls += _calls(r, f"secret/by-{r.name}.txt" if r.rule == "edit" else "secret/key.txt")
        if r.rule == "edit":
            calls += _calls(r, ".git/hooks/post-commit")
    return calls


def _repo(tmp_path: Path) -> Path:
    cwd = tmp_path / "proj"
    (cwd / "secret").mkdir(parents=True)
    (cwd / "free").mkdir()
    (cwd / "secret" / "key.txt").write_text("the parent's secret\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return cwd


def _results(tmp_path: Path, cwd: Path, calls: list[dict[str, Any]], *, child: str | None) -> list[dict[str, Any]]:
    """The results of ``calls`` made by the parent (``child`` None) or by a child started in its parent's folder
    (``none``), in a worktree (``worktree``) or in the background (``background``, in its parent's folder)."""
    if child == "background":
        # the parent asks again at once and is answered late, so its child's first call (made meanwhile) gets the
        # calls too; then both end, and the parent's turn waits for its child (as -p does) and ends after its report
        start = {"name": AGENT.name, "arguments": {"description": "work", "prompt": "work", "isolation": "none",
                                                   "run_in_background": True}}
        replies = [{"tool_calls": [start]}, {"tool_calls": calls, "latency": 3}, {"tool_calls": calls}, {"text": "done"},
                   {"text": "done"}, {"text": "parent done"}]
    elif child is not None:
        start = {"name": AGENT.name, "arguments": {"description": "work", "prompt": "work", "isolation": child}}
        replies = [{"tool_calls": [start]}, {"tool_calls": calls}, {"text": "child done"}, {"text": "parent done"}]
    else:
        replies = [{"tool_calls": calls}, {"text": "parent done"}]
    with FakeProvider({"replies": replies, "when_done": "repeat"}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / f"home-{child}"), model=SPEC, base_url=fp.url,
                  env={"PATH": "/usr/bin:/bin"}, permission_mode="bypassPermissions", max_usd_micros=usd("3"),
                  cli_rules=RULES)
        bg = a.context.backgrounds()
        if bg is not None:
            bg.wait_at_end = True
        try:
            a.ask("go")
        finally:
            a.close("prompt_input_exit")
        asked = [r["body"] for r in fp.requests if r["protocol"]]
    first = "work" if child is not None else "go"
    mine = [b for b in asked if _first_user_text(b) == first and _tool_results(b)]
    if child == "background":
        return _tool_results(mine[0])
    return _tool_results(mine[0]) if child is None else _tool_results(asked[2])


def _first_user_text(body: dict[str, Any]) -> str:
    content = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("type") == "text")


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]["content"]
    return [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(last, list) else []


def test_the_guarded_tools_are_found_in_the_records() -> None:
    """The enumeration reaches the tools it must (a record losing its paths or its edit kind would shrink it)."""
    names = {r.name for r in GUARDED}
    assert {"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "LS", "apply_patch"} <= names


@pytest.mark.parametrize("child_in", ["none", "worktree", "background"])
def test_a_child_refuses_every_call_its_parent_refuses(tmp_path: Path, child_in: str) -> None:
    """In its parent's folder, in a worktree (the parent's rules re-rooted there; its changes merged home) and in
    the background (a thread of its own, started by the same factory)."""
    cwd = _repo(tmp_path)
    calls = _all_calls()
    parent = _results(tmp_path, cwd, calls, child=None)
    child = _results(tmp_path, cwd, calls, child=child_in)
    assert len(parent) == len(child) == len(calls)
    for call, p, c in zip(calls, parent, child, strict=True):
        assert p.get("is_error"), ("the parent must refuse", call, p)  # the test's own footing
        assert c.get("is_error"), ("the child did not refuse what the parent refused", call, c)
        assert "the parent's secret" not in str(c["content"])
    assert sorted(x.name for x in (cwd / "secret").iterdir()) == ["key.txt"]
    assert not (cwd / ".git" / "hooks" / "post-commit").exists()


SHARED = ("policy", "sandbox", "env", "redact", "processes", "background", "spill_dir", "shell_timeout_s",
          "shell_max_timeout_s", "add_dirs", "on_write")


def test_a_childs_setup_keeps_every_guard_of_the_parents_but_what_its_folder_changes(tmp_path: Path) -> None:
    """``for_child`` changes the folder, the rules' root (given), the sandbox's writable roots and the session link;
    in the parent's folder the rest is the parent's own, so a guard added to ``ToolSetup`` reaches children."""
    cwd = _repo(tmp_path)
    script = tmp_path / "script.json"
    script.write_text("[]")
    a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=f"scripted:{script}", env={"PATH": "/usr/bin:/bin"},
              cli_rules=RULES)
    try:
        parent: ToolSetup = a.toolbox.setup
        kid = parent.for_child(str(cwd), a.policy)
        for field in SHARED:
            assert getattr(kid, field) == getattr(parent, field), field
        assert kid.session is None and parent.session is not None
        elsewhere = tmp_path / "wt"
        elsewhere.mkdir()
        away = parent.for_child(str(elsewhere), a.policy.rooted_at(str(cwd), str(elsewhere)))
        assert away.on_write is None  # a worktree's changes are recorded when they come home
        assert away.sandbox is not parent.sandbox and away.sandbox.denied_programs == parent.sandbox.denied_programs
        assert [b.rule.text for b in away.policy.rules] == [b.rule.text for b in parent.policy.rules]
    finally:
        a.close()
