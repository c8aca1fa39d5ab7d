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

Then the cost of the output cap (``MAX_MCP_OUTPUT_TOKENS``): a tool returning
5 MB of text, called through agentloop, which estimates its tokens, writes it whole to a file and gives the model a preview
and the path, against the same call with the cap lifted. The difference is the
time to cap and spill, printed beside the small call measured above
(``--big-rounds`` rounds, alternating).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
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


BIG = 5 * 1024 * 1024


def big_server() -> Any:
    """A low-level SDK server with one tool answering 5 MB of text."""
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    text = ("0123456789abcdef" * 4 + "\n") * (BIG // 65)
    tools = [types.Tool(name="big", description="5 MB of text", input_schema={"type": "object"})]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("big", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def cap_cost(rounds: int, small_us: float) -> None:
    from agentloop.mcp.limits import DEFAULT_MAX_OUTPUT_TOKENS

    server = big_server()
    base, ours = [], []
    spill_root = tempfile.mkdtemp(prefix="bench-mcp-spill-")
    try:
        with McpManager(in_process={"s": server}, environ={}, notify=lambda text: None) as m:  # the warnings are expected
            reg = Registry(m.tools())
            for i in range(rounds + 1):
                m.output.max_tokens = 10**9  # the same call with no cap: the baseline
                began = time.perf_counter()
                r = reg.invoke(ToolCall("c", "mcp__s__big", {}))
                plain = time.perf_counter() - began
                assert r.ok and isinstance(r.content, str) and len(r.content) >= BIG - 65
                m.output.max_tokens = DEFAULT_MAX_OUTPUT_TOKENS
                m.output.spill_dir = os.path.join(spill_root, str(i))  # a fresh file each round: the write is timed
                began = time.perf_counter()
                r = reg.invoke(ToolCall("c", "mcp__s__big", {}))
                capped = time.perf_counter() - began
                assert r.ok and isinstance(r.content, str) and len(r.content) < 5000, "the 5 MB result was not capped"
                if i:  # the first round warms up
                    base.append(plain)
                    ours.append(capped)
    finally:
        shutil.rmtree(spill_root, ignore_errors=True)
    b, o = min(base), min(ours)
    print(f"a 5 MB result ({BIG:,} characters) through agentloop, {rounds} rounds of one call each")
    print(f"  {'with no cap (baseline)':<48} fastest {b * 1e3:8.2f} ms/call   median {statistics.median(base) * 1e3:8.2f} ms/call")
    print(f"  {'capped at 25,000 tokens and spilled to a file':<48} fastest {o * 1e3:8.2f} ms/call   median {statistics.median(ours) * 1e3:8.2f} ms/call")
    print(f"  time to cap and spill (fastest rounds) {(o - b) * 1e3:+.2f} ms/call; ratio {o / b:.2f}x the uncapped 5 MB call; "
          f"the small call above takes {small_us:.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=sorted(SERVERS), default="lowlevel")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--big-rounds", type=int, default=5)
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
    cap_cost(args.big_rounds, o * 1e6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
