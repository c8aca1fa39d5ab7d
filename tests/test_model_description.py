"""The model seam: a model declares what the drivers need once (``ModelDescription``), and the first
version's model, a plain callable ``(messages, manifest) -> reply``, runs as it is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentloop import Budget, tool
from agentloop.budget import Price, dearest
from agentloop.events import ModelReply, ToolCall
from agentloop.model_description import ModelDescription, describe
from agentloop.run import arun, make_config, run
from agentloop.tools import Registry


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _first_version_model(seen: list[tuple[int, list[str]]]) -> Any:
    """A model in the first version's shape: any callable (messages, manifest) -> ModelReply."""

    def model(messages: list[dict[str, Any]], manifest: list[dict[str, Any]]) -> ModelReply:
        seen.append((len(messages), sorted(t["name"] for t in manifest)))
        if len(messages) == 1:
            return ModelReply(text="", tool_calls=(ToolCall("c1", "add", {"a": 2, "b": 40}),))
        return ModelReply(text=f"the sum is {messages[-1]['content'] if isinstance(messages[-1].get('content'), str) else 'known'}")

    return model


def test_a_plain_callable_of_messages_and_manifest_is_run_as_a_model() -> None:
    """The first version's README: a model is any callable (messages, manifest) -> ModelReply; agentloop.run() takes it as it is."""
    import agentloop

    seen: list[tuple[int, list[str]]] = []
    r = agentloop.run(_first_version_model(seen), [add], "add 2 and 40", Budget(max_steps=5))
    assert r.stop_reason == "no_tool_calls", r.error
    assert r.steps == 2
    assert seen[0] == (1, ["add"]), "the callable got the messages and the tools' manifest"
    assert seen[1][0] == 3, "the second call saw the tool call and its result"
    results = [m for m in r.messages if m.get("role") == "tool"]
    assert results and "42" in str(results[0].get("content"))


def test_a_plain_callable_runs_under_the_async_driver_too() -> None:
    seen: list[tuple[int, list[str]]] = []
    r = asyncio.run(arun(_first_version_model(seen), [add], "add 2 and 40", Budget(max_steps=5)))
    assert r.stop_reason == "no_tool_calls", r.error
    assert len(seen) == 2


def test_a_plain_callable_is_recorded_by_its_function_name() -> None:
    def my_model(messages: Any, manifest: Any) -> ModelReply:
        return ModelReply(text="done")

    from agentloop.model_description import as_model

    cfg = make_config(as_model(my_model), Registry(), Budget(max_steps=1))
    assert cfg.model == "my_model"


class _Declared:
    def __init__(self, description: ModelDescription):
        self.description = description

    def complete(self, request: Any) -> ModelReply:
        return ModelReply(text="ok")


def test_the_config_is_built_from_the_declared_description_alone() -> None:
    primary = ModelDescription("claude-opus-4-6", "anthropic", max_continuations=3, max_image_tokens=2_000, counts_tokens=True)
    d = primary.then(ModelDescription("gpt-4o-mini", "openai", max_image_tokens=48_169))
    cfg = make_config(_Declared(d), Registry(), Budget(max_steps=1))
    assert cfg.model == "claude-opus-4-6"
    assert cfg.max_continuations == 3
    assert list(cfg.fallback_prices) == ["gpt-4o-mini"]
    assert cfg.image_tokens == 48_169, "an image is bounded at the dearest model of the chain"
    assert cfg.can_count is False, "a chain with a fallback does not count exactly"
    alone = make_config(_Declared(primary), Registry(), Budget(max_steps=1))
    # a count is a hint, never a bound (docs/budget.md): a new run never reserves from one
    assert alone.can_count is False and alone.image_tokens == 2_000 and alone.fallback_prices == {}


def test_a_model_that_declares_nothing_gets_the_defaults() -> None:
    class Bare:
        name = "bare-model"

        def complete(self, request: Any) -> ModelReply:
            return ModelReply(text="ok")

        max_continuations = 5  # not declared in a description: not read

    d = describe(Bare())
    assert d == ModelDescription("bare-model")
    assert make_config(Bare(), Registry(), Budget(max_steps=1)).max_continuations == 0


def test_a_fallbacks_own_chain_follows_it_flattened() -> None:
    c = ModelDescription("c")
    b = ModelDescription("b").then(c)
    a = ModelDescription("a").then(b)
    assert [m.name for m in a.chain] == ["a", "b", "c"]
    assert all(not m.fallbacks for m in a.fallbacks)


def test_the_dearest_price_is_the_highest_of_each_field() -> None:
    p = dearest([Price(1, 10, 3, 0), Price(5, 2, 1, 7)])
    assert p == Price(5, 10, 3, 7)
    with pytest.raises(ValueError):
        dearest([])


def test_a_providers_model_declares_its_vendor_limits_and_fallback() -> None:
    from agentloop.providers import open_model

    m = open_model("anthropic:claude-opus-4-6", fallback="openai:gpt-4o-mini", env={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k2"})
    d = describe(m)
    assert (d.name, d.vendor, d.max_continuations, d.counts_tokens, d.max_image_tokens) == ("claude-opus-4-6", "anthropic", 2, True, 2_000)
    assert [(f.name, f.vendor, f.max_image_tokens) for f in d.fallbacks] == [("gpt-4o-mini", "openai", 48_169)]
    assert "k2" not in repr(d) and "k" not in [getattr(f, "api_key", None) for f in d.chain]


def test_scripted_is_one_provider_of_the_registry(tmp_path: Any) -> None:
    from agentloop.providers import PROVIDERS, OpenArgs, ProviderConfigError, open_spec

    assert set(PROVIDERS) == {"openai", "anthropic", "scripted", "openai-responses", "bedrock", "vertex"}
    f = tmp_path / "replies.json"
    f.write_text('[{"text": "hello there"}]')
    m = open_spec(f"scripted:{f}")
    r = run(m, [], "hi", Budget(max_steps=2))
    assert (r.stop_reason, r.answer) == ("no_tool_calls", "hello there")
    inline = open_spec("scripted", OpenArgs(script=[{"text": "inline"}]))
    assert run(inline, [], "hi", Budget(max_steps=2)).answer == "inline"
    with pytest.raises(ProviderConfigError, match=r"replies.json\[0\]\.text: must be a string"):
        f.write_text('[{"text": 3}]')
        open_spec(f"scripted:{f}")
    with pytest.raises(ProviderConfigError, match="unknown provider 'gemini'"):
        open_spec("gemini:pro")
