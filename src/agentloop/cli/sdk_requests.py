"""The Agent SDK's control requests, one function each, and agentloop's ``can_use_tool`` question.

``sdk_control`` reads the requests and writes the answers; the rules are in
its docstring (2: ``initialize``; 3: ``interrupt``; 4: the settings; 5: the
permission question). A handler returns the ``response`` object of a success,
or raises ``ControlError`` with the reason the error answer gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .sdk_control import ControlError

if TYPE_CHECKING:
    from agentloop.agent.protocols import PermissionAnswer, PermissionReply
    from agentloop.events import ToolCall

    from .sdk_control import ControlChannel

__all__ = ["INITIALIZE_REFUSED", "handle", "permission_asker"]

INITIALIZE_REFUSED = {
    "agents": "agent definitions sent by the SDK are not loaded; put them in .claude/agents/ as agent files",
    "jsonSchema": "a JSON schema in initialize is not honoured; pass --json-schema",
    "plugins": "plugins sent in initialize are not loaded; pass --plugin-dir",
    "mcpServers": "MCP servers sent in initialize are not started; pass --mcp-config",
}
"""``initialize``'s fields that change what the session does and that agentloop cannot honour: each is an error."""


def handle(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    kind = req.get("subtype")
    fn = _HANDLERS.get(str(kind))
    if fn is None:
        raise ControlError(f"agentloop does not support the control request {kind!r}")
    return fn(ch, req)


def _initialize(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    for key, why in INITIALIZE_REFUSED.items():
        if req.get(key):
            raise ControlError(f"initialize: {key}: {why}")
    system = req.get("systemPrompt")
    if system is not None and not (isinstance(system, list) and all(isinstance(p, str) for p in system)):
        raise ControlError("initialize: systemPrompt must be a list of strings")
    append = req.get("appendSystemPrompt")
    if append is not None and not isinstance(append, str):
        raise ControlError("initialize: appendSystemPrompt must be a string")
    if system is not None or append is not None:
        from agentloop.agent.session_history import replace_system

        prompt = ch.agent.prompt
        if system is not None:
            prompt.override = "\n\n".join(system)
        if append is not None:
            prompt.append = f"{prompt.append}\n\n{append}" if prompt.append else append
        replace_system(ch.agent.session, ch.agent.system_messages())
    _sdk_mcp_servers(ch, req.get("sdkMcpServers"))
    hooks = req.get("hooks")
    if hooks:
        if ch.hook_callbacks is None:
            raise ControlError("initialize: hooks: this session cannot call back the SDK's hooks")
        ch.hook_callbacks(hooks)
    return _initialize_response(ch)


def _sdk_mcp_servers(ch: ControlChannel, names: Any) -> None:
    """``sdkMcpServers``: the names of the SDK's in-process MCP servers (the TypeScript SDK's way to give them)."""
    if not names:
        return
    from agentloop.mcp.config import ConfigError, parse_server

    if not isinstance(names, list):
        raise ControlError("initialize: sdkMcpServers must be a list of server names")
    try:
        for name in names:
            parse_server(name, {"type": "sdk", "name": name}, "initialize")
    except ConfigError as exc:
        raise ControlError(f"initialize: sdkMcpServers: {exc}") from None
    if ch.sdk_servers is None:
        raise ControlError("initialize: sdkMcpServers: this session cannot reach the SDK's MCP servers")
    ch.sdk_servers([str(n) for n in names])


def _initialize_response(ch: ControlChannel) -> dict[str, Any]:
    from agentloop import __version__

    agent = ch.agent
    commands = [{"name": name, "description": str(getattr(c, "description", "") or ""), "argumentHint": str(getattr(c, "argument_hint", "") or "")}
                for name, c in sorted({**(agent.skills or {}), **(agent.commands or {})}.items())]
    runner = getattr(agent.context, "subagents", None)
    agents = [{"name": name, "description": str(getattr(t, "description", "") or "")}
              for name, t in sorted((getattr(runner, "types", None) or {}).items())]
    return {
        "commands": commands,
        "agents": agents,
        "output_style": "default",
        "available_output_styles": ["default"],
        "models": [{"value": agent.model_spec, "displayName": agent.model_name, "description": "the session's model"}],
        "account": {},
        "hooks_applied": True,
        "hook_on_failure_supported": False,
        "claude_code_version": __version__,
    }


def _interrupt(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    return ch.interrupt(bool(req.get("cancel_queued")))


def _set_permission_mode(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    from agentloop.agent.permissions.modes import MODES

    mode, agent = req.get("mode"), ch.agent
    if mode not in MODES:
        raise ControlError(f"set_permission_mode: unknown mode {mode!r} (one of: {', '.join(MODES)})")
    if agent.permission_mode == mode:
        return {}
    if agent.settings.mode_managed:
        raise ControlError(f"set_permission_mode: the mode {agent.permission_mode} is set by managed settings")
    if mode not in agent.settings.mode_cycle():  # Shift+Tab's modes: bypassPermissions only when the session began in it
        why = ("bypassPermissions is chosen only by starting the session in it (--permission-mode bypassPermissions)"
               if mode == "bypassPermissions" else f"{mode} cannot be switched to mid-session; start the session in it")
        raise ControlError(f"set_permission_mode: {why}")
    for _ in range(len(MODES) + 1):
        if agent.permission_mode == mode:
            return {}
        agent.cycle_mode()
    raise ControlError(f"set_permission_mode: {mode} cannot be reached from {agent.permission_mode}")


def _set_model(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    model = req.get("model")
    agent = ch.agent
    spec = agent.settings.model if model in (None, "default") else model
    if not isinstance(spec, str) or not spec:
        raise ControlError("set_model: the model must be a string")
    if ":" not in spec and ":" in agent.model_spec:  # "claude-opus-4-5": the session's provider's model of that name
        spec = f"{agent.model_spec.split(':', 1)[0]}:{spec}"
    ch.between_turns.append(lambda: agent.set_model(str(spec), why="the SDK's set_model"))
    return {}


def _set_max_thinking_tokens(ch: ControlChannel, req: Mapping[str, Any]) -> dict[str, Any]:
    n = req.get("max_thinking_tokens")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
        raise ControlError("set_max_thinking_tokens: max_thinking_tokens must be a whole number or null")
    agent = ch.agent
    flag = "off" if n == 0 else (None if n is None else str(n))

    def apply() -> None:
        agent.models.set_thinking(flag)
        agent.set_model(agent.model_spec, why="the SDK's set_max_thinking_tokens")

    ch.between_turns.append(apply)
    return {}


_HANDLERS: dict[str, Callable[[ControlChannel, Mapping[str, Any]], dict[str, Any]]] = {
    "initialize": _initialize,
    "interrupt": _interrupt,
    "set_permission_mode": _set_permission_mode,
    "set_model": _set_model,
    "set_max_thinking_tokens": _set_max_thinking_tokens,
}


def permission_asker(ch: ControlChannel) -> Callable[[ToolCall, Any], PermissionAnswer | PermissionReply]:
    """Rule 5: ``--permission-prompt-tool stdio``'s asker: the question goes to the SDK's ``canUseTool``."""
    from agentloop.agent.protocols import PermissionReply

    def ask(call: ToolCall, decision: Any) -> PermissionAnswer | PermissionReply:
        reason = str(getattr(decision, "reason", "") or "")
        body: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": call.name,
            "input": dict(call.arguments) if isinstance(call.arguments, Mapping) else {},
            "tool_use_id": call.id,
            "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": call.name}], "behavior": "allow", "destination": "session"}],
        }
        if reason:
            body["decision_reason"] = reason
        try:
            answer = ch.request(body)
        except ControlError as exc:
            return PermissionReply("deny", f"no answer from the SDK's canUseTool ({exc})")
        return _permission_reply(ch, answer)

    return ask


def _permission_reply(ch: ControlChannel, answer: Mapping[str, Any]) -> PermissionReply:
    from agentloop.agent.protocols import PermissionReply

    behavior = answer.get("behavior")
    if behavior == "allow":
        updated = answer.get("updatedInput")
        if updated is not None and not isinstance(updated, dict):
            return PermissionReply("deny", "the SDK's canUseTool answer is malformed (updatedInput must be an object)")
        rules = answer.get("updatedPermissions")
        always = isinstance(rules, list) and any(isinstance(r, dict) and r.get("type") == "addRules" and r.get("behavior") == "allow"
                                                  for r in rules)
        return PermissionReply("always" if always else "allow", arguments=updated)
    if behavior == "deny":
        if answer.get("interrupt") is True:
            ch.interrupt(False)
        return PermissionReply("deny", str(answer.get("message") or ""))
    return PermissionReply("deny", f"the SDK's canUseTool answer is malformed (behavior {behavior!r}, expected allow or deny)")
