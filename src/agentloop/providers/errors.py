"""Provider errors, and the scrubbing that keeps keys out of every message.

``ProviderConfigError``: the user's setup is wrong (no key, bad spec); one line,
raised before any request. ``ProviderError``: a call failed; ``retryable`` says
whether the retry policy may try again, ``kind`` names the failure for people
and tests (``rate_limit``, ``overloaded``, ``server``, ``stall``, ``cut``,
``malformed``, ``content_type``, ``auth``, ``quota``, ``bad_request``,
``max_tokens``, ``connect``, ``budget``, ``context``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["ProviderConfigError", "ProviderError", "scrub"]

# Key shapes that vendors echo back in error bodies ("Incorrect API key provided: sk-...").
_KEYISH = re.compile(r"(sk-(?:ant-)?[A-Za-z0-9_\-]{6,}|Bearer\s+[A-Za-z0-9_\-.]{6,})")


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret, and anything shaped like a key, replaced by ``[REDACTED]``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "[REDACTED]")
    return _KEYISH.sub("[REDACTED]", text)


class ProviderConfigError(Exception):
    """The provider cannot be set up (no key, unknown provider): a one-line message for the user."""


class ProviderError(Exception):
    """A model call failed. The message is already scrubbed of keys."""

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        billed: bool = False,
    ):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.billed = billed
        """The attempt may have been charged for (the stream had started)."""
        self.partial: Any = None
        """A ``Usage``: what the failed attempt may have been billed, when ``billed``."""
        self.room: int | None = None
        """The most ``max_tokens`` a retry may ask for: the request did not fit the model's context window,
        and the error said by how much (``kind="context"``)."""
        self.usage: Any = None
        """A ``Usage``: what every failed attempt of the call may have cost, on the final error
        (the drivers hand it to the loop, which records and spends it)."""
        self.unaccounted = False
        """The call was billed but the provider's figures cannot be settled from (a usage that is negative,
        not a whole number, missing a count, or past what the request could cost): the loop charges the
        call's whole reservation."""
