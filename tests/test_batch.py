"""The batch runner on local worker processes: completion, the fleet cap, dead workers, a dead driver, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from _batch import (
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
from agentloop.batch import load_tasks, run_batch, verify_batch
from agentloop.batch.runner import batch_anchor

LONG = bool(os.environ.get("AGENTLOOP_LONG"))
AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))


def test_200_tasks_complete_and_every_transcript_verifies(tmp_path):
    tasks = [add_task(i, delay_ms=i % 3) for i in range(200)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    report = run_batch(load_tasks(path), tmp_path / "out", workers=2)
    assert report.ok and report.count("completed") == 200
    entries = manifest(tmp_path / "out")
    assert [e["id"] for e in entries] == [t["id"] for t in tasks]
    assert all(e["stop_reason"] == "no_tool_calls" and e["records"] == 7 and e["attempts"] == 1 for e in entries)
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []
    assert report.ledger["spent_micros"] == sum(demand(t) for t in tasks) == sum(e["spent_micros"] for e in entries)
    assert report.ledger["reservations"] == 400 and report.ledger["reserved_micros"] == 0


def test_each_run_records_its_reservations_and_its_task(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(7)])
    run_batch(load_tasks(path), tmp_path / "out", workers=1)
    recs = records(tmp_path / "out" / "runs" / "t0007.jsonl")
    meta = recs[0]["payload"]["config"]["meta"]["batch"]
    assert meta["task"] == "t0007" and meta["attempt"] == 1 and len(meta["task_sha256"]) == 64
    budgets = [r["payload"] for r in recs if r["kind"] == "budget"]
    assert len(budgets) == 2 and all(b["reserved_micros"] >= b["cost_micros"] > 0 for b in budgets)


def test_a_tampered_run_fails_batch_verification_and_is_redone_on_resume(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(4)])
    out = tmp_path / "out"
    run_batch(load_tasks(path), out, workers=2)
    victim = out / "runs" / "t0002.jsonl"
    victim.write_bytes(victim.read_bytes().replace(b"the sum is 2", b"the sum is 9"))
    assert any("t0002" in p for p in verify_batch(out))
    again = run_batch(load_tasks(path), out, workers=2)
    by_id = {e["id"]: e for e in again.entries}
    assert not by_id["t0002"]["resumed"] and all(by_id[f"t000{i}"]["resumed"] for i in (0, 1, 3))
    assert verify_batch(out) == []


def test_the_batch_anchor_is_the_merkle_root_over_the_runs_and_changes_with_any_run(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(5)])
    report = run_batch(load_tasks(path), tmp_path / "out", workers=2)
    with open(tmp_path / "out" / "batch.anchor.json", "rb") as f:
        anchor = orjson.loads(f.read())
    assert anchor["root"] == report.anchor["root"] and anchor["runs"] == 5 and anchor["complete"]
    entries = manifest(tmp_path / "out")
    assert batch_anchor(entries)["root"] == anchor["root"]
    entries[3]["merkle_root"] = "0" * 64
    assert batch_anchor(entries)["root"] != anchor["root"]


def test_an_edited_task_is_redone_and_the_others_are_skipped(tmp_path):
    tasks = [add_task(i) for i in range(3)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    run_batch(load_tasks(path), out, workers=1)
    tasks[1]["script"][-1]["text"] = "a different answer"
    write_tasks(path, tasks)
    again = run_batch(load_tasks(path), out, workers=1)
    assert [e["resumed"] for e in again.entries] == [True, False, True]
    assert records(out / "runs" / "t0001.jsonl")[-1]["payload"]["answer"] == "a different answer"


def test_200_tasks_against_the_fake_provider_with_random_latencies_complete_and_verify(tmp_path):
    with fake_provider(tmp_path) as url:
        tasks = [provider_task(i, url) for i in range(200)]
        path = write_tasks(tmp_path / "tasks.jsonl", tasks)
        report = run_batch(load_tasks(path), tmp_path / "out", workers=2)
    # the server's replies are shared by the tasks in turn, so a task may draw four tool calls and stop on its step cap
    assert report.count("completed") + report.count("stopped") == 200, [e for e in report.entries if e["status"] != "completed"][:2]
    assert all(e["status"] == ("stopped" if e["stop_reason"] == "step_budget" else "completed") for e in report.entries)
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []
    assert report.ledger["spent_micros"] == transcript_spend(tmp_path / "out") > 0
    assert {e["stop_reason"] for e in report.entries} <= {"no_tool_calls", "step_budget"}


def test_a_fleet_cap_holds_against_the_fake_provider(tmp_path):
    with fake_provider(tmp_path, seed=3) as url:
        tasks = [provider_task(i, url) for i in range(30)]
        path = write_tasks(tmp_path / "tasks.jsonl", tasks)
        per_call = 12 * 2 + 20 * 8
        cap = per_call * 25  # 30 tasks want at least 30 calls
        report = run_batch(load_tasks(path), tmp_path / "out", workers=2, max_usd_micros=cap)
    assert_cap_held(report, tmp_path / "out", cap, per_call * 30)
    all_verify(tmp_path / "out", [t["id"] for t in tasks])


# --- the fleet cap -----------------------------------------------------------


def _run_fleet(tmp_path, tasks, cap, *, check=True, ray=False, workers=2):
    out = tmp_path / f"out-{time.monotonic_ns()}"
    path = write_tasks(tmp_path / f"tasks-{time.monotonic_ns()}.jsonl", tasks)
    report = run_batch(load_tasks(path), out, workers=workers, ray=ray, max_usd_micros=cap, check_reservations=check)
    return report, out


@settings(max_examples=20 if LONG else 4, deadline=None, suppress_health_check=list(HealthCheck))
@given(fleets())
def test_a_fleet_cap_below_total_demand_is_never_exceeded(tmp_path_factory, fleet):
    tasks, total, cap = fleet
    tmp = tmp_path_factory.mktemp("fleet")
    report, out = _run_fleet(tmp, tasks, cap)
    assert_cap_held(report, out, cap, total)
    all_verify(out, [t["id"] for t in tasks])


@settings(max_examples=6 if LONG else 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(fleets())
def test_negative_control_without_the_reservation_the_cap_is_exceeded(tmp_path_factory, fleet):
    """The same check, with reservations granted unchecked: it must catch the overspend."""
    tasks, total, cap = fleet
    tmp = tmp_path_factory.mktemp("nocap")
    report, out = _run_fleet(tmp, tasks, cap, check=False)
    assert report.ledger["spent_micros"] == total > cap
    with pytest.raises(AssertionError):
        assert_cap_held(report, out, cap, total)


def test_a_token_cap_holds_across_the_fleet(tmp_path):
    tasks = [add_task(i, delay_ms=5) for i in range(12)]
    report, out = _run_fleet(tmp_path, tasks, None)
    per_task = report.entries[0]["tokens"]
    path = write_tasks(tmp_path / "t.jsonl", tasks)
    capped = run_batch(load_tasks(path), tmp_path / "capped", workers=2, max_tokens=per_task * 12 // 2)
    assert capped.ledger["used_tokens"] <= per_task * 6
    assert any(e["stop_reason"] == "cost_budget" for e in capped.entries)


# --- dead workers, a dead driver, Ctrl+C ----------------------------------------


def test_a_worker_killed_mid_run_has_its_task_retried_and_marked(tmp_path):
    tasks = [add_task(i, delay_ms=600 if i == 2 else 100, steps=3) for i in range(6)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    killed: list[int] = []

    def on_event(kind, data):
        if kind == "begin" and data["id"] == "t0002" and data["attempt"] == 1:
            partial = tmp_path / "out" / "runs" / f"t0002.jsonl.partial.{data['pid']}"

            def kill():
                # once its first turn is recorded (so spent), mid-run: two 600 ms turns are left
                end = time.monotonic() + 60
                while time.monotonic() < end:
                    if partial.exists() and b'"kind":"model_turn"' in partial.read_bytes():
                        break
                    time.sleep(0.01)
                os.kill(data["pid"], signal.SIGKILL)
                killed.append(data["pid"])
            threading.Thread(target=kill, daemon=True).start()

    report = run_batch(load_tasks(path), tmp_path / "out", workers=2, max_usd_micros=10**6, on_event=on_event)
    assert killed
    by_id = {e["id"]: e for e in report.entries}
    assert by_id["t0002"]["retried"] and by_id["t0002"]["attempts"] == 2 and by_id["t0002"]["status"] == "completed"
    assert [e["id"] for e in report.entries if e["retried"]] == ["t0002"]
    assert records(tmp_path / "out" / "runs" / "t0002.jsonl")[0]["payload"]["config"]["meta"]["batch"]["attempt"] == 2
    all_verify(tmp_path / "out", [t["id"] for t in tasks])
    assert verify_batch(tmp_path / "out") == []
    # the dead attempt's spend stays spent: the ledger holds more than the finished runs record
    assert report.ledger["spent_micros"] > sum(e["spent_micros"] for e in report.entries)
    assert report.ledger["reserved_micros"] == 0
    assert not list((tmp_path / "out" / "runs").glob("*.partial*"))


def test_a_dead_holders_open_reservation_counts_as_spent_and_its_late_settle_is_ignored():
    from agentloop.batch.ledger import FleetLedger

    led = FleetLedger(1_000, 100)
    assert led.reserve("a#1", 300, 30, where=111) and led.reserve("b#1", 200, 20)
    led.settle("a#1", 300, 120, 30, 12)  # a's first call settled: 120 spent
    assert led.reserve("a#1", 400, 40)  # a's second call is open when a dies
    assert led.forfeit("a#1") == 400
    snap = led.snapshot()
    assert (snap["spent_micros"], snap["reserved_micros"], snap["forfeited_micros"]) == (520, 200, 400)
    assert (snap["used_tokens"], snap["reserved_tokens"]) == (52, 20)
    assert led.running() == {}
    led.settle("a#1", 400, 10, 40, 1)  # a message from the dead worker, arriving late
    assert led.snapshot()["spent_micros"] == 520, "a forfeit is final: the late settle does not refund it"
    assert led.forfeit("a#1") == 0
    # the cap sees the forfeit: 520 spent + 200 held leaves 280
    assert not led.reserve("c#1", 281, 1) and led.reserve("c#1", 280, 1)


def _cli(args, **kw):
    return subprocess.Popen([*AGENTLOOP, "batch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _wait_for_lines(path, n, proc, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and sum(1 for line in path.read_bytes().split(b"\n") if line.endswith(b"}")) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {n} lines")


def _finished_files(out):
    runs = out / "runs"
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in runs.glob("*.jsonl")}


def test_the_driver_killed_and_the_batch_resumed_loses_no_finished_run(tmp_path):
    # the last four are slow, so the batch is still running (for seconds) when it is killed
    tasks = [add_task(i, delay_ms=60 if i < 12 else 500, steps=3) for i in range(16)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    args = [path, "--out", str(out), "--workers", "2", "--max-usd", "1", "--json"]
    proc = _cli(args)
    _wait_for_lines(out / "manifest.jsonl", 4, proc)
    proc.kill()
    proc.wait()
    time.sleep(1.0)  # orphaned workers notice the driver is gone and stop without finishing a run
    before = _finished_files(out)
    assert 4 <= len(before) < 16
    all_verify(out, [n[:-6] for n in before])
    again = subprocess.run([*AGENTLOOP, "batch", *args], capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    report = json.loads(again.stdout)
    assert report["counts"]["completed"] == 16
    resumed = {e["id"] for e in report["entries"] if e["resumed"]}
    assert {n[:-6] for n in before} <= resumed
    after = _finished_files(out)
    for name, (data, mtime) in before.items():
        assert after[name] == (data, mtime), f"{name} was rewritten"
    all_verify(out, [t["id"] for t in tasks])
    assert verify_batch(out) == []
    assert not list((out / "runs").glob("*.partial*"))


def test_ctrl_c_stops_the_batch_keeps_finished_runs_and_a_rerun_finishes_it(tmp_path):
    tasks = [add_task(i, delay_ms=80 if i < 8 else 500, steps=3) for i in range(12)]  # still running at the Ctrl+C
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    args = [path, "--out", str(out), "--workers", "2", "--json"]
    proc = _cli(args, start_new_session=True)
    _wait_for_lines(out / "manifest.jsonl", 3, proc)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr
    report = json.loads(stdout)
    assert report["interrupted"] and report["counts"]["pending"] > 0 and report["counts"]["completed"] >= 3
    assert not report["batch_anchor"]["complete"]
    again = subprocess.run([*AGENTLOOP, "batch", *args], capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    final = json.loads(again.stdout)
    assert final["counts"]["completed"] == 12 and final["resumed"] >= report["counts"]["completed"]
    assert verify_batch(out) == []


# --- the command ---------------------------------------------------------------


def test_a_bad_task_file_runs_nothing_and_names_line_and_field(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(1), {**add_task(2), "budget": {"max_usd": 5.5}}])
    r = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(tmp_path / "out")], capture_output=True, timeout=60)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.count("\n") == 1 and "tasks.jsonl:2: field 'budget.max_usd'" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "runs").exists() or not list((tmp_path / "out" / "runs").iterdir())


@pytest.mark.parametrize(("args", "words"), [
    (["--max-usd", "ten"], "--max-usd 'ten'"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--toolset", "nope"], "--toolset 'nope'"),
])
def test_bad_options_are_one_line_errors(tmp_path, args, words):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(1)])
    r = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(tmp_path / "o"), *args], capture_output=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr.decode() and r.stderr.decode().count("\n") == 1


def test_the_summary_table_and_json_report_tell_the_same_story(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(3)])
    # wide enough for the manifest's whole path: a long temporary folder (pytest-xdist adds one level) would be cut with "…"
    r = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(tmp_path / "o"), "--workers", "1", "--max-usd", "0.5"],
                       capture_output=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    assert text.splitlines()[0] == "3 tasks: 3 completed, 0 refused, 0 failed, 0 overrun"
    for words in ("batch on local", "stop: no_tool_calls", "$0.000228 / $0.500000", "batch root", "manifest.jsonl"):
        assert words in text, text
    j = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(tmp_path / "o"), "--json"], capture_output=True, timeout=120)
    report = json.loads(j.stdout)
    assert report["counts"]["completed"] == 3 and report["resumed"] == 3 and report["ledger"]["spent_micros"] == 228


def test_the_progress_bar_shows_done_failed_running_and_spend_against_the_cap():
    from agentloop.cli.cmd_batch import _Progress

    p = _Progress(10, 2_000_000, None)
    p.event("tick", {"done": 3, "failed": 2, "running": 2, "total": 10, "counts": {"completed": 3, "refused": 1, "failed": 1},
                     "ledger": {"spent_micros": 250_000, "used_tokens": 5}})
    task = p.bar.tasks[0]
    assert task.completed == 5 and task.total == 10
    assert task.fields["status"] == "done 3 refused 1 failed 1 run 2 $0.2500/$2.00"  # short for 80 columns



def test_one_signature_covers_the_batch_and_any_change_breaks_it(tmp_path):
    from agentloop.audit.anchor import generate_keys, load_public_key

    priv, pub = generate_keys(tmp_path / "keys", "batch")
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(3)])
    out = tmp_path / "out"
    r = subprocess.run([*AGENTLOOP, "batch", path, "--out", str(out), "--workers", "1", "--sign", priv, "--json"],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["batch_anchor"]["signature"]["alg"] == "Ed25519"
    key = load_public_key(pub)
    assert verify_batch(out, public_key=key) == []
    other_priv, other_pub = generate_keys(tmp_path / "keys", "other")
    assert verify_batch(out, public_key=load_public_key(other_pub)) == ["the batch anchor is signed by another key"]
    anchor_path = out / "batch.anchor.json"
    doc = json.loads(anchor_path.read_text())
    doc["spent_micros"] += 1
    anchor_path.write_text(json.dumps(doc))
    assert verify_batch(out, public_key=key) == ["the batch anchor's signature does not match its content"]
