"""A provider that ignores max_tokens and streams without end is cut: bounded memory, bounded records.

The local fake provider's ``endless`` fault streams text deltas until the client goes away. The reply
is cut at its max_tokens (read as characters, with a margin for providers that count differently:
``StreamLimit``), the call is a recorded provider error charged at its reservation, no record passes
the transcript's line limit, and the session verifies afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.budget import Budget
from agentloop.providers import open_model
from agentloop.providers.base import MAX_REPLY_CHARS, StreamLimit
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import MAX_LINE_BYTES, TranscriptWriter, read_records, verify_file

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize("max_out", [100, 32_000])
def test_an_endless_stream_is_cut_at_its_max_tokens_and_charged_its_reservation(tmp_path: Path, vendor: str, max_out: int) -> None:
    name = "gpt-4o-mini" if vendor == "openai" else "claude-haiku-4-5"
    path = tmp_path / "t.jsonl"
    with FakeProvider({"replies": [{"fault": "endless", "chunk_size": 4096}]}) as fp, TranscriptWriter(path) as w:
        m = open_model(f"{vendor}:{name}", base_url=fp.url + "/v1" if vendor == "openai" else fp.url, env={}, max_attempts=1,
                       record_raw=True)
        r = run(m, [], "go", Budget(max_steps=3, max_usd_micros=1_000_000), transcript=w, max_output_tokens=max_out)
    assert r.stop_reason == "budget_overrun" and "kept streaming" in (r.error or ""), r.error
    limit = StreamLimit.for_max_tokens(max_out)
    cut = re.search(r"cut after (\d+) characters", r.error or "")
    assert cut is not None and limit.chars < int(cut.group(1)) <= limit.chars + 4096  # within one delta of the limit
    assert limit.chars <= max(64 << 10, 64 * (max_out + max_out // 10 + 64)) and limit.chars <= MAX_REPLY_CHARS
    (err,) = [x.payload for x in read_records(path) if x.kind == "overrun"]
    assert err["billed_at_reservation"] and 0 < r.spent_micros <= 1_000_000
    assert verify_file(path).ok
    assert max(len(line) for line in path.read_bytes().splitlines()) < MAX_LINE_BYTES


def test_the_terminal_agent_cuts_an_endless_stream_in_bounded_memory_and_its_session_verifies(
    tmp_path: Path, home: Path, proj: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=str(home), OPENAI_API_KEY="sk-test")

    def agent(reply: dict[str, object]) -> tuple[subprocess.CompletedProcess[str], int]:
        """The agent's run and its peak memory (KiB), measured alone in a fresh process."""
        with FakeProvider({"replies": [reply]}) as fp:
            cmd = [AGENTLOOP, "-p", "write", "--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1", "--max-usd", "1"]
            probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120);"
                     "sys.stderr.write(p.stderr); print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
            q = subprocess.run([sys.executable, "-c", probe, *cmd], cwd=proj, env=env, capture_output=True, text=True, timeout=150)
        code, rss = q.stdout.split()
        return subprocess.CompletedProcess(cmd, int(code), "", q.stderr), int(rss)

    _, honest = agent({"text": "a short answer"})
    p, endless = agent({"fault": "endless", "chunk_size": 65536})
    assert p.returncode not in (0, 70) and "kept streaming" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert endless - honest < 200 * 1024, (honest, endless)  # at most 200 MB more than a run that needs nothing
    (session, _first) = sorted(home.rglob("*.jsonl"), key=lambda f: f.stat().st_mtime, reverse=True)
    assert max(len(line) for line in session.read_bytes().splitlines()) < MAX_LINE_BYTES
    v = subprocess.run([AGENTLOOP, "verify", str(session)], env=env, capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_server_that_ignores_stream_and_sends_an_endless_json_body_is_cut(tmp_path: Path) -> None:
    """A server answering with one JSON body instead of a stream is read no further than a stream would be."""
    import itertools

    import httpx

    from agentloop.providers.base import RetryPolicy, Target
    from agentloop.providers.openai_compat import OpenAIModel

    def endless(request: httpx.Request) -> httpx.Response:
        body = itertools.chain([b'{"choices": [{"message": {"content": "'], itertools.repeat(b"x" * 65536))
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    m = OpenAIModel(Target("openai", "gpt-4o-mini", "http://endless.invalid/v1", "k"), transport=httpx.MockTransport(endless),
                    policy=RetryPolicy(max_attempts=1))
    r = run(m, [], "go", Budget(max_steps=2, max_usd_micros=1_000_000), max_output_tokens=100)
    assert r.stop_reason == "budget_overrun" and "kept sending" in (r.error or ""), r.error
    assert 0 < r.spent_micros <= 1_000_000
