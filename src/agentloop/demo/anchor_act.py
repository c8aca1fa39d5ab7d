"""The demo's anchor act: anchor a run, cut its tail, catch the cut, grow the file."""

from __future__ import annotations

import os
from typing import Any

from ..audit.anchor import anchor_path_for, attach_tree, verify_with_anchor, write_anchor_for
from ..transcript import TranscriptWriter


def act_anchor(out_dir: str) -> list[Any]:
    """The demo: anchor a run when it stops, cut its tail, and catch the cut.

    A chain alone cannot see a missing tail; the anchor names the missing range.
    The file then grows by a second run, and the old anchor still checks it by
    consistency proof.
    """
    import shutil

    from ..budget import Budget, usd
    from ..providers.scripted import ScriptedModel
    from ..run import run
    from ..transcript import verify_file
    from . import Claim, DemoRun, demo_tools, reply

    path = os.path.join(out_dir, "demo-anchors.jsonl")
    cut = os.path.join(out_dir, "demo-anchors-cut.jsonl")
    for p in (path, cut, anchor_path_for(path)):
        if os.path.exists(p):
            os.remove(p)
    script = [reply("", [("lookup", {"key": "answer"})], step=1), reply("The answer is 42.")]
    budget = Budget(max_steps=5, max_usd_micros=usd("0.05"))
    with TranscriptWriter(path, durability="fsync") as w:
        tree = attach_tree(w)
        res = run(ScriptedModel(script), demo_tools(), "Look up the answer.", budget, transcript=w, run_id="demo-anchors")
        anchor = write_anchor_for(path, tree=tree)
    full = verify_with_anchor(path, anchor)

    with open(path, "rb") as f:
        lines = f.readlines()
    keep = len(lines) - 2
    with open(cut, "wb") as f:
        f.writelines(lines[:keep])
    plain = verify_file(cut)
    caught = verify_with_anchor(cut, anchor)
    first = caught.problems[0] if caught.problems else None

    grown = os.path.join(out_dir, "demo-anchors-grown.jsonl")
    shutil.copyfile(path, grown)
    with TranscriptWriter(grown, resume=True) as w:
        gtree = attach_tree(w, anchor)
        run(ScriptedModel([reply("Still 42.")]), demo_tools(), "And again?", budget, transcript=w, run_id="demo-anchors-2")
    later = verify_with_anchor(grown, anchor)

    dr = DemoRun("anchors", path, full.count, res.stop_reason, res.spent_micros, full.ok)
    dr.claims.append(Claim("the run anchored itself when it stopped, and the anchor matches", full.ok and anchor.size == len(lines)))
    dr.claims.append(Claim(f"with its last 2 records cut off, the chain alone still verifies ({plain.count} records)", plain.ok))
    dr.claims.append(Claim(
        f"with the anchor, the cut is caught and named: records {keep}..{len(lines) - 1} are missing",
        first is not None and first.kind == "truncated" and first.index == keep and f"records {keep}..{len(lines) - 1}" in first.message))
    dr.claims.append(Claim("after a second run, the old anchor checks the grown file by consistency proof",
                           later.ok and later.consistency == "proved" and later.leaves > anchor.size))
    dr.claims.append(Claim("the resumed writer's tree, restored from the anchor's frontier, gives the grown file's root",
                           gtree.root().hex() == later.root))
    return [dr]
