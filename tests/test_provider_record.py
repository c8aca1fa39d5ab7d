"""Each provider is declared once, by its record, and everything else reads the record."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentloop.providers import (
    PROVIDERS,
    OpenArgs,
    ProviderConfigError,
    ProviderRecord,
    open_model,
    open_spec,
    record_for,
    records,
)


def test_every_registered_provider_has_a_complete_record() -> None:
    for r in records():
        assert isinstance(r, ProviderRecord) and PROVIDERS[r.name] is r
        assert r.telemetry_name, r.name
        if r.adapter is not None and r.endpoint is None:  # a provider over HTTP says where it lives, where its key is, and what to do without one
            assert r.default_base and r.key_env and r.base_env and r.no_key, r.name
        if r.endpoint is not None:  # a cloud platform: its own variables say where, its credential chain with what
            assert r.base_env and r.no_key and r.selected_by, r.name
        if r.adapter is not None:
            assert r.default_model and r.cheap_model, r.name


def test_an_unknown_provider_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ProviderConfigError, match=r"unknown provider 'gemini' in settings: known providers are openai, anthropic, scripted, bedrock, vertex"):
        record_for("gemini:pro", where="settings")
    with pytest.raises(ProviderConfigError, match="unknown provider 'gemini'"):
        open_spec("gemini:pro", OpenArgs(env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}))
    with pytest.raises(ProviderConfigError, match="unknown provider 'gemini'"):
        open_model("gemini:pro", env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})


def test_a_provider_without_its_own_key_gets_its_own_no_key_message() -> None:
    for r in records():
        if r.adapter is None:
            continue
        with pytest.raises(ProviderConfigError) as exc:
            open_model(f"{r.name}:some-model", env={})
        assert str(exc.value) == r.no_key


def test_a_family_decides_what_its_models_are_sent() -> None:
    openai = record_for("openai")
    assert openai.token_field_for("gpt-5-mini") == "max_completion_tokens"
    assert openai.token_field_for("o3-pro") == "max_completion_tokens"
    assert openai.token_field_for("gpt-4o") == "max_tokens"
    assert openai.default_effort("gpt-5") == "medium" and openai.default_effort("gpt-4o") is None
    anthropic = record_for("anthropic")
    assert anthropic.thinks("claude-sonnet-4-6") and not anthropic.thinks("claude-3-5-haiku")
    assert anthropic.default_effort("claude-sonnet-4-6") is None and not openai.thinks("gpt-5")


def test_the_registry_loads_no_http_client() -> None:
    """Every provider's module is imported with the registry: a scripted run must still load no HTTP client."""
    code = "import sys, agentloop.providers; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
