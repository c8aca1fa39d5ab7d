"""Planted secrets never appear in any byte agentloop writes.

Planted: a provider API key (sent as ``Authorization: Bearer …`` to a local
fake provider that requires it), an Authorization header passed as a secret
tool argument, a plain secret argument, and a sensitive tool's output. Then
every file under the run's directories (transcripts, anchors, session files,
spilled tool output, logs) and everything printed (stdout, stderr, error
messages) is scanned for each secret, raw and in the encodings a writer might
use (JSON escapes, base64, hex, URL-encoding).

Before searching, the scanner rebuilds what a reader could: every JSON string
with its escapes decoded, and every server-sent event stream found in a
record (``record_raw``) with each field joined from its deltas
(``function.arguments``, ``partial_json``, text): a secret argument streamed
in 8-character fragments is in no single place, but it is in the joined form.

A negative control plants a secret where it is allowed to show (the user's
own prompt) and checks the scanner finds it, and streams one in fragments.
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
from typing import Any

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


_FRAGMENT_KEYS = ("arguments", "partial_json", "text", "content", "thinking")


def _strings(v: Any, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            _strings(x, out)
    elif isinstance(v, list):
        for x in v:
            _strings(x, out)


def _fragments(v: Any, joined: dict[str, list[str]], where: str = "") -> None:
    """Stream deltas by the field they extend (``function.arguments`` of call 0, ``partial_json`` of block 1...)."""
    if isinstance(v, dict):
        idx = v.get("index")
        for k, x in v.items():
            here = f"{where}/{idx if isinstance(idx, int) else ''}{k}"
            if k in _FRAGMENT_KEYS and isinstance(x, str):
                joined.setdefault(here, []).append(x)
            else:
                _fragments(x, joined, here)
    elif isinstance(v, list):
        for x in v:
            _fragments(x, joined, where)


def _sse_joined(text: str) -> list[str]:
    """The fields a server-sent event stream builds up, each joined from its deltas."""
    joined: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                _fragments(json.loads(line[5:].strip()), joined)
            except ValueError:
                continue
    out = ["".join(parts) for parts in joined.values()]
    for whole in list(out):
        try:  # the joined arguments are JSON themselves: their strings, decoded
            _strings(json.loads(whole), out)
        except ValueError:
            pass
    return out


def views(data: bytes) -> list[bytes]:
    """The bytes, and what a reader rebuilds from them: every JSON string with its escapes
    decoded, and in each event stream found there, each field joined from its fragments."""
    out = [data]
    for line in data.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        strings: list[str] = []
        _strings(obj, strings)
        for st in strings:
            out.append(st.encode("utf-8", "surrogatepass"))
            if "data:" in st:
                out += [j.encode("utf-8", "surrogatepass") for j in _sse_joined(st)]
    return out


def scan(blobs: dict[str, bytes]) -> list[str]:
    found = []
    for where, data in blobs.items():
        seen = views(data)
        for what, secret in SECRETS.items():
            if any(f in v for f in forms(secret) for v in seen):
                found.append(f"{what} in {where}")
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
                          model_name="gpt-4o-mini", redaction_salt=b"salt", record_raw=True)
            write_anchor_for(str(path), tree=tree)
            assert res.answer == "done" and verify_file(path).ok
            turns = [json.loads(line)["payload"] for line in path.read_bytes().splitlines() if b'"model_turn"' in line]
            assert turns and all("raw" in t for t in turns)  # the raw streams were recorded
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
    # a secret argument streamed in 8-character fragments, as a raw record keeps it: found once joined
    args = json.dumps({"password": ARG})
    events = "".join(
        "data: " + json.dumps({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 8]}}]}}]}) + "\n\n"
        for i in range(0, len(args), 8)
    )
    line = json.dumps({"kind": "model_turn", "payload": {"raw": {"stream": events}}}).encode()
    assert not any(f in line for f in forms(ARG))  # no whole form in the bytes themselves
    assert scan({"raw": line}) == ["secret argument in raw"]


@pytest.mark.parametrize("sandbox", ["workspace-write", "danger-full-access"])
def test_bash_and_read_put_no_provider_key_in_the_session_spills_or_next_request(tmp_path: Path, sandbox: str) -> None:
    """Issue 16: ``printenv OPENAI_API_KEY``, ``cat /proc/$PPID/environ`` and reading a ``.env``
    holding the key put it into the transcript and the next model request. Bash's environment no
    longer carries it, and known secret values are redacted from tool output before anything else
    sees it (unsandboxed, ``/proc/$PPID/environ`` is the agent's own: only redaction stops it there)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".env").write_text(f"OPENAI_API_KEY={KEY}\nOTHER=1\n")
    script = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "printenv OPENAI_API_KEY; env | grep -c KEY; echo end"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/self/environ"}}]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "cat .env; for i in $(seq 300); do cat .env; done"}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": ".env"}}]},
        {"text": "done"},
    ]
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(home), NO_COLOR="1", OPENAI_API_KEY=KEY)
    agentloop = os.path.join(os.path.dirname(sys.executable), "agentloop")
    with FakeProvider({"replies": script, "require_key": KEY}) as fp:
        p = subprocess.run(
            [agentloop, "-p", "look around", "--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1",
             "--permission-mode", "bypassPermissions", "--sandbox", sandbox, "--output-format", "stream-json"],
            cwd=proj, env=env, capture_output=True, text=True, timeout=120,
        )
        requests = fp.requests
    assert p.returncode == 0, p.stderr
    # Claude Code's stream-json: each tool result is a user message holding a tool_result block
    results = [json.loads(line)["message"]["content"][0] for line in p.stdout.splitlines() if '"tool_result"' in line]
    assert len(results) == 4 and "[redacted: " in results[2]["content"]  # the commands ran and saw the key
    assert "end" in results[0]["content"]
    blobs = files_under(home)
    assert any("tool-results" in k for k in blobs), "the long output was spilled"
    blobs["model requests"] = json.dumps(requests).encode()
    blobs["stdout"], blobs["stderr"] = p.stdout.encode(), p.stderr.encode()
    assert len(requests) == 5
    assert scan(blobs) == []
