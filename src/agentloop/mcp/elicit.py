"""Asking the user an MCP server's question (elicitation, form mode), one field of its schema at a time.

The schema is the restricted JSON Schema of the MCP specification: an object
whose properties are strings, numbers, integers or booleans, a single choice
(``enum``, with ``enumNames`` for titles, or ``oneOf`` of ``{"const", "title"}``)
or a multiple choice (``"type": "array"`` whose ``items`` hold the choices
the same ways, with ``minItems``/``maxItems``).

Rules:

1. Each property is asked with its title, description, and its choices listed
   one a line, numbered, by their titles; an answer may be the number, the
   title or the value, and the value is what is sent.
2. A multiple choice takes several answers separated by commas.
3. A ``default`` is shown, and Enter takes it; without one, Enter skips an
   optional property.
4. An answer that does not fit is asked again (at most five times).

``read(question)`` is the front end's line reader (the REPL's); it raises
``EOFError`` when the user gives up, which cancels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ask_fields", "choices_of"]

_TRIES = 5


def choices_of(spec: dict[str, Any]) -> list[tuple[Any, str]] | None:
    """The (value, title) choices of a single-choice property, or None when it is free text."""
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        names = spec.get("enumNames")
        titles = [str(n) for n in names] if isinstance(names, list) and len(names) == len(enum) else [str(e) for e in enum]
        return list(zip(enum, titles))
    for key in ("oneOf", "anyOf"):
        alts = spec.get(key)
        if isinstance(alts, list) and alts and all(isinstance(a, dict) and "const" in a for a in alts):
            return [(a["const"], str(a.get("title") or a["const"])) for a in alts]
    return None


def _pick(text: str, choices: list[tuple[Any, str]]) -> tuple[bool, Any]:
    """A choice by its number, its title or its value."""
    t = text.strip()
    if t.isdigit() and 1 <= int(t) <= len(choices):
        return True, choices[int(t) - 1][0]
    for value, title in choices:
        if t in (str(value), title) or t.lower() == title.lower():
            return True, value
    return False, None


def _convert(kind: str, raw: str, spec: dict[str, Any]) -> tuple[bool, Any]:
    text = raw.strip()
    if kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        choices = choices_of(items or {})
        parts = [p for p in (x.strip() for x in text.split(",")) if p]
        picked: list[Any] = []
        for p in parts:
            ok, value = _pick(p, choices) if choices else (True, p)
            if not ok:
                return False, None
            if value not in picked:
                picked.append(value)
        lo, hi = spec.get("minItems"), spec.get("maxItems")
        if (isinstance(lo, int) and len(picked) < lo) or (isinstance(hi, int) and len(picked) > hi):
            return False, None
        return True, picked
    choices = choices_of(spec)
    if choices:
        return _pick(text, choices)
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


def _question(key: str, spec: dict[str, Any], required: bool) -> str:
    """The question of one property: its label and hints, its choices one a line (rules 1-3)."""
    kind = str(spec.get("type", "string"))
    label = str(spec.get("title") or key)
    hints: list[str] = []
    if spec.get("description"):
        hints.append(str(spec["description"]))
    items = spec.get("items") if kind == "array" and isinstance(spec.get("items"), dict) else None
    choices = choices_of(items) if items is not None else choices_of(spec)
    if kind == "array":
        hints.append("one or more, separated by commas")
    elif choices is None and kind == "boolean":
        hints.append("y/n")
    elif choices is None and kind in ("integer", "number"):
        hints.append(kind)
    if "default" in spec:
        shown = ", ".join(map(str, spec["default"])) if isinstance(spec["default"], list) else str(spec["default"])
        hints.append(f"default {shown}: Enter keeps it")
    elif not required:
        hints.append("optional: Enter skips")
    lines = [f"  {n}) {title}" for n, (_v, title) in enumerate(choices or [], 1)]
    head = f"  {label}" + (f" ({'; '.join(hints)})" if hints else "")
    return "\n".join([head, *lines, "  > "]) if lines else head + ": "


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
        question = _question(key, spec, key in required)
        for _ in range(_TRIES):
            raw = read(question)
            if raw.strip() == "" and "default" in spec:
                out[key] = spec["default"]
                break
            if raw.strip() == "" and key not in required:
                break
            ok, value = _convert(kind, raw, spec)
            if ok and not (key in required and raw.strip() == ""):
                out[key] = value
                break
        else:
            return None  # no usable answer for a required field: declined
    return out
