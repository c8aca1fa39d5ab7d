"""A small agent that answers a question about flights, writes its trace, and reruns it offline.

    python examples/flight_agent.py                              # run, write traces/flight-agent.jsonl
    python examples/flight_agent.py --replay traces/flight-agent.jsonl   # redo it: no model, no network

The model is a scripted one by default (no key needed), so the run is the same on every
machine; ``--model openai:gpt-4o-mini`` (with ``OPENAI_API_KEY``) or ``--model
anthropic:claude-haiku-4-5`` asks a real one. Either way the run has a money cap, and its
trace is a hash-chained transcript that ``agentloop verify`` checks and ``--replay`` redoes
byte for byte: the replay feeds the recorded answers back through the same loop and
compares every record it writes with the one on disk.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from agentloop import Budget, TranscriptWriter, run, tool, usd, verify_file

FLIGHTS = [
    {"carrier": "Wizz", "origin": "NAP", "destination": "FCO", "price_eur": 41},
    {"carrier": "ITA", "origin": "NAP", "destination": "FCO", "price_eur": 58},
    {"carrier": "Ryanair", "origin": "NAP", "destination": "CIA", "price_eur": 45},
]


@tool(read_only=True)
def search_flights(origin: str, destination: str) -> list[dict[str, Any]]:
    """Flights between two cities (IATA city codes: NAP is Naples, ROM is Rome), cheapest first."""
    rome = {"FCO", "CIA"} if destination.upper() == "ROM" else {destination.upper()}
    found = [f for f in FLIGHTS if f["origin"] == origin.upper() and f["destination"] in rome]
    return sorted(found, key=lambda f: f["price_eur"])


QUESTION = "How much does the cheapest flight from Naples to Rome cost?"


def scripted_model() -> Any:
    """The answers a model would give, written down: one search, then the answer."""
    from agentloop.testing import ScriptedModel, reply

    return ScriptedModel([
        reply("", [("search_flights", {"origin": "NAP", "destination": "ROM"})], usage=(220, 24)),
        reply("The cheapest is Wizz, at 41 euros.", usage=(330, 12)),
    ])


def run_agent(trace: str, model_spec: str | None) -> int:
    if model_spec is None:
        model, name = scripted_model(), "scripted"
    else:
        from agentloop.providers import open_model

        model, name = open_model(model_spec), model_spec.partition(":")[2]
    os.makedirs(os.path.dirname(trace) or ".", exist_ok=True)
    if os.path.exists(trace):
        os.remove(trace)  # a trace is one run: a new run starts a new file
    with TranscriptWriter(trace) as writer:
        result = run(model, [search_flights], QUESTION, Budget(max_usd_micros=usd("0.15"), max_steps=6),
                     transcript=writer, model_name=name)
    print(result.answer)
    print(f"stopped: {result.stop_reason}; spent {result.spent_micros} micro-dollars; trace: {trace}")
    report = verify_file(trace)
    print(f"trace verifies: {report.ok} ({report.count} records)")
    return 0 if report.ok else 1


def replay_trace(trace: str, mode: str) -> int:
    from agentloop.replay import ReplayError, replay

    try:
        result = replay(trace, tools=[search_flights], mode=mode)
    except ReplayError as exc:
        print(f"cannot replay: {exc}", file=sys.stderr)
        return 2
    print(result.summary(trace))
    return 0 if result.equal else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=os.path.join("traces", "flight-agent.jsonl"), help="where the run's trace goes")
    ap.add_argument("--model", default=None, help="a real model (openai:NAME, anthropic:NAME); scripted by default")
    ap.add_argument("--replay", metavar="TRACE", help="redo the run recorded in TRACE, offline, and compare")
    ap.add_argument("--mode", default="full", choices=["full", "live-tools", "dry-run"], help="replay mode (default full)")
    args = ap.parse_args(argv)
    if args.replay:
        return replay_trace(args.replay, args.mode)
    return run_agent(args.trace, args.model)


if __name__ == "__main__":
    sys.exit(main())
