"""``agentloop verify FILE...``: check transcripts' hash chains."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

HELP = "verify the hash chain of transcripts (exit 0 ok, 1 problems, 2 unreadable)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="transcript files (JSON Lines)")
    p.add_argument("--json", action="store_true", help="print one JSON object per file")


def report_json(path: str, report: Any) -> dict[str, Any]:
    return {
        "file": path,
        "ok": report.ok,
        "records": report.count,
        "last_hash": report.last_hash,
        "problems": [pr.to_json() for pr in report.problems],
    }


def main(args: argparse.Namespace) -> int:
    from agentloop.transcript import verify_file

    worst = EXIT_OK
    for path in args.files:
        report = verify_file(path)
        unreadable = any(pr.kind == "unreadable" for pr in report.problems)
        code = EXIT_USAGE if unreadable else (EXIT_OK if report.ok else EXIT_PROBLEMS)
        worst = max(worst, code)
        if args.json:
            print(json.dumps(report_json(path, report)))
            continue
        if report.ok:
            print(f"{path}: ok, {report.count} records, last hash {report.last_hash[:16]}…")
        else:
            print(f"{path}: FAILED, {len(report.problems)} problem(s) in {report.count} records")
            for pr in report.problems[:50]:
                where = f"record {pr.index}" + (f" (line {pr.line})" if pr.line is not None else "")
                print(f"  {where}: {pr.kind}: {pr.message}")
            if len(report.problems) > 50:
                print(f"  … and {len(report.problems) - 50} more")
    sys.stdout.flush()
    return worst
