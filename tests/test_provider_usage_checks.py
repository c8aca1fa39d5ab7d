"""A provider's usage is checked where it is read: the cap holds against a provider that lies.

Every count a provider reports (OpenAI's ``prompt_tokens``, ``completion_tokens``, cached tokens;
Anthropic's ``input_tokens``, ``output_tokens``, cache reads and writes) must be a whole number from
zero to a real bound, present when the protocol always sends it, and within what the request could
cost (output at most ``max_tokens``, tokens at most the input's byte bound and the output asked). A
reply whose figures fail is charged the call's whole reservation and stops the run as an overrun
(``budget_overrun``, an ``overrun`` record): never a negative or an unbounded spend. Run against the local fake provider speaking each wire protocol.

The documented shapes: OpenAI's Chat Completions ``usage`` object (``prompt_tokens``,
``completion_tokens``, ``prompt_tokens_details.cached_tokens``) and Anthropic's Messages streaming
events (``message_start`` carries the input counts, ``message_delta`` the final ``output_tokens``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentloop.budget import Budget, Price, PriceTable
from agentloop.events import ModelReply, Usage
from agentloop.providers import cheap_spec, open_model, record_for, records
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing import FunctionModel, ScriptedModel, reply
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import tool
from agentloop.transcript import TranscriptWriter, read_records, verify_file

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")

LIES: list[tuple[str, dict[str, Any]]] = [
    ("negative output", {"output_tokens": -1_000_000}),
    ("negative input", {"input_tokens": -50_000}),
    ("fractional output", {"output_tokens": 1.5}),
    ("huge output", {"output_tokens": 1e30}),
    ("huge integer input", {"input_tokens": 10**15}),
    ("output as a string", {"output_tokens": "12"}),
    ("missing output", {"output_tokens": None}),
    ("output past max_tokens", {"output_tokens": 5_000}),
]


@tool(read_only=True)
def note(text: str) -> str:
    """Keep a note."""
    return "kept"


ADAPTERS = [r.name for r in records() if r.adapter is not None]
"""Every provider over HTTP in the registry: a new one is under this test from its registry line on (the fake
provider must then speak its wire)."""


GATEWAY_ENV = {"CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1", "AWS_REGION": "us-east-1",
               "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p"}
"""A cloud platform's provider (a record with an ``endpoint``) reached at the fake as through a gateway that signs for
it: Claude Code's skip-auth variables, and the region and project its paths name."""


def _model(vendor: str, url: str) -> Any:
    """The provider's cheap model at the fake server, under the path its own endpoint has (``/v1`` for OpenAI's)."""
    record = record_for(vendor)
    spec = cheap_spec(f"{vendor}:x", {})
    if record.endpoint is not None:
        assert spec is not None
        return open_model(spec, base_url=url, env=GATEWAY_ENV, max_attempts=1)
    assert spec is not None and record.default_base is not None
    return open_model(spec, base_url=url + urlsplit(record.default_base).path.rstrip("/"), env={}, max_attempts=1)


@pytest.mark.parametrize("vendor", ADAPTERS)
@pytest.mark.parametrize(("lie", "usage"), LIES, ids=[x[0] for x in LIES])
def test_a_reply_with_a_usage_that_cannot_be_billed_stops_the_run_charged_at_its_reservation(
    tmp_path: Path, vendor: str, lie: str, usage: dict[str, Any]
) -> None:
    honest = {"tool_calls": [{"name": "note", "arguments": {"text": "a"}}]}
    script = {"replies": [honest, {**honest, "usage": usage}, honest, {"text": "done"}]}
    path = tmp_path / "t.jsonl"
    with FakeProvider(script) as fp, TranscriptWriter(path) as w:
        r = run(_model(vendor, fp.url), [note], "go", Budget(max_steps=6, max_usd_micros=50_000), transcript=w,
                max_output_tokens=1000)
    assert r.stop_reason == "budget_overrun" and "cannot" in (r.error or "") and "billed" in (r.error or ""), r.error
    recs = list(read_records(path))
    (err,) = [x.payload for x in recs if x.kind == "overrun"]
    first = [x.payload for x in recs if x.kind == "budget"][0]
    assert err["billed_at_reservation"] is True and err["cost_micros"] > 0
    # the lying call is charged what it reserved (the first call's reservation is about the same size)
    assert err["cost_micros"] >= first["cost_micros"]
    assert r.spent_micros == first["cost_micros"] + err["cost_micros"] and 0 < r.spent_micros <= 50_000
    assert r.steps == 1  # nothing after the lie was called
    assert verify_file(path).ok and replay(path).equal


def test_a_primary_reply_naming_a_cheaper_fallback_is_priced_at_the_dearest_of_the_chain(tmp_path: Path) -> None:
    """A reply from the gpt-4o endpoint that says it is gpt-5-nano costs what gpt-4o costs."""
    script = {"replies": [{"text": "cheap, it says", "model": "gpt-5-nano", "usage": {"input_tokens": 10, "output_tokens": 900}}]}
    with FakeProvider(script) as fp:
        m = open_model("openai:gpt-4o", base_url=fp.url + "/v1", fallback="openai:gpt-5-nano", env={}, max_attempts=1)
        r = run(m, [], "go", Budget(max_steps=2, max_usd_micros=100_000), max_output_tokens=1000)
    assert r.stop_reason == "no_tool_calls"
    assert r.spent_micros == -(-(10 * 2_500_000 + 900 * 10_000_000) // 1_000_000)  # gpt-4o's price, not gpt-5-nano's


def _cli(args: list[str], cwd: Path, home: Path, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(home)
    env["OPENAI_API_KEY"] = "sk-test"
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("amount", ["1e400", "1e30", "99999999999"])
def test_a_cap_past_any_real_bound_is_one_line_not_an_internal_error(tmp_path: Path, home: Path, proj: Path, amount: str) -> None:
    p = _cli(["-p", "x", "--model", "openai:gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1", "--max-usd", amount], proj, home)
    assert p.returncode not in (0, 70), p.stderr
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr
    (line,) = [x for x in p.stderr.splitlines() if x.strip()]
    assert "--max-usd" in line and "bound" in line


def test_a_usage_of_1e30_tokens_is_one_line_and_the_session_continues(tmp_path: Path, home: Path, proj: Path) -> None:
    script = {"replies": [{"text": "lies", "usage": {"output_tokens": 1e30}}, {"text": "honest now"}]}
    with FakeProvider(script) as fp:
        url = fp.url + "/v1"
        p = _cli(["-p", "x", "--model", "openai:gpt-4o-mini", "--base-url", url, "--max-usd", "0.05"], proj, home)
        assert p.returncode not in (0, 70), p.stderr
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr and "cannot be billed" in p.stderr
        q = _cli(["-c", "-p", "again", "--model", "openai:gpt-4o-mini", "--base-url", url, "--max-usd", "0.05"], proj, home)
    assert q.returncode == 0 and q.stdout.strip() == "honest now", q.stderr


@pytest.mark.parametrize("usage", [Usage(output_tokens=-10**6), Usage(input_tokens=10**12), Usage(cache_write_tokens=-1)])
def test_the_loop_charges_the_reservation_for_any_models_usage_that_cannot_be_billed(tmp_path: Path, usage: Usage) -> None:
    """Whatever the model (not only the HTTP providers), the loop refuses to settle from such figures."""
    path = tmp_path / "t.jsonl"
    model = FunctionModel(lambda req: ModelReply("x", usage=usage))
    with TranscriptWriter(path) as w:
        r = run(model, [note], "go", Budget(max_steps=3, max_usd_micros=50_000), transcript=w, max_output_tokens=100,
                prices=PriceTable({"scripted": Price(1_000_000, 5_000_000)}))
    assert r.stop_reason == "budget_overrun" and "cannot have been billed" in (r.error or "")
    (err,) = [x.payload for x in read_records(path) if x.kind == "overrun"]
    assert err["billed_at_reservation"] and r.spent_micros == err["cost_micros"] > 0
    assert replay(path).equal


@pytest.mark.parametrize(("usage", "cost"), [(Usage(output_tokens=-5), 10), (Usage(), -5_000), (Usage(input_tokens=10**13), 10)])
def test_a_side_cost_that_cannot_be_billed_stops_the_run_at_its_reservation(tmp_path: Path, usage: Usage, cost: int) -> None:
    """A compaction summary (or any side call) billed with a negative or unbounded figure: charged what it
    reserved, and the run stops before its next call, never with a negative spend."""
    asked: list[int] = []

    def prepare(state: Any, costs: Any) -> None:
        if not asked:
            assert costs.ask("compaction", 2_000, 500) is None
            asked.append(1)
            costs.settle("compaction", usage, cost)
        return None

    steps = [reply("step", [("note", {"text": "a"})], usage=(10, 1)), reply("done", usage=(10, 1))]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(ScriptedModel(steps), [note], "go", Budget(max_steps=4, max_usd_micros=50_000), transcript=w, prepare=prepare)
    assert r.stop_reason == "budget_overrun" and "cannot be settled" in (r.error or ""), r.error
    (side,) = [x.payload for x in read_records(path) if x.kind == "side_cost"]
    assert side["cost_micros"] == 2_000 and r.spent_micros >= 2_000


def test_a_price_past_any_real_bound_is_skipped_with_one_warning(tmp_path: Path, home: Path, proj: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text('{"prices": {"scripted": {"input": 1000000000000000000000000000000, "output": 5}}}')
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi", "usage": [10, 5]}]')
    p = _cli(["-p", "x", "--model", f"scripted:{script}"], proj, home)
    assert p.returncode == 0 and p.stdout == "hi\n", p.stderr
    (line,) = [x for x in p.stderr.splitlines() if "warning" in x]
    assert "prices.scripted" in line and "past any real bound" in line
