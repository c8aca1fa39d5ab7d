"""The home folder as the workspace is shown to sandboxed commands through an allow-list.

When the user works in the home folder anyway (``--home-workspace``, or yes in the REPL), commands see its
project content (the entries that do not start with a dot) writable, toolchains read-only, and nothing
else: credential stores, agent sockets and start-up files are not there, so a start-up file a command
writes never reaches the disk and the user's next ``bash -i`` or ``vim`` runs nothing new.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing, "Filesystem isolation"):
commands write the working directory; its settings page names ``filesystem.allowRead`` and
``filesystem.allowWrite`` as how the user opens more, which is how a hidden part of the home is added.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

SECRETS = {
    ".config/github-copilot/hosts.json": "copilot-secret",
    ".gemini/oauth_creds.json": "gemini-secret",
    ".cache/huggingface/stored_tokens": "hf-secret",
    ".config/sops/age/keys.txt": "age-secret",
    ".terraform.d/credentials.tfrc.json": "tf-secret",
    ".pulumi/credentials.json": "pulumi-secret",
    ".minikube/profiles/minikube/client.key": "minikube-secret",
    ".config/Bitwarden/data.json": "bitwarden-secret",
    ".local/share/uv/credentials/credentials.toml": "uv-secret",
    ".wget-hsts": "hsts-secret",
    ".config/zsh/.zsh_history": "history-secret",
    ".docker/config.json": "docker-secret",
    "snap/firefox/common/.mozilla/firefox/p/cookies.sqlite": "cookie-secret",
}

PLANTS = (
    ".vimrc", ".bashrc", ".bashrc.d/late.sh", ".profile", ".config/nvim/init.lua", ".gdbinit", ".Rprofile",
    ".tmux.conf", ".ipython/profile_default/startup/00-x.py",
)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="agentloop-home-test-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    h = d / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("AGENTLOOP_HOME", str(d / "al"))
    for rel, text in SECRETS.items():
        (h / rel).parent.mkdir(parents=True, exist_ok=True)
        (h / rel).write_text(text + "\n")
    (h / ".bashrc").write_text('for f in "$HOME"/.bashrc.d/*.sh; do [ -r "$f" ] && . "$f"; done\n')
    (h / ".vimrc").write_text("set nocompatible\n")
    (h / "proj").mkdir()
    (h / "proj" / "main.py").write_text("print('hi')\n")
    (h / "notes.txt").write_text("notes\n")
    (h / ".cache" / "pip").mkdir(parents=True)
    (h / ".cache" / "pip" / "marker").write_text("pip-cache\n")
    try:
        yield h
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bash(home: Path, command: str) -> str:
    """One Bash call in the sandbox of an agent working in ``home``; its output."""
    model = ScriptedModel([reply("", [("Bash", {"command": command})]), reply("done")])
    a = Agent(cwd=str(home), home=os.environ["AGENTLOOP_HOME"], model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    return str([m for m in res.messages if m.get("role") == "tool"][0]["content"])


def test_credential_stores_and_agent_sockets_in_the_home_are_not_there_for_commands(home: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(home / ".bitwarden-ssh-agent.sock"))
    try:
        files = " ".join(str(home / rel) for rel in SECRETS)
        out = bash(home, f"cat {files} 2>/dev/null; test -S {home}/.bitwarden-ssh-agent.sock && echo socket-there;"
                         f" cat {home}/proj/main.py {home}/notes.txt {home}/.cache/pip/marker; echo end")
    finally:
        sock.close()
    assert "print('hi')" in out and "notes" in out and "pip-cache" in out and "end" in out
    leaked = [s for s in SECRETS.values() if s in out]
    assert not leaked, f"readable from the sandbox: {leaked}"
    assert "socket-there" not in out
    assert "credential stores, start-up files" in out  # the model is told why, and how the user opens more


def test_start_up_files_a_command_writes_never_reach_the_disk_and_host_shells_run_nothing_new(home: Path) -> None:
    marker = home.parent / "ran"
    planted = {
        ".vimrc": f'call writefile(["vim"], "{marker}")',
        ".bashrc": f"echo bashrc >> {marker}",
        ".bashrc.d/late.sh": f"echo bashrc.d >> {marker}",
        ".profile": f"echo profile >> {marker}",
        ".config/nvim/init.lua": f'io.open("{marker}", "a"):write("nvim")',
        ".gdbinit": f"shell echo gdb >> {marker}",
        ".Rprofile": f'cat("R", file="{marker}")',
        ".tmux.conf": f"run-shell 'echo tmux >> {marker}'",
        ".ipython/profile_default/startup/00-x.py": f"open('{marker}', 'a').write('ipython')",
    }
    assert set(planted) == set(PLANTS)
    before = {rel: (home / rel).read_text() if (home / rel).exists() else None for rel in planted}
    script = "; ".join(f"mkdir -p $(dirname {home}/{rel}); printf '%s\\n' {_sh(text)} >> {home}/{rel}"
                       for rel, text in planted.items())
    (home / "proj" / "plant.sh").write_text(script + "\n")  # a repository's script: the command line alone names nothing
    out = bash(home, f"sh {home}/proj/plant.sh; echo written > {home}/proj/out.txt; echo end")
    assert "end" in out and "never reaches the disk" not in out  # the script named no home path: no note
    assert (home / "proj" / "out.txt").read_text() == "written\n", "project content is writable"
    after = {rel: (home / rel).read_text() if (home / rel).exists() else None for rel in planted}
    assert after == before, "a start-up file changed on disk"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb"}
    subprocess.run(["bash", "-i", "-c", "true"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    if shutil.which("vim"):  # -es skips the vimrc unless it is named: name it, as a plain `vim` would read it
        subprocess.run(["vim", "-es", "-u", str(home / ".vimrc"), "-c", "qa!"], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=30)
    if shutil.which("gdb"):
        subprocess.run(["gdb", "-batch"], env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    if shutil.which("ipython"):  # reads ~/.ipython/profile_default/startup
        subprocess.run(["ipython", "-c", "pass"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    if shutil.which("tmux"):  # reads ~/.tmux.conf; a server of its own, ended at once
        sock = str(home.parent / "tmux.sock")
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "sleep 1"], env=env, capture_output=True, timeout=30)
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env, capture_output=True, timeout=30)
    assert not marker.exists(), f"a host tool ran planted code: {marker.read_text()}"


def test_a_path_the_user_adds_with_allow_read_shows_again(home: Path) -> None:
    settings = Path(os.environ["AGENTLOOP_HOME"]) / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"sandbox": {"filesystem": {"allowRead": [f"{home}/.config/github-copilot"]}}}))
    out = bash(home, f"cat {home}/.config/github-copilot/hosts.json {home}/.gemini/oauth_creds.json 2>&1; echo end")
    assert "copilot-secret" in out and "gemini-secret" not in out


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_start_up_file_the_user_makes_on_the_host_meanwhile_is_left_alone(home: Path) -> None:
    """Commands cannot reach the home's start-up files, so one the user makes during a command is theirs:
    the watch does not move it aside as it would one a command made in a home open to commands."""
    import threading

    (home / ".bashrc").unlink()

    def make() -> None:  # once the command runs (its plan made while there was no ~/.bashrc)
        import time

        deadline = time.monotonic() + 60
        while not (home / "proj" / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        (home / ".bashrc").write_text("# mine\n")

    t = threading.Thread(target=make)
    t.start()
    try:
        out = bash(home, f"touch {home}/proj/started; sleep 2; echo end")
    finally:
        t.join()
    assert "end" in out and "moved" not in out, out
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not list(home.glob(".bashrc.blocked*"))
