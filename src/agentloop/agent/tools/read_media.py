"""What Read returns for files that are not plain text: images and PDFs.

Rules:

1. An image (PNG, JPEG, GIF, WebP, known by its first bytes, whatever its name)
   is returned as an MCP-shaped result, ``{"content": [text, image block]}``:
   ``providers/images.py`` finds that shape when a request is built, so the
   Anthropic adapter sends an ``image`` block inside the tool result and the
   OpenAI one an image in the user message after the tool messages. The
   transcript keeps the base64 text, so replay is byte for byte.
2. Images over ``MAX_IMAGE_BYTES`` are refused with their size (the vendors'
   limit on one image is about 5 MB of base64).
3. A PDF is returned as text, page by page (``--- page N ---``), at most
   ``PDF_MAX_PAGES`` pages a call, chosen with ``pages`` ("3", "1-5"). The
   text is extracted by ``pypdf``; a page with no text layer (a scan) says so.
4. Extraction is bounded: it runs in a child process (``spawn.popen``) whose
   CPU time (``PDF_CPU_SECONDS``) and memory (``PDF_MEMORY_BYTES``) the
   kernel limits, for at most ``PDF_WALL_SECONDS``, each page's text cut at
   ``PDF_PAGE_CHARS``; what it did not finish is said on the page (a 13 KB
   PDF with one shared 950k-operation content stream once kept Read busy 897 s).
"""

from __future__ import annotations

import base64
import io
from typing import Any

from ...tools import ToolError

__all__ = ["MAX_IMAGE_BYTES", "PDF_MAX_PAGES", "image_kind", "image_result", "parse_pages", "pdf_text"]

MAX_IMAGE_BYTES = 3_750_000
"""Raw bytes of one image: its base64 stays under the vendors' 5 MB."""
PDF_MAX_PAGES = 20
PDF_CPU_SECONDS = 20
PDF_MEMORY_BYTES = 2 << 30
PDF_WALL_SECONDS = 60.0
PDF_PAGE_CHARS = 200_000

_EXTRACT = """
import io, json, resource, sys
cpu, mem, cap = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
try:
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
except (ValueError, OSError):
    pass
import pypdf
reader = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
for n in json.loads(sys.argv[4]):
    try:
        out = {"n": n, "text": (reader.pages[n - 1].extract_text() or "")[:cap]}
    except Exception as exc:
        out = {"n": n, "error": type(exc).__name__}
    sys.stdout.write(json.dumps(out) + "\\n")
    sys.stdout.flush()
"""


def image_kind(head: bytes) -> str | None:
    """The media type of an image by its magic bytes, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_result(data: bytes, media_type: str, shown: str) -> dict[str, Any]:
    """The Read result of an image (rule 1)."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(
            f"{shown} is an image of {len(data)} bytes, over the {MAX_IMAGE_BYTES} a model accepts; "
            "make a smaller copy with Bash (for example with ImageMagick or Pillow) and Read that"
        )
    note = f"Image {shown} ({media_type}, {len(data)} bytes)"
    return {
        "content": [
            {"type": "text", "text": note},
            {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": media_type},
        ]
    }


def parse_pages(spec: str, total: int) -> list[int]:
    """The 1-based page numbers of ``"3"``, ``"1-5"``, ``"2,4-6"`` within ``total`` pages."""
    pages: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        lo_s, sep, hi_s = part.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep and hi_s else (total if sep else lo)
        except ValueError:
            raise ToolError(f"pages {spec!r}: give page numbers like \"3\", \"1-5\" or \"2,4-6\"") from None
        if lo < 1 or hi < lo:
            raise ToolError(f"pages {spec!r}: pages are numbered from 1, a range is low-high")
        if lo > total:
            raise ToolError(f"pages {spec!r}: the PDF has {total} pages")
        pages.extend(range(lo, min(hi, total) + 1))
    if not pages:
        raise ToolError(f"pages {spec!r} names no page")
    return sorted(set(pages))


def pdf_text(data: bytes, shown: str, pages_spec: str | None) -> str:
    """The text of a PDF's pages (rule 3)."""
    try:
        import pypdf
    except ImportError:  # pragma: no cover - a dependency; said plainly if an install lacks it
        raise ToolError("reading PDFs needs the pypdf package, which is not installed; use Bash (pdftotext) instead") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        total = len(reader.pages)
    except Exception as exc:  # a broken PDF is the file's problem, said in one line
        raise ToolError(f"{shown} could not be read as a PDF: {type(exc).__name__}: {exc}") from None
    if total == 0:
        return f"(the PDF {shown} has no pages)"
    wanted = parse_pages(pages_spec, total) if pages_spec else list(range(1, total + 1))
    more = ""
    if len(wanted) > PDF_MAX_PAGES:
        rest = wanted[PDF_MAX_PAGES:]
        wanted = wanted[:PDF_MAX_PAGES]
        more = (f"\n[showing {PDF_MAX_PAGES} pages; {len(rest)} more requested or left: "
                f"call Read with pages=\"{rest[0]}-{rest[-1]}\" to continue]")
    parts = [f"PDF {shown}: {total} page{'s' if total != 1 else ''}"]
    got = _extract(data, wanted)
    for n in wanted:
        text = got.get(n, f"[this page's text was not extracted within {PDF_CPU_SECONDS} s of CPU time and "
                          f"{PDF_MEMORY_BYTES >> 20} MiB: the PDF is too costly to read here; try pdftotext in Bash]")
        parts.append(f"--- page {n} ---\n{text.strip() or '[no text layer on this page: it may be a scanned image]'}")
    return "\n".join(parts) + more


def _extract(data: bytes, wanted: list[int]) -> dict[int, str]:
    """Rule 4: each wanted page's text, from a child held to ``PDF_CPU_SECONDS`` and ``PDF_MEMORY_BYTES``."""
    import json
    import subprocess
    import sys

    from ..spawn import popen

    argv = [sys.executable, "-I", "-c", _EXTRACT, str(PDF_CPU_SECONDS), str(PDF_MEMORY_BYTES), str(PDF_PAGE_CHARS),
            json.dumps(wanted)]
    try:
        child = popen(argv, cwd="/", env=None, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError as exc:
        raise ToolError(f"cannot start the PDF reader: {exc}") from None
    try:
        out, _ = child.communicate(data, timeout=PDF_WALL_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
    pages: dict[int, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by the limit that stopped the child
        if isinstance(rec, dict) and isinstance(rec.get("n"), int):
            err = rec.get("error")
            pages[rec["n"]] = f"[this page's text could not be extracted: {err}]" if err else str(rec.get("text", ""))
    return pages
