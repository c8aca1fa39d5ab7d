"""A marketplace built as anthropics/skills': one repository, entries sharing ``source: "./"``, each with
``strict: false`` and its own ``skills`` list.

Claude Code's documentation, plugin marketplaces (https://code.claude.com/docs/en/plugin-marketplaces):

- "Plugin entries": an entry may give the plugin's component paths itself (``commands``, ``agents``, ``skills``,
  ``hooks``, ``mcpServers``).
- "Strict mode": with ``strict: false`` "the marketplace entry is the entire plugin definition"; with ``strict``
  true (the default) ``plugin.json`` is the authority and the entry supplements it.
- Settings, ``enabledPlugins``: only plugins set to true there load ("name@marketplace").
- Skills page, "Skills in plugins": a plugin's skill is ``/plugin-name:skill-name``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent


def _skill(d: Path, name: str, text: str) -> None:
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} work\n---\n{text}\n")


def _anthropic_skills(repo: Path) -> None:
    for name in ("xlsx", "pdf", "canvas-design", "skill-creator"):
        _skill(repo / "skills" / name, name, f"Instructions for {name}.")
    (repo / ".claude-plugin").mkdir(parents=True)
    (repo / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "anthropic-agent-skills", "owner": {"name": "Anthropic"},
        "metadata": {"description": "Anthropic example skills", "version": "1.0.0"},
        "plugins": [
            {"name": "document-skills", "description": "Documents", "source": "./", "strict": False,
             "skills": ["./skills/xlsx", "./skills/pdf"]},
            {"name": "example-skills", "description": "Examples", "source": "./", "strict": False,
             "skills": ["./skills/canvas-design", "./skills/skill-creator"]},
        ]}))


def _enable(repo: Path, **plugins: bool) -> None:
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({
        "extraKnownMarketplaces": {"anthropic-agent-skills": {"source": {"source": "directory", "path": str(repo)}}},
        "enabledPlugins": {f"{k.replace('_', '-')}@anthropic-agent-skills": v for k, v in plugins.items()}}))


def test_entries_sharing_one_source_load_as_separate_plugins_with_their_own_skills(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    repo = tmp_path / "skills-repo"
    _anthropic_skills(repo)
    _enable(repo, document_skills=True, example_skills=True)
    a = Agent(cwd=str(proj), model=scripted([]))
    try:
        assert sorted(p.name for p in a.plugins) == ["document-skills", "example-skills"]
        mine = sorted(n for n in a.skills if ":" in n)
        assert mine == ["document-skills:pdf", "document-skills:xlsx", "example-skills:canvas-design",
                        "example-skills:skill-creator"]
        expanded = a.slash.expand("/document-skills:pdf form.pdf")
        assert expanded is not None and "Instructions for pdf." in expanded[0]
    finally:
        a.close()


def test_a_plugin_of_that_marketplace_not_enabled_does_not_load(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    repo = tmp_path / "skills-repo"
    _anthropic_skills(repo)
    _enable(repo, document_skills=True, example_skills=False)
    a = Agent(cwd=str(proj), model=scripted([]))
    try:
        assert [p.name for p in a.plugins] == ["document-skills"]
        assert "example-skills:canvas-design" not in a.skills and "canvas-design" not in a.skills
        assert a.slash.expand("/example-skills:canvas-design") is None
    finally:
        a.close()


def test_a_strict_entry_adds_its_paths_to_what_plugin_json_declares(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    market = tmp_path / "market"
    plugin = market / "plugins" / "tools"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "tools"}))
    _skill(plugin / "skills" / "lint", "lint", "Lint.")
    _skill(plugin / "extra" / "fmt", "fmt", "Format.")
    (market / ".claude-plugin").mkdir()
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({"name": "m", "owner": {"name": "x"},
        "plugins": [{"name": "tools", "source": "./plugins/tools", "skills": ["./extra"]}]}))
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"extraKnownMarketplaces": {"m": {"source": {"source": "directory", "path": str(market)}}},
                                    "enabledPlugins": {"tools@m": True}}))
    a = Agent(cwd=str(proj), model=scripted([]))
    try:
        assert {"tools:lint", "tools:fmt"} <= set(a.skills)
    finally:
        a.close()
