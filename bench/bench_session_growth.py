"""Session-file size against prompts: a file that grows with what happened.

Issue 15, point 7. A terminal-agent session (the real ``Agent`` with a
scripted model) takes PROMPTS prompts, each of which reads an 8 KB file and
answers. After the first, each ``run_start`` refers to the conversation it
continues instead of repeating it (``agentloop.conversation``). The same
session is run again in the same process with that reference turned off
(every ``run_start`` repeats the whole conversation, as before), as the
baseline.

Printed at 10, 50 and PROMPTS prompts: the bytes the file grew by per prompt
(the mean over the last five prompts before that point), and the file's size.
Target: flat, the bytes per prompt at PROMPTS within 1.2x of those at 10.

    .venv/bin/python bench/bench_session_growth.py [--prompts 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

TARGET = 1.2
POINTS = (10, 50)


def _session(root: str, prompts: int, continued: bool) -> list[int]:
    """The session file's size after each prompt."""
    from agentloop.agent.agent import Agent
    from agentloop.agent.session.store import Session

    proj = os.path.join(root, "proj")
    os.makedirs(proj, exist_ok=True)
    with open(os.path.join(proj, "data.txt"), "w") as f:
        f.write(("0123456789abcdef" * 4 + "\n") * 124)  # 8,060 bytes
    steps: list[dict[str, Any]] = []
    for i in range(prompts):
        steps.append({"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "data.txt"}}], "usage": [100, 10]})
        steps.append({"text": f"The file has 124 lines ({i}).", "usage": [200, 5]})
    script = os.path.join(root, "script.json")
    with open(script, "w") as f:
        json.dump(steps, f)
    if not continued:
        Session.continuation = lambda self: None  # type: ignore[method-assign]
    a = Agent(cwd=proj, model=f"scripted:{script}", max_usd_micros=10**12)
    sizes = []
    for i in range(prompts):
        a.ask(f"How many lines has data.txt? ({i})")
        sizes.append(os.path.getsize(a.session.path))
    a.close("done")
    return sizes


def _per_prompt(sizes: list[int], at: int) -> float:
    lo = max(1, at - 5)
    return (sizes[at - 1] - sizes[lo - 1]) / (at - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=200)
    args = ap.parse_args()
    points = [p for p in POINTS if p < args.prompts] + [args.prompts]
    rows = {}
    for continued in (True, False):
        with tempfile.TemporaryDirectory() as root:
            os.environ["AGENTLOOP_HOME"] = os.path.join(root, "home")
            rows[continued] = _session(root, args.prompts, continued)
    print(f"{'prompts':>8} {'bytes/prompt':>13} {'file size':>11}   {'baseline b/p':>13} {'baseline size':>14}")
    for p in points:
        new, old = rows[True], rows[False]
        print(f"{p:>8} {_per_prompt(new, p):>13,.0f} {new[p - 1]:>11,}   {_per_prompt(old, p):>13,.0f} {old[p - 1]:>14,}")
    ratio = _per_prompt(rows[True], args.prompts) / _per_prompt(rows[True], points[0])
    base = _per_prompt(rows[False], args.prompts) / _per_prompt(rows[False], points[0])
    print(f"bytes per prompt at {args.prompts} / at {points[0]}: {ratio:.2f}x (target <= {TARGET}x); "
          f"without the reference: {base:.2f}x")
    print(f"file at {args.prompts} prompts: {rows[True][-1] / rows[False][-1]:.3f} of the baseline's size")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
