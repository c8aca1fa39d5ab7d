"""The provider keys are in agentloop's memory, never in an environment a process beside it can read.

Linux shows any process of the same user the environment another was
started with (``/proc/PID/environ``, proc(5)): changing ``os.environ``
afterwards does not change it. A hook is a real process started by
agentloop on the host; here it reads the environment of every process above
it, agentloop's included, during a real ``agentloop -p`` run with both keys
set.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

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
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            seen.append(self.headers.get("authorization", ""))
            body = b'{"type":"error","error":{"type":"invalid_request_error","message":"no"}}'
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = [sys.executable, "-m", "agentloop"] if how == "-m" else [os.path.join(os.path.dirname(sys.executable), "agentloop")]
    try:
        p = subprocess.run([*start, "-p", "hi", "--model", "anthropic:claude-x", "--base-url",
                            f"http://127.0.0.1:{server.server_address[1]}", "--max-steps", "1"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "ANTHROPIC_API_KEY": KEYS["ANTHROPIC_API_KEY"]})
    finally:
        server.shutdown()
    assert seen and set(seen) == {f"Bearer {KEYS['ANTHROPIC_API_KEY']}"}, (seen, p.stderr)
    assert KEYS["ANTHROPIC_API_KEY"] not in p.stderr + p.stdout
