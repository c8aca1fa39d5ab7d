"""An Opus model that is overloaded (HTTP 529) goes on on Sonnet without --fallback-model, says so, and
the records show which model answered: the production checklist of the agent seed asks for a fallback
model on 529 overloaded, Opus to Sonnet, with a notice to the user.

Against the local fake provider over real HTTP, through the terminal agent and through the registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.budget import Budget
from agentloop.providers import OpenArgs, default_fallback, open_spec
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

OVERLOADED = {"fault": "529", "retry_after": 0}


def _models(fp: FakeProvider) -> list[str]:
    return [str(r["body"].get("model")) for r in fp.requests if r["protocol"]]


def test_an_overloaded_opus_goes_on_on_sonnet_with_a_notice_and_the_record_names_sonnet(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    with FakeProvider({"replies": [OVERLOADED] * 4 + [{"text": "answered after all"}]}) as fp:
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model="anthropic:claude-opus-4-6", base_url=fp.url,
                  env={"ANTHROPIC_API_KEY": "k"}, permission_mode="bypassPermissions")
        shown: list[str] = []
        a.on_notice = shown.append
        try:
            said = a.take_price_notices()
            r = a.ask("hi")
            path = a.session.path
        finally:
            a.close("prompt_input_exit")
        models = _models(fp)
    assert r.stop_reason == "no_tool_calls", r.error
    assert r.answer == "answered after all"
    assert models == ["claude-opus-4-6"] * 4 + ["claude-sonnet-4-6"], "four tries on Opus, then Sonnet"
    assert any("falls back to claude-sonnet-4-6 when overloaded" in n for n in said), said
    assert any("falling back to anthropic:claude-sonnet-4-6" in n for n in shown), shown
    recs = list(read_records(path))
    start = next(x for x in recs if x.kind == "run_start")
    assert "claude-sonnet-4-6" in start.payload["config"]["fallback_prices"], "the chain is recorded with the run"
    turns = [x for x in recs if x.kind == "model_turn"]
    assert turns and turns[-1].payload["reply"]["model"] == "claude-sonnet-4-6", "the record names the model that answered"


def _open(fp: FakeProvider, spec: str, **kw: Any) -> Any:
    notices: list[str] = []
    args = OpenArgs(base_url=fp.url, env={"ANTHROPIC_API_KEY": "k"}, on_notice=notices.append, default_fallback=True,
                    options={"max_attempts": 2, "sleep": lambda s: None, "rand": lambda: 0.0}, **kw)
    return open_spec(spec, args), notices


def test_the_default_fallback_is_for_overload_only_another_failure_stays_on_the_model() -> None:
    with FakeProvider({"replies": [{"fault": "500"}, {"fault": "500"}, {"text": "never sent"}]}) as fp:
        m, _ = _open(fp, "anthropic:claude-opus-4-6")
        r = run(m, [], "hi", Budget(max_steps=2))
        models = _models(fp)
    assert r.stop_reason == "model_error"
    assert models == ["claude-opus-4-6"] * 2, "a server error is not overload: no fallback"


def test_a_fallback_given_replaces_the_default_and_other_models_get_none() -> None:
    with FakeProvider({"replies": [OVERLOADED, OVERLOADED, {"text": "from haiku"}]}) as fp:
        m, notices = _open(fp, "anthropic:claude-opus-4-6", fallback="anthropic:claude-haiku-4-5")
        r = run(m, [], "hi", Budget(max_steps=2))
        models = _models(fp)
    assert r.answer == "from haiku"
    assert models == ["claude-opus-4-6"] * 2 + ["claude-haiku-4-5"]
    assert not any("by default" in n for n in notices)
    assert default_fallback("anthropic:claude-opus-4-5-20251101") == "anthropic:claude-sonnet-4-5"
    assert default_fallback("anthropic:claude-sonnet-4-6") is None
    assert default_fallback("openai:gpt-4o") is None
