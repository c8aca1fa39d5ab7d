"""What the ``Agent`` depends on, and the do-nothing defaults: its hooks and its context manager.

Every method the agent calls on a collaborator is declared here, so a
collaborator is checked against a Protocol instead of probed with ``getattr``.
``agent.builder`` makes the real ones (``extensions.ClaudeHooks``,
``extensions.AgentContext``); ``NoHooks`` and ``NoContext`` stand in when
nothing is configured. The ``agent`` argument is the ``Agent`` (typed ``Any``
here so this module does not import ``core``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..events import Message, ToolCall, ToolResult
from ..run import RunResult

__all__ = [
    "AgentError",
    "AgentHooks",
    "AskPermission",
    "ContextManager",
    "Execute",
    "NoContext",
    "NoHooks",
    "PermissionAnswer",
    "Prepare",
    "PromptDecision",
]

PermissionAnswer = Literal["allow", "always", "deny"]
AskPermission = Callable[[ToolCall, Any], PermissionAnswer]
Execute = Callable[[Sequence[ToolCall]], list[ToolResult]]
"""A turn's calls in, one result per call (in call order) out: the run's ``executor``."""
Prepare = Callable[[Any, Any], "str | None"]
"""The run's ``prepare`` seam: ``(state, record) -> stop reason or None``."""


class AgentError(Exception):
    """The agent cannot start or continue: one line for the user (a bad model, config or session)."""


@dataclass(frozen=True)
class PromptDecision:
    """What UserPromptSubmit hooks made of a prompt."""

    prompt: str
    blocked: str | None = None
    """Why the prompt was refused (then no run happens)."""
    context: str = ""
    """Extra text for the model, added after the prompt."""


class AgentHooks(Protocol):
    def session_start(self, agent: Any, source: str) -> str: ...
    def user_prompt_submit(self, agent: Any, prompt: str) -> PromptDecision: ...
    def pre_tool_use(self, agent: Any, call: ToolCall) -> ToolCall | ToolResult: ...
    def approved(self, call: ToolCall) -> bool: ...
    def post_tool_use(self, agent: Any, call: ToolCall, result: ToolResult) -> ToolResult: ...
    def stop(self, agent: Any, result: RunResult) -> str | None: ...
    def session_end(self, agent: Any, reason: str) -> None: ...
    def sees_tool_calls(self) -> bool: ...
    def permission_request(self, agent: Any, call: ToolCall) -> tuple[str, str] | None: ...
    def notification(self, agent: Any, message: str, kind: str) -> None: ...


class NoHooks:
    """No hooks configured: every event passes through unchanged."""

    def session_start(self, agent: Any, source: str) -> str:
        """Returns extra context for the model ("" for none)."""
        return ""

    def user_prompt_submit(self, agent: Any, prompt: str) -> PromptDecision:
        return PromptDecision(prompt)

    def pre_tool_use(self, agent: Any, call: ToolCall) -> ToolCall | ToolResult:
        """Return the call (maybe rewritten) to go on, or a result to refuse it."""
        return call

    def approved(self, call: ToolCall) -> bool:
        """True when a PreToolUse hook allowed ``call``: the mode's own prompt is skipped (rules still apply)."""
        return False

    def post_tool_use(self, agent: Any, call: ToolCall, result: ToolResult) -> ToolResult:
        return result

    def stop(self, agent: Any, result: RunResult) -> str | None:
        """Return a reason to keep going (the next user message of the same turn), or None to stop.

        ``agent.stop_hook_active`` says whether the turn already goes on because of a Stop hook.
        """
        return None

    def session_end(self, agent: Any, reason: str) -> None:
        return None

    def sees_tool_calls(self) -> bool:
        """True when a tool hook (PreToolUse, PostToolUse, PostToolUseFailure) is configured: tool calls
        then run one at a time (hooks record from the calling thread)."""
        return False

    def permission_request(self, agent: Any, call: ToolCall) -> tuple[str, str] | None:
        """A call is about to ask for permission: ``("allow" | "deny", message)`` decides it, None asks as usual."""
        return None

    def notification(self, agent: Any, message: str, kind: str) -> None:
        """The user is about to be asked or told something (``kind``: ``permission_prompt``...)."""
        return None


class ContextManager(Protocol):
    def prepare(self, agent: Any, messages: list[Message]) -> list[Message]: ...
    def compact(self, agent: Any, messages: list[Message], instructions: str) -> list[Message]: ...
    def run_prepare(self, agent: Any) -> Prepare | None: ...
    def wrap_executor(self, agent: Any, execute: Execute) -> Execute: ...
    def read_only_agent_types(self) -> frozenset[str]: ...
    def warns_of_window(self) -> bool: ...


class NoContext:
    """No context management: messages go to the model as they are."""

    def prepare(self, agent: Any, messages: list[Message]) -> list[Message]:
        return messages

    def compact(self, agent: Any, messages: list[Message], instructions: str) -> list[Message]:
        raise AgentError("compaction is not available in this build")

    def run_prepare(self, agent: Any) -> Prepare | None:
        """The run's ``prepare`` (compaction, the loop check, sub-agents' budget binding), or None."""
        return None

    def wrap_executor(self, agent: Any, execute: Execute) -> Execute:
        """The turn's executor, maybe wrapped (sub-agents of read-only types run side by side)."""
        return execute

    def read_only_agent_types(self) -> frozenset[str]:
        """Sub-agent types whose tools change nothing (plan mode may launch them)."""
        return frozenset()

    def warns_of_window(self) -> bool:
        """True when this manager warns of the context window itself (before each call)."""
        return False
