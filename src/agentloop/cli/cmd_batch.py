"""``agentloop batch TASKS.jsonl --out DIR``: many runs, one fleet budget, locally or on Ray."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS, UserError

HELP = "run a JSON Lines file of tasks on local worker processes or a Ray cluster, under one budget"
DESCRIPTION = (
    "Run every task of TASKS.jsonl into DIR (a transcript and an anchor per run, manifest.jsonl, "
    "ledger.jsonl, batch.anchor.json). Rerunning the same command skips the runs that finished and "
    "verify, and runs again the tasks the cap refused. --max-usd/--max-tokens cap the whole batch, "
    "across reruns: every model call reserves against one ledger, written to DIR before the call."
)
EPILOG = """\
exit status:
  0    every task completed
  1    some task failed, crashed, overran its reservation, or stopped on its
       own limits (steps, its own budget, a loop)
  2    nothing ran: a bad option or task file, or a task that cannot start
  3    every task that did not complete was refused by the fleet cap:
       rerun the same command with a higher --max-usd/--max-tokens to run them
  130  interrupted (Ctrl+C): rerun the same command to finish
"""
EXIT_REFUSED = 3


def configure(p: argparse.ArgumentParser) -> None:
    import textwrap

    p.description = textwrap.fill(DESCRIPTION, 78)  # kept as written below: the exit codes are a table
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("tasks", metavar="TASKS.jsonl", help="one task per line (see agentloop.batch.tasks)")
    p.add_argument("--out", required=True, metavar="DIR", help="where transcripts, the manifest and anchors go")
    p.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: the CPU count)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Ray: a cluster ADDRESS, or a local Ray instance when none is given")
    p.add_argument("--max-usd", metavar="X", help="the fleet-wide spend cap in dollars, e.g. 5 or 0.25")
    p.add_argument("--max-tokens", type=int, metavar="N", help="the fleet-wide token cap")
    p.add_argument("--max-attempts", type=int, default=3, metavar="N", help="tries per task when its worker dies (default 3)")
    p.add_argument("--toolset", action="append", default=[], metavar="NAME=MODULE:FUNCTION",
                   help="name a tool set that tasks may choose with \"toolset\" (a function returning a Registry)")
    p.add_argument("--sign", metavar="KEY", help="sign batch.anchor.json with this private key: a path, or a name under $AGENTLOOP_HOME/keys")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


def _toolsets(specs: list[str]) -> dict[str, str]:
    from agentloop.batch import DEFAULT_TOOLSETS

    sets = dict(DEFAULT_TOOLSETS)
    for s in specs:
        name, eq, target = s.partition("=")
        if not eq or not name or ":" not in target:
            raise UserError(f"--toolset {s!r}: write NAME=MODULE:FUNCTION, e.g. mine=mypkg.tools:registry")
        sets[name] = target
    return sets


def _money(micros: int | None) -> str:
    from agentloop.budget import format_usd

    return "none" if micros is None else format_usd(micros)


def main(args: argparse.Namespace) -> int:
    from agentloop.batch import TaskFileError, load_tasks
    from agentloop.batch.tasks import check_startable
    from agentloop.budget import usd

    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    if args.max_tokens is not None and args.max_tokens < 0:
        raise UserError(f"--max-tokens must be a non-negative integer, got {args.max_tokens}")
    if args.max_attempts < 1:
        raise UserError(f"--max-attempts must be at least 1, got {args.max_attempts}")
    cap = None
    if args.max_usd is not None:
        try:
            cap = usd(args.max_usd)
        except ValueError as exc:
            raise UserError(f"--max-usd {args.max_usd!r}: {exc}") from None
    if args.ray is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UserError("--ray needs Ray: pip install 'agentloop[ray]'") from None
    key = None
    if args.sign:
        from agentloop.audit.anchor import AnchorError, load_private_key

        from ._keys import resolve_key

        try:
            key = load_private_key(resolve_key(args.sign, ".key"))
        except AnchorError as exc:
            raise UserError(f"--sign: {exc}") from None
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UserError(f"--out {args.out}: exists and is not a directory")
    try:
        tasks = load_tasks(args.tasks, _toolsets(args.toolset))
    except TaskFileError as exc:
        raise UserError(str(exc)) from None
    try:
        os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot create: {exc.strerror or exc}") from None

    try:
        check_startable(tasks, args.tasks, os.environ)
    except TaskFileError as exc:
        raise UserError(str(exc)) from None
    out_fd = _stdout_for_json() if args.json else None
    report = _run(args, tasks, cap)
    if key is not None:
        from agentloop.batch import sign_batch_anchor

        report.anchor = sign_batch_anchor(args.out, key)
    if out_fd is not None:
        _write_all(out_fd, json.dumps(report.to_json()).encode() + b"\n")
    else:
        _summary(report, args.out, cap, args.max_tokens)
    return exit_code(report)


def exit_code(report: Any) -> int:
    """The exit status (``EPILOG``): whether every task completed, and if not, whether only the cap stood in the way."""
    if report.interrupted:
        return EXIT_INTERRUPTED
    if report.ok:
        return EXIT_OK
    short = {e["status"] for e in report.entries} - {"completed"}
    return EXIT_REFUSED if short == {"refused"} else EXIT_PROBLEMS


def _stdout_for_json() -> int:
    """With --json, stdout carries one JSON document and nothing else: whatever Ray or a library
    prints to file descriptor 1 from here on (a dead worker's notice, a warning) goes to stderr.
    Returns the descriptor the document is written to."""
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    return out_fd


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _run(args: argparse.Namespace, tasks: list[Any], cap: int | None) -> Any:
    from agentloop.batch import run_batch
    from agentloop.batch.ledger import JournalError

    show = not args.json and sys.stderr.isatty()
    progress: Any = _Progress(len(tasks), cap, args.max_tokens) if show else _Lines(len(tasks), cap)
    try:
        progress.start()
        span, trace, tracing = _batch_span(len(tasks), args.workers)
        try:
            return run_batch(
                tasks, args.out, workers=args.workers, ray=args.ray is not None, ray_address=args.ray or None,
                max_usd_micros=cap, max_tokens=args.max_tokens, max_attempts=args.max_attempts,
                on_event=progress.event, trace=trace,
            )
        except JournalError as exc:
            raise UserError(f"{exc} (move it away to start the batch's accounting afresh)") from None
        finally:
            if span is not None:
                span.end()
                tracing.provider.shutdown()
    finally:
        progress.stop()


class _Lines:
    """Progress without a terminal: a line on stderr when the counts changed, at most one every
    ``every`` seconds, and one at the end."""

    def __init__(self, total: int, cap: int | None, every: float = 2.0):
        self.total = total
        self.cap = cap
        self.every = every
        self.last = -1e9
        self.said = ""
        self.data: dict[str, Any] | None = None

    def start(self) -> None:
        pass

    def stop(self) -> None:
        if self.data is not None:
            self._say(self.data)

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind != "tick":
            return
        import time

        self.data = data
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._say(data)

    def _say(self, data: dict[str, Any]) -> None:
        c = data.get("counts", {})
        spend = _short_usd(data["ledger"]["spent_micros"]) + (f"/{_short_usd(self.cap)}" if self.cap is not None else "")
        line = (f"batch {data['done'] + data['failed']}/{self.total}: {c.get('completed', 0)} completed, "
                f"{c.get('refused', 0)} refused, {_failed(c)} failed, {c.get('overrun', 0)} overrun, {spend}")
        if line != self.said:
            self.said = line
            print(line, file=sys.stderr, flush=True)


def _failed(counts: dict[str, int]) -> int:
    """Failed, crashed and stopped on their own limits: neither completed, refused nor overrun."""
    return sum(counts.get(k, 0) for k in ("failed", "crashed", "stopped"))


def headline(counts: dict[str, int], total: int) -> str:
    """The summary's first line: what happened to the tasks, each outcome counted apart."""
    line = (f"{total} tasks: {counts.get('completed', 0)} completed, {counts.get('refused', 0)} refused, "
            f"{counts.get('failed', 0)} failed, {counts.get('overrun', 0)} overrun")
    for k in ("stopped", "crashed", "pending"):
        if counts.get(k):
            line += f", {counts[k]} {k}"
    return line


def _batch_span(n_tasks: int, workers: int | None) -> tuple[Any, dict[str, str] | None, Any]:
    """With OTEL_EXPORTER_OTLP_ENDPOINT set: a span for the whole batch and its W3C context for the
    workers, whose task runs nest under it (``agentloop.telemetry`` rule 3); else nothing."""
    if not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return None, None, None
    from agentloop.telemetry import from_environment

    tracing = from_environment()
    if tracing is None:
        return None, None, None
    from opentelemetry import trace as otel_trace
    from opentelemetry.propagate import inject

    span = tracing.tracer.start_span("invoke_workflow agentloop-batch", attributes={
        "gen_ai.operation.name": "invoke_workflow", "agentloop.batch.tasks": n_tasks, "agentloop.batch.workers": workers or 0})
    carrier: dict[str, str] = {}
    inject(carrier, context=otel_trace.set_span_in_context(span))
    return span, carrier, tracing


class _Progress:
    """A rich progress bar: done, failed, running, spend against the cap, ETA."""

    def __init__(self, total: int, cap: int | None, max_tokens: int | None):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        from ._common import console

        self.cap = cap
        self.max_tokens = max_tokens
        # fits 80 columns: a short bar, the counts and spend in few words, the time left
        self.bar = Progress(
            TextColumn("[bold]batch"), BarColumn(bar_width=12), MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"), TextColumn("ETA"), TimeRemainingColumn(),
            console=console(stderr=True), transient=False,
        )
        self.task = self.bar.add_task("batch", total=total, status="")

    def start(self) -> None:
        self.bar.start()

    def stop(self) -> None:
        self.bar.stop()

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind != "tick":
            return
        self.bar.update(self.task, completed=data["done"] + data["failed"], status=progress_status(data, self.cap, self.max_tokens))


def _short_usd(micros: int) -> str:
    """Dollars for a status line: four places under a dollar, two above (the report has the exact figure)."""
    return f"${micros / 1_000_000:.4f}" if micros < 1_000_000 else f"${micros / 1_000_000:.2f}"


def progress_status(data: dict[str, Any], cap: int | None, max_tokens: int | None) -> str:
    """The progress line's counts and spend, short enough for an 80-column terminal (tokens against
    a fleet token cap, when there is one, only where there is room: the report has them)."""
    led = data["ledger"]
    spend = _short_usd(led["spent_micros"]) + (f"/{_short_usd(cap)}" if cap is not None else "")
    refused = data.get("counts", {}).get("refused", 0)
    status = f"done {data['done']} " + (f"refused {refused} " if refused else "")
    status += f"failed {data['failed'] - refused} run {data['running']} {spend}"
    if max_tokens is not None and len(status) < 30:
        status += f" tok {_count(led['used_tokens'])}/{_count(max_tokens)}"
    return status


def _count(n: int) -> str:
    """12345 -> "12k", 9999999 -> "10.0M": a count for a status line."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.0f}k"
    return f"{n / 1_000_000:.1f}M"


def _summary(report: Any, out: str, cap: int | None, max_tokens: int | None) -> Any:
    from collections import Counter

    from rich.table import Table

    from ._common import console

    led = report.ledger
    reasons = Counter(e["stop_reason"] or e["status"] for e in report.entries)
    from agentloop.batch.runner import STATUSES

    counts = {s: report.count(s) for s in STATUSES}
    print(headline(counts, len(report.entries)))
    t = Table(title=f"batch on {report.backend} ({report.workers} workers)", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    for status, n in counts.items():
        if n or status in ("completed", "refused", "failed", "overrun"):
            t.add_row(status, str(n))
    t.add_row("resumed (already finished)", str(sum(1 for e in report.entries if e.get("resumed"))))
    t.add_row("retried (a run was cut short)", str(sum(1 for e in report.entries if e.get("retried"))))
    for reason, n in sorted(reasons.items()):
        t.add_row(f"  stop: {reason}", str(n))
    t.add_row("fleet spend / cap", f"{_money(led['spent_micros'])} / {_money(cap)}")
    t.add_row("fleet tokens / cap", f"{led['used_tokens']} / {max_tokens if max_tokens is not None else 'none'}")
    t.add_row("reservations (refused)", f"{led['reservations']} ({led['refusals']})")
    if led["forfeited_micros"]:
        t.add_row("forfeited by dead workers", _money(led["forfeited_micros"]))
    if led["overrun_micros"]:
        t.add_row("billed past reservations", _money(led["overrun_micros"]))
    ran = sum(1 for e in report.entries if not e.get("resumed") and e["status"] != "pending")
    rate = ran / report.elapsed if report.elapsed > 0 else 0.0
    t.add_row("elapsed", f"{report.elapsed:.1f}s ({ran} run, {rate:.1f} tasks/s)")
    t.add_row("batch root", report.anchor["root"][:16] + "… (in batch.anchor.json)")
    if "signature" in report.anchor:
        t.add_row("signed by key", report.anchor["signature"]["key_id"])
    t.add_row("manifest", os.path.join(out, "manifest.jsonl"))
    if report.interrupted:
        t.add_row("interrupted", "rerun the same command to finish")
    elif counts["refused"]:
        t.add_row("refused by the cap", "rerun with a higher cap to run them")
    console().print(t)
    return t
