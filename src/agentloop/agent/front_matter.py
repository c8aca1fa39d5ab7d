"""The front matter of commands, skills and agent files: YAML, read as Claude Code reads it.

Rules:

1. The header (between the first two ``---`` lines) is parsed as YAML (PyYAML's
   safe loader, scalars as strings but ``true``/``false`` and numbers, no
   anchors or aliases, no tags): flow lists (``tools: ["Read", "Grep"]``),
   block lists (``- Read``), block scalars and nested mappings (``hooks:``)
   come out as Claude Code's own YAML reader gives them.
2. A header that is not valid YAML is common in real files (an unquoted
   ``description: Use this agent when: ...``): it is then read line by line as
   ``key: value`` (quoted strings, ``[a, b]`` lists with quoted items, indented
   ``- item`` lists and continuation lines, ``|``/``>`` blocks). What that
   reading cannot understand (an indented mapping, as ``hooks:`` holds) is
   named in a warning (file and key) and the key is left out; the file still
   loads.
3. Top-level values are strings, booleans, lists or mappings; a number is
   given as its text (``version: 1.0`` is ``"1.0"``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["parse_front_matter"]


class _Loader(yaml.SafeLoader):
    """YAML without anchors, aliases or the 1.1 spellings of booleans and nulls (``yes``, ``~``) as values."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("anchors and aliases are not read in front matter")
        return super().compose_node(parent, index)


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def _plain(v: Any, top: bool) -> Any:
    if isinstance(v, list):
        return [_plain(x, False) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x, False) for k, x in v.items()}
    if isinstance(v, (int, float)) and not isinstance(v, bool) and top:
        return str(v)
    return v


def _yaml(header: str) -> dict[str, Any] | None:
    try:
        data = yaml.load(header, Loader=_Loader)  # _Loader is SafeLoader without aliases
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        return None
    return {k: _plain(v, True) for k, v in data.items()}


def _split_flow(inner: str) -> list[str]:
    """``a, "b, c", d(e, f)`` split at the commas outside quotes, brackets and parentheses."""
    items: list[str] = []
    depth, quote, cur = 0, "", []
    for ch in inner:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    items.append("".join(cur))
    return [i for i in items if i.strip()]


def _unquote(v: str) -> Any:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        inner = v[1:-1]
        if v[0] == '"':
            inner = inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        else:
            inner = inner.replace("''", "'")
        return inner
    if v.startswith("[") and v.endswith("]"):
        return [_unquote(x) for x in _split_flow(v[1:-1])]
    if v in ("true", "false"):
        return v == "true"
    return v


_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)\s*:(.*)$")
_NESTED = re.compile(r"^\s+[A-Za-z_\"'][^:]*:(\s|$)")


def _by_lines(header: list[str], where: str, warnings: list[str] | None) -> dict[str, Any] | None:
    """Rule 2's line-by-line reading; None when the header is not ``key: value`` lines at all."""
    meta: dict[str, Any] = {}
    key: str | None = None
    block: str | None = None
    dropped: set[str] = set()
    for line in header:
        if not line.strip() or line.lstrip().startswith("#"):
            if block is not None and key is not None:
                meta[key] += "\n"
            continue
        m = _KEY.match(line)
        if m and not line[0].isspace():
            key, value = m.group(1), m.group(2).strip()
            block = value[0] if value in ("|", ">", "|-", ">-", "|+", ">+") else None
            meta[key] = "" if block else _unquote(value)
            continue
        if key is None:
            return None
        cont = line.strip()
        if block is not None:
            meta[key] = (meta[key] + ("\n" if block == "|" else " ") + cont) if meta[key] else cont
        elif isinstance(meta[key], list) and cont.startswith("-"):
            meta[key].append(_unquote(cont[1:]))
        elif meta[key] == "" and cont.startswith("-"):
            meta[key] = [_unquote(cont[1:])]
        elif key in dropped or (meta[key] == "" and _NESTED.match(line)):
            dropped.add(key)
        else:
            meta[key] = f"{meta[key]} {cont}".strip()
    for k in sorted(dropped):
        meta.pop(k, None)
        if warnings is not None:
            warnings.append(f"{where}: front matter {k!r} cannot be read (the header is not valid YAML, and {k!r} holds "
                            "an indented mapping); left out")
    return meta


def parse_front_matter(text: str, warnings: list[str] | None = None, where: str = "") -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; ({}, text) when there is no header (see the module's rules).
    What cannot be read is named in ``warnings``, with ``where`` (the file)."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    meta = _yaml("\n".join(lines[1:end]))
    if meta is None:
        meta = _by_lines(lines[1:end], where, warnings)
    if meta is None:
        return {}, text
    return meta, body
