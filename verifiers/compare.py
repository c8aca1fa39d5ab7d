"""Run both verifiers (agentloop's and verifiers/node) on files and fail if they disagree.

    .venv/bin/python verifiers/compare.py FILE... [--anchor A]

A file with a sidecar anchor (FILE.anchor.json) is also checked against it.
Agreement means the same record count, last hash and problems (index and
kind, in order); exit 1 on any disagreement, 0 otherwise (whether or not the
files themselves verify).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

NODE = Path(__file__).resolve().parent / "node" / "agentloop-verify.mjs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--anchor", help="check every file against this anchor")
    args = ap.parse_args()
    from agentloop.audit.anchor import load_anchor, verify_with_anchor
    from agentloop.transcript import verify_file

    jobs = []
    for f in args.files:
        jobs.append({"file": f})
        side = args.anchor or f + ".anchor.json"
        if os.path.exists(side):
            jobs.append({"file": f, "anchor": side})
    proc = subprocess.run(["node", str(NODE), "batch"], input="\n".join(json.dumps(j) for j in jobs),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    bad = 0
    for job, line in zip(jobs, proc.stdout.splitlines()):
        js = json.loads(line)
        py = verify_with_anchor(job["file"], load_anchor(job["anchor"])) if "anchor" in job else verify_file(job["file"])
        a = (py.count, py.last_hash, [(p.index, p.kind) for p in py.problems])
        b = (js.get("records"), js.get("last_hash"), [(p["index"], p["kind"]) for p in js.get("problems", [])])
        what = job["file"] + (f" with {job['anchor']}" if "anchor" in job else "")
        if a != b:
            bad += 1
            print(f"DISAGREE {what}: python {a[2][:5]} node {b[2][:5]}")
        else:
            print(f"agree    {what}: {'ok' if py.ok else ', '.join(k for _, k in a[2][:3])}")
    print(f"{len(jobs) - bad}/{len(jobs)} checks agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
