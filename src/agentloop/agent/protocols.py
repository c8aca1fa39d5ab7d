"""What the ``Agent`` depends on, and the do-nothing defaults: its hooks and its context manager.

Every method the agent calls on a collaborator is declared here, so a
collaborator is checked against a Protocol instead of probed with ``getattr``.
``agent.builder`` makes the real ones (``extensions.ClaudeHooks``,
``extensions.AgentContext``); ``NoHooks`` and ``NoContext`` stand in when
nothing is configured.

The other way round, no part is handed the agent: what hooks see of it is a
``HookFacts``, what the context manager sees a ``ContextFacts``: small frozen
values ``agent/builder.py`` makes (what changes during a session is read through
a callable or its owner object), so nothing writes into the agent through them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..events import Message, ToolCall, ToolResult
from ..run import RunResult
from .errors import AgentError

if TYPE_CHECKING:
    from ..budget import Ledger
    from .agent_settings import AgentSettings
    from .model_choice import ModelChoice
    from .permissions.rules import PermissionPolicy
    from .session.store import Session
    from .subagents.background import Backgrounds

__all__ = [
    "AgentError",
    "AgentHooks",
    "AskPermission",
    "ContextFacts",
    "ContextManager",
    "Execute",
    "HookFacts",
    "NoContext",
    "NoHooks",
    "PermissionAnswer",
    "PermissionReply",
    "Prepare",
    "PromptDecision",
]

PermissionAnswer = Literal["allow", "always", "deny"]


@dataclass(frozen=True)
class PermissionReply:
    """An answer with more than its word: a refusal's reason for the model, or the arguments the
    answerer allowed instead of the model's (the Agent SDK's ``canUseTool`` gives both)."""

    answer: PermissionAnswer
    message: str = ""
    """With ``deny``: why, told to the model in the call's result."""
    arguments: Any = None
    """With ``allow``/``always``: the arguments to run the call with (checked again as the model's are); None: the model's."""
    interrupt: bool = False
    """With ``deny``: the turn stops after this call, before the model is called again, and the turn's other calls
    are not run (the Agent SDK's ``interrupt`` on a deny; Claude Code's "No, and tell Claude what to do differently")."""


AskPermission = Callable[[ToolCall, Any], "PermissionAnswer | PermissionReply"]
Execute = Callable[[Sequence[ToolCall]], list[ToolResult]]
"""A turn's calls in, one result per call (in call order) out: the run's ``executor``."""
Prepare = Callable[[Any, Any], "str | None"]
"""The run's ``prepare`` seam: ``(state, record) -> stop reason or None``."""


@dataclass(frozen=True)
class PromptDecision:
    """What UserPromptSubmit hooks made of a prompt."""

    prompt: str
    blocked: str | None = None
    """Why the prompt was refused (then no run happens)."""
    context: str = ""
    """Extra text for the model, added after the prompt."""


@dataclass(frozen=True, slots=True)
class HookFacts:
    """What hooks see of the session, made once by ``agent/builder.py`` (``hook_facts``). What changes during a
    session (its session, folder, mode, model, the front end's callbacks) is read through a callable when a
    hook runs; none of it is the agent, and nothing can be set through it (a frozen value)."""

    record: Callable[[str, Any], None]
    """Appends a record (``hook``) to the session's chain."""
    session: Callable[[], Session | None] = lambda: None
    cwd: Callable[[], str] = lambda: ""
    permission_mode: Callable[[], str | None] = lambda: None
    model_spec: Callable[[], str] = lambda: ""
    stop_hook_active: Callable[[], bool] = lambda: False
    """True while the turn already goes on because of a Stop hook."""
    on_notice: Callable[[], Callable[[str], None] | None] = lambda: None
    """Where the front end shows notices now (None: only logged)."""
    ask_permission: Callable[[], AskPermission | None] = lambda: None
    """Who is asked now, when a hook asks for approval (None: no one can be)."""
    stop_turn: Callable[[], None] = lambda: None
    """The user refused a call a hook asked about, and stopped the turn."""
    carry_env: Callable[[Mapping[str, str], str], list[str]] = lambda exports, where: [
        f"{where}: {', '.join(sorted(exports))} not passed on: this agent has no child environment to add them to"]
    """Variables to add to the environment children start with (SessionStart hooks' ``CLAUDE_ENV_FILE``
    exports), by what set them; returns warnings. The secret guard decides and makes the change
    (``SecretGuard.carry_exports``)."""


@dataclass(frozen=True, slots=True)
class ContextFacts:
    """What the context manager sees, made once by ``agent/builder.py`` (``context_facts``): the model (its owner,
    ``ModelChoice``: the model, its name, prices and window now), the settings, the session and its chain, the
    permission rules now, the one way a tool call runs, and the hooks' facts (for notices)."""

    models: ModelChoice
    settings: AgentSettings
    session: Callable[[], Session]
    record: Callable[[str, Any], None]
    policy: Callable[[], PermissionPolicy]
    run_tool: Callable[[ToolCall], ToolResult]
    hooks: HookFacts


class AgentHooks(Protocol):
    def session_start(self, facts: HookFacts, source: str) -> str: ...
    def user_prompt_submit(self, facts: HookFacts, prompt: str) -> PromptDecision: ...
    def pre_tool_use(self, facts: HookFacts, call: ToolCall) -> ToolCall | ToolResult: ...
    def approved(self, call: ToolCall) -> bool: ...
    def post_tool_use(self, facts: HookFacts, call: ToolCall, result: ToolResult) -> ToolResult: ...
    def stop(self, facts: HookFacts, result: RunResult) -> str | None: ...
    def session_end(self, facts: HookFacts, reason: str) -> None: ...
    def sees_tool_calls(self) -> bool: ...
    def permission_request(self, facts: HookFacts, call: ToolCall) -> tuple[str, str] | None: ...
    def notification(self, facts: HookFacts, message: str, kind: str) -> None: ...
    def scoped_hooks(self, facts: HookFacts, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None: ...


class NoHooks:
    """No hooks configured: every event passes through unchanged."""

    def session_start(self, facts: HookFacts, source: str) -> str:
        """Returns extra context for the model ("" for none)."""
        return ""

    def user_prompt_submit(self, facts: HookFacts, prompt: str) -> PromptDecision:
        return PromptDecision(prompt)

    def pre_tool_use(self, facts: HookFacts, call: ToolCall) -> ToolCall | ToolResult:
        """Return the call (maybe rewritten) to go on, or a result to refuse it."""
        return call

    def approved(self, call: ToolCall) -> bool:
        """True when a PreToolUse hook allowed ``call``: the mode's own prompt is skipped (rules still apply)."""
        return False

    def post_tool_use(self, facts: HookFacts, call: ToolCall, result: ToolResult) -> ToolResult:
        return result

    def stop(self, facts: HookFacts, result: RunResult) -> str | None:
        """Return a reason to keep going (the next user message of the same turn), or None to stop.

        ``facts.stop_hook_active()`` says whether the turn already goes on because of a Stop hook.
        """
        return None

    def session_end(self, facts: HookFacts, reason: str) -> None:
        return None

    def sees_tool_calls(self) -> bool:
        """True when a tool hook (PreToolUse, PostToolUse, PostToolUseFailure) is configured: tool calls
        then run one at a time (hooks record from the calling thread)."""
        return False

    def permission_request(self, facts: HookFacts, call: ToolCall) -> tuple[str, str] | None:
        """A call is about to ask for permission: ``("allow" | "deny", message)`` decides it, None asks as usual."""
        return None

    def notification(self, facts: HookFacts, message: str, kind: str) -> None:
        """The user is about to be asked or told something (``kind``: ``permission_prompt``...)."""
        return None

    def scoped_hooks(self, facts: HookFacts, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None:
        """A command's or skill's front matter ``hooks``, added while it is active; what takes them out (None: none)."""
        return None


class ContextManager(Protocol):
    def prepare(self, facts: ContextFacts, messages: list[Message]) -> list[Message]: ...
    def compact(self, facts: ContextFacts, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        """A manual compaction between runs; its side call decided and charged by ``room``, the session's ledger."""
    def run_prepare(self, facts: ContextFacts) -> Prepare | None: ...
    def wrap_executor(self, facts: ContextFacts, execute: Execute) -> Execute: ...
    def read_only_agent_types(self) -> frozenset[str]: ...
    def warns_of_window(self) -> bool: ...
    def backgrounds(self) -> Backgrounds | None:
        """The sub-agents started in the background (``subagents/background.py``); None without sub-agents."""


class NoContext:
    """No context management: messages go to the model as they are."""

    def prepare(self, facts: ContextFacts, messages: list[Message]) -> list[Message]:
        return messages

    def compact(self, facts: ContextFacts, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        raise AgentError("compaction is not available in this build")

    def run_prepare(self, facts: ContextFacts) -> Prepare | None:
        """The run's ``prepare`` (compaction, the loop check, sub-agents' budget binding), or None."""
        return None

    def wrap_executor(self, facts: ContextFacts, execute: Execute) -> Execute:
        """The turn's executor, maybe wrapped (sub-agents of read-only types run side by side)."""
        return execute

    def read_only_agent_types(self) -> frozenset[str]:
        """Sub-agent types whose tools change nothing (plan mode may launch them)."""
        return frozenset()

    def warns_of_window(self) -> bool:
        """True when this manager warns of the context window itself (before each call)."""
        return False

    def backgrounds(self) -> Backgrounds | None:
        """No sub-agents here, so none in the background."""
        return None
