"""The demo's replay act: every demo transcript replayed in all three modes, and claims stated.

Kept out of ``replay.py``, which is compiled: a tool defined in a compiled
function has no signature to read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..replay import MODES, ReplayError, replay
from ..tools import Registry, tool
from ..transcript import read_records, verify_file
from . import Claim, DemoRun, demo_tools


def act_replay(out_dir: str) -> list[Any]:
    """Replay every demo transcript in ``out_dir`` in all three modes, and state claims.

    Files another act damaged on purpose (failing verification) must be
    refused; a tampered copy and a changed tool are tried too.
    """
    runs: list[DemoRun] = []
    files = sorted(f for f in os.listdir(out_dir) if f.startswith("demo-") and f.endswith(".jsonl"))
    for fname in files:
        path = os.path.join(out_dir, fname)
        name = "replay " + fname[5:-6]
        report = verify_file(path)
        if not report.ok:
            refused = True
            try:
                replay(path, mode="full")
                refused = False
            except ReplayError:
                pass
            runs.append(DemoRun(name, path, report.count, "refused", 0, False,
                                [Claim("fails verification, so replay refuses it", refused)]))
            continue
        out = os.path.join(out_dir, "replay-" + fname[5:])
        if os.path.exists(out):
            os.remove(out)
        full = replay(path, mode="full", out=out)
        live = replay(path, tools=demo_tools(), mode="live-tools")
        dry = replay(path, mode="dry-run")
        recs = list(read_records(path))
        with open(path, "rb") as a, open(out, "rb") as b:
            same = a.read() == b.read()
        cut = any("no stop record" in w for w in full.warnings)
        tool_steps = {r.payload["step"] for r in recs if r.kind == "tool_result"}
        n_calls = sum(1 for r in recs if r.kind == "tool_result")
        dependent = sum(1 for r in recs if r.kind == "model_turn" and r.payload["step"] - 1 in tool_steps)
        last = full.result
        dr = DemoRun(name, out, full.records, last.stop_reason if last else "none", last.spent_micros if last else 0,
                     verify_file(out).ok)
        dr.claims += [
            Claim("full replay (no tool runs) writes a byte-identical transcript", full.equal and same),
            Claim("live-tools replay, the demo tools really running, is equal", live.equal),
            Claim(f"dry-run skips all {n_calls} tool calls and reports the {dependent} steps that used their output",
                  dry.skipped_calls == n_calls and len(dry.tool_dependent_steps) == dependent and dry.decisions_equal),
            Claim("dry-run is equal exactly when no tool output was recorded", dry.equal == (n_calls == 0)),
        ]
        if cut:
            dr.claims.append(Claim("a run cut off before its stop replays as far as it goes, and says so", full.equal))
        else:
            dr.claims.append(Claim("no warnings", not (full.warnings or live.warnings)))
        runs.append(dr)
    runs += _act_negative(out_dir, demo_tools)
    return runs


def _act_negative(out_dir: str, demo_tools: Callable[[], Registry]) -> list[Any]:
    """A tampered copy is refused; a changed tool warns; a changed loop is named."""
    src = os.path.join(out_dir, "demo-answer.jsonl")
    if not os.path.exists(src):
        return []
    with open(src, "rb") as f:
        lines = f.readlines()
    dr = DemoRun("replay (negative)", src, len(lines), "checks", 0, True)
    tampered = os.path.join(out_dir, "tampered-answer.jsonl")
    with open(tampered, "wb") as w:
        w.writelines([*lines[:3], lines[3].replace(b'"sum":42', b'"sum":43'), *lines[4:]])
    refusals = 0
    for mode in MODES:
        try:
            replay(tampered, tools=demo_tools(), mode=mode)
        except ReplayError:
            refusals += 1
    dr.claims.append(Claim("a tampered copy is refused in all three modes", refusals == 3))

    reg = demo_tools()
    old = reg.get("add")
    assert old is not None

    @tool(read_only=True)
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers (changed: off by one)."""
        return {"sum": a + b + 1}

    changed = Registry([add if t.name == "add" else t for t in reg])
    r = replay(src, tools=changed, mode="live-tools")
    named = any("'add'" in w and old.fingerprint in w and add.fingerprint in w for w in r.warnings)
    dr.claims.append(Claim("a changed tool gives a warning naming it and both fingerprints", named))
    dr.claims.append(Claim("and live-tools names the first differing record", not r.equal and r.first_difference is not None
                           and r.first_difference.kind == "tool_result"))
    return [dr]
