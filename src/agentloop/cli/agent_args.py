"""The terminal agent's flags: on ``agentloop`` itself and on ``agentloop run``.

Imported to build the parser on every start, so it imports argparse only.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..agent.permissions.modes import MODES as PERMISSION_MODES

__all__ = ["INPUT_FORMATS", "NOT_FOR_ACP", "OUTPUT_FORMATS", "PERMISSION_MODES", "add_agent_options", "configure_top"]

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")


NOT_FOR_ACP = frozenset({"--continue", "--resume", "--force", "--cwd", "--output-format", "--input-format",
                         "--include-partial-messages", "--json-schema"})
"""Options ``agentloop acp`` does not take: the editor names the session (``session/load``) and its
folder (``cwd``), and the output formats are ``-p``'s."""


class _Group:
    """An argument group that leaves out the options named in ``skip``."""

    def __init__(self, g: argparse._ArgumentGroup, skip: frozenset[str]):
        self.g, self.skip = g, skip

    def add_argument(self, *names: str, **kw: Any) -> Any:
        if not self.skip.intersection(names):
            return self.g.add_argument(*names, **kw)
        return None


def add_agent_options(p: argparse.ArgumentParser, *, suppress: bool = False, acp: bool = False) -> None:
    """The options shared by the REPL, ``-p`` and ``agentloop run``; ``acp``: only those that apply
    to ``agentloop acp`` (not ``NOT_FOR_ACP``).

    With ``suppress`` the options have no defaults, so a subcommand does not
    overwrite what was given before its name (``agentloop --model X run ...``).
    """

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    g: Any = _Group(p.add_argument_group("agent"), NOT_FOR_ACP if acp else frozenset())
    g.add_argument("--model", default=d(None), metavar="SPEC",
                   help="the model: provider:name (e.g. anthropic:claude-sonnet-4-5, openai:gpt-4o-mini) or scripted:FILE")
    g.add_argument("--base-url", default=d(None), metavar="URL", help="the provider's base URL (an OpenAI-compatible server, a proxy)")
    g.add_argument("--fallback-model", default=d(None), metavar="SPEC", help="a model to use when the first is overloaded (default: an Opus model goes on on its Sonnet, on overload only)")
    g.add_argument("--api-key-env", default=d(None), metavar="VAR", help="the environment variable that holds the API key")
    g.add_argument("-c", "--continue", dest="continue_last", action="store_true", default=d(False),
                   help="continue the most recent session of this directory")
    g.add_argument("-r", "--resume", nargs="?", const="", default=d(None), metavar="ID",
                   help="resume the session ID (a unique prefix will do); without an ID the REPL offers a list to choose from")
    g.add_argument("--force", action="store_true", default=d(False),
                   help="with -c or --resume: a session that fails verification goes on in a new session from its verified"
                        " records (the damaged file is left as it is)")
    g.add_argument("--max-usd", "--max-budget-usd", dest="max_usd", default=d(None), metavar="USD",
                   help="the session's spend cap in dollars, e.g. 0.05 (default 5; 'unlimited' for none, on purpose;"
                        " --max-budget-usd is Claude Code's name)")
    g.add_argument("--price", default=d(None), metavar="INPUT,OUTPUT",
                   help="the model's price in dollars per million tokens, e.g. 0.15,0.6 (for a model the price table lacks)")
    g.add_argument("--max-steps", "--max-turns", dest="max_steps", type=int, default=d(None), metavar="N",
                   help="model turns allowed per prompt (default 50; --max-turns is Claude Code's name)")
    g.add_argument("--permission-mode", choices=PERMISSION_MODES, default=d(None), help="how tool permissions are decided")
    g.add_argument("--sandbox", choices=("read-only", "workspace-write", "danger-full-access"), default=d(None),
                   help="how Bash commands are confined (default workspace-write: only the workspace writable, no network)")
    g.add_argument("-w", "--worktree", nargs="?", const="", default=d(None), metavar="NAME",
                   help="start the session in a new git worktree (named NAME, or a made-up name); ExitWorktree brings its changes back")
    g.add_argument("--add-dir", action="append", default=d([]), metavar="DIR", help="another directory the file tools may use (repeatable)")
    g.add_argument("--plugin-dir", action="append", default=d([]), metavar="DIR",
                   help="load a Claude Code plugin folder for this session (repeatable): its commands, skills, agents, hooks and MCP servers")
    g.add_argument("--output-format", choices=OUTPUT_FORMATS, default=d("text"),
                   help="with -p / run: text, json (one object) or stream-json (JSON lines), in Claude Code's shapes")
    g.add_argument("--input-format", choices=INPUT_FORMATS, default=d("text"),
                   help="with -p / run: text, or stream-json (Claude Code's user messages, one JSON object a line on stdin)")
    g.add_argument("--include-partial-messages", action="store_true", default=d(False),
                   help="with --output-format stream-json: also stream the text as it arrives (stream_event lines)")
    g.add_argument("--json-schema", default=d(None), metavar="SCHEMA",
                   help="with -p: the final answer as JSON matching this JSON Schema (the result's structured_output)")
    g.add_argument("--dangerously-skip-permissions", action="store_true", default=d(False),
                   help="the same as --permission-mode bypassPermissions (deny rules and protected paths still apply)")
    g.add_argument("--allowedTools", "--allowed-tools", dest="allowed_tools", action="append", default=d([]), metavar="RULES",
                   help='permission rules to allow, comma- or space-separated ("Bash(git diff:*),Read"); repeatable')
    g.add_argument("--disallowedTools", "--disallowed-tools", dest="disallowed_tools", action="append", default=d([]), metavar="RULES",
                   help='permission rules to deny, comma- or space-separated ("Bash(rm:*)"); repeatable')
    g.add_argument("--settings", dest="cli_settings", action="append", default=d([]), metavar="FILE_OR_JSON",
                   help="more settings, a file or a JSON object, above the project's files (repeatable)")
    g.add_argument("--mcp-config", dest="mcp_configs", action="append", default=d([]), metavar="FILE_OR_JSON",
                   help='MCP servers from a file or JSON string holding {"mcpServers": ...} (repeatable)')
    g.add_argument("--strict-mcp-config", action="store_true", default=d(False),
                   help="use only the --mcp-config servers (none of the settings files or .mcp.json)")
    g.add_argument("--max-output-tokens", type=int, default=d(None), metavar="N",
                   help="most tokens the model may write a turn (default: the model's documented maximum, within a quarter of the cap)")
    g.add_argument("--thinking", default=d(None), metavar="on|off|N",
                   help="Anthropic extended thinking: on, off, or a budget in tokens (default on where the model supports it)")
    g.add_argument("--effort", default=d(None), choices=("minimal", "low", "medium", "high", "xhigh", "max"),
                   help="OpenAI reasoning effort (default medium for reasoning models; the Agent SDK's max is xhigh)")
    g.add_argument("--system-prompt", default=d(None), metavar="TEXT", help="replace the built-in system prompt")
    g.add_argument("--append-system-prompt", default=d(None), metavar="TEXT", help="add TEXT to the end of the system prompt")
    g.add_argument("--durability", choices=("flush", "fsync"), default=d(None), help="how each session record is written (default flush)")
    g.add_argument("--cwd", default=d(None), metavar="DIR", help="work in DIR instead of the current directory")
    g.add_argument("--trust", action="store_true", default=d(False),
                   help="trust this folder's configuration (hooks, MCP servers, allow rules...) for this run only; `agentloop trust` remembers it")
    g.add_argument("--home-workspace", action="store_true", default=d(False),
                   help="work in the home folder (or a folder above it) without asking; credential stores stay hidden")
    g.add_argument("--verbose", action="store_true", default=d(False), help="log to stderr as well as the log file")
    from .sdk_flags import add_sdk_options

    add_sdk_options(g, d)


def configure_top(parser: argparse.ArgumentParser) -> None:
    """Flags of ``agentloop`` without a subcommand: the REPL, or ``-p``."""
    parser.add_argument("-p", "--print", dest="print_mode", action="store_true",
                        help="answer the prompt without the REPL and exit (the prompt, piped stdin, or both)")
    # ``agentloop "explain this"``: main() moves a bare first word that names no subcommand here
    parser.add_argument("--prompt", dest="prompt", default=None, help=argparse.SUPPRESS)
    add_agent_options(parser)
