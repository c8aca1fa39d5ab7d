"""agentloop: a budgeted, auditable agent loop.

Every run has a spend cap that holds before the spend, an append-only
hash-chained transcript, and a replay that redoes it byte for byte.
"""

from .budget import Budget, LocalLedger, Price, PriceTable, usd
from .events import ModelReply, ModelRequest, ToolCall, ToolResult, Usage
from .run import RunResult, arun, run
from .tools import Registry, Tool, ToolError, tool
from .transcript import MemoryTranscript, TranscriptWriter, verify_file

__version__ = "0.1.0"

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
