"""Context management: masking, the tool-result budget, warnings, compaction and its circuit breaker."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agentloop import Budget, Price, TranscriptWriter, run, tool
from agentloop.agent.context.compaction import (
    COMPACT_PROMPT,
    EVICT_PREFIX,
    MASK_PREFIX,
    SUMMARY_PREFIX,
    Compactor,
    check_pairing,
    context_window,
    estimate_tokens,
    reapply,
)
from agentloop.agent.hooks.runner import HookRunner
from agentloop.config.settings import SettingsSource
from agentloop.events import Message, ModelReply, ModelRequest, ToolCall, ToolResult, Usage
from agentloop.loop import recount_bound, tool_message
from agentloop.testing import FunctionModel
from agentloop.transcript import read_records, verify_file

PRICE = {"m": Price(input=1_000_000, output=2_000_000)}  # $1 / $2 per Mtok


def is_summary_request(req: ModelRequest) -> bool:
    return not req.tools and bool(req.messages) and str(req.messages[0].get("content", "")).startswith(COMPACT_PROMPT)


def tool_msg(cid: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": cid, "name": "t", "ok": True, "content": content}


def convo(n: int, size: int) -> list[Message]:
    msgs: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "do it"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "name": "t", "arguments": {"i": i}}]})
        msgs.append(tool_msg(f"c{i}", "y" * size))
    return msgs


class Session:
    """A scripted agent session: each model turn calls ``big`` with new arguments; summaries on request."""

    def __init__(self, turns: int, output_chars: int, *, summary_fails: int = 0, summary: str = "SUMMARY: did things"):
        self.turns = turns
        self.output_chars = output_chars
        self.main_calls = 0
        self.summary_calls = 0
        self.summary_fails = summary_fails
        self.summary = summary
        self.problems: list[str] = []
        self.max_request_chars = 0
        self.requests_seen = 0

    def __call__(self, req: ModelRequest) -> ModelReply:
        if is_summary_request(req):
            self.summary_calls += 1
            if self.summary_calls <= self.summary_fails:
                raise RuntimeError("summary model overloaded")
            return ModelReply(text=self.summary, usage=Usage(100, 20))
        self.main_calls += 1
        self.requests_seen += 1
        p = check_pairing(req.messages)
        if p:
            self.problems += [f"request {self.main_calls}: {x}" for x in p]
        self.max_request_chars = max(self.max_request_chars, sum(len(str(m.get("content", ""))) for m in req.messages))
        if self.main_calls > self.turns:
            return ModelReply(text="all done", usage=Usage(10, 5))
        return ModelReply(tool_calls=(ToolCall(f"call_{self.main_calls}", "big", {"n": self.main_calls}),), usage=Usage(10, 5))


def big_tool(size: int) -> Any:
    @tool(read_only=True)
    def big(n: int) -> str:
        """Return a large output."""
        return (f"line {n} " + "z" * 90 + "\n") * (size // 100)

    return big


# --- measuring ----------------------------------------------------------------------


def test_estimates_are_len_over_4_and_windows_are_known_per_model() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 396}]) == 100
    assert context_window("claude-sonnet-4-6") == 200_000
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("something-else") == 128_000


def test_an_exact_counter_is_used_once_past_the_first_warning_level() -> None:
    calls: list[int] = []

    def counter(msgs: Any) -> int:
        calls.append(len(msgs))
        return 7

    cm = Compactor(window=1000, counter=counter)
    assert cm.tokens([{"role": "user", "content": "x" * 400}]) == 101  # under 80%: the estimate
    assert calls == []
    assert cm.tokens([{"role": "user", "content": "x" * 3600}]) == 7  # past 80%: counted exactly
    assert calls == [1]
    cm.counter = lambda msgs: None  # a provider that cannot count: the estimate
    assert cm.tokens([{"role": "user", "content": "x" * 3600}]) == 901


# --- masking and the tool-result budget ----------------------------------------------


def test_old_large_tool_outputs_are_masked_keeping_the_last_five_whole() -> None:
    msgs = convo(8, 3000)
    msgs[3]["content"] = "short output"  # small ones stay
    cm = Compactor(window=10**6, transcript_path="/s/sess.jsonl")
    masked, evicted = cm.mask(msgs)
    assert masked == ["c1", "c2"] and evicted == []
    tools = [m for m in msgs if m["role"] == "tool"]
    assert tools[0]["content"] == "short output"
    assert tools[1]["content"].startswith(MASK_PREFIX + "3000 chars;")
    assert "/s/sess.jsonl" in tools[1]["content"] and "call c1" in tools[1]["content"]
    assert all(t["content"] == "y" * 3000 for t in tools[3:])
    assert cm.mask(msgs) == ([], [])  # idempotent
    assert check_pairing(msgs) == []


def test_outputs_at_the_threshold_are_not_masked() -> None:
    msgs = convo(7, 2000)
    assert Compactor(window=10**6).mask(msgs) == ([], [])


def test_the_tool_result_budget_evicts_the_oldest_content_past_the_cap() -> None:
    msgs = convo(6, 1500)  # under the mask threshold: only the budget acts
    cm = Compactor(window=10**6, tool_result_cap=5000)
    masked, evicted = cm.mask(msgs)
    assert masked == [] and evicted == ["c0", "c1", "c2"]  # 3 x 1500 + 3 placeholders fit in 5000
    tools = [m for m in msgs if m["role"] == "tool"]
    assert all(t["content"].startswith(EVICT_PREFIX + "1500 chars") for t in tools[:3])
    assert all(t["content"] == "y" * 1500 for t in tools[3:])
    assert sum(len(t["content"]) for t in tools) <= 5000


def test_the_transcript_keeps_every_output_whole_while_the_model_sees_placeholders(tmp_path: Path) -> None:
    sess = Session(turns=12, output_chars=5000)
    cm = Compactor(window=10**6, mask_at=0.0, transcript_path=str(tmp_path / "t.jsonl"))  # masking at any fill
    seen: list[list[str]] = []

    def model(req: ModelRequest) -> ModelReply:
        seen.append([str(m["content"]) for m in req.messages if m["role"] == "tool"])
        return sess(req)

    with TranscriptWriter(tmp_path / "t.jsonl") as w:
        r = run(FunctionModel(model, name="m"), [big_tool(5000)], "go", Budget(max_steps=50), transcript=w, prices=PRICE, prepare=cm.prepare)
    assert r.stop_reason == "no_tool_calls"
    last = seen[-1]
    assert len(last) == 12
    assert all(c.startswith(MASK_PREFIX) for c in last[:7]) and all(len(c) > 4800 and "z" * 90 in c for c in last[7:])
    results = [rec.payload for rec in read_records(str(tmp_path / "t.jsonl")) if rec.kind == "tool_result"]
    assert len(results) == 12 and all(len(x["content"]) > 4800 for x in results)
    ctx = [rec.payload for rec in read_records(str(tmp_path / "t.jsonl")) if rec.kind == "context"]
    assert sum(len(x["masked"]) for x in ctx) == 7
    assert verify_file(str(tmp_path / "t.jsonl")).ok


# --- warnings -----------------------------------------------------------------------


def test_warnings_fire_once_at_80_and_95_percent() -> None:
    notes: list[str] = []
    records: list[tuple[str, Any]] = []
    cm = Compactor(window=1000, notify=notes.append, compact_at=2.0)

    class S:
        steps = 1
        tool_chars = 0
        messages: list[Message] = [{"role": "user", "content": "x" * 3300}]

    st = S()
    cm.prepare(st, lambda k, p: records.append((k, p)))
    assert [p["warning"] for k, p in records if k == "context"] == [0.8]
    cm.prepare(st, lambda k, p: records.append((k, p)))  # still past 80%: no repeat
    st.messages[0]["content"] = "x" * 3900
    cm.prepare(st, lambda k, p: records.append((k, p)))
    assert [p["warning"] for k, p in records if k == "context"] == [0.8, 0.95]
    assert len(notes) == 2 and "% full" in notes[0]


# --- compaction ---------------------------------------------------------------------


def script(tmp: Path, name: str, body: str) -> str:
    p = tmp / name
    p.write_text("#!/usr/bin/env bash\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_compaction_is_automatic_at_90_percent_with_a_model_summary_and_hooks(tmp_path: Path) -> None:
    log = tmp_path / "hooks.log"
    pre = script(tmp_path, "pre.sh", f"cat >> {log}; echo >> {log}\n")
    post = script(tmp_path, "post.sh", f"cat >> {log}; echo >> {log}\n")
    hooks = HookRunner.from_settings(
        [SettingsSource("s.json", "project", {"hooks": {
            "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": pre}]}],
            "PostCompact": [{"hooks": [{"type": "command", "command": post}]}],
        }})],
        project_dir=str(tmp_path),
    )
    sess = Session(turns=40, output_chars=1500)
    model = FunctionModel(sess, name="m")
    cm = Compactor(window=6000, summarizer=model, hooks=hooks, tool_result_cap=10**9)
    out = tmp_path / "t.jsonl"
    with TranscriptWriter(out) as w:
        r = run(model, [big_tool(1500)], "go", Budget(max_steps=100), transcript=w, prices=PRICE, prepare=cm.prepare)
    assert r.stop_reason == "no_tool_calls" and sess.problems == []
    recs = list(read_records(str(out)))
    comps = [x.payload for x in recs if x.kind == "compaction"]
    assert len(comps) >= 2 and all(c["status"] == "compacted" and c["trigger"] == "auto" for c in comps)
    assert all(c["tokens_after"] < c["tokens_before"] for c in comps)
    assert sess.summary_calls == len(comps)
    events = [json.loads(x) for x in log.read_text().split("\n") if x.strip()]
    assert [e["hook_event_name"] for e in events[:2]] == ["PreCompact", "PostCompact"]
    assert events[0]["trigger"] == "auto" and events[1]["compact_summary"] == "SUMMARY: did things"
    hook_recs = [x.payload["event"] for x in recs if x.kind == "hook"]
    assert hook_recs.count("PreCompact") == hook_recs.count("PostCompact") == len(comps)
    # the summary's cost is inside the run's spend
    turn_costs = sum(x.payload["cost_micros"] for x in recs if x.kind == "budget")
    summary_costs = sum(c["call"]["cost_micros"] for c in comps)
    assert summary_costs > 0 and r.spent_micros == turn_costs + summary_costs


def test_a_pre_compact_hook_exiting_2_blocks_compaction(tmp_path: Path) -> None:
    deny = script(tmp_path, "deny.sh", "echo 'not now' >&2; exit 2\n")
    hooks = HookRunner.from_settings(
        [SettingsSource("s.json", "project", {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": deny}]}]}})],
        project_dir=str(tmp_path),
    )
    summarizer = FunctionModel(lambda r: ModelReply(text="S"), name="m")
    cm = Compactor(window=3000, summarizer=summarizer, hooks=hooks)
    msgs = convo(10, 1000)
    records: list[tuple[str, Any]] = []
    res = cm.compact(msgs, lambda k, p: records.append((k, p)), account=_Free(), price=PRICE["m"], trigger="manual")
    assert res.status == "blocked" and res.error == "not now" and summarizer.calls == 0
    assert len(msgs) == 22 and cm.failures == 0


def test_manual_compaction_keeps_calls_with_their_results_and_the_system_prompt() -> None:
    cm = Compactor(window=20_000, summarizer=FunctionModel(lambda r: ModelReply(text="the summary"), name="m"), keep_fraction=0.2)
    msgs = convo(30, 1000)
    records: list[tuple[str, Any]] = []
    res = cm.compact(msgs, lambda k, p: records.append((k, p)), account=_Free(), price=PRICE["m"], custom_instructions="focus on tests")
    assert res.status == "compacted" and res.trigger == "manual"
    assert msgs[0] == {"role": "system", "content": "sys"}
    assert msgs[1]["role"] == "user" and msgs[1]["content"] == SUMMARY_PREFIX + "the summary"
    assert msgs[2]["role"] == "assistant"
    assert check_pairing(msgs) == []
    assert 1 + res.summarized_messages + len(msgs[2:]) == 62  # system + summarised + kept
    assert records[-1][0] == "compaction" and records[-1][1]["status"] == "compacted"


def test_check_pairing_finds_orphans_and_unanswered_calls() -> None:
    msgs = convo(3, 10)
    assert check_pairing(msgs) == []
    assert "orphaned" in check_pairing(msgs[:2] + msgs[3:])[0]  # the negative control: a result without its call
    assert "never answered" in check_pairing(msgs[:3] + msgs[4:])[0]


class _Free:
    charged_as = None

    def ask(self, purpose: str, micros: int, tokens: int) -> str | None:
        return None

    def settle(self, *a: Any) -> None:
        pass


def test_three_failures_in_a_row_turn_compaction_off_for_the_session_with_a_notice(tmp_path: Path) -> None:
    notes: list[str] = []
    sess = Session(turns=30, output_chars=1500, summary_fails=10**6)
    model = FunctionModel(sess, name="m")
    cm = Compactor(window=6000, summarizer=model, notify=notes.append, tool_result_cap=10**9)
    out = tmp_path / "t.jsonl"
    with TranscriptWriter(out) as w:
        r = run(model, [big_tool(1500)], "go", Budget(max_steps=100), transcript=w, prices=PRICE, prepare=cm.prepare)
    assert r.stop_reason == "no_tool_calls"
    assert sess.summary_calls == 3  # never tried again once off
    assert cm.disabled
    comps = [x.payload for x in read_records(str(out)) if x.kind == "compaction"]
    assert [c["status"] for c in comps] == ["failed", "failed", "failed", "disabled"]
    assert "overloaded" in comps[0]["error"]
    assert any("off for the rest of this session" in n for n in notes)


def test_a_success_resets_the_failure_count() -> None:
    answers = iter([RuntimeError("x"), RuntimeError("y"), "ok", RuntimeError("z"), RuntimeError("w")])

    def summarise(req: ModelRequest) -> ModelReply:
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return ModelReply(text=a)

    cm = Compactor(window=20_000, summarizer=FunctionModel(summarise, name="m"))
    statuses = []
    for _ in range(5):
        statuses.append(cm.compact(convo(30, 1000), lambda k, p: None, account=_Free(), price=PRICE["m"]).status)
    assert statuses == ["failed", "failed", "compacted", "failed", "failed"] and not cm.disabled


def test_compaction_is_skipped_when_the_budget_has_no_room_for_the_summary(tmp_path: Path) -> None:
    sess = Session(turns=40, output_chars=1500)
    model = FunctionModel(sess, name="m")
    cm = Compactor(window=6000, summarizer=model, summary_max_tokens=100_000, tool_result_cap=10**9)
    out = tmp_path / "t.jsonl"
    with TranscriptWriter(out) as w:
        run(model, [big_tool(1500)], "go", Budget(max_steps=100, max_usd_micros=150_000), transcript=w, prices=PRICE, prepare=cm.prepare)
    comps = [x.payload for x in read_records(str(out)) if x.kind == "compaction" and x.payload["status"] == "failed"]
    assert comps and "budget has no room" in comps[0]["error"]
    assert sess.summary_calls == 0


# --- long sessions ------------------------------------------------------------------


@pytest.mark.parametrize("turns", [520, *([int(os.environ.get("AGENTLOOP_LONG_TURNS", "5000"))] if os.environ.get("AGENTLOOP_LONG") else [])])
def test_a_long_session_crosses_compaction_many_times_without_orphans_and_verifies(tmp_path: Path, turns: int) -> None:
    sess = Session(turns=turns, output_chars=8000)
    model = FunctionModel(sess, name="m")
    cm = Compactor(window=16_000, summarizer=model, transcript_path=str(tmp_path / "t.jsonl"))
    out = tmp_path / "t.jsonl"
    with TranscriptWriter(out) as w:
        r = run(model, [big_tool(8000)], "go", Budget(max_steps=turns + 5), transcript=w, prices=PRICE, prepare=cm.prepare)
    assert r.stop_reason == "no_tool_calls" and r.steps == turns + 1
    assert sess.problems == []
    assert cm.compactions >= 5
    # what the model is sent stays inside the window
    assert sess.max_request_chars // 4 < 16_000
    rep = verify_file(str(out))
    assert rep.ok and rep.count > 3 * turns
    outs = [x.payload for x in read_records(str(out)) if x.kind == "tool_result"]
    assert len(outs) == turns and all(len(x["content"]) > 7500 for x in outs)


def test_prepare_keeps_the_loops_running_character_count_exact(tmp_path: Path) -> None:
    sess = Session(turns=150, output_chars=3000)
    model = FunctionModel(sess, name="m")
    cm = Compactor(window=3000, summarizer=model, tool_result_cap=6000)
    checked = []

    def prepare(state: Any, record: Any) -> None:
        cm.prepare(state, record)
        kept = state.messages_bound
        recount_bound(state)
        checked.append(kept == state.messages_bound)

    r = run(model, [big_tool(3000)], "go", Budget(max_steps=200), prices=PRICE, prepare=prepare)
    assert r.stop_reason == "no_tool_calls" and cm.compactions >= 2
    assert len(checked) == 151 and all(checked)


def test_the_messages_the_model_saw_can_be_rebuilt_from_the_transcript_alone(tmp_path: Path) -> None:
    sess = Session(turns=120, output_chars=3000)
    sent: list[list[Message]] = []

    def model_fn(req: ModelRequest) -> ModelReply:
        if not is_summary_request(req):
            sent.append([dict(m) for m in req.messages])
        return sess(req)

    model = FunctionModel(model_fn, name="m")
    out = tmp_path / "t.jsonl"
    cm = Compactor(window=3000, summarizer=model, tool_result_cap=6000, transcript_path=str(out))
    with TranscriptWriter(out) as w:
        run(model, [big_tool(3000)], "go", Budget(max_steps=200), transcript=w, prices=PRICE, prepare=cm.prepare)
    assert cm.compactions >= 2
    def rebuild(apply: bool) -> list[list[Message]]:
        msgs: list[Message] = []
        out: list[list[Message]] = []
        for rec in read_records(str(out_path)):
            p = rec.payload
            if rec.kind == "run_start":
                msgs = [dict(m) for m in p["messages"]]
            elif rec.kind == "model_turn":
                out.append([dict(m) for m in msgs])
                reply = ModelReply.from_json(p["reply"])
                m: Message = {"role": "assistant", "content": reply.text}
                if reply.tool_calls:
                    m["tool_calls"] = [c.to_json() for c in reply.tool_calls]
                msgs.append(m)
            elif rec.kind == "tool_result":
                msgs.append(tool_message(ToolResult.from_json(p)))
            elif apply:
                reapply(msgs, rec.kind, p)
        return out

    out_path = out
    rebuilt = rebuild(True)
    assert len(rebuilt) == len(sent) == 121
    assert rebuilt == sent
    assert rebuild(False) != sent  # the negative control: without the context records it differs


def test_a_session_with_masking_and_compaction_replays_byte_for_byte(tmp_path: Path) -> None:
    from agentloop.replay import replay

    sess = Session(turns=60, output_chars=3000)
    model = FunctionModel(sess, name="m")
    out = tmp_path / "t.jsonl"
    cm = Compactor(window=3000, summarizer=model, tool_result_cap=6000, transcript_path=str(out))
    with TranscriptWriter(out) as w:
        run(model, [big_tool(3000)], "go", Budget(max_steps=100), transcript=w, prices=PRICE, prepare=cm.prepare)
    kinds = {r.kind for r in read_records(str(out))}
    assert cm.compactions >= 1 and {"context", "compaction"} <= kinds
    res = replay(str(out))
    assert res.equal, res.first_difference
