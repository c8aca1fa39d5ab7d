"""Planted secrets never appear in any byte agentloop writes.

Planted: a provider API key (sent as ``Authorization: Bearer …`` to a local
fake provider that requires it), an Authorization header passed as a secret
tool argument, a plain secret argument, and a sensitive tool's output. Then
every file under the run's directories (transcripts, anchors, session files,
spilled tool output, logs) and everything printed (stdout, stderr, error
messages) is scanned for each secret, raw and in the encodings a writer might
use (JSON escapes, base64, hex, URL-encoding).

A negative control plants a secret where it is allowed to show (the user's
own prompt) and checks the scanner finds it.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from agentloop import Budget, run, tool
from agentloop.audit.anchor import attach_tree, write_anchor_for
from agentloop.providers import ProviderError, open_model
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import TranscriptWriter, verify_file

KEY = "sk-planted-KEY-7f3a9c1e5b2d4068aa11"
AUTH = "Bearer tok-planted-AUTH-55e0c2b9d1f3"
ARG = "pw-planted-ARG-c0ffee1234"
OUT = "out-planted-SENSITIVE-9d8e7f6a5b"
SECRETS = {"provider key": KEY, "authorization header": AUTH, "secret argument": ARG, "sensitive output": OUT}


def forms(s: str) -> list[bytes]:
    b = s.encode()
    return [b, json.dumps(s).encode()[1:-1], base64.b64encode(b), b.hex().encode(), urllib.parse.quote(s).encode(), s[4:-4].encode()]


def scan(blobs: dict[str, bytes]) -> list[str]:
    found = []
    for where, data in blobs.items():
        for what, secret in SECRETS.items():
            for f in forms(secret):
                if f in data:
                    found.append(f"{what} in {where}")
                    break
    return found


def files_under(*roots: Path) -> dict[str, bytes]:
    out = {}
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file():
                out[str(p)] = p.read_bytes()
    return out


@tool(secret_args=("$.password", "$.headers[*]"))
def login(user: str, password: str, headers: dict[str, str]) -> str:
    """Log in (echoes what it got, as a careless tool would)."""
    return f"logged in {user} with {password} and {headers}"


@tool(sensitive=True)
def vault(name: str) -> str:
    """Read a secret from the vault."""
    return f"{name}={OUT}"


SCRIPT = [
    {"tool_calls": [{"name": "login", "arguments": {"user": "bob", "password": ARG, "headers": {"Authorization": AUTH}}}], "usage": {"input_tokens": 10, "output_tokens": 5}},
    {"tool_calls": [{"name": "vault", "arguments": {"name": "db"}}], "usage": {"input_tokens": 10, "output_tokens": 5}},
    {"text": "done", "usage": {"input_tokens": 10, "output_tokens": 5}},
]


def test_library_run_writes_no_planted_secret_anywhere(tmp_path: Path) -> None:
    log_path = tmp_path / "agentloop.log"
    handler = logging.FileHandler(log_path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger("agentloop")
    old_level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    messages: list[str] = []
    try:
        with FakeProvider({"replies": SCRIPT, "require_key": KEY}) as fp:
            m = open_model("openai:gpt-4o-mini", base_url=fp.url + "/v1", api_key=KEY, env={}, record_raw=True)
            path = tmp_path / "run.jsonl"
            with TranscriptWriter(path, durability="fsync") as w:
                tree = attach_tree(w)
                res = run(m, [login, vault], "log in and read the db secret", Budget(max_steps=5), transcript=w,
                          model_name="gpt-4o-mini", redaction_salt=b"salt")
            write_anchor_for(str(path), tree=tree)
            assert res.answer == "done" and verify_file(path).ok
            # the tools really ran with the secrets (so there was something to leak)
            results = [json.loads(line)["payload"] for line in path.read_bytes().splitlines() if b'"tool_result"' in line]
            assert len(results) == 2
            # error messages: a wrong key is refused; the message names neither key
            bad = open_model("openai:gpt-4o-mini", base_url=fp.url + "/v1", api_key=KEY[::-1] + "x", env={}, max_attempts=1)
            with pytest.raises(ProviderError) as ei:
                from agentloop.events import ModelRequest

                bad.complete(ModelRequest([{"role": "user", "content": "x"}], (), 10))
            messages.append(str(ei.value))
            path2 = tmp_path / "failed.jsonl"
            with TranscriptWriter(path2) as w2:
                r2 = run(bad, [login], "x", Budget(max_steps=2), transcript=w2, model_name="gpt-4o-mini")
            messages.append(str(r2.error))
            assert r2.error
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(old_level)
    blobs = files_under(tmp_path)
    blobs["error messages"] = "\n".join(messages).encode()
    assert any(p.endswith(".anchor.json") for p in blobs)
    assert scan(blobs) == []
    # the reversed key from the failing call must not show either
    assert not any(KEY[::-1].encode() in b for b in blobs.values())


def test_agent_cli_writes_no_planted_key_in_session_logs_spills_or_output(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    big = "\n".join(f"line {i} {'x' * 40}" for i in range(400))  # over 10,000 characters: spilled
    (proj / "big.txt").write_text(big)
    script = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "cat big.txt"}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "big.txt"}}]},
        {"text": "done"},
    ]
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(home), NO_COLOR="1", OPENAI_API_KEY=KEY)
    agentloop = os.path.join(os.path.dirname(sys.executable), "agentloop")
    with FakeProvider({"replies": script, "require_key": KEY}) as fp:
        p = subprocess.run(
            [agentloop, "-p", "show big.txt", "--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1",
             "--permission-mode", "bypassPermissions", "--verbose"],
            cwd=proj, env=env, capture_output=True, text=True, timeout=120,
        )
        assert p.returncode == 0, p.stderr
        # and a refused key: the error line names the problem, not the key
        env_bad = {**env, "OPENAI_API_KEY": KEY + "-wrong"}
        q = subprocess.run(
            [agentloop, "-p", "x", "--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1"],
            cwd=proj, env=env_bad, capture_output=True, text=True, timeout=120,
        )
        assert q.returncode != 0
    blobs = files_under(home, proj)
    spilled = [k for k in blobs if "tool-results" in k]
    sessions = [k for k in blobs if k.endswith(".jsonl")]
    assert sessions, "the session was written"
    assert spilled, f"a long tool output was spilled: {sorted(blobs)}"
    for name, text in (("stdout", p.stdout), ("stderr", p.stderr), ("stdout (bad key)", q.stdout), ("stderr (bad key)", q.stderr)):
        blobs[name] = text.encode()
    assert scan(blobs) == []


def test_scanner_finds_a_secret_where_one_is_planted_in_the_open(tmp_path: Path) -> None:
    # negative control: the user's own prompt is recorded as given, so the scanner must see it
    path = tmp_path / "t.jsonl"
    from agentloop.testing import ScriptedModel, reply

    with TranscriptWriter(path) as w:
        run(ScriptedModel([reply("ok")]), None, f"my key is {KEY}", Budget(max_steps=1), transcript=w)
    assert scan(files_under(tmp_path)) == [f"provider key in {path}"]
    assert scan({"b64": base64.b64encode(OUT.encode())}) == ["sensitive output in b64"]
