"""``agentloop run`` against the fake server in another process: the way a user meets the providers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [
        {"text": "The answer is 42."},
        {"fault": "529"}, {"fault": "529"}, {"fault": "529"}, {"fault": "529"}, {"text": "From the fallback."},
    ]}))
    p = subprocess.Popen([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", str(script), "--port", "0"],
                         stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert p.stdout is not None
        yield p.stdout.readline().strip()
    finally:
        p.terminate()
        p.wait(10)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
    env["AGENTLOOP_HOME"] = str(tmp_path / "home")
    return env


def test_agentloop_run_answers_through_a_local_server_without_a_key(tmp_path: Path, server: str) -> None:
    r = subprocess.run([*AGENTLOOP, "run", "what is the answer?", "--model", "openai:gpt-4o-mini", "--base-url", server + "/v1",
                        "--max-usd", "0.05", "--max-steps", "5", "--cwd", str(tmp_path)],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "The answer is 42." in r.stdout


def test_agentloop_run_falls_back_with_a_notice(tmp_path: Path, server: str) -> None:
    # $0.10 for the first run (its bound at claude-haiku-4-5's prices is about $0.05, and a token count never
    # lowers a reservation); $0.50 for the second: the bound at claude-sonnet-4-6's prices is about $0.09
    ok = subprocess.run([*AGENTLOOP, "run", "first", "--model", "anthropic:claude-haiku-4-5", "--base-url", server,
                         "--max-usd", "0.1", "--cwd", str(tmp_path)], capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert ok.returncode == 0, ok.stderr
    r = subprocess.run([*AGENTLOOP, "run", "second", "--model", "anthropic:claude-haiku-4-5", "--fallback-model", "anthropic:claude-sonnet-4-6",
                        "--base-url", server, "--max-usd", "0.5", "--cwd", str(tmp_path)],
                       capture_output=True, text=True, env={**_env(tmp_path)}, timeout=180)
    assert "From the fallback." in r.stdout, r.stderr
    assert "falling back to anthropic:claude-sonnet-4-6" in r.stderr


def test_agentloop_run_without_a_key_says_how_to_set_one(tmp_path: Path) -> None:
    r = subprocess.run([*AGENTLOOP, "run", "x", "--model", "openai:gpt-4o-mini", "--max-usd", "0.05", "--cwd", str(tmp_path)],
                       capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert r.returncode != 0
    line = r.stderr.strip()
    assert "OPENAI_API_KEY" in line and "--base-url" in line and len(line.splitlines()) == 1 and "Traceback" not in r.stderr
