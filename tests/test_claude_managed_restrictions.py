"""Managed settings that restrict what the other settings files may do: ``allowManagedPermissionRulesOnly`` and
``strictKnownMarketplaces``.

Claude Code's settings reference (https://code.claude.com/docs/en/settings, "Settings files", managed-only keys):

- ``allowManagedPermissionRulesOnly``: "When true, prevents user and project settings from defining allow, ask, or
  deny permission rules. Only rules in managed settings apply." (agentloop keeps deny rules from every file: they
  only take power away; README, "For Claude Code users".)
- ``strictKnownMarketplaces``: "an allowlist of plugin marketplaces users can add"; "an empty array is complete
  lockdown"; a ``pathPattern`` entry is a regular expression a local marketplace's path must match (plugin
  marketplaces, "Managed marketplace restrictions").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.transcript import read_records

TOUCH = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "touch made-by-the-model"}}]}, {"text": "done"}]


def _write(path: Path, data: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return str(path)


def test_project_allow_rules_do_not_apply_when_managed_settings_allow_only_theirs(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    managed = _write(tmp_path / "managed" / "managed-settings.json", {"allowManagedPermissionRulesOnly": True})
    _write(proj / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    a = Agent(cwd=str(proj), model=scripted(TOUCH), trust=True, managed_settings=managed, cli_rules=[("allow", "Bash")])
    try:
        assert a.ask("make it").answer == "done"
        [r] = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
        assert r["ok"] is False and not (proj / "made-by-the-model").exists()
        assert any("allowManagedPermissionRulesOnly" in w and "settings.json" in w for w in a.config_warnings)
        assert any("allowManagedPermissionRulesOnly" in w and "--allowedTools Bash" in w for w in a.config_warnings)
    finally:
        a.close()


def test_managed_allow_rules_still_apply_under_allow_managed_permission_rules_only(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    managed = _write(tmp_path / "managed" / "managed-settings.json", {
        "allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["Bash(touch:*)"]}})
    a = Agent(cwd=str(proj), model=scripted(TOUCH), managed_settings=managed)
    try:
        assert a.ask("make it").answer == "done"
        assert (proj / "made-by-the-model").exists()
    finally:
        a.close()


def _project_marketplace(proj: Path) -> None:
    market = proj / "tools-market"
    plugin = market / "plugins" / "lint"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "lint"}))
    (plugin / "commands").mkdir()
    (plugin / "commands" / "lint.md").write_text("Lint the code.\n")
    _write(market / ".claude-plugin" / "marketplace.json", {"name": "tools", "owner": {"name": "x"},
                                                           "plugins": [{"name": "lint", "source": "./plugins/lint"}]})
    _write(proj / ".claude" / "settings.json", {
        "extraKnownMarketplaces": {"tools": {"source": {"source": "directory", "path": "./tools-market"}}},
        "enabledPlugins": {"lint@tools": True}})


def test_strict_known_marketplaces_empty_keeps_a_projects_marketplace_out(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    _project_marketplace(proj)
    managed = _write(tmp_path / "managed" / "managed-settings.json", {"strictKnownMarketplaces": []})
    a = Agent(cwd=str(proj), model=scripted([]), trust=True, managed_settings=managed)
    try:
        assert a.plugins == []
        assert any("not in strictKnownMarketplaces" in w for w in a.config_warnings)
    finally:
        a.close()


def test_strict_known_marketplaces_path_pattern_lets_a_matching_marketplace_in(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    _project_marketplace(proj)
    managed = _write(tmp_path / "managed" / "managed-settings.json", {
        "strictKnownMarketplaces": [{"source": "pathPattern", "pathPattern": "/tools-market$"}]})
    a = Agent(cwd=str(proj), model=scripted([]), trust=True, managed_settings=managed)
    try:
        assert [p.name for p in a.plugins] == ["lint"]
    finally:
        a.close()
