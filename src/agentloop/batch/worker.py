"""One task, run to its stop: the same code in a local worker process and a Ray task.

Rules:

1. The run is an ordinary ``run()`` of the loop with a ``TaskLedger`` as its
   ledger: every model call reserves against the fleet before it is made.
2. The transcript grows in ``runs/<id>.jsonl.partial.<pid>`` (or in memory on Ray,
   returned to the driver) with a Merkle tree hung on the writer; it becomes
   ``runs/<id>.jsonl`` with its anchor only when the run has stopped.
3. ``meta.batch`` in ``run_start`` records the task id, the task's digest,
   the attempt and ``retried`` (an earlier attempt was cut short by a kill), so a
   transcript says which task it ran and whether it was a retry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..budget import PriceTable
from ..model_description import describe
from ..run import run
from ..tools import Registry
from ..transcript import MemoryTranscript, TranscriptWriter
from . import _files
from .ledger import LedgerBackend, TaskLedger
from .tasks import Task, load_registry

__all__ = ["Abandoned", "HeldKeys", "execute_task", "finish_files"]

def _subset(reg: Registry, names: Sequence[str]) -> Registry:
    return Registry([t for n in names if (t := reg.get(n)) is not None])


_TRANSPORT: list[Any] = []


def _shared_transport() -> Any:
    """One HTTP connection pool per worker process, shared by its runs.

    A new pool per task would build a TLS context each time (about 0.1 s of
    CPU) and open a new connection for every run.
    """
    if not _TRANSPORT:
        import httpx

        class Shared(httpx.HTTPTransport):
            def close(self) -> None:  # each run's client closes; the pool stays for the next run
                pass

        _TRANSPORT.append(Shared())
    return _TRANSPORT[0]


class HeldKeys:
    """Provider keys handed to a worker as a value: a Ray task's argument, a local worker's start arguments.

    A worker's environment is readable by any process of the user (``/proc/PID/environ``) and is inherited
    by whatever it starts, so the keys never go there (docs/decisions/0013). The repr names no value."""

    def __init__(self, values: dict[str, str] | None = None):
        self.values = dict(values or {})

    def __repr__(self) -> str:
        return f"HeldKeys({', '.join(sorted(self.values))})"


def build_model(task: Task, keys: HeldKeys | None = None) -> Any:
    """A fresh model per task: provider state (a fallback taken, retries) never leaks between runs. The
    provider reads its key from ``keys`` (over the worker's environment, which has none of them)."""
    from ..providers import OpenArgs, open_spec
    from ..providers.scripted import RECORD as SCRIPTED

    if task.script is not None:
        return open_spec(SCRIPTED.name, OpenArgs(script=task.script, options={"stream": "whole"}))
    env = {**os.environ, **keys.values} if keys is not None and keys.values else None
    return open_spec(task.model, OpenArgs(base_url=task.base_url, transport=_shared_transport(), env=env))


def execute_task(
    task: Task,
    attempt: int,
    backend: LedgerBackend,
    *,
    out_dir: str | None = None,
    still_wanted: Callable[[], bool] | None = None,
    trace: dict[str, str] | None = None,
    retried: bool = False,
    keys: HeldKeys | None = None,
) -> dict[str, Any]:
    """Run ``task`` and return its outcome (plain JSON-able data).

    With ``out_dir`` the transcript and anchor are written there; without it
    the outcome carries the transcript's bytes (``lines``) for the driver to write.
    The outcome's ``status`` is ``"ok"`` or ``"failed"`` (the run ended in
    ``model_error``, or the task could not start: ``error`` says why).
    ``still_wanted()`` is asked before the run is made final: a worker whose
    driver died leaves its file ``.partial`` for the next invocation to redo.

    Raises:
        Abandoned: ``still_wanted()`` said no.
    """
    key = f"{task.id}#{attempt}"
    tree = _files.Tree()
    writer: TranscriptWriter | None = None
    mem: MemoryTranscript | None = None
    if out_dir is not None:
        ppath = f"{_files.paths(out_dir, task.id)[2]}.{os.getpid()}"
        if os.path.exists(ppath):
            os.remove(ppath)
        writer = TranscriptWriter(ppath)
        writer.listeners.append(tree.append)
        sink: Any = writer
    else:
        mem = MemoryTranscript()
        mem.listeners.append(tree.append)
        sink = mem
    out: dict[str, Any] = {"id": task.id, "attempt": attempt}
    try:
        try:
            model = build_model(task, keys)
            registry = _subset(load_registry(task.toolset_target), task.tools)
        except Exception as exc:
            out.update(status="failed", stop_reason=None, error=f"cannot start: {type(exc).__name__}: {exc}", records=0,
                       spent_micros=0, tokens=0, steps=0)
            return out
        ledger = TaskLedger(backend, key, sink)
        result = _run_task(task, (attempt, retried), model, registry, sink, ledger, trace)
    finally:
        if writer is not None:
            writer.close()
    size = writer.count if writer is not None else len(mem.records) if mem is not None else 0
    last = writer.last_hash if writer is not None else mem.last_hash if mem is not None else ""
    anchor = _files.run_anchor(tree, last)
    out.update(_outcome(result, ledger, size, last, anchor))
    if out_dir is not None:
        if still_wanted is not None and not still_wanted():
            raise Abandoned(f"{task.id}: the driver is gone; the run stays partial")
        finish_files(out_dir, task.id, anchor, None, partial=ppath)
    elif mem is not None:
        out["lines"] = mem.getvalue()
    return out


def _run_task(task: Task, attempt: tuple[int, bool], model: Any, registry: Registry, sink: Any, ledger: TaskLedger,
              trace: dict[str, str] | None) -> Any:
    """The task's run, traced under the batch's span when there is one."""
    from ..providers.scripted import RECORD as SCRIPTED

    name = task.model if task.script is None else SCRIPTED.name
    prices = PriceTable({describe(model).name: task.price, name: task.price}) if task.price is not None else None
    traced = _traced(trace, model, sink, name, task.id)
    if traced is not None:
        model, sink = traced[0], traced[1]
    try:
        return run(
            model, registry, list(task.messages), task.budget, transcript=sink, prices=prices,
            max_output_tokens=task.max_output_tokens, sentinel=task.sentinel, loop_threshold=task.loop_threshold,
            run_id=task.id, meta={"batch": {"task": task.id, "task_sha256": task.digest, "attempt": attempt[0], "retried": attempt[1]}},
            ledger=ledger,
        )
    finally:
        if traced is not None:
            traced[2]()


def _outcome(result: Any, ledger: TaskLedger, size: int, last: str, anchor: dict[str, Any]) -> dict[str, Any]:
    """What the driver is told of a finished run (plain JSON-able data)."""
    return {
        "status": "failed" if result.stop_reason == "model_error" else "ok",
        "stop_reason": result.stop_reason,
        "error": result.error,
        "spent_micros": result.spent_micros,
        "tokens": result.tokens,
        "steps": result.steps,
        "records": size,
        "root": anchor["root"],
        "last_hash": last,
        "anchor": anchor,
        "reservations": ledger.reservations,
        "refusals": ledger.refusals,
    }


_TRACING: list[Any] = []


def _traced(trace: dict[str, str] | None, model: Any, sink: Any, name: str, run_id: str) -> tuple[Any, Any, Callable[[], None]] | None:
    """(model, sink, end) tracing the task's run as a child of the batch's span, or None when the
    driver passed no trace context or this process has no tracing configured."""
    if not trace:
        return None
    if not _TRACING:
        from ..telemetry import from_environment

        _TRACING.append(from_environment(warn=lambda _text: None))
    tracing = _TRACING[0]
    if tracing is None:
        return None
    from opentelemetry import context as otel_context
    from opentelemetry.propagate import extract

    token = otel_context.attach(extract(trace))
    m, s, _obs = tracing.wrap(model, sink, None, model_name=name, run_id=run_id)

    def end() -> None:
        s.finish()
        otel_context.detach(token)
        flush = getattr(tracing.provider, "force_flush", None)
        if callable(flush):
            flush()

    return m, s, end


class Abandoned(Exception):
    """The run's driver is gone, so the run is not made final."""


def finish_files(out_dir: str, task_id: str, anchor: dict[str, Any], data: bytes | None, *, partial: str | None = None) -> None:
    """Make a stopped run finished: its anchor, then the atomic rename of its transcript."""
    tpath, apath, ppath = _files.paths(out_dir, task_id)
    ppath = partial or ppath
    if data is not None:
        _files.write_bytes_atomic(ppath, data)
    _files.write_run_anchor(apath, anchor)
    os.replace(ppath, tpath)
