"""What a transcript keeps of a value it must not, or cannot, hold whole.

Rules:

1. A sensitive tool's arguments and results, and an argument at a declared
   secret path (``$.token``, ``$.auth.key``, ``$.headers[*]``), are written as
   a redaction marker: ``{"$redacted": {...}}`` with the value's sizes and,
   when the caller supplied a salt, ``salted_sha256`` (HMAC-SHA256 keyed by the
   salt over the value's text form). The value itself is never written.
2. A secret argument's value is also looked for in the same call's result and
   in the turn's raw provider response: where it appears, that field is
   redacted too (a validation error or an echo would otherwise leak it). The
   raw response of a turn that calls a sensitive tool or one with secret
   arguments is always redacted whole: a stream carries arguments in
   fragments that no search for the whole value finds.
3. A value whose text form is over the size limit (64 KiB by default) is
   written as ``{"$truncated": {...}}`` with the exact original and kept byte
   counts, the SHA-256 of the whole text form, and its first bytes.
4. Markers are left as they are: recording a recorded value again yields the
   same bytes. This is what lets a full replay write a byte-identical file.
5. Every marker keeps ``chars`` and ``json_bytes`` so that the loop's len//4
   estimates come out the same when a replay sees the marker instead of the
   value (see ``loop._message_chars``).

The text form of a value is the string itself for a string, and its canonical
JSON otherwise. Changing a marker's shape changes the bytes of every
transcript that holds one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import orjson

from .canonical import NotCanonicalizable, canonical

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "Policy",
    "is_marker",
    "marker_info",
    "parse_path",
    "redacted",
    "truncated",
]

DEFAULT_MAX_VALUE_BYTES = 64 * 1024
REDACTED = "$redacted"
TRUNCATED = "$truncated"
MIN_SECRET_CHARS = 4
"""Shorter secret values are not searched for in results (they would match anything)."""

PathPart = Union[str, int, None]
"""A key, an index, or None for ``[*]`` (every element)."""

_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+|\*)\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


def parse_path(path: str) -> tuple[PathPart, ...]:
    """``"$.auth.token"`` -> ``("auth", "token")``; ``$.a[0]``, ``$.a[*]``, ``$["odd key"]`` too.

    Raises:
        ValueError: not a JSON path of that simple form.
    """
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"secret argument path {path!r} must start with '$' (e.g. '$.token')")
    parts: list[PathPart] = []
    pos = 1
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"secret argument path {path!r}: cannot read it from position {pos}")
        if m.group(1) is not None:
            parts.append(m.group(1))
        elif m.group(2) is not None:
            parts.append(None if m.group(2) == "*" else int(m.group(2)))
        else:
            parts.append(re.sub(r"\\(.)", r"\1", m.group(3)))
        pos = m.end()
    if not parts:
        raise ValueError(f"secret argument path {path!r} names the whole arguments: declare the tool sensitive instead")
    return tuple(parts)


def is_marker(v: Any) -> bool:
    """True for a redaction or truncation marker."""
    return type(v) is dict and len(v) == 1 and (REDACTED in v or TRUNCATED in v)


def marker_info(v: Mapping[str, Any]) -> Mapping[str, Any]:
    """The body of a marker (its sizes, hash...)."""
    inner = v.get(REDACTED, v.get(TRUNCATED))
    return inner if isinstance(inner, Mapping) else {}


def _text(value: Any) -> tuple[str, bytes]:
    """The text form of a value and its canonical JSON bytes."""
    j = canonical(value)
    return (value if isinstance(value, str) else j.decode()), j


def redacted(value: Any, why: str, salt: bytes | None) -> dict[str, Any]:
    """The marker written in place of ``value``."""
    if is_marker(value):
        return dict(value)
    text, j = _text(value)
    raw = text.encode()
    body: dict[str, Any] = {"why": why, "bytes": len(raw), "chars": len(text), "json_bytes": len(j)}
    if salt is not None:
        body["salted_sha256"] = hmac.new(salt, raw, hashlib.sha256).hexdigest()
    return {REDACTED: body}


def truncated(value: Any, limit: int) -> Any:
    """``value`` itself when its text form fits ``limit`` bytes, else its truncation marker."""
    if is_marker(value):
        return value
    if isinstance(value, str):
        if len(value) <= limit // 4:
            return value
    else:
        try:  # a quick bound: the canonical form is never twice orjson's length
            if len(orjson.dumps(value)) <= limit // 2:
                return value
        except (TypeError, orjson.JSONEncodeError):
            pass
    text, j = _text(value)
    raw = text.encode()
    if len(raw) <= limit:
        return value
    head = raw[:limit].decode("utf-8", errors="ignore")
    kept = head.encode()
    return {
        TRUNCATED: {
            "bytes": len(raw),
            "kept_bytes": len(kept),
            "chars": len(text),
            "json_bytes": len(j),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "head": head,
        }
    }


def size_correction(value: Any) -> int:
    """How much longer the canonical JSON of the original was than that of ``value``.

    Zero for a value holding no markers; used so that estimates made from a
    recorded (marked) value equal those made from the original.
    """
    if is_marker(value):
        info = marker_info(value)
        return int(info.get("json_bytes", 0)) - len(canonical(value))
    if type(value) is dict:
        return sum(size_correction(v) for v in value.values())
    if type(value) is list:
        return sum(size_correction(v) for v in value)
    return 0


def stand_in(info: Mapping[str, Any]) -> str:
    """What a replay shows in place of a marked tool output: exactly as many characters."""
    n = int(info.get("chars", 0))
    return ("[not recorded] " + "*" * n)[:n] if n > 0 else ""


def _secret_text(v: Any) -> str | None:
    if is_marker(v):
        return None
    try:
        text, _ = _text(v)
    except NotCanonicalizable:
        return None
    return text if len(text) >= MIN_SECRET_CHARS else None


@dataclass(frozen=True)
class Policy:
    """What a run redacts and truncates, resolved once from its tools manifest."""

    salt: bytes | None = field(default=None, repr=False)
    limit: int = DEFAULT_MAX_VALUE_BYTES
    sensitive: frozenset[str] = frozenset()
    secret_paths: Mapping[str, tuple[tuple[PathPart, ...], ...]] = field(default_factory=dict)

    @property
    def redacts(self) -> bool:
        return bool(self.sensitive or self.secret_paths)

    @classmethod
    def from_manifest(cls, manifest: Iterable[Mapping[str, Any]], salt: bytes | str | None, limit: int) -> Policy:
        """Raises ValueError for a secret path that cannot be read (naming the tool)."""
        sensitive: set[str] = set()
        paths: dict[str, tuple[tuple[PathPart, ...], ...]] = {}
        for entry in manifest:
            name = str(entry.get("name"))
            if entry.get("sensitive"):
                sensitive.add(name)
            secret = entry.get("secret_args") or ()
            if secret:
                try:
                    paths[name] = tuple(parse_path(p) for p in secret)
                except ValueError as exc:
                    raise ValueError(f"tool {name!r}: {exc}") from None
        if limit < 1:
            raise ValueError(f"max_value_bytes must be positive, got {limit}")
        key = salt.encode() if isinstance(salt, str) else salt
        return cls(key, limit, frozenset(sensitive), paths)

    # -- tool calls (in model_turn records and assistant messages) --

    def call_arguments(self, name: str, arguments: Any, secrets: list[str] | None = None) -> Any:
        """The arguments as recorded. Secret values found are added to ``secrets``."""
        if name in self.sensitive:
            if arguments == {}:
                return arguments  # nothing to hide, and a replay can run the call again
            if secrets is not None:
                _collect_leaves(arguments, secrets)
            return redacted(arguments, "sensitive", self.salt)
        paths = self.secret_paths.get(name)
        if paths:
            if type(arguments) is not dict:
                if secrets is not None:
                    _collect_leaves(arguments, secrets)
                return redacted(arguments, "secret_arg", self.salt)
            for p in paths:
                arguments = self._redact_at(arguments, p, secrets)
        return truncated(arguments, self.limit)

    def _redact_at(self, value: Any, path: Sequence[PathPart], secrets: list[str] | None) -> Any:
        if is_marker(value):
            return value
        if not path:
            if secrets is not None:
                s = _secret_text(value)
                if s is not None:
                    secrets.append(s)
            return redacted(value, "secret_arg", self.salt)
        head, rest = path[0], path[1:]
        if type(value) is dict and isinstance(head, str):
            if head not in value:
                return value
            return {**value, head: self._redact_at(value[head], rest, secrets)}
        if type(value) is dict and head is None:  # [*] of an object: every member (RFC 9535's wildcard)
            return {k: self._redact_at(v, rest, secrets) for k, v in value.items()}
        if type(value) is list and (head is None or isinstance(head, int)):
            out = list(value)
            idx = range(len(out)) if head is None else ([head] if isinstance(head, int) and head < len(out) else [])
            for i in idx:
                out[i] = self._redact_at(out[i], rest, secrets)
            return out
        return value

    def calls_for_record(self, calls: Sequence[Any]) -> tuple[list[dict[str, Any]], list[str]]:
        """The JSON of a turn's calls as recorded, and the secret values they held."""
        secrets: list[str] = []
        out = []
        for c in calls:
            args = c.arguments
            out.append({"id": c.id, "name": c.name, "arguments": self.call_arguments(c.name, args, secrets)})
        return out, secrets

    # -- tool results --

    def result_for_record(self, payload: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
        """A ``tool_result`` payload as recorded. ``secrets``: the call's secret values."""
        name = payload.get("name")
        if name in self.sensitive:
            for k in ("content", "error", "detail"):
                if k in payload and payload[k] is not None:
                    payload[k] = redacted(payload[k], "sensitive", self.salt)
            return payload
        if secrets:
            for k in ("content", "error", "detail"):
                v = payload.get(k)
                if v is not None and not is_marker(v) and _contains(v, secrets):
                    payload[k] = redacted(v, "secret_arg", self.salt)
        for k in ("content", "error"):
            v = payload.get(k)
            if v is not None:
                payload[k] = truncated(v, self.limit)
        return payload

    # -- the raw provider response --

    def raw_for_record(self, raw: Any, names: Sequence[str], secrets: Sequence[str]) -> Any:
        """The raw response as recorded: bytes as text, redacted when it carries a redacted argument."""
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = bytes(raw).decode()
            except UnicodeDecodeError:
                raw = {"base64": base64.b64encode(bytes(raw)).decode()}
        try:
            canonical(raw)
        except NotCanonicalizable:
            return {"unrecordable": type(raw).__name__}
        if is_marker(raw):
            return raw
        # A streamed call's arguments arrive in fragments (``function.arguments``
        # deltas, ``input_json_delta``): no fragment holds the secret whole, yet
        # joined they give it back. So the raw response of a turn calling a tool
        # with secret arguments is redacted whole, found or not (rule 2).
        if any(n in self.sensitive or n in self.secret_paths for n in names) or (secrets and _contains(raw, secrets)):
            return redacted(raw, "contains_redacted_arguments", self.salt)
        return truncated(raw, self.limit)

    # -- initial messages (a session's history) --

    def messages_for_record(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Messages as recorded in ``run_start``: earlier tool calls and outputs redacted alike."""
        out: list[dict[str, Any]] = []
        secrets_by_call: dict[str, list[str]] = {}
        sensitive_calls: set[str] = set()
        for m in messages:
            m2 = dict(m)
            calls = m.get("tool_calls")
            if calls and self.redacts:
                new_calls = []
                for c in calls:
                    if not isinstance(c, Mapping):
                        new_calls.append(c)
                        continue
                    found: list[str] = []
                    name = str(c.get("name"))
                    args = self.call_arguments(name, c.get("arguments"), found)
                    cid = str(c.get("id"))
                    secrets_by_call[cid] = found
                    if name in self.sensitive:
                        sensitive_calls.add(cid)
                    new_calls.append({**c, "arguments": args})
                m2["tool_calls"] = new_calls
            elif calls:
                m2["tool_calls"] = [
                    {**c, "arguments": truncated(c.get("arguments"), self.limit)} if isinstance(c, Mapping) else c
                    for c in calls
                ]
            if m.get("role") == "tool" and "content" in m:
                content = m["content"]
                cid = str(m.get("tool_call_id"))
                if m.get("name") in self.sensitive or cid in sensitive_calls:
                    content = redacted(content, "sensitive", self.salt)
                elif secrets_by_call.get(cid) and not is_marker(content) and _contains(content, secrets_by_call[cid]):
                    content = redacted(content, "secret_arg", self.salt)
                m2["content"] = content
            if "content" in m2:
                try:
                    m2["content"] = truncated(m2["content"], self.limit)
                except NotCanonicalizable:
                    pass
            out.append(m2)
        return out


def _collect_leaves(v: Any, out: list[str]) -> None:
    if is_marker(v):
        return
    if type(v) is dict:
        for x in v.values():
            _collect_leaves(x, out)
    elif type(v) is list:
        for x in v:
            _collect_leaves(x, out)
    else:
        s = _secret_text(v)
        if s is not None:
            out.append(s)


def _contains(v: Any, secrets: Sequence[str]) -> bool:
    try:
        text, j = _text(v)
    except NotCanonicalizable:
        return False
    jt = j.decode()
    for s in secrets:
        if s in text or s in jt:
            return True
        esc = canonical(s).decode()[1:-1]
        if esc != s and esc in jt:
            return True
    return False
