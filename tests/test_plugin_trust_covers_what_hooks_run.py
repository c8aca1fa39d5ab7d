"""Folder trust covers every file a project-enabled plugin's hooks run, wherever the plugin keeps it.

The trust digest walked the plugin's folder without following linked folders, and took no file outside it:
a plugin whose ``scripts`` is a link to the project's ``tools/``, or whose hook runs
``sh ${CLAUDE_PLUGIN_ROOT}/../../../tools/mark.sh``, had that script rewritten and the new code ran at the next
session with no "changed" question. Claude Code's plugins reference ("Environment variables") names
``${CLAUDE_PLUGIN_ROOT}`` as where a hook's command finds its files; folder trust (record 0015) covers the
files a hook runs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.agent.trust import remember_folder
from test_plugins import _enable, _marketplace


def trusted_then_changed(proj: Path, scripted: Callable[..., str], script: Path) -> tuple[Agent, Agent]:
    """Trust the folder, start once (negative control: trusted, the plugin loads), rewrite ``script``, start
    again; both agents, closed."""
    _enable(proj / ".claude" / "settings.json", proj / "market")
    remember_folder(str(proj), os.environ["AGENTLOOP_HOME"], dict(os.environ))
    a = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    a.close()
    script.write_text(f'#!/bin/sh\ntouch "{proj}/changed-hook-ran"\n')
    b = Agent(cwd=str(proj), model=scripted([{"text": "done"}]))
    try:
        b.ask("format it")
    finally:
        b.close()
    return a, b


def test_a_script_in_a_linked_folder_of_the_plugin_is_covered(proj: Path, scripted: Callable[..., str]) -> None:
    plugin = _marketplace(proj / "market")
    (plugin / ".mcp.json").unlink()
    shutil.move(str(plugin / "scripts"), str(proj / "tools"))
    os.symlink("../../../tools", plugin / "scripts")
    (proj / "tools" / "mark.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/lib.sh"\n')  # no command names lib.sh
    (proj / "tools" / "lib.sh").write_text("true\n")
    a, b = trusted_then_changed(proj, scripted, proj / "tools" / "lib.sh")
    assert a.trust.trusted and [p.name for p in a.plugins] == ["formatter"]
    assert b.trust.status == "changed" and b.plugins == []
    assert not (proj / "changed-hook-ran").exists()


def test_a_script_outside_the_plugin_that_its_hook_names_is_covered(proj: Path, scripted: Callable[..., str]) -> None:
    plugin = _marketplace(proj / "market")
    (plugin / ".mcp.json").unlink()
    (proj / "tools").mkdir()
    (proj / "tools" / "mark.sh").write_text("#!/bin/sh\ntrue\n")
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/../../../tools/mark.sh"}]}]}}))
    a, b = trusted_then_changed(proj, scripted, proj / "tools" / "mark.sh")
    assert a.trust.trusted
    assert b.trust.status == "changed"
    assert not (proj / "changed-hook-ran").exists()
