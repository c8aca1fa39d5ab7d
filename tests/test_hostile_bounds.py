"""Every byte from outside is bounded in time and memory: hostile servers on 127.0.0.1 speaking the real wire formats.

Anthropic's Messages streaming documents ``ping`` events (keep-alives that carry nothing); OpenAI's Chat
Completions stream may send chunks whose ``choices`` is empty (the usage chunk, and keep-alives). Neither is
progress: a stream of them is cut at the no-progress timeout, and any attempt at its deadline. An error body
is read at most ``ERROR_BODY_BYTES`` decoded bytes and for at most the no-progress timeout, whatever its
``Content-Encoding``; a reply's kept blocks (signatures, redacted thinking) are held to the stream's limit, so
no record can pass the transcript's line limit.
"""

from __future__ import annotations

import gzip
import json
import resource
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentloop.budget import Budget
from agentloop.providers import open_model
from agentloop.providers.bounded import PIECE, BodyDecoder, read_capped
from agentloop.run import run
from agentloop.transcript import MAX_LINE_BYTES, TranscriptWriter, verify_file

Shape = Callable[[BaseHTTPRequestHandler, str], None]


def _sse(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()


def _event(h: BaseHTTPRequestHandler, name: str | None, data: Any) -> None:
    head = f"event: {name}\n" if name else ""
    h.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
    h.wfile.flush()


def _start(h: BaseHTTPRequestHandler, vendor: str) -> None:
    if vendor == "anthropic":
        _event(h, "message_start", {"type": "message_start", "message": {"id": "m1", "model": "claude-haiku-4-5",
                                                                          "usage": {"input_tokens": 10, "output_tokens": 1}}})
    else:
        _event(h, None, {"id": "c1", "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {"role": "assistant"}}]})


def pings(h: BaseHTTPRequestHandler, vendor: str) -> None:
    """Keep-alives for 15 s, twenty a second (far past the timeouts the tests set)."""
    _sse(h)
    _start(h, vendor)
    for _ in range(300):
        if vendor == "anthropic":
            _event(h, "ping", {"type": "ping"})
        else:
            _event(h, None, {"id": "c1", "model": "gpt-4o-mini", "choices": []})
        time.sleep(0.05)


def dripping_500(h: BaseHTTPRequestHandler, vendor: str) -> None:
    """A 500 whose body arrives a byte every 0.4 s for 14.4 s (past the test's 10 s), each byte well within the
    socket's read timeout."""
    h.send_response(500)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "36")
    h.end_headers()
    for _ in range(36):
        h.wfile.write(b" ")
        h.wfile.flush()
        time.sleep(0.4)


BOMB = gzip.compress(b"\0" * (64 << 20), 9)  # 64 MiB of zeros in about 64 KB


def gzip_bomb_500(h: BaseHTTPRequestHandler, vendor: str) -> None:
    h.send_response(500)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Encoding", "gzip")
    h.send_header("Content-Length", str(len(BOMB)))
    h.end_headers()
    h.wfile.write(BOMB)


def huge_signatures(h: BaseHTTPRequestHandler, vendor: str) -> None:
    """Anthropic: a thinking block followed by 100 signature deltas of 1 MB each."""
    _sse(h)
    _start(h, "anthropic")
    _event(h, "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})
    _event(h, "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}})
    sig = "A" * (1 << 20)
    for _ in range(100):
        _event(h, "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": sig}})


def huge_redacted(h: BaseHTTPRequestHandler, vendor: str) -> None:
    """Anthropic: three redacted_thinking blocks of 15 MB each."""
    _sse(h)
    _start(h, "anthropic")
    data = "B" * (15 << 20)
    for i in range(3):
        _event(h, "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "redacted_thinking", "data": data}})
        _event(h, "content_block_stop", {"type": "content_block_stop", "index": i})


@pytest.fixture
def hostile() -> Iterator[Callable[[Shape], str]]:
    servers: list[ThreadingHTTPServer] = []

    def serve(shape: Shape) -> str:
        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                n = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(n)
                vendor = "openai" if "chat/completions" in self.path else "anthropic"
                try:
                    shape(self, vendor)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        srv.daemon_threads = True
        servers.append(srv)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield serve
    for s in servers:
        s.shutdown()
        s.server_close()


def _model(vendor: str, url: str, **kw: Any) -> Any:
    name = "gpt-4o-mini" if vendor == "openai" else "claude-haiku-4-5"
    return open_model(f"{vendor}:{name}", base_url=url + "/v1" if vendor == "openai" else url, env={}, max_attempts=1, **kw)


@pytest.mark.parametrize("vendor", ["anthropic", "openai"])
def test_a_stream_of_pings_is_cut_at_the_no_progress_timeout(hostile: Callable[[Shape], str], vendor: str) -> None:
    t0 = time.monotonic()
    r = run(_model(vendor, hostile(pings), stall_timeout=1.0), [], "go", Budget(max_steps=2, max_usd_micros=1_000_000))
    took = time.monotonic() - t0
    assert r.stop_reason == "model_error" and "no progress" in (r.error or ""), r.error
    assert took < 10, took  # once it held a call open for 320 s and more


@pytest.mark.parametrize("vendor", ["anthropic", "openai"])
def test_any_attempt_stops_at_its_deadline_whatever_arrives(hostile: Callable[[Shape], str], vendor: str) -> None:
    t0 = time.monotonic()
    r = run(_model(vendor, hostile(pings), stall_timeout=60.0, call_deadline=1.5), [], "go", Budget(max_steps=2, max_usd_micros=1_000_000))
    assert r.stop_reason == "model_error" and "more than 1.5s" in (r.error or ""), r.error
    assert time.monotonic() - t0 < 10


def test_a_500_whose_body_drips_times_out(hostile: Callable[[Shape], str]) -> None:
    t0 = time.monotonic()
    r = run(_model("anthropic", hostile(dripping_500), stall_timeout=1.5), [], "go", Budget(max_steps=2, max_usd_micros=1_000_000))
    assert r.stop_reason == "model_error" and "500" in (r.error or ""), r.error
    assert time.monotonic() - t0 < 10  # once 200 s (here the body would take 14.4 s)


def test_a_gzip_bomb_error_body_is_read_in_bounded_memory(hostile: Callable[[Shape], str]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run(_model("openai", hostile(gzip_bomb_500)), [], "go", Budget(max_steps=2, max_usd_micros=1_000_000))
    grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert r.stop_reason == "model_error" and "500" in (r.error or ""), r.error
    assert grew_kib < 32 << 10, grew_kib  # 64 MiB decoded would show; a 2 MB bomb once took 10.5 GB


def test_the_decoder_never_yields_more_than_a_piece_at_a_time() -> None:
    dec = BodyDecoder({"content-encoding": "gzip"})
    sizes = [len(p) for p in dec.feed(BOMB[:20_000])]
    assert sizes and max(sizes) <= PIECE
    assert len(read_capped(iter([BOMB]), {"content-encoding": "gzip"}, 1000, 5.0)) == 1000
    with pytest.raises(ValueError, match="not asked for"):
        BodyDecoder({"content-encoding": "br"})


@pytest.mark.parametrize("shape", [huge_signatures, huge_redacted], ids=["signatures", "redacted"])
def test_a_reply_whose_blocks_pass_the_limit_is_refused_and_the_session_still_verifies(
    hostile: Callable[[Shape], str], shape: Shape, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(_model("anthropic", hostile(shape)), [], "go", Budget(max_steps=2, max_usd_micros=10_000_000), transcript=w,
                max_output_tokens=32_000)  # a large allowance: the stream's byte limit alone is 144 MB
    assert r.stop_reason == "budget_overrun" and "kept streaming" in (r.error or ""), r.error
    assert verify_file(path).ok  # once a 100 MB model_turn line that verify refused
    assert max(len(line) for line in path.read_bytes().splitlines()) < MAX_LINE_BYTES


def huge_search_body(h: BaseHTTPRequestHandler, vendor: str) -> None:
    """A 200 whose JSON body never ends (once a 2 GB search reply took 3.96 GB)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    h.wfile.write(b'{"content": [{"type": "text", "text": "')
    chunk = b"x" * (1 << 20)
    for _ in range(200):
        h.wfile.write(chunk)


def test_a_web_search_body_is_read_no_further_than_its_bound(hostile: Callable[[Shape], str]) -> None:
    from agentloop.providers.base import ProviderError
    from agentloop.providers.web_search import SEARCH_BODY_BYTES, run_web_search

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ProviderError, match=f"passed {SEARCH_BODY_BYTES} bytes") as err:
        run_web_search(_model("anthropic", hostile(huge_search_body)), "q", max_tokens=100, max_uses=1)
    assert getattr(err.value, "unaccounted", False) is True  # billed: charged the search's reservation
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < (3 * SEARCH_BODY_BYTES) >> 10


def test_a_page_of_ten_thousand_nested_lists_converts_in_bounded_output_and_time() -> None:
    """A 192 KB page of nested lists once became 576 M characters of Markdown (3.43 GB)."""
    from agentloop.agent.tools.web_markdown import MAX_INDENT, html_to_markdown_capped

    page = "<ul><li>x" * 12_000 + "</li></ul>" * 12_000
    t0 = time.process_time()
    md, full = html_to_markdown_capped(page, 200_000)
    assert len(md) <= 200_000 + 100 and time.process_time() - t0 < 5
    assert max(len(line) for line in md.splitlines()) <= 2 * MAX_INDENT + 10
    small, cut = html_to_markdown_capped("<ul><li>a<ul><li>b</li></ul></li></ul>", 200_000)
    assert not cut and small == "- a\n  - b"


def test_a_two_thousand_line_hunk_on_a_million_line_file_applies_in_linear_time(tmp_path: Path) -> None:
    """Every line but the hunk's last matches everywhere: a naive search compares 2,000 lines at each of a
    million places (once past 600 s)."""
    from agentloop.agent.tools.apply_patch import FileOp, Hunk, _apply_hunks

    text = "x\n" * 1_000_000 + "y\n"
    hunk = Hunk(None, [(" ", "x")] * 1_999 + [("-", "y"), ("+", "z")])
    t0 = time.process_time()
    out = _apply_hunks(text, FileOp("update", "big.txt", hunks=[hunk]))
    assert time.process_time() - t0 < 10
    assert out.endswith("x\nz\n") and out.count("\n") == 1_000_001


def _costly_pdf(ops: int, pages: int = 2) -> bytes:
    """A small PDF whose pages share one content stream of ``ops`` text operations (deflated)."""
    import zlib

    stream = zlib.compress(b"BT /F1 12 Tf " + b"1 0 Td (a) Tj " * ops + b"ET", 9)
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\nstream\n" + stream + b"\nendstream",
    ] + [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
         b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>" for _ in range(pages)]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_pdf_whose_pages_cost_more_cpu_than_allowed_is_cut_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """One shared content stream of 950k operations (a 13 KB file once kept Read busy 897 s)."""
    from agentloop.agent.tools import read_media

    monkeypatch.setattr(read_media, "PDF_CPU_SECONDS", 2)
    data = _costly_pdf(950_000)
    assert len(data) < 64_000
    t0 = time.monotonic()
    out = read_media.pdf_text(data, "bomb.pdf", None)
    assert time.monotonic() - t0 < 20
    assert "PDF bomb.pdf: 2 pages" in out and "not extracted within 2 s of CPU time" in out


def test_an_ordinary_pdf_still_reads_through_the_bounded_child() -> None:
    from agentloop.agent.tools import read_media

    out = read_media.pdf_text(_costly_pdf(3, pages=1), "small.pdf", None)
    assert "--- page 1 ---" in out and "aaa" in out.replace(" ", "").replace("\n", "")


def test_a_long_hunk_is_found_in_linear_time_on_a_smaller_file() -> None:
    """The same shape, small enough that a quadratic search fails the time bound in under a minute."""
    from agentloop.agent.tools.apply_patch import FileOp, Hunk, _apply_hunks

    hunk = Hunk(None, [(" ", "x")] * 1_999 + [("-", "y"), ("+", "z")])
    t0 = time.process_time()
    out = _apply_hunks("x\n" * 50_000 + "y\n", FileOp("update", "f.txt", hunks=[hunk]))
    assert time.process_time() - t0 < 2 and out.endswith("x\nz\n")
