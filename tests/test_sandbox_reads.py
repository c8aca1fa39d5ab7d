"""What sandboxed commands may read (an allow-list of the home), what they may not rewrite in it, and a
sandbox that cannot start as configured saying so.

Real bubblewrap, real bash, real hooks. Claude Code's settings reference
(https://code.claude.com/docs/en/settings, "Sandbox settings") names
``filesystem.allowRead``, the setting the wall's note points the user to.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.agent.trust import TrustStore, load_for_agent, remember_folder
from agentloop.testing import ScriptedModel, reply

_required = os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") == "1"
_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and not _required, reason=f"no sandbox here: {_why}")


@pytest.fixture
def watch_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write watch and the after-check alone, the backstop: with the creation supervisor on (record 0025),
    these plants are refused before they exist (tests/test_create_supervisor.py)."""
    monkeypatch.setattr(sbx, "SUPERVISE", False)

SECRETS = {
    ".config/git/credentials": "https://u:GIT-CRED-planted@example.com",
    ".config/glab-cli/config.yml": "token: GLAB-planted",
    ".cache/huggingface/token": "HF-planted",
    ".bash_history": "export X=HISTORY-planted",
    ".mozilla/firefox/p.default/cookies.sqlite": "COOKIE-planted",
    ".config/Code/User/globalStorage/state.vscdb": "VSCODE-planted",
    ".ssh/id_rsa": "SSH-KEY-planted",
    "notes/private.txt": "NOTES-planted",
}


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="agentloop-reads-test-", dir=root))
    for name in ("home/proj", "alhome", "home/.cache/pip/wheels"):
        (d / name).mkdir(parents=True)
    for rel, text in SECRETS.items():
        (d / "home" / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / "home" / rel).write_text(text + "\n")
    (d / "home" / ".cache" / "pip" / "wheels" / "marker.txt").write_text("PIP-CACHE-visible\n")
    monkeypatch.setenv("HOME", str(d / "home"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_bash(base: Path, commands: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
             trust: bool | None = None, mode: str = "bypassPermissions", ask: Any = None) -> tuple[list[str], Agent]:
    model = ScriptedModel([reply("", [("Bash", {"command": c})]) for c in commands] + [reply("done")])
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
         "AGENTLOOP_HOME": str(base / "alhome"), **(env or {})}
    a = Agent(cwd=str(cwd or base / "home" / "proj"), home=str(base / "alhome"), env=e, model=model,
              permission_mode=mode, trust=trust, ask_permission=ask)
    try:
        res = a.ask("go")
    finally:
        a.close()
    outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
    assert len(outs) == len(commands), res.messages
    return outs, a


def test_the_home_is_hidden_but_for_the_workspace_and_toolchain_folders(base: Path) -> None:
    (base / "home" / "proj" / "mine.txt").write_text("WORKSPACE-visible\n")
    outs, a = run_bash(base, [
        "for f in " + " ".join(f"~/{r}" for r in SECRETS) + "; do cat $f; done 2>&1; echo end",
        "cat mine.txt ~/.cache/pip/wheels/marker.txt; ls -A ~",
    ])
    for text in SECRETS.values():
        assert text not in outs[0]
    assert "end" in outs[0] and "sandbox.filesystem.allowRead" in outs[0]  # the wall says what hid it and how to allow
    assert "WORKSPACE-visible" in outs[1] and "PIP-CACHE-visible" in outs[1]
    assert ".ssh" not in outs[1] and "notes" not in outs[1]
    assert "allowRead" not in outs[1]  # reading what is shown meets no wall, and gets no note
    assert "home " in a.sandbox.describe()


def test_allow_read_in_the_users_settings_shows_a_folder_of_the_home_but_a_projects_does_not(base: Path) -> None:
    proj = base / "home" / "proj"
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"filesystem": {"allowRead": [f"/{base}/home/.ssh"]}}}))
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"filesystem": {"allowRead": [f"/{base}/home/notes"]}}}))
    outs, a = run_bash(base, ["cat ~/notes/private.txt ~/.ssh/id_rsa 2>&1; echo end"], trust=True)
    assert "NOTES-planted" in outs[0] and "SSH-KEY-planted" not in outs[0]
    assert any("allowRead ignored" in w for w in a.sandbox_settings.warnings)


def test_a_projects_home_variable_does_not_move_the_hiding(base: Path) -> None:
    proj = base / "home" / "proj"
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"env": {"HOME": "/nonexistent"}}))
    outs, a = run_bash(base, [f"echo $HOME; cat {base}/home/.ssh/id_rsa {base}/home/notes/private.txt 2>&1; echo end"],
                       trust=True)
    assert outs[0].startswith("/nonexistent")
    assert os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir) in a.sandbox.homes  # the account's home, whatever HOME says
    assert "SSH-KEY-planted" not in outs[0] and "NOTES-planted" not in outs[0] and "end" in outs[0]


def test_the_users_runtime_folder_is_hidden_whether_or_not_xdg_runtime_dir_is_set(base: Path) -> None:
    st = sbx.settings_from([], mode=None, cwd=str(base), user_home=str(base / "home"))
    sb = sbx.Sandbox.create(st, roots=[str(base / "home" / "proj")], agentloop_home=str(base / "alhome"),
                            user_home=str(base / "home"), runtime_dir=None)
    assert f"/run/user/{os.getuid()}" in sb.hidden
    if os.path.isdir(f"/run/user/{os.getuid()}") and os.listdir(f"/run/user/{os.getuid()}"):
        outs, _ = run_bash(base, ["ls -A /run/user/$(id -u) | wc -l"])
        assert outs[0].strip() == "0"


START_UP = {
    ".bashrc": "f=.bash; echo 'touch PWN' >> ~/${f}rc",
    ".profile": "p=.prof; echo 'touch PWN' >> ~/${p}ile",
    ".config/git/config": "c=.config; mkdir -p ~/$c/git && printf '[core]\\n\\tpager = touch PWN\\n' > ~/$c/git/config",
    ".local/bin/git": "l=.local; mkdir -p ~/$l/bin && printf '#!/bin/sh\\ntouch PWN\\n' > ~/$l/bin/git",
    ".config/systemd/user/x.service": "c=.config; mkdir -p ~/$c/systemd/user && echo '[Service]' > ~/$c/systemd/user/x.service",
    ".config/autostart/x.desktop": "c=.config; mkdir -p ~/$c/autostart && echo '[Desktop Entry]' > ~/$c/autostart/x.desktop",
    ".local/lib/python3.12/site-packages/x.pth": "l=.local; mkdir -p ~/$l/lib/python3.12/site-packages && echo 'import os' > ~/$l/lib/python3.12/site-packages/x.pth",
    ".ssh/authorized_keys": "s=.ss; echo 'ssh-ed25519 AAAA planted' >> ~/${s}h/authorized_keys",
}


def test_with_the_home_as_workspace_start_up_files_stay_as_they_were(base: Path) -> None:
    """The home opened whole to commands by the user's ``allowWrite`` (without it, the home as the workspace
    shows no dot entries at all: ``test_home_allow_list``): start-up files stay read-only or are moved
    aside, credential stores stay hidden."""
    home = base / "home"
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"filesystem": {"allowWrite": [str(home)]}}}))
    (home / ".bashrc").write_text("# mine\n")
    (home / ".profile").write_text("# mine\n")
    creds = [r for r in SECRETS if not r.startswith("notes/")]
    outs, _ = run_bash(base, ["; ".join(START_UP.values()) + "; cat " + " ".join(f"~/{r}" for r in creds) + "; echo end"],
                       cwd=home)
    assert "end" in outs[0]
    for r in creds:  # credentials stay hidden even in a workspace that holds them
        assert SECRETS[r] not in outs[0], r
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert (home / ".profile").read_text() == "# mine\n"
    for rel in START_UP:
        if rel not in (".bashrc", ".profile"):
            assert not (home / rel).exists(), rel
    assert "moved" in outs[0] or "Read-only" in outs[0]


def test_write_and_edit_in_accept_edits_ask_before_touching_start_up_files_of_the_home(base: Path) -> None:
    home = base / "home"
    (home / ".bashrc").write_text("# mine\n")
    asked: list[str] = []
    model = ScriptedModel([
        reply("", [("Write", {"file_path": str(home / rel), "content": "planted\n"})])
        for rel in (".ssh/authorized_keys", ".ssh/config", ".claude.json", ".bashrc", ".local/bin/ls")
    ] + [reply("done")])
    e = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "AGENTLOOP_HOME": str(base / "alhome")}
    a = Agent(cwd=str(home), home=str(base / "alhome"), env=e, model=model, permission_mode="acceptEdits",
              ask_permission=lambda *q: asked.append(str(q)) or "deny")
    try:
        a.ask("go")
    finally:
        a.close()
    assert len(asked) == 5
    assert not (home / ".ssh" / "authorized_keys").exists() and not (home / ".claude.json").exists()
    assert (home / ".bashrc").read_text() == "# mine\n"


def _hooked(proj: Path, base: Path) -> None:
    (proj / "scripts").mkdir(parents=True, exist_ok=True)
    # a project's hook runs in the sandbox (record 0015): its log goes in the workspace
    (proj / "scripts" / "lint.sh").write_text(f"echo linted >> {proj}/lint-log\n")
    (proj / ".claude").mkdir(exist_ok=True)
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh scripts/lint.sh"}]}]}}))


def test_a_trusted_hooks_script_cannot_be_rewritten_from_the_sandbox(base: Path) -> None:
    proj = base / "home" / "proj"
    _hooked(proj, base)
    outs, _ = run_bash(base, [f"d=scripts; echo 'touch {base}/pwned' >> $d/lint.sh; echo end", "echo again"], trust=True)
    assert "Read-only file system" in outs[0]
    assert not (base / "pwned").exists()
    assert (proj / "lint-log").read_text() == "linted\nlinted\n"  # the trusted script ran after each call


def test_write_and_edit_ask_before_changing_a_trusted_hooks_script(base: Path) -> None:
    proj = base / "home" / "proj"
    _hooked(proj, base)
    asked: list[str] = []
    model = ScriptedModel([
        reply("", [("Write", {"file_path": str(proj / "scripts" / "lint.sh"), "content": f"touch {base}/pwned\n"})]),
        reply("", [("Edit", {"file_path": "scripts/lint.sh", "old_string": "echo linted", "new_string": f"touch {base}/pwned; echo"})]),
        reply("", [("Bash", {"command": "true"})]),
        reply("done"),
    ])
    e = {"PATH": os.environ.get("PATH", ""), "HOME": str(base / "home"), "AGENTLOOP_HOME": str(base / "alhome")}
    a = Agent(cwd=str(proj), home=str(base / "alhome"), env=e, model=model, permission_mode="acceptEdits", trust=True,
              ask_permission=lambda *q: asked.append(str(q)) or ("deny" if "lint.sh" in str(q) else "allow"))
    try:
        a.ask("go")
    finally:
        a.close()
    assert sum("lint.sh" in q for q in asked) == 2
    assert not (base / "pwned").exists() and "linted" in (proj / "lint-log").read_text()


def test_a_hooks_script_changed_since_trust_asks_again(base: Path) -> None:
    proj = base / "home" / "proj"
    _hooked(proj, base)
    env = {"HOME": str(base / "home"), "AGENTLOOP_HOME": str(base / "alhome")}
    remember_folder(str(proj), str(base / "alhome"), env)
    assert load_for_agent(str(proj), str(base / "alhome"), env).decision.status == "trusted"
    (proj / "scripts" / "lint.sh").write_text(f"touch {base}/pwned\n")
    d = load_for_agent(str(proj), str(base / "alhome"), env).decision
    assert d.status == "changed" and not d.trusted
    assert TrustStore(str(base / "alhome")).get(str(proj)) is not None


def test_agentloop_installed_under_tmp_keeps_the_sessions_sandbox(tmp_path: Path) -> None:
    """agentloop's interpreter under /tmp stays visible through the sandbox's private /tmp, so the
    session's runner starts; a venv under /tmp on the commands' PATH shows too (read-only)."""
    mine = Path(tempfile.mkdtemp(prefix="agentloop-venv-test-", dir="/tmp"))
    theirs = Path(tempfile.mkdtemp(prefix="agentloop-venv-test-", dir="/tmp"))
    try:
        for v in (mine, theirs):
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(v)], check=True)
        site = next((mine / "lib").glob("python*/site-packages"))
        src = Path(__file__).resolve().parent.parent / "src"
        (site / "agentloop-src.pth").write_text("\n".join([str(src), *(p for p in sys.path if p.endswith("site-packages"))]) + "\n")
        proj = tmp_path / "proj"
        proj.mkdir()
        script = (
            "import os\nfrom agentloop.agent.agent import Agent\nfrom agentloop.testing import ScriptedModel, reply\n"
            "m = ScriptedModel([reply('', [('Bash', {'command': 'echo in; python -c \"import sys; print(sys.prefix)\"'})]), reply('ok')])\n"
            f"env = {{**os.environ, 'PATH': {str(theirs / 'bin')!r} + ':' + os.environ['PATH']}}\n"
            f"a = Agent(cwd={str(proj)!r}, home={str(tmp_path / 'al')!r}, env=env, model=m, permission_mode='bypassPermissions')\n"
            "r = a.ask('go')\nprint([x['content'] for x in r.messages if x.get('role') == 'tool'][0])\n"
            "print('runner', a.sandbox.use_runner, a.sandbox.degraded)\na.close()\n"
        )
        p = subprocess.run([str(mine / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert f"in\n{theirs}" in p.stdout
        assert "runner True None" in p.stdout
    finally:
        shutil.rmtree(mine, ignore_errors=True)
        shutil.rmtree(theirs, ignore_errors=True)


def test_a_runner_that_cannot_start_is_said_not_swapped_in_silence(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sbx, "_RUNNER", "import sys; sys.stderr.write('runner refused here\\n'); sys.exit(3)")
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["example.com"]}}}))
    outs, a = run_bash(base, ["echo one", "echo two"])
    assert outs[0].startswith("one") and "could not start" in outs[0] and "runner refused here" in outs[0]
    assert "allowedDomains" in outs[0] and "network is off" in outs[0]
    assert "could not start" not in outs[1]  # said once in the results, and in /sandbox
    assert "could not start" in a.sandbox.describe()


@pytest.mark.usefixtures("watch_alone")
def test_a_start_up_file_that_is_a_link_keeps_pointing_where_it_did(base: Path) -> None:
    """Dotfiles kept elsewhere and linked in (stow, chezmoi): the link's target is read-only, a
    replaced link is moved aside and put back, and a link left alone is left alone. (The home is made
    writable as a whole by the user's ``allowWrite``: without it, the home as the workspace shows no
    dotfiles at all, ``test_home_allow_list``.)"""
    home = base / "home"
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"filesystem": {"allowWrite": [str(home)]}}}))
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "zshrc").write_text("# mine\n")
    (home / "dotfiles" / "bashrc").write_text("# mine too\n")
    (home / ".zshrc").symlink_to("dotfiles/zshrc")
    (home / ".bashrc").symlink_to("dotfiles/bashrc")
    outs, _ = run_bash(base, [
        "z=.zsh; echo 'touch PWN' >> ~/${z}rc; rm ~/${z}rc && echo 'touch PWN' > ~/${z}rc; echo end",
        "echo second",
    ], cwd=home)
    assert "end" in outs[0] and "put back" in outs[0]
    assert os.readlink(home / ".zshrc") == "dotfiles/zshrc" and (home / "dotfiles" / "zshrc").read_text() == "# mine\n"
    assert os.readlink(home / ".bashrc") == "dotfiles/bashrc"  # untouched: not moved
    assert "moved" not in outs[1]
