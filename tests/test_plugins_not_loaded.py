"""Claude Code plugins are not loaded: a warning names each way one is asked for, and nothing of it runs.

Claude Code's documentation ("Plugins reference": the plugin layout with
``.claude-plugin/plugin.json``, ``commands/``, ``hooks/hooks.json``,
``.mcp.json`` and ``${CLAUDE_PLUGIN_ROOT}``; "Plugin marketplaces":
``.claude-plugin/marketplace.json`` and ``extraKnownMarketplaces`` with a
``directory`` source; "Settings": ``enabledPlugins``; "CLI reference":
``--plugin-dir``). agentloop decides otherwise (README, compatibility table):
a plugin bundles hooks and servers that would run code agentloop's folder
trust has not reviewed, so it is named in a warning and never runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _plugin(root: Path) -> Path:
    """A plugin laid out as the plugins reference shows, whose hook and server would leave a mark if run."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": "formatter", "version": "1.0.0", "description": "Formats files after edits",
        "author": {"name": "Someone"},
    }))
    (root / "commands").mkdir()
    (root / "commands" / "hello.md").write_text("---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS.\n")
    (root / "hooks").mkdir()
    mark = "touch ${CLAUDE_PLUGIN_ROOT}/hook-ran"
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": mark}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": mark}]}],
    }}))
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"plugin-server": {
        "command": "sh", "args": ["-c", "touch ${CLAUDE_PLUGIN_ROOT}/server-ran"],
    }}}))
    return root


def test_a_plugin_asked_for_by_flag_or_settings_is_named_in_a_warning_and_never_runs(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    market = tmp_path / "market"
    plugin = _plugin(market / "plugins" / "formatter")
    (market / ".claude-plugin").mkdir()
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "my-marketplace", "owner": {"name": "Someone"},
        "plugins": [{"name": "formatter", "source": "./plugins/formatter", "description": "Formats files after edits"}],
    }))
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"my-marketplace": {"source": {"source": "directory", "path": str(market)}}},
        "enabledPlugins": {"formatter@my-marketplace": True},
    }))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OTEL_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "home")
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "-p", "hi", "--model", f"scripted:{script}",
                        "--plugin-dir", str(plugin)], cwd=proj, env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"
    warnings = [line for line in p.stderr.splitlines() if line.startswith("agentloop: warning:")]
    assert any(f"--plugin-dir {plugin}" in w and "plugins are not loaded" in w for w in warnings), p.stderr
    assert any("enabledPlugins" in w and "extraKnownMarketplaces" in w for w in warnings), p.stderr
    assert not (plugin / "hook-ran").exists() and not (plugin / "server-ran").exists()
