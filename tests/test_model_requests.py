"""What a model is sent follows its model record, wherever it is served.

OpenAI's reasoning models (o1, o3, o4-mini, the GPT-5 family) refuse ``max_tokens`` ("Use
'max_completion_tokens' instead") on api.openai.com, on Azure OpenAI and on gateways that pass the request
through; the other models keep ``max_tokens``, which local servers (Ollama, vLLM, llama.cpp) know. Run
against the local fake provider (a host that is not OpenAI's) and on an Azure-shaped base URL.
"""

from __future__ import annotations

import pytest

from agentloop.budget import Budget
from agentloop.events import ModelRequest
from agentloop.providers import open_model
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider


@pytest.mark.parametrize(("model", "field"), [("gpt-5", "max_completion_tokens"), ("gpt-5-mini", "max_completion_tokens"),
                                              ("o3", "max_completion_tokens"), ("o4-mini", "max_completion_tokens"),
                                              ("o1", "max_completion_tokens"), ("gpt-4o-mini", "max_tokens")])
def test_the_token_field_follows_the_model_at_any_base_url(model: str, field: str) -> None:
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        m = open_model(f"openai:{model}", base_url=fp.url + "/v1", env={})
        run(m, [], "hi", Budget(max_steps=2, max_usd_micros=1_000_000), max_output_tokens=500)
        body = fp.requests[0]["body"]
    other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
    assert body[field] == 500 and other not in body


def test_azure_and_a_routers_spelling_get_the_reasoning_models_field() -> None:
    req = ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[], max_output_tokens=100)
    azure = open_model("openai:gpt-5", base_url="https://team.openai.azure.com/openai/v1", env={"OPENAI_API_KEY": "k"})
    routed = open_model("openai:openai/o3-mini", base_url="https://gateway.example/v1", env={"OPENAI_API_KEY": "k"})
    assert "max_completion_tokens" in azure.body(req, 100) and "max_completion_tokens" in routed.body(req, 100)
    # an explicit option still wins over the record
    local = open_model("openai:gpt-5", base_url="http://localhost:11434/v1", env={}, max_tokens_field="max_tokens")
    assert "max_tokens" in local.body(req, 100)


def test_reasoning_effort_goes_only_to_the_models_whose_record_takes_it() -> None:
    from agentloop.agent.model_options import resolve_options

    assert resolve_options("openai:gpt-5").effort == "medium" and resolve_options("openai:gpt-4o").effort is None
    assert resolve_options("anthropic:claude-sonnet-4-6").effort is None
    assert resolve_options("anthropic:claude-sonnet-4-6").thinking_budget is not None
    assert resolve_options("openai:gpt-5").thinking_budget is None
