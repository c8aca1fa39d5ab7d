"""HTML as Markdown for WebFetch: headings, paragraphs, links, lists, code and tables' text; scripts, styles and forms dropped.

Standard library only (``html.parser``), linear in the page, never raising on
broken markup: a page is text to read, not a document to validate. What it
cannot render it keeps as plain text. Bounded while it converts: a list item's
indent stops growing at ``MAX_INDENT`` levels (a page of 10,000 nested lists
once became 576 M characters), and conversion stops once the Markdown reaches
its ``limit`` (``truncated`` says so).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["DEFAULT_LIMIT", "MAX_INDENT", "html_to_markdown", "html_to_markdown_capped"]

MAX_INDENT = 10
"""List levels past this are indented as this one."""
DEFAULT_LIMIT = 1_000_000
"""Characters of Markdown made at most, unless the caller asks for another bound."""


class _Full(Exception):
    """The Markdown reached its limit: conversion stops."""


class _Capped(list[str]):
    """The output, refusing to grow past ``limit`` characters."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.size = 0

    def append(self, part: str) -> None:
        self.size += len(part)
        super().append(part)
        if self.size >= self.limit:
            raise _Full

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "form", "button", "select"})
_BLOCK = frozenset({"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "table", "tr",
                    "blockquote", "figure", "figcaption", "dl", "dt", "dd", "ul", "ol", "details", "summary", "body"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "track", "wbr"})


class _Converter(HTMLParser):
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__(convert_charrefs=True)
        self.out: _Capped = _Capped(limit)
        self.skip = 0
        self.pre = 0
        self.lists: list[list[int]] = []
        """One entry a list being read: [0] for ``ul``, [n] for ``ol`` (the next number)."""
        self.links: list[str | None] = []
        self.title: list[str] = []
        self.in_title = False

    def _nl(self, n: int = 1) -> None:
        tail = "".join(self.out[-3:])
        have = len(tail) - len(tail.rstrip("\n"))
        if self.out and have < n:
            self.out.append("\n" * (n - have))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip += 1
            return
        if self.skip:
            return
        a = dict(attrs)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._nl(2)
            self.out.append("#" * int(tag[1]) + " ")
        elif tag in _BLOCK:
            self._nl(2 if tag in ("p", "table", "blockquote", "ul", "ol") and not self.lists else 1)
            if tag in ("ul", "ol"):
                self.lists.append([0] if tag == "ul" else [1])
            elif tag == "blockquote":
                self.out.append("> ")
        elif tag == "li":
            self._nl(1)
            indent = "  " * min(MAX_INDENT, max(0, len(self.lists) - 1))
            if self.lists and self.lists[-1][0]:
                self.out.append(f"{indent}{self.lists[-1][0]}. ")
                self.lists[-1][0] += 1
            else:
                self.out.append(f"{indent}- ")
        elif tag == "pre":
            self._nl(2)
            self.out.append("```\n")
            self.pre += 1
        elif tag == "code" and not self.pre:
            self.out.append("`")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag == "a":
            href = a.get("href")
            self.links.append(href if href and not href.lower().startswith("javascript:") else None)
            if self.links[-1] is not None:
                self.out.append("[")
        elif tag == "br":
            self.out.append("\n")
        elif tag == "hr":
            self._nl(2)
            self.out.append("---")
            self._nl(2)
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag == "img":
            alt = (a.get("alt") or "").strip()
            if alt:
                self.out.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._nl(2)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self._nl(2 if not self.lists else 1)
        elif tag in _BLOCK:
            self._nl(2 if tag in ("p", "table", "blockquote") else 1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self._nl(1)
            self.out.append("```")
            self._nl(2)
        elif tag == "code" and not self.pre:
            self.out.append("`")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag == "a" and self.links:
            href = self.links.pop()
            if href is not None:
                self.out.append(f"]({href})")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            return
        if self.skip:
            return
        if self.pre:
            self.out.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if text.strip() or (self.out and not self.out[-1].endswith((" ", "\n"))):
            self.out.append(text)


def html_to_markdown(html: str, limit: int = DEFAULT_LIMIT) -> str:
    """The page's readable text as Markdown (its ``<title>`` first, as a heading, when it has one), at most
    about ``limit`` characters."""
    return html_to_markdown_capped(html, limit)[0]


def html_to_markdown_capped(html: str, limit: int = DEFAULT_LIMIT) -> tuple[str, bool]:
    """``html_to_markdown`` and whether it stopped at ``limit`` (the rest of the page was not converted)."""
    c = _Converter(limit)
    full = False
    try:
        c.feed(html)
        c.close()
    except _Full:
        full = True
    except Exception:  # html.parser is lenient; anything it still trips on leaves what was read so far
        pass
    body = "".join(c.out)[:limit]
    lines = [ln.rstrip() for ln in body.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = " ".join("".join(c.title).split())[:1000]
    if title and not text.startswith("# "):
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return text, full
