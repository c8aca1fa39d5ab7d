#!/usr/bin/env python3
"""Peak RSS over long sessions with 20 KB tool outputs: bounded with context management, linear without.

Each measurement is a fresh subprocess (so peaks do not mix) that runs one
scripted session of N turns. Every turn calls a tool returning 20 KB; the
transcript goes to a file (as in the agent). Two variants, at several N:

- managed: ``Compactor.prepare`` as the run's ``prepare`` (masking past
  the last 5 outputs, a tool-result cap, compaction at 90% of a 200k window;
  the summary comes from the same scripted model);
- baseline: the same session with no context management (what the loop holds
  grows with every output).

It prints the peak RSS of each, the ratio of each length to the shortest,
and the messages held at the end.

Target: the managed peak at 5,000 turns stays within ~1.5x of its peak at
500 turns, while the baseline's grows with N.

    .venv/bin/python bench/bench_context_memory.py [--turns 500,1000,2500,5000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

OUTPUT_BYTES = 20_000


def child(turns: int, managed: bool, window: int) -> dict[str, object]:
    from agentloop import Budget, Price, TranscriptWriter, run, tool
    from agentloop.agent.context.compaction import COMPACT_PROMPT, Compactor
    from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
    from agentloop.testing import FunctionModel

    @tool(read_only=True)
    def big(n: int) -> str:
        """A 20 KB output."""
        line = f"{n:08d} " + "x" * 90 + "\n"
        return line * (OUTPUT_BYTES // len(line))

    count = {"main": 0, "summary": 0, "max_chars": 0}

    def model(req: ModelRequest) -> ModelReply:
        if not req.tools and str(req.messages[0].get("content", "")).startswith(COMPACT_PROMPT):
            count["summary"] += 1
            return ModelReply(text=f"Summary {count['summary']}: called big many times; all outputs were 20 KB.", usage=Usage(1000, 30))
        count["main"] += 1
        chars = sum(len(str(m.get("content", ""))) for m in req.messages)
        count["max_chars"] = max(count["max_chars"], chars)
        if count["main"] > turns:
            return ModelReply(text="done", usage=Usage(100, 2))
        return ModelReply(tool_calls=(ToolCall(f"c{count['main']}", "big", {"n": count["main"]}),), usage=Usage(100, 10))

    m = FunctionModel(model, name="m")
    cm = Compactor(window=window, summarizer=m) if managed else None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.jsonl")
        with TranscriptWriter(path) as w:
            r = run(m, [big], "go", Budget(max_steps=turns + 5), transcript=w, prices={"m": Price(1, 1)},
                    prepare=cm.prepare if cm is not None else None)
        size = os.path.getsize(path)
    assert r.stop_reason == "no_tool_calls", r.stop_reason
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "turns": turns,
        "managed": managed,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "messages_held": len(r.messages),
        "chars_held": sum(len(str(x.get("content", ""))) for x in r.messages),
        "max_request_chars": count["max_chars"],
        "compactions": count["summary"],
        "transcript_mb": round(size / 2**20, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", default="500,1000,2500,5000")
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--child", nargs=2, metavar=("TURNS", "MANAGED"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1] == "1", args.window)))
        return 0
    lengths = [int(x) for x in args.turns.split(",")]
    rows: dict[bool, list[dict[str, object]]] = {True: [], False: []}
    for managed in (True, False):
        for n in lengths:
            out = subprocess.run([sys.executable, __file__, "--window", str(args.window), "--child", str(n), "1" if managed else "0"],
                                 capture_output=True, text=True, check=True)
            rows[managed].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"peak RSS over sessions with {OUTPUT_BYTES // 1000} KB tool outputs, window {args.window} tokens, one subprocess each")
    print(f"{'variant':<9} {'turns':>6} {'peak MB':>8} {'vs first':>9} {'msgs held':>10} {'chars held':>11} {'max req chars':>14} {'compactions':>12}")
    for managed in (True, False):
        first = float(rows[managed][0]["peak_rss_mb"])  # type: ignore[arg-type]
        for r in rows[managed]:
            peak = float(r["peak_rss_mb"])  # type: ignore[arg-type]
            print(f"{'managed' if managed else 'baseline':<9} {r['turns']:>6} {peak:>8.1f} {peak / first:>8.2f}x "
                  f"{r['messages_held']:>10} {r['chars_held']:>11} {r['max_request_chars']:>14} {r['compactions']:>12}")
    m_last = float(rows[True][-1]["peak_rss_mb"])  # type: ignore[arg-type]
    b_last = float(rows[False][-1]["peak_rss_mb"])  # type: ignore[arg-type]
    m_ratio = m_last / float(rows[True][0]["peak_rss_mb"])  # type: ignore[arg-type]
    print(f"managed at {lengths[-1]} turns vs {lengths[0]}: {m_ratio:.2f}x for {lengths[-1] / lengths[0]:.0f}x the turns; "
          f"baseline at {lengths[-1]} turns uses {b_last / m_last:.1f}x the managed peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
