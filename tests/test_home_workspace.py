"""The home folder as the workspace is said and asked for; toolchain folders show no credential stores.

Claude Code warns before working in the home folder (its trust dialog names the folder; the docs'
"Security" page: "use trust verification for new codebases"), and Codex refuses to treat the home as a
project without being told. agentloop asks in the REPL and, in ``-p``, refuses with the flag that goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


def run(cwd: str, home: Path, model: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(home), HOME=os.environ["HOME"])
    return subprocess.run([AGENTLOOP, "-p", "x", "--model", model, *flags], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_print_mode_in_the_home_folder_refuses_and_names_the_flag(home: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    model = scripted([{"text": "hi"}])
    p = run(os.environ["HOME"], home, model)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "home folder" in p.stderr and "--home-workspace" in p.stderr and p.stdout == ""
    ok = run(os.environ["HOME"], home, model, "--home-workspace")
    assert ok.returncode == 0 and ok.stdout == "hi\n", ok.stderr


def test_a_folder_above_the_home_is_refused_too_and_a_project_folder_is_not(home: Path, proj: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    model = scripted([{"text": "hi"}])
    p = run(os.path.dirname(os.environ["HOME"]), home, model)
    assert p.returncode == 2 and "holds your home folder" in p.stderr
    assert run(str(proj), home, model).stdout == "hi\n"  # negative control: an ordinary folder is not asked about


_path, _why = sbx.probe()


@pytest.mark.skipif(_path is None, reason=f"no sandbox here: {_why}")
def test_toolchain_folders_show_without_uvs_credentials_or_dotnets_certificate_store(tmp_path: Path) -> None:
    h = Path(os.environ["HOME"])
    for rel, text in ((".local/share/uv/credentials/credentials.toml", "uv-secret"),
                      (".local/share/uv/python/marker", "uv-python"),
                      (".dotnet/corefx/cryptography/x509stores/my/cert.pfx", "dotnet-cert"),
                      (".dotnet/sdk/marker", "dotnet-sdk")):
        (h / rel).parent.mkdir(parents=True, exist_ok=True)
        (h / rel).write_text(text + "\n")
    proj = tmp_path / "w"
    proj.mkdir()
    cmd = (f"cat {h}/.local/share/uv/credentials/credentials.toml {h}/.local/share/uv/python/marker"
           f" {h}/.dotnet/corefx/cryptography/x509stores/my/cert.pfx {h}/.dotnet/sdk/marker 2>&1; echo end")
    model = ScriptedModel([reply("", [("Bash", {"command": cmd})]), reply("done")])
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert "uv-python" in out and "dotnet-sdk" in out and "end" in out
    assert "uv-secret" not in out and "dotnet-cert" not in out
