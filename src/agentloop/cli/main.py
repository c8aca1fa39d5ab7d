"""Entry point of the ``agentloop`` command.

Subcommands are discovered from the ``cmd_<name>.py`` modules of this package
(``cmd_check_proof`` is ``check-proof``). Each module has ``HELP``,
``configure(parser)`` and ``main(args) -> int``, and imports its heavy
dependencies inside ``main`` so that ``--help`` and ``--version`` start fast.
Without a subcommand the terminal agent starts (``agent_args`` configures its
top-level flags when it is present).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from ._common import EXIT_INTERRUPTED, EXIT_USAGE, UserError
from .terminal_text import say

__all__ = ["main"]


def _commands() -> dict[str, str]:
    # A directory listing, not pkgutil.iter_modules: that imports inspect (and
    # ast, dis, tokenize...), a fifth of the start-up time of --help.
    found = {}
    for fname in os.listdir(os.path.dirname(os.path.abspath(__file__))):
        name, ext = os.path.splitext(fname)
        if name.startswith("cmd_") and ext == ".py":
            found[name[4:].replace("_", "-")] = f"agentloop.cli.{name}"
    return dict(sorted(found.items()))


def _load(modname: str) -> ModuleType:
    return importlib.import_module(modname)


def build_parser(only: set[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, the subcommands outside it are named but not
    configured (their modules are not even imported: the terminal agent starts sooner)."""
    from agentloop import __version__

    parser = argparse.ArgumentParser(
        prog="agentloop",
        usage='%(prog)s [options] ["PROMPT"]  |  %(prog)s -p [options] ["PROMPT"]  |  %(prog)s COMMAND ...',
        description=(
            "A budgeted, auditable agent runtime. Without a subcommand, starts the terminal agent: "
            "the REPL (starting with PROMPT when one is given), or with -p one answer to PROMPT "
            "(and whatever is piped on stdin) and exit."
        ),
    )
    parser.add_argument("--version", action="version", version=f"agentloop {__version__}")
    try:
        agent_args = _load("agentloop.cli.agent_args")
    except ModuleNotFoundError:
        agent_args = None
    if agent_args is not None:
        agent_args.configure_top(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, modname in _commands().items():
        if only is not None and name not in only:
            sub.add_parser(name, prog=f"agentloop {name}").set_defaults(_module=modname)
            continue
        mod = _load(modname)
        p = sub.add_parser(name, prog=f"agentloop {name}", help=getattr(mod, "HELP", None),
                           description=getattr(mod, "DESCRIPTION", getattr(mod, "HELP", None)))
        mod.configure(p)
        p.set_defaults(_module=modname)
    return parser


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: whole for ``--help``, else with only the subcommands it names."""
    if "-h" in argv or "--help" in argv:
        return build_parser()
    return build_parser(only={w for w in argv if w in _commands()})


def _prompt_to_option(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``agentloop "explain this"``, as ``claude "query"``: a first bare word that names no
    subcommand is the prompt. It is moved to the hidden ``--prompt`` option so that the
    subcommands keep their place. Words after ``--`` are never looked at."""
    takes_value: set[str] = set()
    commands: set[str] = set()
    known: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands.update(action.choices)
        elif action.option_strings:
            known.update(action.option_strings)
            if action.nargs != 0:
                takes_value.update(action.option_strings)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv
        if a.startswith("-") and a != "-":
            _check_option(a, known)
            i += 2 if (a in takes_value and "=" not in a) else 1
            continue
        if a in commands:
            return argv
        return [*argv[:i], *argv[i + 1 :], "--prompt", a]
    return argv


def _check_option(word: str, known: set[str]) -> None:
    """Refuse an option the command does not have, by its name: argparse would take the words
    after it for a subcommand or a prompt and complain about those instead."""
    name = word.split("=", 1)[0]
    if name in known or _is_short_cluster(word, known):
        return
    import difflib

    close = difflib.get_close_matches(name, sorted(k for k in known if k.startswith("--")), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UserError(f"unknown option {name}{hint}; agentloop --help lists them", code=EXIT_USAGE)


def _is_short_cluster(word: str, known: set[str]) -> bool:
    """``-pc``: short flags written together, each of them known."""
    return (not word.startswith("--") and len(word) > 2
            and all(f"-{c}" in known for c in word[1:]))


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None and os.path.basename(sys.argv[0]) in ("agentloop", "__main__.py"):  # the command itself
        from .held_keys import hold_keys

        hold_keys(sys.argv[1:])  # the provider keys out of the environment /proc shows (decision 0013)
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        from agentloop import __version__  # no parser to build for this one

        print(f"agentloop {__version__}")
        return 0
    given = list(sys.argv[1:] if argv is None else argv)
    parser = _parser_for(given)
    try:
        words = _prompt_to_option(parser, given)
    except UserError as exc:
        say(f"agentloop: error: {exc}", sys.stderr)  # an error may name a repository's file
        return exc.code
    args = parser.parse_args(words)
    try:
        modname = getattr(args, "_module", None)
        if modname is not None:
            code = _load(modname).main(args)
        else:
            try:
                entry = _load("agentloop.cli.agent_entry")
            except ModuleNotFoundError:
                parser.print_help()
                return EXIT_USAGE
            code = entry.main(args)
        return int(code or 0)
    except UserError as exc:
        say(f"agentloop: error: {exc}", sys.stderr)  # an error may name a repository's file
        return exc.code
    except KeyboardInterrupt:
        print("agentloop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours: say so in one line unless debugging
        from agentloop.transcript import TranscriptError

        if isinstance(exc, TranscriptError) and not os.environ.get("AGENTLOOP_DEBUG"):
            # a disk fault (ENOSPC, EIO) or a damaged file: not a bug; what is on disk is a verifiable prefix
            say(f"agentloop: error: cannot write the transcript: {exc}", sys.stderr)
            return 1
        if os.environ.get("AGENTLOOP_DEBUG"):
            raise
        say(
            f"agentloop: internal error: {type(exc).__name__}: {exc}\n"
            "  (this is a bug in agentloop; set AGENTLOOP_DEBUG=1 for the traceback)",
            sys.stderr,
        )
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
