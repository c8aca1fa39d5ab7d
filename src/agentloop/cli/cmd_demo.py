"""``agentloop demo``: real runs on the scripted model, verified from disk."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, EXIT_PROBLEMS, console

HELP = "run the demo: scripted runs written to disk, verified and checked (exit 0 only if every claim held)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-out", metavar="DIR", help="where transcripts go (default: ./demo-out)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every claim, not just the failed ones")


def main(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from agentloop.budget import format_usd
    from agentloop.demo import run_demo

    con = console()
    runs = run_demo(args.out)
    # fits 80 columns (the longest run name is 20 characters): no borders between columns
    table = Table(title="agentloop demo", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("run", no_wrap=True)
    for col in ("records", "stop reason", "spend", "verified", "claims"):
        table.add_column(col, no_wrap=True, justify="right" if col in ("records", "spend") else "left")
    for r in runs:
        n_ok = sum(c.held for c in r.claims)
        table.add_row(
            r.name, str(r.records), r.stop_reason, format_usd(r.spent_micros),
            "yes" if r.verified else "NO", f"{n_ok}/{len(r.claims)}" + ("" if r.held else " FAILED"),
        )
    con.print(table)
    con.print(f"transcripts in {args.out}/")
    failed = [(r, c) for r in runs for c in r.claims if not c.held]
    if args.verbose:
        for r in runs:
            for c in r.claims:
                con.print(f"  {'ok  ' if c.held else 'FAIL'} {r.name}: {c.text}")
    for r, c in failed:
        con.print(f"[red]claim failed[/red] {r.name}: {c.text}")
    total = sum(len(r.claims) for r in runs)
    con.print(f"{total - len(failed)}/{total} claims held across {len(runs)} runs")
    return EXIT_OK if not failed else EXIT_PROBLEMS
