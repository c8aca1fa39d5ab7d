"""Terminal control sequences taken out of what a command's output tells the model.

A program that forces colour (pytest's ``--color=yes`` in a project's
``addopts``, ``ls --color=always``, a build tool's progress) writes escape
sequences that mean something to a terminal and nothing to a model: a green
"551 passed" costs about as many bytes again in SGR codes. The Bash tools
send the model the text without them.

What is taken out, per ECMA-48: CSI sequences (``ESC [`` parameters,
intermediates, a final byte: colours, cursor moves, erasing), OSC strings
(``ESC ]`` up to BEL or ``ESC \\``: titles, hyperlinks, the clipboard), the
other string sequences (DCS, SOS, PM, APC, up to ``ESC \\``), two-byte
escapes (``ESC 7``, ``ESC c``...) and their 8-bit C1 forms. An escape that
is cut off at the end of the output is dropped too. Everything else, newlines,
tabs and carriage returns included, stays as written. One regular expression
over the text: linear in its length.
"""

from __future__ import annotations

import re

__all__ = ["strip_terminal_codes"]

_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[\[\]PX^_][^\x07\x1b]*\Z"  # a sequence cut off at the end
    r"|\x1b[ -/]*[0-~]"  # two-byte escapes (with intermediates: ESC ( B)
    r"|\x1b\Z"
)


def strip_terminal_codes(text: str) -> str:
    """``text`` without terminal control sequences (the module's docstring says which)."""
    if "\x1b" not in text and not any(c in text for c in "\x9b\x9d\x90\x98\x9e\x9f"):
        return text
    return _SEQUENCES.sub("", text)
