"""Each settings section is parsed once, by the sanitizer, and every reader takes that parsed value.

The ``hooks`` of a settings file are parsed by ``handler_of`` once per handler
when the file is loaded; the hook runner and the folder-trust summary take the
parsed value (``SettingsSource.section``). What an untrusted folder keeps is
decided on that value: a restricted source carries no hooks, so none can
survive ``restrict`` (Claude Code asks before a folder's settings run anything:
"Do you trust the files in this folder?"; its hooks reference: project hooks
run only in a trusted workspace).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.hooks import runner as hooks_runner
from agentloop.agent.hooks.runner import HookRunner, HookSection
from agentloop.agent.settings_sanitizer import restrict, sanitize
from agentloop.agent.trust import TrustQuestion, load_for_agent
from agentloop.config.settings import SettingsSource


def write(p: Path, data: Any) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data))


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    w = {k: tmp_path / k for k in ("home", "user", "repo")}
    for p in w.values():
        p.mkdir()
    return w


def _load(w: dict[str, Path], **kw: Any) -> Any:
    return load_for_agent(str(w["repo"]), str(w["home"]), {"HOME": str(w["user"])}, managed="", **kw)


def _runner(w: dict[str, Path], sources: list[SettingsSource]) -> HookRunner:
    # confine=None: every hook runs on the host, so the marker shows exactly whether the hook ran
    return HookRunner.from_settings(sources, project_dir=str(w["repo"]), env={"PATH": os.environ["PATH"]})


def _hooked_repo(w: dict[str, Path]) -> Path:
    repo = w["repo"]
    script = repo / ".claude" / "hooks" / "mark.sh"
    script.parent.mkdir(parents=True)
    script.write_text('touch "$CLAUDE_PROJECT_DIR/hook-ran"\n')
    cmd = 'sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/mark.sh'
    write(repo / ".claude" / "settings.json", {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]}})
    return script


def _prompt_runs_hook(w: dict[str, Path], sources: list[SettingsSource]) -> bool:
    marker = w["repo"] / "hook-ran"
    marker.unlink(missing_ok=True)
    _runner(w, sources).run("UserPromptSubmit", {"prompt": "hi"})
    return marker.exists()


def test_each_hook_handler_is_parsed_once_from_loading_to_the_runner_and_the_trust_summary(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(world["repo"] / ".claude" / "settings.json", {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}, {"type": "command", "command": "false"}]}],
        "SessionStop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1/x"}]}],
    }})
    write(world["home"] / "settings.json", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo bye"}]}]}})
    calls: list[tuple[str, str]] = []
    real = hooks_runner.handler_of

    def counted(source: SettingsSource, h: Any, *rest: Any) -> Any:
        calls.append((source.path, h.get("command", h.get("url"))))
        return real(source, h, *rest)

    monkeypatch.setattr(hooks_runner, "handler_of", counted)
    loaded = _load(world, trust=True)
    runner = _runner(world, loaded.sources)
    assert sorted(c for _, c in calls) == sorted(["true", "false", "http://127.0.0.1:1/x", "echo bye"])
    assert len(calls) == len(set(calls)) == 4  # once each: the runner and the summary parsed nothing again
    assert [h.command for h in runner.handlers] == ["echo bye", "true", "false"]
    shown = [p.text for p in loaded.decision.powers]
    assert shown == ["hook PreToolUse [Bash]: true", "hook PreToolUse [Bash]: false", "hook SessionStop: http://127.0.0.1:1/x"]
    assert any("hooks of type 'http' are not supported" in x for x in runner.warnings)


def test_an_untrusted_projects_hooks_never_run_trusted_they_run_and_a_changed_hook_file_asks_again(
    world: dict[str, Path],
) -> None:
    script = _hooked_repo(world)
    questions: list[TrustQuestion] = []

    def refuse(q: TrustQuestion) -> bool:
        questions.append(q)
        return False

    untrusted = _load(world, ask=refuse)
    assert not untrusted.decision.trusted and len(questions) == 1
    assert not _prompt_runs_hook(world, untrusted.sources)
    project = [s for s in untrusted.sources if s.in_project]
    assert project and all(s.section("hooks", HookSection) == HookSection() for s in project)

    trusted = _load(world, ask=lambda q: True)
    assert trusted.decision.trusted
    assert _prompt_runs_hook(world, trusted.sources)
    again = _load(world, ask=refuse)  # remembered: not asked again while nothing changed
    assert again.decision.trusted and len(questions) == 1

    script.write_text('touch "$CLAUDE_PROJECT_DIR/hook-ran"; echo changed\n')
    changed = _load(world, ask=refuse)
    assert len(questions) == 2 and changed.decision.status == "changed" and not changed.decision.trusted
    assert not _prompt_runs_hook(world, changed.sources)


def test_a_restricted_source_carries_none_of_the_hooks_parsed_before(world: dict[str, Path]) -> None:
    _hooked_repo(world)
    raw = SettingsSource(str(world["repo"] / ".claude" / "settings.json"), "project",
                         json.loads((world["repo"] / ".claude" / "settings.json").read_text()), origin="claude")
    clean, _ = sanitize(raw)
    parsed = clean.section("hooks", HookSection)
    assert parsed is not None and len(parsed.handlers) == 1
    kept = restrict(clean)
    assert kept.section("hooks", HookSection) == HookSection()
    assert not _prompt_runs_hook(world, [kept])
    assert _prompt_runs_hook(world, [clean])  # the control: the same source unrestricted runs its hook
    # a value is bound to the data it was parsed from: replacing the data leaves no parsed value to take
    assert replace(clean, data={}).section("hooks", HookSection) is None
    assert not _prompt_runs_hook(world, [replace(clean, data={})])


def _permission_repo(w: dict[str, Path]) -> None:
    write(w["repo"] / ".claude" / "settings.json", {"permissions": {
        "allow": ["Bash(touch:*)"], "ask": ["WebFetch"], "deny": ["Read(./secret.txt)"], "additionalDirectories": ["/"],
        "defaultMode": "acceptEdits"}})
    write(w["home"] / "settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})


def test_each_permission_rule_is_parsed_once_and_the_policy_takes_the_parsed_rules(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentloop.agent.permissions import rules as rules_module
    from agentloop.agent.permissions.rules import PermissionPolicy

    _permission_repo(world)
    seen: list[str] = []
    real = rules_module.parse_rule

    def counted(text: Any) -> Any:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(rules_module, "parse_rule", counted)
    loaded = _load(world, trust=True)
    policy = PermissionPolicy.from_settings(loaded.sources, cwd=str(world["repo"]), user_home=str(world["user"]))
    assert sorted(seen) == sorted(["Bash(touch:*)", "WebFetch", "Read(./secret.txt)", "Bash(rm:*)"])
    assert sorted((b.behavior, b.rule.text) for b in policy.rules) == sorted(
        [("allow", "Bash(touch:*)"), ("ask", "WebFetch"), ("deny", "Read(./secret.txt)"), ("deny", "Bash(rm:*)")])
    assert policy.additional_directories == ["/"] and policy.mode == "acceptEdits"


def test_an_untrusted_projects_policy_keeps_only_its_deny_rules(world: dict[str, Path]) -> None:
    from agentloop.agent.permissions.rules import PermissionPolicy, default_mode

    _permission_repo(world)
    untrusted = _load(world, ask=lambda q: False)
    policy = PermissionPolicy.from_settings(untrusted.sources, cwd=str(world["repo"]), user_home=str(world["user"]))
    assert sorted((b.behavior, b.rule.text) for b in policy.rules) == [("deny", "Bash(rm:*)"), ("deny", "Read(./secret.txt)")]
    assert policy.additional_directories == [] and policy.mode == "default"
    assert default_mode(untrusted.sources) is None
    assert policy.decide("Bash", {"command": "touch x"}).behavior != "allow"


def test_disabling_bypass_mode_is_read_from_the_parsed_permissions() -> None:
    """``permissions.disableBypassPermissionsMode`` (Claude Code's settings reference: ``"disable"`` prevents
    bypassPermissions mode) is decided from the section the sanitizer parsed, as the rules are: a source whose
    data was changed after parsing is read from its parsed value, and a bad value is dropped with a warning."""
    from agentloop.agent.permissions.rules import bypass_disabled_by

    clean, _ = sanitize(SettingsSource("/m.json", "managed", {"permissions": {"disableBypassPermissionsMode": "disable"}}))
    assert bypass_disabled_by([clean]) == "/m.json"
    clean.data["permissions"].pop("disableBypassPermissionsMode")  # the parsed value decides, not the raw data
    assert bypass_disabled_by([clean]) == "/m.json"
    wrong, warnings = sanitize(SettingsSource("/u.json", "user", {"permissions": {"disableBypassPermissionsMode": "yes"}}))
    assert bypass_disabled_by([wrong]) is None and any("disableBypassPermissionsMode" in w for w in warnings)
    raw = SettingsSource("/raw.json", "user", {"permissions": {"disableBypassPermissionsMode": "disable"}})
    assert bypass_disabled_by([raw]) == "/raw.json"  # a source never sanitized is read as written
