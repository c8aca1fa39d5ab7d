"""The one scripted-model format: a JSON list of replies, for tests, ``scripted:FILE`` and batch tasks.

A script is a list; each reply is an object::

    {"text": "Reading it.",                                  # optional, default ""
     "tool_calls": [{"name": "Read", "arguments": {...},    # optional, default []
                     "id": "call_7"}],                      #   id optional: call_<reply>_<call>
     "usage": [120, 30],                                    # optional: [input, output] tokens,
                                                            #   or {"input_tokens", "output_tokens",
                                                            #   "cache_read_tokens", "cache_write_tokens"}
     "finish_reason": "stop",                               # optional
     "delay_ms": 40}                                        # optional: wait first (a provider's latency)

``parse_replies`` checks a decoded script and names the first problem by its
place (``script[2].tool_calls[0].name: must be a string``); ``load_script``
reads a file; ``ScriptedModel.from_script`` answers from one. The fake model
server (``testing.fakeprovider``) speaks wire protocols and keeps a richer
format of its own, documented there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..events import ModelReply, ToolCall, Usage

__all__ = ["ScriptError", "ScriptedReply", "load_script", "parse_replies"]

_FIELDS = ("text", "tool_calls", "usage", "finish_reason", "delay_ms")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
MAX_DELAY_MS = 600_000


class ScriptError(ValueError):
    """A script that is not a list of replies: ``where`` names the place, the message the problem."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.problem = message


@dataclass(frozen=True)
class ScriptedReply:
    reply: ModelReply
    delay_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        """The reply in the script format, every default spelled out (ids included)."""
        out: dict[str, Any] = {"text": self.reply.text, "tool_calls": [c.to_json() for c in self.reply.tool_calls]}
        if self.reply.usage is not None:
            u = self.reply.usage.to_json()
            out["usage"] = {k: int(u.get(k, 0)) for k in _USAGE_KEYS if u.get(k)} or {"input_tokens": 0}
        if self.reply.finish_reason is not None:
            out["finish_reason"] = self.reply.finish_reason
        if self.delay_ms:
            out["delay_ms"] = self.delay_ms
        return out


def _int(v: Any, where: str) -> int:
    if type(v) is not int or v < 0:
        raise ScriptError(where, f"must be an integer >= 0, got {json.dumps(v)[:40]}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise ScriptError(where, f"must be a string, got {json.dumps(v)[:40]}")
    return v


def _usage(u: Any, where: str) -> Usage | None:
    if u is None:
        return None
    if isinstance(u, list):
        if len(u) != 2:
            raise ScriptError(where, "must be [input_tokens, output_tokens] or an object of token counts")
        return Usage(_int(u[0], f"{where}[0]"), _int(u[1], f"{where}[1]"))
    if isinstance(u, dict):
        extra = sorted(set(u) - set(_USAGE_KEYS))
        if extra:
            raise ScriptError(f"{where}.{extra[0]}", f"is not a token count ({', '.join(_USAGE_KEYS)})")
        return Usage.from_json({k: _int(n, f"{where}.{k}") for k, n in u.items()})
    raise ScriptError(where, "must be [input_tokens, output_tokens] or an object of token counts")


def _call(c: Any, where: str, i: int, j: int) -> ToolCall:
    if not isinstance(c, dict) or "name" not in c or not set(c) <= {"id", "name", "arguments"}:
        raise ScriptError(where, "must be an object with 'name', 'arguments' and an optional 'id'")
    args = c.get("arguments", {})
    try:
        orjson.dumps(args)
    except (TypeError, orjson.JSONEncodeError):
        raise ScriptError(f"{where}.arguments", "must be JSON") from None
    cid = _str(c["id"], f"{where}.id") if "id" in c else f"call_{i}_{j}"
    return ToolCall(cid, _str(c["name"], f"{where}.name"), args)


def parse_replies(data: Any, where: str = "script", *, name: str = "scripted", empty: bool = False) -> list[ScriptedReply]:
    """The replies of a decoded script, checked (``empty``: an empty list is allowed).

    Raises:
        ScriptError: not a list of replies (or an empty one); names the first bad place.
    """
    if not isinstance(data, list) or (not data and not empty):
        raise ScriptError(where, "a scripted model needs a " + ("" if empty else "non-empty ") + "list of replies")
    out: list[ScriptedReply] = []
    for i, r in enumerate(data):
        w = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ScriptError(w, f"must be an object ({', '.join(_FIELDS)})")
        extra = sorted(set(r) - set(_FIELDS))
        if extra:
            raise ScriptError(f"{w}.{extra[0]}", f"is not a reply field ({', '.join(_FIELDS)})")
        calls = r.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ScriptError(f"{w}.tool_calls", "must be a list")
        delay = _int(r.get("delay_ms", 0), f"{w}.delay_ms")
        if delay > MAX_DELAY_MS:
            raise ScriptError(f"{w}.delay_ms", f"must be at most {MAX_DELAY_MS} (ten minutes)")
        finish = r.get("finish_reason")
        reply = ModelReply(
            text=_str(r.get("text", ""), f"{w}.text"),
            tool_calls=tuple(_call(c, f"{w}.tool_calls[{j}]", i, j) for j, c in enumerate(calls)),
            usage=_usage(r.get("usage"), f"{w}.usage"),
            model=name,
            finish_reason=None if finish is None else _str(finish, f"{w}.finish_reason"),
        )
        out.append(ScriptedReply(reply, delay))
    return out


def load_script(path: str, *, name: str = "scripted") -> list[ScriptedReply]:
    """The replies of a script file (an empty list is allowed: a session that asks nothing).

    Raises:
        ScriptError: the file is unreadable, not JSON, or not a list of replies;
            ``where`` starts with the path.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise ScriptError(path, f"cannot read the scripted model: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        detail = f"line {exc.lineno}, column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ScriptError(path, f"not valid JSON at {detail}") from None
    return parse_replies(data, path, name=name, empty=True)


def replies_of(script: Sequence[ScriptedReply]) -> list[ModelReply]:
    return [s.reply for s in script]
