"""``agentloop acp``: run the agent for an editor over the Agent Client Protocol (stdio)."""

from __future__ import annotations

import argparse

from .agent_args import add_agent_options

HELP = "run the agent for an editor (Zed...) over the Agent Client Protocol on stdin/stdout"
DESCRIPTION = (
    "Run agentloop as an Agent Client Protocol agent: the editor starts this command and speaks JSON-RPC "
    "on its stdin and stdout. Sessions are agentloop sessions (resumable, hash-chained), with the same cap, "
    "hooks, permissions (asked in the editor), trust and sandbox as in the terminal."
)


def configure(p: argparse.ArgumentParser) -> None:
    add_agent_options(p, suppress=True, acp=True)


def main(args: argparse.Namespace) -> int:
    from .acp_server import serve

    return serve(args)
