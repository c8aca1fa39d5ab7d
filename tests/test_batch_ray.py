"""The batch runner on a real local Ray instance: the same tasks, a Ray actor as the fleet ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from _batch import (  # noqa: E402
    add_task,
    all_verify,
    assert_cap_held,
    demand,
    fake_provider,
    fleets,
    manifest,
    provider_task,
    records,
    transcript_spend,
    write_tasks,
)
from agentloop.batch import load_tasks, run_batch, verify_batch  # noqa: E402

pytestmark = pytest.mark.ray
LONG = bool(os.environ.get("AGENTLOOP_LONG"))
AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def start_private_ray() -> None:
    """A new local Ray instance of this test run's own, never one found on the machine.

    ``ray.init()`` without an address joins the cluster ``RAY_ADDRESS`` names, else the last one
    started on the machine (``/tmp/ray/ray_current_cluster``): another user's or session's cluster,
    with its own CPUs, token and Python, fails these tests in ways that say nothing of the cause.
    ``address="local"`` starts a new instance whatever is running (Ray's ``init`` docs, rule 4);
    its temporary folder is private too, so the machine's "current cluster" is left as it was."""
    import tempfile

    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must stay under 107 bytes
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 _temp_dir=temp)
    except Exception as exc:  # say why, not a traceback from inside Ray
        pytest.fail(f"could not start a private local Ray instance for the batch tests ({type(exc).__name__}: {exc})", pytrace=False)


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance for the whole session (starting Ray costs seconds), private to it."""
    started = not ray.is_initialized()
    if started:
        start_private_ray()
    # Ray (2.59 on) makes local clusters ask for a token it keeps in ~/.ray/auth_token; every test
    # has its own HOME (conftest), so the drivers a test starts are pointed at the cluster's token.
    token = Path.home() / ".ray" / "auth_token"
    pointed = token.is_file() and not os.environ.get("RAY_AUTH_TOKEN") and not os.environ.get("RAY_AUTH_TOKEN_PATH")
    if pointed:
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    yield ray.get_runtime_context().gcs_address
    if pointed:
        del os.environ["RAY_AUTH_TOKEN_PATH"]
    if started:
        ray.shutdown()


def test_200_tasks_complete_on_ray_and_every_transcript_verifies(ray_local, tmp_path):
    tasks = [add_task(i, delay_ms=i % 3) for i in range(200)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    report = run_batch(load_tasks(path), tmp_path / "out", ray=True)
    assert report.backend == "ray" and report.ok and report.count("completed") == 200
    entries = manifest(tmp_path / "out")
    assert [e["id"] for e in entries] == [t["id"] for t in tasks]
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []
    assert report.ledger["spent_micros"] == sum(demand(t) for t in tasks)
    assert report.ledger["reservations"] == 400 and report.ledger["reserved_micros"] == 0


def test_ray_and_the_local_pool_write_the_same_runs(ray_local, tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(6)])
    on_ray = run_batch(load_tasks(path), tmp_path / "ray", ray=True)
    local = run_batch(load_tasks(path), tmp_path / "local", workers=2)
    assert on_ray.anchor["root"] == local.anchor["root"]
    for i in range(6):
        name = f"t{i:04d}.jsonl"
        assert (tmp_path / "ray" / "runs" / name).read_bytes() == (tmp_path / "local" / "runs" / name).read_bytes()


@settings(max_examples=10 if LONG else 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(fleets())
def test_a_fleet_cap_below_total_demand_is_never_exceeded_on_ray(ray_local, tmp_path_factory, fleet):
    tasks, total, cap = fleet
    tmp = tmp_path_factory.mktemp("rayfleet")
    path = write_tasks(tmp / "tasks.jsonl", tasks)
    report = run_batch(load_tasks(path), tmp / "out", ray=True, max_usd_micros=cap)
    assert_cap_held(report, tmp / "out", cap, total)
    all_verify(tmp / "out", [t["id"] for t in tasks])


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(fleets())
def test_negative_control_on_ray_without_the_reservation_the_cap_is_exceeded(ray_local, tmp_path_factory, fleet):
    tasks, total, cap = fleet
    tmp = tmp_path_factory.mktemp("raynocap")
    path = write_tasks(tmp / "tasks.jsonl", tasks)
    report = run_batch(load_tasks(path), tmp / "out", ray=True, max_usd_micros=cap, check_reservations=False)
    assert report.ledger["spent_micros"] == total > cap
    with pytest.raises(AssertionError):
        assert_cap_held(report, tmp / "out", cap, total)


def test_a_ray_worker_killed_mid_run_has_its_task_retried_and_marked(ray_local, tmp_path):
    # t0002 runs long (3 x 0.8 s) so that the driver, which hears of it when it polls the
    # ledger actor, kills its worker while it is still mid-run, not after it moved on
    tasks = [add_task(i, delay_ms=800 if i == 2 else 100, steps=3) for i in range(6)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    killed: list[int] = []

    def on_event(kind, data):
        if kind == "begin" and data["id"] == "t0002" and data["attempt"] == 1 and not killed:
            killed.append(data["pid"])
            os.kill(data["pid"], signal.SIGKILL)

    report = run_batch(load_tasks(path), tmp_path / "out", ray=True, max_usd_micros=10**6, on_event=on_event)
    assert killed
    by_id = {e["id"]: e for e in report.entries}
    assert by_id["t0002"]["retried"] and by_id["t0002"]["attempts"] == 2 and by_id["t0002"]["status"] == "completed"
    assert [e["id"] for e in report.entries if e["retried"]] == ["t0002"]
    assert records(tmp_path / "out" / "runs" / "t0002.jsonl")[0]["payload"]["config"]["meta"]["batch"]["attempt"] == 2
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []
    assert report.ledger["reserved_micros"] == 0
    assert report.ledger["spent_micros"] >= sum(e["spent_micros"] for e in report.entries)


def test_the_ray_driver_killed_and_the_batch_resumed_on_the_cluster(ray_local, tmp_path):
    tasks = [add_task(i, delay_ms=60, steps=3) for i in range(16)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    args = [*AGENTLOOP, "batch", path, "--out", str(out), "--ray", ray_local, "--max-usd", "1", "--json"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if (out / "manifest.jsonl").exists() and (out / "manifest.jsonl").read_bytes().count(b"\n") >= 4:
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "runs").glob("*.jsonl")}
    assert 4 <= len(before) < 16
    again = subprocess.run(args, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    report = json.loads(again.stdout)
    assert report["backend"] == "ray" and report["counts"]["completed"] == 16
    assert {n[:-6] for n in before} <= {e["id"] for e in report["entries"] if e["resumed"]}
    for name, facts in before.items():
        p = out / "runs" / name
        assert (p.read_bytes(), p.stat().st_mtime_ns) == facts, f"{name} was rewritten"
    all_verify(out, [t["id"] for t in tasks])
    assert verify_batch(out) == []


def test_provider_tasks_with_random_latencies_run_on_ray_under_a_fleet_cap(ray_local, tmp_path):
    with fake_provider(tmp_path, seed=11) as url:
        tasks = [provider_task(i, url) for i in range(40)]
        path = write_tasks(tmp_path / "tasks.jsonl", tasks)
        per_call = 12 * 2 + 20 * 8
        cap = per_call * 30
        report = run_batch(load_tasks(path), tmp_path / "out", ray=True, max_usd_micros=cap)
    assert_cap_held(report, tmp_path / "out", cap, per_call * 40)
    assert report.ledger["spent_micros"] == transcript_spend(tmp_path / "out")
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []


# --- faults: the ledger actor, the driver ------------------------------------------


def test_killing_the_ledger_actor_mid_batch_loses_no_spend_and_the_batch_finishes(ray_local, tmp_path):
    """The actor is restarted by Ray (max_restarts) and rebuilt from the journal: the calls it had
    granted and not settled are counted at their reservation; the batch goes on and ends normally."""
    from agentloop.batch.runner import LEDGER_NAMESPACE, ledger_actor_name

    tasks = [add_task(i, delay_ms=80, steps=3) for i in range(16)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    kills: list[int] = []

    def on_event(kind, data):
        if kind == "tick" and data["done"] >= 3 * (len(kills) + 1) and len(kills) < 2:
            ray.kill(ray.get_actor(ledger_actor_name(str(out)), namespace=LEDGER_NAMESPACE), no_restart=False)
            kills.append(data["done"])

    report = run_batch(load_tasks(path), out, ray=True, max_usd_micros=10**6, on_event=on_event)
    assert len(kills) == 2
    assert report.ok and report.count("completed") == 16
    # every settled and forfeited call is in the ledger: at least what the transcripts record
    assert report.ledger["spent_micros"] >= transcript_spend(out) == sum(e["spent_micros"] for e in report.entries)
    assert report.ledger["reserved_micros"] == 0
    all_verify(out, [t["id"] for t in tasks])
    assert verify_batch(out) == []


def test_the_fleet_cap_holds_against_the_providers_bill_over_repeated_ray_driver_kills(ray_local, tmp_path):
    """kill -9 of the Ray driver three times (its tasks and the ledger actor die with its job), each
    rerun of the same command, then a run to the end: billed <= cap, and the ledger counts it all."""
    from _batch import billed, kill_driver_repeatedly

    with fake_provider(tmp_path, seed=9, latency=(0.05, 0.2), cache=False) as url:
        tasks = [provider_task(i, url) for i in range(30)]
        path = write_tasks(tmp_path / "tasks.jsonl", tasks)
        out = tmp_path / "out"
        # each call reserves about 2,400 and bills 184; 30 tasks bill at least 5,520, a kill forfeits at
        # least one reservation, and the last call needs 2,400 of room: a cap of 10,000 must refuse some
        cap = 10_000
        args = [*AGENTLOOP, "batch", path, "--out", str(out), "--ray", ray_local, "--max-usd", f"{cap / 1e6:.6f}", "--json"]
        in_flight, held = kill_driver_repeatedly(args, str(out), kills=3, seed=2, settle_s=0.2)
        time.sleep(1.0)
        final = subprocess.run(args, capture_output=True, timeout=300)
        time.sleep(0.5)
        bill = billed(url)
    report = json.loads(final.stdout)
    # a task may draw four tool calls in a row from the shared server and stop on its step cap
    assert {e["status"] for e in report["entries"]} <= {"completed", "refused", "stopped"}, final.stdout[-3000:]
    assert final.returncode in (0, 1, 3)
    assert held >= 1 and in_flight
    assert report["counts"]["refused"] > 0, "the cap must bind for the test to mean anything"
    assert bill <= cap, f"billed {bill} past the cap {cap}"
    assert report["ledger"]["spent_micros"] >= bill
    retried = {e["id"] for e in report["entries"] if e["retried"]}
    assert in_flight <= retried, in_flight - retried
    assert verify_batch(out) == []


KILLER_TOOLS = '''import os, signal
from agentloop import tool, Registry

@tool
def add(a: int, b: int) -> int:
    """Add; the first call with a == 3 kills its own worker."""
    mark = os.path.join(os.path.dirname(os.path.abspath(__file__)), "killed-once")
    if a == 3 and not os.path.exists(mark):
        open(mark, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return a + b

def registry():
    return Registry([add])
'''


def test_json_on_ray_is_one_document_when_a_worker_dies(ray_local, tmp_path):
    """Ray tells the driver of the dead worker ("(raylet) A worker died ..."): on stderr, never in the report."""
    (tmp_path / "killer_tools.py").write_text(KILLER_TOOLS)
    tasks = [add_task(i, toolset="killer") for i in range(6)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    r = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(tmp_path / "out"), "--ray", ray_local,
                        "--toolset", "killer=killer_tools:registry", "--json"], capture_output=True, timeout=300, cwd=tmp_path)
    assert (tmp_path / "killed-once").exists()
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    report = json.loads(r.stdout)
    assert report["counts"]["completed"] == 6
    assert [e["id"] for e in report["entries"] if e["retried"]] == ["t0003"]


def test_the_tests_ray_instance_is_private_even_when_another_cluster_is_named(tmp_path):
    """With ``RAY_ADDRESS`` naming a cluster (here one that does not answer), the tests still start
    their own instance instead of trying to join it."""
    code = (
        "import sys, ray; sys.path.insert(0, sys.argv[1]); import test_batch_ray as t; t.start_private_ray(); "
        "print(ray.cluster_resources().get('CPU')); ray.shutdown()"
    )
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "2.0"
