"""The provider keys are in agentloop's memory, never in an environment a process beside it can read.

Linux shows any process of the same user the environment another was
started with (``/proc/PID/environ``, proc(5)): changing ``os.environ``
afterwards does not change it. A hook is a real process started by
agentloop on the host; here it reads the environment of every process above
it, agentloop's included, during a real ``agentloop -p`` run with both keys
set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _refusing_provider import refusing_provider
from agentloop.cli.held_keys import HELD_KEYS_FD, key_names

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-held-in-memory-0123456789", "OPENAI_API_KEY": "sk-openai-held-in-memory-0123456789",
        "MY_GATEWAY_KEY": "gw-held-in-memory-0123456789"}

# Walks up from the hook to the top, reading each process's environment and command line.
WALKER = r'''
import json, os, sys
out, pid = [], os.getpid()
while pid > 1:
    def read(name):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"<{exc}>"
    out.append({"pid": pid, "cmdline": read("cmdline").replace("\0", " "), "environ": read("environ")})
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
'''


def _walk_from_a_hook(tmp_path: Path, scripted, *extra: str) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    walker, report = tmp_path / "walker.py", tmp_path / "report.json"
    walker.write_text(WALKER)
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    command = f"{sys.executable} {walker} {report}"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}))
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), "agentloop"), "-p", "hi",
                        "--model", scripted([{"text": "hello"}]), *extra],
                       cwd=work, capture_output=True, text=True, timeout=120,
                       env={**os.environ, **KEYS, "A_PLAIN_SETTING": "kept-through"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "hello"
    chain: list[dict[str, str]] = json.loads(report.read_text())
    return chain


def test_a_hook_finds_no_key_in_the_environment_of_agentloop_or_any_process_above_it(tmp_path: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    chain = _walk_from_a_hook(tmp_path, scripted, "--api-key-env", "MY_GATEWAY_KEY")
    agentloop = [c for c in chain if "agentloop" in c["cmdline"] and "-p hi" in c["cmdline"]]
    assert agentloop, [c["cmdline"] for c in chain]  # the walk reached agentloop itself
    if os.geteuid() == 0:  # root reads it (CAP_SYS_PTRACE); an ordinary user's hook cannot: agentloop is not dumpable
        assert not agentloop[0]["environ"].startswith("<"), agentloop[0]["environ"]  # and could read its environment
        assert f"{HELD_KEYS_FD}=" in agentloop[0]["environ"]  # the restarted agentloop, the keys handed over in a pipe
    hook = chain[0]["environ"].split("\0")
    assert "A_PLAIN_SETTING=kept-through" in hook  # the hook's environment is what it was, minus the keys
    assert not any(v.startswith(f"{HELD_KEYS_FD}=") for v in hook)
    for c in chain:
        for name, value in KEYS.items():
            assert value not in c["environ"], (name, c["cmdline"])


def test_the_reading_a_hook_does_finds_keys_where_a_process_was_started_with_them(tmp_path: Path) -> None:
    """The control: the same reading, on a process started with the keys in its environment, finds them,
    even after the process took them out of its ``os.environ``."""
    code = "import os, sys, time\nfor k in list(os.environ):\n    os.environ.pop(k)\nprint('ready', flush=True)\ntime.sleep(30)\n"
    p = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **KEYS}, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        seen = Path(f"/proc/{p.pid}/environ").read_bytes().decode()
    finally:
        p.kill()
        p.wait()
    assert all(v in seen for v in KEYS.values())


def test_the_held_keys_are_the_providers_and_the_one_api_key_env_names() -> None:
    env = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "MY_GATEWAY_KEY": "g", "GITHUB_TOKEN": "t", "PATH": "/bin"}
    assert key_names(["-p", "hi"], env) == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
    assert key_names(["--api-key-env", "MY_GATEWAY_KEY"], env) == ["ANTHROPIC_API_KEY", "MY_GATEWAY_KEY", "OPENAI_API_KEY"]
    assert key_names(["--api-key-env=MY_GATEWAY_KEY"], env) == ["ANTHROPIC_API_KEY", "MY_GATEWAY_KEY", "OPENAI_API_KEY"]
    assert key_names(["-p", "hi"], {"PATH": "/bin"}) == []


@pytest.mark.parametrize("how", ["-m", "script"])
def test_the_restarted_agentloop_still_sends_the_key_to_its_provider(tmp_path: Path, how: str) -> None:
    """After the restart the key still reaches the provider (as a bearer token, as Anthropic's SDK sends it),
    through ``python -m agentloop`` and the ``agentloop`` script alike."""
    start = [sys.executable, "-m", "agentloop"] if how == "-m" else [os.path.join(os.path.dirname(sys.executable), "agentloop")]
    with refusing_provider() as (url, seen):
        p = subprocess.run([*start, "-p", "hi", "--model", "anthropic:claude-x", "--base-url", url, "--max-steps", "1"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "ANTHROPIC_API_KEY": KEYS["ANTHROPIC_API_KEY"]})
    assert seen and set(seen) == {f"Bearer {KEYS['ANTHROPIC_API_KEY']}"}, (seen, p.stderr)
    assert KEYS["ANTHROPIC_API_KEY"] not in p.stderr + p.stdout


# Reads the memory of the process above it whose command line has "-p hi" (agentloop), looking for the keys.
MEMORY_READER = r'''
import json, os, sys
keys, pid, seen = json.loads(sys.argv[2]), os.getppid(), {}
while pid > 1:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if b"-p\0hi" in f.read():
            break
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
try:
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            a, b = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(a)
                data = mem.read(b - a)
            except OSError:
                continue
            for name, value in keys.items():
                seen[name] = seen.get(name, False) or value.encode() in data
    out = {"read": True, "found": sorted(k for k, v in seen.items() if v)}
except OSError as exc:
    out = {"read": False, "why": str(exc)}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
'''


def _as_a_user(argv: list[str]) -> list[str]:
    """``argv`` run as a process of an ordinary user is: root here runs it without capabilities (no
    ``CAP_SYS_PTRACE``, which reads any process's memory whatever it asked for)."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv is not here to drop the capabilities an ordinary user lacks")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", *argv]


def _memory_reader(tmp_path: Path) -> tuple[Path, Path, str]:
    reader, report = tmp_path / "reader.py", tmp_path / "memory.json"
    reader.write_text(MEMORY_READER)
    # the values go to the reader through a file: a command line holding them would be found in the shell's memory
    (tmp_path / "keys.json").write_text(json.dumps(KEYS))
    command = f"{sys.executable} {reader} {report} \"$(cat {tmp_path / 'keys.json'})\""
    return reader, report, command


def test_a_hook_cannot_read_the_keys_from_agentloops_memory(tmp_path: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    """A user's hook runs on the host, a child of agentloop, with the user's power. On a kernel without Yama
    (or ``ptrace_scope`` 0) such a process may open ``/proc/PID/mem`` of any process of the same user that is
    dumpable (ptrace(2), "Ptrace access mode checking"): agentloop makes itself not dumpable, so the hook
    cannot read its memory, where the keys are."""
    _reader, report, command = _memory_reader(tmp_path)
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}))
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run(_as_a_user([os.path.join(os.path.dirname(sys.executable), "agentloop"), "-p", "hi",
                                   "--model", scripted([{"text": "hello"}])]),
                       cwd=work, capture_output=True, text=True, timeout=120, env={**os.environ, **KEYS})
    assert p.returncode == 0, p.stderr
    seen = json.loads(report.read_text())
    assert seen["read"] is False and "Permission denied" in seen["why"], seen


def test_the_memory_reader_finds_the_keys_in_a_process_that_did_not_hide_its_memory(tmp_path: Path) -> None:
    """The control: the same reader, as the same user, under a process holding the keys in memory only
    (its environment has none) that did not make itself undumpable, reads them."""
    _reader, report, command = _memory_reader(tmp_path)
    holder = ("import json, subprocess, sys\nkeys = json.load(open(sys.argv[1]))\n"
              "subprocess.run(['/bin/sh', '-c', sys.argv[2]], check=True)\n")
    p = subprocess.run(_as_a_user([sys.executable, "-c", holder, str(tmp_path / "keys.json"), command, "-p", "hi"]),
                       capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert p.returncode == 0, p.stderr
    seen = json.loads(report.read_text())
    assert seen == {"read": True, "found": sorted(KEYS)}, seen
