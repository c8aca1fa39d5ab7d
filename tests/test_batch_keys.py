"""Batch workers get the provider keys as a value, never in their environment.

A worker's environment is readable by every process of the user (``/proc/PID/environ``) and is inherited
by whatever the worker starts; agentloop's own process keeps the keys out of it
(docs/decisions/0013-agentloops-git-runs-in-a-jail-and-the-keys-live-in-memory.md), and so must the batch
runner's workers: local worker processes and the workers of a Ray instance the runner starts. The keys go
to them with each task (a Ray task's argument, a local worker's start arguments). Each test runs the real
``agentloop batch`` with a key in its environment; a task's tool reads its worker's ``/proc/self/environ``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.batch.tasks import parse_tasks
from agentloop.batch.worker import HeldKeys, build_model

KEY = "sk-test-batch-worker-key-5f1e9c"
PROBE = '''
from agentloop.tools import Registry, tool


def tools():
    @tool(read_only=True)
    def look() -> str:
        """What this worker's environment holds of the key."""
        with open("/proc/self/environ", "rb") as f:
            env = f.read()
        return "LEAKED" if b"''' + KEY + '''" in env else "clean pid %d" % __import__("os").getpid()
    return Registry([look])
'''


def _task() -> dict[str, object]:
    return {"id": "probe", "prompt": "look", "model": "scripted", "toolset": "probe", "tools": ["look"],
            "budget": {"max_steps": 3}, "script": [
                {"tool_calls": [{"name": "look", "arguments": {}}], "usage": {"input_tokens": 1, "output_tokens": 1}},
                {"text": "done", "usage": {"input_tokens": 1, "output_tokens": 1}}]}


def _run(tmp_path: Path, *extra: str) -> str:
    (tmp_path / "envprobe.py").write_text(PROBE)
    (tmp_path / "tasks.jsonl").write_text(json.dumps(_task()) + "\n")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": os.pathsep.join([str(tmp_path), src])}
    r = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "batch", str(tmp_path / "tasks.jsonl"),
                        "--out", str(tmp_path / "out"), "--toolset", "probe=envprobe:tools", "--json", *extra],
                       env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    run = (tmp_path / "out" / "runs" / "probe.jsonl").read_text()
    assert "clean pid" in run or "LEAKED" in run, run[-2000:]
    return run


def test_a_local_batch_worker_has_no_provider_key_in_its_environment(tmp_path: Path) -> None:
    run = _run(tmp_path, "--workers", "1")
    assert "LEAKED" not in run and "clean pid" in run


@pytest.mark.ray
def test_a_ray_worker_has_no_provider_key_in_its_environment(tmp_path: Path) -> None:
    """The runner starts its own local Ray instance (no address): its workers inherit that environment."""
    pytest.importorskip("ray")
    run = _run(tmp_path, "--ray")
    assert "LEAKED" not in run and "clean pid" in run


def test_a_worker_opens_its_provider_with_the_key_it_was_handed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the key in the environment, the provider opens only with the key handed to the worker."""
    from agentloop.providers.errors import ProviderConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line = json.dumps({"id": "p", "prompt": "x", "model": "openai:gpt-4o-mini", "tools": [],
                       "budget": {"max_steps": 2}}).encode()
    task = parse_tasks(line)[0]
    with pytest.raises(ProviderConfigError):
        build_model(task)
    model = build_model(task, HeldKeys({"OPENAI_API_KEY": KEY}))
    assert model is not None
    assert KEY not in repr(HeldKeys({"OPENAI_API_KEY": KEY}))
