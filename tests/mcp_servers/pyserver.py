"""A small MCP server written with fastmcp, used by the tests in process and over stdio.

Run as ``python pyserver.py`` it serves stdio. ``PYSERVER_VERSION`` sets the
version it reports (to test fingerprints and replay warnings).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.types import Image
from pydantic import BaseModel, Field

# 1x1 transparent PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

server = FastMCP("pyserver", version=os.environ.get("PYSERVER_VERSION", "1.0.0"))


class Sum(BaseModel):
    total: float
    terms: int


@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool(annotations={"readOnlyHint": True})
def add(a: float, b: float) -> Sum:
    """Add two numbers; the answer is structured."""
    return Sum(total=a + b, terms=2)


@server.tool(annotations={"readOnlyHint": True})
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@server.tool
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@server.tool(annotations={"readOnlyHint": True})
async def wait(seconds: Annotated[float, Field(ge=0, le=60)], tag: str = "") -> str:
    """Sleep, then answer with the tag."""
    await asyncio.sleep(seconds)
    return tag or "done"


@server.tool(annotations={"readOnlyHint": True})
async def jitter(tag: str) -> str:
    """Sleep a random 0 to 40 ms, then answer with the tag: calls finish in random order."""
    await asyncio.sleep(random.uniform(0, 0.04))
    FINISHED.append(tag)
    return tag


FINISHED: list[str] = []
ARRIVED: dict[str, int] = {}


@server.tool(annotations={"readOnlyHint": True})
async def rendezvous(group: str, size: int) -> str:
    """Wait until ``size`` calls of ``group`` are in flight at once: "met", or "alone" after 20 s."""
    ARRIVED[group] = ARRIVED.get(group, 0) + 1
    for _ in range(2000):
        if ARRIVED[group] >= size:
            return "met"
        await asyncio.sleep(0.01)
    return "alone"


@server.tool
def getpid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool
def crash() -> str:
    """Exit the process at once, mid-call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations={"readOnlyHint": True})
def getenv(name: str) -> str:
    """An environment variable of the server process."""
    return os.environ.get(name, "<unset>")


if __name__ == "__main__":
    print("pyserver starting", file=sys.stderr)
    server.run(transport="stdio", show_banner=False)
