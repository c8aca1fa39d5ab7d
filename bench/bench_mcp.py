"""The cost of calling an MCP tool through agentloop, against a direct call through the SDK, same server, same run.

    .venv/bin/python bench/bench_mcp.py [--server lowlevel|fastmcp] [--calls 50] [--rounds 20]

The server is ``--server``: the tests' server on the SDK's low-level
``Server`` (default: the leanest, so the client's own cost shows) or their
fastmcp server, in process, so neither figure includes a process boundary.
The baseline is ``mcp.Client.call_tool`` awaited in a loop on its own event
loop. agentloop's figure is ``Registry.invoke`` of the same tool from a plain
thread: argument validation with jsonschema, the hop to the MCP loop thread
and back, and turning the result into a recorded value. Rounds of the two
alternate, so load on the machine hits both alike; prints the fastest and the
median round of each, agentloop's overhead per call, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from agentloop import Registry  # noqa: E402
from agentloop.events import ToolCall  # noqa: E402
from agentloop.mcp import McpManager, tool_name  # noqa: E402
from mcp_servers import lowlevel, pyserver  # noqa: E402

SERVERS = {"lowlevel": (lowlevel.server, "dotted.name", {}), "fastmcp": (pyserver.server._mcp_server, "echo", {"text": "x"})}


async def direct(server: Any, tool: str, args: dict[str, Any], calls: int) -> float:
    from mcp import Client

    async with Client(server, mode="legacy", cache=None) as c:
        await c.list_tools()
        for _ in range(5):
            await c.call_tool(tool, args)
        began = time.perf_counter()
        for _ in range(calls):
            await c.call_tool(tool, args)
        return (time.perf_counter() - began) / calls


def through_agentloop(m: McpManager, reg: Registry, name: str, args: dict[str, Any], calls: int) -> float:
    for _ in range(5):
        assert reg.invoke(ToolCall("w", name, args)).ok
    began = time.perf_counter()
    for _ in range(calls):
        reg.invoke(ToolCall("c", name, args))
    return (time.perf_counter() - began) / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=sorted(SERVERS), default="lowlevel")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    server, tool, targs = SERVERS[args.server]
    name = tool_name("s", tool)
    base, ours = [], []
    with McpManager(in_process={"s": server}) as m:
        reg = Registry(m.tools())
        for _ in range(args.rounds):
            base.append(asyncio.run(direct(server, tool, targs, args.calls)))
            ours.append(through_agentloop(m, reg, name, targs, args.calls))
    print(f"{tool!r} on the in-process {args.server} server: {args.rounds} rounds of {args.calls} calls each")
    for label, xs in (("SDK Client.call_tool, awaited (baseline)", base), (f"agentloop Registry.invoke({name})", ours)):
        print(f"  {label:<48} fastest {min(xs) * 1e6:8.1f} us/call   median {statistics.median(xs) * 1e6:8.1f} us/call")
    b, o = min(base), min(ours)
    print(f"  overhead (fastest rounds) {(o - b) * 1e6:+.1f} us/call; ratio {o / b:.2f}x the direct call "
          f"(medians: {statistics.median(ours) / statistics.median(base):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
