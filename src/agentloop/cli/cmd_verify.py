"""``agentloop verify FILE...``: check transcripts' hash chains."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ._common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, uncapped_note, uncapped_runs

HELP = "verify the hash chain of transcripts (exit 0 ok, 1 problems, 2 unreadable)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="transcript files (JSON Lines)")
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.add_argument("--anchor", metavar="A", help="also check the file against this anchor (catches a cut-off tail)")
    p.add_argument("--repair", action="store_true", help="cut a torn tail back to the last valid record; the cut bytes go to FILE.torn-OFFSET")
    p.add_argument("--public-key", metavar="K", help="require the anchor to be signed by this key (a path, or a name under $AGENTLOOP_HOME/keys)")


def report_json(path: str, report: Any) -> dict[str, Any]:
    out = {
        "file": path,
        "ok": report.ok,
        "records": report.count,
        "last_hash": report.last_hash,
        "problems": [pr.to_json() for pr in report.problems],
    }
    if hasattr(report, "anchor_json"):
        out["anchor"] = report.anchor_json()
    return out


def _anchored(args: argparse.Namespace) -> Any:
    """The ``verify_with_anchor`` closure for --anchor, or None."""
    from ._common import UserError

    if args.public_key and not args.anchor:
        raise UserError("--public-key needs --anchor")
    if not args.anchor:
        return None
    if len(args.files) != 1:
        raise UserError("--anchor checks one file; give exactly one FILE")
    from agentloop.audit.anchor import AnchorError, load_anchor, load_public_key, verify_with_anchor

    from ._keys import resolve_key

    try:
        anchor = load_anchor(args.anchor)
        key = load_public_key(resolve_key(args.public_key, ".pub")) if args.public_key else None
    except AnchorError as exc:
        raise UserError(str(exc)) from None
    return lambda path: verify_with_anchor(path, anchor, key)


def _repair(args: argparse.Namespace) -> int:
    """``--repair``: cut each file's torn tail, saying exactly what went; exit 0 when all are whole now."""
    from agentloop.audit.repair import RepairRefused, repair_file

    from ._common import UserError

    if args.anchor:
        raise UserError("--repair and --anchor go separately: repair first, then verify against the anchor")
    worst = EXIT_OK
    for path in args.files:
        try:
            res = repair_file(path)
        except RepairRefused as exc:
            print(f"agentloop: error: {exc}", file=sys.stderr)
            worst = max(worst, EXIT_USAGE if "cannot read" in str(exc) else EXIT_PROBLEMS)
            continue
        if args.json:
            print(json.dumps({
                "file": path, "repaired": res.repaired, "kept_records": res.kept_records,
                "kept_bytes": res.kept_bytes, "removed_bytes": res.removed_bytes,
                "removed_lines": res.removed_lines, "partial_tail": res.partial_tail,
                "side_file": res.side_file, "first_problem": res.first_problem,
            }))
        else:
            print(res.describe())
    sys.stdout.flush()
    return worst


def _not_a_transcript(path: str) -> str | None:
    """A note for a person when none of the first 100 lines of ``path`` (within 1 MiB) is
    record-shaped, or None. It changes nothing of the report or the exit code: the spec's
    verdict (section 4) is every problem found, exit 1, whatever the file was meant to be.
    """
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO or a device: verify_file refuses it without opening it
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return None  # verify_file reports what cannot be read
    lines = head.splitlines()[:100]
    if not head or any(line.startswith(b'{"hash":"') for line in lines):
        return None
    return "no line is a canonical record: this may not be an agentloop transcript"


def main(args: argparse.Namespace) -> int:
    from agentloop.transcript import verify_file

    if args.repair:
        return _repair(args)
    anchored = _anchored(args)
    worst = EXIT_OK
    for path in args.files:
        report: Any = verify_file(path) if anchored is None else anchored(path)
        unreadable = next((pr for pr in report.problems if pr.kind == "unreadable"), None)
        code = EXIT_USAGE if unreadable else (EXIT_OK if report.ok else EXIT_PROBLEMS)
        worst = max(worst, code)
        if args.json:
            print(json.dumps({**report_json(path, report), "uncapped_runs": uncapped_runs(path)[0]}))
            continue
        if unreadable is not None:
            # not a transcript at all (missing, a FIFO, a device, a directory): one line
            reason = unreadable.message.removeprefix(f"{path}: ")
            sys.stdout.flush()
            print(f"agentloop: error: cannot read {path}: {reason}", file=sys.stderr)
            continue
        if report.ok:
            extra = ""
            if anchored is not None:
                a = report.anchor_json()
                extra = f"; matches the anchor of {a['size']} records ({a['consistency']}, signature {a['signature']})"
            print(f"{path}: ok, {report.count} records, last hash {report.last_hash[:16]}…{extra}")
            note = uncapped_note(path)
            if note:
                print(note)
        else:
            print(f"{path}: FAILED, {len(report.problems)} problem(s) in {report.count} records")
            alien = _not_a_transcript(path)
            if alien is not None:
                print(f"  ({alien})")
            for pr in report.problems[:50]:
                where = f"record {pr.index}" + (f" (line {pr.line})" if pr.line is not None else "")
                print(f"  {where}: {pr.kind}: {pr.message}")
            if len(report.problems) > 50:
                print(f"  … and {len(report.problems) - 50} more")
    sys.stdout.flush()
    return worst
