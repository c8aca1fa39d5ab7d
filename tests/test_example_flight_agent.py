"""examples/flight_agent.py runs, writes a trace that verifies, and its ``--replay`` redoes it.

Seed 001 ("Usage": ``npm run example`` runs the agent and writes the trace;
``--replay traces/flight-agent.jsonl`` redoes it) asks for this example; the
replay is ``agentloop.replay`` in ``full`` mode (the recorded answers fed back
through the same loop, every record compared) and in ``live-tools`` mode (the
tool run for real). A trace whose recorded answer was changed, rechained so it
still verifies, no longer replays equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentloop.line import make_line

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "flight_agent.py"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, str(EXAMPLE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_example_writes_a_trace_that_verifies_and_replays_byte_for_byte(tmp_path: Path) -> None:
    p = _run([], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "The cheapest is Wizz, at 41 euros."
    trace = tmp_path / "traces" / "flight-agent.jsonl"
    assert "trace verifies: True" in p.stdout and trace.exists()
    v = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "verify", str(trace)], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, v.stdout
    for mode in ("full", "live-tools"):
        r = _run(["--replay", str(trace), "--mode", mode], tmp_path)
        assert r.returncode == 0 and "EQUAL (byte-identical)" in r.stdout, (mode, r.stdout, r.stderr)


def test_a_changed_answer_in_the_trace_does_not_replay_equal(tmp_path: Path) -> None:
    assert _run([], tmp_path).returncode == 0
    trace = tmp_path / "traces" / "flight-agent.jsonl"
    recs = [json.loads(ln) for ln in trace.read_bytes().splitlines()]
    for r in recs:
        if r["kind"] == "stop":
            r["payload"]["answer"] = "The cheapest is ITA, at 58 euros."
    out, prev = [], "0" * 64
    for seq, r in enumerate(recs):
        prev, line = make_line(seq, prev, r["kind"], r["payload"])
        out.append(line)
    trace.write_bytes(b"".join(out))
    r = _run(["--replay", str(trace)], tmp_path)
    assert r.returncode == 1 and "(full): DIFFERENT" in r.stdout and "ITA, at 58 euros" in r.stdout, r.stdout
