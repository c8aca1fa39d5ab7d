"""``agentloop run "task"``: the terminal agent without the REPL (same as ``-p``)."""

from __future__ import annotations

import argparse

from .agent_args import add_agent_options

HELP = "run the agent on one task and exit (the same as agentloop -p TASK)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="what to do ('-' reads it from stdin)")
    add_agent_options(p, suppress=True)


def main(args: argparse.Namespace) -> int:
    from .agent_entry import Signals, run_print

    signals = Signals()
    signals.install()
    return run_print(args, args.task, signals)
