"""The GenAI semantic conventions' vocabulary: provider names, server address, messages as parts.

Pure functions from agentloop's values to the conventions' attribute values
(OpenTelemetry semantic conventions, "GenAI spans" and the input and output
messages JSON schemas); ``telemetry/__init__.py`` puts them on spans.

Rules:

1. ``gen_ai.provider.name`` is one of the conventions' well-known values
   when the endpoint or the wire protocol names one: the host of the base
   URL first (``api.deepseek.com`` is ``deepseek``, ``*.openai.azure.com``
   ``azure.ai.openai``), else the name the adapter's provider record declares
   (``telemetry_name``), else the ``vendor:`` prefix of the model's name
   (``scripted``); a model object with none of these is ``custom``.
2. Messages follow the schemas' ``parts`` shape: text is a ``text`` part, a
   call a ``tool_call`` part (id, name, arguments as an object), a tool's
   output a ``tool_call_response`` part (id, ``response``: the current
   schema's name; the first published schemas said ``result``), reasoning a
   ``reasoning`` part, an image a ``blob`` part; each tool result is a
   ``tool`` message of its own. A value the transcript
   marks as redacted or truncated stays its marker, so what is exported
   is never more than what is recorded.
3. Finish reasons use the output schema's values: ``stop``, ``length``,
   ``content_filter``, ``tool_call``, ``error``; another provider reason
   passes as it is.
4. ``gen_ai.usage.input_tokens`` counts every input token, the cached ones
   included (the conventions' rule); the cache reads and writes are also
   given on their own (``gen_ai.usage.cache_read.input_tokens``,
   ``gen_ai.usage.cache_creation.input_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

__all__ = [
    "describe_model",
    "finish_reason",
    "system_apart",
    "input_json",
    "input_parts",
    "last_user_text",
    "message_parts",
    "output_message",
    "output_text",
    "provider_name",
    "server_of",
    "usage_attributes",
]

_HOSTS: tuple[tuple[str, str], ...] = (
    ("api.deepseek.com", "deepseek"),
    ("api.groq.com", "groq"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("aiplatform.googleapis.com", "gcp.vertex_ai"),
    (".openai.azure.com", "azure.ai.openai"),
    (".services.ai.azure.com", "azure.ai.inference"),
    (".models.ai.azure.com", "azure.ai.inference"),
    ("bedrock-runtime.", "aws.bedrock"),
    ("bedrock-mantle.", "aws.bedrock"),
)
_P = TypeVar("_P")
_FINISH = {
    "stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "no_tool_calls": "stop",
    "length": "length", "max_tokens": "length", "model_context_window_exceeded": "length",
    "tool_calls": "tool_call", "tool_use": "tool_call", "function_call": "tool_call",
    "content_filter": "content_filter", "refusal": "content_filter",
    "error": "error",
}


def _host_provider(host: str) -> str | None:
    for pattern, name in _HOSTS:
        if pattern.startswith("."):
            if host.endswith(pattern):
                return name
        elif pattern.endswith("."):
            if host.startswith(pattern) or f".{pattern}" in host:
                return name
        elif host == pattern:
            return name
    return None


def describe_model(model: Any) -> Any:
    """The adapter behind ``model`` (an object with ``vendor`` and ``target``), or None.

    Follows the wrappers agentloop puts around a model (``inner``) a few levels deep."""
    m = model
    for _ in range(6):
        if m is None:
            return None
        if isinstance(getattr(m, "vendor", None), str) and getattr(m, "target", None) is not None:
            return m
        m = getattr(m, "inner", None)
    return None


def provider_name(adapter: Any, spec: str | None) -> str:
    """``gen_ai.provider.name`` for a model (rule 1)."""
    if adapter is not None:
        host = (urlsplit(str(adapter.target.base_url)).hostname or "").lower()
        named = _host_provider(host)
        if named:
            return named
        declared = getattr(adapter, "telemetry_name", None)  # its provider's record's (providers/record.py)
        if isinstance(declared, str) and declared:
            return declared
    prefix = spec.split(":", 1)[0].lower() if spec and ":" in spec else ""
    return prefix or "custom"


def server_of(adapter: Any) -> tuple[str, int] | None:
    """(``server.address``, ``server.port``) of the endpoint an adapter calls, or None."""
    if adapter is None:
        return None
    u = urlsplit(str(adapter.target.base_url))
    if not u.hostname:
        return None
    try:
        port = u.port
    except ValueError:
        return None
    return u.hostname, port if port is not None else (443 if u.scheme == "https" else 80)


def system_apart(adapter: Any) -> bool:
    """The adapter's wire format takes the system prompt apart from the chat (its ``system_apart``)."""
    return getattr(adapter, "system_apart", False) is True


def finish_reason(reply: Mapping[str, Any]) -> str:
    """The output schema's finish reason of a recorded reply (rule 3)."""
    if reply.get("tool_calls"):
        return "tool_call"
    fr = reply.get("finish_reason")
    if not fr:
        return "stop"
    return _FINISH.get(str(fr), str(fr))


def usage_attributes(usage: Mapping[str, Any]) -> dict[str, int]:
    """The ``gen_ai.usage.*`` attributes of a recorded usage (rule 4)."""
    inp, read, write = (int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
    return {
        "gen_ai.usage.input_tokens": inp + read + write,
        "gen_ai.usage.output_tokens": int(usage.get("output_tokens") or 0),
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
    }


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """Parts of a message's content: a string, a list of blocks, or a redaction marker."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list):
        out: list[dict[str, Any]] = []
        for b in content:
            if isinstance(b, Mapping) and b.get("type") == "text":
                out.append({"type": "text", "content": str(b.get("text", ""))})
            elif isinstance(b, Mapping) and b.get("type") == "image":
                source = b.get("source")
                src: Mapping[str, Any] = source if isinstance(source, Mapping) else b
                out.append({"type": "blob", "modality": "image", "mime_type": src.get("media_type") or src.get("mimeType"),
                            "content": str(src.get("data", ""))})
            else:
                out.append({"type": "text", "content": json.dumps(b, ensure_ascii=False, default=str)})
        return out
    return [{"type": "text", "content": json.dumps(content, ensure_ascii=False, default=str)}]


def _reasoning_parts(blocks: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks or ():
        if isinstance(b, Mapping) and isinstance(b.get("thinking"), str) and b["thinking"]:
            out.append({"type": "reasoning", "content": b["thinking"]})
    return out


def _call_part(c: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": str(c.get("id")), "name": str(c.get("name")), "arguments": c.get("arguments")}


def _result(value: Any) -> Any:
    """A tool's output as the schema wants it: an object when its text is one."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, (dict, list)) else value
    return value


def message_parts(m: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(role, parts) of one message as recorded (rule 2)."""
    role = str(m.get("role", "user"))
    if role == "tool":
        return role, [{"type": "tool_call_response", "id": str(m.get("tool_call_id")), "response": _result(m.get("content"))}]
    parts = _reasoning_parts(m.get("reasoning")) + _text_parts(m.get("content"))
    parts += [_call_part(c) for c in m.get("tool_calls") or () if isinstance(c, Mapping)]
    return role, parts


def _grouped(entries: Iterable[tuple[str, list[_P]]], separate_system: bool) -> tuple[list[tuple[str, list[_P]]], list[_P]]:
    """The chat's messages and the system instructions: each tool result is a ``tool`` message of its own (a
    viewer that flattens a message keeps one call id per message, so two results in one message lose the
    first); the system prompt goes apart when the provider takes it apart."""
    chat: list[tuple[str, list[_P]]] = []
    system: list[_P] = []
    for role, parts in entries:
        if role == "system" and separate_system:
            system.extend(parts)
        else:
            chat.append((role, list(parts)))
    return chat, system


def input_parts(messages: Sequence[Mapping[str, Any]], separate_system: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(``gen_ai.input.messages``, ``gen_ai.system_instructions``) of messages as recorded (rule 2).

    ``separate_system``: the provider takes the system prompt apart from the chat (Anthropic), so it
    goes to the instructions; otherwise it stays a ``system`` message of the chat."""
    chat, system = _grouped((message_parts(m) for m in messages), separate_system)
    return [{"role": r, "parts": p} for r, p in chat], system


def input_json(entries: Sequence[tuple[str, list[str]]], separate_system: bool) -> tuple[str, str | None]:
    """``input_parts`` as JSON text, from each message's role and parts already as JSON text (which a
    caller keeps from one call to the next: a long conversation is not converted again at every call)."""
    chat, system = _grouped(entries, separate_system)
    roles = {r: json.dumps(r, ensure_ascii=False) for r in {r for r, _ in chat}}
    text = "[" + ", ".join(f'{{"role": {roles[r]}, "parts": [{", ".join(p)}]}}' for r, p in chat) + "]"
    return text, ("[" + ", ".join(system) + "]") if system else None


def output_message(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The one ``gen_ai.output.messages`` entry of a recorded reply (rule 2)."""
    parts = _reasoning_parts(reply.get("reasoning")) + _text_parts(reply.get("text"))
    parts += [_call_part(c) for c in reply.get("tool_calls") or () if isinstance(c, Mapping)]
    return {"role": "assistant", "parts": parts, "finish_reason": finish_reason(reply)}


def output_text(reply: Mapping[str, Any]) -> str:
    """What a viewer's output column shows for a recorded reply: its text, else the calls it makes
    (``Read({"file_path": "n.txt"})``), one a line."""
    text = reply.get("text")
    if isinstance(text, str) and text:
        return text
    calls = [c for c in reply.get("tool_calls") or () if isinstance(c, Mapping)]
    return "\n".join(f"{c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False, default=str)})" for c in calls)


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The text of the last user message as recorded (what a viewer's input column shows), or None."""
    for m in reversed(messages):
        if m.get("role") == "user":
            parts = _text_parts(m.get("content"))
            return "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")
    return None
