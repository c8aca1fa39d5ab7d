"""A Bash call may ask to run outside the sandbox (``dangerouslyDisableSandbox``), and a person or an allow rule decides.

Claude Code's sandboxing guide ("Security limitations", the escape hatch) and
settings reference ("Sandbox settings", ``allowUnsandboxedCommands``: "Allow
commands to run outside the sandbox via the dangerouslyDisableSandbox
parameter ... Default: true"): such a call goes through the normal permission
flow. agentloop asks even in ``bypassPermissions`` (only an allow rule of the
user's approves without a person), so in ``-p`` it is refused unless a rule
names the command.

agentloop is stricter than the normal flow: only an ``UnsandboxedBash`` allow
rule of the user's, or a person's answer to a question that says the command
runs OUTSIDE the sandbox, approves it. A plain ``Bash`` rule (``--allowedTools
Bash``), the mode, a PreToolUse hook's ``allow`` and a PermissionRequest hook's
``allow`` do not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import read_records

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.fixture
def where(tmp_path: Path, private_homes: dict[str, Path]) -> dict[str, Path]:
    proj = tmp_path / "proj"
    proj.mkdir()
    ssh = private_homes["user"] / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("SSH-PRIVATE-KEY-planted\n")
    return {"proj": proj, "tmp": tmp_path, "user": private_homes["user"]}


def _call(command: str, **extra: Any) -> dict[str, Any]:
    return {"command": command, "dangerouslyDisableSandbox": True, **extra}


def _run(where: dict[str, Path], command: str, *, mode: str = "bypassPermissions", ask: Any = None,
         rules: tuple[tuple[str, str], ...] = ()) -> tuple[dict[str, Any], Agent]:
    model = ScriptedModel([reply("", [("Bash", _call(command))]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, permission_mode=mode, ask_permission=ask, cli_rules=rules)
    try:
        res = a.ask("go")
    finally:
        a.close()
    return [m for m in res.messages if m.get("role") == "tool"][0], a


def _tool_calls(a: Agent) -> str:
    """The tool calls of the session's model_turn records (the request as the model made it), as JSON text."""
    return json.dumps([c for r in read_records(a.session.path) if r.kind == "model_turn"
                       for c in r.payload["reply"]["tool_calls"]])


def test_in_bypass_mode_without_a_person_or_a_rule_an_unsandboxed_call_is_refused(where: dict[str, Path]) -> None:
    msg, a = _run(where, "cat ~/.ssh/id_ed25519")
    assert msg["ok"] is False and "was not run" in msg["content"] and "UnsandboxedBash(" in msg["content"]
    assert "SSH-PRIVATE-KEY-planted" not in msg["content"]
    assert '"dangerouslyDisableSandbox": true' in _tool_calls(a)  # the request is on the record


def test_an_unsandboxed_allow_rule_naming_the_command_runs_it_outside_the_sandbox(where: dict[str, Path]) -> None:
    msg, a = _run(where, "cat ~/.ssh/id_ed25519", mode="default", rules=(("allow", "UnsandboxedBash(cat:*)"),))
    assert msg["ok"] is True and "SSH-PRIVATE-KEY-planted" in msg["content"]  # hidden inside the sandbox
    assert '"dangerouslyDisableSandbox": true' in _tool_calls(a)


def test_a_repository_the_user_wants_in_the_workspace_is_made_outside_the_sandbox_by_their_rule(
        where: dict[str, Path]) -> None:
    """The sandbox refuses to make a repository in the workspace (record 0025); the README's way to make one on
    purpose is the user's own rule for that command outside it. Sandboxed, ``git init`` makes nothing there."""
    model = ScriptedModel([reply("", [("Bash", {"command": "git init -q inside"})]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, permission_mode="bypassPermissions")
    try:
        a.ask("go")
    finally:
        a.close()
    assert not (where["proj"] / "inside" / ".git").exists()
    msg, _a = _run(where, "git init -q outside", mode="default", rules=(("allow", "UnsandboxedBash(git init:*)"),))
    assert msg["ok"] is True and (where["proj"] / "outside" / ".git" / "HEAD").is_file(), msg


@pytest.mark.parametrize("rule", ["Bash", "Bash(cat:*)", "UnsandboxedBash(ls:*)"])
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_a_plain_bash_rule_or_the_mode_never_approves_a_run_outside(where: dict[str, Path], rule: str, mode: str) -> None:
    msg, _ = _run(where, "cat ~/.ssh/id_ed25519", mode=mode, rules=(("allow", rule),))
    assert msg["ok"] is False and "SSH-PRIVATE-KEY-planted" not in msg["content"]
    assert "UnsandboxedBash(cat ~/.ssh/id_ed25519)" in msg["content"]  # the refusal says how to allow it


def test_a_deny_rule_beats_an_unsandboxed_allow_rule(where: dict[str, Path]) -> None:
    msg, _ = _run(where, "cat ~/.ssh/id_ed25519", mode="default",
                  rules=(("allow", "UnsandboxedBash"), ("deny", "Bash(cat:*)")))
    assert msg["ok"] is False and "SSH-PRIVATE-KEY-planted" not in msg["content"]


def test_a_projects_settings_cannot_allow_a_run_outside(where: dict[str, Path]) -> None:
    (where["proj"] / ".claude").mkdir()
    (where["proj"] / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["UnsandboxedBash"]}}))
    model = ScriptedModel([reply("", [("Bash", _call("cat ~/.ssh/id_ed25519"))]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, trust=True)
    try:
        msg = [m for m in a.ask("go").messages if m.get("role") == "tool"][0]
    finally:
        a.close()
    assert msg["ok"] is False and "SSH-PRIVATE-KEY-planted" not in msg["content"]


def test_the_question_says_outside_the_sandbox_whatever_the_decision_was(where: dict[str, Path]) -> None:
    """In default mode a ``touch`` asks anyway: the question still says where it would run."""
    asked: list[str] = []
    for mode in ("default", "bypassPermissions"):
        _run(where, "touch x", mode=mode, ask=lambda c, d: asked.append(d.reason) or "deny")
    assert len(asked) == 2 and all("OUTSIDE the sandbox" in r for r in asked), asked


def test_always_remembers_exactly_that_line_for_outside_runs(where: dict[str, Path]) -> None:
    asked: list[str] = []
    model = ScriptedModel([reply("", [("Bash", _call("cat ~/.ssh/id_ed25519"))]), reply("", [("Bash", _call("cat ~/.ssh/id_ed25519"))]),
                           reply("", [("Bash", _call("cat ~/.ssh/id_ed25519 ~/.ssh/id_ed25519"))]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, ask_permission=lambda c, d: asked.append(c.arguments["command"]) or (
        "always" if len(asked) == 1 else "deny"))
    try:
        tools = [m for m in a.ask("go").messages if m.get("role") == "tool"]
    finally:
        a.close()
    assert [t["ok"] for t in tools] == [True, True, False]
    assert asked == ["cat ~/.ssh/id_ed25519", "cat ~/.ssh/id_ed25519 ~/.ssh/id_ed25519"]


ALLOW_HOOK = """#!/bin/sh
cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "%s", %s}}'
"""


@pytest.mark.parametrize("event,decision", [
    ("PreToolUse", '"permissionDecision": "allow"'),
    ("PermissionRequest", '"decision": {"behavior": "allow"}'),
])
def test_a_hooks_allow_never_approves_a_run_outside(where: dict[str, Path], event: str, decision: str) -> None:
    """Hooks reference: PreToolUse ``allow`` skips the prompt and PermissionRequest ``allow`` answers it; for a
    command outside the sandbox neither is enough: in ``-p`` it is refused, in the REPL a person is still asked."""
    hook = where["tmp"] / "allow.sh"
    hook.write_text(ALLOW_HOOK % (event, decision))
    hook.chmod(0o755)
    home = Path(os.environ["AGENTLOOP_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"hooks": {event: [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}))
    msg, _ = _run(where, "cat ~/.ssh/id_ed25519", mode="default")
    assert msg["ok"] is False and "SSH-PRIVATE-KEY-planted" not in msg["content"]
    asked: list[str] = []
    msg, _ = _run(where, "cat ~/.ssh/id_ed25519", mode="default", ask=lambda c, d: asked.append(d.reason) or "deny")
    assert msg["ok"] is False and len(asked) == 1 and "OUTSIDE the sandbox" in asked[0]


def test_a_person_is_asked_and_decides(where: dict[str, Path]) -> None:
    asked: list[str] = []

    def ask(call: Any, decision: Any) -> str:
        asked.append(decision.reason)
        return "deny" if len(asked) == 1 else "allow"

    refused, _ = _run(where, "cat ~/.ssh/id_ed25519", ask=ask)
    assert refused["ok"] is False and "refused" in refused["content"]
    allowed, _ = _run(where, "cat ~/.ssh/id_ed25519", ask=ask)
    assert "SSH-PRIVATE-KEY-planted" in allowed["content"]
    assert len(asked) == 2 and all("dangerouslyDisableSandbox" in r for r in asked)


def test_the_same_command_without_the_argument_stays_inside_and_asks_no_one(where: dict[str, Path]) -> None:
    model = ScriptedModel([reply("", [("Bash", {"command": "cat ~/.ssh/id_ed25519; echo end"})]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert "end" in out and "SSH-PRIVATE-KEY-planted" not in out


def test_allow_unsandboxed_commands_false_ignores_the_argument(where: dict[str, Path]) -> None:
    home = Path(os.environ["AGENTLOOP_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"sandbox": {"allowUnsandboxedCommands": False}}))
    asked: list[str] = []
    msg, _ = _run(where, "cat ~/.ssh/id_ed25519; echo end", ask=lambda c, d: asked.append("x") or "allow")
    assert "end" in msg["content"] and "SSH-PRIVATE-KEY-planted" not in msg["content"]
    assert asked == []  # nothing to approve: it ran inside


def _print_mode(where: dict[str, Path], *extra: str) -> subprocess.CompletedProcess[str]:
    marker = where["tmp"] / "outside-marker.txt"
    script = where["tmp"] / "script.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": _call(f"touch {marker}")}]}, {"text": "done"},
    ]))
    return subprocess.run([AGENTLOOP, "-p", "go", "--model", f"scripted:{script}", *extra], cwd=where["proj"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_in_print_mode_it_is_refused_without_an_unsandboxed_rule_and_runs_with_one(where: dict[str, Path]) -> None:
    marker = where["tmp"] / "outside-marker.txt"
    for extra in (("--permission-mode", "bypassPermissions"), ("--allowedTools", "Bash"), ("--allowedTools", "Bash(touch:*)")):
        p = _print_mode(where, *extra)
        assert p.returncode == 0, p.stderr
        assert not marker.exists(), extra  # refused (and the sandbox's /tmp is its own)
        assert "outside the sandbox" in p.stderr and "--allowedTools 'UnsandboxedBash(touch " in p.stderr, p.stderr
    p = _print_mode(where, "--allowedTools", "UnsandboxedBash(touch:*)")
    assert p.returncode == 0, p.stderr
    assert marker.exists()


def test_the_repl_question_says_the_command_runs_outside_the_sandbox(where: dict[str, Path], tmp_path: Path) -> None:
    """The REPL's permission question, in a real pty: it names the sandbox, and "n" refuses."""
    sys.path.insert(0, os.path.dirname(__file__))
    from _pty import Term, env_for
    from agentloop.testing.fakeprovider import FakeProvider

    marker = where["tmp"] / "outside-marker.txt"
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": _call(f"touch {marker}")}]}, {"text": "Not run."}]
    with FakeProvider({"replies": replies}) as fp:
        env = env_for(str(tmp_path / "home"))
        t = Term(["--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1"], cwd=str(where["proj"]), env=env)
        try:
            t.wait_for(r"(?m)^>\s*$")
            m = t.mark()
            t.type("touch the marker")
            t.wait_for(r"\[y\]es", after=m)
            question = " ".join(t.lines()[m:])
            assert "OUTSIDE the sandbox" in question, question
            t.type("n")
            t.wait_for(r"tell the model what to do instead", after=m)
            t.type("/exit")
            assert t.wait_exit() == (0, None)
        finally:
            t.kill()
    assert not marker.exists()


def test_an_editor_over_acp_is_asked_a_question_that_says_outside_the_sandbox(where: dict[str, Path]) -> None:
    """ACP's ``session/request_permission``: the tool call's title says the command runs outside; a reject refuses it."""
    import asyncio

    acp = pytest.importorskip("acp")
    from acp.schema import AllowedOutcome, ClientCapabilities, RequestPermissionResponse

    marker = where["tmp"] / "outside-marker.txt"
    script = where["tmp"] / "acp.json"
    script.write_text(json.dumps([{"text": "", "tool_calls": [{"name": "Bash", "arguments": _call(f"touch {marker}")}]},
                                  {"text": "Not run."}]))
    titles: list[str] = []

    class Client:
        async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
            titles.append(str(tool_call.title))
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="deny"))

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            pass

        def on_connect(self, conn: Any) -> None:
            pass

    async def session() -> None:
        async with acp.spawn_agent_process(Client(), sys.executable, "-m", "agentloop.cli.main", "acp", "--model", f"scripted:{script}",
                                           "--permission-mode", "bypassPermissions", cwd=where["proj"], env=dict(os.environ)) as (conn, _p):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            sid = (await conn.new_session(cwd=str(where["proj"]))).session_id
            await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[acp.text_block("touch it")]), 60)

    asyncio.run(session())
    assert len(titles) == 1 and "runs OUTSIDE the sandbox" in titles[0], titles
    assert not marker.exists()


def _answered_with(where: dict[str, Path], answers: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """A plain sandboxed Bash call that asks (default mode); each question gets the next of ``answers``."""
    from agentloop.agent.protocols import PermissionReply

    asked: list[str] = []

    def ask(call: Any, decision: Any) -> Any:
        asked.append(decision.reason)
        got = answers[len(asked) - 1]
        return PermissionReply("allow", "", got) if isinstance(got, dict) else got

    model = ScriptedModel([reply("", [("Bash", {"command": "touch made; rm made"})]), reply("done")])
    a = Agent(cwd=str(where["proj"]), model=model, permission_mode="default", ask_permission=ask)
    try:
        res = a.ask("go")
    finally:
        a.close()
    return [m for m in res.messages if m.get("role") == "tool"][0], asked


def test_an_answer_that_adds_the_argument_is_asked_again_in_words_that_say_outside(where: dict[str, Path]) -> None:
    """Agent SDK ``canUseTool`` may allow with ``updatedInput``; the question it answered said nothing of running
    outside the sandbox, so arguments that would (``dangerouslyDisableSandbox`` added) are asked about again, in
    a question that says so, and a no keeps the command from running at all."""
    outside = _call("cat ~/.ssh/id_ed25519")
    msg, asked = _answered_with(where, [outside, "deny"])
    assert msg["ok"] is False and "SSH-PRIVATE-KEY-planted" not in str(msg["content"]), msg
    assert len(asked) == 2 and "OUTSIDE the sandbox" not in asked[0] and "OUTSIDE the sandbox" in asked[1], asked


def test_negative_control_an_answer_that_keeps_the_command_inside_is_not_asked_again(where: dict[str, Path]) -> None:
    msg, asked = _answered_with(where, [{"command": "cat ~/.ssh/id_ed25519; echo inside"}])
    assert "inside" in str(msg["content"]) and "SSH-PRIVATE-KEY-planted" not in str(msg["content"]), msg
    assert len(asked) == 1, asked
