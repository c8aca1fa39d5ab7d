#!/usr/bin/env python3
"""The cost of OpenTelemetry tracing per step: a traced run against the same run untraced, same process.

Each step is a model turn that asks for a trivial tool and its result (so a
step makes one ``chat`` span and one ``execute_tool`` span). Tracing goes
through the SDK's ``BatchSpanProcessor`` (as the command line sets it up) to
an exporter that drops what it is given, so what is measured is agentloop's
spans and the SDK's batching, not a network. Rounds alternate traced and
untraced; the median µs per step of each is printed, with their ratio.

Target: tracing adds little to a step; the ratio is printed so a
change that makes it heavy shows.

    .venv/bin/python bench/bench_tracing.py [--steps 500] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop import Budget, MemoryTranscript, run, tool  # noqa: E402
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage  # noqa: E402


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Model:
    name = "gpt-4o-mini"

    def __init__(self, steps: int):
        self.left = steps

    def complete(self, request: ModelRequest) -> ModelReply:
        self.left -= 1
        if self.left <= 0:
            return ModelReply("done", (), Usage(10, 1))
        return ModelReply("", (ToolCall(f"c{self.left}", "add", {"a": 1, "b": 2}),), Usage(10, 1))


def _untraced(steps: int) -> float:
    t0 = time.perf_counter()
    run(Model(steps), [add], "go", Budget(max_steps=steps + 1, max_usd_micros=10**12), transcript=MemoryTranscript(), model_name="gpt-4o-mini")
    return (time.perf_counter() - t0) / steps * 1e6


def _traced(tracing: Any, steps: int) -> float:
    t0 = time.perf_counter()
    tracing.run(Model(steps), [add], "go", Budget(max_steps=steps + 1, max_usd_micros=10**12), transcript=MemoryTranscript(), model_name="gpt-4o-mini")
    return (time.perf_counter() - t0) / steps * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
    except ImportError:
        print("bench_tracing: needs the otel extra (pip install 'agentloop[otel]')", file=sys.stderr)
        return 2
    from agentloop.telemetry import Tracing

    class Drop(SpanExporter):
        exported = 0

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            Drop.exported += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    tracing = Tracing(provider)
    _untraced(50), _traced(tracing, 50)  # warm up
    off: list[float] = []
    on: list[float] = []
    for _ in range(args.rounds):
        off.append(_untraced(args.steps))
        on.append(_traced(tracing, args.steps))
    provider.shutdown()
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"untraced: {m_off:8.1f} µs a step (median of {args.rounds} runs of {args.steps} steps)")
    print(f"traced:   {m_on:8.1f} µs a step ({Drop.exported} spans exported through the batch processor)")
    print(f"tracing adds {m_on - m_off:.1f} µs a step: {m_on / m_off:.2f}x the untraced step")
    print(f"against a model call of 100 ms a step, that is {(m_on - m_off) / 1000 / 100:.2%} more time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
