"""The agent's log: ``<home>/logs/agentloop.log`` (private), every line tagged with its session id."""

from __future__ import annotations

import contextvars
import logging
import os

__all__ = ["SessionLogFilter", "current_session_id", "setup_logging"]

current_session_id: contextvars.ContextVar[str] = contextvars.ContextVar("agentloop_session_id", default="-")
"""The session every log line is tagged with (see ``SessionLogFilter``)."""


class SessionLogFilter(logging.Filter):
    """Stamps each log record with the current session id (``%(session_id)s``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "session_id"):
            record.session_id = current_session_id.get()
        return True


def setup_logging(home: str, *, verbose: bool = False) -> None:
    """Log to ``<home>/logs/agentloop.log`` (and stderr when verbose), every line with its session id."""
    root = logging.getLogger("agentloop")
    if getattr(root, "_agentloop_configured", False):
        return
    fmt = logging.Formatter("%(asctime)s %(levelname)s session=%(session_id)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    from ..config.private import private_dirs, private_file, private_home

    tightened = private_home(home)  # 0700, said when it was open to others
    try:
        log_path = os.path.join(home, "logs", "agentloop.log")
        private_dirs(os.path.dirname(log_path))
        os.close(private_file(log_path))  # created 0600 before the handler opens it
        handlers.append(logging.FileHandler(log_path, encoding="utf-8"))
    except OSError:
        pass
    if verbose:
        handlers.append(logging.StreamHandler())
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(SessionLogFilter())
        root.addHandler(h)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    root._agentloop_configured = True  # type: ignore[attr-defined]
    if tightened:
        root.warning(tightened)
