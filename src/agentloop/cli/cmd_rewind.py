"""``agentloop rewind SESSION --to N``: go back to before prompt N without the REPL."""

from __future__ import annotations

import argparse
import os
import sys

from ._common import EXIT_OK, EXIT_PROBLEMS, UserError

HELP = "put back the files a session's tools changed since prompt N, and/or its conversation"
DESCRIPTION = (
    "Go back to before prompt N of a session: the files its built-in tools (Write, Edit) changed from "
    "that prompt on, the conversation, or both. Changes made by Bash commands are not tracked. "
    "A file changed since (by hand or by Bash) is left alone unless --force. Without --to, list the prompts."
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", metavar="SESSION", help="the session id (a unique prefix will do)")
    p.add_argument("--to", type=int, metavar="N", help="the prompt to go back to before (see the list without --to)")
    p.add_argument("--only", choices=("files", "conversation"), help="rewind only the files or only the conversation")
    p.add_argument("--force", action="store_true", help="also put back files changed since by hand or by Bash")
    p.add_argument("--cwd", default=None, metavar="DIR", help="the project directory of the session (default: here)")


def main(args: argparse.Namespace) -> int:
    from agentloop.agent.agent import Agent, AgentError
    from agentloop.agent.session.checkpoints import prompts_of
    from agentloop.agent.session.store import SessionError
    from agentloop.transcript import read_records

    cwd = args.cwd or os.getcwd()
    try:
        # a model is needed to open an Agent; none is called: an empty script
        agent = Agent(cwd=cwd, model=_no_model(), resume=args.session)
    except (AgentError, SessionError) as exc:
        raise UserError(str(exc)) from None
    try:
        if args.to is None:
            for n, _seq, text in prompts_of(read_records(agent.session.path)):
                first = text.strip().splitlines()[0] if text.strip() else ""
                print(f"{n:>4}  {first[:72]}")
            print("changes made by Bash commands are not tracked", file=sys.stderr)
            return EXIT_OK
        try:
            out = agent.rewind(args.to, files=args.only != "conversation", conversation=args.only != "files", force=args.force)
        except AgentError as exc:
            raise UserError(str(exc)) from None
        for p in out["restored"]:
            print(f"restored {p}")
        for p in out["left"]:
            print(f"left alone (changed since; --force puts it back): {p}", file=sys.stderr)
        print("changes made by Bash commands are not tracked", file=sys.stderr)
        return EXIT_PROBLEMS if out["left"] else EXIT_OK
    finally:
        agent.close("other")


def _no_model() -> object:
    from agentloop.testing import FunctionModel

    def never(request: object) -> object:
        raise RuntimeError("agentloop rewind calls no model")

    return FunctionModel(never, name="none")  # type: ignore[arg-type]
