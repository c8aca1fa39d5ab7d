"""Shared helpers for the batch tests: task files and checks made from the files alone."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from typing import Any

import orjson
from hypothesis import strategies as st

from agentloop.audit.anchor import load_anchor, verify_with_anchor
from agentloop.budget import Price, cost_micros
from agentloop.events import Usage
from agentloop.transcript import verify_file

PRICE = {"input": 2_000_000, "output": 8_000_000}
"""micro-USD per Mtok: 2 and 8 micro-USD per token."""


def add_task(i: int, *, delay_ms: int = 0, steps: int = 2, **extra: Any) -> dict[str, Any]:
    """A task that adds, then answers: ``steps`` model turns in all."""
    script = [
        {"tool_calls": [{"name": "add", "arguments": {"a": i, "b": s}}], "usage": {"input_tokens": 5, "output_tokens": 4}, "delay_ms": delay_ms}
        for s in range(steps - 1)
    ]
    script.append({"text": f"the sum is {i}", "usage": {"input_tokens": 5, "output_tokens": 3}, "delay_ms": delay_ms})
    task = {
        "id": f"t{i:04d}", "prompt": f"add {i} to a few numbers, then tell me the sum", "model": "scripted", "tools": ["add"],
        "budget": {"max_steps": steps + 1, "max_usd": "1"}, "price": PRICE, "max_output_tokens": 32, "script": script,
    }
    task.update(extra)
    return task


def write_tasks(path: Any, tasks: list[dict[str, Any]]) -> str:
    with open(path, "w") as f:
        for t in tasks:
            f.write(json.dumps(t) + "\n")
    return os.fspath(path)


def demand(task: dict[str, Any]) -> int:
    """What the task's script would cost if every call were made."""
    price = Price.from_json(task.get("price", PRICE))
    return sum(cost_micros(Usage.from_json(s.get("usage") or {}), price) for s in task["script"])


def manifest(out: Any) -> list[dict[str, Any]]:
    with open(os.path.join(out, "manifest.jsonl"), "rb") as f:
        return [orjson.loads(line) for line in f if line.strip()]


def records(path: Any) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        return [orjson.loads(line) for line in f]


def transcript_spend(out: Any) -> int:
    """The spend every finished transcript in ``out/runs`` records in its stop record."""
    total = 0
    runs = os.path.join(out, "runs")
    for name in os.listdir(runs):
        if name.endswith(".jsonl"):
            recs = records(os.path.join(runs, name))
            assert recs[-1]["kind"] == "stop"
            total += recs[-1]["payload"]["spent_micros"]
    return total


def all_verify(out: Any, ids: list[str]) -> None:
    for tid in ids:
        path = os.path.join(out, "runs", f"{tid}.jsonl")
        report = verify_file(path)
        assert report.ok, (tid, report.problems[:3])
        anchor = verify_with_anchor(path, load_anchor(f"{path}.anchor.json"))
        assert anchor.ok, (tid, anchor.problems[:3])


@contextlib.contextmanager
def fake_provider(tmp_path: Any, *, seed: int = 7, latency: tuple[float, float] = (0.005, 0.06), usage: tuple[int, int] = (12, 20),
                  cache: bool = True):
    """The providers' fake server in its own process, answering in turn a tool call and an answer,
    each after a random latency. Yields its base URL."""
    u = {"input_tokens": usage[0], "output_tokens": usage[1]}
    script = {
        "replies": [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}], "latency": list(latency), "usage": u},
            {"text": "done", "latency": list(latency), "usage": u},
        ],
        "when_done": "cycle",
        "seed": seed,
        "cache": cache,
    }
    path = os.path.join(os.fspath(tmp_path), f"fake-{seed}.json")
    with open(path, "w") as f:
        json.dump(script, f)
    proc = subprocess.Popen([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", path, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else url
        yield url
    finally:
        proc.kill()
        proc.wait()


def provider_task(i: int, url: str, **extra: Any) -> dict[str, Any]:
    task = {
        "id": f"p{i:04d}", "prompt": "p" * 80, "model": "openai:fake-model", "base_url": f"{url}/v1", "tools": ["echo"],
        "budget": {"max_steps": 4}, "price": PRICE, "max_output_tokens": 64,
    }
    task.update(extra)
    return task


@st.composite
def fleets(draw, max_tasks=10):
    """Tasks with random latencies and costs, and a fleet cap below their total demand."""
    tasks = []
    for i in range(draw(st.integers(3, max_tasks))):
        steps = draw(st.integers(1, 3))
        script = []
        for s in range(steps):
            last = s == steps - 1
            script.append({
                "text": "done" if last else "",
                "tool_calls": [] if last else [{"name": "echo", "arguments": {"text": "x"}}],
                # within the reservation: input under the len//4 estimate, output under max_output_tokens
                "usage": {"input_tokens": draw(st.integers(0, 20)), "output_tokens": draw(st.integers(1, 64))},
                "delay_ms": draw(st.integers(0, 40)),
            })
        tasks.append({
            "id": f"f{i:03d}", "prompt": "p" * 80, "model": "scripted", "tools": ["echo"], "script": script,
            "budget": {"max_steps": 5}, "max_output_tokens": 64,
            "price": {"input": draw(st.integers(1, 5_000_000)), "output": draw(st.integers(1, 5_000_000))},
        })
    total = sum(demand(t) for t in tasks)
    cap = total * draw(st.integers(5, 90)) // 100  # every call costs at least 1, so cap < total
    return tasks, total, cap


def assert_cap_held(report, out, cap, total):
    """The fleet's settled spend, by the ledger, the manifest and the transcripts, is within the cap."""
    assert report.ledger["spent_micros"] <= cap
    assert sum(e["spent_micros"] for e in report.entries) <= cap
    assert transcript_spend(out) <= cap
    assert report.ledger["overrun_micros"] == 0
    if total > cap:  # demand exceeds the cap, so the ledger must have refused someone, in a transcript
        stopped = [e for e in report.entries if e["stop_reason"] == "cost_budget"]
        assert stopped and report.ledger["refusals"] >= len(stopped)
        assert all(e["status"] == "refused" for e in stopped) and not report.ok
        kinds = [r["kind"] for r in records(out / stopped[0]["transcript"])]
        assert kinds[-2:] == ["ledger_refusal", "stop"]
    assert all(e["status"] == ("refused" if e["stop_reason"] == "cost_budget" else "completed") for e in report.entries)


PER_CALL = 12 * 2 + 20 * 8
"""What the fake provider bills for one call of ``provider_task`` (12 in, 20 out) when it reports no cache reads."""


def billed(url: str) -> int:
    """What the fake provider has billed so far: every completion request it answered."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/requests", timeout=30) as r:
        reqs = json.loads(r.read())
    return PER_CALL * sum(1 for q in reqs if q["path"].endswith("/chat/completions"))


def open_at(out: Any) -> tuple[set[str], int]:
    """From the ledger journal as a kill left it: the tasks whose attempt began and did not end (and
    whose run had no finished transcript), and how many reservations were open (granted, not settled)."""
    begun: set[str] = set()
    held: dict[str, int] = {}
    with open(os.path.join(out, "ledger.jsonl"), "rb") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            key = rec.get("key", "")
            if rec["op"] == "begin":
                begun.add(key)
            elif rec["op"] == "end":
                begun.discard(key)
            elif rec["op"] == "reserve":
                held[key] = held.get(key, 0) + 1
            elif rec["op"] in ("settle", "forfeit"):
                held[key] = max(0, held.get(key, 0) - 1) if rec["op"] == "settle" else 0
    from agentloop.batch._files import paths

    # a task whose run was made final just before the kill (its end not yet journaled) is not redone
    cut = {k.rpartition("#")[0] for k in begun}
    return {t for t in cut if not os.path.exists(paths(os.fspath(out), t)[0])}, sum(held.values())


def kill_driver_repeatedly(args: list[str], out: Any, kills: int, seed: int, env: dict[str, str] | None = None,
                           settle_s: float = 0.3) -> tuple[set[str], int]:
    """Start ``agentloop batch`` and ``kill -9`` its driver alone (its workers are orphaned) once it
    has granted calls, ``kills`` times. Returns the tasks in flight at the kills and the reservations open then."""
    import random
    import time

    rng = random.Random(seed)
    in_flight: set[str] = set()
    open_total = 0
    journal = os.path.join(out, "ledger.jsonl")
    for _ in range(kills):
        before = os.path.getsize(journal) if os.path.exists(journal) else 0
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        end = time.monotonic() + 120
        while time.monotonic() < end:
            size = os.path.getsize(journal) if os.path.exists(journal) else 0
            if size != before and size > 0 and b'"op":"reserve"' in open(journal, "rb").read()[-4000:]:
                break
            if proc.poll() is not None:  # it ended first (the cap refused what was left): no more kills
                assert proc.returncode in (0, 1, 3), proc.communicate()[1].decode()[-2000:]
                return in_flight, open_total
            time.sleep(0.02)
        time.sleep(settle_s + rng.random() * settle_s)
        if proc.poll() is not None:
            break
        proc.send_signal(9)
        proc.wait()
        tasks, held = open_at(out)
        in_flight |= tasks
        open_total += held
    return in_flight, open_total
