"""A default model from what the environment offers, as Claude Code chooses one, said on the banner and on -p's stderr.

Claude Code's documented behaviour (code.claude.com/docs/en/model-config, "Setting your model"): the model is
set, highest first, by ``/model`` in the session, ``claude --model``, the ``ANTHROPIC_MODEL`` variable, then the
``model`` setting; with none of them it starts on its default model (a Sonnet). ``ANTHROPIC_MODEL`` takes an alias
or a full name; ``ANTHROPIC_DEFAULT_SONNET_MODEL`` / ``..._OPUS_...`` / ``..._HAIKU_...`` set the model each alias
names, and ``ANTHROPIC_SMALL_FAST_MODEL`` the small, fast model for background tasks (code.claude.com/docs/en/
env-vars). Run as real CLI runs against the local fake provider.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentloop.providers import cheap_spec, default_spec, env_model
from agentloop.testing.fakeprovider import FakeProvider

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


def _cli(args: list[str], cwd: Path, home: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_", "CLAUDE_"))}
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env={**base, "AGENTLOOP_HOME": str(home), "HOME": str(home.parent), **env},
                          capture_output=True, text=True, timeout=120)


def test_with_only_an_anthropic_key_a_print_run_works_on_the_default_sonnet(proj: Path, home: Path) -> None:
    with FakeProvider({"replies": [{"text": "hi back"}]}) as fp:
        p = _cli(["-p", "hi"], proj, home, {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": fp.url})
        assert p.returncode == 0 and "hi back" in p.stdout, p.stderr
        assert fp.requests[0]["body"]["model"] == "claude-sonnet-4-6"
    assert "model anthropic:claude-sonnet-4-6 (the anthropic provider's default, as ANTHROPIC_API_KEY is set)" in p.stderr


def test_anthropic_model_and_the_alias_variables_are_honoured(proj: Path, home: Path) -> None:
    with FakeProvider({"replies": [{"text": "a"}, {"text": "b"}]}) as fp:
        env = {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": fp.url}
        p = _cli(["-p", "hi"], proj, home, {**env, "ANTHROPIC_MODEL": "opus"})
        assert p.returncode == 0 and "(ANTHROPIC_MODEL is set)" in p.stderr, p.stderr
        q = _cli(["-p", "hi"], proj, home, {**env, "ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-5"})
        assert q.returncode == 0, q.stderr
        assert [r["body"]["model"] for r in fp.requests] == ["claude-opus-4-6", "claude-sonnet-4-5"]


def test_the_flag_beats_anthropic_model_which_beats_the_settings_model(proj: Path, home: Path) -> None:
    (home.parent / ".claude").mkdir(parents=True, exist_ok=True)
    (home.parent / ".claude" / "settings.json").write_text(json.dumps({"model": "haiku"}))
    with FakeProvider({"replies": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}) as fp:
        env = {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": fp.url}
        assert _cli(["-p", "hi"], proj, home, env).returncode == 0
        assert _cli(["-p", "hi"], proj, home, {**env, "ANTHROPIC_MODEL": "claude-opus-4-5"}).returncode == 0
        p = _cli(["-p", "hi", "--model", "sonnet"], proj, home, {**env, "ANTHROPIC_MODEL": "claude-opus-4-5"})
        assert p.returncode == 0 and "model anthropic" not in p.stderr  # --model named it: nothing to explain
        assert [r["body"]["model"] for r in fp.requests] == ["claude-haiku-4-5", "claude-opus-4-5", "claude-sonnet-4-6"]


def test_with_only_an_openai_key_a_print_run_works_on_openais_default(proj: Path, home: Path) -> None:
    with FakeProvider({"replies": [{"text": "hello"}]}) as fp:
        p = _cli(["-p", "hi"], proj, home, {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": fp.url + "/v1"})
        assert p.returncode == 0 and "hello" in p.stdout, p.stderr
        body = fp.requests[0]["body"]
    assert body["model"] == "gpt-5" and "max_completion_tokens" in body and "max_tokens" not in body
    assert "(the openai provider's default, as OPENAI_API_KEY is set)" in p.stderr


def test_no_key_and_no_model_is_one_line_naming_what_to_set(proj: Path, home: Path) -> None:
    p = _cli(["-p", "hi"], proj, home, {})
    assert p.returncode == 2 and "no model configured" in p.stderr and "ANTHROPIC_API_KEY or OPENAI_API_KEY" in p.stderr


def test_the_environment_chooses_in_order_and_the_small_fast_model_is_honoured() -> None:
    both = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}
    assert default_spec(both) == ("anthropic:claude-sonnet-4-6", "the anthropic provider's default, as ANTHROPIC_API_KEY is set")
    assert default_spec({"ANTHROPIC_AUTH_TOKEN": "t"}) is not None  # a gateway's token is enough
    assert default_spec({}) is None and env_model({}) is None
    assert env_model({"ANTHROPIC_MODEL": "claude-opus-4-1"}) == ("anthropic:claude-opus-4-1", "ANTHROPIC_MODEL is set")
    assert cheap_spec("anthropic:claude-sonnet-4-6", {}) == "anthropic:claude-haiku-4-5"
    assert cheap_spec("anthropic:claude-sonnet-4-6", {"ANTHROPIC_SMALL_FAST_MODEL": "claude-3-5-haiku"}) == "anthropic:claude-3-5-haiku"
    assert cheap_spec("anthropic:x", {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5-20251001"}) == "anthropic:claude-haiku-4-5-20251001"
    assert cheap_spec("scripted:x.json", {}) is None
