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
