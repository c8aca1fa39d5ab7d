"""Bash runs inside a real bubblewrap sandbox.

Everything here runs real commands under the real ``bwrap``. The work folders
are made under ``/var/tmp``, not ``/tmp``: the sandbox mounts a per-session
directory over ``/tmp``, which would hide paths there whatever else it did,
and these tests must show each guard working on its own.

Claude Code's settings reference (https://code.claude.com/docs/en/settings,
"Sandbox settings") is the shape of the ``sandbox`` key: ``enabled``,
``failIfUnavailable``, ``excludedCommands``, ``allowUnsandboxedCommands``,
``filesystem.allowWrite/denyWrite/denyRead``, ``network.allowedDomains``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

KEY = "sk-sbx-planted-7c1e5b2d40a9f3"

_required = os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") == "1"
_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and not _required, reason=f"no sandbox here: {_why}")


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="agentloop-sbx-test-", dir=root))
    # the user's home is this one (as who started agentloop says), besides the account's own
    monkeypatch.setenv("HOME", str(d / "home"))
    try:
        for name in ("proj", "outside", "home/.ssh", "home/.aws", "alhome"):
            (d / name).mkdir(parents=True)
        (d / "outside" / "keep.txt").write_text("outside\n")
        (d / "home" / ".ssh" / "id_ed25519").write_text("SSH-PRIVATE-KEY-planted\n")
        (d / "home" / ".aws" / "credentials").write_text("aws_secret_access_key=AWS-planted\n")
        (d / "home" / ".netrc").write_text("machine x login y password NETRC-planted\n")
        (d / "alhome" / "settings.json").write_text('{"note": "ALHOME-planted"}\n')
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
        Path(f"{d}-pwned").unlink(missing_ok=True)  # left by a sabotaged run (scripts/negative_control.py)


def env_for(base: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
        "AGENTLOOP_HOME": str(base / "alhome"), "OPENAI_API_KEY": KEY, **extra,
    }


def run_bash(base: Path, commands: list[str], *, ask: Any = None, mode: str = "bypassPermissions",
             sandbox: str | None = None, env: dict[str, str] | None = None, trust: bool | None = None) -> tuple[list[str], Agent, ScriptedModel]:
    """Run each command as one Bash call of one turn; the tool outputs as the model got them."""
    model = ScriptedModel([reply("", [("Bash", {"command": c})]) for c in commands] + [reply("done")])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env or env_for(base), model=model,
              permission_mode=mode, ask_permission=ask, sandbox=sandbox, trust=trust)
    try:
        res = a.ask("go")
    finally:
        a.close()
    outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
    assert len(outs) == len(commands), res.messages
    return outs, a, model


def test_a_command_cannot_write_outside_the_workspace_and_is_told_why(base: Path) -> None:
    outs, a, _ = run_bash(base, [
        f"echo pwned > {base}/outside/new.txt; echo pwned >> {base}/outside/keep.txt; touch {base}/../{base.name}-pwned;"
        " echo ok > inside.txt",
    ])
    assert a.sandbox.active
    assert not (base / "outside" / "new.txt").exists()
    assert (base / "outside" / "keep.txt").read_text() == "outside\n"
    assert not (base.parent / f"{base.name}-pwned").exists()
    assert (base / "proj" / "inside.txt").read_text() == "ok\n"  # the workspace itself is writable
    assert "Read-only file system" in outs[0] and "[sandbox:" in outs[0] and "ask the user" in outs[0]


def test_a_command_cannot_read_the_agentloop_home_or_credentials(base: Path) -> None:
    (base / "run").mkdir()
    (base / "run" / "bus").write_text("SESSION-BUS-planted\n")  # stands for the session bus socket
    outs, _, _ = run_bash(base, [
        f"cat {base}/alhome/settings.json ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc $XDG_RUNTIME_DIR/bus; echo end",
        "ls -A ~/.ssh ~/.aws $XDG_RUNTIME_DIR",
    ], env=env_for(base, XDG_RUNTIME_DIR=str(base / "run")))
    for planted in ("ALHOME-planted", "SSH-PRIVATE-KEY-planted", "AWS-planted", "NETRC-planted", "SESSION-BUS-planted"):
        assert planted not in outs[0]
    assert "end" in outs[0] and "hidden from commands" in outs[0]
    assert "id_ed25519" not in outs[1] and "credentials" not in outs[1] and "bus" not in outs[1]


def test_a_command_cannot_plant_git_hooks_or_agentloop_settings(base: Path) -> None:
    proj = base / "proj"
    (proj / ".git" / "hooks").mkdir(parents=True)
    (proj / ".git" / "config").write_text("[core]\n")
    (proj / ".agentloop").mkdir()
    # the paths are built at run time, so no permission rule can see them: the sandbox is what stops the writes
    outs, _, _ = run_bash(base, [
        "g=.g; g=${g}it; a=.agent; a=${a}loop; echo 'touch PWNED' > $g/hooks/post-checkout; echo '[core] hooksPath=/x' >> $g/config;"
        " echo '{}' > $a/settings.local.json; echo end",
    ])
    assert not (proj / ".git" / "hooks" / "post-checkout").exists()
    assert (proj / ".git" / "config").read_text() == "[core]\n"
    assert not (proj / ".agentloop" / "settings.local.json").exists()
    assert "Read-only file system" in outs[0]


class _Listener:
    """A TCP listener on 127.0.0.1, outside the sandbox, counting connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            c.close()

    def close(self) -> None:
        self.stop = True
        self.t.join()
        self.sock.close()


def test_a_command_cannot_reach_the_network_and_is_told_why(base: Path) -> None:
    lst = _Listener()
    try:
        probe = f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {lst.port}), timeout=3); print('CONNECTED')\""
        outs, _, _ = run_bash(base, [probe])
        assert lst.accepted == 0 and "CONNECTED" not in outs[0]
        assert "the network is off" in outs[0]
        # the same command unsandboxed does connect: the listener is reachable from here
        outs, _, _ = run_bash(base, [probe], sandbox="danger-full-access")
        deadline = time.monotonic() + 30
        while lst.accepted == 0 and time.monotonic() < deadline:  # the listener's thread accepts in its own time
            time.sleep(0.05)
        assert lst.accepted == 1 and "CONNECTED" in outs[0]
    finally:
        lst.close()


def _alive_with(marker: str) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


@pytest.mark.parametrize("how", ["setsid", "double fork", "nohup", "disown"])
def test_nothing_a_command_starts_outlives_the_call(base: Path, how: str) -> None:
    n = f"{700 + os.getpid() % 200}.{abs(hash(how)) % 1000:03d}"
    start = {
        "setsid": f"setsid sleep {n} > /dev/null 2>&1 < /dev/null &",
        "double fork": f"( (sleep {n} > /dev/null 2>&1 &) & )",
        "nohup": f"nohup sleep {n} > /dev/null 2>&1 &",
        "disown": f"sleep {n} > /dev/null 2>&1 & disown",
    }[how]
    marker = f"sleep\0{n}"
    between: list[list[int]] = []

    def second(request: Any) -> Any:  # after the first call, before the next: the session goes on
        deadline = time.monotonic() + 10  # (killed: gone at once; the wait is for a loaded machine)
        while _alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        between.append(_alive_with(marker))
        return reply("", [("Bash", {"command": "cat /proc/[0-9]*/comm 2>/dev/null | grep -x sleep | wc -l"})])

    model = ScriptedModel([reply("", [("Bash", {"command": f"{start} sleep 0.3; echo started"})]), second, reply("done")])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
        outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
        assert "started" in outs[0]
        assert between == [[]]  # gone on the host as soon as the call ended
        assert outs[1] == "0"  # and inside the sandbox, where the next command runs
    finally:
        a.close()
        for pid in _alive_with(f"sleep\0{n}"):
            os.kill(pid, 9)


def test_ordinary_work_runs_unchanged_in_the_sandbox(base: Path) -> None:
    (base / "proj" / "Makefile").write_text("all: out.txt\nout.txt:\n\techo built > out.txt\n")
    outs, _, _ = run_bash(base, [
        f"{sys.executable} -c \"import tempfile; f = tempfile.NamedTemporaryFile(); print('py', 6 * 7)\"",
        "(git init -q /tmp/repo && cd /tmp/repo && echo hi > a.txt && git add a.txt"
        " && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline | wc -l)",
        f"cd {base}/proj && make -s && cat out.txt && echo tmp > /tmp/x && cat /tmp/x",
    ])
    assert outs[0] == "py 42"
    assert outs[1] == "1"
    assert outs[2] == "built\ntmp"
    # a new repository is made in the sandbox's /tmp: in the workspace it is refused (test_create_supervisor.py)


def test_read_only_mode_keeps_the_workspace_read_only(base: Path) -> None:
    outs, _, _ = run_bash(base, ["echo x > inside.txt; cat /proc/self/status | grep -c Cap"], sandbox="read-only")
    assert not (base / "proj" / "inside.txt").exists()
    assert "Read-only file system" in outs[0]


def test_without_a_sandbox_every_bash_call_asks_and_failifunavailable_refuses_to_start(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(sbx.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))
    asked: list[str] = []

    def ask(call: Any, decision: Any) -> str:
        asked.append(decision.reason)
        return "deny"

    outs, a, _ = run_bash(base, ["echo hi"], ask=ask)  # bypassPermissions would have allowed it
    assert not a.sandbox.active
    assert asked and "sandbox is unavailable" in asked[0]
    assert "refused" in outs[0]
    assert any("apt-get install bubblewrap" in n for n in a.startup_notices)
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"failIfUnavailable": True}}))
    with pytest.raises(AgentError, match="failIfUnavailable"):
        Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=ScriptedModel([]))


def test_a_project_cannot_turn_the_sandbox_off_but_the_user_can(base: Path) -> None:
    proj = base / "proj"
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"sandbox": {
        "enabled": False, "excludedCommands": ["touch"], "network": {"allowAll": True, "allowedDomains": ["x.org"]},
        "filesystem": {"allowWrite": [str(base / "outside")]}}}))
    # even a trusted project cannot weaken the sandbox (an untrusted one's sandbox key is left out whole)
    outs, a, _ = run_bash(base, [f"touch {base}/outside/p1"], trust=True)
    assert a.sandbox.active and a.sandbox.settings.mode == "workspace-write" and not a.sandbox.settings.network
    assert not (base / "outside" / "p1").exists()
    warned = "\n".join(a.startup_notices)
    for key in ("enabled", "excludedCommands", "network.allowAll", "filesystem.allowWrite", "allowedDomains"):
        assert key in warned
    # the same in the user's own settings: honoured
    (proj / ".agentloop" / "settings.json").unlink()
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {
        "filesystem": {"allowWrite": [str(base / "outside")]}, "network": {"allowedDomains": ["x.org"]}}}))
    outs, a, _ = run_bash(base, [f"touch {base}/outside/p2"])
    assert (base / "outside" / "p2").exists() and not a.sandbox.settings.network
    assert a.sandbox.settings.allowed_domains == ("x.org",) and a.startup_notices == []


def test_an_excluded_command_runs_outside_and_always_asks(base: Path) -> None:
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"excludedCommands": ["touch"]}}))
    asked: list[str] = []

    def ask(call: Any, decision: Any) -> str:
        asked.append(call.arguments["command"])
        return "allow"

    target = base / "outside" / "made"
    outs, a, _ = run_bash(base, [f"touch {target}", f"touch {target}-2; touch {target}-3"], ask=ask)
    assert target.exists()  # excluded: it ran outside, after asking
    assert asked == [f"touch {target}"]  # a compound line is not excluded: sandboxed, rules decide
    assert not Path(f"{target}-2").exists()


def test_the_sandbox_state_is_described_for_slash_sandbox(base: Path) -> None:
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=ScriptedModel([]))
    try:
        text = a.sandbox.describe()
    finally:
        a.close()
    assert "sandbox: on, workspace-write" in text and "network: off" in text
    assert str(base / "home" / ".ssh") in text and str(base / "alhome") in text


def test_a_timed_out_command_is_killed_with_all_it_started_and_the_next_call_runs(base: Path) -> None:
    n = f"{600 + os.getpid() % 90}.5"
    model = ScriptedModel([
        reply("", [("Bash", {"command": f"cd sub 2>/dev/null || mkdir sub && cd sub; setsid sleep {n} & sleep {n}", "timeout": 700})]),
        reply("", [("Bash", {"command": "pwd; echo again"})]),
        reply("done"),
    ])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions")
    try:
        t0 = time.monotonic()
        res = a.ask("go")
        outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
        assert time.monotonic() - t0 < 10
        assert "timed out" in outs[0]
        assert outs[1].endswith("again")
        assert _alive_with(f"sleep\0{n}") == []
    finally:
        a.close()
        for pid in _alive_with(f"sleep\0{n}"):
            os.kill(pid, 9)


def test_commands_of_a_session_share_one_sandbox_and_cd_carries_over(base: Path) -> None:
    outs, a, _ = run_bash(base, ["mkdir -p d && cd d && echo $TMPDIR > /tmp/t", "pwd; cat /tmp/t"])
    assert outs[1] == f"{base}/proj/d\n/tmp"
    assert a.sandbox.use_runner  # one bubblewrap for the session, not one per call


def test_a_sub_agents_bash_is_sandboxed_and_its_output_redacted(base: Path) -> None:
    from agentloop.transcript import read_records

    (base / "proj" / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    model = ScriptedModel([
        reply("", [("Agent", {"description": "d", "prompt": "look", "subagent_type": "general-purpose"})]),
        reply("", [("Bash", {"command": f"cat .env; touch {base}/outside/by-child"})]),  # the child
        reply("child done"),
        reply("done"),
    ])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions")
    try:
        a.ask("delegate")
    finally:
        a.close()
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    child = Path(sub["transcript"])
    results = [r.payload for r in read_records(str(child)) if r.kind == "tool_result"]
    assert len(results) == 1 and "[redacted: " in str(results[0]) and "Read-only file system" in str(results[0])
    assert KEY not in child.read_text() and not (base / "outside" / "by-child").exists()


def test_without_a_sandbox_a_sub_agent_cannot_run_bash_for_it_cannot_ask(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.transcript import read_records

    real_which = shutil.which
    monkeypatch.setattr(sbx.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))
    model = ScriptedModel([
        reply("", [("Agent", {"description": "d", "prompt": "look", "subagent_type": "general-purpose"})]),
        reply("", [("Bash", {"command": "touch by-child"})]),  # the child
        reply("child done"),
        reply("done"),
    ])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions", ask_permission=lambda c, d: "allow")
    try:
        a.ask("delegate")
    finally:
        a.close()
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    results = [r.payload for r in read_records(sub["transcript"]) if r.kind == "tool_result"]
    assert len(results) == 1 and "sandbox is unavailable" in str(results[0].get("error"))
    assert not (base / "proj" / "by-child").exists()


def test_slash_sandbox_in_the_repl_shows_the_state(base: Path) -> None:
    import subprocess

    agentloop = os.path.join(os.path.dirname(sys.executable), "agentloop")
    (base / "empty.json").write_text("[]")
    env = {**os.environ, **env_for(base), "NO_COLOR": "1"}
    p = subprocess.run([agentloop, "--model", f"scripted:{base / 'empty.json'}", "--sandbox", "read-only"],
                       input="/help\n/sandbox\n/exit\n", cwd=base / "proj", env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "/sandbox — show the Bash sandbox" in p.stdout
    assert "sandbox: on, read-only (from --sandbox)" in p.stdout and "network: off" in p.stdout
    assert str(base / "home" / ".ssh") in p.stdout


def test_a_sub_agent_in_a_worktree_can_write_there(base: Path) -> None:
    import subprocess

    from agentloop.transcript import read_records

    proj = base / "proj"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=proj, check=True)
    (proj / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], cwd=proj, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=proj, check=True)
    model = ScriptedModel([
        reply("", [("Agent", {"description": "d", "prompt": "edit", "isolation": "worktree"})]),
        reply("", [("Bash", {"command": "echo changed > a.txt && echo new > b.txt && git status --short"})]),  # the child
        reply("child done"),
        reply("done"),
    ])
    a = Agent(cwd=str(proj), home=str(base / "alhome"), env=env_for(base), model=model, permission_mode="bypassPermissions")
    try:
        a.ask("delegate")
    finally:
        a.close()
    (sub,) = [r.payload for r in read_records(a.session.path) if r.kind == "subagent"]
    results = [r.payload for r in read_records(sub["transcript"]) if r.kind == "tool_result"]
    assert results[0].get("content") == " M a.txt\n?? b.txt", results
    assert sub["worktree"]["applied"] == "applied"  # written in its worktree, then applied to the checkout
    assert (proj / "a.txt").read_text() == "changed\n" and (proj / "b.txt").read_text() == "new\n"


def test_allowed_domains_are_reachable_through_the_proxy_and_nothing_else(base: Path) -> None:
    import http.server

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"HELLO from " + self.path.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    (base / "alhome" / "settings.json").write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["localhost"]}}}))
    fetch = f"{sys.executable} -c \"import urllib.request as u, sys; print(u.urlopen(sys.argv[1], timeout=5).read().decode())\""
    connect = (f"{sys.executable} -c \"import socket; s = socket.create_connection(('127.0.0.1', 3128));"
               f" s.sendall(b'CONNECT localhost:{port} HTTP/1.1\\r\\n\\r\\n'); print(s.recv(100).split(b'\\r\\n')[0].decode());"
               f" s.sendall(b'GET /tunnel HTTP/1.0\\r\\n\\r\\n');"  # read to the end: the body may come after the headers
               f" print(b''.join(iter(lambda: s.recv(4096), b'')).split(b'\\r\\n\\r\\n')[-1].decode())\"")
    try:
        outs, a, _ = run_bash(base, [
            f"{fetch} http://localhost:{port}/allowed",
            f"{fetch} http://127.0.0.1:{port}/denied",
            f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)\"",
            connect,
        ])
    finally:
        srv.shutdown()
        srv.server_close()
    assert outs[0] == "HELLO from /allowed"
    assert "403" in outs[1] and "HELLO" not in outs[1] and "the proxy refused 127.0.0.1" in outs[1]
    assert "Connection refused" in outs[2] or "unreachable" in outs[2]  # no way around the proxy
    assert outs[3] == "HTTP/1.1 200 Connection established\nHELLO from /tunnel"
    assert "network: only localhost" in a.sandbox.describe()


def test_an_added_root_directory_does_not_uncover_the_hidden_paths_or_the_sessions_tmp(base: Path, tmp_path: Path) -> None:
    """--add-dir / (a folder's additionalDirectories: ["/"], trusted) makes the disk writable, but the
    credentials stay hidden and /tmp stays the session's: the mounts go parents before children."""
    cmd = (f"cat {base}/home/.ssh/id_ed25519 2>/dev/null || echo KEY-HIDDEN; "
           f"test -e {tmp_path} && echo HOST-TMP-SEEN || echo SESSION-TMP; echo RAN")
    model = ScriptedModel([reply("", [("Bash", {"command": cmd})]), reply("done")])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions", add_dirs=["/"])
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert a.sandbox.active and "RAN" in out, out
    assert "KEY-HIDDEN" in out and "SSH-PRIVATE-KEY" not in out
    assert "SESSION-TMP" in out
