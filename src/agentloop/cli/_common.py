"""What every subcommand shares: user errors, exit codes, output helpers."""

from __future__ import annotations

import os
import sys
from typing import Any

EXIT_OK = 0
EXIT_PROBLEMS = 1
"""The command ran and found problems (a verify failure, a replay that differs)."""
EXIT_USAGE = 2
"""The command could not do its job: bad arguments, an unreadable file, bad config."""
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A mistake of the user's (a bad path, a bad config): one clear line, exit 2."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def color_enabled(stream: Any = None) -> bool:
    """Color only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    s = stream or sys.stdout
    return bool(getattr(s, "isatty", lambda: False)())


def console(stderr: bool = False) -> Any:
    """A rich Console that honours NO_COLOR and plain (non-terminal) output."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, no_color=not color_enabled(stream), highlight=False, soft_wrap=True)


def uncapped_runs(path: str) -> tuple[int, int]:
    """(runs with no spend cap, runs) of a transcript: a run whose budget has no money cap, or
    ``Budget.unlimited()``, is one a user should notice. Unreadable lines are skipped (verify reports them)."""
    import orjson

    from agentloop.transcript import bounded_lines, open_regular

    uncapped = runs = 0
    try:
        # a FIFO or /dev/zero is refused at once and a line past the limit ends the read: verify says why
        with open_regular(path) as f:
            for line in bounded_lines(f, []):
                if b'"kind":"run_start"' not in line:
                    continue
                try:
                    b = orjson.loads(line)["payload"]["config"]["budget"]
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    continue
                runs += 1
                if isinstance(b, dict) and (b.get("unlimited") or b.get("max_usd_micros") is None):
                    uncapped += 1
    except OSError:
        pass
    return uncapped, runs


def uncapped_note(path: str) -> str | None:
    """A line saying how many runs of ``path`` had no spend cap, or None."""
    n, runs = uncapped_runs(path)
    if not n:
        return None
    return f"  note: {n} of {runs} run(s) had no spend cap (unlimited)"
