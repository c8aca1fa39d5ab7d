"""Text from elsewhere (the model, tools, hooks, MCP servers, a folder's files) made safe to print.

A terminal obeys what it is sent: an escape sequence in a model's answer can
set the clipboard (OSC 52), retitle the window, move the cursor over what was
shown, or hide text; a bare carriage return can overwrite a line; Unicode
direction overrides can make a command read other than it runs. Everything
agentloop prints that it did not write itself goes through ``neutral``, which
writes each such character as a visible escape (``\\x1b``, ``\\r``,
``\\u202e``) and leaves newlines and tabs alone. agentloop's own colours are
applied after, by rich styles, so they are untouched.

``say`` is how the other front ends print a line (``-p``'s answer and its
stderr lines, warnings, listings, errors): neutral whatever the output is (a
terminal, a pipe that ends on one, ``NO_COLOR`` or not). ``-p``'s JSON
formats and ``sessions --json`` write each line with ``json_line``: JSON escapes
the C0 controls itself, and ``json_line`` escapes the rest of what ``neutral``
does (DEL, the 8-bit C1 controls such as CSI ``\\u009b`` and OSC ``\\u009d``, the
direction overrides) as ``\\uXXXX``, so the value a reader parses is the same.

``shown_whole`` is for what the user is asked to approve (a command, a hook):
every character visible, a newline shown as ``⏎`` and then broken, nothing cut.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

__all__ = ["json_line", "neutral", "say", "shown_whole"]

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    o = ord(c)
    if o == 0x0D:
        return "\\r"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def neutral(text: str) -> str:
    """``text`` with every character that would steer the terminal written as a visible escape."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""What ``json.dumps(ensure_ascii=False)`` leaves raw that a terminal would obey (it escapes C0 itself)."""


def json_line(value: Any) -> str:
    """``value`` as one line of JSON, non-ASCII text kept readable, with nothing a terminal would obey written raw:
    such characters can only stand inside JSON strings, where ``\\uXXXX`` is the same character to a parser."""
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) if _UNSAFE_IN_JSON.search(text) else text


def say(text: str, file: TextIO | None = None, end: str = "\n") -> None:
    """Print ``text`` (which may hold text from elsewhere) neutral, on ``file`` (stdout by default)."""
    out = sys.stdout if file is None else file
    out.write(neutral(text) + end)


def shown_whole(text: str) -> str:
    """What the user approves, every character visible: control characters escaped and each newline
    marked ``⏎`` before the break (``ls⏎`` then ``touch X`` on the next line), never cut."""
    return "⏎\n".join(neutral(line) for line in text.split("\n"))
