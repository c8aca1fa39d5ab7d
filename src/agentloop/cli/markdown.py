"""Model text on a colour terminal: streamed as it comes, shown as Markdown line by line.

Rules:

1. Nothing waits for the end of the answer. The line being written is shown
   raw as its deltas arrive; when its newline comes, it is drawn again in
   place, rendered (headings, emphasis, ``code``, lists, quotes), and the
   next line starts.
2. A fenced code block is shown without its fences, each line highlighted
   for the fence's language.
3. ``flush`` renders a line that has no newline yet (the end of an answer,
   or a tool call starting); after it the stream is at the start of a line.
4. Only for colour terminals: without one (a pipe, ``NO_COLOR``) the REPL
   writes the deltas as they are, so what it prints is the model's text.

Theory of operation: redrawing a line in place needs to know how many rows
its raw form took: its cell width over the terminal's width. The cursor goes
up that many rows less one, to column 0, and the screen is cleared below it
before the rendered line is written.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable

__all__ = ["MarkdownStream", "render_line"]

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+#.-]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_TRAILING = re.compile(r"(?:\x1b\[[0-9;]*m| )+$")


def render_line(line: str, width: int, code_lang: str | None = None) -> str:
    """One line of Markdown (or of a code block in ``code_lang``) as ANSI text, ending in a newline."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.syntax import Syntax

    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, color_system="standard", width=max(20, width), highlight=False)
    if code_lang is not None:
        con.print(Syntax(line, code_lang or "text", theme="ansi_dark", background_color="default", word_wrap=True))
    elif not line.strip():
        return "\n"
    elif heading := _HEADING.match(line):
        # left-aligned and bold (rich centres a top heading: a stream reads better without)
        con.print(Markdown(heading.group(2)), style="bold underline" if len(heading.group(1)) == 1 else "bold")
    else:
        con.print(Markdown(line))
    out = buf.getvalue()
    # rich pads a rendered block with blank lines and trailing spaces: the stream keeps its own spacing
    lines = [_TRAILING.sub("", ln) + ("\x1b[0m" if "\x1b[" in ln else "") for ln in out.split("\n")]
    while lines and not _visible(lines[-1]):
        lines.pop()
    while lines and not _visible(lines[0]):
        lines.pop(0)
    return "\n".join(lines) + "\n" if lines else "\n"


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _visible(s: str) -> bool:
    return bool(_ANSI.sub("", s).strip())


class MarkdownStream:
    """Feeds of text deltas in, raw-then-rendered lines out (see the module's rules)."""

    def __init__(self, write: Callable[[str], None], width: Callable[[], int]):
        self._write = write
        self._width = width
        self._partial = ""
        self._shown = ""
        """The raw text of the current line already on the screen."""
        self._code: str | None = None
        """The language of the open code block ("" for none given), or None outside one."""

    def feed(self, text: str) -> None:
        while text:
            head, nl, text = text.partition("\n")
            self._partial += head
            if nl:
                self._finish_line()
            elif head:
                self._write(head)
                self._shown += head

    def flush(self) -> None:
        """Render the line in progress, if any (see rule 3)."""
        if self._partial:
            self._finish_line()

    def end(self) -> None:
        """The answer is over: flush, and close a code block the model left open."""
        self.flush()
        self._code = None

    def _finish_line(self) -> None:
        line, self._partial = self._partial, ""
        fence = _FENCE.match(line)
        if fence:
            self._code = (fence.group(2) or "") if self._code is None else None
            rendered = ""  # the fences themselves are not shown
        else:
            rendered = render_line(line, self._width(), self._code)
        self._erase_shown()
        self._write(rendered)

    def _erase_shown(self) -> None:
        if not self._shown:
            return
        from rich.cells import cell_len

        width = max(1, self._width())
        rows = max(1, -(-cell_len(self._shown) // width))
        self._write((f"\x1b[{rows - 1}A" if rows > 1 else "") + "\r\x1b[J")
        self._shown = ""
