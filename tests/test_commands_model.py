"""A command's or skill's front matter ``model`` is the model of the turn it starts, and only of that turn.

Claude Code's documentation: slash commands, "Frontmatter" (``model``: the model the command runs
on, inherited from the conversation when absent), and skills, "Frontmatter reference" (``model``:
the model used while the skill is active, the conversation's by default). Against the local fake
provider over real HTTP: the request of each turn names the model that answered it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records


def _models(fp: FakeProvider) -> list[str]:
    return [str(r["body"].get("model")) for r in fp.requests if r["protocol"]]


@pytest.fixture()
def proj(proj: Path) -> Path:
    c = proj / ".claude" / "commands"
    c.mkdir(parents=True)
    (c / "quick.md").write_text("---\ndescription: A quick look\nmodel: haiku\n---\nLook at $ARGUMENTS quickly.\n")
    (c / "same.md").write_text("---\nmodel: inherit\n---\nGo on.\n")
    (c / "broken.md").write_text("---\nmodel: scripted:/no/such/replies.json\n---\nNever sent.\n")
    sk = proj / ".claude" / "skills" / "deep"
    sk.mkdir(parents=True)
    (sk / "SKILL.md").write_text("---\nname: deep\ndescription: Think hard\nmodel: claude-opus-4-6\n---\nThink it through.\n")
    return proj


def _turn(a: Agent, text: str) -> Any:
    got = a.expand_command(text)
    return a.ask(got[0], allowed_tools=got[1]) if got is not None else a.ask(text)


def test_the_turn_a_command_starts_runs_on_its_model_and_the_next_goes_back(proj: Path, tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": f"answer {i}"} for i in range(5)]}) as fp:
        a = Agent(cwd=str(proj), home=str(tmp_path / "home"), trust=True, model="anthropic:claude-sonnet-4-6", base_url=fp.url,
                  env={"ANTHROPIC_API_KEY": "k"}, permission_mode="bypassPermissions")
        try:
            assert not [w for w in a.load_warnings if "'model' of the command" in w]
            for text in ("/quick the diff", "and now?", "/deep", "/same", "last"):
                assert _turn(a, text).stop_reason == "no_tool_calls"
                assert a.model_spec == "anthropic:claude-sonnet-4-6", "after each turn the session's model is back"
            path = a.session.path
        finally:
            a.close("prompt_input_exit")
        models = _models(fp)
    assert models == ["claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-6", "claude-sonnet-4-6", "claude-sonnet-4-6"]
    changes = [r.payload for r in read_records(path) if r.kind == "model_change"]
    assert [(c["model"], c["why"]) for c in changes] == [
        ("anthropic:claude-haiku-4-5", "front matter of the command /quick, for this turn"),
        ("anthropic:claude-sonnet-4-6", "the command's turn ended"),
        ("anthropic:claude-opus-4-6", "front matter of the skill /deep, for this turn"),
        ("anthropic:claude-sonnet-4-6", "the command's turn ended"),
    ]


def test_a_command_whose_model_cannot_be_opened_sends_nothing_and_the_session_goes_on(proj: Path, tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": "fine"}]}) as fp:
        a = Agent(cwd=str(proj), home=str(tmp_path / "home"), trust=True, model="anthropic:claude-sonnet-4-6", base_url=fp.url,
                  env={"ANTHROPIC_API_KEY": "k"}, permission_mode="bypassPermissions")
        try:
            with pytest.raises(AgentError, match=r"the command /broken: model 'scripted:/no/such/replies.json': .*cannot read"):
                _turn(a, "/broken")
            assert a.model_spec == "anthropic:claude-sonnet-4-6"
            assert _turn(a, "hello").answer == "fine"
        finally:
            a.close("prompt_input_exit")
        assert _models(fp) == ["claude-sonnet-4-6"]
