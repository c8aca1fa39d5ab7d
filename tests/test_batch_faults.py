"""The batch keeps its promises through faults: honest outcomes, names that cannot collide, a ledger
journal that outlives the driver, and a fleet cap that holds against what the provider billed over
repeated kills of the driver."""

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

from _batch import (
    add_task,
    all_verify,
    fake_provider,
    manifest,
    provider_task,
    records,
    write_tasks,
)
from agentloop.batch import load_tasks, run_batch, verify_batch
from agentloop.batch._files import file_stem, paths
from agentloop.batch.ledger import FleetLedger, JournalError, read_journal

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))


def _batch(args, **kw):
    return subprocess.run([*AGENTLOOP, "batch", *args], capture_output=True, timeout=300, **kw)


# --- the journal -----------------------------------------------------------------


def test_the_journal_outlives_its_ledger_and_a_reservation_open_at_a_kill_is_counted_at_its_amount(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    led = FleetLedger(1_000, None, journal=path)
    led.begin("a#1", None)
    led.begin("b#1", None)
    assert led.reserve("a#1", 300, 30) and led.reserve("b#1", 200, 20)
    led.settle("a#1", 300, 120, 30, 12)
    led.end("a#1")
    # the owner dies here (no close, no snapshot): b's call may have been made and billed
    state = read_journal(path)
    assert state is not None
    assert (state.spent, state.forfeited, state.used_tokens) == (120 + 200, 200, 12 + 20)
    assert state.attempts == {"a": 1, "b": 1} and state.lost == {"b"}
    again = FleetLedger(1_000, None, journal=path)
    assert again.spent == 320 and again.forfeited_micros == 200
    assert not again.reserve("c#1", 681, 0) and again.reserve("c#1", 680, 0)
    # the journal was compacted to one state line, then written through
    lines = (tmp_path / "ledger.jsonl").read_bytes().splitlines()
    assert orjson.loads(lines[0])["op"] == "state" and orjson.loads(lines[-1])["op"] == "reserve"


def test_a_grant_is_in_the_journal_before_the_holder_hears_it(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = FleetLedger(None, None, journal=str(path))
    assert led.reserve("t#1", 77, 7)
    # no close, no flush: the line is already in the file, as the loop's records are
    assert json.loads(path.read_bytes().splitlines()[-1]) == {"op": "reserve", "key": "t#1", "micros": 77, "tokens": 7}


def test_a_line_cut_by_a_kill_is_skipped_and_a_foreign_line_is_one_clear_error(tmp_path):
    path = tmp_path / "ledger.jsonl"
    FleetLedger(None, None, journal=str(path)).reserve("t#1", 50, 5)
    with open(path, "ab") as f:
        f.write(b'{"op":"reserve","key":"t#2","mic')
    state = read_journal(str(path))
    assert state is not None and state.spent == 50
    path.write_bytes(b'{"op":"settle","key":"t#1"}\n')
    with pytest.raises(JournalError, match=r"ledger.jsonl:1: not a ledger journal line"):
        read_journal(str(path))


# --- honest outcomes -------------------------------------------------------------


def _capped_tasks(n=10):
    return [add_task(i, delay_ms=5) for i in range(n)]


def test_a_capped_batch_counts_refused_tasks_apart_exits_3_and_a_higher_cap_runs_only_them(tmp_path):
    tasks = _capped_tasks()
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    # each task reserves about 600 micro-USD a call and spends 114 in all: $0.003 covers a few
    first = _batch([path, "--out", str(out), "--workers", "2", "--max-usd", "0.003"])
    assert first.returncode == 3, first.stderr.decode()
    head = first.stdout.decode().splitlines()[0]
    done = [e for e in manifest(out) if e["status"] == "completed"]
    refused = [e for e in manifest(out) if e["status"] == "refused"]
    assert done and refused and len(done) + len(refused) == 10
    assert head == f"10 tasks: {len(done)} completed, {len(refused)} refused, 0 failed, 0 overrun"
    assert all(e["stop_reason"] == "cost_budget" for e in refused)
    spent_before = json.loads((out / "ledger.jsonl").read_bytes().splitlines()[0] or b"{}").get("spent_micros", 0)
    again = _batch([path, "--out", str(out), "--workers", "2", "--max-usd", "1", "--json"])
    assert again.returncode == 0, again.stderr.decode()
    report = json.loads(again.stdout)
    assert report["ok"] and report["counts"]["completed"] == 10 and report["counts"]["refused"] == 0
    ran = {e["id"] for e in report["entries"] if not e["resumed"]}
    assert ran == {e["id"] for e in refused}, "only the refused tasks run again"
    assert not any(e["retried"] for e in report["entries"])
    assert report["ledger"]["spent_micros"] >= spent_before
    all_verify(out, [t["id"] for t in tasks])
    assert verify_batch(out) == []


def test_exit_codes_are_documented_in_help():
    r = subprocess.run([*AGENTLOOP, "batch", "--help"], capture_output=True, timeout=60)
    text = r.stdout.decode()
    for words in ("0    every task completed", "1    some task failed", "3    every task that did not complete was refused"):
        assert words in text, text
    epilog = text[text.index("exit status:"):]
    assert max(len(line) for line in epilog.splitlines()) <= 80


def test_a_task_stopped_by_its_own_step_cap_is_not_completed_and_the_batch_exits_1(tmp_path):
    tasks = [add_task(0), add_task(1, steps=3, budget={"max_steps": 1})]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    r = _batch([path, "--out", str(tmp_path / "out"), "--workers", "1", "--json"])
    assert r.returncode == 1, r.stderr.decode()
    report = json.loads(r.stdout)
    assert report["counts"]["completed"] == 1 and report["counts"]["stopped"] == 1 and not report["ok"]


def test_without_a_terminal_progress_is_printed_as_lines_on_stderr(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(i) for i in range(4)])
    r = _batch([path, "--out", str(tmp_path / "out"), "--workers", "2"])
    assert r.returncode == 0
    lines = r.stderr.decode().splitlines()
    assert lines and lines[-1].startswith("batch 4/4: 4 completed, 0 refused, 0 failed, 0 overrun")
    assert all(len(line) <= 80 for line in lines)


def test_a_task_that_cannot_start_is_named_before_any_task_runs(tmp_path):
    tasks = [add_task(0), {"id": "real", "prompt": "hi", "model": "openai:gpt-4o-mini", "budget": {"max_steps": 2}},
             {"id": "real2", "prompt": "hi", "model": "anthropic:claude-haiku-4-5", "budget": {"max_steps": 2}}]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
    r = _batch([path, "--out", str(tmp_path / "out")], env=env)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1, err
    assert "tasks.jsonl:2: field 'model': cannot start: no API key for openai" in err and "(and 1 more tasks cannot start)" in err
    assert not (tmp_path / "out" / "runs").exists() or not list((tmp_path / "out" / "runs").iterdir())


def test_json_output_is_one_document_whatever_the_workers_print(tmp_path):
    """A tool that writes to the process's stdout (file descriptor 1) cannot break the --json document."""
    (tmp_path / "loud_tools.py").write_text(
        "import os\nfrom agentloop import tool, Registry\n"
        "@tool\ndef add(a: int, b: int) -> int:\n    '''Add.'''\n    print('noise from a tool', flush=True)\n"
        "    os.write(1, b'raw noise on fd 1\\n')\n    return a + b\n"
        "def registry():\n    return Registry([add])\n")
    tasks = [add_task(i, toolset="loud") for i in range(3)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = _batch([path, "--out", str(tmp_path / "out"), "--workers", "2", "--toolset", "loud=loud_tools:registry", "--json"], env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["counts"]["completed"] == 3
    assert b"raw noise on fd 1" in r.stderr and b"noise from a tool" in r.stderr


# --- names -----------------------------------------------------------------------

ADVERSARIAL = ["x", "x.jsonl.partial.7", "x.jsonl", "x.jsonl.anchor.json", "X", "x.jsonl.partial", "a" * 128, "A" * 128]


def test_task_ids_map_to_distinct_dot_free_file_stems():
    stems = [file_stem(i) for i in ADVERSARIAL]
    assert len(set(stems)) == len(stems)
    assert len({s.lower() for s in stems}) == len(stems), "ids that differ in case differ on case-blind file systems"
    assert all("." not in s and len(s) <= 160 for s in stems)
    assert file_stem("t0001") == "t0001"


def test_ids_shaped_like_each_others_files_never_cost_another_task_its_run(tmp_path):
    tasks = [add_task(i, id=tid) for i, tid in enumerate(ADVERSARIAL)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    first = run_batch(load_tasks(path), out, workers=2)
    assert first.ok
    others = {tid: open(paths(str(out), tid)[0], "rb").read() for tid in ADVERSARIAL if tid != "x"}
    tasks[0]["script"][-1]["text"] = "x, edited"
    write_tasks(path, tasks)
    again = run_batch(load_tasks(path), out, workers=2)
    assert again.ok and [e["id"] for e in again.entries if not e["resumed"]] == ["x"]
    for tid, data in others.items():
        assert open(paths(str(out), tid)[0], "rb").read() == data, f"{tid} changed"
    all_verify_ids(out, ADVERSARIAL)


def all_verify_ids(out, ids):
    from agentloop.audit.anchor import load_anchor, verify_with_anchor
    from agentloop.transcript import verify_file

    for tid in ids:
        tpath, apath, _ = paths(str(out), tid)
        assert verify_file(tpath).ok and verify_with_anchor(tpath, load_anchor(apath)).ok, tid
        assert records(tpath)[0]["payload"]["config"]["meta"]["batch"]["task"] == tid
    assert verify_batch(out) == []


def test_a_worker_killed_mid_task_removes_only_its_own_partial_file(tmp_path):
    ids = ["x", "x.jsonl.partial.7", "x.jsonl"]
    tasks = [add_task(i, id=tid, delay_ms=500 if tid == "x" else 5, steps=3) for i, tid in enumerate(ids)]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    killed: list[int] = []

    def on_event(kind, data):
        if kind == "begin" and data["id"] == "x" and data["attempt"] == 1:
            partial = f"{paths(str(out), 'x')[2]}.{data['pid']}"

            def kill():
                end = time.monotonic() + 60
                while time.monotonic() < end and not (os.path.exists(partial) and b"model_turn" in open(partial, "rb").read()):
                    time.sleep(0.01)
                time.sleep(0.3)  # the others have finished by now (5 ms turns)
                os.kill(data["pid"], signal.SIGKILL)
                killed.append(data["pid"])
            threading.Thread(target=kill, daemon=True).start()

    report = run_batch(load_tasks(path), out, workers=2, on_event=on_event)
    assert killed and report.ok
    by_id = {e["id"]: e for e in report.entries}
    assert by_id["x"]["retried"] and by_id["x"]["attempts"] == 2
    assert not any(by_id[t]["retried"] for t in ids[1:])
    all_verify_ids(out, ids)
    assert not list((out / "runs").glob("*.partial.*"))


# --- the cap across kills of the driver ---------------------------------------------


def test_the_fleet_cap_holds_against_the_providers_bill_over_repeated_driver_kills(tmp_path):
    """kill -9 of the driver alone, four times, each rerun of the same command, then a run to the end:
    the provider billed no more than the cap, and the ledger counts everything it billed."""
    from _batch import billed, kill_driver_repeatedly

    with fake_provider(tmp_path, seed=5, latency=(0.05, 0.2), cache=False) as url:
        tasks = [provider_task(i, url) for i in range(40)]
        path = write_tasks(tmp_path / "tasks.jsonl", tasks)
        out = tmp_path / "out"
        # each call reserves about 2,400 and bills 184; 40 tasks bill at least 7,360, a kill forfeits at
        # least one reservation, and the last call needs 2,400 of room: a cap of 12,000 must refuse some
        cap = 12_000
        args = [*AGENTLOOP, "batch", path, "--out", str(out), "--workers", "2", "--max-usd", f"{cap / 1e6:.6f}", "--json"]
        in_flight, held = kill_driver_repeatedly(args, str(out), kills=4, seed=1)
        time.sleep(1.0)  # orphaned workers finish the call they were in, then find the driver gone
        final = subprocess.run(args, capture_output=True, timeout=300)
        time.sleep(0.5)
        bill = billed(url)
    report = json.loads(final.stdout)
    # a task may draw four tool calls in a row from the shared server and stop on its step cap
    assert {e["status"] for e in report["entries"]} <= {"completed", "refused", "stopped"}, final.stdout[-3000:]
    assert final.returncode in (0, 1, 3)
    assert held >= 1 and in_flight, "the kills must land while calls were reserved and in flight"
    assert report["counts"]["refused"] > 0, "the cap must bind for the test to mean anything"
    assert bill <= cap, f"billed {bill} past the cap {cap}"
    assert report["ledger"]["spent_micros"] >= bill, "spend the provider billed is missing from the ledger"
    assert report["ledger"]["spent_micros"] <= cap
    retried = {e["id"] for e in report["entries"] if e["retried"]}
    assert in_flight <= retried, in_flight - retried
    assert report["counts"]["completed"] + report["counts"]["refused"] + report["counts"]["stopped"] == 40
    assert verify_batch(out) == []


@pytest.mark.parametrize(("stop", "refused", "status"), [
    ("no_tool_calls", False, "completed"), ("sentinel", False, "completed"), ("cost_budget", True, "refused"),
    ("cost_budget", False, "stopped"), ("step_budget", False, "stopped"), ("token_budget", False, "stopped"),
    ("loop_detected", False, "stopped"), ("budget_overrun", False, "overrun"), ("budget_overrun", True, "overrun"),
    ("model_error", False, "failed"), (None, False, "failed"),
])
def test_each_stop_reason_has_one_status_and_only_a_finished_model_is_completed(stop, refused, status):
    from agentloop.batch.runner import status_of

    assert status_of(stop, refused) == status


def test_a_ledger_journal_that_is_not_one_stops_the_batch_with_one_line(tmp_path):
    path = write_tasks(tmp_path / "tasks.jsonl", [add_task(0)])
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "ledger.jsonl").write_bytes(b'{"op":"reserve","key":"t0000#1"}\n')
    r = _batch([path, "--out", str(out)])
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "ledger.jsonl:1: not a ledger journal line" in err, err
    assert not list((out / "runs").iterdir())
