"""Sub-agents at once: wall time against one child, ten under the default cap, and what a child costs.

    .venv/bin/python bench/bench_subagents.py [--turn-ms 500] [--repeat 3]

1. Three children asked for in one reply, on a model whose every turn takes
   ``--turn-ms`` (two turns a child), against one child alone measured in the
   same run (the baseline). Target: three take at most 1.5x one.
2. Ten children in one reply on a model priced as claude-sonnet-4-5, under
   the default $5 cap, each reserving its model's documented output (64,000
   tokens, about $0.96 a call, so the room holds a handful of reservations at
   once) and billed a few hundred tokens: how many finish. Target: all ten.
3. What a child costs beside its model: the same do-nothing child in a git
   repository with a virtual environment, in its own worktree (made, linked,
   merged back, removed) and in the parent's directory; the difference in
   milliseconds, median of ``--repeat``.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop import Budget, Price, Registry, TranscriptWriter, run  # noqa: E402
from agentloop.agent.subagents.runner import SubagentRunner, parallel_executor  # noqa: E402
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage  # noqa: E402

SONNET = {"claude-sonnet-4-5": Price(input=3_000_000, output=15_000_000)}
DEFAULT_CAP = 5_000_000


class Model:
    """The parent asks for ``children`` Agent calls, then answers; each child takes ``turns`` turns."""

    def __init__(self, children: int, turns: int, turn_s: float, isolation: str = "none"):
        self.name = "claude-sonnet-4-5"
        self.children, self.turns, self.turn_s, self.isolation = children, turns, turn_s, isolation
        self.parent_calls = 0

    def complete(self, req: ModelRequest) -> ModelReply:
        if "sub-agent" not in str(req.messages[0].get("content", "")):
            self.parent_calls += 1
            if self.parent_calls > 1:
                return ModelReply(text="all done", usage=Usage(2_000, 50))
            calls = tuple(ToolCall(f"a{i}", "Agent", {"description": f"part {i}", "prompt": f"part {i}", "isolation": self.isolation})
                          for i in range(self.children))
            return ModelReply(tool_calls=calls, usage=Usage(2_000, 50))
        time.sleep(self.turn_s)
        done = sum(1 for m in req.messages if m.get("role") == "assistant")
        if done + 1 >= self.turns:
            return ModelReply(text="report", usage=Usage(1_500, 300))
        return ModelReply(tool_calls=(ToolCall(f"n{done}", "noop", {}),), usage=Usage(1_500, 100))


def _tools(cwd: str) -> Registry:
    from agentloop.tools import Tool

    return Registry([Tool("noop", "does nothing", {"type": "object", "properties": {}}, lambda: "ok", read_only=True)])


def _parent(root: str, model: Model, cap: int | None, max_out: int) -> tuple[float, SubagentRunner, Any]:
    runner = SubagentRunner(model=model, make_tools=_tools, cwd=root, transcript_dir=os.path.join(root, "subagents"),
                            prices=SONNET, model_name="claude-sonnet-4-5", max_output_for=lambda spec, micros: max_out)
    reg = _tools(root)
    reg.register(runner.tool())
    execute = parallel_executor(lambda cs: [reg.invoke(c) for c in cs], runner)
    t = time.perf_counter()
    with TranscriptWriter(os.path.join(root, f"parent-{time.monotonic_ns()}.jsonl")) as w:
        runner.record = w.append
        r = run(model, reg, "split the work", Budget(max_steps=5, max_usd_micros=cap), transcript=w, prices=SONNET,
                prepare=runner.parent.bind, executor=execute, model_name="claude-sonnet-4-5", max_output_tokens=4_096)
    return time.perf_counter() - t, runner, r


def _git_repo(root: str) -> str:
    repo = os.path.join(root, "repo")
    os.makedirs(os.path.join(repo, "src"))
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write(".venv/\n")
    for i in range(200):
        with open(os.path.join(repo, "src", f"m{i}.py"), "w") as f:
            f.write(f"X = {i}\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(repo, ".venv")], check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turn-ms", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    turn = args.turn_ms / 1000
    ok = True
    with tempfile.TemporaryDirectory(prefix="al-bench-sub-") as root:
        one = statistics.median(_parent(root, Model(1, 2, turn), None, 4_096)[0] for _ in range(args.repeat))
        three = statistics.median(_parent(root, Model(3, 2, turn), None, 4_096)[0] for _ in range(args.repeat))
        print(f"1. one child: {one:.2f} s; three children at once: {three:.2f} s ({three / one:.2f}x one; "
              f"one after another, they would take about {3 * one:.2f} s)")
        ok &= three <= 1.5 * one

        _, runner, r = _parent(root, Model(10, 3, 0.05), DEFAULT_CAP, 64_000)
        finished = sum(1 for c in runner.children if c["stop_reason"] == "no_tool_calls")
        print(f"2. ten children under the default $5 cap, each reserving 64,000 output tokens a call: {finished} of 10 "
              f"finished; the session spent ${r.spent_micros / 1e6:.4f} (never past the cap: {r.spent_micros <= DEFAULT_CAP})")
        ok &= finished == 10 and r.spent_micros <= DEFAULT_CAP

        repo = _git_repo(root)
        own, here = [], []
        for _ in range(args.repeat):
            own.append(_parent(repo, Model(1, 1, 0.0, "worktree"), None, 4_096)[0])
            here.append(_parent(repo, Model(1, 1, 0.0, "none"), None, 4_096)[0])
        print(f"3. a child's own worktree (made, .venv linked, merged back, removed): "
              f"+{(statistics.median(own) - statistics.median(here)) * 1000:.0f} ms against working in the parent's directory "
              f"({statistics.median(here) * 1000:.0f} ms)")
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
