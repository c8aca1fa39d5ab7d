"""agentloop: a budgeted, auditable agent loop.

Every run has a spend cap that holds before the spend, an append-only
hash-chained transcript, and a replay that redoes it byte for byte.

The names below are imported on first use (PEP 562), so that importing the
package (as ``agentloop --version`` does) costs nothing: ``jsonschema`` and
``asyncio`` load only when a run needs them.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from . import _native  # noqa: E402

_native.install()  # before any core module: a stale compiled build must not shadow its source

if TYPE_CHECKING:
    from .budget import Budget, LocalLedger, Price, PriceTable, usd
    from .events import ModelReply, ModelRequest, ToolCall, ToolResult, Usage
    from .run import RunResult, arun, run
    from .tools import Registry, Tool, ToolError, tool
    from .transcript import MemoryTranscript, TranscriptWriter, verify_file

_EXPORTS = {
    "Budget": "budget",
    "LocalLedger": "budget",
    "Price": "budget",
    "PriceTable": "budget",
    "usd": "budget",
    "ModelReply": "events",
    "ModelRequest": "events",
    "ToolCall": "events",
    "ToolResult": "events",
    "Usage": "events",
    "RunResult": "run",
    "arun": "run",
    "run": "run",
    "Registry": "tools",
    "Tool": "tools",
    "ToolError": "tools",
    "tool": "tools",
    "MemoryTranscript": "transcript",
    "TranscriptWriter": "transcript",
    "verify_file": "transcript",
}

__all__ = [
    "Budget",
    "LocalLedger",
    "MemoryTranscript",
    "ModelReply",
    "ModelRequest",
    "Price",
    "PriceTable",
    "Registry",
    "RunResult",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "TranscriptWriter",
    "Usage",
    "__version__",
    "arun",
    "run",
    "tool",
    "usd",
    "verify_file",
]


def __getattr__(name: str) -> Any:
    modname = _EXPORTS.get(name)
    if modname is None:
        raise AttributeError(f"module 'agentloop' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"agentloop.{modname}"), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps ``agentloop.run`` the function: importing the submodule
    ``agentloop.run`` would otherwise bind the module to that name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "run" and isinstance(value, types.ModuleType):
            value = value.run
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
