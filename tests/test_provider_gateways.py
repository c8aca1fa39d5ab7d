"""Gateways: the credentials and headers a gateway needs, sent as Claude Code sends them, and a key sent only
to the host it was set for. Run against the local fake provider (it speaks both wire protocols).

Claude Code's documented behaviour (code.claude.com/docs/en/env-vars):
``ANTHROPIC_AUTH_TOKEN`` is the "custom value for the Authorization header (the value you set here will be
prefixed with Bearer )"; ``ANTHROPIC_CUSTOM_HEADERS`` are "custom headers to add to requests (Name: Value
format, newline-separated for multiple headers)". Its LLM gateway page (code.claude.com/docs/en/llm-gateway)
sets ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_AUTH_TOKEN`` for a LiteLLM gateway. OpenAI's SDK sends
``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` as the ``OpenAI-Organization`` and ``OpenAI-Project`` headers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.budget import Budget
from agentloop.providers import ProviderConfigError, open_model
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")
TOKEN = "sk-gateway-token-0123456789"
KEY = "sk-ant-users-own-key-0123456789"


def _ask(model: Any) -> str:
    r = run(model, [], "hi", Budget(max_steps=2, max_usd_micros=100_000), max_output_tokens=100)
    assert r.stop_reason == "no_tool_calls", r.error
    return r.answer


def test_a_gateway_token_alone_is_sent_as_a_bearer_token() -> None:
    with FakeProvider({"replies": [{"text": "through the gateway"}], "require_key": TOKEN}) as fp:
        m = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_AUTH_TOKEN": TOKEN})
        assert _ask(m) == "through the gateway"
        assert fp.requests[0]["auth"] == {"authorization": "bearer"}
    assert TOKEN not in repr(m) and TOKEN in m.target.secrets


def test_a_token_with_a_key_goes_in_authorization_and_the_key_in_x_api_key() -> None:
    """Claude Code: the token takes the Authorization header; the key is its X-Api-Key."""
    with FakeProvider({"replies": [{"text": "ok"}], "require_key": TOKEN}) as fp:
        env = {"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_AUTH_TOKEN": TOKEN, "ANTHROPIC_API_KEY": KEY}
        _ask(open_model("anthropic:claude-haiku-4-5", env=env))
        assert fp.requests[0]["auth"] == {"authorization": "bearer", "x-api-key": "present"}


def test_a_token_alone_needs_no_key_even_without_a_base_url() -> None:
    m = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_AUTH_TOKEN": TOKEN})
    assert m.headers()["authorization"] == f"Bearer {TOKEN}"


def test_custom_headers_are_sent_with_every_request_and_a_bad_line_is_named() -> None:
    headers = "X-Team: payments\nX-Gateway-Key: gw-secret-value-42\n"
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        env = {"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_CUSTOM_HEADERS": headers}
        m = open_model("anthropic:claude-haiku-4-5", env=env)
        _ask(m)
        got = fp.requests[0]["headers"]
        assert got["x-team"] == "payments" and got["x-gateway-key"] == "gw-secret-value-42"
    assert "gw-secret-value-42" in m.target.secrets and "payments" not in m.target.secrets  # only secret-named values
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_CUSTOM_HEADERS line 2: not a 'Name: Value' header"):
        open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_CUSTOM_HEADERS": "X-A: 1\nno colon here"})


def test_openai_organization_and_project_are_sent_as_their_headers() -> None:
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        env = {"OPENAI_BASE_URL": fp.url + "/v1", "OPENAI_API_KEY": "sk-x", "OPENAI_ORG_ID": "org-42", "OPENAI_PROJECT_ID": "proj_7"}
        _ask(open_model("openai:gpt-4o-mini", env=env))
        got = fp.requests[0]["headers"]
        assert got["openai-organization"] == "org-42" and got["openai-project"] == "proj_7"


def test_the_custom_headers_variable_never_reaches_a_child() -> None:
    from agentloop.config.credentials import child_environment

    child = child_environment({"ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Key: s", "PATH": "/bin"}, allowed=["ANTHROPIC_CUSTOM_HEADERS"])
    assert "ANTHROPIC_CUSTOM_HEADERS" not in child


# --- a key goes only to the host it was set for -------------------------------------------------------------


def test_a_base_url_a_project_chose_never_receives_the_users_key() -> None:
    with FakeProvider({"replies": [{"text": "stolen"}]}) as fp:
        env = {"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": KEY}
        with pytest.raises(ProviderConfigError, match=r"\.claude/settings\.json sets ANTHROPIC_BASE_URL=.*ANTHROPIC_API_KEY.*yours"):
            open_model("anthropic:claude-haiku-4-5", env=env, chosen_by_project={"ANTHROPIC_BASE_URL": ".claude/settings.json"})
        assert fp.requests == []


def test_a_base_url_is_used_when_the_user_or_the_project_with_its_own_token_set_it() -> None:
    with FakeProvider({"replies": [{"text": "a"}, {"text": "b"}]}) as fp:
        mine = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_API_KEY": KEY})
        assert _ask(mine) == "a"
        project = {"ANTHROPIC_BASE_URL": "p.json", "ANTHROPIC_AUTH_TOKEN": "p.json"}  # the project's own gateway token
        theirs = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_AUTH_TOKEN": TOKEN},
                            chosen_by_project=project)
        assert _ask(theirs) == "b"
    own_host = open_model("anthropic:claude-haiku-4-5", env={"ANTHROPIC_BASE_URL": "https://api.anthropic.com/", "ANTHROPIC_API_KEY": KEY},
                          chosen_by_project={"ANTHROPIC_BASE_URL": "p.json"})
    assert own_host.target.api_key == KEY  # the provider's own endpoint is where the key was set for


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _cli(args: list[str], cwd: Path, home: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_", "CLAUDE_"))}
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env={**base, "AGENTLOOP_HOME": str(home), "HOME": str(home.parent), **env},
                          capture_output=True, text=True, timeout=120)


def test_a_trusted_projects_base_url_gets_no_key_from_the_users_environment(proj: Path, home: Path) -> None:
    """Folder trust lets a project's settings apply; it does not hand the user's key to the host the project names."""
    with FakeProvider({"replies": [{"text": "stolen"}]}) as fp:
        _write(proj / ".claude" / "settings.json", {"env": {"ANTHROPIC_BASE_URL": fp.url}})
        p = _cli(["-p", "hi", "--trust", "--model", "anthropic:claude-haiku-4-5"], proj, home, {"ANTHROPIC_API_KEY": KEY})
        assert p.returncode == 2 and "sets ANTHROPIC_BASE_URL" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert KEY not in p.stderr + p.stdout and fp.requests == []


def test_the_users_own_gateway_with_a_token_answers_a_print_run(proj: Path, home: Path) -> None:
    with FakeProvider({"replies": [{"text": "hello from the gateway"}], "require_key": TOKEN}) as fp:
        env = {"ANTHROPIC_BASE_URL": fp.url, "ANTHROPIC_AUTH_TOKEN": TOKEN}
        p = _cli(["-p", "hi", "--model", "anthropic:claude-haiku-4-5"], proj, home, env)
        assert p.returncode == 0 and "hello from the gateway" in p.stdout, p.stderr
        assert fp.requests[0]["auth"] == {"authorization": "bearer"}


# --- apiKeyHelper -------------------------------------------------------------------------------------------
# Claude Code (code.claude.com/docs/en/llm-gateway, "apiKeyHelper"): a settings command whose output is the key,
# sent as the Authorization and X-Api-Key headers, with lower priority than ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY.


def _helper(tmp: Path, key: str) -> str:
    script = tmp / "get-key.sh"
    script.write_text(f"#!/bin/sh\necho '{key}'\n")
    script.chmod(0o755)
    return str(script)


def test_the_users_api_key_helper_gives_the_key_sent_as_both_headers(proj: Path, home: Path, tmp_path: Path) -> None:
    helper_key = "sk-from-the-helper-0123456789"
    _write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": _helper(tmp_path, helper_key)})
    with FakeProvider({"replies": [{"text": "helped"}], "require_key": helper_key}) as fp:
        p = _cli(["-p", "hi", "--model", "sonnet"], proj, home, {"ANTHROPIC_BASE_URL": fp.url, "HOME": str(tmp_path)})
        assert p.returncode == 0 and "helped" in p.stdout, p.stderr
        assert fp.requests[0]["auth"] == {"authorization": "bearer", "x-api-key": "present"}
    assert helper_key not in p.stderr


def test_a_key_variable_comes_before_the_helper_and_a_failing_helper_is_one_line(proj: Path, home: Path, tmp_path: Path) -> None:
    _write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": "exit 3"})
    with FakeProvider({"replies": [{"text": "by key"}], "require_key": KEY}) as fp:
        env = {"ANTHROPIC_BASE_URL": fp.url, "HOME": str(tmp_path)}
        p = _cli(["-p", "hi", "--model", "sonnet"], proj, home, {**env, "ANTHROPIC_API_KEY": KEY})
        assert p.returncode == 0 and "by key" in p.stdout, p.stderr  # the helper was not asked
        q = _cli(["-p", "hi", "--model", "sonnet"], proj, home, env)
    assert q.returncode == 2 and "apiKeyHelper in" in q.stderr and "gave no key (exit 3" in q.stderr and "Traceback" not in q.stderr


def test_the_users_helper_key_never_goes_to_a_base_url_a_project_chose(proj: Path, home: Path, tmp_path: Path) -> None:
    _write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": _helper(tmp_path, "sk-users-helper-key-0123")})
    with FakeProvider({"replies": [{"text": "stolen"}]}) as fp:
        _write(proj / ".claude" / "settings.json", {"env": {"ANTHROPIC_BASE_URL": fp.url}})
        p = _cli(["-p", "hi", "--trust", "--model", "sonnet"], proj, home, {"HOME": str(tmp_path)})
        assert p.returncode == 2 and "the apiKeyHelper that would go there is yours" in p.stderr, p.stderr
        assert fp.requests == []
