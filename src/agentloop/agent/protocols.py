"""What the ``Agent`` depends on, and the do-nothing defaults: its hooks and its context manager.

Every method the agent calls on a collaborator is declared here, so a
collaborator is checked against a Protocol instead of probed with ``getattr``.
``agent.builder`` makes the real ones (``extensions.ClaudeHooks``,
``extensions.AgentContext``); ``NoHooks`` and ``NoContext`` stand in when
nothing is configured.

The other way round, what each part may see of the agent is a Protocol too:
``HookSubject`` (hooks), ``ContextSubject`` (the context manager, sub-agents),
``PartsSource`` (what ``agent/builder.py`` builds the parts from) and
``PromptSubject`` (the system prompt). The ``Agent`` satisfies all of them;
nothing is typed ``Any`` for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..events import Message, ToolCall, ToolResult
from ..run import RunResult
from .errors import AgentError

if TYPE_CHECKING:
    from ..budget import Ledger, PriceTable
    from ..config.settings import SettingsSource
    from ..mcp.agent import McpServers
    from ..tools import Registry
    from .agent_settings import AgentSettings
    from .model_choice import ModelChoice
    from .model_options import ModelOptions
    from .permissions.rules import PermissionPolicy
    from .plugins import Plugin
    from .sandbox.bubblewrap import Sandbox, SandboxSettings
    from .sandbox.child_env import Redactor
    from .secret_guard import SecretGuard
    from .session.store import Durability, Session, SessionStats
    from .slash_commands import SlashCommands
    from .spawn import ChildEnv
    from .toolbox import ExtraTools
    from .tools.background import BackgroundShells
    from .tools.builtin import RunningProcesses
    from .tools.session_tools import SessionLink
    from .trust import TrustDecision

__all__ = [
    "AgentError",
    "AgentHooks",
    "AskPermission",
    "ContextManager",
    "ContextSubject",
    "Execute",
    "HookSubject",
    "NoContext",
    "NoHooks",
    "PartsSource",
    "PermissionAnswer",
    "PermissionReply",
    "Prepare",
    "PromptDecision",
    "ToolCallSubject",
    "TurnSubject",
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


class HookSubject(Protocol):
    """What hooks see of the agent: its session and folder, its mode, and where to tell and ask the user."""

    @property
    def session(self) -> Session: ...
    @property
    def cwd(self) -> str: ...
    @property
    def permission_mode(self) -> str: ...
    @property
    def model_spec(self) -> str: ...
    @property
    def stop_hook_active(self) -> bool: ...
    @property
    def on_notice(self) -> Callable[[str], None] | None: ...
    @property
    def ask_permission(self) -> AskPermission | None: ...
    def record(self, kind: str, payload: Any) -> None: ...


class ToolCallSubject(HookSubject, Protocol):
    """What the agent's tool calls run with (``pipeline.ToolCalls``): its hooks, tools, rules, sandbox and secrets."""

    @property
    def hooks(self) -> AgentHooks: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def policy(self) -> PermissionPolicy: ...
    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def secrets(self) -> SecretGuard: ...
    @property
    def stats(self) -> SessionStats: ...
    @property
    def processes(self) -> RunningProcesses: ...


class ContextSubject(HookSubject, Protocol):
    """What the context manager and the sub-agents see: the model and its prices, the window, the
    spend cap, the permission rules, and the one way a tool call runs (``run_tool``)."""

    @property
    def window(self) -> int: ...
    @property
    def model(self) -> Any: ...
    @property
    def model_name(self) -> str: ...
    @property
    def prices(self) -> PriceTable: ...
    @property
    def max_usd_micros(self) -> int | None: ...
    @property
    def stats(self) -> SessionStats: ...
    @property
    def policy(self) -> PermissionPolicy: ...
    @property
    def settings(self) -> AgentSettings: ...
    def run_tool(self, call: ToolCall) -> ToolResult: ...
    def tool_pipeline(self, registry: Registry | None = None, *, child: bool = False, policy: PermissionPolicy | None = None) -> Callable[[ToolCall], ToolResult]: ...
    def open_model(self, spec: str) -> Any: ...


class TurnSubject(ContextSubject, Protocol):
    """What one run of a turn is given (``agent/turn.py``): the model, tools, context manager and tracing."""

    @property
    def context(self) -> ContextManager: ...
    @property
    def tracing(self) -> Any: ...
    @property
    def loop_threshold(self) -> int | None: ...
    @property
    def model_options(self) -> ModelOptions: ...
    def shown_tools(self) -> Registry: ...
    def tools_changed(self) -> Registry | None: ...


class PartsSource(ContextSubject, Protocol):
    """What ``agent/builder.py`` builds the parts from: the agent's settings, folders, environment,
    tools and sandbox (read when a part is made, and by the sub-agents' tools when a child starts)."""

    def child_system_prompt(self, cwd: str) -> str: ...
    def file_changed(self, path: str, before: bytes | None, after: bytes) -> None: ...
    @property
    def home(self) -> str: ...
    @property
    def new_session_id(self) -> str | None: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def sources(self) -> list[SettingsSource]: ...
    @property
    def plugins(self) -> list[Plugin]: ...
    @property
    def commands(self) -> Mapping[str, Any]: ...
    @property
    def skills(self) -> Mapping[str, Any]: ...
    @property
    def trust(self) -> TrustDecision: ...
    @property
    def durability(self) -> Durability: ...
    @property
    def mcp_in_background(self) -> bool: ...
    @property
    def tracing(self) -> Any: ...
    @property
    def child_env(self) -> ChildEnv: ...
    @property
    def add_dirs(self) -> list[str]: ...
    @property
    def shell_timeout_s(self) -> float: ...
    @property
    def shell_max_timeout_s(self) -> float | None: ...
    @property
    def processes(self) -> RunningProcesses: ...
    @property
    def background(self) -> BackgroundShells: ...
    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def extra_tools(self) -> ExtraTools: ...
    @property
    def load_warnings(self) -> list[str]: ...
    @property
    def models(self) -> ModelChoice: ...
    @property
    def cli_rules(self) -> list[tuple[str, str]]: ...
    @property
    def context(self) -> ContextManager: ...
    @property
    def secrets(self) -> SecretGuard: ...
    @property
    def session_link(self) -> SessionLink: ...
    @property
    def given_registry(self) -> Registry | None: ...
    @property
    def slash(self) -> SlashCommands: ...
    @property
    def mcp_servers(self) -> McpServers | None: ...
    @property
    def memory_text(self) -> str: ...
    @property
    def model_options(self) -> ModelOptions: ...
    @property
    def sandbox_settings(self) -> SandboxSettings: ...


class AgentHooks(Protocol):
    def session_start(self, agent: HookSubject, source: str) -> str: ...
    def user_prompt_submit(self, agent: HookSubject, prompt: str) -> PromptDecision: ...
    def pre_tool_use(self, agent: HookSubject, call: ToolCall) -> ToolCall | ToolResult: ...
    def approved(self, call: ToolCall) -> bool: ...
    def post_tool_use(self, agent: HookSubject, call: ToolCall, result: ToolResult) -> ToolResult: ...
    def stop(self, agent: HookSubject, result: RunResult) -> str | None: ...
    def session_end(self, agent: HookSubject, reason: str) -> None: ...
    def sees_tool_calls(self) -> bool: ...
    def permission_request(self, agent: HookSubject, call: ToolCall) -> tuple[str, str] | None: ...
    def notification(self, agent: HookSubject, message: str, kind: str) -> None: ...
    def scoped_hooks(self, agent: HookSubject, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None: ...


class NoHooks:
    """No hooks configured: every event passes through unchanged."""

    def session_start(self, agent: HookSubject, source: str) -> str:
        """Returns extra context for the model ("" for none)."""
        return ""

    def user_prompt_submit(self, agent: HookSubject, prompt: str) -> PromptDecision:
        return PromptDecision(prompt)

    def pre_tool_use(self, agent: HookSubject, call: ToolCall) -> ToolCall | ToolResult:
        """Return the call (maybe rewritten) to go on, or a result to refuse it."""
        return call

    def approved(self, call: ToolCall) -> bool:
        """True when a PreToolUse hook allowed ``call``: the mode's own prompt is skipped (rules still apply)."""
        return False

    def post_tool_use(self, agent: HookSubject, call: ToolCall, result: ToolResult) -> ToolResult:
        return result

    def stop(self, agent: HookSubject, result: RunResult) -> str | None:
        """Return a reason to keep going (the next user message of the same turn), or None to stop.

        ``agent.stop_hook_active`` says whether the turn already goes on because of a Stop hook.
        """
        return None

    def session_end(self, agent: HookSubject, reason: str) -> None:
        return None

    def sees_tool_calls(self) -> bool:
        """True when a tool hook (PreToolUse, PostToolUse, PostToolUseFailure) is configured: tool calls
        then run one at a time (hooks record from the calling thread)."""
        return False

    def permission_request(self, agent: HookSubject, call: ToolCall) -> tuple[str, str] | None:
        """A call is about to ask for permission: ``("allow" | "deny", message)`` decides it, None asks as usual."""
        return None

    def notification(self, agent: HookSubject, message: str, kind: str) -> None:
        """The user is about to be asked or told something (``kind``: ``permission_prompt``...)."""
        return None

    def scoped_hooks(self, agent: HookSubject, value: Any, where: str, plugin_root: str,
                     trusted: bool) -> Callable[[], None] | None:
        """A command's or skill's front matter ``hooks``, added while it is active; what takes them out (None: none)."""
        return None


class ContextManager(Protocol):
    def prepare(self, agent: ContextSubject, messages: list[Message]) -> list[Message]: ...
    def compact(self, agent: ContextSubject, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        """A manual compaction between runs; its side call decided and charged by ``room``, the session's ledger."""
    def run_prepare(self, agent: ContextSubject) -> Prepare | None: ...
    def wrap_executor(self, agent: ContextSubject, execute: Execute) -> Execute: ...
    def read_only_agent_types(self) -> frozenset[str]: ...
    def warns_of_window(self) -> bool: ...


class NoContext:
    """No context management: messages go to the model as they are."""

    def prepare(self, agent: ContextSubject, messages: list[Message]) -> list[Message]:
        return messages

    def compact(self, agent: ContextSubject, messages: list[Message], instructions: str, room: Ledger) -> list[Message]:
        raise AgentError("compaction is not available in this build")

    def run_prepare(self, agent: ContextSubject) -> Prepare | None:
        """The run's ``prepare`` (compaction, the loop check, sub-agents' budget binding), or None."""
        return None

    def wrap_executor(self, agent: ContextSubject, execute: Execute) -> Execute:
        """The turn's executor, maybe wrapped (sub-agents of read-only types run side by side)."""
        return execute

    def read_only_agent_types(self) -> frozenset[str]:
        """Sub-agent types whose tools change nothing (plan mode may launch them)."""
        return frozenset()

    def warns_of_window(self) -> bool:
        """True when this manager warns of the context window itself (before each call)."""
        return False
