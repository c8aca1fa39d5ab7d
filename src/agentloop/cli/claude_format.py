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

Every message is checked against the Agent SDK's published ``sdk.d.ts``
(``SDKMessage``) by the tests: ``message`` of an ``assistant`` line is a whole
``BetaMessage`` (every nullable field present), usages are whole
``BetaUsage`` objects, a tool's result is ``MessageParam`` content blocks.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "api_key_source",
    "assistant_message",
    "informational",
    "init_message",
    "model_usage",
    "result_message",
    "subtype_for",
    "tool_result_blocks",
    "tool_result_message",
    "usage_json",
]

FINISHED = ("no_tool_calls", "sentinel")


def _uuid() -> str:
    return str(uuid.uuid4())


def new_message_id() -> str:
    """A Messages API style id, new for each model call (every turn's assistant message has its own)."""
    return "msg_" + uuid.uuid4().hex


def usage_json(usage: Any) -> dict[str, Any]:
    """An agentloop ``Usage`` as a whole ``BetaUsage`` (the result's ``NonNullableUsage`` too): the
    Messages API's token names, and its other fields at what agentloop knows of them."""
    write = int(getattr(usage, "cache_write_tokens", 0))
    return {
        "input_tokens": int(getattr(usage, "input_tokens", 0)),
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": int(getattr(usage, "cache_read_tokens", 0)),
        "output_tokens": int(getattr(usage, "output_tokens", 0)),
        "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},  # agentloop marks 5-minute breakpoints
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "speed": "standard",
        "inference_geo": "",
        "iterations": [],
        "output_tokens_details": {"thinking_tokens": 0},
        "fallback_credit": None,
    }


def delta_usage(usage: Any) -> dict[str, Any]:
    """``message_delta``'s usage (``BetaMessageDeltaUsage``): the turn's totals."""
    u = usage_json(usage)
    keep = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "server_tool_use",
            "iterations", "output_tokens_details", "fallback_credit")
    return {k: u[k] for k in keep}


def subtype_for(stop_reason: str) -> str:
    if stop_reason in FINISHED:
        return "success"
    if stop_reason == "step_budget":
        return "error_max_turns"
    if stop_reason == "cost_budget":
        return "error_max_budget_usd"
    return "error_during_execution"


def api_stop_reason(reply: Any) -> str:
    if getattr(reply, "tool_calls", ()):
        return "tool_use"
    if getattr(reply, "finish_reason", None) in ("max_tokens", "length"):
        return "max_tokens"
    return "end_turn"


def init_message(
    session_id: str, *, cwd: str, model: str, tools: Sequence[str], permission_mode: str,
    mcp_servers: Sequence[Mapping[str, Any]] = (), slash_commands: Sequence[str] = (), version: str = "",
    skills: Sequence[str] = (), agents: Sequence[str] = (), plugins: Sequence[Mapping[str, Any]] = (),
    api_key_source: str = "none",
) -> dict[str, Any]:
    """The first line of ``stream-json`` (``SDKSystemMessage``): what the session starts with.

    ``claude_code_version`` holds agentloop's version (the field is required; there is no Claude
    Code here), and ``agentloop_version`` says the same under agentloop's name. ``api_key_source``:
    one of the SDK's ``ApiKeySource`` values (``api_key_source``)."""
    return {
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": session_id,
        "tools": list(tools),
        "mcp_servers": [{"name": str(s["name"]), "status": str(s["status"])} for s in mcp_servers],
        "model": model,
        "permissionMode": permission_mode,
        "slash_commands": list(slash_commands),
        "skills": list(skills),
        "agents": list(agents),
        "plugins": [{"name": str(p["name"]), "path": str(p["path"])} for p in plugins],
        "apiKeySource": api_key_source,
        "output_style": "default",
        "claude_code_version": version,
        "agentloop_version": version,
        "uuid": _uuid(),
    }


def api_key_source(model_spec: str, key_env: str | None, env: Mapping[str, str]) -> str:
    """``apiKeySource`` in the Agent SDK's words (``sdk.d.ts``: ``ApiKeySource``, of which Claude Code
    reports ``"ANTHROPIC_API_KEY"`` for a key from that variable and ``"none"`` without one):
    ``"ANTHROPIC_API_KEY"`` when the session's model is Anthropic's and its key comes from that
    variable, set; else ``"none"`` (agentloop has no ``apiKeyHelper`` or ``/login``, and another
    vendor's key has no value there)."""
    from ..providers import model_record

    found = model_record(model_spec)
    var = key_env or (found[0].key_env[0] if found and found[0].key_env else None)
    if found and var == "ANTHROPIC_API_KEY" and var in found[0].key_env and env.get(var):
        return "ANTHROPIC_API_KEY"
    return "none"


def _content(reply: Any) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [dict(b) for b in getattr(reply, "reasoning", ())]  # thinking blocks first, as the API sends them
    if reply.text:
        content.append({"type": "text", "text": reply.text, "citations": None})
    for c in reply.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
    return content


def beta_message(reply: Any, message_id: str, *, content: list[dict[str, Any]] | None = None, done: bool = True) -> dict[str, Any]:
    """A model turn as a whole ``BetaMessage``; ``done=False``: as ``message_start`` has it (no content yet)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": (getattr(reply, "model", None) if reply is not None else None) or "",
        "content": _content(reply) if content is None else content,
        "stop_reason": api_stop_reason(reply) if done else None,
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
        "context_management": None,
        "diagnostics": None,
        "usage": usage_json(getattr(reply, "usage", None) if done else None),
    }


def assistant_message(session_id: str, reply: Any, message_id: str, parent_tool_use_id: str | None = None) -> dict[str, Any]:
    """A model turn as Claude Code streams it (``SDKAssistantMessage``): the reply as Messages API content blocks."""
    return {
        "type": "assistant",
        "message": beta_message(reply, message_id),
        "parent_tool_use_id": parent_tool_use_id,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def _mcp_block(b: Mapping[str, Any]) -> dict[str, Any]:
    """One MCP content block as a ``tool_result`` content block: text as text, a supported image as an
    ``image`` block, an embedded resource as its text (or image, or PDF ``document``), anything else
    (audio, a resource link, other blobs) as a text block holding its JSON."""
    from agentloop.providers.images import IMAGE_MEDIA_TYPES

    kind = b.get("type")
    if kind == "text" and isinstance(b.get("text"), str):
        return {"type": "text", "text": b["text"]}
    if kind == "image" and str(b.get("mimeType", "")).lower() in IMAGE_MEDIA_TYPES and isinstance(b.get("data"), str):
        return {"type": "image", "source": {"type": "base64", "media_type": str(b["mimeType"]).lower(), "data": b["data"]}}
    res = b.get("resource") if kind == "resource" else None
    if isinstance(res, Mapping):
        mime = str(res.get("mimeType") or "").lower()
        if isinstance(res.get("text"), str):
            return {"type": "text", "text": res["text"]}
        if isinstance(res.get("blob"), str) and mime in IMAGE_MEDIA_TYPES:
            return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": res["blob"]}}
        if isinstance(res.get("blob"), str) and mime == "application/pdf":
            return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": res["blob"]},
                    "title": str(res.get("uri", "")) or None}
    if kind == "resource_link":
        name = b.get("name") or b.get("uri")
        return {"type": "text", "text": f"[resource link: {name}] {b.get('uri', '')}".rstrip()}
    return {"type": "text", "text": _json(dict(b))}


def tool_result_blocks(result: Any) -> str | list[dict[str, Any]]:
    """A tool's result as ``tool_result`` content: a string, or content blocks for an MCP result
    (``{"content": [blocks], "structuredContent": ...}``: images and resources as blocks, not JSON text)."""
    if not result.ok:
        return str(result.error)
    c = result.content
    if isinstance(c, str):
        return c
    blocks = c.get("content") if isinstance(c, Mapping) and not set(c) - {"content", "structuredContent"} else None
    if isinstance(blocks, list) and blocks and all(isinstance(b, Mapping) for b in blocks):
        return [_mcp_block(b) for b in blocks]
    return _json(c)


def tool_result_message(session_id: str, result: Any, parent_tool_use_id: str | None = None) -> dict[str, Any]:
    """A tool's result as Claude Code streams it: a user message with a ``tool_result`` block;
    ``tool_use_result`` holds the tool's own value (an MCP result whole, ``structuredContent`` included)."""
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": result.call_id, "content": tool_result_blocks(result), "is_error": not result.ok}],
        },
        "parent_tool_use_id": parent_tool_use_id,
        "tool_use_result": result.content if result.ok else str(result.error),
        "session_id": session_id,
        "uuid": _uuid(),
    }


def user_prompt_message(session_id: str, text: str, parent_tool_use_id: str | None) -> dict[str, Any]:
    """The prompt a sub-agent starts with, as Claude Code streams it (a user message under its ``Agent`` call)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "parent_tool_use_id": parent_tool_use_id,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def stream_event(session_id: str, event: dict[str, Any], parent_tool_use_id: str | None = None) -> dict[str, Any]:
    """One raw Messages API stream event (``SDKPartialAssistantMessage``, ``--include-partial-messages``)."""
    return {"type": "stream_event", "event": event, "parent_tool_use_id": parent_tool_use_id, "session_id": session_id, "uuid": _uuid()}


def informational(session_id: str, text: str) -> dict[str, Any]:
    """A notice (a fallback, a cut reply, an MCP server's trouble) as ``system``/``informational``."""
    return {"type": "system", "subtype": "informational", "content": text, "level": "warning", "session_id": session_id, "uuid": _uuid()}


def _json(v: Any) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)


def model_usage(usage: Any, cost_usd: float, *, context_window: int, max_output_tokens: int) -> dict[str, Any]:
    """One model's entry of ``modelUsage`` (the SDK's ``ModelUsage``)."""
    u = usage_json(usage)
    return {
        "inputTokens": u["input_tokens"],
        "outputTokens": u["output_tokens"],
        "cacheReadInputTokens": u["cache_read_input_tokens"],
        "cacheCreationInputTokens": u["cache_creation_input_tokens"],
        "webSearchRequests": 0,
        "costUSD": cost_usd,
        "contextWindow": context_window,
        "maxOutputTokens": max_output_tokens,
    }


def result_message(
    *, session_id: str, result: Any, duration_ms: int, duration_api_ms: int, model: str, context_window: int,
    permission_denials: Sequence[Mapping[str, Any]], session_cost_micros: int, transcript: str,
    last_reply: Any = None, max_output_tokens: int = 0, by_model: Mapping[str, tuple[Any, int]] | None = None,
) -> dict[str, Any]:
    """The last line: Claude Code's ``result``, with agentloop's exact figures beside it.

    ``result`` (the answer) is on a success only, as in the SDK's ``SDKResultSuccess``; an error
    subtype carries ``errors`` instead (``SDKResultError`` requires it): the run's error, or the
    stop reason in words when the run stopped without one (a turn limit)."""
    subtype = subtype_for(result.stop_reason)
    cost_usd = result.spent_micros / 1_000_000
    out: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "duration_ms": duration_ms,
        "duration_api_ms": duration_api_ms,
        "num_turns": result.steps,
        "stop_reason": api_stop_reason(last_reply) if last_reply is not None else None,
        "session_id": session_id,
        "total_cost_usd": cost_usd,
        "usage": usage_json(result.usage),
        "modelUsage": _model_usages(result, model, by_model or {}, context_window=context_window, max_output_tokens=max_output_tokens),
        "permission_denials": [dict(d) for d in permission_denials],
        "uuid": _uuid(),
        # agentloop's own facts, beside Claude Code's
        "agentloop_stop_reason": result.stop_reason,
        "error": result.error,
        "cost_micros": result.spent_micros,
        "session_cost_micros": session_cost_micros,
        "transcript": transcript,
    }
    if subtype == "success":
        out["result"] = result.answer
    else:
        out["errors"] = [str(result.error) if result.error else _stopped_words(result)]
    return out


def _model_usages(result: Any, model: str, by_model: Mapping[str, tuple[Any, int]], *, context_window: int,
                  max_output_tokens: int) -> dict[str, Any]:
    """``modelUsage``: one entry per model that answered (a fallback has its own), keyed by the name it
    answered under. With one model, the run's own totals (estimates for unreported usage included);
    with several, each one's replies and turns, and what no turn carried (a side call's cost, a
    sub-agent's) on the first."""
    merged: dict[str, tuple[Any, int]] = {}
    for name, (usage, micros) in by_model.items():
        u0, m0 = merged.get(name or model, (None, 0))
        merged[name or model] = (usage if u0 is None else u0 + usage, m0 + micros)
    if len(merged) <= 1:
        name = next(iter(merged), model)
        return {name: model_usage(result.usage, result.spent_micros / 1_000_000, context_window=context_window, max_output_tokens=max_output_tokens)}
    rest = result.spent_micros - sum(micros for _, micros in merged.values())
    out: dict[str, Any] = {}
    for i, (name, (usage, micros)) in enumerate(merged.items()):
        micros += rest if i == 0 else 0
        out[name] = model_usage(usage, micros / 1_000_000, context_window=context_window, max_output_tokens=max_output_tokens)
    return out


def _stopped_words(result: Any) -> str:
    if result.stop_reason == "step_budget":
        return f"reached the maximum number of turns ({result.steps})"
    if result.stop_reason == "cost_budget":
        return "reached the spend cap"
    return f"stopped: {result.stop_reason}"
