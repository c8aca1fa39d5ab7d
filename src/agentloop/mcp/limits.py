"""How much of an MCP tool's output the model gets: a warning past 10,000 tokens, a cap at 25,000.

As in Claude Code (https://code.claude.com/docs/en/mcp, "MCP output limits
and warnings"): an output past 10,000 tokens is reported to the user, and
one past ``MAX_MCP_OUTPUT_TOKENS`` (25,000 by default) is not sent whole. The
whole output is written to a file (named by its content, so the same output
lands in the same file) and the model gets its beginning and end and the
path, which it can read with Read and search with Grep (the agent puts the
file in the session's ``tool-results`` directory, beside the built-in tools'
spilled outputs). An error result is capped the same way.

Tokens are estimated at four characters each over the output's text form
(the text itself, or the JSON of a result with several blocks, images
included), the estimate the context manager uses too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config.private import private_dirs, private_write

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "WARN_OUTPUT_TOKENS", "OutputLimit", "estimate_tokens", "max_output_tokens"]

DEFAULT_MAX_OUTPUT_TOKENS = 25_000
WARN_OUTPUT_TOKENS = 10_000
ENV = "MAX_MCP_OUTPUT_TOKENS"
PREVIEW_HEAD = 2_000
PREVIEW_TAIL = 1_000


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def max_output_tokens(environ: Mapping[str, str]) -> tuple[int, str | None]:
    """The cap from ``MAX_MCP_OUTPUT_TOKENS``, and a warning when its value cannot be used."""
    raw = environ.get(ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_OUTPUT_TOKENS, None
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    if n <= 0:
        return DEFAULT_MAX_OUTPUT_TOKENS, (
            f"{ENV}={raw!r} is not a positive whole number of tokens; MCP outputs are capped at the default "
            f"{DEFAULT_MAX_OUTPUT_TOKENS:,} tokens"
        )
    return n, None


def _text_form(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "txt"
    return json.dumps(value, ensure_ascii=False, indent=1), "json"


@dataclass
class OutputLimit:
    """The limits for one manager's calls; ``spill_dir`` and ``notify`` may be set later (the agent does)."""

    max_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    warn_tokens: int = WARN_OUTPUT_TOKENS
    spill_dir: str | None = None
    """Where capped outputs are written; a private temporary directory when None."""
    notify: Callable[[str], None] | None = None
    """Where the warnings for the user go."""
    _own_dir: str | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> tuple[OutputLimit, str | None]:
        n, warning = max_output_tokens(environ)
        return cls(max_tokens=n), warning

    def _say(self, text: str) -> None:
        if self.notify is not None:
            with contextlib.suppress(Exception):
                self.notify(text)

    def _dir(self) -> str:
        if self.spill_dir:
            private_dirs(self.spill_dir)  # the session's tool-results: the user's alone
            return os.path.realpath(self.spill_dir)
        with self._lock:
            if self._own_dir is None or not os.path.isdir(self._own_dir):
                self._own_dir = tempfile.mkdtemp(prefix="agentloop-mcp-output-")
            return self._own_dir

    def _spill(self, text: str, suffix: str, name: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        path = os.path.join(self._dir(), f"{name}-{digest}.{suffix}")
        if not os.path.exists(path):
            private_write(path, text.encode("utf-8", "surrogatepass"))
        return path

    def _capped(self, text: str, suffix: str, name: str, what: str) -> str:
        tokens = estimate_tokens(text)
        path = self._spill(text, suffix, name)
        room = max(200, min(PREVIEW_HEAD + PREVIEW_TAIL, self.max_tokens * 4 // 2))
        head, tail = room * 2 // 3, room // 3
        lines = text.count("\n") + 1
        self._say(
            f"the MCP tool {name} returned {what} of about {tokens:,} tokens, over the limit of {self.max_tokens:,} "
            f"({ENV}); the model was given its beginning and end and the file {path}"
        )
        return (
            f"{text[:head]}\n\n... [{len(text) - head - tail} characters omitted] ...\n\n{text[-tail:]}\n\n"
            f"[The {what} of {name} was {len(text)} characters ({lines} lines, about {tokens:,} tokens), over the "
            f"limit of {self.max_tokens:,} tokens for an MCP tool's output ({ENV}), so only its beginning and end "
            f"are shown. The full {what} is in {path} : read it with Read (offset/limit) or search it with Grep.]"
        )

    def _measure(self, text: str, name: str, what: str) -> bool:
        """True when ``text`` must be capped; warns when it is merely large."""
        n = len(text)
        if n <= self.warn_tokens * 4 and n <= self.max_tokens * 4:
            return False
        tokens = estimate_tokens(text)
        if tokens > self.max_tokens:
            return True
        if tokens > self.warn_tokens:
            self._say(
                f"the MCP tool {name} returned {what} of about {tokens:,} tokens (over {self.warn_tokens:,}); "
                f"large outputs fill the context (the cap is {self.max_tokens:,}, set by {ENV})"
            )
        return False

    def result(self, name: str, value: Any) -> Any:
        """``value`` itself, or, past the cap, a preview of it and the path of the file holding all of it."""
        if isinstance(value, str):
            if not self._measure(value, name, "output"):
                return value
            return self._capped(value, "txt", name, "output")
        text, suffix = _text_form(value)
        if not self._measure(text, name, "output"):
            return value
        return self._capped(text, suffix, name, "output")

    def error(self, name: str, message: str) -> str:
        """An error message, capped the same way."""
        if not self._measure(message, name, "error"):
            return message
        return self._capped(message, "txt", name, "error")
