"""``agentloop sessions``: the sessions of this directory, newest first."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._common import EXIT_OK
from .terminal_text import json_line, neutral

if TYPE_CHECKING:
    from agentloop.agent.session.store import SessionSummary

HELP = "list this directory's sessions: date, first prompt, turns, cost, verified"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", dest="sessions_cwd", default=None, metavar="DIR", help="list the sessions of DIR instead")
    p.add_argument("--json", action="store_true", help="one JSON object per session")
    p.add_argument("-n", "--limit", type=int, default=50, metavar="N", help="show at most N (default 50)")


def render(summaries: Sequence[SessionSummary], *, con: Any | None = None, cols: int | None = None) -> None:
    """Print summaries as aligned columns (shared with the REPL's /sessions).

    Plain text, never wrapped: each row is one line. On a terminal (``cols``)
    the first prompt is cut to what the row leaves of the width; elsewhere to
    60 characters.
    """
    from agentloop.budget import format_usd

    room = 60 if cols is None else max(8, cols - 72)
    label = "first prompt" if room >= len("first prompt") else "prompt"
    out = [f"{'id':<22}  {'started':<16}  {'turns':>5}  {'cost':>10}  {'verified':<8}  {label}"]
    for s in summaries:
        prompt = neutral(" ".join(s.first_prompt.split()))  # a piped prompt's bytes cannot steer the terminal
        prompt = prompt[: room - 1] + "…" if len(prompt) > room else prompt
        mark = "ok" if s.verified else "NO"
        started = s.started.replace("T", " ").rstrip("Z")[:16]
        out.append(f"{s.id:<22}  {started:<16}  {s.turns:>5}  {format_usd(s.spent_micros):>10}  {mark:<8}  {prompt}")
        if not s.verified:
            out.append(f"{'':<22}  problem: {neutral(str(s.problem))}")
        if s.uncapped:
            out.append(f"{'':<22}  no spend cap (unlimited) in {s.uncapped} of {s.turns} prompt(s)")
    text = "\n".join(out)
    if con is not None:
        con.print(text, markup=False, highlight=False)
    else:
        print(text)


def main(args: argparse.Namespace) -> int:
    from agentloop.agent.session.store import list_sessions

    cwd = args.sessions_cwd or os.getcwd()
    summaries = list_sessions(cwd)[: max(0, args.limit)]
    if args.json:
        for s in summaries:
            print(json_line(s.to_json()))
        return EXIT_OK
    if not summaries:
        print("no sessions for this directory yet")
        return EXIT_OK
    render(summaries)
    return EXIT_OK
