"""The spend cap through the real command line: on by default, unlimited on purpose, prices, and overruns.

Issue 17: with no ``--max-usd`` and no ``maxUsd`` a session is capped at $5;
``--max-usd unlimited`` (or ``"maxUsd": "unlimited"``) says no cap on purpose and
``verify``, ``replay`` and ``sessions`` mark such runs; a model with no price says
so once; ``--price INPUT,OUTPUT`` gives it one; a provider that bills past the
reservation stops the run as an error (exit 1, ``is_error: true``, a warning).
The model server is ``python -m agentloop.testing.fakeprovider`` on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    e["NO_COLOR"] = "1"
    return e


def serve(tmp_path: Path, script: Any) -> Iterator[str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    p = subprocess.Popen([sys.executable, "-m", "agentloop.testing.fakeprovider", "--script", str(path), "--port", "0"],
                         stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert p.stdout is not None
        yield p.stdout.readline().strip()
    finally:
        p.terminate()
        p.wait(10)


@pytest.fixture()
def hello(tmp_path: Path) -> Iterator[str]:
    yield from serve(tmp_path, {"replies": [{"text": "hello"}], "when_done": "repeat"})


def agentloop(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _budgets(transcript: str) -> list[dict[str, Any]]:
    out = []
    for line in Path(transcript).read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "run_start":
            out.append(r["payload"]["config"]["budget"])
    return out


def test_a_session_with_no_cap_given_is_capped_at_five_dollars_and_says_so(proj: Path, env: dict[str, str], hello: str) -> None:
    p = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1", "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "spend cap $5.000000 (the default" in p.stderr
    obj = json.loads(p.stdout)
    assert [b["max_usd_micros"] for b in _budgets(obj["transcript"])] == [5_000_000]


def test_max_usd_unlimited_runs_with_no_cap_and_verify_replay_and_sessions_mark_it(proj: Path, env: dict[str, str], hello: str) -> None:
    p = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1", "--max-usd", "unlimited",
                   "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "no spend cap (unlimited, on purpose)" in p.stderr
    path = json.loads(p.stdout)["transcript"]
    assert [b["max_usd_micros"] for b in _budgets(path)] == [None]
    v = agentloop(["verify", path], cwd=proj, env=env)
    assert v.returncode == 0 and "1 of 1 run(s) had no spend cap (unlimited)" in v.stdout
    r = agentloop(["replay", path], cwd=proj, env=env)
    assert r.returncode == 0 and "no spend cap (unlimited)" in r.stdout
    s = agentloop(["sessions"], cwd=proj, env=env)
    assert "no spend cap (unlimited) in 1 of 1 prompt(s)" in s.stdout
    # a capped session is not marked
    p2 = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1", "--max-usd", "1",
                    "--output-format", "json"], cwd=proj, env=env)
    v2 = agentloop(["verify", json.loads(p2.stdout)["transcript"]], cwd=proj, env=env)
    assert "no spend cap" not in v2.stdout


def test_max_usd_unlimited_in_settings_is_honoured(proj: Path, env: dict[str, str], hello: str) -> None:
    home = Path(env["AGENTLOOP_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"maxUsd": "unlimited"}))
    p = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1", "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "no spend cap (unlimited, on purpose)" in p.stderr
    assert [b["max_usd_micros"] for b in _budgets(json.loads(p.stdout)["transcript"])] == [None]


def test_a_model_with_no_price_says_so_once_with_the_price_it_is_billed_at_and_how_to_give_one(
    proj: Path, env: dict[str, str], hello: str
) -> None:
    p = agentloop(["-p", "hi", "--model", "openai:llama3.1", "--base-url", hello + "/v1"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "has no price" in ln]
    assert len(lines) == 1
    assert "llama3.1" in lines[0] and "highest known price" in lines[0] and "$15.000000 input / $75.000000 output" in lines[0]
    assert "--price INPUT,OUTPUT" in lines[0] and '"prices" in settings' in lines[0]


def test_price_gives_an_unknown_model_its_price(proj: Path, env: dict[str, str], hello: str) -> None:
    p = agentloop(["-p", "hi", "--model", "openai:llama3.1", "--base-url", hello + "/v1", "--price", "1,2",
                   "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert "has no price" not in p.stderr
    obj = json.loads(p.stdout)
    u = obj["usage"]
    assert obj["cost_micros"] == -(-(u["input_tokens"] * 1_000_000 + u["output_tokens"] * 2_000_000) // 1_000_000)
    bad = agentloop(["-p", "hi", "--model", "openai:llama3.1", "--base-url", hello + "/v1", "--price", "cheap"], cwd=proj, env=env)
    assert bad.returncode == 2 and "--price cheap" in bad.stderr and "Traceback" not in bad.stderr


def test_a_provider_that_bills_past_the_bound_stops_the_run_as_an_error(tmp_path: Path, proj: Path, env: dict[str, str]) -> None:
    # 100,000 input tokens for a two-letter prompt: far past the reservation's bound
    gen = serve(tmp_path, {"replies": [{"text": "hello", "usage": {"input_tokens": 100_000, "output_tokens": 5}}], "when_done": "repeat"})
    url = next(gen)
    try:
        p = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", url + "/v1", "--max-usd", "0.05",
                       "--output-format", "json"], cwd=proj, env=env)
        t = agentloop(["-p", "hi", "--model", "openai:gpt-4o-mini", "--base-url", url + "/v1", "--max-usd", "0.05"], cwd=proj, env=env)
    finally:
        gen.close()
    assert p.returncode == 1, p.stderr
    obj = json.loads(p.stdout)
    assert obj["is_error"] is True and obj["agentloop_stop_reason"] == "budget_overrun"
    assert "warning: the provider billed past the reservation" in p.stderr
    kinds = [json.loads(line)["kind"] for line in Path(obj["transcript"]).read_text().splitlines()]
    assert "overrun" in kinds
    assert t.returncode == 1 and "warning: the provider billed past the reservation" in t.stderr


def test_the_repl_banner_and_cost_show_the_cap_and_model_names_a_model_with_no_price(proj: Path, env: dict[str, str], hello: str) -> None:
    lines = "\n".join(["/cost", "/model openai:nonexistent", "/model openai:gpt-4o", "/exit"]) + "\n"
    p = subprocess.run([AGENTLOOP, "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1"], input=lines, cwd=proj, env=env,
                       capture_output=True, text=True, timeout=60)
    out = p.stdout
    assert p.returncode == 0, p.stderr
    assert out.count("spend cap $5.000000 (the default") == 2  # the banner, then /cost
    unknown = [ln for ln in out.splitlines() if "has no price" in ln]
    assert len(unknown) == 1 and "nonexistent" in unknown[0] and "--price INPUT,OUTPUT" in unknown[0]
    p2 = subprocess.run([AGENTLOOP, "--model", "openai:gpt-4o-mini", "--base-url", hello + "/v1", "--max-usd", "unlimited"],
                        input="/cost\n/exit\n", cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert p2.stdout.count("no spend cap (unlimited, on purpose)") == 2
