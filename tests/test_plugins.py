"""Claude Code plugins from a plugin folder (``--plugin-dir``) or a local marketplace, under folder trust.

Claude Code's documentation, each section checked below:

- "Plugins reference", "Plugin directory structure": ``.claude-plugin/plugin.json``,
  ``commands/``, ``agents/``, ``skills/<name>/SKILL.md``, ``hooks/hooks.json`` and
  ``.mcp.json`` at the plugin's root; "Environment variables": ``${CLAUDE_PLUGIN_ROOT}``
  is the plugin's folder in hook commands and MCP server configurations.
- "Slash commands", "Plugin commands": a plugin's command is ``/plugin-name:command``, and
  plain ``/command`` when no other command has that name.
- "Plugin marketplaces", "Create the marketplace file": ``.claude-plugin/marketplace.json``
  with ``plugins: [{name, source: "./plugins/..."}]``; "Configure team marketplaces":
  ``extraKnownMarketplaces`` with a ``{"source": "directory", "path": ...}`` source and
  ``enabledPlugins: {"name@marketplace": true}``.
- "CLI reference": ``--plugin-dir`` loads a plugin folder for the session.
- "Agent SDK", "Plugins": a loaded plugin is listed in the ``init`` message's ``plugins`` (name, path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.transcript import read_records
from mcp_servers.helpers import PY, PYSERVER

REPLIES = [{"text": "", "tool_calls": [{"name": "mcp__fmt__getenv", "arguments": {"name": "CLAUDE_PLUGIN_ROOT"}}]}, {"text": "done"}]
"""The model asks the plugin's server for ``CLAUDE_PLUGIN_ROOT``, then answers."""
ALLOW = [("allow", "mcp__fmt__getenv")]


def _plugin(root: Path, name: str = "formatter") -> Path:
    """A plugin laid out as the plugins reference shows: a command, an agent, a skill, a hook (a real script) and an MCP server."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": name, "version": "1.0.0", "description": "Formats files after edits", "author": {"name": "Someone"},
        "license": "MIT", "keywords": ["format"],
    }))
    (root / "commands").mkdir()
    (root / "commands" / "hello.md").write_text(
        "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS, from ${CLAUDE_PLUGIN_ROOT}.\n")
    (root / "agents").mkdir()
    (root / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews a change for style\ntools: Read, Grep\n---\nYou review changes by ${CLAUDE_PLUGIN_ROOT}/rules.md.\n")
    (root / "skills" / "tidy").mkdir(parents=True)
    (root / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy a file's imports\n---\nSort the imports.\nSee ${CLAUDE_PLUGIN_ROOT}/rules.md.\n")
    (root / "scripts").mkdir()
    hook = root / "scripts" / "mark.sh"
    hook.write_text('#!/bin/sh\ncat > "$(dirname "$0")/../hook-ran"\n')
    hook.chmod(0o755)
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/mark.sh"}]}],
    }}))
    shutil.copy(PYSERVER, root / "server.py")
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fmt": {"command": PY, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"]},
    }}))
    return root


def _marketplace(market: Path) -> Path:
    """A marketplace folder as "Plugin marketplaces" shows it, listing the plugin under ./plugins/formatter."""
    plugin = _plugin(market / "plugins" / "formatter")
    (market / ".claude-plugin").mkdir()
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "my-marketplace", "owner": {"name": "Someone"},
        "plugins": [{"name": "formatter", "source": "./plugins/formatter", "description": "Formats files after edits"}],
    }))
    return plugin


def _enable(settings: Path, market: Path) -> None:
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({
        "extraKnownMarketplaces": {"my-marketplace": {"source": {"source": "directory", "path": str(market)}}},
        "enabledPlugins": {"formatter@my-marketplace": True},
    }))


def _check_loaded(a: Agent, plugin: Path) -> None:
    """Every part of the plugin is there: command (both names), skill, agent type, MCP server, hook."""
    assert [(p.name, p.path) for p in a.plugins] == [("formatter", str(plugin.resolve()))]
    expanded = a.slash.expand("/formatter:hello Ann")
    assert expanded is not None and f"Say hello to Ann, from {plugin.resolve()}." in expanded[0]
    plain = a.slash.expand("/hello Bob")  # no other /hello: the plain name works too
    assert plain is not None and "Say hello to Bob" in plain[0]
    assert "formatter:tidy" in a.skills and f"Sort the imports.\nSee {plugin.resolve()}/rules.md." in a.skills["formatter:tidy"].body()
    agent_tool = next(t for t in a.extra_tools if t.name == "Agent")
    assert "- formatter:reviewer: Reviews a change for style (tools: Read, Grep)" in agent_tool.description
    reviewer = a.context.subagents.types["formatter:reviewer"]
    assert reviewer.prompt == f"You review changes by {plugin.resolve()}/rules.md."  # the agent's prompt, root expanded
    assert "mcp__fmt__echo" in a.registry.names()
    assert a.ask("format it").answer == "done"
    results = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert [r["content"] for r in results] == [str(plugin.resolve())]  # the server sees CLAUDE_PLUGIN_ROOT too
    payload = json.loads((plugin / "hook-ran").read_text())  # the script ran: ${CLAUDE_PLUGIN_ROOT} was its folder
    assert payload["hook_event_name"] == "UserPromptSubmit" and payload["prompt"] == "format it"


def test_a_plugin_folder_given_with_plugin_dir_brings_its_commands_skills_agents_hooks_and_servers(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    plugin = _plugin(tmp_path / "formatter")
    a = Agent(cwd=str(proj), model=scripted(REPLIES), cli_rules=ALLOW, plugin_dirs=[str(plugin)])
    try:
        _check_loaded(a, plugin)
    finally:
        a.close()


def test_a_plugin_enabled_in_the_users_settings_loads_from_a_local_directory_marketplace(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    plugin = _marketplace(tmp_path / "market")
    _enable(Path(os.environ["HOME"]) / ".claude" / "settings.json", tmp_path / "market")
    a = Agent(cwd=str(proj), model=scripted(REPLIES), cli_rules=ALLOW)
    try:
        _check_loaded(a, plugin)
        assert not [w for w in a.config_warnings if "plugin" in w.lower() or "marketplace" in w.lower()], a.config_warnings
    finally:
        a.close()


def test_an_untrusted_folders_plugin_runs_nothing_and_a_warning_says_so(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    # the project's own settings enable a plugin of a marketplace inside it: those settings need trust
    plugin = _marketplace(proj / "market")
    _enable(proj / ".claude" / "settings.json", proj / "market")
    a = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    try:
        assert not a.trust.trusted and a.plugins == []
        notice = a.trust.notice() or ""
        assert "enabledPlugins" in notice and "not trusted" in notice
        assert "formatter:hello" not in a.commands and "mcp__fmt__echo" not in a.registry.names()
        assert a.ask("format it").answer == "done"
    finally:
        a.close()
    assert not (plugin / "hook-ran").exists()


def test_the_users_own_settings_do_not_run_a_plugin_kept_inside_an_untrusted_folder(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    plugin = _marketplace(proj / "market")
    _enable(Path(os.environ["HOME"]) / ".claude" / "settings.json", proj / "market")
    (proj / ".claude" / "settings.json").parent.mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))  # a folder that needs trust
    a = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    try:
        assert not a.trust.trusted and a.plugins == []
        assert any("enabledPlugins formatter@my-marketplace" in w and "not trusted" in w for w in a.config_warnings), a.config_warnings
        assert a.ask("format it").answer == "done"
    finally:
        a.close()
    assert not (plugin / "hook-ran").exists()


def test_a_remote_marketplace_is_named_in_a_warning_as_not_fetched(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    (Path(os.environ["HOME"]) / ".claude").mkdir()
    (Path(os.environ["HOME"]) / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"team": {"source": {"source": "github", "repo": "someone/plugins"}}},
        "enabledPlugins": {"formatter@team": True},
    }))
    a = Agent(cwd=str(proj), model=scripted([]))
    a.close()
    assert a.plugins == []
    assert any("extraKnownMarketplaces.team: a github marketplace is not fetched" in w for w in a.config_warnings), a.config_warnings
    assert any("enabledPlugins formatter@team: no local marketplace 'team'" in w for w in a.config_warnings)


def test_two_plugins_with_one_command_name_keep_only_their_namespaced_names(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    one, two = _plugin(tmp_path / "one", "one"), _plugin(tmp_path / "two", "two")
    for p in (one, two):
        (p / ".mcp.json").unlink()
    a = Agent(cwd=str(proj), model=scripted([]), plugin_dirs=[str(one), str(two)])
    a.close()
    assert {"one:hello", "two:hello"} <= set(a.commands) and "hello" not in a.commands


def test_plugin_json_keys_agentloop_does_not_read_are_named_in_a_warning(tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Plugins reference, "Plugin manifest schema": ``lspServers`` and ``outputStyles`` are component paths agentloop has no part for."""
    plugin = _plugin(tmp_path / "formatter")
    (plugin / ".mcp.json").unlink()
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({**manifest, "lspServers": "./.lsp.json", "outputStyles": "./styles/"}))
    a = Agent(cwd=str(proj), model=scripted([]), plugin_dirs=[str(plugin)])
    a.close()
    assert [p.name for p in a.plugins] == ["formatter"]
    assert any(w.endswith("plugin.json: not honoured by agentloop, ignored: lspServers, outputStyles") for w in a.config_warnings), a.config_warnings


def test_print_mode_lists_the_loaded_plugin_in_its_init_message(tmp_path: Path, proj: Path) -> None:
    plugin = _plugin(tmp_path / "formatter")
    (plugin / ".mcp.json").unlink()
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "/formatter:hello Ann", "--model", f"scripted:{script}",
                        "--output-format", "stream-json", "--verbose", "--plugin-dir", str(plugin)],
                       cwd=proj, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    init = json.loads(p.stdout.splitlines()[0])
    assert init["type"] == "system" and init["subtype"] == "init"
    assert init["plugins"] == [{"name": "formatter", "path": str(plugin.resolve())}]
    assert "plugin" not in p.stderr.lower(), p.stderr  # no warning about it any more
    # the plugin's own UserPromptSubmit hook saw the prompt as typed (anthropics/claude-code#87320: "a
    # UserPromptSubmit hook receives only the raw prompt string"), before the command expanded; the turn ran
    assert json.loads((plugin / "hook-ran").read_text())["prompt"] == "/formatter:hello Ann"
    assert json.loads(p.stdout.splitlines()[-1])["result"] == "ok"


def test_a_trusted_folder_is_asked_again_when_a_plugin_its_settings_enable_changes(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """Folder trust covers what a project's ``enabledPlugins`` runs: the plugin's files, not only the setting."""
    from agentloop.agent.trust import remember_folder

    plugin = _marketplace(proj / "market")
    (plugin / ".mcp.json").unlink()
    _enable(proj / ".claude" / "settings.json", proj / "market")
    remember_folder(str(proj), os.environ["AGENTLOOP_HOME"], dict(os.environ))
    a = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    a.close()
    assert a.trust.trusted and [p.name for p in a.plugins] == ["formatter"]
    (plugin / "scripts" / "mark.sh").write_text('#!/bin/sh\ntouch "$(dirname "$0")/../changed-hook-ran"\n')
    b = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    try:
        assert not b.trust.trusted and b.trust.status == "changed" and b.plugins == []
        assert b.ask("format it").answer == "done"
    finally:
        b.close()
    assert not (plugin / "changed-hook-ran").exists()


def test_malformed_plugin_settings_and_files_are_one_warning_each_and_the_agent_starts(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    market = tmp_path / "market"
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({"name": "m", "owner": {"name": "x"}, "plugins": 5}))
    (Path(os.environ["HOME"]) / ".claude").mkdir()
    (Path(os.environ["HOME"]) / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"m": {"source": {"source": "directory", "path": str(market)}}},
        "enabledPlugins": {"formatter@m": True},
    }))
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.local.json").write_text(json.dumps({"enabledPlugins": ["formatter@m"]}))
    odd = _plugin(tmp_path / "odd")
    (odd / ".mcp.json").unlink()
    (odd / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "odd", "commands": ["../../elsewhere"]}))
    a = Agent(cwd=str(proj), model=scripted([]), plugin_dirs=[str(odd), str(tmp_path / "missing")], trust=True)
    a.close()
    assert [p.name for p in a.plugins] == ["odd"] and "odd:hello" in a.commands
    said = "\n".join(a.config_warnings + a.load_warnings)
    assert 'settings.local.json: enabledPlugins ["formatter@m"]: must be an object of "plugin@marketplace": true or false; skipped' in said
    assert "lists no plugin 'formatter'" in said
    assert "commands: '../../elsewhere' is not a path inside the plugin; skipped" in said
    assert f"--plugin-dir {tmp_path / 'missing'}: {tmp_path / 'missing'} is not a folder" in said


def test_a_plugin_file_after_thousands_of_others_is_still_covered_by_folder_trust(
        tmp_path: Path, proj: Path, scripted: Callable[..., str]) -> None:
    """The trust digest covers every file of an in-repo plugin: 2,500 files walked before ``scripts/`` do
    not let a changed hook script through without the "changed" question."""
    from agentloop.agent.trust import remember_folder

    plugin = _marketplace(proj / "market")
    (plugin / ".mcp.json").unlink()
    (plugin / "aaa").mkdir()
    for i in range(2500):
        (plugin / "aaa" / f"f{i:04}").write_text("")
    _enable(proj / ".claude" / "settings.json", proj / "market")
    remember_folder(str(proj), os.environ["AGENTLOOP_HOME"], dict(os.environ))
    a = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    a.close()
    assert a.trust.trusted
    (plugin / "scripts" / "mark.sh").write_text('#!/bin/sh\ntouch "$(dirname "$0")/../changed-hook-ran"\n')
    b = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    try:
        assert not b.trust.trusted and b.trust.status == "changed" and b.plugins == []
    finally:
        b.close()


def test_a_change_past_the_bytes_a_digest_reads_still_changes_it(tmp_path: Path) -> None:
    from agentloop.agent.trust import _file_digest

    f = tmp_path / "big.sh"
    f.write_bytes(b"#!/bin/sh\n" + b"#" * 100 + b"\ntrue\n")
    before = _file_digest(str(f), limit=32)
    with open(f, "r+b") as g:
        g.seek(112)
        g.write(b"evil")
    assert _file_digest(str(f), limit=32) != before
