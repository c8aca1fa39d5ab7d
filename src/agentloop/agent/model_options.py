"""How much a model may write a turn, and how hard it thinks: resolved once from flags, settings and environment.

Output budget (``max_tokens``), highest first:

1. ``--max-output-tokens N``;
2. ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` (Claude Code's variable; also from a settings file's ``env``);
3. the ``maxOutputTokens`` setting;
4. the model's documented maximum (``prices.BUILTIN_MAX_OUTPUT``), but no more than a quarter of
   the session's spend cap pays for at the model's output price, and never less than 4,096 (or
   the model's maximum when that is smaller). The loop reserves the whole ``max_tokens`` before
   each call, so an uncapped default would let one call's reservation take most of a small cap.
   A model the table does not know gets ``prices.DEFAULT_MAX_OUTPUT``.

An explicit value (1 to 3) is used as given, up to the model's documented maximum.

Extended thinking (Anthropic's ``thinking: {type: enabled, budget_tokens}``): ``--thinking``
(``on``, ``off`` or a budget in tokens), else ``MAX_THINKING_TOKENS`` (0 turns it off), else the
settings ``alwaysThinkingEnabled`` (Claude Code's key) and ``maxThinkingTokens``. On by default for
the models whose provider's record says they think (``ProviderRecord.thinks``: Anthropic's that support it), as Claude Code turns it on, with Claude Code's budget of
31,999 tokens; the provider shrinks it per call to leave a quarter of ``max_tokens`` for the answer.

Reasoning effort (OpenAI's ``reasoning_effort``): ``--effort``, else ``CLAUDE_CODE_EFFORT_LEVEL``,
else the ``effortLevel`` setting; by default the record's effort for the reasoning models (``ProviderRecord.default_effort``:
``medium`` for OpenAI's, Codex's default) and not sent to any other model.

Reads no environment itself: the agent passes its own (the edge's, with settings' ``env``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..prices import DEFAULT_MAX_OUTPUT, documented_max_output

if TYPE_CHECKING:
    from ..providers import ProviderRecord

__all__ = ["EFFORTS", "ModelOptions", "OptionError", "resolve_options"]

EFFORTS = ("minimal", "low", "medium", "high", "xhigh")
DEFAULT_THINKING_BUDGET = 31_999
"""Claude Code's thinking budget when thinking is on and nothing sets one."""
FLOOR = 4_096
"""The old fixed max_tokens: the default never drops below it because of the cap."""



def _record(vendor: str) -> ProviderRecord | None:
    """The provider's record (which models think, which take an effort), or None for a spec naming none."""
    from ..providers import PROVIDERS

    return PROVIDERS.get(vendor)


class OptionError(ValueError):
    """A flag, setting or variable that cannot be used: one line naming it."""


@dataclass(frozen=True)
class ModelOptions:
    """What the agent asks of its model each turn."""

    max_output_tokens: int
    source: str
    """Where ``max_output_tokens`` came from, for /status and the docs' promise."""
    thinking_budget: int | None = None
    """Anthropic ``budget_tokens``; None: no thinking asked for."""
    effort: str | None = None
    """OpenAI ``reasoning_effort``; None: not sent."""

    def provider_options(self) -> dict[str, Any]:
        """The ``open_model`` options these give (only those in force)."""
        out: dict[str, Any] = {}
        if self.thinking_budget is not None:
            out["thinking_budget"] = self.thinking_budget
        if self.effort is not None:
            out["reasoning_effort"] = self.effort
        return out


def _int(value: Any, where: str, low: int) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise OptionError(f"{where} {value!r}: not a whole number") from None
    if n < low:
        raise OptionError(f"{where} {n}: must be at least {low}")
    return n


def _vendor_and_name(spec: str) -> tuple[str, str]:
    vendor, sep, name = spec.partition(":")
    return (vendor.lower(), name) if sep else ("", spec)


def _max_output(
    name: str, flag: int | None, setting: Callable[[str], Any], env: Mapping[str, str], cap_micros: int | None, output_price: int
) -> tuple[int, str]:
    top = documented_max_output(name)
    for value, where in (
        (flag, "--max-output-tokens"),
        (env.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS") or None, "CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
        (setting("maxOutputTokens"), "settings maxOutputTokens"),
    ):
        if value is not None:
            n = _int(value, where, 1)
            if top is not None and n > top:
                raise OptionError(f"{where} {n}: more than {name}'s documented maximum output of {top} tokens")
            return n, where
    if top is None:
        return DEFAULT_MAX_OUTPUT, "default (model not in the table)"
    if cap_micros is not None and output_price > 0:
        affordable = cap_micros // 4 * 1_000_000 // output_price
        if affordable < top:
            return max(min(FLOOR, top), affordable), "model table, limited by the spend cap"
    return top, "model table"


def _thinking(vendor: str, name: str, flag: str | None, setting: Callable[[str], Any], env: Mapping[str, str]) -> int | None:
    record = _record(vendor)
    supported = record is not None and record.thinks(name)
    budget: int | None = None
    on: bool | None = None
    if flag is not None:
        f = flag.strip().lower()
        if f in ("on", "true", "enabled"):
            on = True
        elif f in ("off", "false", "disabled", "0"):
            on = False
        else:
            budget, on = _int(flag, "--thinking", 1_024), True
    elif env.get("MAX_THINKING_TOKENS"):
        n = _int(env["MAX_THINKING_TOKENS"], "MAX_THINKING_TOKENS", 0)
        budget, on = (n, True) if n else (None, False)
    else:
        always = setting("alwaysThinkingEnabled")
        if always is not None:
            on = bool(always)
        mt = setting("maxThinkingTokens")
        if mt is not None:
            budget = _int(mt, "settings maxThinkingTokens", 1_024)
    if on is None:
        on = supported
    if not on:
        return None
    if record is None or record.reasoning != "budget":
        return None  # a provider whose models take an effort, or nothing, gets no thinking budget
    return budget if budget is not None else DEFAULT_THINKING_BUDGET


def _effort(vendor: str, name: str, flag: str | None, setting: Callable[[str], Any], env: Mapping[str, str]) -> str | None:
    value, where = flag, "--effort"
    if value is None and env.get("CLAUDE_CODE_EFFORT_LEVEL"):
        value, where = env["CLAUDE_CODE_EFFORT_LEVEL"], "CLAUDE_CODE_EFFORT_LEVEL"
    if value is None and setting("effortLevel") is not None:
        value, where = str(setting("effortLevel")), "settings effortLevel"
    record = _record(vendor)
    if record is None or record.reasoning != "effort":
        return None
    if value is None:
        return record.default_effort(name)
    v = value.strip().lower()
    if v not in EFFORTS:
        raise OptionError(f"{where} {value!r}: use one of {', '.join(EFFORTS)}")
    return v


def resolve_options(
    spec: str,
    *,
    max_output_tokens: int | None = None,
    thinking: str | None = None,
    effort: str | None = None,
    setting: Callable[[str], Any] = lambda _k: None,
    env: Mapping[str, str] | None = None,
    cap_micros: int | None = None,
    output_price: int = 0,
) -> ModelOptions:
    """The options for model ``spec`` (``vendor:name`` or a bare name).

    Raises:
        OptionError: a value that cannot be used, naming where it came from.
    """
    e = env or {}
    vendor, name = _vendor_and_name(spec)
    n, source = _max_output(name, max_output_tokens, setting, e, cap_micros, output_price)
    return ModelOptions(n, source, _thinking(vendor, name, thinking, setting, e), _effort(vendor, name, effort, setting, e))
