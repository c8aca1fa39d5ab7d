"""Background shells: Bash's ``run_in_background``, ``BashOutput`` and ``KillShell``, under the real bubblewrap.

Claude Code's tools reference (https://code.claude.com/docs/en/settings,
"Tools available to Claude"; interactive mode, "Background bash commands"):
Bash with ``run_in_background: true`` returns a shell id at once; BashOutput
(``bash_id``, optional ``filter``) returns the new output and the status;
KillShell (``shell_id``) stops it. Neither needs permission.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.events import ModelReply, ModelRequest
from agentloop.testing import ScriptedModel, reply

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")


@pytest.fixture
def base() -> Iterator[Path]:
    """Work folders under /var/tmp: the sandbox mounts a directory of its own over /tmp."""
    root = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="agentloop-bg-test-", dir=root))
    try:
        for name in ("proj", "outside", "home/.ssh", "alhome"):
            (d / name).mkdir(parents=True)
        (d / "home" / ".ssh" / "id_ed25519").write_text("SSH-PRIVATE-KEY-planted\n")
        (d / "alhome" / "settings.json").write_text('{"note": "ALHOME-planted"}\n')
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def env_for(base: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
            "AGENTLOOP_HOME": str(base / "alhome"), "OPENAI_API_KEY": "sk-bg-planted-51c0e2"}


def _alive_with(marker: str) -> list[int]:
    """Host pids whose command line holds ``marker``."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def later(seconds: float, name: str, args: dict[str, Any]) -> Callable[[ModelRequest], ModelReply]:
    """A model step that waits (the background shell keeps running) and then calls a tool."""

    def step(_req: ModelRequest) -> ModelReply:
        time.sleep(seconds)
        return reply("", [(name, args)])

    return step


class When:
    """A model step that waits until ``ready(agent, request)`` holds (a generous deadline: on a loaded machine
    the background shell runs late), then calls a tool. A fixed wait would lose on a slow machine."""

    def __init__(self, ready: Callable[[Agent, ModelRequest], bool], name: str, args: dict[str, Any]) -> None:
        self.ready, self.name, self.args = ready, name, args

    def step(self, agent: list[Agent]) -> Callable[[ModelRequest], ModelReply]:
        def step(req: ModelRequest) -> ModelReply:
            deadline = time.monotonic() + 60
            while not self.ready(agent[0], req) and time.monotonic() < deadline:
                time.sleep(0.05)
            return reply("", [(self.name, self.args)])

        return step


def log_of(a: Agent, sid: str = "bash_1") -> str:
    """What background shell ``sid`` printed so far (its log)."""
    try:
        return (Path(a.background.spill_dir) / f"background-{sid}.log").read_text(errors="replace")
    except FileNotFoundError:
        return ""


def ended(a: Agent, _req: ModelRequest | None = None) -> bool:
    """No background shell runs any more."""
    return a.background.running() == []


def run(base: Path, steps: list[Any], *, mode: str = "bypassPermissions", ask: Any = None,
        cli_rules: tuple[tuple[str, str], ...] = ()) -> tuple[list[str], Agent]:
    box: list[Agent] = []
    model = ScriptedModel([*(s.step(box) if isinstance(s, When) else s for s in steps), reply("done")])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode=mode, ask_permission=ask, cli_rules=cli_rules)
    box.append(a)
    try:
        res = a.ask("go")
    finally:
        a.close()
    return [str(m.get("content")) for m in res.messages if m.get("role") == "tool"], a


def _ticks(text: str) -> list[int]:
    return [int(w.split()[1]) for w in text.splitlines() if w.startswith("tick ")]


def test_a_background_loop_keeps_running_its_output_is_read_twice_and_killshell_stops_it(base: Path) -> None:
    marker = f"bgtick{os.getpid()}"
    loop = f"i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.1; done # {marker}"
    outs, _ = run(base, [
        reply("", [("Bash", {"command": loop, "run_in_background": True})]),
        When(lambda a, _: "tick 2\n" in log_of(a), "BashOutput", {"bash_id": "bash_1"}),
        When(lambda a, req: f"tick {_ticks(str(req.messages[-1].get('content')))[-1] + 1}\n" in log_of(a),
             "BashOutput", {"bash_id": "bash_1"}),  # a tick printed since the first read
        reply("", [("KillShell", {"shell_id": "bash_1"})]),
        later(0.3, "BashOutput", {"bash_id": "bash_1"}),
    ])
    assert "bash_1" in outs[0] and "BashOutput" in outs[0]
    first, second = _ticks(outs[1]), _ticks(outs[2])
    assert outs[1].startswith("[shell bash_1: running]") and first[:2] == [1, 2]
    assert second and second[0] == first[-1] + 1  # only what came since the last read
    assert "stopped" in outs[3]
    assert outs[4].startswith("[shell bash_1: killed]")
    assert _alive_with(marker) == []


def test_background_shells_end_with_the_session(base: Path) -> None:
    marker = f"bgend{os.getpid()}"
    outs, _ = run(base, [
        reply("", [("Bash", {"command": f"while true; do sleep 0.2; done # {marker}", "run_in_background": True})]),
        later(0.3, "Bash", {"command": "echo between"}),
    ])
    assert "between" in outs[1]
    deadline = time.monotonic() + 10  # (killed: gone at once; the wait is for a loaded machine)
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive_with(marker) == []  # Agent.close killed it


def test_a_background_command_is_confined_as_a_foreground_one(base: Path) -> None:
    # (the home hidden is the account's and the one agentloop started with, not a HOME in the agent's
    # environment: tests/test_sandbox_reads.py covers it for foreground and background alike)
    cmd = (f"echo x > {base}/outside/bg.txt; cat {base}/alhome/settings.json; "
           "echo OPENAI=${OPENAI_API_KEY:-unset}; echo ok > inside.txt; echo done")
    outs, _ = run(base, [
        reply("", [("Bash", {"command": cmd, "run_in_background": True})]),
        When(ended, "BashOutput", {"bash_id": "bash_1"}),
    ])
    assert "exited with code 0" in outs[1] and "done" in outs[1]
    assert "ALHOME-planted" not in outs[1]
    assert "OPENAI=unset" in outs[1]
    assert not (base / "outside" / "bg.txt").exists()
    assert (base / "proj" / "inside.txt").read_text() == "ok\n"


def test_a_server_in_the_background_serves_on_its_own_loopback(base: Path) -> None:
    port = 20000 + os.getpid() % 20000
    get = f"python3 -c \"import urllib.request as u; print('GOT', u.urlopen('http://127.0.0.1:{port}/').status)\""
    # asked until the server is up (it starts late on a loaded machine)
    cmd = (f"python3 -m http.server {port} --bind 127.0.0.1 & "
           f"for i in $(seq 300); do {get} 2>/dev/null && break; sleep 0.1; done; wait")
    outs, _ = run(base, [
        reply("", [("Bash", {"command": cmd, "run_in_background": True})]),
        When(lambda a, _: "GOT" in log_of(a), "BashOutput", {"bash_id": "bash_1", "filter": "GOT|Serving"}),
        reply("", [("KillShell", {"shell_id": "bash_1"})]),
    ])
    assert "GOT 200" in outs[1], outs[1]
    assert "GET /" not in outs[1]  # the filter consumed the other lines
    assert "stopped" in outs[2]
    assert _alive_with(f"http.server\0{port}") == []


def test_a_later_foreground_call_reaches_a_background_server_and_the_server_survives_it(base: Path) -> None:
    """The dev-server case: start it in the background, then curl it from ordinary Bash calls."""
    port = 20000 + (os.getpid() * 7) % 20000
    (base / "proj" / "index.html").write_text("hello from the server\n")
    get = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/index.html').read().decode())\""
    outs, _ = run(base, [
        reply("", [("Bash", {"command": f"python3 -m http.server {port} --bind 127.0.0.1", "run_in_background": True})]),
        reply("", [("Bash", {"command": f"for i in $(seq 300); do {get} 2>/dev/null && break; sleep 0.1; done"})]),  # once up
        reply("", [("Bash", {"command": get})]),  # the first call's end did not take the server with it
        reply("", [("BashOutput", {"bash_id": "bash_1"})]),
        reply("", [("KillShell", {"shell_id": "bash_1"})]),
        later(0.3, "Bash", {"command": f"{get} 2>&1 | tail -1"}),
    ])
    assert "hello from the server" in outs[1] and "hello from the server" in outs[2], outs
    assert outs[3].startswith("[shell bash_1: running]") and "GET /index.html" in outs[3]
    assert "stopped" in outs[4]
    assert "refused" in outs[5].lower() and "hello" not in outs[5]
    assert _alive_with(f"http.server\0{port}") == []


def test_a_foreground_commands_own_background_children_end_with_the_call(base: Path) -> None:
    """Decided: as in Claude Code, what a foreground command leaves running ends when it returns."""
    outs, _ = run(base, [
        reply("", [("Bash", {"command": "(sleep 0.5; echo hi > late.txt) & echo started"})]),
        later(1.2, "Bash", {"command": "cat late.txt 2>&1 || true"}),
    ])
    assert "started" in outs[0]
    assert "No such file" in outs[1]
    assert not (base / "proj" / "late.txt").exists()


def test_bash_rules_apply_to_a_background_command_and_bashoutput_needs_no_permission(base: Path) -> None:
    outs, _ = run(base, [
        reply("", [("Bash", {"command": "sleep 30", "run_in_background": True})]),
        reply("", [("BashOutput", {"bash_id": "bash_9"})]),
        reply("", [("KillShell", {"shell_id": "bash_9"})]),
    ], mode="default", cli_rules=(("deny", "Bash(sleep:*)"),))
    assert "bash_1" not in outs[0] and "denied" in outs[0].lower()
    assert "no background shell 'bash_9'" in outs[1]  # reached the tool: no permission asked
    assert "no background shell 'bash_9'" in outs[2]


def test_an_unknown_shell_and_a_bad_filter_get_one_clear_line(base: Path) -> None:
    outs, _ = run(base, [
        reply("", [("Bash", {"command": "echo hi", "run_in_background": True})]),
        When(ended, "BashOutput", {"bash_id": "bash_1", "filter": "(unclosed"}),
        reply("", [("BashOutput", {"bash_id": "bash_1"})]),
        reply("", [("KillShell", {"shell_id": "bash_1"})]),
    ])
    assert outs[1].startswith("ERROR: filter: ")
    assert "exited with code 0" in outs[2] and "hi" in outs[2]
    assert "not running" in outs[3]


def test_while_a_background_shell_runs_a_foreground_commands_leftovers_still_end_with_the_call(base: Path) -> None:
    """The background shell's session is spared when a foreground command ends; nothing else is, setsid included."""
    outs, _ = run(base, [
        reply("", [("Bash", {"command": "while true; do sleep 0.2; done", "run_in_background": True})]),
        reply("", [("Bash", {"command": "(sleep 0.5; echo hi > late.txt) & setsid sh -c 'sleep 0.5; echo hi > late2.txt' & echo started"})]),
        later(1.2, "Bash", {"command": "ls late*.txt 2>&1 || true"}),
        reply("", [("BashOutput", {"bash_id": "bash_1"})]),
    ])
    assert "started" in outs[1] and "No such file" in outs[2]
    assert not (base / "proj" / "late.txt").exists() and not (base / "proj" / "late2.txt").exists()
    assert outs[3].startswith("[shell bash_1: running]")


def test_background_shells_end_with_the_session_on_clear_too(base: Path) -> None:
    """/clear starts a new session in the same sandbox: the old session's background shells end with it."""
    marker = f"bgclear{os.getpid()}"
    model = ScriptedModel([reply("", [("Bash", {"command": f"while true; do sleep 0.2; done # {marker}",
                                                "run_in_background": True})]), reply("started")])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions")
    try:
        a.ask("go")
        deadline = time.monotonic() + 30
        while not _alive_with(marker) and time.monotonic() < deadline:  # started: exec'd inside by now
            time.sleep(0.05)
        assert _alive_with(marker)
        a.switch_session(None, "clear")
        deadline = time.monotonic() + 10  # (killed: gone at once; the wait is for a loaded machine)
        while _alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive_with(marker) == []
        assert "BashOutput" in a.registry.names() and a.background.running() == []
    finally:
        a.close()


def test_a_session_with_background_shells_replays_byte_for_byte_and_hooks_match_the_new_tools(base: Path) -> None:
    """Replay (``full``: results from the records, no tool runs) and PreToolUse hooks matched by tool name."""
    from agentloop.replay import replay

    log = base / "hook.log"
    settings = {"hooks": {"PreToolUse": [{"matcher": "BashOutput|KillShell", "hooks": [
        {"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]}}
    (base / "alhome" / "settings.json").write_text(json.dumps(settings))
    outs, a = run(base, [
        reply("", [("Bash", {"command": "echo one; sleep 30", "run_in_background": True})]),
        When(lambda a, _: "one" in log_of(a), "BashOutput", {"bash_id": "bash_1"}),
        reply("", [("KillShell", {"shell_id": "bash_1"})]),
    ])
    assert "one" in outs[1] and "stopped" in outs[2]
    seen = [json.loads(x)["tool_name"] for x in log.read_text().splitlines() if x.strip()]
    assert seen == ["BashOutput", "KillShell"]
    again = replay(a.session.path, mode="full")  # the shell is long gone: the records answer
    assert again.equal, again.summary()


def test_a_sub_agents_background_shell_ends_with_the_session(base: Path) -> None:
    marker = f"bgchild{os.getpid()}"
    model = ScriptedModel([
        reply("", [("Agent", {"description": "d", "prompt": "start it", "isolation": "none"})]),
        reply("", [("Bash", {"command": f"while true; do sleep 0.2; done # {marker}", "run_in_background": True})]),  # the child
        reply("child done"),
        reply("done"),
    ])
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env_for(base), model=model,
              permission_mode="bypassPermissions")
    try:
        a.ask("delegate")
        deadline = time.monotonic() + 30
        while not _alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive_with(marker) and a.background.running() == ["bash_1"]
    finally:
        a.close()
    deadline = time.monotonic() + 10  # (killed: gone at once; the wait is for a loaded machine)
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive_with(marker) == []


def test_unread_output_is_bounded_on_disk_and_the_drop_is_said(tmp_path: Path) -> None:
    from agentloop.agent.tools.background import BackgroundShells, start_background

    shells = BackgroundShells(str(tmp_path / "spill"), cap=1 << 16)
    try:
        out = start_background(shells, "for i in $(seq 1 3000); do echo line-$i-.................................................; done",
                               cwd=str(tmp_path), shell=["bash", "-c"], env=None, sandbox=None)
        assert "bash_1" in out
        deadline = time.monotonic() + 10
        while shells.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        log = tmp_path / "spill" / "background-bash_1.log"
        assert log.stat().st_size <= 1 << 16
        text = shells.output("bash_1")
        assert "exited with code 0" in text and "bytes of unread output were dropped" in text
        assert text.rstrip().endswith("line-3000-.................................................")
        assert "(no new output)" in shells.output("bash_1")
    finally:
        shells.close()
