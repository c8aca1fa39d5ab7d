"""What tool hooks receive, in Claude Code's shapes (and seed 004's field names beside them).

Claude Code's hooks reference (https://code.claude.com/docs/en/hooks):

- PreToolUse input: "For the file tools ``Write``, ``Edit``, and ``Read``,
  ``tool_input.file_path`` is always absolute: Claude Code expands ``~`` and
  relative paths before hooks run, so a hook that matches on paths can't be
  bypassed via ``~`` or a relative spelling of the same path." PostToolUse:
  "File-tool ``tool_input`` paths arrive in the same format as for PreToolUse".
- PostToolUse input: ``tool_response`` is the tool's structured output, e.g.
  ``{"filePath": "/path/to/file.txt", "success": true}`` for ``Write``;
  "``Bash`` returns an object with ``stdout``, ``stderr``, ``interrupted``,
  and ``isImage`` fields".

agentloop's tools answer the model with text; these functions rebuild the
documented objects from the call and that text. The model still sees the
tool's own text. Differences: Bash's output is one stream (stdout holds
stdout and stderr interleaved, ``stderr`` is empty); Read's ``content`` is
the numbered text the model saw. Tools Claude Code does not document keep
their own result.

Seed 004's protocol names the same facts ``event``, ``tool``, ``input`` (the
arguments as a JSON string), ``inputJson``, ``output`` and ``is_error``; both
sets of names are sent.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..tools.catalog import path_arguments, record_of
from ..tools.claude_names import PATH_ARGUMENTS

__all__ = ["absolute_input", "bash_failure", "claude_transcript_lines", "model_text", "seed_fields", "seed_stop_reason", "tool_response", "write_claude_transcript"]

PATH_KEYS = tuple(k for k in PATH_ARGUMENTS if k != "path")
"""For a tool without a record (MCP): the argument names taken as file paths, made absolute for hooks (an MCP
tool's ``path`` may name anything: left as the model wrote it)."""


def _shape(tool_name: str) -> str | None:
    r = record_of(tool_name)
    return r.hook if r is not None else None


def _absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def absolute_input(tool_name: str, arguments: Any, cwd: str) -> Any:
    """``arguments`` with file paths made absolute against ``cwd`` (``~`` expanded); other values unchanged."""
    if not isinstance(arguments, dict):
        return arguments
    out = dict(arguments)
    keys = path_arguments(tool_name)  # a built-in tool's every path argument (its record's)
    if keys is None:
        keys = PATH_KEYS
    for k in keys:
        v = out.get(k)
        if isinstance(v, str) and v:
            out[k] = _absolute(v, cwd)
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(content)


def tool_response(tool_name: str, tool_input: Any, content: Any) -> Any:
    """PostToolUse's ``tool_response`` for a successful call (``tool_input`` already absolute)."""
    args = tool_input if isinstance(tool_input, dict) else {}
    text = _text(content)
    path = args.get("file_path")
    shape = _shape(tool_name)
    if shape == "bash":
        return {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
    if shape == "write" and isinstance(path, str):
        kind = "update" if text.startswith("Updated") else "create"
        return {"type": kind, "filePath": path, "content": args.get("content", ""), "success": True}
    if shape == "edit" and isinstance(path, str):
        return {
            "filePath": path,
            "oldString": args.get("old_string", ""),
            "newString": args.get("new_string", ""),
            "replaceAll": bool(args.get("replace_all", False)),
            "success": True,
        }
    if shape == "read" and isinstance(path, str):
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        start = args.get("offset") if isinstance(args.get("offset"), int) else 1
        return {"type": "text", "file": {"filePath": path, "content": text, "numLines": lines, "startLine": start}}
    return content


_EXIT = re.compile(r"\[exit code (\d+)\]\Z")


def bash_failure(tool_name: str, content: Any) -> str | None:
    """PostToolUseFailure's ``error`` when a Bash call's command exited non-zero, else None.

    agentloop's Bash tool answers the model with the output and ``[exit code N]``
    (the call itself succeeded); Claude Code counts that as a failed call: its hooks
    reference gives PostToolUseFailure's example input for Bash ``npm test`` with
    ``"error": "Command exited with non-zero status code 1"``.
    """
    if _shape(tool_name) != "bash" or not isinstance(content, str):
        return None
    m = _EXIT.search(content.rstrip())
    if m is None or m.group(1) == "0":
        return None
    return f"Command exited with non-zero status code {m.group(1)}"


def model_text(tool_name: str, value: Any) -> Any:
    """What the model sees when a PostToolUse hook's ``updatedToolOutput`` has the tool's documented shape."""
    if _shape(tool_name) == "bash" and isinstance(value, dict) and isinstance(value.get("stdout"), str):
        err = value.get("stderr")
        return value["stdout"] + (f"\n{err}" if isinstance(err, str) and err else "")
    return value


def seed_fields(event: str, tool_name: str | None = None, tool_input: Any = None, **more: Any) -> dict[str, Any]:
    """Seed 004's names for the same facts: ``event``, ``tool``, ``input`` (a JSON string), ``inputJson``..."""
    out: dict[str, Any] = {"event": event}
    if tool_name is not None:
        out["tool"] = tool_name
        out["inputJson"] = tool_input
        # seed 004 gives PreToolUse ``input`` as a JSON string and PostToolUse ``input`` as the object
        out["input"] = tool_input if event in ("PostToolUse", "PostToolUseFailure") else _text(tool_input)
    out.update(more)
    return out


SEED_STOP_REASONS = {
    "no_tool_calls": "end_turn", "sentinel": "end_turn",
    "step_budget": "budget", "token_budget": "budget", "cost_budget": "budget", "budget_overrun": "budget",
}
"""agentloop's stop reasons under the seeds' names (seeds 001 and 004: ``end_turn``, ``budget``); the rest keep theirs."""


def seed_stop_reason(reason: str | None) -> str | None:
    """A run's stop reason as the seeds name it (``end_turn``, ``budget``), or agentloop's own name for the others."""
    return SEED_STOP_REASONS.get(reason, reason) if reason is not None else None


def write_claude_transcript(path: str, messages: Any, session_id: str, cwd: str) -> bool:
    """Write ``messages`` to ``path`` as Claude Code's transcript lines (atomically); False when it cannot."""
    lines = claude_transcript_lines(messages, session_id, cwd)
    from ...config.private import private_write

    try:  # the conversation, as the session file: the user's alone (0600 in 0700 folders)
        private_write(path, "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass"))
    except OSError:
        return False
    return True


def claude_transcript_lines(messages: Any, session_id: str, cwd: str) -> list[str]:
    """The conversation as Claude Code's transcript lines, for hooks that read ``transcript_path``.

    Each line is compact JSON (``"role":"assistant"``, no spaces, so a hook's grep finds it):
    ``{"type": "user" | "assistant", "message": {"role", "content"}, "sessionId",
    "uuid", "parentUuid", "cwd"}``: assistant content as ``text`` and ``tool_use`` blocks, tool
    results as ``tool_result`` blocks in a user message, as Claude Code writes them (its
    sessions reference calls the line format unstable; hooks read ``type``, ``message.role``
    and ``message.content``). The system prompt is not a line.
    """
    lines: list[str] = []
    parent: str | None = None
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        content: Any
        if role == "user":
            kind, content = "user", m.get("content", "")
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = m.get("content")
            if isinstance(text, str) and text:
                blocks.append({"type": "text", "text": text})
            for c in m.get("tool_calls", ()) or ():
                if isinstance(c, dict):
                    blocks.append({"type": "tool_use", "id": c.get("id"), "name": c.get("name"), "input": c.get("arguments")})
            kind, content = "assistant", blocks
        elif role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.get("tool_call_id"), "content": m.get("content", "")}
            if m.get("ok") is False:
                block["is_error"] = True
            kind, content = "user", [block]
        else:
            continue
        uid = f"{session_id}-{i}"
        line = {"type": kind, "message": {"role": "assistant" if kind == "assistant" else "user", "content": content},
                "sessionId": session_id, "uuid": uid, "parentUuid": parent, "cwd": cwd}
        lines.append(json.dumps(line, ensure_ascii=False, default=str, separators=(",", ":")))  # compact, as Claude Code writes
        parent = uid
    return lines
