#!/usr/bin/env python3
"""Hook overhead per tool call: a trivial Python hook against no hook, in the same run of the bench.

Each variant runs the loop for N turns of one trivial tool call, with the
hooks wired the way the terminal agent wires them (``ClaudeHooks`` around
``Registry.invoke``, a ``hook`` record per fired event):

- none: no hooks configured (the baseline);
- pre: one PreToolUse hook, a Python script that reads its stdin JSON and
  answers ``permissionDecision: "allow"``;
- pre+post: the same script on PreToolUse and PostToolUse.

It prints ms per tool call, the overhead in ms against the baseline, and the
ratio to the baseline.

    .venv/bin/python bench/bench_hooks.py [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop import Budget, MemoryTranscript, Registry, run, tool  # noqa: E402
from agentloop.agent.hooks.runner import HookRunner  # noqa: E402
from agentloop.agent.hooks_and_context import ClaudeHooks  # noqa: E402
from agentloop.agent.protocols import HookFacts  # noqa: E402
from agentloop.config.settings import SettingsSource  # noqa: E402
from agentloop.events import ModelReply, ModelRequest, ToolCall, ToolResult, Usage  # noqa: E402
from agentloop.testing import FunctionModel  # noqa: E402

HOOK = """#!{py}
import json, sys
json.load(sys.stdin)
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "allow"}}}}))
"""


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def one(calls: int, hooks: dict[str, Any] | None, tmp: str) -> float:
    reg = Registry([add])
    sink = MemoryTranscript()
    n = {"i": 0}

    def model(req: ModelRequest) -> ModelReply:
        n["i"] += 1
        if n["i"] > calls:
            return ModelReply(text="done", usage=Usage(10, 1))
        return ModelReply(tool_calls=(ToolCall(f"c{n['i']}", "add", {"a": n["i"], "b": 1}),), usage=Usage(10, 1))

    ch = None
    if hooks is not None:
        runner = HookRunner.from_settings([SettingsSource("bench.json", "project", {"hooks": hooks})], project_dir=tmp)
        ch = ClaudeHooks(runner)
    agent = HookFacts(record=sink.append, permission_mode=lambda: "default")  # what hooks see: a record, no session

    def execute(cs: Sequence[ToolCall]) -> list[ToolResult]:
        out = []
        for c in cs:
            if ch is not None:
                h = ch.pre_tool_use(agent, c)
                if isinstance(h, ToolResult):
                    out.append(h)
                    continue
                c = h
            r = reg.invoke(c)
            out.append(ch.post_tool_use(agent, c, r) if ch is not None else r)
        return out

    t0 = time.perf_counter()
    res = run(FunctionModel(model, name="m"), reg, "go", Budget(max_steps=calls + 2), transcript=sink, prices={"m": _price()}, executor=execute)
    took = time.perf_counter() - t0
    assert res.stop_reason == "no_tool_calls" and res.steps == calls + 1, res
    return took / calls


def _price() -> Any:
    from agentloop import Price

    return Price(1, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "allow.py")
        with open(script, "w") as f:
            f.write(HOOK.format(py=sys.executable))
        os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
        handler = [{"matcher": "*", "hooks": [{"type": "command", "command": script}]}]
        variants = {
            "none": None,
            "pre": {"PreToolUse": handler},
            "pre+post": {"PreToolUse": handler, "PostToolUse": handler},
        }
        one(10, variants["pre"], tmp)  # warm up the interpreter and the page cache
        results = {name: one(args.calls, h, tmp) for name, h in variants.items()}
        k = max(10, args.calls // 4)
        t0 = time.perf_counter()
        for _ in range(k):
            subprocess.run([script], input=b'{"hook_event_name": "PreToolUse"}', capture_output=True, check=True)
        bare = (time.perf_counter() - t0) / k
    base = results["none"]
    print(f"hook overhead per tool call, {args.calls} calls each, same run (python {sys.version.split()[0]})")
    print(f"{'variant':<10} {'ms/call':>10} {'overhead ms':>12} {'ratio':>10}")
    for name, per in results.items():
        print(f"{name:<10} {per * 1000:>10.3f} {(per - base) * 1000:>12.3f} {per / base:>9.1f}x")
    hooks_per_call = {"pre": 1, "pre+post": 2}
    for name, n in hooks_per_call.items():
        print(f"per hook process ({name}): {(results[name] - base) * 1000 / n:.2f} ms")
    print(f"the same script by bare subprocess.run, no runner: {bare * 1000:.2f} ms "
          f"(runner + records cost {(results['pre'] - base) / bare:.2f}x a bare spawn)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
