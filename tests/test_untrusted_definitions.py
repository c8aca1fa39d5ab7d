"""An untrusted folder's sub-agent, command and skill files are text until the folder is trusted.

Claude Code's sub-agent files (``.claude/agents/*.md``) may name a ``model``
and ``tools`` in their front matter; a folder nobody trusted yet must not
spend on a dearer model through one. And whatever sits where such a file
should be (a symlink to ``/dev/zero``, a FIFO) gives one line and start-up
goes on, in bounded time and memory.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.agent.subagents.agent_types import load_agent_types

OPUS_AGENT = "---\nname: dear\ndescription: uses the dear model\nmodel: opus\n---\nYou are a sub-agent. Answer briefly.\n"


def test_an_untrusted_folders_agent_file_does_not_choose_the_model(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / ".claude" / "agents").mkdir(parents=True)
    (proj / ".claude" / "agents" / "dear.md").write_text(OPUS_AGENT)
    warnings: list[str] = []
    untrusted = load_agent_types(str(proj), str(tmp_path / "al"), str(tmp_path / "home"), warnings, trusted=False)
    assert untrusted["dear"].model is None and untrusted["dear"].prompt.startswith("You are a sub-agent")
    assert any("names the model 'opus'; not used until you trust this folder" in w for w in warnings)
    assert load_agent_types(str(proj), str(tmp_path / "al"), str(tmp_path / "home"), trusted=True)["dear"].model == "opus"


def test_a_sub_agent_of_an_untrusted_folder_runs_on_the_parents_model(proj: Path, scripted: Callable[..., str]) -> None:
    """The child answers from the parent's scripted model; opening ``opus`` would have failed for want of a key."""
    (proj / ".claude" / "agents").mkdir(parents=True)
    (proj / ".claude" / "agents" / "dear.md").write_text(OPUS_AGENT)
    replies = [
        {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "d", "prompt": "say hi", "subagent_type": "dear"}}],
         "usage": [100, 10]},
        {"text": "CHILD-ON-THE-PARENTS-MODEL", "usage": [50, 5]},
        {"text": "done", "usage": [50, 5]},
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    a = Agent(cwd=str(proj), model=scripted(replies), permission_mode="bypassPermissions", env=env, max_usd_micros=1_000_000)
    try:
        assert not a.trust.trusted and "sub-agent dear model: opus" in (a.trust.notice() or "")
        res = a.ask("delegate")
    finally:
        a.close()
    tool_out = [m["content"] for m in res.messages if m.get("role") == "tool"]
    assert any("CHILD-ON-THE-PARENTS-MODEL" in str(t) for t in tool_out), tool_out


def test_devices_and_fifos_among_a_folders_definitions_give_one_line_each(proj: Path, scripted: Callable[..., str]) -> None:
    claude = proj / ".claude"
    for d in ("agents", "commands", "skills/s"):
        (claude / d).mkdir(parents=True)
    os.symlink("/dev/zero", claude / "agents" / "zero.md")
    os.mkfifo(claude / "agents" / "pipe.md")
    os.symlink("/dev/zero", claude / "commands" / "zero.md")
    os.mkfifo(claude / "commands" / "pipe.md")
    os.symlink("/dev/zero", claude / "skills" / "s" / "SKILL.md")
    (claude / "commands" / "fine.md").write_text("a fine command\n")
    t0 = time.monotonic()
    a = Agent(cwd=str(proj), model=scripted([{"text": "ok", "usage": [1, 1]}]))
    try:
        a.ask("hi")  # the Agent tool (and its types) is built on the first turn
        warnings = list(a.load_warnings)
        assert "fine" in a.commands and "zero" not in a.commands and "pipe" not in a.commands
    finally:
        a.close()
    assert time.monotonic() - t0 < 30
    joined = "\n".join(warnings)
    for name in ("agents/zero.md", "agents/pipe.md", "commands/zero.md", "commands/pipe.md"):
        assert name in joined, (name, warnings)
    assert all("\n" not in w for w in warnings)


def test_an_agents_folder_that_links_to_the_root_is_walked_within_bounds(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    os.symlink("/", proj / ".claude" / "agents")
    warnings: list[str] = []
    t0 = time.monotonic()
    load_agent_types(str(proj), str(tmp_path / "al"), None, warnings)
    assert time.monotonic() - t0 < 30
    assert json.dumps(warnings)  # said, if it stopped early; never a hang or MemoryError


def test_an_untrusted_folders_command_and_skill_do_not_choose_the_model(proj: Path, tmp_path: Path) -> None:
    """Claude Code's slash commands and skills may name a ``model`` for the turn they start; from a folder nobody
    trusted that would spend on a dearer model, so the turn stays on the session's model; trusted, it switches."""
    from agentloop.testing.fakeprovider import FakeProvider

    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "x.md").write_text("---\nmodel: opus\nallowed-tools: Bash\n---\nLook at it.\n")
    (proj / ".claude" / "skills" / "deep").mkdir(parents=True)
    (proj / ".claude" / "skills" / "deep" / "SKILL.md").write_text("---\nname: deep\ndescription: d\nmodel: opus\n---\nThink.\n")
    seen: dict[bool, list[str]] = {}
    for trusted in (False, True):
        with FakeProvider({"replies": [{"text": "ok"}, {"text": "ok"}]}) as fp:
            a = Agent(cwd=str(proj), home=str(tmp_path / "home"), trust=trusted, model="anthropic:claude-sonnet-4-6",
                      base_url=fp.url, env={"ANTHROPIC_API_KEY": "k"})
            try:
                if not trusted:
                    notice = a.trust.notice() or ""
                    assert "command /x model: opus" in notice and "skill /deep model: opus" in notice, notice
                    assert any("'x' names the model 'opus'; not used until you trust" in w for w in a.load_warnings)
                    assert a.commands["x"].allowed_tools == ()
                for text in ("/x", "/deep"):
                    prompt, rules = a.expand_command(text) or (text, ())
                    a.ask(prompt, allowed_tools=rules)
            finally:
                a.close()
            seen[trusted] = [str(r["body"].get("model")) for r in fp.requests if r["protocol"]]
    assert seen[False] == ["claude-sonnet-4-6", "claude-sonnet-4-6"]
    assert all("opus" in m for m in seen[True]), seen[True]


DEAR_SKILL = "---\nname: dev\ndescription: a skill in development\nmodel: opus\nallowed-tools: Bash(*)\n---\nDo it.\n"


def test_a_users_skill_linked_into_an_untrusted_folder_is_that_folders(proj: Path, private_homes: dict[str, Path],
                                                                       scripted: Callable[..., str]) -> None:
    """Skills reference: a skill's ``model`` and ``allowed-tools`` apply while it is active. A user who develops a
    skill in a project and links it from ``~/.claude/skills`` has the file inside the workspace, where the model's
    commands can rewrite it: its model and tools follow the folder's trust, as the folder's own skills do (its
    front matter hooks already did), and the folder's trust question names it."""
    (proj / "skilldev").mkdir()
    (proj / "skilldev" / "SKILL.md").write_text(DEAR_SKILL)
    (proj / "cmds").mkdir()
    (proj / "cmds" / "ship.md").write_text("---\nmodel: opus\nallowed-tools: Bash(*)\n---\nShip it.\n")
    user_claude = private_homes["user"] / ".claude"
    (user_claude / "skills").mkdir(parents=True)
    (user_claude / "commands").mkdir()
    os.symlink(proj / "skilldev", user_claude / "skills" / "dev")
    os.symlink(proj / "cmds" / "ship.md", user_claude / "commands" / "ship.md")
    a = Agent(cwd=str(proj), model=scripted([{"text": "ok", "usage": [1, 1]}]))
    try:
        assert not a.trust.trusted
        assert a.skills["dev"].model is None and a.skills["dev"].allowed_tools == ()
        assert a.commands["ship"].model is None and a.commands["ship"].allowed_tools == ()
        assert "skill /dev model: opus" in (a.trust.notice() or "")
    finally:
        a.close()


def test_negative_control_a_users_own_skill_keeps_its_model_in_an_untrusted_folder(
        proj: Path, private_homes: dict[str, Path], scripted: Callable[..., str]) -> None:
    (private_homes["user"] / ".claude" / "skills" / "dev").mkdir(parents=True)
    (private_homes["user"] / ".claude" / "skills" / "dev" / "SKILL.md").write_text(DEAR_SKILL)
    (proj / ".claude" / "commands").mkdir(parents=True)
    (proj / ".claude" / "commands" / "x.md").write_text("---\nmodel: opus\n---\nx\n")  # a folder to trust
    a = Agent(cwd=str(proj), model=scripted([{"text": "ok", "usage": [1, 1]}]))
    try:
        assert not a.trust.trusted
        assert a.skills["dev"].model == "opus" and a.skills["dev"].allowed_tools == ("Bash(*)",)
    finally:
        a.close()


def test_a_users_agent_file_linked_into_an_untrusted_folder_does_not_choose_the_model(
        tmp_path: Path, private_homes: dict[str, Path]) -> None:
    proj = tmp_path / "proj"
    (proj / "agents-dev").mkdir(parents=True)
    (proj / "agents-dev" / "dear.md").write_text(OPUS_AGENT)
    mine = private_homes["user"] / ".claude" / "agents"
    mine.mkdir(parents=True)
    os.symlink(proj / "agents-dev" / "dear.md", mine / "dear.md")
    (mine / "own.md").write_text(OPUS_AGENT.replace("name: dear", "name: own"))
    warnings: list[str] = []
    types = load_agent_types(str(proj), str(tmp_path / "al"), str(private_homes["user"]), warnings, trusted=False)
    assert types["dear"].model is None, warnings
    assert types["own"].model == "opus"  # the user's own file, in the user's own place
    assert load_agent_types(str(proj), str(tmp_path / "al"), str(private_homes["user"]), trusted=True)["dear"].model == "opus"
