"""The REPL's Markdown stream, drawn on an emulated terminal (pyte) as a person would see it."""

from __future__ import annotations

import re

import pyte
import pytest

from agentloop.cli.markdown import MarkdownStream, render_line

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

ANSWER = (
    "# Plan\n"
    "\n"
    "Use **bold** words and `inline code` where it helps, in a line long enough to wrap on a narrow screen.\n"
    "- first point\n"
    "- second *point*\n"
    "```python\n"
    "total = add(1, 2)  # **not emphasis** in code\n"
    "```\n"
    "Done."
)


class Screen:
    def __init__(self, cols: int, rows: int = 40):
        self.screen = pyte.Screen(cols, rows)
        self.screen.set_mode(pyte.modes.LNM)
        self.stream = pyte.Stream(self.screen)
        self.cols = cols
        self.writes: list[str] = []

    def write(self, text: str) -> None:
        self.writes.append(text)
        self.stream.feed(text)

    def lines(self) -> list[str]:
        out = [line.rstrip() for line in self.screen.display]
        while out and not out[-1]:
            out.pop()
        return out


def _stream(text: str, chunks: int, cols: int) -> Screen:
    scr = Screen(cols)
    md = MarkdownStream(scr.write, lambda: cols)
    step = max(1, len(text) // chunks)
    for i in range(0, len(text), step):
        md.feed(text[i : i + step])
    md.end()
    return scr


@pytest.mark.parametrize("chunks", [1, 7, 40, len(ANSWER)])
@pytest.mark.parametrize("cols", [30, 100])
def test_the_screen_shows_the_rendered_answer_however_it_was_chunked_and_wrapped(chunks: int, cols: int) -> None:
    scr = _stream(ANSWER, chunks, cols)
    shown = "\n".join(scr.lines())
    flat = " ".join(shown.split())
    assert "Plan" in shown and "#" not in shown.split("Plan")[0]
    assert "Use bold words and inline code where it helps" in flat
    assert "• first point" in flat and "• second point" in flat
    assert "total = add(1, 2) # **not emphasis** in code" in flat, "code is shown as written, its markup kept"
    assert "```" not in shown, "fences are not shown"
    assert "**bold**" not in shown and "`inline code`" not in shown
    assert scr.lines()[-1] == "Done."
    # nothing of the raw lines is left over: each rendered line appears once
    assert flat.count("first point") == 1 and flat.count("Done.") == 1 and flat.count("Plan") == 1


def test_a_line_is_shown_raw_while_it_streams_then_redrawn_in_place() -> None:
    scr = Screen(80)
    md = MarkdownStream(scr.write, lambda: 80)
    md.feed("Some **bo")
    assert scr.lines() == ["Some **bo"], "the partial line is on screen at once"
    md.feed("ld** text\nnext")
    assert scr.lines() == ["Some bold text", "next"]
    md.flush()
    assert scr.lines() == ["Some bold text", "next"] and scr.screen.cursor.x == 0


def test_a_wrapped_partial_line_is_erased_row_by_row() -> None:
    scr = Screen(10)
    md = MarkdownStream(scr.write, lambda: 10)
    md.feed("**" + "x" * 23)  # 25 cells: three rows at 10 columns
    assert len(scr.lines()) == 3
    md.feed("**\n")
    assert "\x1b[2A\r\x1b[J" in scr.writes
    assert "".join(scr.lines()) == "x" * 23


def test_a_code_block_left_open_is_closed_when_the_answer_ends() -> None:
    scr = Screen(60)
    md = MarkdownStream(scr.write, lambda: 60)
    md.feed("```\n**code**\n")
    md.end()
    md.feed("**prose**\n")
    assert scr.lines() == ["**code**", "prose"]


def test_a_rendered_line_keeps_its_words_and_ends_in_one_newline() -> None:
    for line in ["plain words", "a `b` **c** *d*", "> quote", "## Heading two", "1. one"]:
        out = render_line(line, 50)
        assert out.endswith("\n") and not out.endswith("\n\n")
        words = re.sub(r"[#>*`]", "", line).split()
        assert all(w in ANSI.sub("", out) for w in words if w != "1.")
    assert render_line("", 50) == "\n"
