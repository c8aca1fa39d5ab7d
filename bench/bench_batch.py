"""Batch throughput and the fleet ledger's cost, all measured in one run.

    .venv/bin/python bench/bench_batch.py [--tasks 1000] [--latency-ms 40] [--no-ray]

Prints, for N short scripted tasks (one model call each, which waits
``--latency-ms`` (default 200) as a provider would, then answers):

- tasks/s with ``--workers 1`` (the baseline), ``--workers 2`` and Ray on a
  local instance with 2 CPUs, and the parallel efficiency of each against the
  baseline (rate / (2 x baseline rate));
- the same with no latency: the per-task overhead of each backend;
- the fleet ledger's cost per reservation (reserve + settle): in-process (the
  baseline), across a worker's pipe to the driver, and to the Ray actor;
- an estimate of a 100-node Ray cluster's throughput from those figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop.batch import FleetLedger, load_tasks, run_batch  # noqa: E402
from agentloop.batch.runner import _PipeBackend  # noqa: E402


def _tasks_file(d: str, n: int, latency_ms: int) -> str:
    path = os.path.join(d, f"tasks-{latency_ms}.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({
                "id": f"b{i:05d}", "prompt": f"say {i}", "model": "scripted", "tools": [],
                "budget": {"max_steps": 2}, "price": {"input": 1_000_000, "output": 1_000_000}, "max_output_tokens": 16,
                "script": [{"text": str(i), "usage": {"input_tokens": 3, "output_tokens": 2}, "delay_ms": latency_ms}],
            }) + "\n")
    return path


def _rate(d: str, path: str, name: str, **kw: Any) -> tuple[float, float]:
    """tasks/s over the whole batch (start to manifest written), and the driver's CPU seconds per task."""
    tasks = load_tasks(path)
    out = os.path.join(d, f"out-{name}-{time.monotonic_ns()}")
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    report = run_batch(tasks, out, max_usd_micros=10**9, **kw)
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    assert report.ok and report.count("ok") == len(tasks), report.to_json()["counts"]
    shutil.rmtree(out, ignore_errors=True)
    return len(tasks) / elapsed, cpu / len(tasks)


# --- the ledger's cost per reservation -------------------------------------------------


def _pipe_client(conn: Any, n: int) -> None:
    backend = _PipeBackend(conn)
    t0 = time.perf_counter()
    for _ in range(n):
        backend.reserve("k#1", 10, 10)
        backend.settle("k#1", 10, 9, 10, 9)
    conn.send(("elapsed", time.perf_counter() - t0))


def _pipe_cost(n: int) -> float:
    """A worker process reserving over its pipe, the driver answering as in the real loop."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_pipe_client, args=(child, n))
    proc.start()
    ledger = FleetLedger(10**12, None)
    elapsed = None
    while elapsed is None:
        msg = parent.recv()
        if msg[0] == "reserve":
            parent.send(ledger.reserve(msg[1], msg[2], msg[3]))
        elif msg[0] == "settle":
            ledger.settle(*msg[1:])
        else:
            elapsed = msg[1]
    proc.join()
    return float(elapsed) / n


def _local_cost(n: int) -> float:
    ledger = FleetLedger(10**12, None)
    t0 = time.perf_counter()
    for _ in range(n):
        ledger.reserve("k#1", 10, 10)
        ledger.settle("k#1", 10, 9, 10, 9)
    return (time.perf_counter() - t0) / n


def _ray_cost(n: int) -> float:
    import ray

    from agentloop.batch.runner import _RayBackend

    @ray.remote
    def client(actor: Any, n: int) -> float:
        backend = _RayBackend(actor)
        t0 = time.perf_counter()
        for _ in range(n):
            backend.reserve("k#1", 10, 10)
            backend.settle("k#1", 10, 9, 10, 9)
        ray.get(actor.end.remote("k#1"))  # after every settle sent before it
        return (time.perf_counter() - t0) / n

    actor = ray.remote(num_cpus=0)(FleetLedger).remote(10**12, None)
    ray.get(client.remote(actor, 50))  # warm the worker
    return float(ray.get(client.remote(actor, n)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--latency-ms", type=int, default=200,
                    help="each task's one model call waits this long (real providers take 0.3-10 s)")
    ap.add_argument("--reservations", type=int, default=2000)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--cores-per-node", type=int, default=16)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench-batch-")
    wait = _tasks_file(d, a.tasks, a.latency_ms)
    busy = _tasks_file(d, a.tasks, 0)
    print(f"bench_batch: {a.tasks} scripted tasks, one model call each; cpu count {os.cpu_count()}; load avg {os.getloadavg()[0]:.1f}")

    rows: dict[str, tuple[float, float]] = {}
    rows["w1 wait"] = _rate(d, wait, "w1", workers=1)
    rows["w2 wait"] = _rate(d, wait, "w2", workers=2)
    rows["w1 busy"] = _rate(d, busy, "w1b", workers=1)
    rows["w2 busy"] = _rate(d, busy, "w2b", workers=2)
    ray_mod: Any = None
    if not a.no_ray:
        import ray as ray_mod

        t0 = time.perf_counter()
        ray_mod.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray_start = time.perf_counter() - t0
        _rate(d, busy, "warm", ray=True)  # start the Ray workers once; the first batch pays their start
        rows["ray wait"] = _rate(d, wait, "ray", ray=True)
        rows["ray busy"] = _rate(d, busy, "rayb", ray=True)

    base = rows["w1 wait"][0]
    print(f"\nthroughput, each call waiting {a.latency_ms} ms (the provider-bound case); baseline --workers 1")
    print(f"  {'backend':<14}{'tasks/s':>10}{'x baseline':>12}{'efficiency on 2':>18}{'driver CPU/task':>18}")
    for key, label in (("w1 wait", "--workers 1"), ("w2 wait", "--workers 2"), ("ray wait", "ray (2 CPUs)")):
        if key in rows:
            r, cpu = rows[key]
            print(f"  {label:<14}{r:>10.1f}{r / base:>12.2f}{r / (2 * base):>17.0%}{cpu * 1e3:>16.2f}ms")
    print(f"  ideal: {1000 / a.latency_ms:.1f} tasks/s per worker; 80% efficiency target on 2 cores: "
          f"{'met' if rows['w2 wait'][0] / (2 * base) >= 0.8 else 'NOT met'} (--workers 2)")

    bb = rows["w1 busy"][0]
    print("\nno latency (pure overhead per task); baseline --workers 1")
    for key, label in (("w1 busy", "--workers 1"), ("w2 busy", "--workers 2"), ("ray busy", "ray (2 CPUs)")):
        if key in rows:
            r, cpu = rows[key]
            print(f"  {label:<14}{r:>10.1f} tasks/s {r / bb:>6.2f}x   {1000 / r:>7.2f} ms/task wall   driver CPU {cpu * 1e3:.2f} ms/task")

    n = a.reservations
    local = _local_cost(n * 10)
    pipe = _pipe_cost(n)
    print(f"\nledger cost per reservation (reserve + settle); baseline in-process FleetLedger ({n} reservations)")
    print(f"  in-process      {local * 1e6:>9.1f} us   1.0x")
    print(f"  worker pipe     {pipe * 1e6:>9.1f} us   {pipe / local:>6.0f}x   {pipe / (a.latency_ms / 1000):.2%} of a {a.latency_ms} ms call")
    ray_res = None
    if ray_mod is not None:
        ray_res = _ray_cost(n)
        print(f"  ray actor       {ray_res * 1e6:>9.1f} us   {ray_res / local:>6.0f}x   {ray_res / (a.latency_ms / 1000):.2%} of a {a.latency_ms} ms call")
        print(f"  (ray.init took {ray_start:.1f} s, paid once per batch command)")

    if ray_mod is not None and ray_res is not None:
        _estimate(a, rows, ray_res)
        ray_mod.shutdown()
    shutil.rmtree(d, ignore_errors=True)
    return 0


def _estimate(a: argparse.Namespace, rows: dict[str, tuple[float, float]], ray_res: float) -> None:
    """100 nodes: the least of what the workers, the driver and the ledger actor can each sustain."""
    r_ray_busy, driver_cpu = rows["ray busy"]
    per_task_worker = 2 / r_ray_busy  # worker-seconds per task with no latency, from 2 CPUs
    cores = a.nodes * a.cores_per_node
    latency = a.latency_ms / 1000
    workers_bound = cores / (latency + per_task_worker)
    driver_bound = 1 / driver_cpu
    calls = 1
    ledger_bound = 1 / (ray_res * calls)
    est = min(workers_bound, driver_bound, ledger_bound)
    print(f"\nestimate for {a.nodes} nodes x {a.cores_per_node} cores, one {a.latency_ms} ms call per task:")
    print(f"  workers: {cores} / ({a.latency_ms} ms + {per_task_worker * 1e3:.1f} ms overhead)  = {workers_bound:>9.0f} tasks/s")
    print(f"  driver:  1 / {driver_cpu * 1e3:.2f} ms CPU per task                  = {driver_bound:>9.0f} tasks/s")
    print(f"  ledger:  1 / {ray_res * 1e6:.0f} us per reservation, {calls} per task  = {ledger_bound:>9.0f} tasks/s (one actor, serial)")
    print(f"  => about {est:.0f} tasks/s, bound by the {['workers', 'driver', 'ledger'][[workers_bound, driver_bound, ledger_bound].index(est)]}")


if __name__ == "__main__":
    sys.exit(main())
