"""The REPL: prompt_toolkit for input, plain writes and rich for output.

Rules:

1. Output is streamed as it comes: text deltas are written at once, each tool
   call is shown (name and shortened input) when it starts and when it ends.
   On a colour terminal each finished line is redrawn as Markdown
   (``markdown.py``); elsewhere the text is written as the model sent it.
2. On a terminal the input is prompt_toolkit (history file, completion of
   slash commands and ``@`` paths, Alt+Enter or a trailing ``\\`` for a new
   line, a status bar). Without one (a pipe, a file) lines are read plainly
   and the same commands work; permission asks are then denied.
3. Ctrl+C or Esc during a turn stops it (recorded as ``interrupted``, said on
   one line) and returns to the prompt, without arming the exit. At the prompt
   Ctrl+C clears what is typed; on an empty input it arms the exit, and Ctrl+C again, Ctrl+D,
   ``/exit`` or SIGTERM save the session and exit. No traceback reaches the user.
4. ``@path`` attaches a file's content only when its real path lies inside
   the workspace (the working directory or an added directory).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from agentloop.agent.commands import MAX_ATTACH, MENTION, expand_mentions  # noqa: F401 (re-exported: the REPL's @path)
from agentloop.agent.subagents.agent_tool import AGENT
from agentloop.agent.tools.builtin import BASH, READ
from agentloop.agent.tools.session_tools import TODO_WRITE

from ._common import EXIT_OK, UserError, color_enabled, console
from .agent_setup import fit
from .esc_watch import EscWatch
from .markdown import MarkdownStream
from .spinner import Spinner
from .terminal_text import neutral, shown_whole
from .typed_echo import TypedEcho

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent


def prompt_commands(agent: Agent) -> dict[str, Any]:
    from agentloop.mcp.agent import prompt_commands as found

    return found(agent.mcp_servers)


def run_prompt(agent: Agent, name: str, rest: str) -> str | None:
    from agentloop.mcp.agent import run_prompt as run

    return run(agent.mcp_servers, name, rest)

__all__ = ["Repl", "expand_mentions", "run_repl", "short_input"]

EXIT_TERMINATED = 143


def short_input(name: str, args: Any, n: int = 70) -> str:
    """A tool call's input in one short line: the command, the path or the pattern (TodoWrite: how many
    tasks; its list is drawn under the call when it ends)."""
    if name == TODO_WRITE.name and isinstance(args, dict) and isinstance(args.get("todos"), list):
        todos = args["todos"]
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        return f"{len(todos)} task{'' if len(todos) == 1 else 's'}, {done} done"
    if name == AGENT.name and isinstance(args, dict) and isinstance(args.get("description"), str):  # its task and type
        text = f"{args['description']} · {args.get('subagent_type') or 'general-purpose'}" + (
            " · background" if args.get("run_in_background") else "")
        return text if len(text) <= n else text[: n - 1] + "…"
    if isinstance(args, dict):
        for key in ("command", "file_path", "pattern", "path", "url", "query"):
            v = args.get(key)
            if isinstance(v, str) and v:
                text = " ".join(v.split())
                break
        else:
            text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 1] + "…"


def approved_input(name: str, args: Any) -> str:
    """A call's input as the permission question shows it: all of it, every character visible
    (a newline in a command is ``⏎`` and a break: ``ls⏎touch X`` never reads as a plain ``ls``)."""
    if isinstance(args, dict):
        for key in ("command", "file_path", "pattern", "path", "url", "query"):
            v = args.get(key)
            if isinstance(v, str) and v:
                return shown_whole(v)
    return shown_whole(json.dumps(args, ensure_ascii=False))


def width() -> int:
    """The terminal's width in columns (``COLUMNS`` first, as ``shutil`` reads it)."""
    import shutil

    return max(20, shutil.get_terminal_size().columns)


def fold(line: str, cols: int) -> str:
    """``line`` broken at word boundaries to ``cols`` columns, its continuation lines indented as
    it is (two more under a ``/command — help`` or ``name: text`` line); a word longer than a line
    is split, the one case a word breaks."""
    from rich.cells import cell_len

    if cell_len(line) <= cols:
        return line
    import textwrap

    lead = len(line) - len(line.lstrip(" "))
    hang = " " * min(lead + 2, max(0, cols // 2))
    return "\n".join(textwrap.wrap(line, cols, initial_indent="", subsequent_indent=hang, break_on_hyphens=False,
                                   drop_whitespace=True, replace_whitespace=False)) or line


def wrap(text: str, cols: int) -> list[str]:
    """``text`` wrapped at word boundaries to ``cols`` columns (a word longer than a line is split)."""
    import textwrap

    return textwrap.wrap(text, cols, break_on_hyphens=False) or [""]


def _mcp_state(agent: Agent) -> str:
    """The status line's MCP part: ``mcp 2/3`` while servers start or when some are down, else empty."""
    servers = getattr(agent, "mcp_servers", None) if agent is not None else None
    if servers is None:
        return ""
    states = [s.status for s in servers.manager.status()]
    up = sum(1 for st in states if st == "connected")
    if up == len(states):
        return ""
    starting = sum(1 for st in states if st in ("pending", "connecting"))
    return f"mcp {up}/{len(states)}" + (" starting" if starting else "")


@dataclass
class Command:
    name: str
    help: str
    run: Callable[[str], None]
    args: str = ""


class _Exit(Exception):
    def __init__(self, code: int, reason: str):
        self.code = code
        self.reason = reason


class Repl:
    """One REPL over one ``Agent`` (which may switch sessions)."""

    def __init__(self, args: argparse.Namespace, signals: Any, *, interactive: bool):
        self.args = args
        self.signals = signals
        self.interactive = interactive
        self.color = color_enabled(sys.stdout)
        self.con = console()
        self.err = console(stderr=True)
        self.agent: Agent = cast("Agent", None)  # made in run(), before any command or turn reads it
        self.armed = False
        """A Ctrl+C was pressed and no prompt was sent since: the next one exits."""
        self.at_line_start = True
        self.md: MarkdownStream | None = None
        self._streamed = False
        """Text of the model call in progress is on the screen (a retry then marks it withdrawn)."""
        self._thought_shown = False
        """The model call in progress streamed its thinking, shown already (not again with its reply)."""
        if self.color:
            import shutil

            self.md = MarkdownStream(self.write, lambda: shutil.get_terminal_size().columns)
        self.spinner = Spinner(_raw_write) if self.color else None
        self.echo = TypedEcho(_raw_write) if self.spinner is None and interactive else None
        """Without the working line (NO_COLOR), what is typed during a turn is shown plainly (``typed_echo.py``)."""
        self._asking = threading.Lock()
        self.session: Any = None
        self.commands: dict[str, Command] = {}
        self._shell_notes: list[str] = []
        self._calls: dict[str, Any] = {}
        self._esc: EscWatch | None = None
        """Watching for Esc while a turn runs (questions inside the turn pause it)."""
        self._typeahead = ""
        self._refused = False
        """The user said no at a permission question of this turn (which then stopped)."""
        self._prompt_loop: Any = None
        """The prompt's event loop while it is up (notices from other threads go through it)."""
        """Commands run with ``!`` and their output, sent with the next prompt."""
        self._add_builtin_commands()

    # -- output --

    def write(self, text: str) -> None:
        if not text:
            return
        self.quiet()
        sys.stdout.write(text)
        sys.stdout.flush()
        self.at_line_start = text.endswith("\n")

    def _show_typed(self, text: str) -> None:
        """What the user types while a turn runs: shown under the working line until the prompt takes it."""
        if self.spinner is not None:
            self.spinner.typed = text
        elif self.echo is not None:
            self.echo.typed = text

    def quiet(self) -> None:
        """Take the working line away (before anything else is written, or a question is asked)."""
        if self.spinner is not None:
            self.spinner.stop()
        if self.echo is not None:
            self.echo.stop()

    def working(self, label: str) -> None:
        """Show the working line, where a line starts (a colour terminal only; elsewhere what was typed)."""
        if self.spinner is not None and self.at_line_start:
            self.spinner.start(label)
        elif self.echo is not None and self.at_line_start:
            self.echo.start()

    def newline(self) -> None:
        self.quiet()
        if self.md is not None:
            self.md.flush()
        if not self.at_line_start:
            self.write("\n")

    def say(self, text: str, style: str = "") -> None:
        text = neutral(text)  # what came from elsewhere cannot steer the terminal; our colours are styles
        if sys.stdout.isatty():  # on a terminal, at word boundaries (never mid-word); a pipe gets whole lines
            cols = width() - 1
            text = "\n".join(fold(line, cols) for line in text.split("\n"))
        self.newline()
        if style and self.color:
            self.con.print(text, style=style, markup=False, highlight=False)
        else:
            self.con.print(text, markup=False, highlight=False)
        self.at_line_start = True

    def observe(self, ev: Any) -> None:
        from agentloop.events import (
            Stopped,
            TextDelta,
            TextWithdrawn,
            ThinkingDone,
            ToolFinished,
            ToolStarted,
            TurnRecorded,
        )

        if isinstance(ev, ThinkingDone):  # a thinking block as it ends, before the text after it, collapsed
            self._thought_shown = self._streamed = True
            self.say(collapsed_thinking([ev.block], width() - 1), "dim italic")
            self.working("thinking")
        elif isinstance(ev, TurnRecorded) and ev.reply.reasoning and not self._thought_shown:
            self._streamed = False  # a provider that does not stream thinking: shown once the reply is whole
            self.say(collapsed_thinking(ev.reply.reasoning, width() - 1), "dim italic")
            self.working("thinking")
        elif isinstance(ev, TextDelta):
            self._streamed = self._streamed or bool(ev.text)
            if self.md is not None:
                self.md.feed(neutral(ev.text))
            else:
                self.write(neutral(ev.text))
        elif isinstance(ev, TextWithdrawn):
            self._withdraw()
        elif isinstance(ev, TurnRecorded):
            self._streamed = self._thought_shown = False
        elif isinstance(ev, ToolStarted):
            self._calls[ev.call.id] = ev.call  # its arguments say what the result means (lines added...)
            self.say(f"⏺ {ev.call.name}({short_input(ev.call.name, ev.call.arguments)})", "bold cyan")
            self.working(f"running {ev.call.name}")
        elif isinstance(ev, ToolFinished):
            r = ev.result
            if r.ok and r.name == TODO_WRITE.name and isinstance(r.content, str):  # the task list, drawn whole, as one list
                lines = [x for x in r.content.splitlines() if x.strip() and not x.startswith("Task list updated")] or [""]
                self.say("\n".join(("  ⎿ " if i == 0 else "    ") + x for i, x in enumerate(lines)), "dim")
            elif r.ok and r.name == AGENT.name and isinstance(r.content, str):  # the child's answer, then its facts line
                lines = r.content.rstrip().splitlines() or [""]
                body, facts = (lines[:-1], lines[-1]) if len(lines) > 1 and lines[-1].startswith("[") else (lines, "")
                body = [x for x in body if x.strip()] or [""]
                shown = body[:8] + ([f"… {len(body) - 8} more lines"] if len(body) > 8 else [])
                self.say("\n".join(f"  ⎿ {x}" if i == 0 else f"    {x}" for i, x in enumerate(shown)))
                if facts:
                    self.say(f"    {facts}", "dim")
            elif r.ok:
                from .preview import result_summary

                call = self._calls.pop(r.call_id, None)
                args = call.arguments if call is not None else {}
                if r.name == BASH.name and isinstance(r.content, str):  # its first lines and how many more
                    from .preview import output_head

                    shown = output_head(r.content, width() - 5)
                    self.say("\n".join(("  ⎿ " if i == 0 else "    ") + x for i, x in enumerate(shown)), "dim")
                else:
                    self.say(f"  ⎿ {result_summary(r.name, args, r.content)}", "dim")
            else:
                self.say(f"  ⎿ error: {(r.error or '').splitlines()[0][:160] if r.error else ''}", "red")
            self.working("thinking")
        elif isinstance(ev, Stopped) and ev.reason == "interrupted":  # one line, whatever stopped it
            if self._refused:  # the user said no at a question: the turn stopped there
                self.say("⏹ interrupted: you said no · tell the model what to do instead", "yellow")
            else:
                self.say(f"⏹ interrupted{' (Esc)' if self._esc is not None and self._esc.pressed else ''}", "yellow")

    def _withdraw(self) -> None:
        """The model call broke off and is tried again: the text it streamed is marked as taken back
        (lines already on the screen cannot be), and the retry's text starts on a line of its own."""
        if not self._streamed:
            return
        self._streamed = self._thought_shown = False
        if self.md is not None:
            self.md.end()  # a code block the broken text opened does not swallow the retry's text
        self.say("  ⎿ the reply above broke off and is withdrawn; the retried reply follows", "dim")

    def child_view(self, info: dict[str, Any]) -> Any:
        """What a sub-agent does, shown under its ``Agent`` call: each tool call and its result, indented."""
        from agentloop.events import ToolFinished, ToolStarted

        calls: dict[str, Any] = {}

        def observe(ev: Any) -> None:
            if isinstance(ev, ToolStarted):
                calls[ev.call.id] = ev.call
                self.say(f"    ⏺ {ev.call.name}({short_input(ev.call.name, ev.call.arguments)})", "cyan")
            elif isinstance(ev, ToolFinished):
                r = ev.result
                if r.ok:
                    from .preview import result_summary

                    call = calls.pop(r.call_id, None)
                    self.say(f"      ⎿ {result_summary(r.name, call.arguments if call is not None else {}, r.content)}", "dim")
                else:
                    self.say(f"      ⎿ error: {(r.error or '').splitlines()[0][:160] if r.error else ''}", "red")

        return observe

    def status(self) -> str:
        from agentloop.budget import format_usd

        a = self.agent
        if a is None:
            return ""
        st = a.stats
        fill = st.last_input_tokens / a.window if a.window else 0.0
        budget = f" / {format_usd(a.max_usd_micros)}" if a.max_usd_micros is not None else ""
        if a.max_usd_micros:  # seed 004's cost line: the share of the budget spent
            budget += f" ({st.spent_micros / a.max_usd_micros:.0%})"
        model, tokens = a.model_spec, f"{st.input_tokens} in / {st.output_tokens} out"
        context, spend, session = f"context {fill:.0%}", f"{format_usd(st.spent_micros)}{budget}", f"session {a.session.id}"
        mcp = _mcp_state(a)
        mode = "" if a.permission_mode == "default" else f"mode {a.permission_mode} (shift+tab)"
        short_mode, name = mode.removesuffix(" (shift+tab)"), a.model_name
        # at a narrow width the least important parts go first: the session id, the tokens, the context; the
        # model stays (its short name) in every mode as long as the spend and the mode fit beside it
        return fit((f" {' · '.join(x for x in p if x)} " for p in (
            (mode, model, tokens, context, spend, mcp, session),
            (mode, model, tokens, context, spend, mcp),
            (mode, model, context, spend, mcp),
            (mode, name, context, spend, mcp),
            (short_mode, name, context, spend, mcp),
            (short_mode, name, spend, mcp),
            (short_mode, spend, mcp),
            (spend, mcp),
        )), width() - 1)

    async def _watch_mcp(self) -> None:
        """While the prompt is up: say each background server that failed (above the input, never
        over it) and redraw the status line as servers come up."""
        import asyncio

        from prompt_toolkit.application import get_app, run_in_terminal

        from agentloop.mcp.agent import new_failures

        app = get_app()
        shown = _mcp_state(self.agent)
        while True:
            await asyncio.sleep(0.25)
            for text in new_failures(self.agent.mcp_servers):
                await run_in_terminal(functools.partial(self.say, f"notice: {text}", "yellow"))
            now = _mcp_state(self.agent)
            if now != shown:
                shown = now
                app.invalidate()

    def _start_mcp(self) -> None:
        """Start the MCP servers not started yet, without waiting (their tools join as each comes up)."""
        servers = getattr(self.agent, "mcp_servers", None)
        if servers is not None:
            servers.start_in_background()

    def _say_mcp_not_ready(self) -> None:
        """Before a prompt goes out: servers that failed since last told, and those still starting
        (their tools are not in this prompt's tool list; they join as soon as each is up)."""
        from agentloop.mcp.agent import new_failures

        for text in new_failures(self.agent.mcp_servers):
            self.say(f"notice: {text}", "yellow")
        servers = getattr(self.agent, "mcp_servers", None)
        starting = servers.starting() if servers is not None else []
        if starting:
            names = ", ".join(repr(n) for n in starting)
            one = len(starting) == 1
            self.say(f"notice: MCP {'server' if one else 'servers'} {names} still starting: "
                     f"{'its' if one else 'their'} tools are not available yet and join when ready", "yellow")

    def toolbar(self) -> Any:
        """The bottom toolbar: the lines of the settings' ``statusLine`` command, else ``status()``."""
        line = self.status_line()
        if line is None:
            return self.status()
        from prompt_toolkit.formatted_text import ANSI

        return ANSI(line)

    def status_line(self) -> str | None:
        """Claude Code's ``statusLine`` (settings reference; status line docs): a command given the session
        as JSON on stdin, in the hooks' environment, under a timeout; rerun when the conversation or the
        spend changes. None when no status line is configured; a failure is one short line."""
        from agentloop.agent.hooks.runner import status_line
        from agentloop.config.settings import merged

        a = self.agent
        spec = merged(a.sources, "statusLine") if a is not None else None
        if not isinstance(spec, dict):
            return None
        command = spec.get("command")
        if spec.get("type", "command") != "command" or not isinstance(command, str) or not command.strip():
            return 'status line: only {"type": "command", "command": "..."} is supported'
        key = (command, a.session.id, len(a.session.messages), a.stats.spent_micros, a.model_spec)
        if getattr(self, "_status_key", None) != key:
            setter = next((s for s in reversed(a.sources) if "statusLine" in s.data), None)
            project = setter is not None and setter.in_project  # a project's: in the sandbox, as its hooks (record 0015)
            out, why = status_line(command, status_payload(a), a.child_env, a.cwd, confine=a.sandbox.confine if project else None,
                                   host_env=a.secrets.host_env)
            self._status_key, self._status_text = key, out if why is None else f"status line: {why}"
        return str(self._status_text)

    # -- permission asks (called from inside a turn) --

    def ask_permission(self, call: Any, decision: Any) -> Any:
        """The person's answer. "n" or Esc (and Enter alone) refuses and stops the turn, as Claude Code's "No, and
        tell Claude what to do differently (esc)" does: the refusal is the call's result, the model is not called
        again, and the prompt asks what to do instead."""
        from agentloop.agent.protocols import PermissionReply

        answer = self._ask_permission(call, decision)
        self.at_line_start = True
        if answer == "refuse":
            self._refused = True
            return PermissionReply("deny", "the turn stopped here; wait for the user to say what to do instead", interrupt=True)
        if answer != "deny":  # the tool runs now: show that something is happening (rule of spinner.py)
            self.working(f"running {call.name}")
        return answer

    def _ask_permission(self, call: Any, decision: Any) -> str:
        from .preview import change_preview

        self.newline()  # (which takes the working line away first)
        cols = width() - 1
        for line, style in change_preview(call.name, call.arguments, self.agent.cwd if self.agent else os.getcwd(), cols):
            self.say(line, style)
        why = getattr(decision, "reason", "") or (f"rule {decision.rule}" if getattr(decision, "rule", None) else "")
        question = f"Allow {call.name}({approved_input(call.name, call.arguments)})?" + (f" ({why})" if why else "")
        # "always" remembers exactly this call (for Bash, this exact line; a * in it is a star)
        always = "[a]lways this exact line" if call.name == BASH.name else "[a]lways"
        choices = f"[y]es / {always} this session / [n]o: "
        if "\n" not in question and len(question) + 1 + len(choices) <= cols:
            prompt = f"{question} {choices}"
        else:  # each line wrapped at word boundaries, above a prompt of the choices alone
            self.say("\n".join(part for line in question.split("\n") for part in wrap(line, cols)))
            prompt = choices
        while True:
            try:
                answer = self._read_key(prompt, "yan", esc="n")
            except EOFError:
                return "deny"
            a = answer.strip().lower()
            if a in ("y", "yes"):
                return "allow"
            if a in ("a", "always"):
                return "always"
            if a in ("n", "no", ""):
                return "refuse" if self.interactive else "deny"

    def elicit(self, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """An MCP server's question (elicitation): asked field by field with its schema; None declines it."""
        from agentloop.mcp.elicit import ask_fields

        with self._asking:
            self.newline()
            self.say(f"The MCP server {server!r} asks: {message}", "bold")
            try:
                go = self._read("Answer it? [y]es / [n]o (decline): ", permission=True).strip().lower()
            except EOFError:
                return None
            if go not in ("y", "yes"):
                return None
            try:
                return ask_fields(schema, lambda q: self._read(q, permission=True))
            except EOFError:  # Esc (or the end of input) in a field: the question is declined
                return None

    def show_progress(self, server: str, tool: str, text: str) -> None:
        """An MCP tool's progress, on the working line."""
        if self.spinner is not None:
            self.spinner.detail = text

    # -- folder trust (asked before the agent starts: nothing of the folder's has run yet) --

    def ask_trust(self, q: Any) -> bool:
        if q.changed is not None:
            self.say(f"The configuration of {q.folder} changed since you trusted it:", "bold yellow")
            for line in q.changed:
                self.say(f"  {line}")
        else:
            self.say(f"Do you trust the files in {q.folder}? Its configuration would:", "bold yellow")
            for line in q.lines:
                self.say(f"  {line}")
        if not q.remembered:
            self.say("(this is your home folder: the answer holds for this session only)", "dim")
        while True:
            try:
                answer = self._read("[t]rust this folder / [d]on't trust: ", permission=True)
            except (EOFError, KeyboardInterrupt):
                return False
            a = answer.strip().lower()
            if a in ("t", "trust", "y", "yes"):
                return True
            if a in ("d", "n", "no", "don't trust", "dont trust", ""):
                return False

    def ask_home(self, why: str) -> bool:
        """Go on with the home folder (or one above it) as the workspace?"""
        self.say(f"{why}: everything in it would be the agent's workspace (credential stores stay hidden,"
                 " start-up files read-only).", "bold yellow")
        try:
            answer = self._read("Work here anyway? [y/N] ", permission=True)
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    def ask_imports(self, paths: list[str]) -> bool:
        """Whether this folder's memory files may import files from outside it; asked once per folder."""
        from agentloop.agent.trust import printable

        self.say("This folder's memory files (CLAUDE.md, AGENTS.md) import files from outside it:", "bold yellow")
        for p in paths[:20]:
            self.say(f"  {printable(p)}")
        if len(paths) > 20:
            self.say(f"  ... and {len(paths) - 20} more")
        return self._yes_no("Load them into the system prompt? [y]es / [n]o (asked once for this folder): ")

    def ask_mcp_server(self, name: str, text: str) -> bool:
        self.say(f"This folder's .mcp.json has a new server: {text}", "bold yellow")
        return self._yes_no(f"Use MCP server {name}? [y]es / [n]o: ")

    def _yes_no(self, prompt: str) -> bool:
        """Ask until the answer is yes or no (Enter, end of input or Ctrl+C: no)."""
        while True:
            try:
                answer = self._read(prompt, permission=True)
            except (EOFError, KeyboardInterrupt):
                return False
            a = answer.strip().lower()
            if a in ("y", "yes"):
                return True
            if a in ("n", "no", ""):
                return False

    # -- input --

    def _make_session(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings

        kb = KeyBindings()

        @kb.add("escape", "enter")
        def _(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("c-c")  # Claude Code: Ctrl+C clears what is typed; only on an empty input does it start an exit
        def _clear_or_exit(event: Any) -> None:
            if event.current_buffer.text:
                event.current_buffer.reset()
                self.armed = False
                return
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

        @kb.add("s-tab")  # Shift+Tab: the next permission mode, as in Claude Code
        def _cycle(event: Any) -> None:
            self.agent.cycle_mode()
            event.app.invalidate()

        hist = os.path.join(self.agent.home, "history")
        try:
            from agentloop.config.private import private_dirs, private_file

            private_dirs(self.agent.home)
            os.close(private_file(hist))  # the prompts typed: 0600 before FileHistory appends to it
            trim_history(hist)  # seed 004: readline.set_history_length(1000)
            history: Any = FileHistory(hist)
        except OSError:
            history = None
        self.session = PromptSession(
            history=history,
            completer=_completer(self),
            complete_while_typing=False,
            key_bindings=kb,
            bottom_toolbar=self.toolbar,
            enable_suspend=True,
        )

    def _read(self, prompt: str, *, permission: bool = False) -> str:
        with self._esc.paused() if self._esc is not None else contextlib.nullcontext():
            return self._read_now(prompt, permission=permission)

    def _read_now(self, prompt: str, *, permission: bool = False) -> str:
        if not self.interactive:
            if permission:
                raise EOFError
            self.write(prompt)
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            self.at_line_start = True
            return line.rstrip("\n")
        if permission:  # a question: Esc cancels it, as Claude Code's dialogs do (the caller's safe answer)
            from prompt_toolkit import prompt as pt_prompt
            from prompt_toolkit.key_binding import KeyBindings

            kb = KeyBindings()

            @kb.add("escape", eager=True)
            def _cancel(event: Any) -> None:
                event.app.exit(exception=EOFError)

            return str(pt_prompt(prompt, key_bindings=kb))
        assert self.session is not None
        watch = self.agent is not None and getattr(self.agent, "mcp_servers", None) is not None

        def start_watch() -> None:
            import asyncio

            from prompt_toolkit.application import get_app

            self._prompt_loop = asyncio.get_running_loop()  # notices from other threads print above the input
            self._start_mcp()  # once the prompt is on screen: the servers' start-up does not delay it
            get_app().create_background_task(self._watch_mcp())

        default, self._typeahead = self._typeahead, ""
        try:
            return str(self.session.prompt(prompt, default=default, pre_run=start_watch if watch else None))
        finally:
            self._prompt_loop = None

    def notice(self, text: str) -> None:
        """A notice from anywhere (an MCP server's log line, from its thread): while the prompt is up it
        is printed above the input through prompt_toolkit, never over it; otherwise said as usual."""
        loop = self._prompt_loop
        if loop is None or threading.current_thread() is threading.main_thread():
            self.say(f"notice: {text}", "yellow")
            return
        import asyncio

        from prompt_toolkit.application import run_in_terminal

        async def above() -> None:
            await run_in_terminal(functools.partial(self.say, f"notice: {text}", "yellow"))

        try:
            asyncio.run_coroutine_threadsafe(above(), loop).result(5)
        except Exception:  # the prompt ended meanwhile: say it the usual way
            self.say(f"notice: {text}", "yellow")

    def _read_key(self, prompt: str, keys: str, esc: str = "") -> str:
        """One of ``keys``, taken as soon as it is pressed (no Enter), as Claude Code's questions are;
        Enter alone gives "" (the safe answer), Esc gives ``esc`` (Claude Code: Esc cancels a question).
        Without a terminal, a line as ``_read`` reads it."""
        if not self.interactive:
            return self._read(prompt, permission=True)

        if self._esc is not None:
            with self._esc.paused():
                return self._key_now(prompt, keys, esc)
        return self._key_now(prompt, keys, esc)

    def _key_now(self, prompt: str, keys: str, esc: str = "") -> str:
        from prompt_toolkit import prompt as pt_prompt
        from prompt_toolkit.key_binding import KeyBindings

        kb = KeyBindings()
        for k in keys:

            @kb.add(k)
            @kb.add(k.upper())
            def _(event: Any, k: str = k) -> None:
                event.current_buffer.insert_text(k)  # shown after the question, as if typed
                event.app.exit(result=k)

        @kb.add("escape", eager=True)  # a lone Esc, at once (not taken for the start of a key's sequence)
        def _cancel(event: Any) -> None:
            event.current_buffer.insert_text(esc)
            event.app.exit(result=esc)

        return str(pt_prompt(prompt, key_bindings=kb))

    def read_prompt(self) -> str:
        """One prompt; a line ending in ``\\`` continues on the next."""
        parts: list[str] = []
        prompt = "> "
        while True:
            line = self._read(prompt)
            if line.endswith("\\") and not line.endswith("\\\\"):
                parts.append(line[:-1])
                prompt = ". "
                continue
            parts.append(line)
            return "\n".join(parts)

    # -- the loop --

    def run(self) -> int:
        from agentloop.agent.agent import AgentError

        from .agent_setup import make_agent, report_config

        if getattr(self.args, "resume", None) == "":  # -r without an id
            try:
                self.args.resume = self.pick_session()
            except KeyboardInterrupt:
                return EXIT_OK
        self.agent = make_agent(
            self.args,
            ask_permission=self.ask_permission if self.interactive else None,
            ask_trust=self.ask_trust if self.interactive else None,
            ask_mcp_server=self.ask_mcp_server if self.interactive else None,
            mcp_in_background=True,  # the prompt is up at once; each server's tools join when it is
            ask_imports=self.ask_imports if self.interactive else None,
            ask_home=self.ask_home if self.interactive else None,
        )
        report_config(self.agent, lambda line: self.say(line, "yellow"))
        self.agent.on_notice = self.notice
        self.agent.elicit = self.elicit  # MCP servers' questions (-p has none of this: they are declined)
        self.agent.on_mcp_progress = self.show_progress
        runner = getattr(self.agent.context, "subagents", None)
        if runner is not None and runner.observer is None:  # each child's tool calls, indented under its Agent call
            runner.observer = self.child_view
        for n in getattr(self.agent, "startup_notices", ()):
            self.say(f"notice: {n}", "yellow")
        reason, code = "other", EXIT_OK
        try:
            if self.interactive:
                self._make_session()
            self.banner()
            from agentloop.mcp.agent import report_startup

            report_startup(self.agent.mcp_servers, self.agent.on_notice)  # MCP servers that failed to start, as notices under the banner
            first = getattr(self.args, "prompt", None)  # agentloop "explain this": the first prompt
            while True:
                try:
                    if first:
                        text, first = first, None
                        self.say(f"> {text}", "bold")
                    else:
                        text = self.read_prompt()
                except KeyboardInterrupt:
                    if self.signals.terminating:
                        raise _Exit(EXIT_TERMINATED, "sigterm") from None
                    if self.armed:
                        raise _Exit(EXIT_OK, "prompt_input_exit") from None
                    self.armed = True
                    self.say("(Ctrl+C again or Ctrl+D to exit)", "dim")
                    continue
                except EOFError:
                    raise _Exit(EXIT_OK, "prompt_input_exit") from None
                if not text.strip():
                    continue
                try:
                    self.handle(text)
                except KeyboardInterrupt:
                    if self.signals.terminating:
                        raise _Exit(EXIT_TERMINATED, "sigterm") from None
                    self.armed = False  # it stopped what ran; exiting takes presses at the prompt
                    self.say("⏹ interrupted", "yellow")
                except AgentError as exc:
                    self.say(f"error: {exc}", "red")
                except UserError as exc:
                    self.say(f"error: {exc}", "red")
                if self.signals.terminating:
                    raise _Exit(EXIT_TERMINATED, "sigterm")
        except _Exit as e:
            reason, code = e.reason, e.code
        except KeyboardInterrupt:
            reason, code = ("sigterm", EXIT_TERMINATED) if self.signals.terminating else ("interrupted", EXIT_OK)
        finally:
            self._close(reason)
        return code

    def _close(self, reason: str) -> None:
        a = self.agent
        try:
            a.close(reason)
        except KeyboardInterrupt:
            a.close(reason)
        from .agent_setup import flush_tracing

        flush_tracing(a)
        self.newline()
        if a.session.written:
            self.say(f"session {a.session.id} saved; resume with: agentloop --resume {a.session.id}", "dim")

    def banner(self) -> None:
        a = self.agent
        resumed = "resumed" if not a.session.created else "new"
        self.say(f"agentloop · {a.model_spec} · {resumed} session {a.session.id} · /help for commands", "bold")
        self.say(a.cap_text(), "dim" if a.max_usd_micros is not None else "yellow")
        from agentloop.agent.agent_settings import model_text

        if (why := model_text(a.model_spec, a.settings.model_source)) is not None:
            self.say(why, "dim")
        for line in a.take_price_notices():
            self.say(f"warning: {line}", "yellow")
        if a.memory_files:
            self.say("memory: " + ", ".join(os.path.relpath(p, a.cwd) if p.startswith(a.cwd) else p for p in a.memory_files), "dim")
        for w in getattr(a, "load_warnings", []):
            self.say(f"warning: {w}", "yellow")
        if not a.session.created:
            self.last_exchange()

    def last_exchange(self) -> None:
        """A resumed session's last prompt and its answer, so the user knows where they are."""
        from agentloop.conversation import SUMMARY_PREFIX

        msgs = self.agent.session.messages
        i = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].get("role") == "user" and isinstance(msgs[i].get("content"), str)
                  and not str(msgs[i]["content"]).startswith(SUMMARY_PREFIX)), None)
        if i is None:
            return
        cols = width() - 1
        prompt = str(msgs[i]["content"]).strip().splitlines() or [""]
        answer = next((str(m.get("content")) for m in reversed(msgs[i + 1 :]) if m.get("role") == "assistant"
                       and isinstance(m.get("content"), str) and str(m.get("content")).strip()), "")
        self.say("the last exchange:", "dim")
        self.say(fit((f"> {prompt[0]}" + (" …" if len(prompt) > 1 else ""), f"> {prompt[0][: cols - 4]}…"), cols), "bold")
        lines = answer.strip().splitlines()
        shown = [x for line in lines[:6] for x in wrap(line, cols - 2)][:8]
        if shown:
            more = len(lines) - 6
            self.say("\n".join(f"⏺ {x}" if n == 0 else f"  {x}" for n, x in enumerate(shown))
                     + (f"\n  … {more} more lines" if more > 0 else ""))

    def pick_session(self) -> str | None:
        """``-r`` without an id: this directory's recent sessions, chosen by number (None: a new one)."""
        from agentloop.agent.session.store import list_sessions
        from agentloop.config.settings import agentloop_home

        cwd = os.path.abspath(getattr(self.args, "cwd", None) or os.getcwd())
        found = list_sessions(cwd, agentloop_home())[:20]
        if not found:
            self.say("no saved session in this directory yet: starting a new one", "dim")
            return None
        cols = width() - 1
        self.say("sessions of this directory, newest first:", "bold")
        for n, s in enumerate(found, 1):
            head = f"{n:>3}  {s.started.replace('T', ' ').rstrip('Z')[:16]}  {s.turns:>3} turns  "
            prompt = " ".join(s.first_prompt.split())
            room = cols - len(head)
            self.say(head + (prompt if len(prompt) <= room else prompt[: max(0, room - 1)] + "…"))
        while True:
            try:
                answer = self._read_line(f"resume which? [1-{len(found)}, Enter for a new session]: ")
            except EOFError:
                return None
            a = answer.strip()
            if not a:
                return None
            if a.isdigit() and 1 <= int(a) <= len(found):
                return found[int(a) - 1].id
            self.say(f"{a!r}: give a number from 1 to {len(found)}", "red")

    def _read_line(self, prompt: str) -> str:
        """One line before the REPL's own prompt exists (the session picker)."""
        if self.interactive:
            from prompt_toolkit import prompt as pt_prompt

            return str(pt_prompt(prompt))
        self.write(prompt)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        self.at_line_start = True
        return line.rstrip("\n")

    def handle(self, text: str) -> None:
        if text.startswith("/") and not text.startswith("//"):
            name, _, rest = text[1:].partition(" ")
            self.slash(name, rest.strip())
            return
        if text.startswith("!") and text[1:].strip():
            self.bash_mode(text[1:].strip())
            return
        self.armed = False
        if self._shell_notes:  # what ! ran since the last prompt goes with it, as the model's context
            text = "\n\n".join([*self._shell_notes, text])
            self._shell_notes.clear()
        self.send(text)

    def bash_mode(self, command: str) -> None:
        """``!cmd``: run it now, as Claude Code's Bash mode does: in the sandbox, through the tool pipeline
        (no tool hook, no question: the user typed it), its output shown redacted and sent with the next prompt."""
        from agentloop.events import ToolCall

        self.armed = False
        self.working("running !")
        result = self.agent.calls.run_typed(ToolCall("user_bang", BASH.name, {"command": command}))  # the pipeline redacts it
        self.quiet()
        out = result.content if result.ok else (result.error or "")
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        self.say(text.rstrip("\n") or "(no output)", "" if result.ok else "red")
        self._shell_notes.append(f"<bash-input>{command}</bash-input>\n<bash-stdout>{text.rstrip()}</bash-stdout>")

    def send(self, text: str, allowed_tools: tuple[str, ...] = (), *, mentions: bool = True) -> None:
        a = self.agent
        roots = list(a.workspace.roots)
        self._start_mcp()  # a first prompt given on the command line goes out before any prompt is drawn
        self._say_mcp_not_ready()

        def refuse(real: str) -> str | None:
            d = a.policy.decide(READ.name, {READ.paths[0]: real})
            return f"reading it is denied ({d.reason})" if d.behavior == "deny" else None

        prompt, attached, refused = expand_mentions(text, a.cwd, roots, refuse=refuse) if mentions else (text, [], [])
        for r in refused:
            self.say(f"warning: {r}", "yellow")
        for p in attached:
            self.say(f"attached {os.path.relpath(p, a.cwd)}", "dim")
        from agentloop.mcp.agent import expand_resources

        prompt, resources, refused = expand_resources(a.mcp_servers, prompt)  # @server:uri attaches an MCP resource
        for r in refused:
            self.say(f"warning: {r}", "yellow")
        for name in resources:
            self.say(f"attached {name}", "dim")
        self.working("thinking")
        self._refused = self._streamed = self._thought_shown = False  # (a turn stopped early left them set)
        watch = EscWatch(sys.stdin.fileno(), on_typed=self._show_typed) if self.interactive else None
        self._esc = watch
        try:
            with watch if watch is not None else contextlib.nullcontext():
                result = a.ask(prompt, observer=self.observe, allowed_tools=allowed_tools)
        finally:
            self._esc = None
            self.quiet()
            if self.spinner is not None:
                self.spinner.typed = ""  # it is in the next prompt now
            if self.echo is not None:
                self.echo.typed = ""
            if self.md is not None:
                self.md.end()
        self.newline()
        if result.stop_reason not in ("no_tool_calls", "sentinel", "interrupted"):
            detail = f": {result.error}" if result.error else ""
            self.say(f"stopped: {result.stop_reason}{detail}", "red")
        # Ctrl+C, Esc or a no at a question stops the turn and never starts an exit: that takes presses
        # while nothing runs (Claude Code's Ctrl+C: "cancel current input or generation")
        self.armed = False
        if watch is not None and watch.typed:
            self._typeahead = watch.typed  # keys typed during the turn wait in the next prompt
        from .agent_setup import cost_line

        self.say(cost_line(a, result, width() - 1), "dim")
        for w in a.warnings():
            self.say(f"warning: {w.text}", "yellow")

    # -- slash commands --

    def _add_builtin_commands(self) -> None:
        for c in (
            Command("help", "show the commands", self.cmd_help),
            Command("clear", "start a new session (this one is saved)", self.cmd_clear),
            Command("resume", "resume a session (the latest other one without an id)", self.cmd_resume, "[id]"),
            Command("sessions", "list this directory's sessions", self.cmd_sessions),
            Command("compact", "compact the conversation to free context", self.cmd_compact, "[instructions]"),
            Command("rewind", "list the prompts, or go back to before prompt N (files, conversation or both)", self.cmd_rewind,
                    "[N [files|conversation|both] [--force]]"),
            Command("model", "show or switch the model", self.cmd_model, "[spec]"),
            Command("permissions", "show the rules and where they come from; add or remove one", self.cmd_permissions,
                    "[allow|ask|deny RULE [--file PATH] | remove N]"),
            Command("mcp", "list MCP servers and their tools; /mcp login|logout SERVER signs in or out (OAuth)", self.cmd_mcp),
            Command("sandbox", "show the Bash sandbox: mode, writable paths, network, hidden paths", self.cmd_sandbox),
            Command("cost", "tokens, cache use, spend and tool success counts", self.cmd_cost),
            Command("agents", "list the sub-agent types: name, where defined, description, tools, model", self.cmd_agents),
            Command("exit", "save the session and exit", self.cmd_exit),
            Command("quit", "the same as /exit", self.cmd_exit),
        ):
            self.commands[c.name] = c

    def slash(self, name: str, rest: str) -> None:
        if name in self.commands:
            self.commands[name].run(rest)
            return
        a = self.agent
        from agentloop.agent.agent import AgentError

        try:
            expanded = a.expand_command(f"/{name} {rest}".rstrip()) if (name in a.commands or name in a.skills) else None
        except AgentError as exc:  # a ! line failed: the command stops, nothing is sent
            self.say(f"error: /{name}: {exc}", "red")
            return
        if expanded is not None:
            self.armed = False
            prompt, rules = expanded
            self.send(prompt, allowed_tools=rules, mentions=False)  # the command's @paths are attached already
            return
        if name.startswith("mcp__"):  # an MCP server's prompt: /mcp__server__prompt args
            from agentloop.mcp.client import McpToolError

            try:
                text = run_prompt(a, name, rest)
            except McpToolError as exc:
                self.say(f"error: {exc}", "red")
                return
            if text is not None:
                self.armed = False
                self.send(text)
                return
        self.say(f"unknown command /{name}; /help lists them", "red")

    def all_command_names(self) -> list[str]:
        a = self.agent
        extra = [*a.commands, *a.skills, *prompt_commands(a)] if a is not None else []
        return sorted({*self.commands, *extra})

    def cmd_help(self, rest: str) -> None:
        lines = [f"/{c.name}{' ' + c.args if c.args else ''} — {c.help}" for c in self.commands.values() if c.name != "quit"]
        a = self.agent
        for n, c in sorted(a.commands.items()):
            lines.append(f"/{n} — {getattr(c, 'description', '') or 'custom command'}")
        for n, s in sorted(a.skills.items()):
            lines.append(f"/{n} — skill: {getattr(s, 'description', '')}")
        for n, (server, p) in sorted(prompt_commands(a).items()):
            lines.append(f"/{n} — MCP prompt of {server}: {getattr(p, 'description', None) or p.name}")
        lines += ["", "@path attaches a file of the workspace, @server:uri an MCP resource · Alt+Enter or a trailing \\ for a new line",
                  "!command runs it now, in the sandbox (Bash mode); it and its output go with your next prompt",
                  "Esc (or Ctrl+C) stops a turn; Esc at a permission question answers no and stops the turn",
                  "Shift+Tab cycles the permission modes: default, acceptEdits, plan",
                  "Ctrl+C clears the input; on an empty input, Ctrl+C twice or Ctrl+D exits"]
        self.say("\n".join(lines))

    def cmd_clear(self, rest: str) -> None:
        self.agent.switch_session(None, "clear")
        self.say(f"new session {self.agent.session.id}", "dim")

    def cmd_resume(self, rest: str) -> None:
        from agentloop.agent.session.store import SessionError, list_sessions

        a = self.agent
        sid = rest.split()[0] if rest.split() else None
        if sid is None:
            others = [s for s in list_sessions(a.cwd, a.home) if s.id != a.session.id]
            if not others:
                self.say("no other session to resume", "yellow")
                return
            sid = others[0].id
        try:
            a.switch_session(sid, "resume")
        except SessionError as exc:
            self.say(f"error: {exc}", "red")
            return
        n = sum(1 for m in a.session.messages if m.get("role") == "user")
        self.say(f"resumed session {a.session.id} ({n} user messages)", "dim")
        self.last_exchange()

    def cmd_sessions(self, rest: str) -> None:
        from agentloop.agent.session.store import list_sessions

        from .cmd_sessions import render

        a = self.agent
        found = list_sessions(a.cwd, a.home)
        if not found:
            self.say("no saved sessions yet (a session is saved once it has a turn)")
            return
        self.newline()
        render(found[:20], con=self.con, cols=width() - 1)

    def cmd_compact(self, rest: str) -> None:
        from agentloop.budget import format_usd

        a = self.agent
        before, spent = list(a.session.messages), a.stats.spent_micros
        a.compact(rest)
        cost = f" (it cost {format_usd(a.stats.spent_micros - spent)})" if a.stats.spent_micros != spent else ""
        if a.session.messages == before:
            self.say(f"nothing worth compacting: the conversation is still short ({len(before)} messages){cost}", "dim")
            return
        self.say(f"compacted: {len(before)} messages → {len(a.session.messages)}{cost}", "dim")

    def cmd_rewind(self, rest: str) -> None:
        """``/rewind``: the prompts to go back to; ``/rewind N [files|conversation|both] [--force]`` goes."""
        from agentloop.agent.session.checkpoints import prompts_of
        from agentloop.transcript import read_records

        a = self.agent
        words = rest.split()
        if not words:
            records = list(read_records(a.session.path)) if a.session.written else []
            prompts = prompts_of(records)
            if not prompts:
                self.say("nothing to rewind: no prompt yet", "dim")
                return
            for n, _seq, text in prompts:
                self.say(f"  {n:>3}  {prompt_label(text, width() - 8)}")
            self.say("/rewind N [files|conversation|both] goes back to before prompt N (both by default). "
                     "Files changed by Bash commands are not tracked and are not put back.", "dim")
            return
        try:
            turn = int(words[0])
        except ValueError:
            self.say(f"/rewind {words[0]}: give a prompt number (see /rewind)", "red")
            return
        what = next((w for w in words[1:] if w in ("files", "conversation", "both")), "both")
        force = "--force" in words[1:]
        out = a.rewind(turn, files=what in ("files", "both"), conversation=what in ("conversation", "both"), force=force)
        for p in out["restored"]:
            self.say(f"restored {os.path.relpath(p, a.cwd) if p.startswith(a.cwd) else p}", "dim")
        for p in out["left"]:
            self.say(f"left alone: {p} was changed since (by hand or by Bash); /rewind {turn} {what} --force puts it back", "yellow")
        if out["conversation"]:
            self.say(f"the conversation is back to before prompt {turn}", "dim")
        self.say("note: changes made by Bash commands are not tracked by rewind", "dim")

    def cmd_model(self, rest: str) -> None:
        if not rest:
            self.say(f"model: {self.agent.model_spec} (context window {self.agent.window} tokens)")
            return
        self.agent.set_model(rest.split()[0])
        self.say(f"model switched to {self.agent.model_spec}", "dim")
        for line in self.agent.take_price_notices():
            self.say(f"warning: {line}", "yellow")

    def cmd_permissions(self, rest: str) -> None:
        from .permissions_edit import PermissionEditError, add_rule, remove_rule

        a = self.agent
        words = rest.split(None, 1)
        if words and words[0] in ("allow", "ask", "deny", "remove"):
            try:
                if words[0] == "remove":
                    done = remove_rule(a, words[1] if len(words) > 1 else "")
                else:
                    done = add_rule(a, words[0], words[1] if len(words) > 1 else "")
            except PermissionEditError as exc:
                self.say(f"/permissions: {exc}", "red")
                return
            self.say(done, "dim")
            return
        if words:
            self.say(f"/permissions {words[0]}: expected allow, ask, deny or remove (see /help)", "red")
            return
        lines = [f"mode: {a.policy.mode}"]
        rules = a.policy.describe()
        if not rules:
            lines.append("no rules: read-only tools run, others ask (settings: permissions.allow / ask / deny)")
        for n, (behavior, rule, source) in enumerate(rules, 1):
            shown = os.path.relpath(source, a.cwd) if source.startswith(a.cwd + os.sep) else source
            lines.append(f"  {n:>2}  {behavior:<5} {rule}   ({shown})")
        if a.add_dirs:
            lines.append("additional directories: " + ", ".join(a.add_dirs))
        self.say("\n".join(lines))

    def cmd_agents(self, rest: str) -> None:
        from agentloop.agent.subagents.agent_types import describe_types

        runner = getattr(self.agent.context, "subagents", None)
        self.say("\n".join(describe_types(runner.types if runner is not None else {}, self.agent.model_spec)))

    def cmd_sandbox(self, rest: str) -> None:
        self.say(self.agent.sandbox.describe())

    def cmd_mcp(self, rest: str) -> None:
        fn = self.agent.mcp_status
        if self.agent.mcp is None:
            self.say("no MCP servers (configure them in .mcp.json)")
            return
        words = rest.split()
        if words and words[0] in ("login", "logout"):
            from agentloop.mcp.client import McpToolError

            manager = self.agent.mcp
            if len(words) != 2:
                self.say(f"usage: /mcp {words[0]} SERVER", "red")
                return
            try:
                if words[0] == "logout":
                    had = manager.sign_out(words[1])
                    self.say(f"signed out of {words[1]}" if had else f"{words[1]}: there was no sign-in to forget", "dim")
                    return
                st = manager.sign_in(words[1], self._open_url)
            except McpToolError as exc:
                self.say(f"error: {exc}", "red")
                return
            if st.status == "connected":
                self.say(f"signed in to {words[1]}", "bold")
                self.say(str(fn()))
            else:
                self.say(f"sign-in to {words[1]} failed: {st.error}", "red")
            return
        self.say(str(fn()))

    def _open_url(self, url: str) -> None:
        """Show the sign-in URL (for where no browser opens) and try to open a browser on it."""
        from agentloop.agent import spawn

        self.newline()
        self.write(f"sign in at: {url}\n")  # whole, unwrapped: it must stay copyable
        if os.environ.get("AGENTLOOP_NO_BROWSER") is None:
            # the browser is a child too, on the host: no provider keys, and no project env (its BROWSER would name
            # the program webbrowser starts)
            spawn.open_url(url, env=self.agent.secrets.host_env)

    def cmd_cost(self, rest: str) -> None:
        from agentloop.budget import format_usd

        a = self.agent
        st = a.stats
        budget = f" of {format_usd(a.max_usd_micros)}" if a.max_usd_micros is not None else ""
        lines = [
            f"session {a.session.id} · {st.turns} prompts · {st.model_calls} model calls",
            f"tokens: {st.input_tokens} in / {st.output_tokens} out" + (
                "" if not st.estimated_tokens else " (estimated: the provider reported no usage)"
                if st.estimated_tokens >= st.input_tokens + st.output_tokens else f" ({st.estimated_tokens} of them estimated)"),
            f"cache: {st.cache_read_tokens} read / {st.cache_write_tokens} written",
            f"spend: {format_usd(st.spent_micros)}{budget} · {a.cap_text()}",
            f"context: {st.last_input_tokens} of {a.window} tokens",
        ]
        if st.tools:
            lines.append("tools:")
            for name, c in sorted(st.tools.items()):
                lines.append(f"  {name}: {c['ok']} ok, {c['failed']} failed")
        else:
            lines.append("tools: none used yet")
        self.say("\n".join(lines))

    def cmd_exit(self, rest: str) -> None:
        raise _Exit(EXIT_OK, "prompt_input_exit")


def collapsed_thinking(blocks: Iterable[Any], cols: int) -> str:
    """A reply's thinking in one line, as Claude Code shows it collapsed (``∴`` and a dim line): its first
    words and how much more there is; a block the provider redacted is said to be so."""
    from rich.cells import cell_len, set_cell_size

    text = " ".join(str(b.get("thinking", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "thinking")
    words = text.split()
    if not words:
        return "∴ Thought (the provider sent it redacted)"
    more = f" ({len(words)} words)"
    line = f"∴ Thought: {neutral(' '.join(words))}"
    if cell_len(line) <= cols:
        return line
    return set_cell_size(line, max(12, cols - cell_len(more) - 1)) + "…" + more


_BANG = re.compile(r"<bash-input>(.*?)</bash-input>\s*(?:<bash-stdout>.*?</bash-stdout>\s*)?", re.S)


def prompt_label(text: str, cols: int) -> str:
    """A prompt in one line as the user typed it: a ``!`` command sent with it is ``!cmd`` again (not the
    ``<bash-input>`` wrapping the model reads), then the first line of what was typed; cut to ``cols``."""
    bangs = [f"!{' '.join(m.group(1).split())}" for m in _BANG.finditer(text)]
    rest = _BANG.sub("", text).strip()
    label = " · ".join([*bangs, *(rest.splitlines()[:1])])
    return label if len(label) <= cols else label[: max(1, cols - 1)] + "…"


MAX_HISTORY = 1000
"""Prompts kept in the history file (seed 004's REPL keeps 1,000)."""


def trim_history(path: str, keep: int = MAX_HISTORY) -> None:
    """Cut prompt_toolkit's history file (entries of ``# time`` then ``+line`` lines) to its last ``keep`` entries."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return
    starts = [i for i, line in enumerate(lines) if line.startswith("# ")]
    if len(starts) <= keep:
        return
    cut = starts[-keep] - 1 if starts[-keep] > 0 and lines[starts[-keep] - 1] == "" else starts[-keep]
    tmp = path + ".tmp"
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        f.write("\n".join(lines[cut:]))  # the prompts typed stay the user's alone (0600)
    os.replace(tmp, path)


def status_payload(a: Any) -> dict[str, Any]:
    """What a ``statusLine`` command reads on stdin, in Claude Code's documented shape (plus the budget)."""
    from agentloop import __version__

    st = a.stats
    out: dict[str, Any] = {
        "hook_event_name": "Status",
        "session_id": a.session.id,
        "transcript_path": str(a.session.path),
        "cwd": a.cwd,
        "model": {"id": a.model_spec, "display_name": a.model_name},
        "workspace": {"current_dir": a.cwd, "project_dir": a.cwd},
        "version": __version__,
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": st.spent_micros / 1_000_000},
    }
    if a.max_usd_micros:
        out["budget"] = {"max_usd": a.max_usd_micros / 1_000_000, "fraction": st.spent_micros / a.max_usd_micros}
    return out


def _raw_write(text: str) -> None:
    """The working line's own writes: not the REPL's text, so they leave its line tracking alone."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _completer(repl: Repl) -> Any:
    """Slash commands (MCP prompts included) at the start of the line; ``@`` paths and ``@server:uri`` anywhere."""
    from prompt_toolkit.completion import Completer, Completion

    class _Completer(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            before = document.text_before_cursor
            if before.startswith("/") and " " not in before:
                for n in repl.all_command_names():
                    if n.startswith(before[1:]):
                        yield Completion("/" + n, start_position=-len(before))
                return
            m = re.search(r"@([^\s]*)$", before)
            if not m:
                return
            partial = m.group(1)
            mcp = getattr(repl.agent, "mcp", None)
            if mcp is not None:  # @server:uri, an MCP resource
                for server, resources in mcp.resources().items():
                    for r in resources:
                        ref = f"{server}:{r.uri}"
                        if ref.startswith(partial) and partial:
                            yield Completion(ref, start_position=-len(partial), display_meta=r.name)
            head, tail = os.path.split(partial)
            base = os.path.join(repl.agent.cwd, head)
            try:
                names = sorted(os.listdir(base))
            except OSError:
                return
            for n in names:
                if n.startswith(tail) and (tail.startswith(".") or not n.startswith(".")):
                    full = os.path.join(head, n)
                    if os.path.isdir(os.path.join(base, n)):
                        full += "/"
                    yield Completion(full, start_position=-len(partial))

    return _Completer()


def run_repl(args: argparse.Namespace, signals: Any) -> int:
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    return Repl(args, signals, interactive=interactive).run()

