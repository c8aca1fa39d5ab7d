"""The cost of calling an MCP tool through agentloop, against a direct call through the SDK, same server, same run.

    .venv/bin/python bench/bench_mcp.py [--calls 300]

The server is the tests' fastmcp server (``tests/mcp_servers/pyserver.py``),
in process, so neither figure includes a process boundary. The baseline is
``mcp.Client.call_tool("echo", ...)`` awaited in a loop on its own event loop.
agentloop's figure is ``Registry.invoke`` of ``mcp__py__echo`` from a plain
thread: argument validation with jsonschema, the hop to the MCP loop thread
and back, and turning the result into a recorded value. Prints the median
per-call time of each, agentloop's overhead per call, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from agentloop import Registry  # noqa: E402
from agentloop.events import ToolCall  # noqa: E402
from agentloop.mcp import McpManager  # noqa: E402
from mcp_servers import pyserver  # noqa: E402


async def direct(calls: int, rounds: int) -> list[float]:
    from mcp import Client

    out = []
    async with Client(pyserver.server._mcp_server, mode="legacy", cache=None) as c:
        await c.list_tools()
        for _ in range(10):
            await c.call_tool("echo", {"text": "warm"})
        for _ in range(rounds):
            began = time.perf_counter()
            for i in range(calls):
                await c.call_tool("echo", {"text": str(i)})
            out.append((time.perf_counter() - began) / calls)
    return out


def through_agentloop(calls: int, rounds: int) -> list[float]:
    out = []
    with McpManager(in_process={"py": pyserver.server}) as m:
        reg = Registry(m.tools())
        for _ in range(10):
            assert reg.invoke(ToolCall("w", "mcp__py__echo", {"text": "warm"})).ok
        for _ in range(rounds):
            began = time.perf_counter()
            for i in range(calls):
                reg.invoke(ToolCall("c", "mcp__py__echo", {"text": str(i)}))
            out.append((time.perf_counter() - began) / calls)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    base, ours = [], []
    for _ in range(args.rounds):  # interleaved, so load on the machine hits both alike
        base += asyncio.run(direct(args.calls, 1))
        ours += through_agentloop(args.calls, 1)
    b, o = statistics.median(base), statistics.median(ours)
    print(f"echo on an in-process fastmcp server, {args.calls} calls x {args.rounds} rounds (medians)")
    print(f"  SDK Client.call_tool, awaited (baseline): {b * 1e6:8.1f} us/call")
    print(f"  agentloop Registry.invoke(mcp__py__echo):  {o * 1e6:8.1f} us/call")
    print(f"  overhead {(o - b) * 1e6:+.1f} us/call; ratio {o / b:.2f}x the direct call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
