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
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS, UserError
from .agent_setup import (
    _opt,
    cost_line,
    flush_tracing,
    make_agent,
    parse_price,
    report_config,
    split_rules,
)
from .terminal_text import json_line, say

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

    from .sdk_control import ControlChannel
    from .sdk_stream import StreamJson

__all__ = ["Signals", "cost_line", "flush_tracing", "main", "make_agent", "parse_price", "report_config", "run_print", "split_rules"]

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
        if _end_prompt():
            return
        raise KeyboardInterrupt


def _end_prompt() -> bool:
    """Ask a prompt_toolkit prompt that is running to end as if Ctrl+C was pressed; False when none runs.

    Raising KeyboardInterrupt from a signal handler while a prompt runs can land
    inside one of prompt_toolkit's own tasks, which then reports it as an
    unhandled error and waits for Enter: SIGTERM at the prompt would hang. The
    prompt's loop is asked to end instead, from its own thread's next turn.
    """
    if "prompt_toolkit" not in sys.modules:
        return False
    from prompt_toolkit.application import get_app_or_none

    app = get_app_or_none()
    if app is None or not app.is_running:
        return False

    def end() -> None:
        if not app.is_done:
            app.exit(exception=KeyboardInterrupt())

    app.loop.call_soon_threadsafe(end)  # type: ignore[union-attr]
    return True


def _short(value: Any, n: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 1] + "…"


class _Timing:
    """Observes a run for the result's figures: time in tools (so ``duration_api_ms`` is the
    rest), and the last reply (its stop reason)."""

    def __init__(self, inner: Any = None):
        self.inner = inner
        self.tool_s = 0.0
        self.last_reply: Any = None
        self._started: dict[str, float] = {}
        self.models: dict[str, tuple[Any, int]] = {}
        """Per answering model: its replies' usage and the spend of its turns (``modelUsage``)."""
        self._spent = 0

    def __call__(self, ev: Any) -> None:
        from agentloop.events import ToolFinished, ToolStarted, TurnRecorded

        if isinstance(ev, ToolStarted):
            self._started[ev.call.id] = time.monotonic()
        elif isinstance(ev, ToolFinished):
            t0 = self._started.pop(ev.result.call_id, None)
            if t0 is not None:
                self.tool_s += time.monotonic() - t0
        elif isinstance(ev, TurnRecorded):
            self.last_reply = ev.reply
            self._tally(ev)
        if self.inner is not None:
            self.inner(ev)


    def _tally(self, ev: Any) -> None:
        from agentloop.events import Usage

        spent = ev.spent_micros - self._spent if ev.spent_micros >= self._spent else ev.spent_micros  # a Stop hook's run starts at 0
        self._spent = ev.spent_micros
        name = ev.reply.model or ""
        usage, micros = self.models.get(name, (Usage(), 0))
        self.models[name] = (usage + (ev.reply.usage or Usage()), micros + spent)


def _result_json(agent: Agent, result: Any, elapsed: float, timing: _Timing) -> dict[str, Any]:
    from . import claude_format as cf

    return cf.result_message(
        session_id=agent.session.id,
        result=result,
        duration_ms=int(elapsed * 1000),
        duration_api_ms=max(0, int((elapsed - timing.tool_s) * 1000)),
        model=agent.model_name,
        context_window=int(agent.window or 0),
        permission_denials=list(getattr(agent, "permission_denials", [])),
        session_cost_micros=agent.stats.spent_micros,
        transcript=agent.session.path,
        last_reply=timing.last_reply,
        max_output_tokens=int(getattr(getattr(agent, "model_options", None), "max_output_tokens", 0) or 0),
        by_model=timing.models,
    )


def _piped_stdin(wait_s: float = 1.0) -> str | None:
    """What is piped on stdin (``cat log.txt | agentloop -p "explain"``), or None.

    A terminal, /dev/null or another device is not piped input. A pipe is read
    to its end if anything (or its end) arrives within ``wait_s``.
    """
    import select
    import stat

    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    if os.isatty(fd):
        return None
    if stat.S_ISREG(mode):
        return sys.stdin.read()
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        ready, _, _ = select.select([fd], [], [], wait_s)
        return sys.stdin.read() if ready else None
    return None


def _prompt_text(prompt: str | None) -> str:
    """The prompt of ``-p``: the words given, with piped stdin added after them ('-' is stdin alone). Bytes that
    are not UTF-8 (a raw 8-bit ``0x9b``, a Latin-1 file piped in) become U+FFFD, as a terminal would show them."""
    if prompt == "-":
        return _as_utf8(sys.stdin.read())
    piped = _piped_stdin()
    if piped and piped.strip():
        return _as_utf8(f"{prompt}\n\n{piped}" if prompt else piped)
    return _as_utf8(prompt or "")


def _as_utf8(text: str) -> str:
    """``text`` (read with Python's ``surrogateescape``: an undecodable byte is a lone surrogate) as valid text."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if any(
        "\udc80" <= c <= "\udcff" for c in text) else text


def run_print(args: argparse.Namespace, prompt: str | None, signals: Signals) -> int:
    """One prompt (or, with ``--input-format stream-json``, one per stdin line), no REPL:
    the answer on stdout in the chosen format."""
    from .sdk_flags import apply_sdk_flags

    sdk_warnings = apply_sdk_flags(args)
    fmt = _opt(args, "output_format", "text")
    streamed_in = _opt(args, "input_format", "text") == "stream-json"
    if streamed_in and fmt != "stream-json":
        raise UserError("--input-format stream-json goes with --output-format stream-json")
    if _opt(args, "permission_prompt_tool", None) is not None and not streamed_in:
        raise UserError("--permission-prompt-tool stdio goes with --input-format stream-json (the SDK answers on stdin)")
    if not streamed_in:
        prompt = _prompt_text(prompt)
        if not prompt.strip():
            raise UserError("the prompt is empty (give it as an argument, or pipe it on stdin)")
    schema = None
    if _opt(args, "json_schema", None) is not None:
        from .structured_output import parse_schema

        schema = parse_schema(str(args.json_schema))
    agent = make_agent(args)  # no terminal to ask: "ask" permissions deny, an untrusted folder's powers are left out
    sdk_warnings += _limit_tools(agent, _opt(args, "tools", None))
    for w in [*sdk_warnings, *getattr(agent, "load_warnings", [])]:
        say(f"warning: {w}", sys.stderr)
    report_config(agent, lambda line: say(line, sys.stderr))
    reason = "other"
    say(f"agentloop: {agent.cap_text()}", sys.stderr)
    from agentloop.agent.agent_settings import model_text

    if (why := model_text(agent.model_spec, agent.settings.model_source)) is not None:
        say(f"agentloop: {why}", sys.stderr)
    for line in agent.take_price_notices():
        say(f"warning: {line}", sys.stderr)
    try:
        stream: StreamJson | None = None
        for n in agent.startup_notices:  # said once, before anything runs
            say(f"agentloop: {n}", sys.stderr)
        from agentloop.mcp.agent import report_startup

        if fmt in ("text", "json"):  # stdout holds the answer alone; notices go to stderr
            agent.on_notice = lambda text: say(f"notice: {text}", sys.stderr)
        channel: ControlChannel | None = None
        if fmt == "stream-json":
            stream, channel = _start_stream(agent, args, streamed_in)
        report_startup(agent.mcp_servers, agent.on_notice)  # an MCP server that failed to start, said once
        code = EXIT_OK
        for text in channel.prompts() if channel is not None else [str(prompt)]:
            wait_at_turn_end(agent)  # -p has no next turn: a turn that ends while background agents run waits for them
            if channel is None:
                code = _answer(agent, text, fmt, stream, schema)
            else:  # the SDK's interrupt stops the turn; the session and the next prompts go on
                code, asked = channel.run_turn(lambda: _answer(agent, text, fmt, stream, schema, channel.running))  # noqa: B023
                code = EXIT_OK if asked and code == EXIT_INTERRUPTED else code
            if code in (EXIT_INTERRUPTED, EXIT_TERMINATED) or signals.terminating:
                break
        if code == EXIT_INTERRUPTED or signals.terminating:
            reason = "sigterm" if signals.terminating else "interrupted"
            return EXIT_TERMINATED if signals.terminating else EXIT_INTERRUPTED
        reason = "prompt_input_exit"
        return code
    except KeyboardInterrupt:
        reason = "sigterm" if signals.terminating else "interrupted"
        return EXIT_TERMINATED if signals.terminating else EXIT_INTERRUPTED
    finally:
        _close(agent, reason)


def _start_stream(agent: Agent, args: argparse.Namespace, streamed_in: bool) -> tuple[StreamJson, ControlChannel | None]:
    """The stream-json writer, told every notice and every sub-agent's turns, after its ``init`` line; with
    ``--input-format stream-json`` the SDK's control channel too, opened first so that the SDK's in-process
    MCP servers are up (and in ``init``) before the first prompt."""
    from agentloop import __version__
    from agentloop.mcp.agent import server_states

    from . import claude_format as cf
    from .sdk_stream import StreamJson

    stream = StreamJson(agent.session.id, partial=bool(_opt(args, "include_partial_messages", False)))
    agent.on_notice = stream.notice
    runner = getattr(getattr(agent, "context", None), "subagents", None)
    if runner is not None and hasattr(runner, "observer"):
        runner.observer = stream.child
    commands = sorted(getattr(agent, "commands", {}) or {})
    skills = sorted(getattr(agent, "skills", {}) or {})
    agents = sorted(getattr(runner, "types", {}) or {}) if runner is not None else []
    channel = _open_channel(agent, args, stream) if streamed_in else None
    if channel is not None:
        _serve_sdk_servers(agent, channel)
    stream.emit(cf.init_message(agent.session.id, cwd=agent.cwd, model=agent.model_spec, tools=agent.shown_tools().names(),
                                permission_mode=agent.permission_mode, mcp_servers=server_states(agent.mcp_servers),
                                slash_commands=commands, version=__version__, skills=skills, agents=agents,
                                plugins=_plugins(agent),
                                api_key_source=cf.api_key_source(agent.model_spec, agent.models.api_key_env, agent.env)))
    return stream, channel


def _limit_tools(agent: Agent, value: str | None) -> list[str]:
    """``--tools``: the built-in tools not listed are removed as a bare-name deny rule removes them (out of
    the model's view, and refused if called anyway); the warnings for names that are no tool."""
    from .sdk_flags import tools_to_remove

    remove, unknown = tools_to_remove(value, agent.registry.names())
    for name in remove:
        agent.cli_rules.append(("deny", name))  # kept if the policy is built again
        agent.policy.add_rule("deny", name, source="--tools")
    return [f"--tools: {name}: no such tool" for name in unknown]


def _open_channel(agent: Agent, args: argparse.Namespace, stream: StreamJson) -> ControlChannel:
    """Stdin's reader for ``--input-format stream-json`` (``sdk_control``): prompts, and the SDK's control
    requests answered while turns run; ``--permission-prompt-tool stdio`` asks the SDK's ``canUseTool``."""
    from .sdk_control import ControlChannel
    from .sdk_hooks import register_callbacks
    from .sdk_requests import handle, permission_asker

    channel = ControlChannel(stream, agent, handle)
    if _opt(args, "permission_prompt_tool", None) == "stdio":
        agent.ask_permission = permission_asker(channel)
    channel.hook_callbacks = lambda config: register_callbacks(channel, config)
    channel.sdk_servers = _take_sdk_servers(agent, channel)
    try:
        signal.signal(signal.SIGINT, channel.on_sigint)
    except ValueError:  # not the main thread (tests driving main in a thread): no interrupt by request
        channel.main_thread = None
    channel.start()
    return channel


def _serve_sdk_servers(agent: Agent, channel: ControlChannel, names: Sequence[str] = ()) -> None:
    """On the main thread: serve the SDK's in-process MCP servers (``--mcp-config`` entries of type ``sdk``, and
    ``names`` from ``initialize``) over ``channel`` and take their tools in; a server that failed is said once."""
    from agentloop.agent.builder import mcp_start
    from agentloop.mcp.agent import new_failures, start_servers

    if agent.mcp_servers is None and names:
        agent.serve_mcp(start_servers(mcp_start(agent), even_none=True))  # no server configured: a manager for the SDK's
    servers = agent.mcp_servers
    if servers is None:
        return
    servers.manager.add_sdk(names)
    if servers.manager.serve_sdk(channel.mcp_message):
        agent.tools_changed()
        if names:  # after init: say what failed now (at start, report_startup does)
            for text in new_failures(agent.mcp_servers):
                if agent.on_notice is not None:
                    agent.on_notice(text)


def _take_sdk_servers(agent: Agent, channel: ControlChannel) -> Callable[[list[str]], None]:
    """``initialize``'s ``sdkMcpServers`` (the reader thread): checked now, served before the next prompt."""
    from .sdk_control import ControlError

    def take(names: list[str]) -> None:
        manager = agent.mcp
        taken = [n for n in names if manager is not None and n in manager.names and manager.status_of(n).transport != "sdk"]
        if taken:
            raise ControlError(f"initialize: sdkMcpServers: {', '.join(taken)}: already an MCP server of another type")
        channel.between_turns.append(lambda: _serve_sdk_servers(agent, channel, names))
    return take


def _plugins(agent: Agent) -> list[dict[str, str]]:
    """The plugins the agent loaded, ``{name, path}`` each, where it loads any."""
    out = []
    for p in getattr(agent, "plugins", None) or ():
        name, path = getattr(p, "name", None), getattr(p, "path", None) or getattr(p, "root", None)
        if isinstance(name, str) and path is not None:
            out.append({"name": name, "path": str(path)})
    return out


def wait_at_turn_end(agent: Agent) -> None:
    bg = agent.context.backgrounds()
    if bg is not None:
        bg.wait_at_end = True


def _expand(agent: Agent, prompt: str) -> tuple[str, tuple[str, ...]]:
    """``-p "/name args"``: a custom command or skill (its text and its allowed-tools rules), or an MCP
    server's prompt, as in Claude Code; any other prompt as it is."""
    from agentloop.agent.agent import AgentError

    try:
        expanded = agent.expand_command(prompt.strip()) if prompt.startswith("/") else None
    except AgentError as exc:  # a ! line of the command failed: nothing is sent
        raise UserError(str(exc)) from None
    if expanded is not None:
        return expanded
    if prompt.startswith("/mcp__"):
        from agentloop.mcp.agent import run_prompt
        from agentloop.mcp.client import McpToolError

        name, _, rest = prompt.strip()[1:].partition(" ")
        try:
            text = run_prompt(agent.mcp_servers, name, rest.strip())
        except McpToolError as exc:
            raise UserError(str(exc)) from None
        if text is None:
            raise UserError(f"/{name}: no MCP server offers that prompt")
        return text, ()
    return prompt, ()


def _answer(agent: Agent, prompt: str, fmt: str, stream: StreamJson | None, schema: Any = None,
            running: Callable[[], AbstractContextManager[object]] = nullcontext) -> int:
    """One prompt through the agent, printed in ``fmt``; the exit code it deserves.

    ``schema``: ``--json-schema``'s (``structured_output``): the prompt asks for JSON, and the answer
    is read against it. ``running``: held while the agent runs (the SDK's interrupt stops only that)."""
    from agentloop.agent.agent import AgentError

    timing = _Timing(stream)

    def ask(text: str) -> Any:
        with running():
            return agent.ask(text, observer=timing, allowed_tools=rules)

    t0 = time.monotonic()
    prompt, rules = _expand(agent, prompt)
    denied_before = len(agent.permission_denials)
    structured: tuple[Any, str | None] = (None, None)
    blocks = _HookBlocks(agent) if fmt == "text" else None
    try:
        if schema is None:
            result = ask(prompt)
        else:
            from . import structured_output as so

            result = ask(f"{prompt}\n\n{schema.instructions()}")
            result, value, problem = so.settle(result, schema, ask)
            structured = (value, problem)
    except AgentError as exc:
        raise UserError(str(exc)) from None
    finally:
        if blocks is not None:
            blocks.stop()
    elapsed = time.monotonic() - t0
    if fmt == "text":
        _print_text(agent, result, denied_before, blocks.lines if blocks is not None else [])
    else:
        obj = _result_json(agent, result, elapsed, timing)
        if schema is not None:
            from .structured_output import apply

            apply(obj, *structured)
        if stream is not None:
            stream.emit(obj)
        else:
            sys.stdout.write(json_line(obj) + "\n")
            sys.stdout.flush()
    if result.stop_reason == "budget_overrun":
        say(f"warning: the provider billed past the reservation: {result.error}", sys.stderr)
    if result.stop_reason == "interrupted":
        return EXIT_INTERRUPTED
    if structured[1] is not None:
        say(f"agentloop: --json-schema: {structured[1]}", sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_OK if result.stop_reason in FINISHED else EXIT_PROBLEMS


def _print_text(agent: Agent, result: Any, denied_before: int, blocked: list[str]) -> None:
    """-p's text output: the answer on stdout; what was refused or blocked, the cost and warnings on stderr, each
    neutral on a terminal and on a pipe too (it often ends on one); --output-format json has the answer as written."""
    if result.answer:
        say(result.answer, sys.stdout, "" if result.answer.endswith("\n") else "\n")
        sys.stdout.flush()
    for d in agent.permission_denials[denied_before:]:  # the answer may say "done": say what was not
        say(f"agentloop: refused: {_call_summary(d, agent.cwd)} ({_how_to_allow(d)})", sys.stderr)
    for line in blocked:
        say(line, sys.stderr)
    cols = os.get_terminal_size(sys.stderr.fileno()).columns - 1 if sys.stderr.isatty() else None
    say(cost_line(agent, result, cols), sys.stderr)
    for w in agent.warnings():
        say(f"warning: {w.text}", sys.stderr)
    if result.stop_reason not in FINISHED:
        detail = f": {result.error}" if result.error else ""
        say(f"agentloop: stopped: {result.stop_reason}{detail} (session {agent.session.id})", sys.stderr)


class _HookBlocks:
    """What hooks blocked during one -p turn, read from the ``hook`` records as the session writes
    them: each said on stderr in text mode (the answer alone would not show that a call never ran)."""

    def __init__(self, agent: Agent):
        self.session = agent.session
        self.lines: list[str] = []
        self.session.listeners.append(self.see)

    def see(self, line: bytes) -> None:
        if b'"kind":"hook"' not in line or b'"blocked":true' not in line:
            return
        p = json.loads(line).get("payload") or {}
        event = str(p.get("event", "?"))
        if event == "UserPromptSubmit":  # already the turn's error
            return
        why = p.get("reason") or "no reason given"
        if event in ("Stop", "SubagentStop"):  # blocking a stop means going on
            self.lines.append(f"agentloop: a {event} hook kept the turn going: {why}")
            return
        what = f" {p['matcher_value']}" if p.get("matcher_value") else ""
        self.lines.append(f"agentloop: blocked by a {event} hook{what}: {why}")

    def stop(self) -> None:
        listeners = self.session.listeners  # the writer's list once the session's file exists
        if self.see in listeners:
            listeners.remove(self.see)


def _how_to_allow(denial: dict[str, Any]) -> str:
    """What a refused call needed in ``-p``: a rule (for a command outside the sandbox, an ``UnsandboxedBash`` rule)."""
    args = denial.get("tool_input")
    from agentloop.agent.tools.builtin import BASH

    if denial.get("tool_name") == BASH.name and isinstance(args, dict) and args.get("dangerouslyDisableSandbox") is True:
        from agentloop.agent.permissions.unsandboxed import how_to_allow

        return f"it asked to run outside the sandbox; -p cannot ask: {how_to_allow(str(args.get('command', '')))}"
    return "permission denied; -p cannot ask: allow it with --allowedTools or a rule"


def _call_summary(denial: dict[str, Any], cwd: str) -> str:
    """``Edit src/x.py`` or ``Bash rm -rf build``: a refused call in one short line (a path
    relative to the working directory, a long one cut at its start, a command at its end)."""
    from agentloop.agent.tools.catalog import path_arguments
    from agentloop.agent.tools.claude_names import PATH_ARGUMENTS

    name, args = str(denial.get("tool_name", "?")), denial.get("tool_input") or {}
    paths = path_arguments(name) or PATH_ARGUMENTS  # its record's, else those of a tool without one
    key = next((k for k in (*paths, "command", "url", "pattern") if isinstance(args, dict) and k in args), None)
    target = " ".join(str(args[key]).split()) if key else ""  # newlines and runs of blanks as one space
    if key in paths and os.path.isabs(target):
        rel = os.path.relpath(target, cwd)
        target = target if rel.startswith("..") else rel
        if len(target) > 60:
            target = "…" + target[-59:]
    elif len(target) > 60:
        target = target[:59] + "…"
    return f"{name} {target}".rstrip()


def _close(agent: Agent, reason: str) -> None:
    # A second Ctrl+C while saving must not leave the lock or a torn record:
    # records are written with signals held back, and the lock goes with the fd.
    try:
        agent.close(reason)
    except KeyboardInterrupt:
        agent.close(reason)
    flush_tracing(agent)


def main(args: argparse.Namespace) -> int:
    signals = Signals()
    signals.install()
    if getattr(args, "print_mode", False) or _opt(args, "input_format", "text") == "stream-json":  # the Agent SDK starts it without -p
        return run_print(args, getattr(args, "prompt", None), signals)
    from .sdk_flags import apply_sdk_flags

    for w in apply_sdk_flags(args):
        print(f"warning: {w}", file=sys.stderr)
    for flag, dest in (("--tools", "tools"), ("--permission-prompt-tool", "permission_prompt_tool")):
        if _opt(args, dest, None) is not None:  # the REPL asks its own questions and shows every tool
            raise UserError(f"{flag} goes with -p or --input-format stream-json (the Agent SDK's way of starting agentloop)")
    if _opt(args, "json_schema", None) is not None:  # Claude Code's CLI reference: print mode only
        raise UserError("--json-schema goes with -p (the final answer of one prompt)")
    from .repl import run_repl

    return run_repl(args, signals)
