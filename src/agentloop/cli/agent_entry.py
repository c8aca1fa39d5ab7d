"""``agentloop`` without a subcommand: the REPL, or one answer with ``-p``.

Exit codes for ``-p`` and ``agentloop run``: 0 when the model finished (no
more tool calls, or the sentinel), 1 when the run stopped otherwise (a budget,
a model error, a loop), 2 for the user's mistakes (a bad flag, config or
session), 130 when interrupted, 143 on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS, UserError

__all__ = ["Signals", "make_agent", "main", "run_print"]

EXIT_TERMINATED = 143
FINISHED = ("no_tool_calls", "sentinel")


class Signals:
    """SIGTERM behaves as Ctrl+C pressed twice: the turn in flight stops and
    the session is saved before exiting. ``terminating`` tells the two apart."""

    def __init__(self) -> None:
        self.terminating = False

    def install(self) -> None:
        try:
            signal.signal(signal.SIGTERM, self._on_term)
        except ValueError:  # not the main thread (tests driving main in a thread)
            pass

    def _on_term(self, signum: int, frame: Any) -> None:
        self.terminating = True
        raise KeyboardInterrupt


def _opt(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    v = getattr(args, name, default)
    return default if v is None else v


def make_agent(args: argparse.Namespace, *, ask_permission: Callable[..., Any] | None = None) -> Any:
    """An ``Agent`` from the parsed flags.

    Raises:
        UserError: a bad flag, settings file, model or session (one line, exit 2).
    """
    from agentloop.agent.core import Agent, AgentError, setup_logging
    from agentloop.agent.session import SessionError
    from agentloop.agent.settings import agentloop_home
    from agentloop.budget import usd

    cwd = _opt(args, "cwd") or os.getcwd()
    if not os.path.isdir(cwd):
        raise UserError(f"--cwd {cwd}: not a directory")
    max_usd = _opt(args, "max_usd")
    micros = None
    if max_usd is not None:
        try:
            micros = usd(str(max_usd))
        except ValueError as exc:
            raise UserError(f"--max-usd {max_usd}: {exc}") from None
    steps = _opt(args, "max_steps")
    if steps is not None and steps < 1:
        raise UserError(f"--max-steps {steps}: must be at least 1")
    home = agentloop_home()
    setup_logging(home, verbose=bool(_opt(args, "verbose", False)))
    try:
        return Agent(
            cwd=cwd,
            home=home,
            model=_opt(args, "model"),
            base_url=_opt(args, "base_url"),
            api_key_env=_opt(args, "api_key_env"),
            fallback=_opt(args, "fallback_model"),
            max_usd_micros=micros,
            max_steps=steps,
            permission_mode=_opt(args, "permission_mode"),
            add_dirs=list(_opt(args, "add_dir", [])),
            resume=_opt(args, "resume"),
            continue_last=bool(_opt(args, "continue_last", False)),
            durability=_opt(args, "durability"),
            ask_permission=ask_permission,
        )
    except (AgentError, SessionError) as exc:
        raise UserError(str(exc)) from None


def _short(value: Any, n: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 1] + "…"


class _StreamJson:
    """``--output-format stream-json``: one JSON object a line, as things happen."""

    def __init__(self, sid: str):
        self.sid = sid

    def emit(self, obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({**obj, "session_id": self.sid}, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def __call__(self, ev: Any) -> None:
        from agentloop.events import TextDelta, ToolFinished, ToolStarted, TurnRecorded

        if isinstance(ev, TextDelta):
            self.emit({"type": "stream_event", "event": {"type": "text_delta", "text": ev.text}})
        elif isinstance(ev, TurnRecorded):
            self.emit({"type": "assistant", "step": ev.step, "message": ev.reply.to_json()})
        elif isinstance(ev, ToolStarted):
            self.emit({"type": "tool_use", "id": ev.call.id, "name": ev.call.name, "input": ev.call.arguments})
        elif isinstance(ev, ToolFinished):
            r = ev.result
            self.emit({"type": "tool_result", "tool_use_id": r.call_id, "name": r.name, "is_error": not r.ok,
                       "content": r.content if r.ok else r.error})


def _result_json(agent: Any, result: Any, elapsed: float) -> dict[str, Any]:
    from agentloop.budget import format_usd

    ok = result.stop_reason in FINISHED
    return {
        "type": "result",
        "subtype": "success" if ok else f"error_{result.stop_reason}",
        "is_error": not ok,
        "result": result.answer,
        "stop_reason": result.stop_reason,
        "error": result.error,
        "session_id": agent.session.id,
        "num_turns": result.steps,
        "duration_ms": int(elapsed * 1000),
        "cost_micros": result.spent_micros,
        "total_cost_usd": format_usd(result.spent_micros)[1:],
        "session_cost_micros": agent.stats.spent_micros,
        "usage": result.usage.to_json(),
        "transcript": agent.session.path,
    }


def cost_line(agent: Any, result: Any) -> str:
    """One line after each turn: this turn's spend and tokens, the session's, the context fill."""
    from agentloop.budget import format_usd

    st = agent.stats
    budget = f" / {format_usd(agent.max_usd_micros)}" if agent.max_usd_micros is not None else ""
    fill = st.last_input_tokens / agent.window if agent.window else 0.0
    return (
        f"cost {format_usd(result.spent_micros)} this turn ({result.usage.input_tokens} in / {result.usage.output_tokens} out)"
        f" · session {format_usd(st.spent_micros)}{budget} · context {fill:.0%}"
    )


def run_print(args: argparse.Namespace, prompt: str, signals: Signals) -> int:
    """One prompt, no REPL: the answer on stdout in the chosen format."""
    fmt = _opt(args, "output_format", "text")
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise UserError("the prompt is empty")
    agent = make_agent(args)  # no terminal to ask: "ask" permissions deny
    reason = "other"
    try:
        observer: Any = None
        from agentloop.mcp.agent import report_startup, server_states

        if fmt in ("text", "json"):  # stdout holds the answer alone; notices go to stderr
            agent.on_notice = lambda text: print(f"notice: {text}", file=sys.stderr)
        if fmt == "stream-json":
            stream = _StreamJson(agent.session.id)
            agent.on_notice = lambda text: stream.emit({"type": "system", "subtype": "notice", "text": text})
            stream.emit({"type": "system", "subtype": "init", "cwd": agent.cwd, "model": agent.model_spec,
                         "tools": agent.registry.names(), "mcp_servers": server_states(agent),
                         "permission_mode": agent.permission_mode})
            observer = stream
        report_startup(agent)  # a server that failed to start, said once
        t0 = time.monotonic()
        try:
            result = agent.ask(prompt, observer=observer)
        except Exception as exc:
            from agentloop.agent.core import AgentError

            if isinstance(exc, AgentError):
                raise UserError(str(exc)) from None
            raise
        elapsed = time.monotonic() - t0
        if fmt == "text":
            if result.answer:
                sys.stdout.write(result.answer + ("" if result.answer.endswith("\n") else "\n"))
                sys.stdout.flush()
            print(cost_line(agent, result), file=sys.stderr)
            for w in agent.warnings():
                print(f"warning: {w.text}", file=sys.stderr)
            if result.stop_reason not in FINISHED:
                detail = f": {result.error}" if result.error else ""
                print(f"agentloop: stopped: {result.stop_reason}{detail} (session {agent.session.id})", file=sys.stderr)
        else:
            obj = _result_json(agent, result, elapsed)
            if fmt == "stream-json":
                assert observer is not None
                observer.emit(obj)
            else:
                sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        if result.stop_reason == "interrupted":
            reason = "sigterm" if signals.terminating else "interrupted"
            return EXIT_TERMINATED if signals.terminating else EXIT_INTERRUPTED
        reason = "prompt_input_exit"
        return EXIT_OK if result.stop_reason in FINISHED else EXIT_PROBLEMS
    except KeyboardInterrupt:
        reason = "sigterm" if signals.terminating else "interrupted"
        return EXIT_TERMINATED if signals.terminating else EXIT_INTERRUPTED
    finally:
        _close(agent, reason)


def _close(agent: Any, reason: str) -> None:
    # A second Ctrl+C while saving must not leave the lock or a torn record:
    # records are written with signals held back, and the lock goes with the fd.
    try:
        agent.close(reason)
    except KeyboardInterrupt:
        agent.close(reason)


def main(args: argparse.Namespace) -> int:
    signals = Signals()
    signals.install()
    prompt = getattr(args, "print_prompt", None)
    if prompt is not None:
        return run_print(args, prompt, signals)
    from .repl import run_repl

    return run_repl(args, signals)
