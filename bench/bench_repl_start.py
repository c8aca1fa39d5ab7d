"""Time to the REPL's prompt with slow MCP servers configured, against the same with none, same run.

    .venv/bin/python bench/bench_repl_start.py [--rounds 5] [--servers 6] [--delay 3]

Each round starts ``agentloop`` in a real pseudo-terminal (pexpect) twice,
interleaved: in a project with no ``.mcp.json``, and in one whose
``.mcp.json`` names ``--servers`` stdio servers that each take ``--delay``
seconds before they answer (a Python MCP server behind a sleep). It times
from the spawn to the first ``>`` prompt on screen. The servers start in the
background, so the difference is what they cost the prompt; the target is
under half a second whatever the servers do. Prints the medians, the
difference and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import pexpect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOW = os.path.join(ROOT, "tests", "mcp_servers", "slowstart.py")
AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")
TARGET_S = 0.5


def _project(base: str, name: str, servers: int, delay: float) -> str:
    d = os.path.join(base, name)
    os.makedirs(d)
    if servers:
        config = {f"slow{i}": {"command": sys.executable, "args": [SLOW, str(delay)]} for i in range(servers)}
        with open(os.path.join(d, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": config}, f)
    return d


def _to_prompt(cwd: str, env: dict[str, str], replies: str) -> float:
    t0 = time.perf_counter()
    child = pexpect.spawn(AGENTLOOP, ["--trust", "--model", f"scripted:{replies}"], cwd=cwd, env=env,
                          dimensions=(40, 120), timeout=60)
    try:
        child.expect(r"\x1b\[0m>")  # prompt_toolkit draws the prompt after resetting attributes
        return time.perf_counter() - t0
    finally:
        child.terminate(force=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--servers", type=int, default=6)
    ap.add_argument("--delay", type=float, default=3.0)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="bench-repl-")
    replies = os.path.join(base, "replies.json")
    with open(replies, "w") as f:
        f.write('[{"text": "hi"}]')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENTLOOP_HOME=os.path.join(base, "home"), HOME=base, NO_COLOR="1", TERM="xterm")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    plain = _project(base, "plain", 0, a.delay)
    slow = _project(base, "slow", a.servers, a.delay)
    _to_prompt(plain, env, replies)  # warm the file cache, the bytecode and the tools' source cache
    none_s: list[float] = []
    with_s: list[float] = []
    for _ in range(a.rounds):
        none_s.append(_to_prompt(plain, env, replies))
        with_s.append(_to_prompt(slow, env, replies))
    m0, m1 = statistics.median(none_s), statistics.median(with_s)
    print(f"time to the prompt, median of {a.rounds}: no MCP server {m0 * 1000:.0f} ms; "
          f"{a.servers} servers taking {a.delay:g} s each to start {m1 * 1000:.0f} ms")
    print(f"the servers cost the prompt {(m1 - m0) * 1000:+.0f} ms ({m1 / m0:.2f}x); target under {TARGET_S * 1000:.0f} ms: "
          f"{'meets' if m1 - m0 < TARGET_S else 'MISSES'}")
    return 0 if m1 - m0 < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
