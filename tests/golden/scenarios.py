"""The runs behind the golden transcripts in this directory (format v1).

``scripts/update-golden`` runs this file to write ``v1-<name>.jsonl``; the
tests run the same functions in memory and compare the bytes, then replay the
committed files. The tools are defined here (not the demo's), so that their
fingerprints change only when this file does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop import (
    Budget,
    LocalLedger,
    MemoryTranscript,
    ModelReply,
    Registry,
    ToolError,
    run,
    tool,
)
from agentloop.budget import Price
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import Sink

PRICES = {"golden-model": Price(input=3_000_000, output=15_000_000, cache_read=300_000, cache_write=3_750_000)}
SALT = b"golden-salt"
FAKE_KEY = "sk-golden-" + "0123456789abcdefABCDEF"


def golden_tools() -> Registry:
    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: the first addend
            b: the second addend
        """
        return a + b

    @tool(read_only=True)
    def lookup(key: str) -> Any:
        """Look a key up in a small table."""
        table: dict[str, Any] = {"pi": 3.14159, "big": 1e21, "tiny": 5e-7, "neg": -0.0, "list": [1, "two", None, True],
                                 "unicode": "héllo wörld ✓ 𝄞", "\u20ac": {"z": 1, "a": 2, "\U0001f600": 3}}
        if key not in table:
            raise ToolError(f"no such key {key!r}")
        return table[key]

    @tool
    def fail() -> None:
        """Always breaks."""
        raise RuntimeError("broken on purpose")

    @tool
    def dump(n: int) -> str:
        """A long output."""
        return "".join(chr(97 + i % 26) for i in range(n))

    @tool(sensitive=True)
    def get_key() -> str:
        """Reads a key (sensitive)."""
        return FAKE_KEY

    @tool(secret_args=("$.token",))
    def call(endpoint: str, token: str) -> dict[str, Any]:
        """Calls a service with a token."""
        return {"endpoint": endpoint, "status": 200}

    return Registry([add, lookup, fail, dump, get_key, call])


def _run(sink: Sink, script: list[Any], budget: Budget, prompt: Any = "Do the task.", **kw: Any) -> Any:
    kw.setdefault("run_id", "golden")
    kw.setdefault("meta", {"started_at": "2026-01-01T00:00:00Z"})
    return run(ScriptedModel(script, name="golden-model"), golden_tools(), prompt, budget, transcript=sink,
               prices=PRICES, **kw)


def answer(sink: Sink) -> None:
    _run(sink, [reply("", [("add", {"a": 40, "b": 2})], usage=(120, 20), step=1), reply("42.", usage=(150, 5))],
         Budget(max_steps=5, max_usd_micros=200_000))


def recover(sink: Sink) -> None:
    _run(sink, [
        reply("", [("multiply", {"a": 6})], step=1),
        reply("", [("add", {"a": "six", "c": 1})], step=2),
        reply("", [("fail", {})], step=3),
        reply("", [("lookup", {"key": "nope"})], step=4),
        reply("", [("lookup", {"key": "pi"}), ("lookup", {"key": "big"}), ("lookup", {"key": "tiny"}),
                   ("lookup", {"key": "neg"}), ("lookup", {"key": "list"}), ("lookup", {"key": "unicode"}),
                   ("lookup", {"key": "\u20ac"})], step=5),
        reply("Done: ✓"),
    ], Budget(max_steps=10))


def step_budget(sink: Sink) -> None:
    _run(sink, [reply("", [("add", {"a": i, "b": i})], step=i) for i in (1, 2, 3)], Budget(max_steps=3))


def token_budget(sink: Sink) -> None:
    _run(sink, [reply("", [("add", {"a": 1, "b": 1})], usage=(900, 200))], Budget(max_tokens=1000))


def cost_budget(sink: Sink) -> None:
    two = [reply("", [("add", {"a": i, "b": 0})], usage=(1000, 1000), step=i) for i in (1, 2)]
    _run(sink, two, Budget(max_usd_micros=60_000), max_output_tokens=2000)


def budget_overrun(sink: Sink) -> None:
    # a provider that reports far past the bound (100,000 input tokens for a short prompt): no one can have billed
    # that, so the call is charged its reservation and the run stops as an overrun
    _run(sink, [reply("", [("add", {"a": 1, "b": 1})], usage=(100_000, 10), step=1), reply("2")], Budget(max_usd_micros=900_000),
         max_output_tokens=200)


def ledger_refused(sink: Sink) -> None:
    script = [reply("", [("add", {"a": i, "b": 0})], usage=(100, 10), step=i) for i in range(1, 6)]
    _run(sink, script, Budget(max_steps=9), ledger=LocalLedger(4_000), max_output_tokens=200)


def sentinel(sink: Sink) -> None:
    _run(sink, [reply("FINISHED", [("add", {"a": 1, "b": 2})])], Budget.unlimited(), sentinel="FINISHED")


def loop_detected(sink: Sink) -> None:
    _run(sink, [reply("", [("add", {"a": 1, "b": 1})], step=i) for i in (1, 2, 3)], Budget(max_steps=10), loop_threshold=3)


def model_error(sink: Sink) -> None:
    _run(sink, [reply("", [("add", {"a": 1, "b": 1})], step=1), ConnectionError("HTTP 503 from the provider")],
         Budget(max_steps=5))


def interrupted(sink: Sink) -> None:
    def ctrl_c(request: Any) -> ModelReply:
        raise KeyboardInterrupt

    _run(sink, [reply("", [("add", {"a": 1, "b": 1})], step=1), ctrl_c], Budget(max_steps=5))


def redacted(sink: Sink) -> None:
    _run(sink, [
        reply("", [("get_key", {})], step=1),
        reply("", [("call", {"endpoint": "/v1/items", "token": FAKE_KEY})], step=2),
        reply("ok"),
    ], Budget(max_steps=5), redaction_salt=SALT)


def truncated(sink: Sink) -> None:
    _run(sink, [reply("", [("dump", {"n": 1000})], step=1), reply("long")], Budget(max_steps=3), max_value_bytes=256)


def raw(sink: Sink) -> None:
    body = '{"id": "msg_01", "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 10, "output_tokens": 2}}'
    _run(sink, [ModelReply(text="hi", raw=body, finish_reason="end_turn", model="golden-model-2026")], Budget(max_steps=2),
         record_raw=True)


def session(sink: Sink) -> None:
    sink.append("session_start", {"session": "golden", "cwd_hash": "0123456789abcdef"})
    first = _run(sink, [reply("", [("add", {"a": 1, "b": 2})], step=1), reply("3")], Budget(max_steps=5), "1 + 2?",
                 run_id="golden-1")
    sink.append("hook", {"event": "Stop", "exit_code": 0})
    msgs = [*first.messages, {"role": "user", "content": "and 3 + 4?"}]
    _run(sink, [reply("", [("add", {"a": 3, "b": 4})], step=1), reply("7")], Budget(max_steps=5), msgs, run_id="golden-2")
    sink.append("session_end", {"reason": "exit"})


def side_costs(sink: Sink) -> None:
    """Costs beside the model turn, as the loop takes them (transcript-format 5.2): before each call a side call
    is asked for and billed (the second one past what the cap leaves: refused), and the first turn's tool call
    settles a child's spend while it runs."""
    from agentloop.events import Usage
    from agentloop.run import SideCosts

    reg = golden_tools()
    held: list[SideCosts] = []

    def prepare(state: Any, record: Any) -> None:
        held[:] = [record]
        n = state.steps
        if record.ask("summary", 20_000 if n != 1 else 400_000, 600) is None:
            record.settle("summary", Usage(400, 30), 1650)

    def execute(calls: Any) -> list[Any]:
        held[0].settle("subagent", Usage(2000, 100), 7500, reserved_micros=100_000, reserved_tokens=None)
        return [reg.invoke(c) for c in calls]

    _run(sink, [reply("", [("add", {"a": 2, "b": 2})], usage=(120, 20), step=1), reply("4.", usage=(150, 5))],
         Budget(max_steps=5, max_usd_micros=300_000), prepare=prepare, executor=execute, max_output_tokens=1000)


SCENARIOS: dict[str, Callable[[Sink], None]] = {
    f.__name__.replace("_", "-"): f
    for f in (answer, recover, step_budget, token_budget, cost_budget, budget_overrun, ledger_refused, sentinel, loop_detected,
              model_error, interrupted, redacted, truncated, raw, session, side_costs)
}


def render(name: str) -> bytes:
    t = MemoryTranscript()
    SCENARIOS[name](t)
    return t.getvalue()


def main() -> int:
    here = Path(__file__).resolve().parent
    for old in here.glob("v1-*.jsonl"):
        if old.stem[3:] not in SCENARIOS:
            old.unlink()
            print(f"removed {old.name}")
    for name in SCENARIOS:
        path = here / f"v1-{name}.jsonl"
        data = render(name)
        changed = not path.exists() or path.read_bytes() != data
        path.write_bytes(data)
        n = data.count(b"\n")
        print(f"{'wrote' if changed else 'same '} {path.name} ({n} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
