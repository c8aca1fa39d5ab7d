"""Scripts bundled with skills and plugins run in Bash, under the user's allow rule, inside the sandbox, read-only.

Claude Code's documentation:

- Skills, "Add supporting files": a skill's folder holds scripts beside ``SKILL.md`` and the skill tells Claude to run
  them (``python scripts/helper.py``); Anthropic's pdf skill (anthropics/skills ``skills/pdf``) runs
  ``python scripts/check_fillable_fields.py <file.pdf>`` (https://code.claude.com/docs/en/skills#add-supporting-files).
- Permissions, "Bash": ``Bash(python3:*)`` allows every command line that starts ``python3``
  (https://code.claude.com/docs/en/permissions#bash).
- Plugins reference, "Environment variables": a plugin's scripts are found through ``${CLAUDE_PLUGIN_ROOT}``, "the
  absolute path to your plugin's directory" (https://code.claude.com/docs/en/plugins-reference#environment-variables).

agentloop's own walls stay: the protected-path rule still asks for a line that may write into ``.claude/``, and the
sandbox shows a plugin's or skill's folder read-only (a script cannot change itself or its skill).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.transcript import read_records

_path, _why = sbx.probe()
needs_sandbox = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                   reason=f"no sandbox here: {_why}")

CHECK = """\
import sys
try:
    with open(__file__, "a") as f:
        f.write("# changed\\n")
    print("the script could change itself")
except OSError as exc:
    print("script read-only:", exc.strerror)
print("fillable fields checked in", sys.argv[1])
"""


def _pdf_skill(skills: Path) -> Path:
    """anthropics/skills' pdf skill, reduced: SKILL.md and scripts/check_fillable_fields.py."""
    d = skills / "pdf"
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: pdf\ndescription: Fill PDF forms\n---\n"
                                "Run `python3 scripts/check_fillable_fields.py <file.pdf>` first.\n")
    (d / "scripts" / "check_fillable_fields.py").write_text(CHECK)
    return d


def _user_allows(rule: str) -> None:
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"allow": [rule]}}))


def _bash_output(a: Agent) -> str:
    [r] = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert r["ok"] is True, r
    return str(r["content"])


@needs_sandbox
@pytest.mark.parametrize("level", ["project", "user"])
def test_a_skills_bundled_script_runs_under_the_users_python3_rule_and_cannot_change_itself(
        level: str, proj: Path, scripted: Callable[..., str]) -> None:
    base = proj / ".claude" / "skills" if level == "project" else Path(os.environ["HOME"]) / ".claude" / "skills"
    skill = _pdf_skill(base)
    _user_allows("Bash(python3:*)")
    script = ".claude/skills/pdf/scripts/check_fillable_fields.py" if level == "project" else \
        "~/.claude/skills/pdf/scripts/check_fillable_fields.py"
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": f"python3 {script} form.pdf"}}]},
               {"text": "done"}]
    a = Agent(cwd=str(proj), model=scripted(replies), trust=True)  # -p: nobody to ask
    try:
        assert a.sandbox.active
        assert a.ask("fill the form").answer == "done"
        out = _bash_output(a)
        assert "fillable fields checked in form.pdf" in out
        assert "script read-only: Read-only file system" in out
        assert (skill / "scripts" / "check_fillable_fields.py").read_text() == CHECK
    finally:
        a.close()


@needs_sandbox
def test_an_enabled_plugins_script_runs_in_the_sandbox_from_its_folder_read_only(
        proj: Path, scripted: Callable[..., str]) -> None:
    """A plugin kept under the user's home (hidden from commands but for what is shown) runs its own script,
    which cannot change the plugin."""
    market = Path(os.environ["HOME"]) / "market"
    plugin = market / "plugins" / "ralph-loop"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "ralph-loop"}))
    (plugin / "scripts").mkdir()
    (plugin / "scripts" / "setup.py").write_text(CHECK)
    (market / ".claude-plugin").mkdir()
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps(
        {"name": "m", "owner": {"name": "x"}, "plugins": [{"name": "ralph-loop", "source": "./plugins/ralph-loop"}]}))
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(python3:*)"]},
                                    "extraKnownMarketplaces": {"m": {"source": {"source": "directory", "path": str(market)}}},
                                    "enabledPlugins": {"ralph-loop@m": True}}))
    replies = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {
        "command": f"python3 {plugin.resolve()}/scripts/setup.py loop.md"}}]}, {"text": "done"}]
    a = Agent(cwd=str(proj), model=scripted(replies))
    try:
        assert [p.name for p in a.plugins] == ["ralph-loop"]
        assert a.ask("start the loop").answer == "done"
        out = _bash_output(a)
        assert "fillable fields checked in loop.md" in out and "script read-only: Read-only file system" in out
        assert (plugin / "scripts" / "setup.py").read_text() == CHECK
    finally:
        a.close()


@pytest.mark.parametrize("line,behavior", [
    ("python3 .claude/skills/pdf/scripts/check_fillable_fields.py form.pdf", "allow"),
    ("bash ~/.claude/skills/pdf/run.sh", "allow"),
    ("python3 .claude/skills/pdf/scripts/fill.py .claude/settings.json", "ask"),  # an argument it may write
    ("python3 .claude/skills/x.py > .claude/settings.json", "ask"),
    ("python3 -c 'import os' .claude/settings.json", "ask"),  # inline code: every argument counts
    ("sh -c 'echo x > .claude/x'", "ask"),
    ("cp evil.sh .claude/hooks/x.sh", "ask"),
])
def test_the_protected_path_rule_guards_writes_into_claude_not_running_a_script_there(
        proj: Path, line: str, behavior: str) -> None:
    policy = PermissionPolicy(cwd=str(proj), mode="bypassPermissions")
    assert policy.decide("Bash", {"command": line}).behavior == behavior


def test_a_plugin_folder_holding_a_hidden_path_is_not_shown(tmp_path: Path) -> None:
    """The wall stays whole: ``--plugin-dir ~`` would show the home's credentials; it is refused, and said so."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".claude" / "skills" / "pdf").mkdir(parents=True)
    (home / ".aws" / "plugin").mkdir(parents=True)
    hidden = [str(home / ".ssh"), str(home / ".claude"), str(home / ".aws")]
    shown, warnings = sbx.extension_folders([str(home), str(home / ".claude" / "skills" / "pdf"), str(home / ".aws" / "plugin")],
                                            hidden)
    assert shown == [str(home / ".claude" / "skills" / "pdf")]
    assert len(warnings) == 2 and "holds a folder the sandbox hides" in warnings[0] and "is inside" in warnings[1]
    assert sbx.extension_binds([str(home)], hidden) == []


def test_a_plugin_folder_that_holds_the_workspace_leaves_it_writable(tmp_path: Path) -> None:
    """anthropics/skills cloned as the project, its own marketplace (``source: "./"``) enabled: the plugin's folder is
    the workspace, which stays writable (no read-only bind over it); a plugin inside it is bound read-only."""
    ws = tmp_path / "skills-repo"
    (ws / "skills" / "pdf").mkdir(parents=True)
    assert sbx.extension_binds([str(ws)], [], roots=[str(ws)]) == []
    inner = str(ws / "skills" / "pdf")
    assert sbx.extension_binds([inner], [], roots=[str(ws)]) == ["--ro-bind", inner, inner]
