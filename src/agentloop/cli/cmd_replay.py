"""``agentloop replay FILE``: redo a recorded run offline and compare."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from ._common import EXIT_OK, EXIT_PROBLEMS, UserError, uncapped_note, uncapped_runs

HELP = "replay a transcript offline and compare it with the record (exit 0 equal, 1 different, 2 unreadable or tampered)"
DESCRIPTION = (
    "Redo every run of a transcript with the same loop, the model answering from the record. "
    "full: tool results from the record, no tool runs (a faithful replay is byte-identical). "
    "live-tools: the tools really run: for a session of the terminal agent (its record begins with "
    "session_start) or with --tools agent, the agent's own tools, in a scratch copy of --workdir with Bash "
    "inside the same sandbox as the agent's; otherwise the demo tools unless --tools says otherwise. "
    "dry-run: tools are skipped, and the report counts the steps that depended on their output."
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a transcript (JSON Lines)")
    p.add_argument("--mode", choices=("full", "live-tools", "dry-run"), default="full", help="default: full")
    p.add_argument("--out", metavar="NEW.jsonl", help="write the replayed transcript to this new file")
    p.add_argument(
        "--tools", metavar="MODULE:FUNCTION", action="append", default=[],
        help="a function returning a Registry of the tools to run and fingerprint-check (repeatable), or "
        "'agent': the terminal agent's own tools; live-tools mode defaults to the agent's for an agent session, "
        "else the demo tools",
    )
    p.add_argument(
        "--workdir", metavar="DIR",
        help="with the agent's tools: the folder the session worked in (default: the current one); "
        "the tools run in a scratch copy of it, removed afterwards, so the folder itself is never written",
    )
    p.add_argument("--salt-env", metavar="VAR", help="read the redaction salt the run was recorded with from this environment variable")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def load_tools(refs: list[str]) -> Any:
    """The Registry made of every ``module:function``'s tools. Raises UserError naming the bad one."""
    from agentloop.tools import InvalidToolSchema, Registry

    reg = Registry()
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for ref in refs:
        modname, sep, fn = ref.partition(":")
        if not sep or not modname or not fn:
            raise UserError(f"--tools {ref!r}: expected MODULE:FUNCTION, e.g. mypkg.tools:registry")
        try:
            mod = importlib.import_module(modname)
        except Exception as exc:
            raise UserError(f"--tools {ref!r}: cannot import {modname!r}: {type(exc).__name__}: {exc}") from None
        factory = getattr(mod, fn, None)
        if not callable(factory):
            raise UserError(f"--tools {ref!r}: {modname} has no function {fn!r}")
        try:
            got = factory()
        except Exception as exc:
            raise UserError(f"--tools {ref!r}: {fn}() raised {type(exc).__name__}: {exc}") from None
        if not isinstance(got, Registry):
            raise UserError(f"--tools {ref!r}: {fn}() returned a {type(got).__name__}, not an agentloop Registry")
        for t in got:
            try:
                reg.register(t)
            except InvalidToolSchema as exc:
                raise UserError(f"--tools {ref!r}: {exc}") from None
    return reg


def main(args: argparse.Namespace) -> int:
    from . import replay_tools as agent_tools

    use_agent = args.tools == ["agent"] or (not args.tools and args.mode == "live-tools" and agent_tools.is_agent_session(args.file))
    if "agent" in args.tools and not use_agent:
        raise UserError("--tools agent: give it alone (the agent's own tools are not mixed with others)")
    if args.workdir is not None and not use_agent:
        raise UserError("--workdir: only with the agent's own tools (--tools agent, or live-tools on an agent session)")
    if not use_agent:
        return _replay(args, None)
    with agent_tools.open_agent_tools(args.workdir or os.getcwd()) as tools:
        return _replay(args, tools)


def _replay(args: argparse.Namespace, tools: Any) -> int:
    from agentloop.replay import ReplayError, replay

    if tools is None and args.tools:
        tools = load_tools(args.tools)
    elif tools is None and args.mode == "live-tools":
        from agentloop.demo import demo_tools

        tools = demo_tools()
    salt = None
    if args.salt_env:
        salt = os.environ.get(args.salt_env)
        if salt is None:
            raise UserError(f"--salt-env {args.salt_env}: that environment variable is not set")
    try:
        r = replay(args.file, tools=tools, mode=args.mode, out=args.out, redaction_salt=salt)
    except ReplayError as exc:
        raise UserError(str(exc)) from None
    except ValueError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    if args.json:
        print(json.dumps({
            "file": args.file,
            "mode": r.mode,
            "equal": r.equal,
            "decisions_equal": r.decisions_equal,
            "records": r.records,
            "original_records": r.original_records,
            "runs": [{"stop_reason": x.stop_reason, "steps": x.steps, "spent_micros": x.spent_micros} for x in r.results],
            "first_difference": None if r.first_difference is None else r.first_difference.describe(),
            "differences": [d.describe() for d in r.differences],
            "warnings": r.warnings,
            "unreproducible_steps": [str(n) for n in r.unreproducible_steps],
            "tool_dependent_steps": [str(n) for n in r.tool_dependent_steps],
            "skipped_calls": r.skipped_calls,
            "uncapped_runs": uncapped_runs(args.file)[0],
        }))
    else:
        print(r.summary(args.file))
        note = uncapped_note(args.file)
        if note:
            print(note)
        if args.out:
            print(f"  replay written to {args.out}")
    return EXIT_OK if r.equal else EXIT_PROBLEMS
