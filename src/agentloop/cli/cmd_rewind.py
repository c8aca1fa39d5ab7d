"""``agentloop rewind SESSION --to N``: go back to before prompt N without the REPL."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UserError
from .terminal_text import say

HELP = "put back the files a session's tools changed since prompt N, and/or its conversation"
DESCRIPTION = (
    "Go back to before prompt N of a session: the files its built-in tools (Write, Edit) changed from "
    "that prompt on, the conversation, or both. Changes made by Bash commands are not tracked. "
    "A file changed since (by hand or by Bash) is left alone unless --force. Without --to, list the prompts "
    "(nothing is written). The session is verified first: a damaged one is refused (exit 1) with its first bad "
    "record named; --force then rewinds only the files its verified records name, and records nothing. "
    "No path outside the project directory and its added directories is ever touched."
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", metavar="SESSION", help="the session id (a unique prefix will do)")
    p.add_argument("--to", type=int, metavar="N", help="the prompt to go back to before (see the list without --to)")
    p.add_argument("--only", choices=("files", "conversation"), help="rewind only the files or only the conversation")
    p.add_argument("--force", action="store_true",
                   help="also put back files changed since by hand or by Bash; on a damaged session, rewind files from its verified records")
    p.add_argument("--cwd", default=None, metavar="DIR", help="the project directory of the session (default: here)")


def _checked(cwd: str, sid: str) -> tuple[str, str, Any]:
    """(full id, path, verify report) of the session, read as ``verify`` reads it; nothing is written."""
    from agentloop.agent.session.store import SessionError, check_session, resolve_id, sessions_dir

    d = sessions_dir(cwd)
    try:
        full = resolve_id(d, sid)
    except SessionError as exc:
        raise UserError(str(exc)) from None
    path = os.path.join(d, f"{full}.jsonl")
    report, torn = check_session(path)
    if any(p.kind == "unreadable" for p in report.problems):
        raise UserError(f"session {full}: cannot read {report.problems[0].message}")
    if torn:
        report.problems.clear()  # a crash's torn tail: the records before it are whole; resuming cuts it
    return full, path, report


def main(args: argparse.Namespace) -> int:
    from agentloop.agent.session.store import damage_line, forged

    cwd = os.path.realpath(args.cwd or os.getcwd())
    sid, path, report = _checked(cwd, args.session)
    if args.to is None:
        return _list(sid, path, report)
    if not report.ok:
        if not args.force:
            line = damage_line(sid, path, report).replace("--force goes on in a new session", "--force rewinds files")
            raise UserError(line, EXIT_USAGE if forged(report) else EXIT_PROBLEMS)
        return _forced_files(cwd, sid, path, report, args.to)
    return _rewind(cwd, sid, args)


def _list(sid: str, path: str, report: Any) -> int:
    """The prompts of the verified records, streamed; a damaged session says where its records stop being trusted."""
    from agentloop.agent.session.checkpoints import prompts_of
    from agentloop.agent.session.store import SessionError, damage_line, forged, verified_records

    try:
        for n, _seq, text in prompts_of(verified_records(path, report.valid_prefix_bytes)):
            first = text.strip().splitlines()[0] if text.strip() else ""
            say(f"{n:>4}  {first[:72]}")
    except SessionError as exc:
        raise UserError(str(exc)) from None
    say("changes made by Bash commands are not tracked", sys.stderr)
    if not report.ok:
        say(f"agentloop: error: {damage_line(sid, path, report)}", sys.stderr)
        return EXIT_USAGE if forged(report) else EXIT_PROBLEMS
    return EXIT_OK


def _print_outcome(out: dict[str, Any]) -> int:
    for p in out["restored"]:
        say(f"restored {p}")
    for p in out.get("outside", []):
        say(f"left alone (outside the workspace; a rewind never touches it): {p}", sys.stderr)
    for p in out["left"]:
        if p not in out.get("outside", []):
            say(f"left alone (changed since; --force puts it back): {p}", sys.stderr)
    say("changes made by Bash commands are not tracked", sys.stderr)
    return EXIT_PROBLEMS if out["left"] else EXIT_OK


def _rewind(cwd: str, sid: str, args: argparse.Namespace) -> int:
    from agentloop.agent.agent import Agent, AgentError
    from agentloop.agent.session.store import SessionError
    from agentloop.budget import Price

    try:
        # a model is needed to open an Agent; none is called: an empty script
        agent = Agent(cwd=cwd, model=_no_model(), resume=sid, price=Price(0, 0))  # it calls no model: no price to warn of
    except (AgentError, SessionError) as exc:
        raise UserError(str(exc)) from None
    try:
        try:
            out = agent.rewind(args.to, files=args.only != "conversation", conversation=args.only != "files", force=args.force)
        except AgentError as exc:
            raise UserError(str(exc)) from None
        return _print_outcome(out)
    finally:
        agent.close("other")


def _forced_files(cwd: str, sid: str, path: str, report: Any, turn: int) -> int:
    """``--force`` on a damaged session: the files its verified records name (under the project
    directory only), put back; the conversation is not rewound and nothing is recorded."""
    from agentloop.agent.session.checkpoints import Checkpoints, apply_rewind, plan_rewind
    from agentloop.agent.session.store import verified_records
    from agentloop.config.settings import agentloop_home

    first = report.problems[0]
    print(
        f"agentloop: warning: --force: session {sid} fails verification at record {first.index} ({first.kind}); "
        f"rewinding only the files its {report.valid_prefix} verified records name, under {cwd}; record {first.index} on "
        "is not read, the conversation is not rewound and nothing is written to the session",
        file=sys.stderr,
    )
    try:
        plan = plan_rewind(verified_records(path, report.valid_prefix_bytes), turn, [cwd])
        restored, left = apply_rewind(plan, Checkpoints(agentloop_home()), [cwd], force=True)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    _print_outcome({"restored": restored, "left": left, "outside": plan.outside})
    return EXIT_PROBLEMS


class _NoModel:
    """The model of an agent opened only to rewind a session: it is never asked."""

    name = "none"

    def complete(self, request: object) -> object:
        raise RuntimeError("agentloop rewind calls no model")


def _no_model() -> object:
    return _NoModel()
