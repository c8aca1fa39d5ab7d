"""Making the terminal agent from the command line's flags, and the lines the front ends show about it.

Shared by ``-p`` (``agent_entry``), the REPL (``repl``) and the ACP server, so
none of them imports another for these.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from ._common import EXIT_PROBLEMS, EXIT_USAGE, UserError

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["cost_line", "fit", "flush_tracing", "make_agent", "parse_price", "report_config", "split_rules"]


def fit(candidates: Iterable[str], cols: int) -> str:
    """The first of ``candidates`` (fullest first) that fits ``cols`` columns, else the last:
    a line is shortened by leaving out its least important parts, never cut mid-word."""
    from rich.cells import cell_len

    last = ""
    for last in candidates:
        if cell_len(last) <= cols:
            return last
    return last


def _cache_sources() -> None:
    """Serve the tools' fingerprints from the source cache under the agentloop home (saved at exit)."""
    import atexit

    from agentloop import tools
    from agentloop.config.source_cache import default_source_cache

    if tools._source_cache is not None:  # once per process (the ACP server makes many agents)
        return
    cache = default_source_cache()
    tools.use_source_cache(cache)
    atexit.register(cache.save)


def _opt(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    v = getattr(args, name, default)
    return default if v is None else v


def make_agent(
    args: argparse.Namespace,
    *,
    ask_permission: Callable[..., Any] | None = None,
    ask_trust: Callable[..., bool] | None = None,
    ask_mcp_server: Callable[[str, str], bool] | None = None, ask_imports: Callable[[list[str]], bool] | None = None,
    mcp_in_background: bool = False, ask_home: Callable[[str], bool] | None = None,
) -> Any:
    """An ``Agent`` from the parsed flags.

    ``ask_home``: asked when the folder is the home folder or above it (``agent.sandbox.home``); without
    it (``-p``) that folder is refused unless ``--home-workspace`` is given.

    Raises:
        UserError: a bad flag, settings file, model or session (one line, exit 2); a session
            that fails verification (exit 1; ``--force`` goes on in a new session from its verified records).
    """
    import gc

    # Making the agent imports most of the package: tens of thousands of objects (modules, classes,
    # functions) that live as long as the process. The collector waits while they load, and the first
    # time they are then frozen (gc.freeze): no later pass, the one at exit included, scans them again.
    # Together about a tenth of a -p run's CPU. Only the first agent of a process freezes, so a REPL or
    # ACP server that makes more never pins their garbage; the collector is on again as it was, error or not.
    _home_gate(args, ask_home)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _make_agent(args, ask_permission=ask_permission, ask_trust=ask_trust, ask_mcp_server=ask_mcp_server,
                           ask_imports=ask_imports, mcp_in_background=mcp_in_background)
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _home_gate(args: argparse.Namespace, ask_home: Callable[[str], bool] | None) -> None:
    """Refuse, or ask first, when the workspace would be the home folder or a folder above it."""
    from agentloop.agent.sandbox.home import FLAG, home_workspace

    cwd = _opt(args, "cwd") or os.getcwd()
    why = home_workspace(cwd) if os.path.isdir(cwd) else None
    if why is None or _opt(args, "home_workspace", False):
        return
    if ask_home is None:
        raise UserError(f"{why}: the whole of it would be the workspace. Start agentloop in a project folder"
                        f" (or --cwd DIR), or pass {FLAG} to work there anyway")
    if not ask_home(why):
        raise UserError(f"not started: {why} (start agentloop in a project folder, or pass {FLAG})")


def _make_agent(
    args: argparse.Namespace,
    *,
    ask_permission: Callable[..., Any] | None = None,
    ask_trust: Callable[..., bool] | None = None,
    ask_mcp_server: Callable[[str, str], bool] | None = None, ask_imports: Callable[[list[str]], bool] | None = None,
    mcp_in_background: bool = False,
) -> Any:
    _cache_sources()  # first: tools made while the agent's modules load use it too
    from agentloop.agent.agent import Agent, AgentError, setup_logging
    from agentloop.agent.session.store import SessionDamaged, SessionError
    from agentloop.config.settings import agentloop_home

    if not os.path.isdir(cwd := _opt(args, "cwd") or os.getcwd()):
        raise UserError(f"--cwd {cwd}: not a directory")
    micros, unlimited = _spend_cap(args)
    price = parse_price(_opt(args, "price"))
    steps = _opt(args, "max_steps")
    if steps is not None and steps < 1:
        raise UserError(f"--max-steps {steps}: must be at least 1")
    if _opt(args, "resume") == "":
        raise UserError("--resume without an id lists sessions to choose from in the REPL only; give the id (agentloop sessions lists them)")
    home = agentloop_home()
    setup_logging(home, verbose=bool(_opt(args, "verbose", False)))
    mode = _mode(args)
    tracing = None
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from agentloop.telemetry import from_environment

        tracing = from_environment()
    rules = [("allow", r) for v in _opt(args, "allowed_tools", []) for r in split_rules(v)]
    rules += [("deny", r) for v in _opt(args, "disallowed_tools", []) for r in split_rules(v)]

    def build(resume: str | None, continue_last: bool) -> Any:
        return Agent(
            cwd=cwd,
            home=home,
            model=_opt(args, "model"),
            base_url=_opt(args, "base_url"),
            api_key_env=_opt(args, "api_key_env"),
            fallback=_opt(args, "fallback_model"),
            max_usd_micros=micros,
            max_steps=steps,
            permission_mode=mode,
            add_dirs=list(_opt(args, "add_dir", [])),
            resume=resume,
            continue_last=continue_last,
            durability=_opt(args, "durability"),
            ask_permission=ask_permission,
            trust=True if _opt(args, "trust", False) else None,
            ask_trust=ask_trust,
            ask_mcp_server=ask_mcp_server, ask_imports=ask_imports,
            cli_rules=rules,
            system_prompt=_opt(args, "system_prompt"),
            append_system_prompt=_opt(args, "append_system_prompt"),
            tracing=tracing,
            sandbox=_opt(args, "sandbox"),
            unlimited_usd=unlimited,
            price=price,
            cli_settings=list(_opt(args, "cli_settings", [])),
            mcp_configs=list(_opt(args, "mcp_configs", [])),
            strict_mcp_config=bool(_opt(args, "strict_mcp_config", False)),
            mcp_in_background=mcp_in_background,
            plugin_dirs=list(_opt(args, "plugin_dir", []) or ()),
            session_id=_opt(args, "session_id"),
            **{k: _opt(args, k) for k in ("max_output_tokens", "thinking", "effort")},
        )

    try:
        try:
            agent = build(_opt(args, "resume"), bool(_opt(args, "continue_last", False)))
        except SessionDamaged as exc:
            agent = _forced(build, exc, bool(_opt(args, "force", False)), cwd, home)
    except (AgentError, SessionError) as exc:
        raise UserError(str(exc)) from None
    return _in_worktree(agent, _opt(args, "worktree"))


def _in_worktree(agent: Agent, name: str | None) -> Agent:
    """``--worktree [NAME]`` (Claude Code's ``-w``): the session starts in a new git worktree, as EnterWorktree makes."""
    if name is None:
        return agent
    from agentloop.agent.session_worktree import session_worktree
    from agentloop.tools import ToolError

    try:
        session_worktree(agent).enter(name or None)
    except ToolError as exc:
        agent.close("other")
        raise UserError(f"--worktree: {exc}") from None
    return agent


def _mode(args: argparse.Namespace) -> str | None:
    """``--permission-mode``, or bypassPermissions for ``--dangerously-skip-permissions`` (never both, differing)."""
    mode = _opt(args, "permission_mode")
    if _opt(args, "dangerously_skip_permissions", False):
        if mode not in (None, "bypassPermissions"):
            raise UserError(f"--dangerously-skip-permissions and --permission-mode {mode} say different things")
        mode = "bypassPermissions"
    return cast(str | None, mode)


def _spend_cap(args: argparse.Namespace) -> tuple[int | None, bool]:
    """``--max-usd``: (micro-dollars or None, unlimited)."""
    from agentloop.budget import usd

    max_usd = _opt(args, "max_usd")
    if max_usd is None or max_usd == "unlimited":
        return None, max_usd == "unlimited"
    try:
        return usd(str(max_usd)), False
    except ValueError as exc:
        raise UserError(f"--max-usd {max_usd}: {exc} (dollars, e.g. 0.05, or 'unlimited')") from None


def _forced(build: Callable[[str | None, bool], Any], damaged: Any, force: bool, cwd: str, home: str) -> Any:
    """A session that fails verification: refused (exit 1), or with ``--force`` a new session from
    its verified records, saying what is skipped (``store`` rule 6)."""
    from agentloop.agent.session.store import fork_damaged

    if not force:  # a forged record is bad input (exit 2); a broken chain is a problem found (exit 1)
        raise UserError(str(damaged), EXIT_USAGE if damaged.forged else EXIT_PROBLEMS) from None
    new_id, note = fork_damaged(cwd, damaged, home)
    from .terminal_text import say

    say(f"agentloop: warning: {note}", sys.stderr)
    return build(new_id, False)


def report_config(agent: Agent, say: Callable[[str], None]) -> None:
    """Each settings warning, then the one line saying what an untrusted folder's configuration was denied."""
    for w in getattr(agent, "config_warnings", []):
        say(f"agentloop: warning: {w}")
    trust = getattr(agent, "trust", None)
    line = trust.notice() if trust is not None else None
    if line:
        say(line)


def split_rules(value: str) -> list[str]:
    """``--allowedTools "Bash(git diff:*),Read Edit"``: rules split at commas and spaces
    outside parentheses (a rule's specifier keeps its own)."""
    out: list[str] = []
    depth, cur = 0, ""
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch in ", " and depth == 0:
            if cur.strip():
                out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_price(text: str | None) -> Any:
    """``--price INPUT,OUTPUT`` (dollars per million tokens) as a ``Price`` (cache reads and writes at the input price).

    Raises:
        UserError: not two non-negative amounts of dollars.
    """
    if text is None:
        return None
    from agentloop.budget import Price, usd

    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2:
        raise UserError(f"--price {text}: give INPUT,OUTPUT in dollars per million tokens, e.g. 0.15,0.6")
    try:
        inp, out = usd(parts[0]), usd(parts[1])
    except ValueError as exc:
        raise UserError(f"--price {text}: {exc}") from None
    return Price(inp, out, inp, inp)


def cost_line(agent: Agent, result: Any, cols: int | None = None) -> str:
    """One line after each turn: this turn's spend and tokens, the session's, the context fill.

    Tokens the provider did not report are the loop's estimate, marked "estimated". With
    ``cols`` the line fits that many columns by leaving out its least important parts
    (the tokens first), never by cutting a word.
    """
    from agentloop.budget import format_usd

    st = agent.stats
    budget = f" / {format_usd(agent.max_usd_micros)}" if agent.max_usd_micros is not None else ""
    fill = st.last_input_tokens / agent.window if agent.window else 0.0
    est = ", estimated" if getattr(agent, "last_usage_estimated", False) else ""
    turn, session = format_usd(result.spent_micros), f"{format_usd(st.spent_micros)}{budget}"
    full = (
        f"cost {turn} this turn ({result.usage.input_tokens} in / {result.usage.output_tokens} out{est})"
        f" · session {session} · context {fill:.0%}"
    )
    if cols is None:
        return full
    return fit((full, f"cost {turn} this turn · session {session} · context {fill:.0%}",
                f"turn {turn} · session {session} · context {fill:.0%}", f"turn {turn} · session {session}"), cols)


def flush_tracing(agent: Agent) -> None:
    """Export what tracing still holds before the process exits (the batch processor's queue)."""
    provider = getattr(getattr(agent, "tracing", None), "provider", None)
    shutdown = getattr(provider, "shutdown", None)
    if callable(shutdown):
        try:
            shutdown()
        except Exception as exc:  # an unreachable collector must not fail the run
            print(f"agentloop: tracing: {exc}", file=sys.stderr)
