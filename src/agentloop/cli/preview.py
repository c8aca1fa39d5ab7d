"""What a permission prompt shows of a change before it is approved.

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
import json
import os
import re
from typing import Any

from agentloop.agent.tools.claude_names import MULTI_EDIT


def _shape(name: str) -> str | None:
    """The change a built-in tool makes or what it reads (its record's ``hook``: write, edit, read), else None."""
    from agentloop.agent.tools.catalog import record_of

    r = record_of(name)
    return r.hook if r is not None else None

__all__ = ["change_preview", "output_head", "result_summary"]

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
    shape = _shape(name)
    if shape not in ("edit", "write") or not isinstance(args, dict) or not isinstance(args.get("file_path"), str):
        return []
    path = os.path.join(cwd, os.path.expanduser(args["file_path"]))
    rel = os.path.relpath(path, cwd) if os.path.abspath(path).startswith(os.path.abspath(cwd) + os.sep) else path
    width = max(20, width)
    if shape == "write":
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
    from agentloop.agent.tools.file_state import find_edit

    text = _read(path) if os.path.isfile(path) else None
    m = find_edit(text, old_s, new_s) if text is not None and old_s else None
    if text is not None and m is not None and m.count:  # matched as Edit will match it (CRLF, curly quotes)
        after = m.apply(args.get("replace_all") is True)[0]
        a, b = text.splitlines(), after.splitlines()
    else:
        a, b = old_s.splitlines(), new_s.splitlines()
    diff = list(difflib.unified_diff(a, b, fromfile=rel, tofile=rel, lineterm="", n=3))
    return _bounded([(x, _style(x)) for x in diff], width, "diff")


# --- what the REPL shows under a finished call ---------------------------------

def _count(text: str) -> int:
    return len(text.splitlines()) if text else 0


def _change_counts(old: str, new: str) -> tuple[int, int]:
    """Lines added and removed between ``old`` and ``new`` (a line diff, not a count of lines)."""
    added = removed = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("+ "):
            added += 1
        elif line.startswith("- "):
            removed += 1
    return added, removed


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _mcp_text(content: Any) -> str | None:
    """The text an MCP result carries (its text blocks, joined), or None when it is not one."""
    if not (isinstance(content, dict) and isinstance(content.get("content"), list)):
        return None
    texts = [b.get("text", "") for b in content["content"] if isinstance(b, dict) and b.get("type") == "text"]
    others = [b.get("type", "?") for b in content["content"] if isinstance(b, dict) and b.get("type") != "text"]
    text = "\n".join(t for t in texts if t)
    if others:
        text = (text + "\n" if text else "") + "(" + ", ".join(others) + ")"
    return text


def result_summary(name: str, args: Any, content: Any) -> str:
    """One line saying what a successful call did: lines added and removed by an edit, lines read,
    an MCP result's text, else the first line of the output and how many lines follow."""
    a = args if isinstance(args, dict) else {}
    shape = _shape(name)
    if shape == "edit" and isinstance(a.get("old_string"), str) and isinstance(a.get("new_string"), str):
        added, removed = _change_counts(a["old_string"], a["new_string"])
        return f"Updated {a.get('file_path', '')}: {_plural(added, 'line')} added, {removed} removed"
    if name == MULTI_EDIT and isinstance(a.get("edits"), list):
        added = removed = 0
        for e in a["edits"]:
            if isinstance(e, dict):
                x, y = _change_counts(str(e.get("old_string", "")), str(e.get("new_string", "")))
                added, removed = added + x, removed + y
        return f"Updated {a.get('file_path', '')}: {_plural(added, 'line')} added, {removed} removed"
    if shape == "write" and isinstance(a.get("content"), str):
        return f"Wrote {_plural(_count(a['content']), 'line')} to {a.get('file_path', '')}"
    text = _mcp_text(content)
    if text is None:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if shape == "read" and isinstance(content, str):
        return f"Read {_plural(_count(content), 'line')}"
    lines = text.splitlines() or [""]
    first = lines[0][:100]
    rest = len(lines) - 1
    return first + (f" … {_plural(rest, 'more line')}" if rest else "")


HEAD_LINES = 3
"""Lines of a command's output shown under its call, as Claude Code shows a few and counts the rest."""

_SPILLED = re.compile(r"\[The output was \d+ characters \((\d+) lines\), too long to show\.")


def output_head(text: str, width: int, keep: int = HEAD_LINES) -> list[str]:
    """A command's output under its call: its first ``keep`` lines (each cut to ``width``), then
    ``… +N lines`` counting the rest of the whole output, also when the tool kept only a preview of it
    (a spilled output names its full length; its omission marker is not a line of the output)."""
    spilled = _SPILLED.search(text)
    lines = text.rstrip("\n").splitlines()
    if spilled is not None:
        # the note counts newlines + 1: an output that ends in a newline (its kept tail does) has one line fewer
        total = int(spilled.group(1)) - (1 if text[: spilled.start()].endswith("\n\n\n") else 0)
        lines = [x for x in lines[: keep + 1] if not x.startswith("... [")]
    else:
        total = len(lines)
    head = [_cut(x, width) for x in lines[:keep]] or ["(no output)"]
    more = total - len(head) if lines else 0
    return head + ([f"… +{_plural(more, 'line')}"] if more > 0 else [])
