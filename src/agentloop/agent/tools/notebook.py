"""Jupyter notebooks for Read (cells with their outputs) and NotebookEdit (change one cell).

Rules:

1. Read shows each cell as ``<cell id="ID" type="code|markdown|raw">``, its
   source, then its outputs (streams, ``text/plain`` results, errors with their
   traceback); rich outputs (images, HTML) are named, not inlined. Output text
   is cut at ``OUTPUT_CHARS`` per output.
2. A cell is named by its ``id`` (nbformat 4.5) or, for older notebooks, by
   ``cell-N`` (its 0-based index), as Read shows it.
3. NotebookEdit replaces a cell's source (``edit_mode`` "replace", the
   default), inserts a new cell after the one named (or first, when none is
   named), or deletes it. An inserted cell gets a fresh id when the notebook
   has ids. A replaced code cell loses its outputs and execution count (they
   described the old source).
4. The notebook is written back as JSON with one-space indentation, as
   Jupyter writes it, ending with a newline.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ...tools import ToolError

__all__ = ["OUTPUT_CHARS", "edit_notebook", "load_notebook", "render_notebook"]

OUTPUT_CHARS = 4_000


def load_notebook(data: bytes, shown: str) -> dict[str, Any]:
    try:
        nb = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ToolError(f"{shown} is not valid notebook JSON: {exc}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ToolError(f"{shown} is not a Jupyter notebook (no \"cells\" list)")
    return nb


def _text(v: Any) -> str:
    if isinstance(v, list):
        return "".join(str(x) for x in v)
    return v if isinstance(v, str) else ""


def _cut(text: str) -> str:
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + f"\n... [{len(text) - OUTPUT_CHARS} more characters]"


def _output(out: Any) -> str:
    if not isinstance(out, dict):
        return ""
    kind = out.get("output_type")
    if kind == "stream":
        return _cut(_text(out.get("text")))
    if kind == "error":
        tb = "\n".join(_text(x) for x in out.get("traceback") or []) or f"{out.get('ename')}: {out.get('evalue')}"
        return _cut(tb)
    raw = out.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    parts = []
    if "text/plain" in data:
        parts.append(_cut(_text(data["text/plain"])))
    rich = sorted(k for k in data if k != "text/plain")
    if rich:
        parts.append(f"[{', '.join(rich)} output not shown]")
    return "\n".join(parts)


def cell_id(cell: dict[str, Any], index: int) -> str:
    cid = cell.get("id")
    return cid if isinstance(cid, str) and cid else f"cell-{index}"


def render_notebook(nb: dict[str, Any], shown: str) -> str:
    """The text Read shows of a notebook (rule 1)."""
    lang = ""
    meta = nb.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("language_info"), dict):
        lang = str(meta["language_info"].get("name") or "")
    cells = nb["cells"]
    head = f"Notebook {shown}: {len(cells)} cell{'s' if len(cells) != 1 else ''}" + (f", language {lang}" if lang else "")
    parts = [head]
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type", "code")
        parts.append(f'<cell id="{cell_id(cell, i)}" type="{kind}">\n{_text(cell.get("source"))}\n</cell>')
        outs = [o for o in (_output(x) for x in cell.get("outputs") or []) if o]
        if outs:
            parts.append(f'<outputs of="{cell_id(cell, i)}">\n' + "\n".join(outs) + "\n</outputs>")
    return "\n".join(parts)


def _find(cells: list[Any], wanted: str) -> int:
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell_id(cell, i) == wanted:
            return i
    if wanted.startswith("cell-") and wanted[5:].isdigit() and int(wanted[5:]) < len(cells):
        return int(wanted[5:])
    raise ToolError(f"no cell with id {wanted!r} (Read the notebook to see the cell ids)")


def _source_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _new_cell(nb: dict[str, Any], kind: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": _source_lines(source)}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    if any(isinstance(c, dict) and "id" in c for c in nb["cells"]) or (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5):
        seed = f"{len(nb['cells'])}:{source}".encode()
        taken = {c.get("id") for c in nb["cells"] if isinstance(c, dict)}
        n = 0
        while True:  # derived from the content, so replay writes the same notebook
            cid = hashlib.sha256(seed + str(n).encode()).hexdigest()[:8]
            if cid not in taken:
                break
            n += 1
        cell["id"] = cid
    return cell


def edit_notebook(nb: dict[str, Any], *, cell: str | None, source: str, cell_type: str | None, mode: str) -> str:
    """Change ``nb`` in place (rule 3); returns what was done, for the model."""
    cells: list[Any] = nb["cells"]
    if mode == "insert":
        kind = cell_type or "code"
        at = _find(cells, cell) + 1 if cell else 0
        new = _new_cell(nb, kind, source)
        cells.insert(at, new)
        return f"inserted a {kind} cell {cell_id(new, at)} at position {at}"
    if not cell:
        raise ToolError(f"edit_mode {mode!r} needs cell_id: the cell to {mode}")
    i = _find(cells, cell)
    if mode == "delete":
        del cells[i]
        return f"deleted cell {cell}"
    target = cells[i]
    if not isinstance(target, dict):
        raise ToolError(f"cell {cell} is malformed in the notebook")
    if cell_type and cell_type != target.get("cell_type"):
        target["cell_type"] = cell_type
        if cell_type == "markdown":
            target.pop("outputs", None)
            target.pop("execution_count", None)
    target["source"] = _source_lines(source)
    if target.get("cell_type") == "code":
        target["outputs"] = []
        target["execution_count"] = None
    return f"replaced the source of cell {cell}"


def dump_notebook(nb: dict[str, Any]) -> bytes:
    """Rule 4: one-space indentation, as Jupyter writes."""
    import json

    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
