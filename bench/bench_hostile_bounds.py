"""The bounds on bytes from outside stay linear: CPU time and peak memory at n, 2n and 4n, for each hostile shape.

    .venv/bin/python bench/bench_hostile_bounds.py [--n 20000] [--repeat 3]

Shapes (each the input a hostile server or file sends, at size n):

- ``nested-lists``: a page of n nested ``<ul><li>`` converted to Markdown (WebFetch; once 576 M characters);
- ``patch-hunk``: a 2,000-line hunk whose last line differs, found in a file of 10·n lines (apply_patch);
- ``gzip-error-body``: a gzip error body of n KiB of zeros compressed, read to the error cap (a bomb);
- ``sse-pings``: n Anthropic ``ping`` events fed through the stream decoder and assembler.

For each, the CPU time (this process only: a shared machine's other work does not inflate it) and the peak
memory traced (``tracemalloc``) at n, 2n and 4n, with their ratios to n: linear work doubles with n (ratio
about 2 and 4), bounded memory stays flat. The baseline measured in the same run is one linear pass over the
same input (``bytes.count``), whose ratio is printed beside. The exit code is 1 when a shape's time at 4n is
more than 8 times its time at n (quadratic would be 16) or its peak memory grows more than 6 times.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
import tracemalloc
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop.agent.tools.apply_patch import FileOp, Hunk, _apply_hunks  # noqa: E402
from agentloop.agent.tools.web_markdown import html_to_markdown_capped  # noqa: E402
from agentloop.providers.anthropic import AnthropicAssembler  # noqa: E402
from agentloop.providers.base import ERROR_BODY_BYTES  # noqa: E402
from agentloop.providers.bounded import read_capped  # noqa: E402
from agentloop.providers.sse import SSEDecoder  # noqa: E402


def nested_lists(n: int) -> tuple[Callable[[], object], bytes]:
    page = "<ul><li>x" * n + "</li></ul>" * n
    return (lambda: html_to_markdown_capped(page, 200_000)), page.encode()


def patch_hunk(n: int) -> tuple[Callable[[], object], bytes]:
    text = "x\n" * (10 * n) + "y\n"
    hunk = [(" ", "x")] * 1_999 + [("-", "y"), ("+", "z")]
    return (lambda: _apply_hunks(text, FileOp("update", "f", hunks=[Hunk(None, list(hunk))]))), text.encode()


def gzip_error_body(n: int) -> tuple[Callable[[], object], bytes]:
    body = gzip.compress(b"\0" * (n << 10), 6)
    return (lambda: read_capped(iter([body]), {"content-encoding": "gzip"}, ERROR_BODY_BYTES, 60.0)), body


def sse_pings(n: int) -> tuple[Callable[[], object], bytes]:
    stream = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}\n\n'
    stream += b'event: ping\ndata: {"type": "ping"}\n\n' * n

    def feed() -> object:
        dec, asm = SSEDecoder(), AnthropicAssembler()
        for i in range(0, len(stream), 4096):
            for ev, data in dec.feed(stream[i:i + 4096]):
                asm.feed(ev, data)
        return asm

    return feed, stream


SHAPES: dict[str, Callable[[int], tuple[Callable[[], object], bytes]]] = {
    "nested-lists": nested_lists,
    "patch-hunk": patch_hunk,
    "gzip-error-body": gzip_error_body,
    "sse-pings": sse_pings,
}


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, int]:
    """(the best CPU time of ``repeat`` runs, the peak traced memory of one)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return min(times), peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    failed = False
    print(f"{'shape':16} {'size':>8} {'cpu s':>9} {'x n':>6} {'base x n':>9} {'peak MiB':>9} {'x n':>6}")
    for name, make in SHAPES.items():
        rows = []
        for k in (1, 2, 4):
            fn, data = make(args.n * k)
            cpu, peak = measure(fn, args.repeat)
            base, _ = measure(lambda d=data: d.count(b"\n"), args.repeat)
            rows.append((k, cpu, peak, base))
        c1, p1, b1 = rows[0][1] or 1e-9, rows[0][2] or 1, rows[0][3] or 1e-9
        for k, cpu, peak, base in rows:
            print(f"{name:16} {k}n {args.n * k:>6} {cpu:9.4f} {cpu / c1:6.2f} {base / b1:9.2f} {peak / 2**20:9.2f} {peak / p1:6.2f}")
        if rows[2][1] > 8 * c1 + 0.05 or rows[2][2] > 6 * p1 + (1 << 20):
            print(f"{name}: not linear (time x{rows[2][1] / c1:.1f}, memory x{rows[2][2] / p1:.1f} at 4n)")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
