"""A bare model name in front matter (``model: gpt-4.1``) in a session on another provider is that provider's model.

Claude Code's slash commands page, "Frontmatter": ``model`` is a "specific model string"; sub-agents page,
"Supported frontmatter fields": ``model`` takes an alias or "a full model ID". A file written for a session on an
OpenAI-compatible provider names that provider's model by its bare name; Claude Code's aliases (``sonnet``) and
``claude-*`` names keep meaning Anthropic's (https://code.claude.com/docs/en/sub-agents#choose-a-model).
"""

from __future__ import annotations

from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.agent.trust import resolve_model

ENV = {"OPENAI_API_KEY": "sk-test-not-used", "PATH": "/usr/bin:/bin"}


def test_a_bare_name_is_the_session_providers_and_aliases_stay_anthropics() -> None:
    assert resolve_model("gpt-4.1", env={}, provider="openai") == "openai:gpt-4.1"
    assert resolve_model("sonnet", env={}, provider="openai").startswith("anthropic:")
    assert resolve_model("claude-haiku-4-5", env={}, provider="openai") == "anthropic:claude-haiku-4-5"
    assert resolve_model("gpt-4.1", env={}, provider="scripted") == "gpt-4.1"  # a file, not a name
    assert resolve_model("openai:gpt-4o-mini", env={}, provider="anthropic") == "openai:gpt-4o-mini"


def test_a_commands_and_an_agents_bare_model_open_on_the_sessions_provider(proj: Path) -> None:
    (proj / ".claude" / "agents").mkdir(parents=True)
    (proj / ".claude" / "agents" / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews\nmodel: gpt-4.1\n---\nReview.\n")
    a = Agent(cwd=str(proj), model="openai:gpt-4o", env=ENV, base_url="http://127.0.0.1:9/v1", trust=True)
    try:
        assert a.context.subagents.types["reviewer"].model == "openai:gpt-4.1"
        saved = a.models.for_turn(("gpt-4.1", "/review"), lambda why: None)
        assert saved is not None and a.models.model_spec == "openai:gpt-4.1"
        a.models.restore(saved, lambda why: None)
        assert a.models.model_spec == "openai:gpt-4o"
    finally:
        a.close()
