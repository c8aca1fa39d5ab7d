"""The system prompt's size, and how much of it the prompt cache serves, in a scripted multi-turn session.

    .venv/bin/python bench/bench_prompt.py [--prompts 8]

Printed:

- sizes, in bytes and estimated tokens (bytes / 4; with ``tiktoken`` installed,
  also cl100k_base's count): the static instructions, the session's dynamic part
  (environment block, git snapshot), the built-in tools' schemas, and their sum;
  beside the 45-word prompt agentloop had before, measured the same way (the baseline);
- a session of ``--prompts`` prompts (each a Read call and an answer) through a
  real ``Agent`` against the fake Anthropic server with prompt caching on: whether
  the cached prefix (the tool definitions and the static system block) was the
  same bytes in every request, and the share of each turn's input read from the
  cache (target: at least 90% from the third turn on).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

OLD_PROMPT = """You are agentloop, a coding agent working in the user's terminal.
Use the tools to read, search and change files and to run commands; paths are relative to the working directory.
Keep answers short and concrete. Say what you changed. Ask before doing something destructive."""
"""The prompt before this one: the baseline."""


def _tokens(text: str) -> str:
    n = len(text.encode())
    out = f"{n:>7} bytes, ~{n // 4:>6} tokens"
    try:
        import tiktoken

        out += f" (cl100k_base: {len(tiktoken.get_encoding('cl100k_base').encode(text))})"
    except Exception:  # noqa: BLE001 - optional: no tokenizer here
        pass
    return out


def sizes(cwd: str, home: str) -> dict[str, str]:
    """The prompt's parts, as text, from a real agent in a git repository."""
    from agentloop.agent.agent import SYSTEM_PROMPT, Agent
    from agentloop.canonical import canonical

    script = os.path.join(home, "empty.json")
    os.makedirs(home, exist_ok=True)
    with open(script, "w") as f:
        f.write("[]")
    a = Agent(cwd=cwd, home=home, model=f"scripted:{script}", env=dict(os.environ))
    try:
        tools = "".join(canonical(s.to_json()).decode() for s in a.shown_tools().specs())
        return {"static instructions": SYSTEM_PROMPT, "dynamic part": a.dynamic_prompt(), "tool schemas": tools,
                "whole (prompt + tools)": a.system_prompt() + tools, "before: the 45-word prompt": OLD_PROMPT}
    finally:
        a.close("prompt_input_exit")


def session(prompts: int, cwd: str, home: str) -> tuple[bool, list[float]]:
    """(the cached prefix was the same bytes in every request, the cache-read share of each turn)."""
    import orjson

    from agentloop.agent.agent import Agent
    from agentloop.testing.fakeprovider import FakeProvider
    from agentloop.transcript import read_records

    replies: list[dict[str, Any]] = []
    for i in range(prompts):
        replies.append({"text": f"Reading part {i}.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "notes.txt"}}]})
        replies.append({"text": f"Part {i}: the budget holds before the spend."})
    with open(os.path.join(cwd, "notes.txt"), "w") as f:
        f.write("The budget holds before the spend.\n" * 40)
    with FakeProvider({"replies": replies, "cache": True}) as fp:
        a = Agent(cwd=cwd, home=home, model="anthropic:claude-haiku-4-5", base_url=fp.url, env={}, permission_mode="acceptEdits")
        try:
            for i in range(prompts):
                a.ask(f"What does part {i} of notes.txt say?")
        finally:
            a.close("prompt_input_exit")
        bodies = [r["body"] for r in fp.requests if r["protocol"]]
    prefixes = {orjson.dumps([b.get("tools"), b["system"][0]]) for b in bodies}
    shares: list[float] = []
    read = total = 0
    for rec in read_records(a.session.path):
        if rec.kind == "run_start" and total:
            shares.append(read / total)
            read = total = 0
        if rec.kind == "model_turn":
            u = rec.payload["reply"]["usage"] or {}
            read += u.get("cache_read_tokens", 0)
            total += u.get("input_tokens", 0) + u.get("cache_read_tokens", 0) + u.get("cache_write_tokens", 0)
    if total:
        shares.append(read / total)
    return len(prefixes) == 1, shares


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cwd, home = os.path.join(d, "proj"), os.path.join(d, "home")
        os.makedirs(cwd)
        subprocess.run(["git", "init", "-q", cwd], check=True)
        parts = sizes(cwd, os.path.join(d, "home0"))
        same, shares = session(args.prompts, cwd, home)
    for name, text in parts.items():
        print(f"{name:<28} {_tokens(text)}")
    old, new = len(parts["before: the 45-word prompt"].encode()), len(parts["static instructions"].encode())
    print(f"static instructions / the 45-word prompt: {new / old:.1f}x")
    print(f"cached prefix (tools + static system block) the same bytes in every request: {'yes' if same else 'NO'}")
    for i, x in enumerate(shares, 1):
        print(f"turn {i:>3}: {x:6.1%} of input read from the cache")
    low = min(shares[2:]) if len(shares) > 2 else 0.0
    print(f"{len(shares)} turns; lowest cache-read share from the third turn on: {low:.1%} (target >= 90%)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
