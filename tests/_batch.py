"""Shared helpers for the batch tests: task files and checks made from the files alone."""

from __future__ import annotations

import json
import os
from typing import Any

import orjson

from agentloop.anchor import load_anchor, verify_with_anchor
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
