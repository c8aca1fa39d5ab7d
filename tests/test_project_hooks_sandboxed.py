"""A project's hooks run inside the sandbox, so what the model rewrites in the workspace cannot reach the host.

Claude Code's hooks reference: a hook's ``command`` is a shell command run
with the project directory as its working directory (``$CLAUDE_PROJECT_DIR``),
commonly a script of the repository (``"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh``).
Such a command runs files the model can write: the script behind a ``cd``, a
module the script imports, a Makefile. agentloop runs a handler from a project
or local settings file in a bubblewrap of its own with a Bash command's
mounts (record 0015); a handler from the user's own settings runs on the host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _wait import until
from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

HOOKS = ["cd scripts && ./check", "python3 scripts/check.py", "make -s lint"]


def _evil(n: int, proj: Path, outside: Path, key_file: Path) -> str:
    """Shell lines that try to reach the host: a marker outside the workspace, agentloop's own environment, a key
    (what they read goes to ``leak-N.txt`` at the workspace's top, whatever folder the hook ran in)."""
    leak = f"{proj}/leak-{n}.txt"
    return (f"touch {outside}/marker-{n} 2>/dev/null; "
            f"{{ cat /proc/{os.getpid()}/environ; cat {key_file}; }} > {leak} 2>&1; echo ran >> {leak}")


@pytest.fixture
def repo(tmp_path: Path, private_homes: dict[str, Path]) -> dict[str, Path]:
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "scripts").mkdir(parents=True)
    outside.mkdir()
    (proj / "scripts" / "check").write_text("#!/bin/sh\necho fine\n")
    (proj / "scripts" / "check").chmod(0o755)
    (proj / "scripts" / "check.py").write_text("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport helper\nhelper.run()\n")
    (proj / "scripts" / "helper.py").write_text("def run():\n    pass\n")
    (proj / "Makefile").write_text("lint:\n\t@true\n")
    home = private_homes["agentloop"]
    home.mkdir(parents=True, exist_ok=True)
    key_file = home / "credentials.json"
    key_file.write_text('{"anthropic": "sk-ant-PLANTED-KEY"}\n')
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": c} for c in HOOKS]}]}}))
    return {"proj": proj, "outside": outside, "key": key_file, "home": home}


def _rewrite(repo: dict[str, Path]) -> str:
    """The model's Bash call (sandboxed, the workspace writable): each hook's code replaced by an attack."""
    p, o, k = repo["proj"], repo["outside"], repo["key"]
    helper = f"import subprocess\ndef run():\n    subprocess.run({_evil(2, p, o, k)!r}, shell=True)\n"
    return "\n".join([
        f"printf '%s\\n' '#!/bin/sh' {json.dumps(_evil(1, p, o, k))} > scripts/check",
        f"cat > scripts/helper.py <<'EOF'\n{helper}EOF",
        f"printf 'lint:\\n\\t@%s\\n' {json.dumps(_evil(3, p, o, k).replace('$', '$$'))} > Makefile",
        "echo rewritten",
    ])


def _run(repo: dict[str, Path]) -> list[dict[str, object]]:
    model = ScriptedModel([reply("", [("Bash", {"command": _rewrite(repo)})]), reply("done")])
    a = Agent(cwd=str(repo["proj"]), model=model, trust=True, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    return [m for m in res.messages if m.get("role") == "tool"]


def test_a_project_hook_runs_the_rewritten_code_inside_the_sandbox(repo: dict[str, Path]) -> None:
    (tool,) = _run(repo)
    assert "rewritten" in str(tool["content"])
    for n in (1, 2, 3):
        leak = repo["proj"] / f"leak-{n}.txt"
        assert leak.exists(), f"hook {HOOKS[n - 1]!r} did not run the rewritten code"  # it ran...
        text = leak.read_text()
        assert "ran" in text
        assert "PATH=" not in text and "PLANTED-KEY" not in text, (HOOKS[n - 1], text)  # ...without the host's secrets
        assert not (repo["outside"] / f"marker-{n}").exists(), HOOKS[n - 1]  # ...and wrote nothing outside


def test_a_hook_in_the_users_own_settings_runs_on_the_host(repo: dict[str, Path]) -> None:
    (repo["proj"] / ".claude" / "settings.json").unlink()
    (repo["home"] / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"touch {repo['outside']}/user-hook"}]}]}}))
    model = ScriptedModel([reply("", [("Bash", {"command": "echo hi"})]), reply("done")])
    a = Agent(cwd=str(repo["proj"]), model=model, trust=True, permission_mode="bypassPermissions")
    try:
        a.ask("go")
    finally:
        a.close()
    assert (repo["outside"] / "user-hook").exists()


def test_a_projects_background_hook_in_the_sandbox_ends_with_the_session(repo: dict[str, Path]) -> None:
    """Hooks reference, ``async: true``: a background hook belongs to its session; in the sandbox too."""
    import time

    late = repo["proj"] / "late"
    (repo["proj"] / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"touch {repo['proj']}/started; sleep 2; touch {late}", "async": True, "timeout": 60}]}]}}))
    model = ScriptedModel([reply("", [("Bash", {"command": "echo hi"})]), reply("done")])
    a = Agent(cwd=str(repo["proj"]), model=model, trust=True, permission_mode="bypassPermissions")
    try:
        a.ask("go")
        until(lambda: (repo["proj"] / "started").exists())
    finally:
        a.close()
    assert (repo["proj"] / "started").exists()
    time.sleep(3)
    assert not late.exists(), "a background hook outlived its session"


def test_a_hook_from_any_file_inside_the_workspace_is_confined_wherever_it_was_loaded_from(tmp_path: Path) -> None:
    """A repository's own plugin loads its hooks as the user's do; its file is in the workspace, so it is confined."""
    from agentloop.agent.hooks.runner import HookRunner
    from agentloop.config.settings import SettingsSource

    proj, elsewhere = tmp_path / "proj", tmp_path / "home" / ".claude"
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    inside = SettingsSource(str(proj / "tools" / "plugin" / "hooks" / "hooks.json"), "user", hooks)
    outside = SettingsSource(str(elsewhere / "settings.json"), "user", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "false"}]}]}})
    r = HookRunner.from_settings([outside, inside], project_dir=str(proj))
    assert {h.command: h.confined for h in r.handlers} == {"true": True, "false": False}
