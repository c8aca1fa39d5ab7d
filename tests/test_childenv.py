"""What the agent's children get in their environment, and what tool output hides.

The redaction tests in ``test_secrets_scan`` would hide a key that reached a
child; these check the environment itself, so that each guard is shown to
work on its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.hooks.runner import HookRunner
from agentloop.agent.sandbox.child_env import Redactor, child_env, looks_secret, secret_env_values
from agentloop.testing import ScriptedModel, reply

KEY = "sk-env-planted-0a1b2c3d4e5f6a7b"


def test_child_env_drops_provider_keys_and_any_variable_holding_a_held_key() -> None:
    env = {"PATH": "/usr/bin", "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "a" * 20, "MY_LLM": "held-key-123456",
           "COPY": KEY, "NPM_TOKEN": "npm-token-12345678"}
    out = child_env(env, drop=["MY_LLM"], held=[KEY])
    assert out == {"PATH": "/usr/bin"}
    allowed = child_env(env, drop=["MY_LLM"], held=[KEY], allowed=["NPM_TOKEN", "OPENAI_API_KEY"])
    assert allowed == {"PATH": "/usr/bin", "NPM_TOKEN": "npm-token-12345678"}  # a provider key never, allowed or not


@pytest.mark.parametrize(("name", "secret"), [
    ("OPENAI_API_KEY", True), ("GITHUB_TOKEN", True), ("DB_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True),
    ("GHAPIKEY", True), ("SSH_AUTH_SOCK", False), ("PWD", False), ("GIT_AUTHOR_NAME", False), ("PATH", False),
    ("KEY_FILE", False), ("HOME", False),
])
def test_secret_looking_names(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_redactor_replaces_every_known_value_longest_first() -> None:
    r = Redactor(secret_env_values({"A_TOKEN": "tok-12345678", "B_TOKEN": "tok-12345678-longer", "SHORT_KEY": "abc"}))
    assert r.text("x tok-12345678-longer y tok-12345678 abc") == "x [redacted: B_TOKEN] y [redacted: A_TOKEN] abc"
    assert r.value({"a": ["tok-12345678"], "n": 1}) == {"a": ["[redacted: A_TOKEN]"], "n": 1}


def test_bash_children_get_no_provider_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # in the process's environment too, as a user's shell has it
    proj = tmp_path / "proj"
    proj.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "OPENAI_API_KEY": KEY,
           "AGENTLOOP_HOME": str(tmp_path / "home")}
    model = ScriptedModel([reply("", [("Bash", {"command": "env | grep -c '^OPENAI_API_KEY=' ; echo ${#OPENAI_API_KEY}"})]), reply("done")])
    for mode in ("workspace-write", "danger-full-access"):
        model.calls = 0
        a = Agent(cwd=str(proj), home=str(tmp_path / "home"), env=env, model=model,
                  permission_mode="bypassPermissions", sandbox=mode)
        try:
            res = a.ask("go")
        finally:
            a.close()
        outs = [m["content"] for m in res.messages if m.get("role") == "tool"]
        assert outs == ["0\n0"], (mode, outs)


def test_hooks_get_no_provider_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    dump = tmp_path / "hook-env.json"
    settings = {"hooks": {"SessionStart": [{"hooks": [{"type": "command",
        "command": f"python3 -c 'import json, os; json.dump(dict(os.environ), open(\"{dump}\", \"w\"))'"}]}]}}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    from agentloop.config.settings import load_settings

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "OPENAI_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": KEY + "x"}
    runner = HookRunner.from_settings(load_settings(str(tmp_path), str(tmp_path)), project_dir=str(tmp_path), env=env)
    runner.run("SessionStart", {"source": "startup"})
    got = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in got and "ANTHROPIC_AUTH_TOKEN" not in got and got.get("PATH")


def test_a_secret_argument_is_redacted_from_later_tool_output_too(tmp_path: Path) -> None:
    from agentloop import tool

    pw = "hunter2-secret-arg-77"

    @tool(secret_args=("$.password",))
    def login(password: str) -> str:
        """Log in."""
        return "ok"

    proj = tmp_path / "proj"
    proj.mkdir()
    model = ScriptedModel([reply("", [("login", {"password": pw})]),
                           reply("", [("Bash", {"command": f"echo the password was {pw}"})]), reply("done")])
    a = Agent(cwd=str(proj), home=str(tmp_path / "home"), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
              model=model, permission_mode="bypassPermissions")
    a.register_tools([login])
    try:
        res = a.ask("go")
    finally:
        a.close()
    outs = [m["content"] for m in res.messages if m.get("role") == "tool"]
    assert outs[1] == "the password was [redacted: secret argument of login]"
    # the model wrote it into Bash's command itself (its own words are recorded as they are); the results hold none
    from agentloop.transcript import read_records

    assert all(pw not in json.dumps(r.payload) for r in read_records(a.session.path) if r.kind == "tool_result")
