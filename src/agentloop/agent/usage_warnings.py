"""Warnings at 80% and 95% of the spend cap and of the context window, each said once a session."""

from __future__ import annotations

import logging
from dataclasses import dataclass

__all__ = ["WARN_LEVELS", "UsageWarning", "UsageWarnings"]

log = logging.getLogger("agentloop.agent")

WARN_LEVELS = (0.80, 0.95)


@dataclass
class UsageWarning:
    """A threshold crossed: ``what`` ("budget" or "context window") at ``level`` (0.8, 0.95)."""

    what: str
    level: float
    text: str


class UsageWarnings:
    """The thresholds already said in this session (``clear`` when the session changes)."""

    def __init__(self) -> None:
        self.warned: set[tuple[str, float]] = set()

    def clear(self) -> None:
        self.warned.clear()

    def crossed(self, *, window_fill: float | None, budget_fill: float | None) -> list[UsageWarning]:
        """Thresholds crossed since the last call, the highest of each kind. ``window_fill`` is None when a
        context manager warns of the window itself; ``budget_fill`` is None without a spend cap."""
        out = []
        fills = [(what, f) for what, f in (("context window", window_fill), ("budget", budget_fill)) if f is not None]
        for what, frac in fills:
            for lvl in WARN_LEVELS:
                if frac >= lvl and (what, lvl) not in self.warned:
                    self.warned.add((what, lvl))
                    text = f"{what} is {frac:.0%} used (warning at {lvl:.0%})"
                    if what == "context window":
                        text += "; /compact to make room"
                    log.warning(text)
                    out.append(UsageWarning(what, lvl, text))
        return [w for w in out if w.level == max(x.level for x in out if x.what == w.what)]
