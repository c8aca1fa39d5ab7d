"""apply_patch: file changes in Codex's patch format, for models trained on it (OpenAI's).

The format (Codex's ``apply_patch`` tool)::

    *** Begin Patch
    *** Add File: path/new.py
    +every line of the new file
    *** Update File: path/old.py
    *** Move to: path/renamed.py        (optional)
    @@ def the_function():              (optional: a line to find first)
     a context line
    -a line taken out
    +a line put in
    *** End of File                     (optional: the hunk ends the file)
    *** Delete File: path/gone.py
    *** End Patch

Rules:

1. The whole patch is parsed and every hunk is located before anything is
   written; a patch that does not apply changes nothing and says which hunk
   failed and why.
2. A hunk's lines (context and removed) are found in order from where the last
   hunk ended: exactly, then ignoring trailing whitespace, then ignoring
   surrounding whitespace, then with typographic punctuation read as ASCII
   (Codex's ``seek_sequence`` does the same four passes).
3. Paths go through the workspace (relative to it, or absolute inside it);
   ``guard(real_path)`` may refuse one (the agent refuses what an Edit deny
   rule covers and the protected paths, which only Edit may change, after
   asking). Every write goes through the workspace, so checkpoints see it.
4. A file keeps its line endings (CRLF stays CRLF) and its final newline.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...tools import ToolError
from .file_state import MAX_EDIT_BYTES, check_regular, line_ending
from .record import ToolRecord
from .workspace import Workspace

__all__ = ["APPLY_PATCH", "apply_patch", "parse_patch"]


@dataclass
class Hunk:
    context: str | None
    lines: list[tuple[str, str]] = field(default_factory=list)
    """(tag, text): ' ' context, '-' taken out, '+' put in."""
    at_end: bool = False

    @property
    def old(self) -> list[str]:
        return [t for tag, t in self.lines if tag != "+"]

    def new(self, found: list[str]) -> list[str]:
        """The lines that replace ``found`` (the file's own lines where the hunk's ``old`` was seen):
        context lines stay as the file has them (rule 2 may have matched them loosely)."""
        out: list[str] = []
        k = 0
        for tag, text in self.lines:
            if tag == "+":
                out.append(text)
                continue
            if tag == " " and k < len(found):
                out.append(found[k])
            k += 1
        return out


@dataclass
class FileOp:
    kind: str  # add | delete | update
    path: str
    move_to: str | None = None
    lines: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)


_BEGIN, _END = "*** Begin Patch", "*** End Patch"
_ADD, _DELETE, _UPDATE, _MOVE, _EOF = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: ", "*** End of File"


def parse_patch(text: str) -> list[FileOp]:
    """The operations of a patch; ``ToolError`` naming the line that does not fit."""
    lines = text.strip().replace("\r\n", "\n").split("\n")
    if lines and lines[0].strip() in ("<<EOF", "<<'EOF'", '<<"EOF"'):  # a heredoc wrapper around the patch
        lines = lines[1:-1] if lines[-1].strip() == "EOF" else lines[1:]
    if not lines or lines[0].strip() != _BEGIN:
        raise ToolError(f"the patch must start with the line {_BEGIN!r}")
    if lines[-1].strip() != _END:
        raise ToolError(f"the patch must end with the line {_END!r}")
    ops: list[FileOp] = []
    i = 1
    body = lines[1:-1]
    i = 0
    while i < len(body):
        line = body[i]
        if line.startswith(_ADD):
            op = FileOp("add", line[len(_ADD):].strip())
            i += 1
            while i < len(body) and body[i].startswith("+"):
                op.lines.append(body[i][1:])
                i += 1
        elif line.startswith(_DELETE):
            op = FileOp("delete", line[len(_DELETE):].strip())
            i += 1
        elif line.startswith(_UPDATE):
            op = FileOp("update", line[len(_UPDATE):].strip())
            i += 1
            if i < len(body) and body[i].startswith(_MOVE):
                op.move_to = body[i][len(_MOVE):].strip()
                i += 1
            i = _parse_hunks(body, i, op)
        elif not line.strip():
            i += 1
            continue
        else:
            raise ToolError(f"patch line {i + 2}: expected '*** Add File:', '*** Update File:' or '*** Delete File:', got {line[:80]!r}")
        if not op.path:
            raise ToolError(f"patch line {i + 1}: a file operation without a path")
        ops.append(op)
    if not ops:
        raise ToolError("the patch changes no file")
    return ops


def _parse_hunks(body: list[str], i: int, op: FileOp) -> int:
    hunk: Hunk | None = None
    while i < len(body) and not body[i].startswith(("*** Add File: ", "*** Delete File: ", "*** Update File: ")):
        line = body[i]
        if line.startswith("@@"):
            hunk = Hunk(line[2:].strip() or None)
            op.hunks.append(hunk)
        elif line.strip() == _EOF:
            if hunk is not None:
                hunk.at_end = True
        else:
            if hunk is None:
                hunk = Hunk(None)
                op.hunks.append(hunk)
            tag, rest = (line[:1], line[1:]) if line else (" ", "")
            if tag in (" ", "-", "+"):
                hunk.lines.append((tag, rest))
            else:
                raise ToolError(f"in the update of {op.path}: a hunk line must start with ' ', '-' or '+', got {line[:80]!r}")
        i += 1
    if not op.hunks and op.move_to is None:
        raise ToolError(f"the update of {op.path} has no hunks")
    return i


_PUNCT = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
                        "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u201c": '"',
                        "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00a0": " ", "\u2002": " ", "\u2003": " ",
                        "\u2009": " ", "\u202f": " "})
_PASSES: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: s.rstrip(),
    lambda s: s.strip(),
    lambda s: s.strip().translate(_PUNCT),
)


def _seek(lines: list[str], want: list[str], start: int, at_end: bool) -> int | None:
    """Where ``want`` occurs in ``lines`` at or after ``start`` (rule 2), or None: linear in the file and the
    hunk for each pass (a 2,000-line hunk against a file of a million lines once ran past 600 s)."""
    if not want:
        return len(lines) if at_end else start
    last = len(lines) - len(want)
    if last < start:
        return None
    for norm in _PASSES:
        w = [norm(x) for x in want]
        if at_end:
            if all(norm(lines[last + k]) == w[k] for k in range(len(w))):
                return last
            continue
        found = _find(lines, w, start, norm)
        if found is not None:
            return found
    return None


def _find(lines: list[str], w: list[str], start: int, norm: Callable[[str], str]) -> int | None:
    """The first ``i >= start`` where ``norm`` of ``lines[i:i+len(w)]`` is ``w`` (Knuth-Morris-Pratt over lines:
    each line of the file is normalized and compared a bounded number of times)."""
    fail = [0] * len(w)
    k = 0
    for i in range(1, len(w)):
        while k and w[i] != w[k]:
            k = fail[k - 1]
        if w[i] == w[k]:
            k += 1
        fail[i] = k
    k = 0
    for i in range(start, len(lines)):
        line = norm(lines[i])
        while k and line != w[k]:
            k = fail[k - 1]
        if line == w[k]:
            k += 1
            if k == len(w):
                return i - k + 1
    return None


def _apply_hunks(text: str, op: FileOp) -> str:
    ending = line_ending(text)
    body = text.replace("\r\n", "\n") if ending != "\n" else text
    final_nl = body.endswith("\n")
    lines = body.split("\n")
    if final_nl:
        lines.pop()
    at = 0
    for n, h in enumerate(op.hunks, 1):
        if h.context is not None:
            found = _seek(lines, [h.context], at, False)
            if found is None:
                raise ToolError(f"{op.path}, hunk {n}: the line after @@ ({h.context[:80]!r}) was not found")
            at = found + 1
        old = h.old
        pos = _seek(lines, old, at, h.at_end)
        if pos is None and h.lines and h.lines[-1] == (" ", ""):  # a blank context line at the end that the file lacks
            h.lines.pop()
            old = h.old
            pos = _seek(lines, old, at, h.at_end)
        if pos is None:
            shown = "\n".join(h.old[:6])
            raise ToolError(f"{op.path}, hunk {n}: these lines were not found (after line {at}):\n{shown}\nRead the file and make the context match it.")
        new = h.new(lines[pos : pos + len(old)])
        lines[pos : pos + len(old)] = new
        at = pos + len(new)
    out = "\n".join(lines) + ("\n" if final_nl or not lines else "")
    return out.replace("\n", ending) if ending != "\n" else out


@dataclass
class _Planned:
    write: dict[str, bytes] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def _plan(ws: Workspace, ops: list[FileOp], guard: Callable[[str], str | None]) -> _Planned:
    out = _Planned()

    def target(path: str) -> str:
        real = ws.resolve(path, for_write=True)
        why = guard(real)
        if why:
            raise ToolError(f"apply_patch may not change {path}: {why}")
        return real

    for op in ops:
        real = target(op.path)
        st = check_regular(real, op.path, max_bytes=MAX_EDIT_BYTES)
        if op.kind == "add":
            if st is not None:
                raise ToolError(f"cannot add {op.path}: it exists (use *** Update File)")
            out.write[real] = ("\n".join(op.lines) + "\n").encode("utf-8") if op.lines else b""
            out.summary.append(f"A {op.path}")
            continue
        if st is None and real not in out.write:
            raise ToolError(f"cannot {op.kind} {op.path}: no such file")
        if op.kind == "delete":
            out.delete.append(real)
            out.summary.append(f"D {op.path}")
            continue
        before = out.write.get(real)
        data = before if before is not None else ws.read_bytes(real)
        if b"\0" in data[:8192]:
            raise ToolError(f"{op.path} is a binary file; apply_patch changes text files only")
        new = _apply_hunks(data.decode("utf-8", "surrogateescape"), op) if op.hunks else data.decode("utf-8", "surrogateescape")
        encoded = new.encode("utf-8", "surrogateescape")
        if op.move_to:
            dest = target(op.move_to)
            if check_regular(dest, op.move_to) is not None:
                raise ToolError(f"cannot move {op.path} to {op.move_to}: it exists")
            out.write[dest] = encoded
            out.delete.append(real)
            out.summary.append(f"R {op.path} -> {op.move_to}")
        else:
            out.write[real] = encoded
            out.summary.append(f"M {op.path}")
    return out


def _unlink(ws: Workspace, real: str) -> None:
    """Remove a file through its directory's descriptor from the workspace's symlink-free walk."""
    dfd = ws.open_resolved(os.path.dirname(real), for_write=True)
    try:
        os.unlink(os.path.basename(real), dir_fd=dfd)
    except FileNotFoundError:
        pass
    finally:
        os.close(dfd)


def apply_patch(ws: Workspace, patch: str, guard: Callable[[str], str | None], on_written: Callable[[str], None]) -> str:
    """Apply ``patch`` (rule 1: all or nothing as far as parsing and locating go)."""
    planned = _plan(ws, parse_patch(patch), guard)
    ws.refuse_code_for_git({**dict.fromkeys(planned.delete), **planned.write})  # the whole patch at once
    for real, data in planned.write.items():
        ws.write_bytes(real, data)
        on_written(real)
    for real in planned.delete:
        if real not in planned.write:
            _unlink(ws, real)
    return "Done. Changed files:\n" + "\n".join(planned.summary)


APPLY_PATCH_DOC = (
    "Change files with a patch in the `*** Begin Patch` / `*** End Patch` format: `*** Add File: "
    "PATH` followed by the new file's lines each starting with +; `*** Delete File: PATH`; `*** "
    "Update File: PATH` (optionally `*** Move to: NEW`) followed by hunks. A hunk may start with "
    "`@@ LINE` naming a line to find first (a def or class line); its lines start with a space "
    "(context, unchanged), - (taken out) or + (put in). Give about three lines of context around "
    "each change. Paths are relative to the workspace. Nothing is written unless every hunk is found."
)
APPLY_PATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The whole patch, from *** Begin Patch to *** End Patch."}},
    "required": ["input"],
    "additionalProperties": False,
}


def _run(ctx: Any, **kw: Any) -> str:
    return apply_patch(ctx.ws, kw["input"], ctx.patch_guard, ctx.read_state.saw)


APPLY_PATCH = ToolRecord("apply_patch", APPLY_PATCH_DOC, APPLY_PATCH_SCHEMA, rule="edit", acp="edit", run=_run,
                         text_only=True)
"""apply_patch: an edit tool (acceptEdits allows it, plan mode does not), whose paths are inside the patch text:
each file it would change passes ``ctx.patch_guard`` (the Edit deny rules and protected paths) first."""
