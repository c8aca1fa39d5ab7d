"""Session-file size against prompts: a file that grows with what happened.

A terminal-agent session (the real ``Agent`` with a scripted model and its
built-in tools) takes PROMPTS prompts. Two kinds of prompt: one that reads an
8 KB file and answers, and a one-line prompt answered in one line. After the
first, each ``run_start`` refers to the conversation it continues instead of
repeating it, and to the tool list recorded before instead of repeating the
tool schemas (``agentloop.conversation`` rules 1 and 3). Two baselines are
measured in the same run, in the same process: the tool schemas repeated in
every ``run_start`` (the style before rule 3), and the whole conversation
repeated too (the style before rule 1).

Printed at 10, 50 and PROMPTS prompts: the bytes the file grew by per prompt
(the mean over the last five prompts before that point) for each style, and
the bytes per prompt of the ``run_start`` records alone. Target: flat, the
bytes per prompt at PROMPTS within 1.2x of those at 10, and a one-line prompt
costing less than the tools-repeated baseline's.

    .venv/bin/python bench/bench_session_growth.py [--prompts 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

TARGET = 1.2
POINTS = (10, 50)
STYLES = ("now", "tools repeated", "all repeated")


def _steps(prompts: int, reads: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i in range(prompts):
        if reads:
            steps.append({"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "data.txt"}}], "usage": [100, 10]})
            steps.append({"text": f"The file has 124 lines ({i}).", "usage": [200, 5]})
        else:
            steps.append({"text": f"Hello ({i}).", "usage": [100, 5]})
    return steps


def _session(root: str, prompts: int, style: str, reads: bool) -> tuple[list[int], int]:
    """The session file's size after each prompt, and the bytes of its ``run_start`` records."""
    from agentloop.agent.agent import Agent
    from agentloop.agent.session.store import Session
    from agentloop.transcript import read_records

    proj = os.path.join(root, "proj")
    os.makedirs(proj, exist_ok=True)
    with open(os.path.join(proj, "data.txt"), "w") as f:
        f.write(("0123456789abcdef" * 4 + "\n") * 124)  # 8,060 bytes
    script = os.path.join(root, "script.json")
    with open(script, "w") as f:
        json.dump(_steps(prompts, reads), f)
    saved = Session.continuation
    if style == "tools repeated":  # the conversation referred to, the tool list not known: every run_start repeats it
        Session.continuation = lambda self: None if (c := saved(self)) is None else dataclasses.replace(c, tools=None)  # type: ignore[method-assign]
    elif style == "all repeated":
        Session.continuation = lambda self: None  # type: ignore[method-assign]
    try:
        a = Agent(cwd=proj, model=f"scripted:{script}", max_usd_micros=10**12)
        sizes = []
        for i in range(prompts):
            a.ask(f"How many lines has data.txt? ({i})" if reads else f"Say hello ({i}).")
            sizes.append(os.path.getsize(a.session.path))
        a.close("done")
    finally:
        Session.continuation = saved  # type: ignore[method-assign]
    starts = sum(len(json.dumps(r.payload)) for r in read_records(a.session.path) if r.kind == "run_start")
    return sizes, starts


def _per_prompt(sizes: list[int], at: int) -> float:
    lo = max(1, at - 5)
    return (sizes[at - 1] - sizes[lo - 1]) / (at - lo)


def _scenario(name: str, prompts: int, reads: bool, points: list[int]) -> bool:
    rows: dict[str, tuple[list[int], int]] = {}
    for style in STYLES:
        with tempfile.TemporaryDirectory() as root:
            os.environ["AGENTLOOP_HOME"] = os.path.join(root, "home")
            rows[style] = _session(root, prompts, style, reads)
    print(f"\n{name}: bytes the session file grows by per prompt")
    print(f"{'prompts':>8} " + " ".join(f"{s:>16}" for s in STYLES))
    for p in points:
        print(f"{p:>8} " + " ".join(f"{_per_prompt(rows[s][0], p):>16,.0f}" for s in STYLES))
    print(f"{'run_start bytes per prompt':>26}: " + ", ".join(f"{s} {rows[s][1] / prompts:,.0f}" for s in STYLES))
    now, tools = _per_prompt(rows["now"][0], prompts), _per_prompt(rows["tools repeated"][0], prompts)
    ratio = now / _per_prompt(rows["now"][0], points[0])
    print(f"now / tools repeated at {prompts} prompts: {now / tools:.3f}; bytes per prompt at {prompts} / at {points[0]}: "
          f"{ratio:.2f}x (target <= {TARGET}x); file at {prompts}: {rows['now'][0][-1]:,} bytes against "
          f"{rows['tools repeated'][0][-1]:,} and {rows['all repeated'][0][-1]:,}")
    return ratio <= TARGET and now < tools


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=200)
    args = ap.parse_args()
    points = [p for p in POINTS if p < args.prompts] + [args.prompts]
    ok = _scenario("a one-line prompt answered in one line", args.prompts, False, points)
    ok = _scenario("a prompt that reads an 8 KB file", args.prompts, True, points) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
