"""What the file tools know of the files the model has read, and how Edit finds its text.

Rules:

1. Read-before-edit: Edit, Write and NotebookEdit of a file that exists are
   refused until the model has read it with Read in this registry's life (one
   agent session, or one sub-agent). A file the model created or changed itself
   counts as read.
2. Stale-file check: a file whose size, modification time or inode changed
   since the model last read (or wrote) it is refused with a request to read it
   again; the model's picture of it is out of date (a formatter, the user, a
   Bash command changed it).
3. Special files are refused before they are opened: FIFOs, devices and sockets
   (opening one can block or act); the tools that hold a whole file in memory
   also refuse sparse files (mostly holes) and files over ``MAX_EDIT_BYTES``.
4. Edit matches with line endings normalised (a CRLF file is matched with
   ``\\n`` and written back with ``\\r\\n``) and, when the exact text is not
   found, with curly quotes read as straight ones; a replacement keeps the
   file's curly quotes.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass

from ...tools import ToolError

__all__ = [
    "MAX_EDIT_BYTES",
    "EditMatch",
    "ReadState",
    "check_regular",
    "find_edit",
    "line_ending",
]

MAX_EDIT_BYTES = 1 << 30
"""The largest file Edit, Write (over an existing file) and NotebookEdit change (Claude Code's is 1 GiB)."""
SPARSE_MIN_BYTES = 1 << 20
"""A file this large whose blocks hold under an eighth of its size is treated as sparse."""


def check_regular(real: str, shown: str, *, max_bytes: int | None = None) -> os.stat_result | None:
    """The ``stat`` of ``real`` when it is a regular file, None when it does not exist (rule 3).

    ``max_bytes`` is given by the tools that hold a whole file (Edit, Write,
    NotebookEdit, apply_patch): they also refuse sparse and larger files. Read
    streams in bounded memory, so it pages through those instead.

    Raises:
        ToolError: a FIFO, device, socket; with ``max_bytes``, a sparse or larger file.
    """
    try:
        st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None  # the write that follows names the problem (a missing directory, a file on the way)
    except OSError as exc:
        raise ToolError(f"cannot open {shown}: {exc.strerror or exc}") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory: use LS or Glob to see what is in it")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "special"
        raise ToolError(f"{shown} is not a regular file ({kind}); the file tools open regular files only")
    blocks = getattr(st, "st_blocks", None)
    if max_bytes is not None and blocks is not None and st.st_size >= SPARSE_MIN_BYTES and blocks * 512 * 8 < st.st_size:
        raise ToolError(
            f"{shown} is a sparse file ({st.st_size} bytes, {blocks * 512} on disk): mostly holes, "
            "nothing the file tools can show or change"
        )
    if max_bytes is not None and st.st_size > max_bytes:
        raise ToolError(f"{shown} is {st.st_size} bytes, over the {max_bytes} the editing tools handle; change it with Bash")
    return st


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReadState:
    """The files the model has read, with what they looked like then (rules 1 and 2). Thread-safe."""

    def __init__(self, *, required: bool = True):
        self.required = required
        """False: Edit and Write work on files never read (library users who build a registry by hand)."""
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[int, int, int, int]] = {}

    def saw(self, real: str, st: os.stat_result | None = None) -> None:
        """The model has read ``real`` (or written it) as it is now on disk."""
        try:
            st = st or os.stat(real)
        except OSError:
            return
        with self._lock:
            self._seen[real] = _stamp(st)

    def check_before_write(self, real: str, shown: str, st: os.stat_result | None, tool: str) -> None:
        """Refuse to change an existing file that was not read, or that changed since (rules 1 and 2)."""
        if st is None or not self.required:
            return
        with self._lock:
            seen = self._seen.get(real)
        if seen is None:
            raise ToolError(
                f"{tool} refused: {shown} exists and has not been read in this session. "
                f"Read it first (Read file_path={shown!r}), then call {tool} again."
            )
        if seen != _stamp(st):
            raise ToolError(
                f"{tool} refused: {shown} changed on disk since you last read it (by a command, a formatter or "
                "the user). Read it again and redo the change on what it holds now."
            )


def line_ending(text: str) -> str:
    """``\\r\\n`` when every line of ``text`` ends with it, else ``\\n``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"'})


def _straight(text: str) -> str:
    return text.translate(_QUOTES)


def _curl(new: str, like: str) -> str:
    """``new`` with its straight quotes curled as ``like`` (the text it replaces) curls its own."""
    single = any(c in like for c in "\u2018\u2019")
    double = any(c in like for c in "\u201c\u201d")
    if not (single or double):
        return new
    out: list[str] = []
    for i, c in enumerate(new):
        prev = new[i - 1] if i else ""
        opening = prev == "" or prev.isspace() or prev in "([{<\u2014\u2013-"
        if c == '"' and double:
            out.append("\u201c" if opening else "\u201d")
        elif c == "'" and single:
            out.append("\u2018" if opening else "\u2019")  # an apostrophe inside a word is a closing quote
        else:
            out.append(c)
    return "".join(out)


@dataclass(frozen=True)
class EditMatch:
    """Where an edit applies: the text to change it in, how often ``old`` occurs, and how to write it back."""

    text: str
    """The file's text as matched (CRLF folded to LF when the file is all CRLF)."""
    old: str
    """The text as it stands in the file (its own quotes)."""
    new: str
    """The replacement (the file's quote style)."""
    count: int
    ending: str
    """The file's line ending, put back on write."""

    def apply(self, replace_all: bool) -> tuple[str, int]:
        """The new file text (in the file's own line endings) and the offset of the first change in ``text``."""
        first = self.text.index(self.old)
        updated = self.text.replace(self.old, self.new) if replace_all else self.text.replace(self.old, self.new, 1)
        if self.ending != "\n":
            updated = updated.replace("\n", self.ending)
        return updated, first


def find_edit(text: str, old: str, new: str) -> EditMatch:
    """How ``old`` is found in ``text`` (rule 4); ``count`` is 0 when it is not."""
    ending = line_ending(text)
    if ending != "\n":
        text = text.replace("\r\n", "\n")
        old = old.replace("\r\n", "\n")
        new = new.replace("\r\n", "\n")
    count = text.count(old)
    if count or not old:
        return EditMatch(text, old, new, count, ending)
    plain_old = _straight(old)
    plain_text = _straight(text)
    count = plain_text.count(plain_old)
    if not count:
        return EditMatch(text, old, new, 0, ending)
    at = plain_text.index(plain_old)
    actual = text[at : at + len(old)]  # each quote folds one character to one: offsets agree
    if count > 1 and any(text[i : i + len(old)] != actual for i in _all(plain_text, plain_old)):
        # the occurrences differ in their quotes: replace_all would need one per spelling
        count = sum(1 for i in _all(plain_text, plain_old) if text[i : i + len(old)] == actual)
    return EditMatch(text, actual, _curl(new, actual) if actual != old else new, count, ending)


def _all(haystack: str, needle: str) -> list[int]:
    out: list[int] = []
    i = haystack.find(needle)
    while i >= 0:
        out.append(i)
        i = haystack.find(needle, i + len(needle))
    return out
