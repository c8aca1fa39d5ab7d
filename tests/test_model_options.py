"""The output budget, extended thinking and reasoning effort the agent asks its model for.

Through the real adapters against the local fake server (both wire protocols). The documented
behaviour followed:

- Claude Code's environment variables (code.claude.com/docs/en/env-vars):
  ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` sets the most output tokens a request asks for,
  ``MAX_THINKING_TOKENS`` the extended-thinking budget (0 turns thinking off);
  its settings (code.claude.com/docs/en/settings) ``alwaysThinkingEnabled``.
- Anthropic's extended thinking (platform.claude.com/docs/en/build-with-claude/extended-thinking):
  ``thinking: {type: "enabled", budget_tokens}``, at least 1,024 and below ``max_tokens``; the
  ``thinking`` blocks of the turn, signatures included, are passed back unchanged with the tool results.
- Each model's "Max output" on its vendor's model page (``prices.BUILTIN_MAX_OUTPUT``).
- Codex's configuration: ``model_reasoning_effort`` defaults to ``medium``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.model_options import OptionError, resolve_options
from agentloop.budget import Budget, usd
from agentloop.prices import BUILTIN_MAX_OUTPUT, documented_max_output
from agentloop.providers import open_model
from agentloop.replay import replay
from agentloop.run import run
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import Registry, tool
from agentloop.transcript import TranscriptWriter, read_records, verify_file


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first
        b: the second
    """
    return a + b


def _bodies(fp: FakeProvider) -> list[dict[str, Any]]:
    return [r["body"] for r in fp.requests if r["protocol"]]


def _ask(tmp_path: Path, spec: str, replies: list[dict[str, Any]], **kw: Any) -> tuple[list[dict[str, Any]], Agent]:
    cwd = tmp_path / "proj"
    cwd.mkdir(exist_ok=True)
    env = kw.pop("env", {})
    with FakeProvider({"replies": replies}) as fp:
        base = fp.url + "/v1" if spec.startswith("openai:") else fp.url
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=spec, base_url=base, env=env, permission_mode="bypassPermissions", **kw)
        try:
            a.ask("hi")
        finally:
            a.close("prompt_input_exit")
        return _bodies(fp), a


def test_every_priced_model_has_a_documented_maximum_output_and_vendor_spellings_find_it() -> None:
    from agentloop.prices import BUILTIN_PRICES

    assert set(BUILTIN_PRICES) == set(BUILTIN_MAX_OUTPUT)
    assert documented_max_output("claude-sonnet-4-5-20250929") == 64_000
    assert documented_max_output("openai/gpt-4o-mini") == 16_384
    assert documented_max_output("llama3.1:8b") is None


@pytest.mark.parametrize(("spec", "field", "want"), [
    ("anthropic:claude-sonnet-4-5", "max_tokens", 64_000),
    ("openai:gpt-4.1", "max_tokens", 32_768),
])
def test_the_request_asks_for_the_models_documented_output_and_the_loop_reserves_it(tmp_path: Path, spec: str, field: str, want: int) -> None:
    bodies, a = _ask(tmp_path, spec, [{"text": "ok"}])
    assert bodies[0][field] == want
    recs = list(read_records(a.session.path))
    start = next(r for r in recs if r.kind == "run_start")
    assert start.payload["config"]["max_output_tokens"] == want
    price = a.prices.resolve(spec.split(":", 1)[1])
    budget = next(r for r in recs if r.kind == "budget")
    assert budget.payload["reserved_micros"] >= want * price.output // 1_000_000  # the reservation holds the whole of it


def test_the_flag_beats_the_variable_which_beats_the_setting(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    settings = {"maxOutputTokens": 7_000}

    def setting(k: str) -> Any:
        return settings.get(k)

    env = {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "9000"}
    assert resolve_options("anthropic:claude-haiku-4-5", max_output_tokens=5_000, setting=setting, env=env).max_output_tokens == 5_000
    assert resolve_options("anthropic:claude-haiku-4-5", setting=setting, env=env).max_output_tokens == 9_000
    assert resolve_options("anthropic:claude-haiku-4-5", setting=setting).max_output_tokens == 7_000
    bodies, _ = _ask(tmp_path, "anthropic:claude-haiku-4-5", [{"text": "ok"}], env=env)
    assert bodies[0]["max_tokens"] == 9_000


def test_a_small_cap_keeps_the_default_to_what_a_quarter_of_it_pays_for_but_never_below_4096() -> None:
    price = 15_000_000  # $15 per million output tokens
    assert resolve_options("anthropic:claude-sonnet-4-5", cap_micros=usd("5"), output_price=price).max_output_tokens == 64_000
    assert resolve_options("anthropic:claude-sonnet-4-5", cap_micros=usd("1"), output_price=price).max_output_tokens == 16_666
    assert resolve_options("anthropic:claude-sonnet-4-5", cap_micros=usd("0.05"), output_price=price).max_output_tokens == 4_096
    assert resolve_options("anthropic:claude-sonnet-4-5", cap_micros=None, output_price=price).max_output_tokens == 64_000
    assert resolve_options("openai:llama3", cap_micros=None).max_output_tokens == 4_096  # unknown model: the old default


def test_a_value_past_the_models_maximum_or_not_a_number_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"--max-output-tokens 100000: more than claude-haiku-4-5's documented maximum output of 64000"):
        resolve_options("anthropic:claude-haiku-4-5", max_output_tokens=100_000)
    with pytest.raises(OptionError, match="CLAUDE_CODE_MAX_OUTPUT_TOKENS 'lots': not a whole number"):
        resolve_options("anthropic:claude-haiku-4-5", env={"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "lots"})
    (tmp_path / "proj").mkdir()
    with pytest.raises(AgentError, match="--effort 'hard': use one of"):
        Agent(cwd=str(tmp_path / "proj"), home=str(tmp_path / "home"), model="openai:gpt-5", base_url="http://127.0.0.1:9/v1", env={}, effort="hard")


def test_thinking_is_asked_for_by_default_on_claude_and_the_flag_or_variable_changes_it(tmp_path: Path) -> None:
    bodies, _ = _ask(tmp_path, "anthropic:claude-sonnet-4-5", [{"text": "ok"}])
    assert bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 31_999}
    assert "temperature" not in bodies[0]
    bodies, _ = _ask(tmp_path, "anthropic:claude-sonnet-4-5", [{"text": "ok"}], thinking="off")
    assert "thinking" not in bodies[0]
    bodies, _ = _ask(tmp_path, "anthropic:claude-sonnet-4-5", [{"text": "ok"}], env={"MAX_THINKING_TOKENS": "5000"})
    assert bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 5_000}
    assert resolve_options("anthropic:claude-sonnet-4-5", env={"MAX_THINKING_TOKENS": "0"}).thinking_budget is None
    assert resolve_options("anthropic:claude-3-5-haiku").thinking_budget is None  # no thinking on that model
    assert resolve_options("anthropic:claude-sonnet-4-5", setting={"alwaysThinkingEnabled": False}.get).thinking_budget is None


def test_a_thinking_budget_shrinks_to_fit_a_smaller_call_and_is_dropped_below_the_minimum() -> None:
    m = open_model("anthropic:claude-sonnet-4-5", base_url="http://127.0.0.1:9", api_key="k", thinking_budget=31_999)
    assert m.thinking_room(64_000) == 31_999  # type: ignore[attr-defined]
    assert m.thinking_room(4_096) == 3_072  # type: ignore[attr-defined]
    assert m.thinking_room(1_200) is None  # type: ignore[attr-defined]


def test_openai_reasoning_models_get_codexs_medium_effort_and_other_models_none(tmp_path: Path) -> None:
    bodies, _ = _ask(tmp_path, "openai:gpt-5", [{"text": "ok"}])
    assert bodies[0]["reasoning_effort"] == "medium" and "thinking" not in bodies[0]
    bodies, _ = _ask(tmp_path, "openai:gpt-4.1", [{"text": "ok"}])
    assert "reasoning_effort" not in bodies[0]
    bodies, _ = _ask(tmp_path, "openai:gpt-5", [{"text": "ok"}], effort="high")
    assert bodies[0]["reasoning_effort"] == "high"


def test_thinking_blocks_are_recorded_sent_back_with_their_signatures_and_replayed_byte_for_byte(tmp_path: Path) -> None:
    thought = "I should add 2 and 3 with the tool."
    replies = [{"thinking": thought, "text": "Adding.", "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "5"}]
    path = tmp_path / "t.jsonl"
    with FakeProvider({"replies": replies}) as fp:
        model = open_model("anthropic:claude-sonnet-4-5", base_url=fp.url, api_key="k", thinking_budget=2_000)
        with TranscriptWriter(path) as w:
            res = run(model, Registry([add]), "What is 2+3?", Budget(max_usd_micros=usd("1"), max_steps=5), transcript=w,
                      max_output_tokens=8_000)
        bodies = _bodies(fp)
    assert res.stop_reason == "no_tool_calls" and res.answer == "5"
    assert bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 2_000}
    sent = bodies[1]["messages"][1]
    assert sent["role"] == "assistant"
    import hashlib

    assert sent["content"][0] == {"type": "thinking", "thinking": thought, "signature": hashlib.sha256(thought.encode()).hexdigest()}
    assert [b["type"] for b in sent["content"]] == ["thinking", "text", "tool_use"]
    turn = next(r for r in read_records(path) if r.kind == "model_turn")
    assert turn.payload["reply"]["reasoning"][0]["thinking"] == thought
    assert verify_file(path).ok
    rep = replay(path, tools=[add])
    assert rep.equal, rep.summary(str(path))


def test_a_streamed_thinking_block_is_observed_when_it_ends_before_the_text_and_the_record_is_unchanged(tmp_path: Path) -> None:
    """The observer hears each thinking block when it ends, before the text after it (the REPL shows it
    there, as Claude Code does); the block is the one the reply's ``reasoning`` records, and what is
    recorded is the same with an observer as without one (the event is never part of the transcript)."""
    from agentloop.events import TextDelta, ThinkingDone

    thought = "Two and three make five; no tool is needed."
    replies = [{"thinking": thought, "text": "It is five, as simple sums go.", "chunk_size": 5}]
    payloads = []
    for observed in (True, False):
        seen: list[object] = []
        path = tmp_path / f"t{observed}.jsonl"
        with FakeProvider({"replies": replies}) as fp:
            model = open_model("anthropic:claude-sonnet-4-5", base_url=fp.url, api_key="k", thinking_budget=2_000)
            with TranscriptWriter(path) as w:
                run(model, Registry([add]), "What is 2+3?", Budget(max_usd_micros=usd("1"), max_steps=5), transcript=w,
                    max_output_tokens=8_000, observer=seen.append if observed else None)
        turn = next(r for r in read_records(path) if r.kind == "model_turn")
        payloads.append(turn.payload["reply"])
        if observed:
            kinds = [type(e).__name__ for e in seen if isinstance(e, (ThinkingDone, TextDelta))]
            assert kinds[0] == "ThinkingDone" and kinds.count("ThinkingDone") == 1 and kinds.count("TextDelta") > 1, kinds
            (done,) = [e for e in seen if isinstance(e, ThinkingDone)]
            assert done.block == turn.payload["reply"]["reasoning"][0] and done.block["thinking"] == thought
    assert payloads[0] == payloads[1]


def test_a_reply_without_thinking_records_no_reasoning_key(tmp_path: Path) -> None:
    bodies, a = _ask(tmp_path, "anthropic:claude-haiku-4-5", [{"text": "ok"}])
    turn = next(r for r in read_records(a.session.path) if r.kind == "model_turn")
    assert "reasoning" not in turn.payload["reply"]


def test_the_command_line_flags_reach_the_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.cli.agent_args import configure_top
    from agentloop.cli.agent_setup import make_agent

    p = argparse.ArgumentParser()
    configure_top(p)
    cwd = tmp_path / "proj"
    cwd.mkdir()
    with FakeProvider({"replies": [{"text": "ok"}]}) as fp:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fp.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        args = p.parse_args(["--model", "anthropic:claude-haiku-4-5", "--cwd", str(cwd), "--max-output-tokens", "12000",
                             "--thinking", "3000", "--permission-mode", "bypassPermissions"])
        a = make_agent(args)
        try:
            a.ask("hi")
        finally:
            a.close("prompt_input_exit")
        body = _bodies(fp)[0]
    assert body["max_tokens"] == 12_000 and body["thinking"] == {"type": "enabled", "budget_tokens": 3_000}
    assert os.environ.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS") is None


def test_reasoning_sent_back_counts_in_the_reservations_input_bound() -> None:
    """The thinking blocks go back with the next request, so the bound of its input holds them."""
    from agentloop.budget import input_bound
    from agentloop.canonical import canonical

    block = {"type": "thinking", "thinking": "x" * 5_000, "signature": "s" * 300}
    plain = {"role": "assistant", "content": "ok"}
    assert input_bound([{**plain, "reasoning": [block]}]) - input_bound([plain]) >= len(canonical([block]))


def test_thinking_is_left_off_where_the_turn_being_continued_did_not_think() -> None:
    """The API refuses thinking when the assistant turn it continues (its tool results, or a prefill)
    does not start with a thinking block (Anthropic, extended thinking with tool use)."""
    from agentloop.events import ModelRequest

    m = open_model("anthropic:claude-sonnet-4-5", base_url="http://127.0.0.1:9", api_key="k", thinking_budget=2_000)
    call = {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}
    unthought = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": "c1", "name": "add", "ok": True, "content": "3"}]
    assert "thinking" not in m.body(ModelRequest(unthought, (), 8_000), 8_000)
    block = {"type": "thinking", "thinking": "t", "signature": "s"}
    thought = [unthought[0], {**unthought[1], "reasoning": [block]}, unthought[2]]
    assert m.body(ModelRequest(thought, (), 8_000), 8_000)["thinking"]["budget_tokens"] == 2_000
    assert m.body(ModelRequest([*unthought, {"role": "user", "content": "next"}], (), 8_000), 8_000)["thinking"]
    assert "thinking" not in m.body(ModelRequest([unthought[0], {"role": "assistant", "content": "The sum"}], (), 8_000), 8_000)


def test_a_resumed_session_sends_the_recorded_thinking_back_and_records_the_options(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    thought = "List the directory first."
    replies = [{"thinking": thought, "tool_calls": [{"name": "LS", "arguments": {"path": "."}}]}, {"text": "empty"}, {"text": "again"}]
    with FakeProvider({"replies": replies}) as fp:
        kw: dict[str, Any] = {"cwd": str(cwd), "home": str(tmp_path / "home"), "model": "anthropic:claude-haiku-4-5", "base_url": fp.url,
                              "env": {}, "permission_mode": "bypassPermissions", "thinking": "2000"}
        a = Agent(**kw)
        try:
            a.ask("what is here?")
        finally:
            a.close("prompt_input_exit")
        b = Agent(**kw, resume=a.session.id)
        try:
            b.ask("and now?")
        finally:
            b.close("prompt_input_exit")
        last = _bodies(fp)[-1]
    sent = [m for m in last["messages"] if m["role"] == "assistant"][0]
    assert sent["content"][0]["type"] == "thinking" and sent["content"][0]["thinking"] == thought
    start = next(r for r in read_records(a.session.path) if r.kind == "session_start")
    assert start.payload["model_options"] == {"max_output_tokens": 64_000, "source": "model table", "thinking_budget": 2_000}


def test_stream_json_shows_the_thinking_blocks_first_as_the_messages_api_does() -> None:
    from agentloop.cli.claude_format import assistant_message
    from agentloop.events import ModelReply, ToolCall

    block = {"type": "thinking", "thinking": "check the file", "signature": "sig"}
    reply = ModelReply("Reading.", (ToolCall("c1", "Read", {"file_path": "a"}),), None, "m", "tool_use", None, (block,))
    content = assistant_message("s", reply, 1)["message"]["content"]
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use"] and content[0] == block
    assert [b["type"] for b in assistant_message("s", ModelReply("hi"), 1)["message"]["content"]] == ["text"]


@pytest.mark.parametrize("vendor", ["anthropic", "openai"])
def test_a_request_past_the_context_window_is_retried_at_once_with_the_output_that_fits(tmp_path: Path, vendor: str) -> None:
    """With the model's full output asked for, input plus max_tokens can pass the window; the API then
    refuses with a 400 that gives the figures (Anthropic: "input length and `max_tokens` exceed context
    limit"; OpenAI-compatible servers: "maximum context length is N tokens"). The call is made again at
    once with what fits, never more than was reserved."""
    spec = "anthropic:claude-sonnet-4-5" if vendor == "anthropic" else "openai:gpt-4.1"
    notices: list[str] = []
    with FakeProvider({"replies": [{"fault": "context", "limit": 20_000, "input_tokens": 12_000}, {"text": "fits"}]}) as fp:
        base = fp.url if vendor == "anthropic" else fp.url + "/v1"
        model = open_model(spec, base_url=base, api_key="k", thinking_budget=4_000, on_notice=notices.append, sleep=lambda _s: None)
        res = run(model, Registry([add]), "hi", Budget(max_usd_micros=usd("2"), max_steps=3), max_output_tokens=16_000)
        bodies = _bodies(fp)
    assert res.stop_reason == "no_tool_calls" and res.answer == "fits"
    field = "max_tokens" if vendor == "anthropic" else "max_completion_tokens" if "max_completion_tokens" in bodies[0] else "max_tokens"
    assert bodies[0][field] == 16_000 and bodies[1][field] == 20_000 - 12_000 - 16
    if vendor == "anthropic":
        assert bodies[1]["thinking"]["budget_tokens"] < bodies[1]["max_tokens"]
    assert any("asking for at most 7984 output tokens" in n for n in notices)


def test_every_settings_key_the_model_options_read_is_parsed_with_the_settings() -> None:
    """The model options read their settings keys through ``AgentSettings.model_setting``, which holds only
    the keys parsed once at start (``MODEL_OPTION_KEYS``): a key read but not parsed would always be None."""
    import re

    from agentloop.agent import model_options
    from agentloop.agent.agent_settings import MODEL_OPTION_KEYS

    src = Path(model_options.__file__).read_text(encoding="utf-8")
    read = set(re.findall(r'setting\("(\w+)"\)', src))
    assert read and read <= set(MODEL_OPTION_KEYS), sorted(read - set(MODEL_OPTION_KEYS))
