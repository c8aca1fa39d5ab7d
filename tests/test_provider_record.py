"""Each provider is declared once, by its record, and everything else reads the record."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.providers import (
    PROVIDERS,
    OpenArgs,
    ProviderConfigError,
    ProviderRecord,
    cheap_spec,
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
    with pytest.raises(ProviderConfigError, match=r"unknown provider 'gemini' in settings: known providers are anthropic, openai, scripted, openai-responses, bedrock, vertex"):
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
    code = "import sys, agentloop.providers; print([m for m in ('httpx', 'asyncio') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


SRC = Path(__file__).resolve().parent.parent / "src" / "agentloop"
ALLOWED = {
    "testing/fakeprovider.py": "the fake server is the vendors' side of the wire: it answers each protocol in its vendor's own words",
}
MODEL_NAMED = {
    "prices.py": "the scripted model's price, under the name the model gives itself (the core imports no provider)",
    "agent/context/compaction.py": "the scripted model family's context window, by the name the model gives itself",
    "testing/__init__.py": "FunctionModel's default name: the scripted family's, so it is priced and windowed as one",
}
"""Modules that write ``"scripted"`` as a model's name (not to choose a provider), each with why."""
"""Modules outside providers/ that may name a vendor, each with why."""


def _vendor_literals(path: Path, names: tuple[str, ...]) -> list[str]:
    pattern = re.compile(rf"^(?:{'|'.join(map(re.escape, names))})(?:$|[:/.])")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and pattern.match(n.value.strip().lower())]


def test_no_module_outside_providers_names_a_vendor() -> None:
    """A provider is declared once: code outside providers/ reads its record, never ``"openai"`` or ``"anthropic:..."``."""
    names = tuple(r.name for r in records() if r.adapter is not None)
    everyone = tuple(r.name for r in records())
    found = [hit for p in sorted(SRC.rglob("*.py")) if "providers" not in p.relative_to(SRC).parts[:1]
             and str(p.relative_to(SRC)) not in ALLOWED
             for hit in _vendor_literals(p, names if p.relative_to(SRC).as_posix() in MODEL_NAMED else everyone)]
    assert found == [], "\n".join(found)


def test_the_vendor_literal_check_finds_one(tmp_path: Path) -> None:
    """The check above has teeth: a module holding ``"anthropic:claude-haiku-4-5"`` is caught."""
    f = tmp_path / "leaky.py"
    f.write_text('CHEAP = {"anthropic": "anthropic:claude-haiku-4-5", "x": "openai/gpt-4o", "y": "an openai model"}\n'
                 'def w(p): return f"anthropic.{p}" in m or f"scripted:{p}"\n')
    assert len(_vendor_literals(f, ("openai", "anthropic"))) == 4
    assert len(_vendor_literals(f, ("scripted",))) == 1


def test_every_providers_key_variables_are_kept_from_children() -> None:
    from agentloop.config.credentials import provider_key_vars

    for r in records():
        held = set(r.key_env) | set(r.token_env) | ({r.headers_env} if r.headers_env else set())
        assert held <= provider_key_vars(), r.name  # registered by the registry as it loads the record


def test_a_new_providers_key_is_kept_from_children_by_its_record_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a provider touches no list of keys: the registry tells ``config.credentials`` each record's key
    variables, and a child never gets one, even when ``allowedEnvVars`` names it (the key that pays for the model
    is never a tool's)."""
    from agentloop.config import credentials

    monkeypatch.setattr(credentials, "_REGISTERED", set())
    environ = {"ACME_API_KEY": "acme-key-0123456789", "ACME_ORG": "o", "PATH": "/bin"}
    assert "ACME_API_KEY" in credentials.child_environment(environ, allowed=["ACME_API_KEY"])  # not yet known
    credentials.register_provider_keys(["ACME_API_KEY", ""])
    got = credentials.child_environment(environ, allowed=["ACME_API_KEY"])
    assert "ACME_API_KEY" not in got and got["ACME_ORG"] == "o"


def test_a_routers_spelling_of_each_providers_model_finds_its_price() -> None:
    from agentloop.prices import default_prices

    table = default_prices()
    for r in records():
        if r.price_prefix and r.cheap_model:
            found = cheap_spec(f"{r.name}:x", {})
            assert found is not None
            name = found.partition(":")[2]
            assert table.key(r.price_prefix + name) == table.key(name) is not None, r.name


def test_the_registry_lists_each_provider_on_one_line_and_imports_no_provider_module() -> None:
    """Adding a provider touches its module, its test and one line of ``DECLARED`` (DEVELOPING.md, "Adding a
    provider"): the registry imports no provider's module beside its line."""
    import agentloop.providers as providers

    text = (SRC / "providers" / "__init__.py").read_text(encoding="utf-8")
    lines = [ln.strip().rstrip(",").strip('"') for ln in text.splitlines() if ln.strip().startswith('"agentloop.providers.')]
    assert lines == list(providers.DECLARED) and len(set(lines)) == len(PROVIDERS)
    modules = {d.partition(":")[0].rpartition(".")[2] for d in providers.DECLARED}
    top = [n for n in ast.parse(text).body if isinstance(n, ast.ImportFrom) and n.level == 1]  # what runs at import
    imported = {a.name for n in top for a in n.names} | {n.module for n in top if n.module}
    assert not imported & modules, imported & modules
    with pytest.raises(TypeError, match="is not a ProviderRecord"):
        providers._load("agentloop.providers.record:ProviderRecord")
