"""``agentloop trust [DIR]``: trust a folder's configuration, as it is now, for later sessions.

What the folder's files would do (each hook command, each MCP server, each
allow rule, the mode, added directories, env...) is printed, then remembered in
the agentloop home with a digest of those files: when they change, the folder
is untrusted again until trusted anew. ``--forget`` takes the trust back.
"""

from __future__ import annotations

import argparse
import os

from .terminal_text import say

HELP = "trust a folder's configuration (hooks, MCP servers, allow rules...) for later sessions"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=None, metavar="DIR", help="the folder (default: the current directory)")
    p.add_argument("--forget", action="store_true", help="stop trusting the folder")


def main(args: argparse.Namespace) -> int:
    from agentloop.agent.trust import TrustStore, remember_folder
    from agentloop.config.settings import ConfigError, agentloop_home

    from ._common import UserError

    folder = os.path.realpath(args.dir or os.getcwd())
    if not os.path.isdir(folder):
        raise UserError(f"{args.dir}: not a directory")
    home = agentloop_home()
    if args.forget:
        if TrustStore(home).forget(folder):
            say(f"{folder}: no longer trusted")
        else:
            say(f"{folder}: was not trusted")
        return 0
    try:
        decision, warnings = remember_folder(folder, home, os.environ)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    for w in warnings:
        say(f"warning: {w}")
    if not decision.powers:
        say(f"{folder}: trusted (its configuration asks for nothing that needs trust)")
        return 0
    say(f"{folder}: trusted; its configuration will:")
    for p in decision.powers:
        say(f"  {p.line(folder)}")
    return 0
