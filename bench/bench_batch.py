"""The batch runner's cost over a plain baseline, on the local pool and on a multi-node local Ray cluster.

    .venv/bin/python bench/bench_batch.py [--tasks 1000] [--latency-ms 50] [--workers 4] [--nodes 3] [--no-ray]

Every task makes one model call that waits ``--latency-ms`` as a provider
would, then answers (a scripted model: no network). Measured in the same run:

- the local pool (``run_batch(workers=N)``: a transcript, an anchor and a
  manifest line per task, every call reserved in the journaled fleet ledger)
  against a plain ``multiprocessing`` pool of N processes that only waits the
  same latency per task;
- Ray on a local cluster of ``--nodes`` raylets on this one machine
  (``ray.cluster_utils.Cluster``, one CPU each) against plain Ray tasks that
  only wait, asking the same one CPU each. Both keep as many tasks in flight
  as the cluster has CPUs (agentloop's ``max_in_flight``): a task asks one
  CPU, so more in flight would only queue, and counting them as slots would
  inflate the figure below.

For each: the wall time, the extra wall time per task (the batch's extra wall
time divided by the tasks: what the whole batch waits longer, per task), the
overhead per slot (that times the slots running at once: what each task costs
a slot on top of its wait, where the slots are the processes or the cluster's
CPUs), and the driver's memory per task (its peak resident set during the
batch less the one before, divided by the tasks). On a machine with fewer
cores than slots, the per-slot figure is CPU time the slots share, not time
each task waits.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from agentloop.batch import load_tasks, run_batch  # noqa: E402


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


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _measured(fn: Callable[[], Any]) -> tuple[float, int]:
    """(wall seconds, peak RSS growth in KB) of ``fn()`` in this process."""
    before = _rss_kb()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _rss_kb())

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    peak[0] = max(peak[0], _rss_kb())
    return wall, peak[0] - before


def _wait(latency_s: float) -> int:
    time.sleep(latency_s)
    return 1


def _agentloop(d: str, path: str, name: str, **kw: Any) -> Callable[[], None]:
    def go() -> None:
        tasks = load_tasks(path)
        out = os.path.join(d, f"out-{name}")
        report = run_batch(tasks, out, max_usd_micros=10**9, **kw)
        assert report.ok and report.count("completed") == len(tasks), report.to_json()["counts"]
        shutil.rmtree(out, ignore_errors=True)
    return go


def _plain_pool(n: int, workers: int, latency_s: float) -> Callable[[], None]:
    def go() -> None:
        with mp.get_context("spawn").Pool(workers) as pool:
            assert sum(pool.imap_unordered(_wait, [latency_s] * n, chunksize=1)) == n
    return go


def _plain_ray(n: int, window: int, latency_s: float) -> Callable[[], None]:
    def go() -> None:
        import ray

        remote = ray.remote(_wait)  # one CPU each, as agentloop's tasks ask
        pending: list[Any] = []
        sent = done = 0
        while done < n:
            while sent < n and len(pending) < window:
                pending.append(remote.remote(latency_s))
                sent += 1
            ready, pending = ray.wait(pending, num_returns=1)
            done += len(ready)
    return go


def _row(label: str, base: tuple[float, int], ours: tuple[float, int], n: int, slots: int) -> None:
    wall_ms = (ours[0] - base[0]) / n * 1000
    print(f"  {label:<34}{base[0]:>8.1f}s{ours[0]:>10.1f}s{wall_ms:>+12.1f} ms{wall_ms * slots:>+12.1f} ms"
          f"{base[1] / n:>10.2f} KB{ours[1] / n:>10.2f} KB")


def _header(title: str) -> None:
    print(f"\n{title}")
    print(f"  {'':<34}{'plain':>9}{'agentloop':>11}{'extra wall':>15}{'overhead':>15}{'plain mem':>13}{'ours mem':>13}")
    print(f"  {'':<34}{'wall':>9}{'wall':>11}{'per task':>15}{'per slot':>15}{'per task':>13}{'per task':>13}")


def _ray_cluster(a: argparse.Namespace, d: str, path: str) -> None:
    import ray
    from ray.cluster_utils import Cluster

    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(a.nodes - 1):
        cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    cluster.wait_for_nodes()
    print(f"\nray: {len(ray.nodes())} raylets on this machine, {int(ray.cluster_resources().get('CPU', 0))} CPUs; "
          f"started in {time.perf_counter() - t0:.1f} s")
    try:
        window = int(ray.cluster_resources().get("CPU", 1))  # a task asks one CPU: no more run at once
        warm = _tasks_file(d, min(50, a.tasks), 0)
        _agentloop(d, warm, "ray-warm", ray=True, max_in_flight=window)()  # starts the Ray workers once
        _plain_ray(50, window, 0.0)()
        _header(f"Ray, {a.nodes} nodes, {window} tasks in flight (the cluster's CPUs)")
        base = _measured(_plain_ray(a.tasks, window, a.latency_ms / 1000))
        ours = _measured(_agentloop(d, path, "ray", ray=True, max_in_flight=window))
        _row(f"{a.tasks} tasks, {a.latency_ms} ms each", base, ours, a.tasks, window)
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--latency-ms", type=int, default=50, help="each task's one model call waits this long")
    ap.add_argument("--workers", type=int, default=4, help="local processes, for both the pool and agentloop")
    ap.add_argument("--nodes", type=int, default=3, help="raylets of the local Ray cluster")
    ap.add_argument("--no-ray", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench-batch-")
    path = _tasks_file(d, a.tasks, a.latency_ms)
    print(f"bench_batch: {a.tasks} tasks, one {a.latency_ms} ms call each; cpu count {os.cpu_count()}; "
          f"load avg {os.getloadavg()[0]:.1f}")
    _header(f"local pool, {a.workers} processes")
    base = _measured(_plain_pool(a.tasks, a.workers, a.latency_ms / 1000))
    ours = _measured(_agentloop(d, path, "local", workers=a.workers))
    _row(f"{a.tasks} tasks, {a.latency_ms} ms each", base, ours, a.tasks, a.workers)
    if not a.no_ray:
        _ray_cluster(a, d, path)
    shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
