"""What a permission prompt shows of a change before it is approved (issue 22, point 8).

Rules:

1. Edit: a unified diff of the file as it is and as it would be, three lines
   of context, ``-`` lines red and ``+`` lines green on a colour terminal.
   When the file cannot be read or ``old_string`` is not in it, the diff of
   ``old_string`` against ``new_string`` alone (the tool will then refuse).
2. Write: whether it creates or overwrites the file, and the first lines of
   the content.
3. It fits: at most ``MAX_LINES`` lines, each cut to the terminal's width with
   "…"; what was left out is counted on the last line. Files above
   ``MAX_READ`` bytes are not read.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

__all__ = ["change_preview"]

MAX_LINES = 24
MAX_READ = 2_000_000


def _cut(line: str, width: int) -> str:
    line = line.expandtabs(4)
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_READ:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _bounded(lines: list[tuple[str, str]], width: int, what: str) -> list[tuple[str, str]]:
    out = [(_cut(t, width), s) for t, s in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        out.append((f"… {len(lines) - MAX_LINES} more lines of the {what}", "dim"))
    return out


def _style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


def change_preview(name: str, args: Any, cwd: str, width: int) -> list[tuple[str, str]]:
    """(line, rich style) pairs to show above an Edit or Write permission prompt; [] for other tools."""
    if name not in ("Edit", "Write") or not isinstance(args, dict) or not isinstance(args.get("file_path"), str):
        return []
    path = os.path.join(cwd, os.path.expanduser(args["file_path"]))
    rel = os.path.relpath(path, cwd) if os.path.abspath(path).startswith(os.path.abspath(cwd) + os.sep) else path
    width = max(20, width)
    if name == "Write":
        content = args.get("content")
        if not isinstance(content, str):
            return []
        new = content.splitlines()
        old = _read(path) if os.path.isfile(path) else None
        head = f"overwrite {rel} ({len(old.splitlines())} lines → {len(new)})" if old is not None else f"create {rel} ({len(new)} lines)"
        return [(_cut(head, width), "bold"), *_bounded([("  " + x, "green") for x in new], width, "content")]
    old_s, new_s = args.get("old_string"), args.get("new_string")
    if not isinstance(old_s, str) or not isinstance(new_s, str):
        return []
    text = _read(path) if os.path.isfile(path) else None
    if text is not None and old_s and old_s in text:
        after = text.replace(old_s, new_s) if args.get("replace_all") is True else text.replace(old_s, new_s, 1)
        a, b = text.splitlines(), after.splitlines()
    else:
        a, b = old_s.splitlines(), new_s.splitlines()
    diff = list(difflib.unified_diff(a, b, fromfile=rel, tofile=rel, lineterm="", n=3))
    return _bounded([(x, _style(x)) for x in diff], width, "diff")
