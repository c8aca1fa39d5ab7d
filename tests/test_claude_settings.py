"""Claude Code's settings files, read beside agentloop's own and loaded as Claude Code loads them.

Claude Code settings reference, "Settings precedence" (highest first): managed
settings (``/etc/claude-code/managed-settings.json`` on Linux), command line
arguments, local project settings (``.claude/settings.local.json``), shared
project settings (``.claude/settings.json``), user settings
(``~/.claude/settings.json``); settings are merged key by key. agentloop's own
file is placed just above Claude Code's at each scope.

Claude Code skips what it cannot use in a settings file with a warning and
applies the rest; its permission modes are default, acceptEdits, plan,
bypassPermissions and dontAsk ("auto-denies tools unless pre-approved via
/permissions or permissions.allow rules"); its model setting takes the aliases
default, sonnet, opus, haiku, sonnet[1m] and opusplan ("opus in plan mode,
sonnet otherwise"; ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL choose the
model an alias names); an ``.mcp.json`` server with a ``url`` but no ``type`` is
skipped with a warning ("has a url but no type; add type http").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent

sys.path.insert(0, os.path.dirname(__file__))
from _pty import AGENTLOOP, env_for  # noqa: E402


def write(p: Path, data: Any) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2))


@pytest.fixture()
def where(tmp_path: Path) -> dict[str, Path]:
    w = {k: tmp_path / k for k in ("home", "user", "proj")}
    for p in w.values():
        p.mkdir()
    w["tmp"] = tmp_path
    return w


def env(where: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"HOME": str(where["user"]), "AGENTLOOP_HOME": str(where["home"]), "PATH": os.environ.get("PATH", ""), **extra}


def scripted(where: dict[str, Path], replies: list[dict[str, Any]] | None = None) -> str:
    p = where["tmp"] / "script.json"
    p.write_text(json.dumps(replies or [{"text": "hi"}]))
    return f"scripted:{p}"


def agent(where: dict[str, Path], **kw: Any) -> Agent:
    if "model" not in kw:
        kw["model"] = scripted(where)
    kw.setdefault("trust", True)
    kw.setdefault("managed_settings", "")
    a = Agent(cwd=str(where["proj"]), env=env(where, **kw.pop("extra_env", {})), **kw)
    return a


def test_claude_codes_files_are_read_with_its_precedence_and_agentloops_own_file_wins_at_each_scope(where: dict[str, Path]) -> None:
    u, h, p = where["user"], where["home"], where["proj"]
    write(u / ".claude" / "settings.json", {"maxSteps": 1, "contextWindow": 1001, "loopThreshold": 7, "toolResultCap": 4242,
                                            "permissions": {"deny": ["Bash(rm:*)"]}})
    write(h / "settings.json", {"maxSteps": 2, "contextWindow": 1002, "loopThreshold": 9})
    write(p / ".claude" / "settings.json", {"maxSteps": 3, "contextWindow": 1003})
    write(p / ".agentloop" / "settings.json", {"maxSteps": 4})
    write(p / ".claude" / "settings.local.json", {"maxSteps": 5})
    write(p / ".agentloop" / "settings.local.json", {"maxSteps": 6})
    a = agent(where)
    a.close()
    assert [(os.path.relpath(s.path, where["tmp"]), s.scope, s.origin) for s in a.sources] == [
        ("user/.claude/settings.json", "user", "claude"),
        ("home/settings.json", "user", "agentloop"),
        ("proj/.claude/settings.json", "project", "claude"),
        ("proj/.agentloop/settings.json", "project", "agentloop"),
        ("proj/.claude/settings.local.json", "local", "claude"),
        ("proj/.agentloop/settings.local.json", "local", "agentloop"),
    ]
    assert a.max_steps == 6 and a.window == 1003 and a.loop_threshold == 9
    assert a.context.cm.tool_result_cap == 4242  # type: ignore[attr-defined]
    assert a.policy.decide("Bash", {"command": "rm -rf x"}).behavior == "deny"  # the user's Claude Code deny rule
    assert a.config_warnings == []


def test_managed_settings_beat_the_command_line_and_every_file(where: dict[str, Path]) -> None:
    managed = where["tmp"] / "managed-settings.json"
    write(managed, {"maxSteps": 99, "permissions": {"defaultMode": "plan", "deny": ["WebFetch"]}})
    write(where["proj"] / ".claude" / "settings.local.json", {"maxSteps": 5, "permissions": {"allow": ["WebFetch"]}})
    a = agent(where, managed_settings=str(managed), permission_mode="bypassPermissions")
    a.close()
    assert a.max_steps == 99 and a.permission_mode == "plan"
    assert a.policy.decide("WebFetch", {"url": "https://example.com"}).behavior == "deny"
    (w,) = a.config_warnings
    assert w.startswith(f"{managed}: permissions.defaultMode plan is managed") and "--permission-mode bypassPermissions" in w


def test_in_the_home_folder_the_claude_files_are_the_users_own_and_trust_there_is_never_remembered(where: dict[str, Path]) -> None:
    u = where["user"]
    marker = where["tmp"] / "hook-ran"
    write(u / ".claude" / "settings.json", {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}})
    write(u / ".mcp.json", {"mcpServers": {"m": {"command": "sh", "args": ["-c", f"touch {where['tmp']}/mcp-ran"]}}})
    a = Agent(cwd=str(u), model=scripted(where), env=env(where), managed_settings="")
    a.close()
    assert [s.scope for s in a.sources] == ["user"], "~/.claude/settings.json is read once, as the user's"
    assert marker.exists(), "the user's own hook runs without a question"
    assert not (where["tmp"] / "mcp-ran").exists() and a.trust.left_out == ["MCP server m: sh -c 'touch " + str(where["tmp"]) + "/mcp-ran'"]
    asked: list[Any] = []
    b = Agent(cwd=str(u), model=scripted(where), env=env(where), managed_settings="",
              ask_trust=lambda q: asked.append(q) or True, ask_mcp_server=lambda n, t: True)
    b.close()
    assert asked and asked[0].remembered is False and (where["tmp"] / "mcp-ran").exists()
    assert not (where["home"] / "trusted-folders.json").exists()
    p = subprocess.run([AGENTLOOP, "trust", str(u)], env=env_for(str(where["home"]), HOME=str(u)), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "never remembered" in p.stderr


def test_bad_entries_are_skipped_with_one_warning_each_and_the_rest_applies(where: dict[str, Path]) -> None:
    f = where["proj"] / ".claude" / "settings.json"
    write(f, {
        "permissions": {"allow": ["// read-only git is fine", "Bash(git status:*)", 42], "defaultMode": "yolo",
                        "additionalDirectories": ["../shared", None]},
        "statusLine": {"type": "command", "command": "x"}, "apiKeyHelper": "/bin/get-key", "includeCoAuthoredBy": False,
        "maxSteps": "many",
    })
    (where["tmp"] / "shared").mkdir()
    a = agent(where)
    a.close()
    assert a.policy.decide("Bash", {"command": "git status"}).behavior == "allow"
    assert a.permission_mode == "default" and a.max_steps == 50
    assert str(where["tmp"] / "shared") in a.add_dirs
    w = a.config_warnings
    assert len(w) == 6, w
    assert all(x.startswith(f"{f}: ") and "\n" not in x for x in w)
    assert any("permissions.allow[0] // read-only git is fine" in x and x.endswith("skipped") for x in w)
    assert any("permissions.allow[2] 42" in x for x in w)
    assert any("permissions.defaultMode yolo" in x for x in w)
    assert any("permissions.additionalDirectories[1]" in x for x in w)
    assert any("maxSteps" in x for x in w)
    assert w[-1] == f"{f}: not honoured by agentloop, ignored: includeCoAuthoredBy"  # statusLine is drawn by the REPL


def test_dont_ask_mode_denies_what_would_ask_without_asking_and_allow_rules_still_allow(where: dict[str, Path]) -> None:
    write(where["proj"] / ".claude" / "settings.json", {"permissions": {"defaultMode": "dontAsk", "allow": ["Bash(echo:*)"]}})
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo fine"}},
                                           {"name": "Bash", "arguments": {"command": "touch nope"}}]}, {"text": "done"}]
    asked: list[Any] = []
    a = agent(where, model=scripted(where, replies), ask_permission=lambda c, d: asked.append(c) or "allow")
    res = a.ask("go")
    a.close()
    assert a.permission_mode == "dontAsk" and asked == []
    from agentloop.transcript import read_records

    results = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert results[0]["ok"] and "fine" in json.dumps(results[0])
    assert not results[1]["ok"] and "dontAsk" in results[1]["error"]
    assert res.answer == "done"
    assert not (where["proj"] / "nope").exists()


def test_dont_ask_is_accepted_on_the_command_line(where: dict[str, Path]) -> None:
    p = subprocess.run([AGENTLOOP, "-p", "x", "--model", scripted(where), "--permission-mode", "dontAsk"], cwd=where["proj"],
                       env=env_for(str(where["home"]), HOME=str(where["user"])), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(("spec", "mode", "extra", "expected"), [
    ("sonnet", None, {}, "anthropic:claude-sonnet-4-6"),
    ("opus", None, {}, "anthropic:claude-opus-4-6"),
    ("haiku", None, {}, "anthropic:claude-haiku-4-5"),
    ("default", None, {}, "anthropic:claude-sonnet-4-6"),
    ("sonnet[1m]", None, {}, "anthropic:claude-sonnet-4-6"),
    ("opusplan", "plan", {}, "anthropic:claude-opus-4-6"),
    ("opusplan", None, {}, "anthropic:claude-sonnet-4-6"),
    ("claude-opus-4-1", None, {}, "anthropic:claude-opus-4-1"),
    ("sonnet", None, {"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-5"}, "anthropic:claude-sonnet-4-5"),
])
def test_claude_codes_model_aliases_name_current_models(where: dict[str, Path], spec: str, mode: str | None, extra: dict[str, str], expected: str) -> None:
    write(where["proj"] / ".claude" / "settings.json", {"model": spec})
    a = agent(where, model=None, permission_mode=mode, extra_env={"ANTHROPIC_API_KEY": "sk-ant-test", **extra})
    a.close()
    assert a.model_spec == expected and a.config_warnings == []


def test_mcp_json_servers_claude_code_cannot_use_are_skipped_with_a_warning_and_the_others_load(where: dict[str, Path]) -> None:
    f = where["proj"] / ".mcp.json"
    write(f, {"mcpServers": {
        "my server": {"command": "true"},
        "remote": {"url": "http://127.0.0.1:9/mcp"},
        "fine": {"command": "sh", "args": ["-c", f"touch {where['tmp']}/fine-ran"], "alwaysAllow": ["x"]},
    }})
    a = agent(where)
    a.close()
    assert len(a.config_warnings) == 3
    assert a.config_warnings[2] == f"{f}: mcpServers.fine: not honoured by agentloop: alwaysAllow; the server loads without them"
    assert a.config_warnings[0].startswith(f"{f}: mcpServers.my server: a server name may use only")
    assert a.config_warnings[1] == f"{f}: mcpServers.remote: has a 'url' but no 'type' (write \"type\": \"http\" or \"sse\"); skipped"
    assert (where["tmp"] / "fine-ran").exists()


def test_a_bad_entry_no_longer_stops_a_print_run(where: dict[str, Path]) -> None:
    f = where["user"] / ".claude" / "settings.json"
    write(f, {"permissions": {"allow": ["// comment", "Read"], "defaultMode": "dontAsk"}})
    p = subprocess.run([AGENTLOOP, "-p", "x", "--model", scripted(where)], cwd=where["proj"],
                       env=env_for(str(where["home"]), HOME=str(where["user"])), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hi\n"
    (w,) = [x for x in p.stderr.splitlines() if x.startswith("agentloop: warning:")]
    assert str(f) in w and "permissions.allow[0] // comment" in w


def test_a_home_relative_rule_means_the_home_of_the_environment_given(where: dict[str, Path]) -> None:
    # Claude Code permissions: "~/path" in a Read or Edit rule is relative to the home directory.
    write(where["user"] / ".claude" / "settings.json", {"permissions": {"deny": ["Read(~/private/**)"]}})
    (where["user"] / "private").mkdir()
    a = agent(where)
    a.close()
    assert a.policy.decide("Read", {"file_path": str(where["user"] / "private" / "key")}).behavior == "deny"


def test_sanitize_never_raises_on_any_json_a_repository_could_hold_and_keeps_only_honoured_keys() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from agentloop.agent.trust import HONOURED_KEYS, describe_powers, sanitize
    from agentloop.config.settings import SettingsSource

    scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
    value = st.recursive(scalar, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4), max_leaves=20)
    keys = st.sampled_from(sorted(HONOURED_KEYS) + ["statusLine", "x"]) | st.text(max_size=8)
    hooks = st.dictionaries(st.sampled_from(["PreToolUse", "Stop", "Nope"]), st.lists(
        st.fixed_dictionaries({"matcher": scalar, "hooks": st.lists(st.dictionaries(st.sampled_from(["type", "command", "timeout", "args"]), value), max_size=3)}),
        max_size=3) | value, max_size=3)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.dictionaries(keys, value, max_size=6), hooks)
    def check(data: dict[str, Any], hk: Any) -> None:
        src = SettingsSource("/p/.claude/settings.json", "project", {**data, "hooks": hk}, "claude")
        clean, warnings = sanitize(src)
        assert set(clean.data) <= HONOURED_KEYS
        assert all(w.startswith("/p/.claude/settings.json: ") and w.isprintable() for w in warnings)
        assert all(p.text.isprintable() for p in describe_powers(clean))
        again, more = sanitize(clean)
        assert again.data == clean.data and not [w for w in more if "skipped" in w]

    check()


def test_what_a_folder_would_do_is_shown_with_control_characters_escaped(where: dict[str, Path]) -> None:
    # A hook command with a newline and an escape sequence must not forge lines of the trust question.
    write(where["proj"] / ".claude" / "settings.json", {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "true\n\x1b[2Kallow rule nothing"}]}]}})
    a = agent(where, trust=None)
    a.close()
    (p,) = a.trust.powers
    assert p.text == "hook Stop: true\\n\\x1b[2Kallow rule nothing"
    assert "\n" not in (a.trust.notice() or "")


def test_a_hook_on_an_event_agentloop_never_fires_is_named_in_a_warning(where: dict[str, Path]) -> None:
    # Claude Code hooks reference lists events such as PermissionDenied; a hook agentloop would never run is not silent.
    f = where["proj"] / ".claude" / "settings.json"
    write(f, {"hooks": {"PermissionDenied": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}})
    a = agent(where)
    a.close()
    assert a.config_warnings == [
        f"{f}: hooks.PermissionDenied[0].hooks[0]: agentloop does not fire PermissionDenied hooks (see README, Hooks); this handler never runs"]


def test_the_command_lines_settings_flags_are_given_by_name_only() -> None:
    """Fifteen fields of like types (three booleans, several Nones and sequences) are never matched by position:
    a positional ``SettingsFlags`` is refused, a named one keeps each value where it was named."""
    from agentloop.agent.agent_settings import SettingsFlags

    with pytest.raises(TypeError):
        SettingsFlags(True, None, None, None, (), (), True)  # type: ignore[misc]
    f = SettingsFlags(strict_mcp_config=True, unlimited_usd=False, trust=None)
    assert (f.strict_mcp_config, f.unlimited_usd, f.trust) == (True, False, None)
