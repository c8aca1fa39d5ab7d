"""The share of input read from the prompt cache, turn by turn, in a scripted terminal-agent session.

    .venv/bin/python bench/bench_prompt_cache.py [--prompts 50]

A real ``Agent`` (the terminal agent: system prompt, tools, memory file) talks
to the fake Anthropic server (``agentloop.testing.fakeprovider``, prompt caching on:
it remembers each prefix up to a ``cache_control`` breakpoint and reports
reads and writes as the API does). Each prompt is answered by a Read tool call
and then a short answer (two model calls a turn), so the session grows as a real
one does. Printed for each turn: the share of its input read from the cache,
``cache_read / (input + cache_read + cache_write)`` over the turn's calls; then the
lowest share from the third turn on. Target: at least 90% from the third turn on
What is not read is what is new: the turn's prompt and the 500
tokens of the file the tool reads. The
system prompt's static part is cached on its own breakpoint, so a new day, a new
directory or a changed memory file re-reads it from the cache too.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def shares(prompts: int, cwd: str, home: str) -> list[float]:
    """The cache-read share of each turn (a prompt and its model calls) of a session of ``prompts`` prompts."""
    from agentloop.agent.agent import Agent
    from agentloop.testing.fakeprovider import FakeProvider

    replies: list[dict[str, Any]] = []
    for i in range(prompts):
        replies.append({"text": f"Reading part {i}.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]})
        replies.append({"text": f"Part {i} says what the notes say: the budget holds before the spend."})
    with open(os.path.join(cwd, "notes.txt"), "w") as f:
        f.write("The budget holds before the spend.\n" * 40)
    with open(os.path.join(cwd, "AGENTS.md"), "w") as f:
        f.write("Answer briefly. Quote the notes when you can.\n")
    with FakeProvider({"replies": replies, "cache": True}) as fp:
        a = Agent(cwd=cwd, home=home, model="anthropic:claude-haiku-4-5", base_url=fp.url, env={}, permission_mode="acceptEdits")
        try:
            for i in range(prompts):
                a.ask(f"What does part {i} of notes.txt say?")
        finally:
            a.close("prompt_input_exit")
        out = []
        from agentloop.transcript import read_records

        read = total = 0
        for rec in read_records(a.session.path):
            if rec.kind == "run_start" and total:
                out.append(read / total)
                read = total = 0
            if rec.kind != "model_turn":
                continue
            u = rec.payload["reply"]["usage"] or {}
            read += u.get("cache_read_tokens", 0)
            total += u.get("input_tokens", 0) + u.get("cache_read_tokens", 0) + u.get("cache_write_tokens", 0)
        if total:
            out.append(read / total)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cwd, home = os.path.join(d, "proj"), os.path.join(d, "home")
        os.makedirs(cwd)
        s = shares(args.prompts, cwd, home)
    for i, x in enumerate(s, 1):
        if i <= 5 or i % 10 == 0 or i == len(s):
            print(f"turn {i:>3}: {x:6.1%} of input read from the cache")
    low = min(s[2:]) if len(s) > 2 else 0.0
    print(f"{len(s)} turns; lowest share from the third turn on: {low:.1%} (target >= 90%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
