"""Claude Code's headless output shapes: ``-p --output-format json`` and ``stream-json``.

A script written against ``claude -p --output-format json`` reads the same
fields here (Claude Code's headless mode and Agent SDK message types are the
specification: ``SDKSystemMessage`` ``init``, ``SDKAssistantMessage``,
``SDKUserMessage`` carrying tool results, ``SDKPartialAssistantMessage``
``stream_event`` with ``--include-partial-messages``, and
``SDKResultMessage``). agentloop's own facts are extra fields beside them,
never in their place: ``cost_micros`` and ``session_cost_micros`` (exact
integer micro-dollars), ``transcript`` (the hash-chained session file),
``agentloop_stop_reason`` (the loop's own word for why it stopped) and
``error``.

Field by field (Claude Code -> agentloop):

- ``subtype``: ``success`` when the model finished; ``error_max_turns`` when
  ``--max-turns``/``--max-steps`` ran out; ``error_max_budget_usd`` when the
  spend cap stopped the run; ``error_during_execution`` otherwise (a model
  error, a loop, an interruption, a token budget).
- ``total_cost_usd``: a JSON number (dollars), as Claude Code gives it.
- ``usage``: ``input_tokens``, ``output_tokens``,
  ``cache_creation_input_tokens``, ``cache_read_input_tokens``.
- ``modelUsage``: per model, ``inputTokens``, ``outputTokens``,
  ``cacheReadInputTokens``, ``cacheCreationInputTokens``, ``costUSD``,
  ``contextWindow``.
- ``permission_denials``: ``{tool_name, tool_use_id, tool_input}`` for each
  call the permission system refused.
- ``stop_reason`` (in assistant messages and the result): ``end_turn``,
  ``tool_use`` or ``max_tokens``, as the Messages API says it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "assistant_message",
    "init_message",
    "partial_text",
    "result_message",
    "subtype_for",
    "tool_result_message",
    "usage_json",
]

FINISHED = ("no_tool_calls", "sentinel")


def _uuid() -> str:
    return str(uuid.uuid4())


def usage_json(usage: Any) -> dict[str, int]:
    """An agentloop ``Usage`` in the Messages API's names."""
    return {
        "input_tokens": int(getattr(usage, "input_tokens", 0)),
        "cache_creation_input_tokens": int(getattr(usage, "cache_write_tokens", 0)),
        "cache_read_input_tokens": int(getattr(usage, "cache_read_tokens", 0)),
        "output_tokens": int(getattr(usage, "output_tokens", 0)),
    }


def subtype_for(stop_reason: str) -> str:
    if stop_reason in FINISHED:
        return "success"
    if stop_reason == "step_budget":
        return "error_max_turns"
    if stop_reason == "cost_budget":
        return "error_max_budget_usd"
    return "error_during_execution"


def _api_stop_reason(reply: Any) -> str:
    if getattr(reply, "tool_calls", ()):
        return "tool_use"
    if getattr(reply, "finish_reason", None) in ("max_tokens", "length"):
        return "max_tokens"
    return "end_turn"


def init_message(
    session_id: str, *, cwd: str, model: str, tools: Sequence[str], permission_mode: str,
    mcp_servers: Sequence[Mapping[str, Any]] = (), slash_commands: Sequence[str] = (), version: str = "",
) -> dict[str, Any]:
    """The first line of ``stream-json``: what the session starts with."""
    return {
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": session_id,
        "tools": list(tools),
        "mcp_servers": [dict(s) for s in mcp_servers],
        "model": model,
        "permissionMode": permission_mode,
        "slash_commands": list(slash_commands),
        "apiKeySource": "none",
        "output_style": "default",
        "agentloop_version": version,
        "uuid": _uuid(),
    }


def assistant_message(session_id: str, reply: Any, step: int) -> dict[str, Any]:
    """A model turn as Claude Code streams it: the reply as Messages API content blocks."""
    content: list[dict[str, Any]] = [dict(b) for b in getattr(reply, "reasoning", ())]  # thinking blocks first, as the API sends them
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for c in reply.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
    usage = reply.usage
    return {
        "type": "assistant",
        "message": {
            "id": f"msg_{session_id}_{step}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or "",
            "content": content,
            "stop_reason": _api_stop_reason(reply),
            "stop_sequence": None,
            "usage": usage_json(usage) if usage is not None else usage_json(None),
        },
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def tool_result_message(session_id: str, result: Any) -> dict[str, Any]:
    """A tool's result as Claude Code streams it: a user message with a ``tool_result`` block."""
    if result.ok:
        c = result.content
        text = c if isinstance(c, str) else _json(c)
    else:
        text = str(result.error)
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": result.call_id, "content": text, "is_error": not result.ok}],
        },
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def partial_text(session_id: str, text: str, index: int = 0) -> dict[str, Any]:
    """A streamed piece of text (``--include-partial-messages``), as a raw API stream event."""
    return {
        "type": "stream_event",
        "event": {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def _json(v: Any) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)


def result_message(
    *, session_id: str, result: Any, duration_ms: int, duration_api_ms: int, model: str, context_window: int,
    permission_denials: Sequence[Mapping[str, Any]], session_cost_micros: int, transcript: str,
    last_reply: Any = None,
) -> dict[str, Any]:
    """The last line: Claude Code's ``result``, with agentloop's exact figures beside it."""
    subtype = subtype_for(result.stop_reason)
    cost_usd = result.spent_micros / 1_000_000
    u = usage_json(result.usage)
    out: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "duration_ms": duration_ms,
        "duration_api_ms": duration_api_ms,
        "num_turns": result.steps,
        "result": result.answer if subtype == "success" else (result.answer or result.error or ""),
        "stop_reason": _api_stop_reason(last_reply) if last_reply is not None else None,
        "session_id": session_id,
        "total_cost_usd": cost_usd,
        "usage": u,
        "modelUsage": {
            model: {
                "inputTokens": u["input_tokens"],
                "outputTokens": u["output_tokens"],
                "cacheReadInputTokens": u["cache_read_input_tokens"],
                "cacheCreationInputTokens": u["cache_creation_input_tokens"],
                "webSearchRequests": 0,
                "costUSD": cost_usd,
                "contextWindow": context_window,
            }
        },
        "permission_denials": [dict(d) for d in permission_denials],
        "uuid": _uuid(),
        # agentloop's own facts, beside Claude Code's
        "agentloop_stop_reason": result.stop_reason,
        "error": result.error,
        "cost_micros": result.spent_micros,
        "session_cost_micros": session_cost_micros,
        "transcript": transcript,
    }
    if subtype != "success" and result.error:
        out["errors"] = [str(result.error)]
    return out
