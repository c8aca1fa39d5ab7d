"""Drive a real terminal program as a person would: pexpect gives it a
pseudo-terminal, pyte renders what it draws, and the tests read the screen."""

from __future__ import annotations

import os
import re
import sys
import termios
import time
from collections.abc import Callable
from typing import Any

import pexpect
import pyte

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


class _Screen(pyte.HistoryScreen):  # type: ignore[misc]
    """Answers the program's device-status queries (cursor position), as a terminal does."""

    child: Any = None

    def write_process_input(self, data: str) -> None:
        if self.child is not None:
            self.child.send(data)


class Term:
    def __init__(self, args: list[str], *, cwd: str, env: dict[str, str], cols: int = 140, rows: int = 50):
        self.screen = _Screen(cols, rows, history=5000)
        self.screen.set_mode(pyte.modes.LNM)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.child = pexpect.spawn(AGENTLOOP, args, cwd=cwd, env=env, dimensions=(rows, cols), timeout=30)
        self.screen.child = self.child

    def pump(self, timeout: float = 0.05) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            return
        self.raw += data
        self.stream.feed(data)

    def lines(self) -> list[str]:
        """Every line shown so far (scrolled-off history, then the screen), trailing blanks cut."""
        hist = ["".join(line[i].data for i in sorted(line)).rstrip() for line in self.screen.history.top]
        out = [*hist, *(line.rstrip() for line in self.screen.display)]
        while out and not out[-1]:
            out.pop()
        return out

    def text(self, after: int = 0) -> str:
        return "\n".join(self.lines()[after:])

    def wait_for(self, pattern: str, timeout: float = 40.0, *, after: int = 0) -> re.Match[str]:
        """Pump until ``pattern`` (a regex) appears on a line from index ``after`` on."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.text(after))
            if m:
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.text()[-3000:]}")
            if not self.child.isalive():
                self.pump(0.2)
                m = rx.search(self.text(after))
                if m:
                    return m
                raise AssertionError(f"the program exited before {pattern!r}; the screen:\n{self.text()[-3000:]}")
            self.pump()

    def until(self, holds: Callable[[], bool], timeout: float = 20.0) -> bool:
        """Pump until ``holds()`` is true, or ``timeout`` seconds pass; say whether it came true. For a
        screen that must come to show something after a key, where a fixed wait loses on a slow machine."""
        deadline = time.monotonic() + timeout
        while not holds():
            if time.monotonic() > deadline:
                return False
            self.pump()
        return True

    def keys_watched(self) -> bool:
        """The program reads keys one by one with Ctrl+C still a signal (cbreak mode): the REPL's key watcher
        runs, as it does while a turn runs. Keys sent before it runs are lost (and echoed by the terminal),
        so a test that types during a turn waits for this, not for a fixed time."""
        lflag = termios.tcgetattr(self.child.child_fd)[3]
        return not lflag & termios.ICANON and bool(lflag & termios.ISIG)

    def mark(self) -> int:
        """The index of the line the prompt is on now: output after it is new."""
        self.pump(0.1)
        lines = self.lines()
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith(">"):
                return i
        return len(lines)

    def type(self, line: str) -> None:
        self.child.send(line)
        time.sleep(0.05)
        self.child.send("\r")

    def wait_exit(self, timeout: float = 40.0) -> Any:
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            self.pump(0.1)
        self.pump(0.1)
        self.child.close()
        return self.child.exitstatus, self.child.signalstatus

    def kill(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def turns_begun(home: str) -> int:
    """How many turns have begun in agentloop's home ``home``: the ``run_start`` records of its sessions. Once
    one is written the turn is inside the run, where Ctrl+C and Esc stop it (sent earlier, they reach the REPL
    before the turn has begun)."""
    import glob

    return sum(open(p, encoding="utf-8").read().count('"kind":"run_start"')
               for p in glob.glob(os.path.join(home, "projects", "*", "sessions", "*.jsonl")))


def env_for(home: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOP_")}
    env.update(AGENTLOOP_HOME=home, NO_COLOR="1", TERM="xterm", COLUMNS="140")
    # keys, and what would make rich colour a NO_COLOR terminal, come from the test only
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        env.pop(k, None)
    env.update(extra)
    return env
