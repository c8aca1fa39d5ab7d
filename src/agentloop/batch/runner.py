"""The batch driver: which tasks to run, where they run, and what is kept.

Rules:

1. Nothing finished is lost. A run's files are written by its worker (or by
   the driver, on Ray) and made final by an atomic rename; the manifest gets
   a line, flushed, as each task ends. A rerun of the same command skips
   every task whose run is finished and verifies (``_files.check_run``) and
   redoes the rest.
2. A worker that dies mid-task (SIGKILL, OOM, a lost node) has its task
   retried, up to ``max_attempts``, and the entry says ``retried``. Its open
   reservation is forfeited (counted as spent), never handed back.
3. Ctrl+C stops the batch now: running tasks are ended and redone next time;
   the manifest and the batch anchor are still written.
4. Locally, workers are processes started here, each with its own pipe; the
   driver owns the ledger and answers reservations in its loop. On Ray, tasks
   are Ray tasks and the ledger is a Ray actor. No scheduling of our own: the
   local pool hands the next task to an idle worker, and Ray schedules Ray.
"""

from __future__ import annotations

import collections
import hashlib
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import _files
from .ledger import FleetLedger, read_journal
from .tasks import Task
from .worker import Abandoned, HeldKeys, execute_task, finish_files

__all__ = ["STATUSES", "BatchReport", "run_batch", "sign_batch_anchor", "status_of", "verify_batch"]

Event = Callable[[str, dict[str, Any]], None]


STATUSES = ("completed", "refused", "failed", "overrun", "stopped", "crashed", "pending")
"""What became of a task (the manifest's ``status``):

- ``completed``: the model finished (no more tool calls, or the sentinel);
- ``refused``: the fleet ledger refused a reservation (the cap was reached): a rerun runs it again;
- ``failed``: the provider failed, or the task could not start;
- ``overrun``: the provider billed past a reservation, so the run stopped;
- ``stopped``: the task's own limits ended it (steps, its own budget, a loop);
- ``crashed``: its worker died on every attempt;
- ``pending``: never run to a stop (an interrupted batch).
"""


def status_of(stop_reason: str | None, refused: bool) -> str:
    """A run's status from its stop reason and whether the fleet ledger refused it."""
    if stop_reason in ("no_tool_calls", "sentinel"):
        return "completed"
    if stop_reason == "budget_overrun":
        return "overrun"
    if refused:
        return "refused"
    if stop_reason is None or stop_reason == "model_error":
        return "failed"
    return "stopped"


@dataclass
class BatchReport:
    entries: list[dict[str, Any]]
    """One manifest entry per task, in task-file order."""
    ledger: dict[str, Any]
    anchor: dict[str, Any]
    elapsed: float
    interrupted: bool = False
    backend: str = "local"
    workers: int = 0

    def count(self, status: str) -> int:
        return sum(1 for e in self.entries if e["status"] == status)

    @property
    def ok(self) -> bool:
        """Every task completed."""
        return not self.interrupted and all(e["status"] == "completed" for e in self.entries)

    def counts(self) -> dict[str, int]:
        return {s: self.count(s) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "interrupted": self.interrupted,
            "backend": self.backend,
            "workers": self.workers,
            "elapsed_s": round(self.elapsed, 3),
            "tasks": len(self.entries),
            "counts": self.counts(),
            "resumed": sum(1 for e in self.entries if e.get("resumed")),
            "retried": sum(1 for e in self.entries if e.get("retried")),
            "ledger": self.ledger,
            "batch_anchor": self.anchor,
            "entries": self.entries,
        }


def _entry(task_id: str, status: str, attempts: int, retried: bool, facts: dict[str, Any] | None = None,
           *, resumed: bool = False) -> dict[str, Any]:
    """A manifest entry: its fields in one order, whatever the outcome."""
    facts = facts or {}
    entry = {
        "id": task_id, "status": status, "stop_reason": facts.get("stop_reason"),
        "spent_micros": facts.get("spent_micros", 0), "tokens": facts.get("tokens", 0), "steps": facts.get("steps", 0),
        "records": facts.get("records", 0), "merkle_root": facts.get("root"), "last_hash": facts.get("last_hash"),
        "transcript": _files.transcript_name(task_id) if facts.get("root") else None,
        "attempts": attempts, "retried": retried, "resumed": resumed,
    }
    if facts.get("error"):
        entry["error"] = facts["error"]
    return entry


@dataclass
class _State:
    tasks: Sequence[Task]
    out_dir: str
    on_event: Event | None
    max_attempts: int
    ledger: FleetLedger
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    """The last attempt of each task: from the journal (earlier runs), then this run's."""
    pending: collections.deque[Task] = field(default_factory=collections.deque)
    manifest: Any = None
    running: set[str] = field(default_factory=set)
    tally: collections.Counter[str] = field(default_factory=collections.Counter)
    lost: set[str] = field(default_factory=set)
    """Tasks that lost an attempt to a dead worker, driver or ledger (this run or an earlier one)."""
    died: set[str] = field(default_factory=set)
    """Tasks that lost a worker in this invocation."""
    tries: collections.Counter[str] = field(default_factory=collections.Counter)
    """Attempts made in this invocation, by task (``max_attempts`` bounds them)."""
    journal: str = ""
    trace: dict[str, str] | None = None
    """The batch span's W3C trace context (``traceparent``): each task's run nests under it."""
    keys: HeldKeys = field(default_factory=HeldKeys)
    """The provider keys, handed to each worker as a value (never in its environment)."""

    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)

    def tick(self) -> None:
        if self.on_event is None:
            return
        done = self.tally["completed"]
        self.on_event("tick", {
            "done": done,
            "failed": sum(self.tally.values()) - done,
            "counts": dict(self.tally),
            "running": len(self.running),
            "total": len(self.tasks),
            "ledger": self.ledger.snapshot(),
        })

    def record(self, entry: dict[str, Any]) -> None:
        old = self.entries.get(entry["id"])
        if old is not None:
            self.tally[old["status"]] -= 1
        self.tally[entry["status"]] += 1
        self.entries[entry["id"]] = entry
        self.manifest.write(orjson.dumps(entry) + b"\n")
        self.manifest.flush()

    def next_attempt(self, task: Task) -> tuple[int, bool]:
        """The next attempt's number, and whether the task lost an earlier one (it is then a retry)."""
        n = self.attempts.get(task.id, 0) + 1
        self.attempts[task.id] = n
        self.tries[task.id] += 1
        return n, task.id in self.lost

    def finished(self, task: Task, out: dict[str, Any]) -> None:
        self.running.discard(task.id)
        if task.id in self.died:
            _files.remove_partials(self.out_dir, task.id)  # dead attempts' leftovers: their spend is in the ledger
        attempt = out["attempt"]
        status = out["status"] if out["status"] == "failed" else status_of(out.get("stop_reason"), bool(out.get("refusals")))
        entry = _entry(task.id, status, attempt, task.id in self.lost, out)
        self.record(entry)
        self.emit("done", id=task.id, entry=entry)

    def crashed(self, task: Task, attempt: int, why: str) -> None:
        """The attempt's worker died: forfeit its reservation and retry, or give up."""
        self.running.discard(task.id)
        self.died.add(task.id)
        self.lost.add(task.id)
        lost = self.ledger.end(f"{task.id}#{attempt}")
        self.emit("crash", id=task.id, attempt=attempt, why=why, forfeited_micros=lost)
        if self.tries[task.id] < self.max_attempts:
            self.pending.appendleft(task)
            return
        self.record(_entry(task.id, "crashed", attempt, True, {"error": f"the worker died {self.tries[task.id]} times ({why})"}))


def _prepare(tasks: Sequence[Task], out_dir: str, max_usd_micros: int | None, max_tokens: int | None,
             check: bool, on_event: Event | None, max_attempts: int) -> _State:
    """What is finished (kept), what is to run, and the ledger's figures so far.

    The journal, when there is one, holds every call ever reserved in ``out_dir``
    (finished, refused, cut short): the figures come from it alone. A directory
    without one (written before the journal existed) is counted from its
    finished transcripts and the ``budget`` records of its partial files.
    """
    os.makedirs(os.path.join(out_dir, "runs"), exist_ok=True)
    jpath = os.path.join(out_dir, "ledger.jsonl")
    journal = read_journal(jpath)
    resumed: list[dict[str, Any]] = []
    pending: collections.deque[Task] = collections.deque()
    spent = tokens = 0
    partials = _files.partials_by_stem(out_dir)
    for t in tasks:
        info = _files.check_run(out_dir, t.id, t.digest)
        if info is None or info["refused"]:
            cut = partials.get(_files.file_stem(t.id), [])
            lost, lost_tokens = _files.partial_spend(cut)  # the files are removed: the task is redone
            if journal is None:
                spent += lost
                tokens += lost_tokens
            pending.append(t)
            continue
        if journal is None:
            spent += info["spent_micros"]
            tokens += info["tokens"]
        resumed.append(_entry(t.id, status_of(info["stop_reason"], info["refused"]), info["attempt"],
                              info["retried"], info, resumed=True))
    if journal is not None:
        spent, tokens = journal.spent, journal.used_tokens
    ledger = FleetLedger(max_usd_micros, max_tokens, spent_micros=spent, used_tokens=tokens, check=check)
    if journal is not None:
        ledger.forfeited_micros, ledger.overrun_micros = journal.forfeited, journal.overrun
    st = _State(tasks, out_dir, on_event, max_attempts, ledger, pending=pending, journal=jpath)
    if journal is not None:
        st.attempts = dict(journal.attempts)
        st.lost = set(journal.lost)
    st.manifest = open(os.path.join(out_dir, "manifest.jsonl"), "wb")  # noqa: SIM115 - closed in _conclude
    for e in resumed:
        st.record(e)
    return st


def _conclude(st: _State, started: float, interrupted: bool, backend: str, workers: int) -> BatchReport:
    st.manifest.close()
    entries = []
    for t in st.tasks:
        e = st.entries.get(t.id)
        if e is None:
            e = _entry(t.id, "pending", st.attempts.get(t.id, 0), t.id in st.lost)
        entries.append(e)
    path = os.path.join(st.out_dir, "manifest.jsonl")
    _files.write_bytes_atomic(path, b"".join(orjson.dumps(e) + b"\n" for e in entries))
    anchor = batch_anchor(entries)
    anchor["complete"] = not interrupted and all(e["status"] != "pending" for e in entries)
    _files.write_json_atomic(os.path.join(st.out_dir, "batch.anchor.json"), anchor)
    return BatchReport(entries, st.ledger.snapshot(), anchor, time.monotonic() - started, interrupted, backend, workers)


def batch_anchor(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The batch anchor: an RFC 9162 root over the finished runs, in task order."""
    leaves = []
    for e in entries:
        if e.get("merkle_root"):
            leaves.append(_files.batch_leaf(e["id"], {"last_hash": e["last_hash"], "root": e["merkle_root"], "size": e["records"]}))
    return {
        "format": _files.ANCHOR_FORMAT,
        "kind": "batch",
        "runs": len(leaves),
        "tasks": len(entries),
        "root": _files.merkle_root_hex(leaves),
        "leaf": "canonical JSON of {id, last_hash, root, size} per finished run, in task-file order",
        "spent_micros": sum(int(e.get("spent_micros") or 0) for e in entries),
    }


# --- the local pool ----------------------------------------------------------


class _DriverGone(Exception):
    """The driver's end of the pipe is gone: this worker has nobody to report to."""


class _PipeBackend:
    def __init__(self, conn: Any):
        self.conn = conn

    def reserve(self, key: str, amount_micros: int, tokens: int) -> bool:
        try:
            self.conn.send(("reserve", key, amount_micros, tokens))
            return bool(self.conn.recv())
        except (EOFError, OSError) as exc:
            raise _DriverGone(str(exc)) from None

    def settle(self, key: str, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        try:
            self.conn.send(("settle", key, reserved_micros, actual_micros, reserved_tokens, actual_tokens))
        except OSError as exc:
            raise _DriverGone(str(exc)) from None


def _hide_keys(keys: HeldKeys | None) -> None:
    """A worker holding keys in memory keeps that memory from the processes its tasks start (``/proc/PID/mem``)."""
    if keys is not None and keys.values:
        from ..config.credentials import hide_process_memory

        hide_process_memory()


def _local_worker(conn: Any, out_dir: str, trace: dict[str, str] | None = None, keys: HeldKeys | None = None) -> None:
    """A worker process: take a task, run it, report; until told to stop or orphaned."""
    _hide_keys(keys)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the driver's to handle
    backend = _PipeBackend(conn)
    parent = os.getppid()

    def driver_alive() -> bool:
        return os.getppid() == parent
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task, attempt, retried = msg
        try:
            conn.send(("begin", task.id, attempt, os.getpid()))
            out = execute_task(task, attempt, backend, out_dir=out_dir, still_wanted=driver_alive, trace=trace, retried=retried,
                               keys=keys)
        except (_DriverGone, Abandoned, OSError):
            return
        except Exception as exc:  # a fault of ours or of a tool set: the task fails, the worker lives
            out = {"id": task.id, "attempt": attempt, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        try:
            conn.send(("done", out))
        except OSError:
            return


@dataclass
class _Slot:
    proc: Any
    conn: Any
    task: Task | None = None
    attempt: int = 0


def _spawn(ctx: Any, st: _State) -> _Slot:
    """A worker process; the keys go to it with its start arguments (through a pipe), not its environment."""
    parent, child = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_local_worker, args=(child, st.out_dir, st.trace, st.keys), daemon=True,
                       name="agentloop-batch-worker")
    proc.start()
    child.close()
    return _Slot(proc, parent)


def _run_local(st: _State, workers: int) -> bool:
    """Run the pending tasks on ``workers`` processes. Returns True if interrupted."""
    ctx = mp.get_context("spawn")
    st.ledger.attach_journal(st.journal)
    slots = [_spawn(ctx, st) for _ in range(min(workers, max(1, len(st.pending))))]
    last_tick = 0.0
    try:
        while st.pending or any(s.task is not None for s in slots):
            for s in slots:
                if s.task is None and st.pending:
                    _dispatch(st, s)
            ready = mpc.wait([s.conn for s in slots] + [s.proc.sentinel for s in slots], timeout=0.25)
            for i, s in enumerate(slots):
                dead = s.conn in ready and not _serve(st, s)
                if dead or s.proc.sentinel in ready or not s.proc.is_alive():
                    s.proc.join(timeout=5)
                    if s.proc.is_alive():
                        continue
                    if s.task is not None:
                        st.crashed(s.task, s.attempt, f"exit code {s.proc.exitcode}")
                    s.conn.close()
                    slots[i] = _spawn(ctx, st)
            now = time.monotonic()
            if now - last_tick > 0.1:
                last_tick = now
                st.tick()
    except KeyboardInterrupt:
        for s in slots:
            if s.proc.is_alive():
                s.proc.terminate()
        for s in slots:
            s.proc.join(timeout=5)
            if s.task is not None:
                st.running.discard(s.task.id)
                st.ledger.forfeit(f"{s.task.id}#{s.attempt}")  # not ended: the next run marks it retried
        st.ledger.close()
        return True
    _stop_workers(slots)
    st.ledger.close()
    return False


def _dispatch(st: _State, s: _Slot) -> None:
    """Hand the next pending task to an idle worker; its attempt is journaled before the worker hears of it."""
    task = st.pending.popleft()
    s.attempt, retried = st.next_attempt(task)
    s.task = task
    st.running.add(task.id)
    st.ledger.begin(f"{task.id}#{s.attempt}", None)
    try:
        s.conn.send((task, s.attempt, retried))
    except OSError:
        pass  # its death is seen by the caller


def _serve(st: _State, s: _Slot) -> bool:
    """Answer what a worker sent (reservations, settles, its start and its outcome). False: its pipe broke."""
    ledger = st.ledger
    try:
        while s.conn.poll():
            msg = s.conn.recv()
            kind = msg[0]
            if kind == "reserve":
                s.conn.send(ledger.reserve(msg[1], msg[2], msg[3]))
            elif kind == "settle":
                ledger.settle(*msg[1:])
            elif kind == "begin":
                ledger.begin(f"{msg[1]}#{msg[2]}", msg[3])
                st.emit("begin", id=msg[1], attempt=msg[2], pid=msg[3])
            elif kind == "done" and s.task is not None:
                ledger.end(f"{s.task.id}#{s.attempt}")  # nothing is left open by a run that stopped; this makes sure
                task, s.task = s.task, None
                st.finished(task, msg[1])
    except (EOFError, OSError):
        return False
    return True


def _stop_workers(slots: list[_Slot]) -> None:
    for s in slots:
        try:
            s.conn.send(None)
        except OSError:
            pass
    for s in slots:
        s.proc.join(timeout=5)
        if s.proc.is_alive():
            s.proc.terminate()
            s.proc.join(timeout=5)


# --- Ray ---------------------------------------------------------------------


class _RayBackend:
    """One awaited actor call per model call (the reservation); settles are sent without
    waiting: calls from one caller to one actor run in the order they were sent."""

    def __init__(self, actor: Any, where: Any = None):
        self.actor = actor
        self.where = where

    def reserve(self, key: str, amount_micros: int, tokens: int) -> bool:
        import ray

        where, self.where = self.where, None  # the first reservation also says where the task runs
        return bool(ray.get(self.actor.reserve.remote(key, amount_micros, tokens, where)))

    def settle(self, key: str, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        self.actor.settle.remote(key, reserved_micros, actual_micros, reserved_tokens, actual_tokens)


def _ray_task(task: Task, attempt: int, actor: Any, trace: dict[str, str] | None = None, retried: bool = False,
              keys: HeldKeys | None = None) -> dict[str, Any]:
    """One task on a Ray worker; the keys come as an argument (the worker's environment has none of ours)."""
    import ray

    _hide_keys(keys)
    where = {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}
    return execute_task(task, attempt, _RayBackend(actor, where), out_dir=None, trace=trace, retried=retried, keys=keys)


def _settled_snapshot(ray: Any, actor: Any, timeout: float = 10.0) -> dict[str, Any]:
    """The actor's figures once the settles that finished tasks sent have landed."""
    end = time.monotonic() + timeout
    while True:
        snap: dict[str, Any] = _ask(ray, actor.snapshot)
        if (snap["reserved_micros"] == 0 and snap["reserved_tokens"] == 0) or time.monotonic() > end:
            return snap
        time.sleep(0.02)


def _ask(ray: Any, method: Any, *args: Any, tries: int = 50) -> Any:
    """A call to the ledger actor, waited for; asked again while the actor is being restarted."""
    from ray.exceptions import RayActorError

    for n in range(tries):
        try:
            return ray.get(method.remote(*args))
        except RayActorError:
            if n == tries - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def _ledger_actor(ray: Any, st: _State) -> Any:
    """The fleet ledger as a Ray actor: restarted by Ray whenever it dies, each time rebuilt from the
    journal (open reservations forfeited), on the driver's node so that the journal is beside the runs.
    Calls in flight when it died are sent again to the new one (``max_task_retries``)."""
    led = st.ledger
    options: dict[str, Any] = {"num_cpus": 0, "max_restarts": -1, "max_task_retries": -1}
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    except Exception:  # noqa: BLE001 - a driver outside the cluster (Ray Client): the actor goes where Ray puts it
        pass
    options["name"] = ledger_actor_name(st.out_dir)
    options["namespace"] = LEDGER_NAMESPACE
    _retire(ray, options["name"])
    cls = ray.remote(**options)(FleetLedger)
    return cls.remote(led.max_usd_micros, led.max_tokens, spent_micros=led.spent, used_tokens=led.used_tokens,
                      check=led.check, journal=st.journal)


LEDGER_NAMESPACE = "agentloop-batch"


def ledger_actor_name(out_dir: str) -> str:
    """The ledger actor's name (in ``LEDGER_NAMESPACE``): one per batch directory."""
    return "agentloop-ledger-" + hashlib.sha256(os.path.abspath(out_dir).encode()).hexdigest()[:16]


def _retire(ray: Any, name: str, timeout: float = 30.0) -> None:
    """The ledger actor of an earlier driver of this directory, if Ray has not yet ended it (the driver
    was killed moments ago), is ended before its successor opens the journal: a grant it made after
    that would be written to a journal nobody reads again."""
    try:
        old = ray.get_actor(name, namespace=LEDGER_NAMESPACE)
    except ValueError:
        return
    ray.kill(old, no_restart=True)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            ray.get_actor(name, namespace=LEDGER_NAMESPACE)
        except ValueError:
            return
        time.sleep(0.1)


def _run_ray(st: _State, address: str | None, max_in_flight: int | None) -> tuple[bool, int]:
    import ray as ray_module

    ray: Any = ray_module
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False, configure_logging=False)
        started_here = True
    interrupted = False
    cpus = int(ray.cluster_resources().get("CPU", 1))
    try:
        actor = _ledger_actor(ray, st)
        remote = ray.remote(max_retries=0)(_ray_task)
        window = max_in_flight or max(2, cpus * 2)
        in_flight: dict[Any, tuple[Task, int]] = {}
        poll = _RayPoll()
        try:
            while st.pending or in_flight:
                while st.pending and len(in_flight) < window:
                    task = st.pending.popleft()
                    attempt, retried = st.next_attempt(task)
                    actor.begin.remote(f"{task.id}#{attempt}", None)  # journaled before the task can reserve
                    in_flight[remote.remote(task, attempt, actor, st.trace, retried, st.keys)] = (task, attempt)
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.2)
                if ready:
                    rest = [r for r in in_flight if r not in ready]
                    if rest:
                        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                        ready += more
                for ref in ready:
                    _collect(st, ray, actor, ref, *in_flight.pop(ref))
                poll.poll(st, ray, actor)
        except KeyboardInterrupt:
            interrupted = True
            for ref, (task, attempt) in in_flight.items():
                ray.cancel(ref, force=True)
                st.running.discard(task.id)
                actor.forfeit.remote(f"{task.id}#{attempt}")
        st.ledger = _LedgerView(_settled_snapshot(ray, actor), st.ledger)
        _ask(ray, actor.close)
        ray.kill(actor)
    finally:
        if started_here:
            ray.shutdown()
    return interrupted, cpus


def _collect(st: _State, ray: Any, actor: Any, ref: Any, task: Task, attempt: int) -> None:
    """A Ray task that ended: its outcome recorded, its files made final; a failed or lost worker's
    open reservation forfeited (it counts as spent)."""
    from ray.exceptions import RayError, RayTaskError

    key = f"{task.id}#{attempt}"
    try:
        out = ray.get(ref)
    except RayTaskError as exc:
        st.running.discard(task.id)
        _ask(ray, actor.end, key)
        st.finished(task, {"id": task.id, "attempt": attempt, "status": "failed", "error": str(exc).strip().splitlines()[-1][:500]})
        return
    except RayError as exc:
        _ask(ray, actor.end, key)
        st.crashed(task, attempt, type(exc).__name__)
        return
    actor.end.remote(key, False)  # its last settle, sent from the worker, may land after this
    lines = out.pop("lines", None)
    if lines is not None and out.get("anchor"):
        finish_files(st.out_dir, task.id, out["anchor"], lines)
    st.finished(task, out)


class _RayPoll:
    """What runs where and the fleet's figures, asked of the ledger actor about ten times a second
    without waiting for the answers (they are picked up when they have come)."""

    def __init__(self) -> None:
        self.seen_running: set[str] = set()
        self.running_ref: Any = None
        self.snapshot_ref: Any = None
        self.last_tick = 0.0

    def _get(self, ray: Any, name: str) -> Any:
        """The answer, or None when the actor died before giving it (it is asked again next time)."""
        from ray.exceptions import RayActorError

        ref = getattr(self, name)
        setattr(self, name, None)
        try:
            return ray.get(ref)
        except RayActorError:
            return None

    def poll(self, st: _State, ray: Any, actor: Any) -> None:
        now = time.monotonic()
        if self.running_ref is not None and ray.wait([self.running_ref], timeout=0)[0]:
            running = self._get(ray, "running_ref") or {}
            st.running = {k.rsplit("#", 1)[0] for k in running}
            for k, where in running.items():
                if where is not None and k not in self.seen_running:
                    self.seen_running.add(k)
                    tid, _, att = k.rpartition("#")
                    st.emit("begin", id=tid, attempt=int(att), pid=where.get("pid"), node=where.get("node"))
        if self.snapshot_ref is not None and ray.wait([self.snapshot_ref], timeout=0)[0]:
            snap = self._get(ray, "snapshot_ref")
            if snap is not None:
                st.ledger = _LedgerView(snap, st.ledger)
                st.tick()
        if now - self.last_tick > 0.1:
            self.last_tick = now
            if self.running_ref is None:
                self.running_ref = actor.running.remote()
            if self.snapshot_ref is None:
                self.snapshot_ref = actor.snapshot.remote()


class _LedgerView(FleetLedger):
    """The driver's copy of the Ray actor's figures, for progress and the report."""

    def __init__(self, snap: dict[str, Any], base: FleetLedger):
        super().__init__(snap["max_usd_micros"], snap["max_tokens"], spent_micros=snap["spent_micros"],
                         used_tokens=snap["used_tokens"], check=base.check)
        self.reserved = snap["reserved_micros"]
        self.reserved_tokens = snap["reserved_tokens"]
        self.reservations = snap["reservations"]
        self.refusals = snap["refusals"]
        self.forfeited_micros = snap["forfeited_micros"]
        self.overrun_micros = snap["overrun_micros"]

    def forfeit(self, key: str) -> int:
        return 0  # the actor holds the reservations


def run_batch(
    tasks: Sequence[Task],
    out_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    ray: bool = False,
    ray_address: str | None = None,
    max_usd_micros: int | None = None,
    max_tokens: int | None = None,
    max_attempts: int = 3,
    on_event: Event | None = None,
    max_in_flight: int | None = None,
    check_reservations: bool = True,
    trace: dict[str, str] | None = None,
) -> BatchReport:
    """Run every task not already finished in ``out_dir``, under one fleet budget.

    ``on_event(kind, data)`` hears ``begin``, ``done``, ``crash`` and ``tick``
    (about ten a second, with the counts and the ledger's figures).
    ``check_reservations=False`` grants every reservation: it exists only for
    the negative control in the tests. ``trace`` is a W3C trace context
    (``{"traceparent": ...}``): with tracing configured in the workers'
    environment (``OTEL_EXPORTER_OTLP_ENDPOINT``), each task's run is a child
    of that span (``agentloop.telemetry`` rule 3).

    Returns:
        The ``BatchReport``; the manifest and the batch anchor are written.
    """
    out = os.path.abspath(os.fspath(out_dir))
    started = time.monotonic()
    st = _prepare(tasks, out, max_usd_micros, max_tokens, check_reservations, on_event, max_attempts)
    st.trace = dict(trace) if trace else None
    st.tick()
    n = workers or os.cpu_count() or 1
    interrupted = False
    try:
        with _keys_out_of_environ() as st.keys:
            if not st.pending:
                pass
            elif ray:
                interrupted, n = _run_ray(st, ray_address, max_in_flight)
            else:
                interrupted = _run_local(st, n)
    except KeyboardInterrupt:
        interrupted = True
    report = _conclude(st, started, interrupted, "ray" if ray else "local", n)
    st.tick()
    return report


@contextmanager
def _keys_out_of_environ() -> Iterator[HeldKeys]:
    """The provider keys, taken out of ``os.environ`` while the workers (and a Ray instance started here,
    whose workers inherit its environment) are started, and put back after: workers get them as a value."""
    from ..config.credentials import provider_key_vars

    taken = {k: os.environ.pop(k) for k in sorted(provider_key_vars()) if k in os.environ}
    try:
        yield HeldKeys(taken)
    finally:
        os.environ.update(taken)


def sign_batch_anchor(out_dir: str | os.PathLike[str], private_key: Any) -> dict[str, Any]:
    """Sign ``batch.anchor.json`` with an Ed25519 key: one signature over every run.

    The signature covers the RFC 8785 canonical bytes of the anchor without
    its ``signature`` member, as ``agentloop anchor --sign`` does for one run.
    """
    from cryptography.hazmat.primitives import serialization

    from ..audit.anchor import Signature
    from ..canonical import canonical

    path = os.path.join(os.fspath(out_dir), "batch.anchor.json")
    with open(path, "rb") as f:
        anchor = orjson.loads(f.read())
    anchor.pop("signature", None)
    pub = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    anchor["signature"] = Signature(pub.hex(), private_key.sign(canonical(anchor)).hex()).to_json()
    _files.write_json_atomic(path, anchor)
    return dict(anchor)


def _check_batch_signature(anchor: dict[str, Any], public_key: Any) -> str | None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    from ..canonical import canonical

    sig = anchor.get("signature")
    if not isinstance(sig, dict) or not isinstance(sig.get("value"), str):
        return "the batch anchor is not signed, but a public key was given"
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if sig.get("public_key") != raw.hex():
        return "the batch anchor is signed by another key"
    body = {k: v for k, v in anchor.items() if k != "signature"}
    try:
        public_key.verify(bytes.fromhex(sig["value"]), canonical(body))
    except (InvalidSignature, ValueError):
        return "the batch anchor's signature does not match its content"
    return None


def verify_batch(out_dir: str | os.PathLike[str], public_key: Any = None) -> list[str]:
    """Check a batch directory from its files alone. Returns the problems (empty: it holds).

    Every manifest entry with a transcript must verify against its anchor,
    and the batch anchor's root must be the root over those runs (and, given
    an Ed25519 ``public_key``, carry its valid signature).
    """
    d = os.fspath(out_dir)
    problems: list[str] = []
    try:
        with open(os.path.join(d, "manifest.jsonl"), "rb") as f:
            entries = [orjson.loads(line) for line in f if line.strip()]
        with open(os.path.join(d, "batch.anchor.json"), "rb") as f:
            anchor = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError) as exc:
        return [f"{d}: cannot read the manifest or batch anchor: {exc}"]
    for e in entries:
        if not e.get("transcript"):
            continue
        tpath = os.path.join(d, e["transcript"])
        try:
            with open(tpath, "rb") as f:
                data = f.read()
            with open(_files.paths(d, e["id"])[1], "rb") as f:
                run_anchor = orjson.loads(f.read())
        except (OSError, orjson.JSONDecodeError) as exc:
            problems.append(f"{e['id']}: {exc}")
            continue
        from ..transcript import verify_lines

        lines = data.split(b"\n")
        report = verify_lines(line + b"\n" for line in lines[:-1])
        if not report.ok or lines[-1] != b"":
            problems.append(f"{e['id']}: the transcript fails verification")
            continue
        root = _files.merkle_root_hex(lines[:-1])
        facts = {"size": len(lines) - 1, "last_hash": report.last_hash, "root": root}
        if any(run_anchor.get(k) != v for k, v in facts.items()):
            problems.append(f"{e['id']}: the transcript does not match its anchor")
        if (e["records"], e["last_hash"], e["merkle_root"]) != (facts["size"], facts["last_hash"], root):
            problems.append(f"{e['id']}: the manifest entry does not match the transcript")
    expect = batch_anchor(entries)
    if anchor.get("root") != expect["root"] or anchor.get("runs") != expect["runs"]:
        problems.append("the batch anchor's root is not the root over the manifest's runs")
    if public_key is not None:
        why = _check_batch_signature(anchor, public_key)
        if why is not None:
            problems.append(why)
    return problems


def tasks_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
