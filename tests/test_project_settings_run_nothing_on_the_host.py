"""What a trusted project's settings name runs in the sandbox, never on the host with the user's power.

Folder trust approves a project's settings as written; the files they name
(``scripts/key.sh``, ``scripts/env.sh``) stay writable by the model's
sandboxed commands, so a command that runs them on the host runs the model's
code there (record 0015). A project's hooks already run in the sandbox; here
the other ways a project's settings start a program: ``apiKeyHelper``
(settings reference: "Custom script, to be executed in /bin/sh, to generate an
auth value"), ``statusLine`` (status line docs: a command given the session on
stdin) and ``env`` (settings reference: "Environment variables that will be
applied to every session"), which would reach the user's own hooks on the host
(``BASH_ENV`` is read by every non-interactive bash, bash(1), INVOCATION).

Each planted program leaves a mark outside the workspace, where nothing in the
sandbox can write: the mark is proof it ran on the host.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _refusing_provider import refusing_provider
from agentloop.agent.agent import Agent

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """``ws``: a trusted project's folder; the marks go beside it (outside the sandbox's reach)."""
    (tmp_path / "ws" / ".claude").mkdir(parents=True)
    (tmp_path / "ws" / "scripts").mkdir()
    return tmp_path


def _plant(site: Path, name: str, then: str = "") -> str:
    """``scripts/NAME.sh`` in the workspace: leaves ``mark-NAME`` beside the workspace, then runs ``then``."""
    (site / "ws" / "scripts" / f"{name}.sh").write_text(f"touch {site}/mark-{name} 2>/dev/null\n{then}\n")
    return f"scripts/{name}.sh"


def _settings(where: Path, data: dict[str, object]) -> None:
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(data))


def _run(site: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AGENTLOOP, "-p", "hi", "--trust", *args], cwd=site / "ws", capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture
def fake_anthropic() -> Iterator[tuple[str, list[str]]]:
    """A server answering every request with a 400, keeping the bearer tokens it was sent."""
    with refusing_provider() as got:
        yield got


def _helper_run(site: Path, url: str, settings_file: Path) -> subprocess.CompletedProcess[str]:
    _settings(settings_file, {"apiKeyHelper": f"sh {_plant(site, 'key', 'echo sk-from-the-helper')}"})
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    return subprocess.run([AGENTLOOP, "-p", "hi", "--trust", "--model", "anthropic:claude-x", "--base-url", url,
                           "--max-steps", "1"], cwd=site / "ws", capture_output=True, text=True, timeout=120, env=env)


def test_a_projects_api_key_helper_runs_in_a_jail_and_its_key_is_still_sent(
        site: Path, fake_anthropic: tuple[str, list[str]]) -> None:
    url, seen = fake_anthropic
    p = _helper_run(site, url, site / "ws" / ".claude" / "settings.json")
    assert seen and set(seen) == {"Bearer sk-from-the-helper"}, (seen, p.stderr)
    assert not (site / "mark-key").exists()  # it ran, but not on the host


def test_a_users_api_key_helper_still_runs_on_the_host(site: Path, fake_anthropic: tuple[str, list[str]]) -> None:
    """The control: the same helper from the user's own settings runs where it always did, and leaves its mark."""
    url, seen = fake_anthropic
    p = _helper_run(site, url, Path(os.environ["HOME"]) / ".claude" / "settings.json")
    assert seen and set(seen) == {"Bearer sk-from-the-helper"}, (seen, p.stderr)
    assert (site / "mark-key").exists()


@pytest.mark.parametrize("inside", [True, False])
def test_a_settings_file_named_on_the_command_line_inside_the_workspace_runs_as_a_projects(
        site: Path, fake_anthropic: tuple[str, list[str]], inside: bool) -> None:
    """Claude Code's ``--settings`` loads "additional settings" from a file the user names (CLI reference). The
    model's sandboxed commands can rewrite a file inside the workspace, so such a file is treated as a project's:
    its key helper runs in the jail (no mark on the host) and a line says so. The same file beside the workspace
    is the user's own and runs on the host (the control)."""
    url, seen = fake_anthropic
    where = site / "ws" / "mine.json" if inside else site / "mine.json"
    _settings(where, {"apiKeyHelper": f"sh {site / 'ws' / _plant(site, 'key', 'echo sk-from-the-helper')}"})
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    p = subprocess.run([AGENTLOOP, "-p", "hi", "--trust", "--settings", str(where), "--model", "anthropic:claude-x",
                        "--base-url", url, "--max-steps", "1"], cwd=site / "ws", capture_output=True, text=True,
                       timeout=120, env=env)
    assert seen and set(seen) == {"Bearer sk-from-the-helper"}, (seen, p.stderr)
    assert (site / "mark-key").exists() is not inside, p.stderr
    assert ("inside the workspace, which sandboxed commands can write" in p.stderr) is inside, p.stderr


def test_a_projects_env_does_not_reach_the_users_hook_on_the_host(site: Path, scripted: Callable[..., str]) -> None:
    """A project's ``env`` sets ``BASH_ENV`` to a workspace file and a variable of its own; the user's hook (bash,
    on the host) neither runs that file nor sees the variable, and still sees what the user's own settings set;
    the project's own hook, in the sandbox, sees the project's variable."""
    env_sh = _plant(site, "env")
    _settings(site / "ws" / ".claude" / "settings.json", {
        "env": {"BASH_ENV": str(site / "ws" / env_sh), "FROM_THE_PROJECT": "p"},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo \"$FROM_THE_PROJECT\" > project-hook.txt"}]}]}})
    report = site / "user-hook.txt"
    _settings(Path(os.environ["HOME"]) / ".claude" / "settings.json", {
        "env": {"FROM_THE_USER": "u"},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                   "command": f"echo \"[$FROM_THE_PROJECT] [$FROM_THE_USER]\" > {report}"}]}]}})
    p = _run(site, "--model", scripted([{"text": "hello"}]))
    assert p.returncode == 0, p.stderr
    assert report.read_text() == "[] [u]\n"
    assert (site / "ws" / "project-hook.txt").read_text() == "p\n"
    assert not (site / "mark-env").exists()


def test_the_planted_bash_env_runs_in_a_bash_started_with_it(site: Path) -> None:
    """The control: the same ``BASH_ENV`` given to a plain ``bash -c true`` on the host runs the file."""
    env_sh = _plant(site, "env")
    subprocess.run(["bash", "-c", "true"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                               "BASH_ENV": str(site / "ws" / env_sh)}, check=True, timeout=30)
    assert (site / "mark-env").exists()


@pytest.mark.parametrize("whose", ["project", "user"])
def test_a_projects_status_line_runs_in_the_sandbox_and_a_users_on_the_host(
        site: Path, scripted: Callable[..., str], whose: str) -> None:
    from agentloop.cli.repl import Repl

    command = f"sh {site / 'ws' / _plant(site, 'status', 'echo drawn')}"
    where = site / "ws" / ".claude" / "settings.json" if whose == "project" else Path(os.environ["HOME"]) / ".claude" / "settings.json"
    _settings(where, {"statusLine": {"type": "command", "command": command}})
    repl = Repl(argparse.Namespace(), None, interactive=False)
    repl.agent = Agent(cwd=str(site / "ws"), trust=True, model=scripted([]))
    try:
        assert repl.agent.sandbox.active
        assert repl.status_line() == "drawn"
    finally:
        repl.agent.close()
    assert (site / "mark-status").exists() is (whose == "user")


def test_a_projects_env_does_not_reach_the_users_mcp_server(site: Path, scripted: Callable[..., str]) -> None:
    """A stdio server from the user's settings starts on the host (settings reference, ``mcpServers``): it starts
    without the project's ``env`` (a ``NODE_OPTIONS`` or ``PATH`` there would choose what it runs), and with the
    user's own settings' ``env``, also in its ``${VAR}`` expansion."""
    report = site / "server-env.txt"
    _settings(site / "ws" / ".claude" / "settings.json", {"env": {"FROM_THE_PROJECT": "p", "ARG": "from-the-project"}})
    _settings(Path(os.environ["HOME"]) / ".claude" / "settings.json", {
        "env": {"FROM_THE_USER": "u"},
        "mcpServers": {"mine": {"command": "sh", "args": [
            "-c", f"echo \"[$FROM_THE_PROJECT] [$FROM_THE_USER] [$0]\" > {report}", "${ARG:-none}"]}}})
    p = _run(site, "--model", scripted([{"text": "hello"}]), env={"MCP_TIMEOUT": "5000"})
    assert p.returncode == 0, p.stderr
    assert report.read_text() == "[] [u] [none]\n"


def test_the_sign_in_browser_imports_nothing_from_the_home_it_starts_in(site: Path) -> None:
    """An MCP sign-in opens the browser through Python's ``webbrowser``, started in the home folder (which may be
    the workspace, writable by the model): isolated (``python -I``), a ``webbrowser.py`` there does not run."""
    import time

    from agentloop.agent import spawn

    home = Path(os.environ["HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "webbrowser.py").write_text(f"open({str(site / 'mark-shadow')!r}, 'w').close()\n")
    spawn.open_url("http://127.0.0.1:9/x", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                                               "BROWSER": "true"})
    time.sleep(2)
    assert not (site / "mark-shadow").exists()
    subprocess.run([sys.executable, "-m", "webbrowser", "-t", "http://127.0.0.1:9/x"], cwd=home, timeout=30,
                   env={"PATH": os.environ.get("PATH", ""), "BROWSER": "true"})
    assert (site / "mark-shadow").exists()  # the control: not isolated, the planted module runs


@pytest.mark.parametrize("whose", ["project", "user"])
def test_the_sign_in_browser_is_not_chosen_by_a_projects_env(site: Path, scripted: Callable[..., str], whose: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``webbrowser`` starts the program ``BROWSER`` names (Python's docs, webbrowser): a project's ``env`` does not
    reach the browser the REPL opens for an MCP sign-in; the user's own settings' does."""
    import time

    from agentloop.cli.repl import Repl

    monkeypatch.delenv("AGENTLOOP_NO_BROWSER", raising=False)
    browser = f"sh {site / 'ws' / _plant(site, 'browser')} %s"
    where = site / "ws" / ".claude" / "settings.json" if whose == "project" else Path(os.environ["HOME"]) / ".claude" / "settings.json"
    _settings(where, {"env": {"BROWSER": browser}})
    repl = Repl(argparse.Namespace(), None, interactive=False)
    repl.agent = Agent(cwd=str(site / "ws"), trust=True, model=scripted([]))
    try:
        repl._open_url("http://127.0.0.1:9/x")
        for _ in range(50):
            if (site / "mark-browser").exists():
                break
            time.sleep(0.1)
    finally:
        repl.agent.close()
    assert (site / "mark-browser").exists() is (whose == "user")


def test_the_users_env_file_is_sourced_on_the_host_without_a_projects_env(site: Path, scripted: Callable[..., str]) -> None:
    """A user's SessionStart hook writes ``export`` lines to ``CLAUDE_ENV_FILE`` (hooks docs, "Persisting
    environment variables"); agentloop sources that file with bash on the host to carry them to Bash. That bash
    starts without the project's ``env`` (its ``BASH_ENV`` would run a workspace file), and the export still
    reaches the model's Bash."""
    env_sh = _plant(site, "env")
    _settings(site / "ws" / ".claude" / "settings.json", {"env": {"BASH_ENV": str(site / "ws" / env_sh)}})
    _settings(Path(os.environ["HOME"]) / ".claude" / "settings.json", {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "echo 'export CARRIED=yes' >> \"$CLAUDE_ENV_FILE\""}]}]}})
    p = _run(site, "--permission-mode", "bypassPermissions", "--model", scripted([
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo carried=$CARRIED > carried.txt"}}]}, {"text": "ok"}]))
    assert p.returncode == 0, p.stderr
    assert (site / "ws" / "carried.txt").read_text() == "carried=yes\n"
    assert not (site / "mark-env").exists()


@pytest.mark.parametrize("inside", [True, False])
def test_a_settings_file_named_on_the_command_line_inside_the_workspace_widens_nothing(
        site: Path, scripted: Callable[..., str], inside: bool) -> None:
    """The same file's ``env`` stays off the host's processes and its ``UnsandboxedBash`` rule is dropped, as a
    project's are, when it lies in the workspace; beside it, both are the user's own (the control)."""
    where = site / "ws" / "mine.json" if inside else site / "mine.json"
    _settings(where, {"env": {"FROM_THE_FILE": "f"}, "permissions": {"allow": ["UnsandboxedBash(make:*)"]}})
    a = Agent(cwd=str(site / "ws"), trust=True, model=scripted([]), cli_settings=[str(where)])
    try:
        on_host = "FROM_THE_FILE" in a.secrets.host_env
        rule = any(b.rule.text == "UnsandboxedBash(make:*)" for b in a.policy.rules)
    finally:
        a.close()
    assert on_host is not inside and rule is not inside
