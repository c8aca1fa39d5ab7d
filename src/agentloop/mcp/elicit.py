"""Asking the user an MCP server's question (elicitation, form mode), one field of its schema at a time.

The schema is the restricted JSON Schema of the MCP specification: an object
whose properties are strings (optionally an ``enum``), numbers, integers or
booleans. Each property is asked with its title, description and choices;
an answer that does not fit its type is asked again; an empty answer skips an
optional property. ``read(question)`` is the front end's line reader (the
REPL's); it raises ``EOFError`` when the user gives up, which cancels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ask_fields"]

_TRIES = 5


def _convert(kind: str, raw: str, spec: dict[str, Any]) -> tuple[bool, Any]:
    text = raw.strip()
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return (text in [str(e) for e in enum]), text
    if kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1"):
            return True, True
        if low in ("n", "no", "false", "0"):
            return True, False
        return False, None
    if kind == "integer":
        try:
            return True, int(text)
        except ValueError:
            return False, None
    if kind == "number":
        try:
            return True, float(text)
        except ValueError:
            return False, None
    return True, raw


def ask_fields(schema: dict[str, Any], read: Callable[[str], str]) -> dict[str, Any] | None:
    """The answers to every property of ``schema``, or None when a required one is not given.

    Raises:
        EOFError: the user gave up (the request is cancelled).
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for key, spec in (props or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        kind = str(spec.get("type", "string"))
        label = str(spec.get("title") or key)
        hints = []
        if spec.get("description"):
            hints.append(str(spec["description"]))
        if isinstance(spec.get("enum"), list):
            hints.append("one of " + " / ".join(str(e) for e in spec["enum"]))
        elif kind == "boolean":
            hints.append("y/n")
        elif kind in ("integer", "number"):
            hints.append(kind)
        if key not in required:
            hints.append("optional: Enter skips")
        question = f"  {label}" + (f" ({'; '.join(hints)})" if hints else "") + ": "
        for _ in range(_TRIES):
            raw = read(question)
            if raw.strip() == "" and key not in required:
                break
            ok, value = _convert(kind, raw, spec)
            if ok and not (key in required and raw.strip() == ""):
                out[key] = value
                break
        else:
            return None  # no usable answer for a required field: declined
    return out
