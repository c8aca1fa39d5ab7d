"""What providers ask of the loop: a reply cut at max tokens is continued, each continuation
reserved like any turn; a reply from a fallback model is priced at the fallback's price."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agentloop.budget import Budget, Price, cost_micros
from agentloop.events import Usage
from agentloop.replay import config_from_record, replay
from agentloop.run import make_config, run
from agentloop.testing import ScriptedModel, reply
from agentloop.tools import Registry
from agentloop.transcript import MemoryTranscript, TranscriptWriter, read_records, verify_file

PRICE = {"scripted": Price(1_000_000, 2_000_000)}


def _config(budget: Budget, n: int, model: ScriptedModel, max_out: int = 100) -> object:
    cfg = make_config(model, Registry(), budget, prices=PRICE, max_output_tokens=max_out)
    return dataclasses.replace(cfg, max_continuations=n)


def test_a_reply_cut_at_max_tokens_is_continued_and_the_answer_joined(tmp_path: Path) -> None:
    m = ScriptedModel([reply("The quick brown", finish_reason="max_tokens", usage=(10, 100)), reply(" fox.", usage=(30, 3))])
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(m, None, "say it", Budget(max_steps=5), transcript=w, config=_config(Budget(max_steps=5), 2, m))  # type: ignore[arg-type]
    m.check()
    assert (r.stop_reason, r.answer, r.steps) == ("no_tool_calls", "The quick brown fox.", 2)
    # the second request carries the cut text last: the adapters send it as a prefill
    assert m.requests[1].messages[1] == {"role": "assistant", "content": "The quick brown"}
    recs = list(read_records(path))
    assert [x.kind for x in recs].count("continuation") == 1
    assert verify_file(path).ok
    start = next(x for x in recs if x.kind == "run_start")
    assert config_from_record(start.payload).max_continuations == 2
    assert replay(path).equal


def test_without_continuations_a_cut_reply_ends_the_run() -> None:
    m = ScriptedModel([reply("The quick brown", finish_reason="length")])
    r = run(m, None, "say it", Budget(max_steps=5), config=_config(Budget(max_steps=5), 0, m))  # type: ignore[arg-type]
    assert (r.stop_reason, r.answer, r.steps) == ("no_tool_calls", "The quick brown", 1)


def test_continuations_stop_at_their_limit() -> None:
    cut = reply("x", finish_reason="max_tokens")
    m = ScriptedModel([cut, cut, cut])
    r = run(m, None, "go", Budget(max_steps=10), config=_config(Budget(max_steps=10), 2, m))  # type: ignore[arg-type]
    m.check()
    assert (r.stop_reason, r.steps, r.answer) == ("no_tool_calls", 3, "xxx")


def test_a_continuation_is_reserved_and_refused_when_it_would_pass_the_cap() -> None:
    # one call reserves ~ 100 output tokens at 2 USD/Mtok = 200 micro-USD; the cap fits one call, not two
    budget = Budget(max_usd_micros=300)
    m = ScriptedModel([reply("The quick brown", finish_reason="max_tokens", usage=(5, 100))])
    t = MemoryTranscript()
    r = run(m, None, "go", budget, transcript=t, config=_config(budget, 3, m))  # type: ignore[arg-type]
    m.check()
    assert r.stop_reason == "cost_budget" and r.steps == 1
    assert r.spent_micros <= 300


def test_every_reply_of_a_chain_is_priced_at_its_dearest_model_whatever_it_names(tmp_path: Path) -> None:
    cheap, dear = Price(1_000_000, 2_000_000), Price(10_000_000, 20_000_000)
    m = ScriptedModel([reply("a", [("noop", {})], usage=(100, 10), model="cheap-2025-01-01"),
                       reply("b", [("noop", {})], usage=(100, 10), model="dear-model-20260101"),
                       reply("c", usage=(100, 10), model="something-else")])

    def noop() -> str:
        """Nothing."""
        return ""

    from agentloop.tools import tool

    reg = Registry([tool(noop)])
    budget = Budget(max_steps=5)
    cfg = dataclasses.replace(make_config(m, reg, budget, prices={"cheap": cheap}, model_name="cheap"), fallback_prices={"dear-model": dear})
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path) as w:
        r = run(m, reg, "go", budget, transcript=w, config=cfg)
    costs = [x.payload["cost_micros"] for x in read_records(path) if x.kind == "budget"]
    u = Usage(100, 10)
    # the request could have reached the dearer fallback: each reply is priced at it, whatever model it names
    # (a primary's reply claiming the cheap name, the fallback's, an unknown one)
    assert costs == [cost_micros(u, dear)] * 3
    assert r.spent_micros == sum(costs)
    start = next(x for x in read_records(path) if x.kind == "run_start")
    assert config_from_record(start.payload).fallback_prices == {"dear-model": dear}
    assert replay(path, tools=reg).equal
