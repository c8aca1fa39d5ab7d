"""Budgets, prices and money.

Rules:

1. Money is an integer count of micro-dollars (1 USD = 1,000,000). No float
   ever holds an amount: ``usd("0.05")`` parses a decimal string exactly.
2. A budget is required. ``Budget.unlimited()`` is the honest way out, and the
   transcript says when it was used.
3. Reserve, then settle. Before a model call the loop reserves an upper
   bound of what the call can be billed (``input_bound`` tokens at the
   dearest input rate, plus ``max_tokens`` at the output rate: see
   ``docs/budget.md``); if it does not fit, the call is not made. The real
   cost settles it afterwards, and a bill past the bound is an overrun that
   stops the run as a failure.
4. A model missing from the price table costs the highest price in the table,
   field by field, never zero.
5. Costs round up to the next micro-dollar, so rounding never lets a run spend
   past its cap.
6. Numbers stay within real bounds: a cap or an amount past ``MAX_MICROS``
   (a billion dollars) is refused with a message, and a usage that is not a
   whole number from 0 to ``MAX_REPORTED_TOKENS`` is not a bill anyone can
   settle from (``usage_problem``): the loop charges the reservation instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from .canonical import canonical
from .events import Usage
from .redact import is_marker, marker_info, size_correction

__all__ = [
    "Budget",
    "Hold",
    "Ledger",
    "SharedLedger",
    "LocalLedger",
    "Price",
    "PriceTable",
    "Share",
    "Bill",
    "CallBound",
    "bill",
    "call_bound",
    "capped_bill",
    "cost_micros",
    "count_images",
    "dearest",
    "estimate_tokens",
    "input_rate",
    "message_bytes",
    "message_bound",
    "input_bound",
    "output_left",
    "over_cap",
    "overrun",
    "reservation_micros",
    "session_budget",
    "text_bytes",
    "tokens_for_chars",
    "tools_bound",
    "unreported_bill",
    "usage_problem",
    "usd",
    "whole",
]

MICROS_PER_USD = 1_000_000

MAX_MICROS = 10**15
"""A billion dollars: no cap or amount is larger (and every sum of them stays an exact JSON integer)."""

MAX_PRICE = 10**12
"""A million dollars per million tokens: no price is dearer (so one call's cost, at most a few billion tokens
at this price, stays an exact JSON integer)."""

MAX_REPORTED_TOKENS = 10**9
"""More tokens than one model call can be billed for (no model reads or writes a billion tokens in one
call): a reported count past it is the provider's error, not a bill."""


def usage_problem(usage: object) -> str | None:
    """Why a reported usage cannot be settled from (a count that is negative, not a whole number, or past
    ``MAX_REPORTED_TOKENS``), or None when it can."""
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        v = getattr(usage, name, None)
        if type(v) is not int:
            return f"{name} is {v!r}, not a whole number"
        if v < 0:
            return f"{name} is negative ({v})"
        if v > MAX_REPORTED_TOKENS:
            return f"{name} is {v}, past any real bound ({MAX_REPORTED_TOKENS})"
    return None


def usd(amount: str | int | Decimal) -> int:
    """Micro-dollars from a decimal amount of dollars: ``usd("0.05") == 50_000``.

    Raises:
        ValueError: the amount is a float, negative, not a number, or finer
            than one micro-dollar.
    """
    if isinstance(amount, float):
        raise ValueError("pass dollars as a string or Decimal, never a float")
    try:
        d = Decimal(amount)
    except (InvalidOperation, TypeError):
        raise ValueError(f"not an amount of dollars: {amount!r}") from None
    if not d.is_finite() or d < 0:
        raise ValueError(f"not a non-negative amount of dollars: {amount!r}")
    if d > MAX_MICROS // MICROS_PER_USD:
        raise ValueError(f"{amount!r} dollars is past any real bound (at most {MAX_MICROS // MICROS_PER_USD})")
    micros = d * MICROS_PER_USD
    if micros != micros.to_integral_value():
        raise ValueError(f"{amount!r} is finer than one micro-dollar")
    return int(micros)


def format_usd(micros: int) -> str:
    """``1234567 -> "$1.234567"``: for people, never parsed back."""
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(micros), MICROS_PER_USD)
    return f"{sign}${whole}.{frac:06d}"


# --- sizes of what is sent, and tokens from them ------------------------------
#
# The one place where text becomes tokens. Two conversions, one measure:
#
# - ``input_bound``/``message_bound``/``tools_bound``: an UPPER BOUND of the
#   input tokens a provider can bill, for reservations. Every vendor tokenizer
#   we price is a byte-level BPE (or a byte-fallback one): each token covers at
#   least one byte of the UTF-8 text, so a text of n bytes is at most n tokens.
#   What the vendor adds around the text (role markers, block framing, the
#   tool-use system prompt, images) is covered by the stated allowances below.
# - ``tokens_for_chars``/``estimate_tokens``: a TYPICAL figure (a quarter of the
#   bytes) for how full a context window is; never used for money.

MESSAGE_ALLOWANCE = 16
"""Tokens per message beyond its text: role and turn markers, separators, block framing."""
CALL_ALLOWANCE = 16
"""Tokens per tool call or tool result block beyond its text (``tool_use``/``tool_result`` framing)."""
TOOL_ALLOWANCE = 32
"""Tokens per tool definition beyond its JSON (the vendor's rendering of the schema)."""
TOOLS_PROMPT_ALLOWANCE = 600
"""The system prompt a vendor adds when tools are given (Anthropic documents 159 to 530 tokens)."""
REQUEST_ALLOWANCE = 16
"""Once a request: the reply's priming (``<|im_start|>assistant``), a system block's framing."""
IMAGE_TOKENS = 2_000
"""Tokens per image when the model does not say (Anthropic: about 1,600 at its largest size)."""


def text_bytes(text: str) -> int:
    """The UTF-8 length of ``text`` (lone surrogates count 3, as they would be sent escaped or replaced)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def message_bytes(m: Mapping[str, Any]) -> int:
    """The UTF-8 bytes of what a message sends: its text, its calls' names, ids and canonical
    arguments, its tool call id and tool name. Recorded markers (``redact``) count the original's bytes."""
    content = m.get("content", "")
    if type(content) is str:
        n = text_bytes(content)
    elif is_marker(content):
        n = int(marker_info(content).get("bytes", 0))
    else:
        try:
            n = len(canonical(content))
        except (ValueError, TypeError):
            n = text_bytes(str(content))
    for c in m.get("tool_calls", ()):
        args = c.get("arguments")
        try:
            b = canonical(args)
        except (ValueError, TypeError):
            b = str(args).encode("utf-8", "surrogatepass")
        if b'"$redacted":' in b or b'"$truncated":' in b:
            n += size_correction(args)
        n += len(b) + text_bytes(str(c.get("name", ""))) + text_bytes(str(c.get("id", "")))
    for k in ("tool_call_id", "name"):
        v = m.get(k)
        if isinstance(v, str):
            n += text_bytes(v)
    r = m.get("reasoning")
    if r:  # reasoning blocks sent back (thinking text and signatures): their JSON's bytes
        n += len(canonical(r))
    return n


def count_images(content: Any) -> int:
    """Image blocks in a tool's content (an MCP result ``{"content": [{"type": "image", ...}]}``)."""
    if not isinstance(content, Mapping):
        return 0
    blocks = content.get("content")
    if not isinstance(blocks, list):
        return 0
    return sum(1 for b in blocks if isinstance(b, Mapping) and b.get("type") == "image")


def message_bound(m: Mapping[str, Any], images: int = 0, image_tokens: int = IMAGE_TOKENS) -> int:
    """At most how many input tokens one message can be billed as (see the section's comment)."""
    calls = len(m.get("tool_calls", ()))
    framing = MESSAGE_ALLOWANCE + CALL_ALLOWANCE * (calls + (1 if m.get("role") == "tool" else 0))
    return message_bytes(m) + framing + images * image_tokens


def tools_bound(tools: Sequence[Any]) -> int:
    """At most how many input tokens the tool definitions (``ToolSpec``s) add, the vendor's tool prompt included."""
    if not tools:
        return 0
    return TOOLS_PROMPT_ALLOWANCE + sum(len(canonical(t.to_json())) + TOOL_ALLOWANCE for t in tools)


def input_bound(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] = (), image_tokens: int = IMAGE_TOKENS) -> int:
    """At most how many input tokens a request can be billed as (images in tool messages are not
    seen here: the loop counts them from the tool results; side calls send none)."""
    return REQUEST_ALLOWANCE + tools_bound(tools) + sum(message_bound(m, 0, image_tokens) for m in messages)


def input_rate(price: Price) -> int:
    """The highest rate an input token can be billed at: plain input, a cache write or a cache read."""
    return max(price.input, price.cache_write, price.cache_read)


def reservation_micros(input_tokens: int, output_tokens: int, price: Price) -> int:
    """The most a call can cost: ``input_tokens`` at ``input_rate``, ``output_tokens`` at the output price."""
    return -(-(input_tokens * input_rate(price) + output_tokens * price.output) // 1_000_000)


def tokens_for_chars(chars: int) -> int:
    """A typical token count for ``chars`` bytes of text (a quarter): for context fill, never for money."""
    return chars // 4


def estimate_tokens(text: str) -> int:
    """``tokens_for_chars(text_bytes(text))``: a typical figure, never a bound."""
    return tokens_for_chars(text_bytes(text))


@dataclass(frozen=True, init=False)
class Budget:
    """The caps of one run. ``None`` means that dimension is not capped.

    The caps are given by name (``Budget(max_usd_micros=usd("0.15"))``, ``Budget(max_steps=20)``):
    a bare number would be read as whatever came first, and seed 001's ``Budget(usd(0.15))``
    meant money where the first field is steps. A positional argument is a ``TypeError``.
    """

    max_steps: int | None = None
    """Model turns, checked before each turn."""
    max_tokens: int | None = None
    """Tokens in and out, summed over the run."""
    max_usd_micros: int | None = None
    """Spend in micro-dollars."""
    is_unlimited: bool = False
    """True only for ``Budget.unlimited()``; recorded in the transcript."""

    def __init__(
        self, *args: object, max_steps: int | None = None, max_tokens: int | None = None,
        max_usd_micros: int | None = None, is_unlimited: bool = False,
    ) -> None:
        if args:
            raise TypeError(
                f"Budget takes its caps by name, not position (got {', '.join(map(repr, args))}): "
                'Budget(max_usd_micros=usd("0.15")) for money, Budget(max_steps=N) for model turns, '
                "Budget(max_tokens=N) for tokens, Budget.unlimited() for none"
            )
        object.__setattr__(self, "max_steps", max_steps)
        object.__setattr__(self, "max_tokens", max_tokens)
        object.__setattr__(self, "max_usd_micros", max_usd_micros)
        object.__setattr__(self, "is_unlimited", is_unlimited)
        self.__post_init__()

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens", "max_usd_micros"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"Budget.{name} must be a non-negative integer, got {v!r}")
            if v is not None and v > MAX_MICROS:
                raise ValueError(f"Budget.{name} is {v}, past any real bound (at most {MAX_MICROS})")
        if not self.is_unlimited and self.max_steps is None and self.max_tokens is None and self.max_usd_micros is None:
            raise ValueError("a Budget needs at least one cap; say Budget.unlimited() if you mean it")

    @classmethod
    def unlimited(cls) -> Budget:
        return cls(is_unlimited=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "max_usd_micros": self.max_usd_micros,
            "unlimited": self.is_unlimited,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Budget:
        if obj.get("unlimited"):
            return cls.unlimited()
        return cls(max_steps=obj.get("max_steps"), max_tokens=obj.get("max_tokens"), max_usd_micros=obj.get("max_usd_micros"))


@dataclass(frozen=True)
class Price:
    """Micro-dollars per million tokens."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Price:
        vals = {}
        for k in ("input", "output", "cache_read", "cache_write"):
            v = obj.get(k, 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"price field {k!r} must be a non-negative integer (micro-USD per Mtok), got {v!r}")
            if v > MAX_PRICE:
                raise ValueError(f"price field {k!r} is {v} micro-USD per Mtok, past any real bound (at most {MAX_PRICE})")
            vals[k] = v
        return cls(**vals)


def cost_micros(usage: Usage, price: Price) -> int:
    """The cost of ``usage`` at ``price``, rounded up to a whole micro-dollar."""
    num = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return -(-num // 1_000_000)


def estimate_micros(input_tokens: int, output_tokens: int, price: Price) -> int:
    """``cost_micros(Usage(input_tokens, output_tokens), price)`` without building the Usage (once a turn)."""
    return -(-(input_tokens * price.input + output_tokens * price.output) // 1_000_000)


class PriceTable:
    """Prices per model name. Unknown models cost the highest known price."""

    def __init__(self, prices: Mapping[str, Price]):
        self._prices = dict(prices)

    def __contains__(self, model: object) -> bool:
        return model in self._prices

    def items(self) -> list[tuple[str, Price]]:
        return sorted(self._prices.items())

    def highest(self) -> Price:
        if not self._prices:
            raise ValueError("the price table is empty: no price can be resolved")
        return dearest(list(self._prices.values()))

    def resolve(self, model: str) -> Price:
        """The model's price, or the table's highest when it is missing."""
        p = self._prices.get(model)
        return p if p is not None else self.highest()

    def merged(self, other: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self._prices, **other})

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PriceTable:
        if not isinstance(obj, Mapping):
            raise ValueError("a price table is a JSON object of model name to prices")
        return cls({str(k): Price.from_json(v) for k, v in obj.items()})


class SharedLedger(Protocol):
    """What a run sees of a budget shared by many runs (a batch): reserve before, settle after."""

    def reserve(self, amount_micros: int, tokens: int) -> bool: ...

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None: ...


def over_cap(used: int, reserved: int, amount: int, cap: int | None) -> bool:
    """True when reserving ``amount`` on top of what is used and held would pass ``cap``: the one
    comparison every budget decision (a turn, a side call, a child, a fleet) is made with."""
    return cap is not None and used + reserved + amount > cap


def whole(name: str, value: object) -> int:
    """``value`` when it is an integer (never a bool or a float: money is whole micro-dollars), else
    ``ValueError`` naming it. Every figure that enters a ``Ledger`` passes here."""
    if type(value) is not int:
        raise ValueError(f"{name} must be a whole number (micro-dollars or tokens), not {value!r}")
    return value


Share = tuple[int, int]
"""A part of what is left, as (numerator, denominator): integers, so no micro-dollar is ever rounded up."""

Hold = tuple[int | None, int | None]
"""(micro-USD, tokens) held for a child; None where its parent is not capped."""


class Ledger:
    """Caps, and what is spent and held against them: the one budget mechanism, in integers only.

    Every budget is one: a session (its money cap across turns), a turn (a
    Stop hook's runs, ``StopGate``), a child's share of its parent
    (``ParentBudget``), a process's shared ledger (``LocalLedger``) and a
    batch's fleet (``batch.ledger.FleetLedger``). A nested one is made from
    what its parent has left (``left``, ``split``, ``remaining``). A run's own
    turns are reserved by the loop against its ``State`` with ``over_cap``,
    the same comparison ``fits`` makes.
    """

    __slots__ = ("max_usd_micros", "max_tokens", "max_steps", "spent", "reserved", "used_tokens", "reserved_tokens", "steps", "refusals")

    def __init__(
        self,
        max_usd_micros: int | None = None,
        max_tokens: int | None = None,
        max_steps: int | None = None,
        *,
        spent: int = 0,
        used_tokens: int = 0,
        steps: int = 0,
        reserved: int = 0,
        reserved_tokens: int = 0,
    ):
        self.max_usd_micros = None if max_usd_micros is None else whole("a money cap", max_usd_micros)
        self.max_tokens = None if max_tokens is None else whole("a token cap", max_tokens)
        self.max_steps = None if max_steps is None else whole("a step cap", max_steps)
        self.spent = whole("a spend", spent)
        self.used_tokens = whole("a token count", used_tokens)
        self.steps = whole("a step count", steps)
        self.reserved = whole("a reservation", reserved)
        self.reserved_tokens = whole("a token reservation", reserved_tokens)
        self.refusals = 0

    @classmethod
    def of(cls, budget: Budget, spent: int = 0, used_tokens: int = 0, steps: int = 0) -> Ledger:
        """The ledger of ``budget``'s caps with what was already used against them."""
        return cls(budget.max_usd_micros, budget.max_tokens, budget.max_steps, spent=spent, used_tokens=used_tokens, steps=steps)

    def fits(self, amount_micros: int, tokens: int = 0) -> bool:
        """Whether ``amount_micros`` and ``tokens`` more fit on top of what is spent and held."""
        return not (
            over_cap(self.spent, self.reserved, whole("a reservation", amount_micros), self.max_usd_micros)
            or over_cap(self.used_tokens, self.reserved_tokens, whole("a token reservation", tokens), self.max_tokens)
        )

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        """Hold ``amount_micros`` and ``tokens`` when they fit (else a refusal is counted)."""
        if not self.fits(amount_micros, tokens):
            self.refusals += 1
            return False
        self.reserved += amount_micros
        self.reserved_tokens += tokens
        return True

    def hold(self, amount_micros: int, tokens: int) -> None:
        """Hold without asking (what was already granted against a cap measured elsewhere)."""
        self.reserved += whole("a reservation", amount_micros)
        self.reserved_tokens += whole("a token reservation", tokens)

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        """Free a reservation and charge what the call really cost."""
        self.reserved -= whole("a reservation", reserved_micros)
        self.spent += whole("a cost", actual_micros)
        self.reserved_tokens -= whole("a token reservation", reserved_tokens)
        self.used_tokens += whole("a token count", actual_tokens)

    def forfeit(self, held_micros: int, held_tokens: int) -> None:
        """A holder died: what it held is counted as spent (the call may have been billed)."""
        self.settle(held_micros, held_micros, held_tokens, held_tokens)

    def left(self) -> tuple[int | None, int | None]:
        """(micro-USD, tokens) left after what is spent and held, never below 0; None: not capped."""
        money = None if self.max_usd_micros is None else max(0, self.max_usd_micros - self.spent - self.reserved)
        tokens = None if self.max_tokens is None else max(0, self.max_tokens - self.used_tokens - self.reserved_tokens)
        return money, tokens

    def used_up(self) -> bool:
        """Whether any cap is reached: no step, token or micro-dollar left for another run."""
        return any(
            cap is not None and used >= cap
            for cap, used in ((self.max_steps, self.steps), (self.max_tokens, self.used_tokens), (self.max_usd_micros, self.spent))
        )

    def remaining(self, unlimited: bool = False) -> Budget | None:
        """The caps a nested run gets: what is left of each (None when one is used up)."""
        if unlimited:
            return Budget.unlimited()
        if self.used_up():
            return None
        money, tokens = self.left()
        steps = None if self.max_steps is None else self.max_steps - self.steps
        return Budget(max_steps=steps, max_tokens=tokens, max_usd_micros=money)

    def split(self, share: Share, n: int) -> list[Hold]:
        """Hold ``n`` equal parts of ``share`` of what is left, at once, for children that start together:
        each gets ``left * num // (den * n)``, so together they hold at most ``share`` of it."""
        num, den = share
        if type(num) is not int or type(den) is not int or type(n) is not int or den <= 0 or n <= 0 or not 0 <= num <= den:
            raise ValueError(f"a child's share must be a fraction of integers between 0 and 1 over n >= 1, not {num}/{den} over {n}")
        money, tokens = self.left()
        m = None if money is None else money * num // (den * n)
        t = None if tokens is None else tokens * num // (den * n)
        self.hold((m or 0) * n, (t or 0) * n)
        return [(m, t)] * n


def session_budget(max_steps: int | None, max_usd_micros: int | None, spent: int) -> Budget:
    """The next run's caps in a session: its steps per turn, and what is left of the session's money."""
    money, _ = Ledger(max_usd_micros, spent=spent).left()
    return Budget(max_steps=max_steps, max_usd_micros=money)


def dearest(prices: Iterable[Price]) -> Price:
    """The highest price, field by field, of ``prices`` (a model and its fallbacks: any may answer): what a
    call costs at most when any model of a chain may answer it. The one place this is computed.

    Raises:
        ValueError: no prices.
    """
    ps = list(prices)
    if not ps:
        raise ValueError("no prices to take the dearest of")
    return Price(max(p.input for p in ps), max(p.output for p in ps), max(p.cache_read for p in ps), max(p.cache_write for p in ps))


def output_left(max_output_tokens: int, wasted: Usage, price: Price | None) -> int:
    """The output tokens a call's reservation still covers after billed failed attempts (``wasted``).

    The reservation is the input's bound at ``price``'s dearest input rate and
    ``max_output_tokens`` at its output price; the failures' input is converted
    to output tokens at those rates (one for one when the price is unknown). A
    retry re-sends the same input, within the bound, so it may write what is left.
    """
    if price is None or not price.output:
        return max_output_tokens - wasted.total
    inp = wasted.input_tokens + wasted.cache_read_tokens + wasted.cache_write_tokens
    return max_output_tokens - (wasted.output_tokens + -(-inp * input_rate(price) // price.output))


def call_bound(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any], max_output_tokens: int, price: Price) -> tuple[int, Usage]:
    """A model call's reservation (micro-USD) and the usage it is made for: ``input_bound`` of what is sent
    at the dearest input rate, ``max_output_tokens`` at the output price."""
    est = Usage(input_tokens=input_bound(messages, tools), output_tokens=max_output_tokens)
    return reservation_micros(est.input_tokens, est.output_tokens, price), est


@dataclass(frozen=True)
class CallBound:
    """What one provider call was reserved for, and so what its bill may hold: ``input_tokens`` (the byte
    bound of what was sent), ``output_tokens`` (the ``max_tokens`` asked), ``uses`` of a server tool (a web
    search's ``max_uses``) at ``use_micros`` each, at ``price``. A token count is never a bound: it may
    refuse a call, never lower one (``docs/budget.md``)."""

    input_tokens: int
    output_tokens: int
    price: Price
    uses: int = 0
    use_micros: int = 0

    @property
    def micros(self) -> int:
        """The reservation: the most the call can be billed."""
        return reservation_micros(self.input_tokens, self.output_tokens, self.price) + self.uses * self.use_micros

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Bill:
    """What a call is charged (``bill``): its usage and cost, and why it passed its reservation, if it did."""

    usage: Usage
    cost_micros: int
    overrun: str | None = None
    """The call was billed past its reservation, or reported figures it cannot have been billed: the run stops."""
    at_reservation: bool = False
    """The figures could not be believed: charged the whole reservation, the most the call was allowed."""
    uses: int = 0


def _beyond(bound: CallBound, usage: Usage, uses: int) -> str | None:
    """Why a reported usage is more than the request allowed (so no provider can have billed it), or None."""
    bad = usage_problem(usage)
    if bad is not None:
        return bad
    if type(uses) is not int or uses < 0:
        return f"a count of {uses!r} server-tool uses"
    if uses > bound.uses:
        return f"{uses} server-tool uses for a request allowed {bound.uses}"
    if usage.output_tokens > bound.output_tokens:
        return f"{usage.output_tokens} output tokens for a request allowed {bound.output_tokens}"
    cost = cost_micros(usage, bound.price) + uses * bound.use_micros
    if cost > bound.micros:  # input past the byte bound (a retry's billed attempts included: they shrink the output left)
        return (f"{usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens} input and {usage.output_tokens} "
                f"output tokens, {cost} micro-USD, for a request whose input is at most {bound.input_tokens} tokens")
    return None


def bill(bound: CallBound, usage: Usage, uses: int = 0, *, what: str = "a call") -> Bill:
    """What a call reserved at ``bound`` is charged for the ``usage`` (and server-tool ``uses``) it reported.

    The one rule for every provider call (the loop's turns, side calls, server tools): figures that are
    negative, not whole, or more than the request allowed (output past ``max_tokens``, uses past
    ``max_uses``, input past the byte bound: a bill past the reservation) are not a bill anyone can settle
    from: the call is charged its whole reservation, as an overrun that stops the run. (Input is held to
    the bound through the cost, not token by token: a retried call's billed attempts add input, and the
    retry's ``max_tokens`` shrinks to keep the sum within the reservation.)
    """
    bad = _beyond(bound, usage, uses)
    if bad is not None:
        held = Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens)
        why = f"{what} reported a usage it cannot have been billed ({bad}): charged its reservation of {bound.micros} micro-USD"
        return Bill(held, bound.micros, why, at_reservation=True, uses=bound.uses)
    return Bill(usage, cost_micros(usage, bound.price) + uses * bound.use_micros, uses=uses)


def unreported_bill(bound: CallBound, output_bytes: int, *, what: str = "a call") -> Bill:
    """What a call the provider answered without figures, or that failed or was cut after it began (an
    interrupt, a broken stream), is charged: the whole input bound (the provider read at most that, and
    may bill it) and the output it sent, one token per byte at most, never past what was asked; so at
    least the input, at most the reservation, never 0."""
    out = min(bound.output_tokens, max(0, output_bytes))
    usage = Usage(input_tokens=bound.input_tokens, output_tokens=out)
    return Bill(usage, min(bound.micros, cost_micros(usage, bound.price)))


def capped_bill(bound: CallBound, usage: Usage | None, *, what: str = "a call") -> Bill:
    """What a failed call is charged from the figures its error carries (its billed attempts): believed up to
    its reservation, never past it (a failed call's estimate of its own input is not a bill); figures that
    cannot be settled from, or none, charge the whole reservation."""
    if usage is None or usage_problem(usage) is not None:
        held = Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens)
        return Bill(held, bound.micros, None, at_reservation=True)
    cost = cost_micros(usage, bound.price)
    if cost > bound.micros or usage.total > bound.tokens:  # the most it can have been billed: its input bound and output
        held = Usage(input_tokens=bound.input_tokens, output_tokens=bound.output_tokens)
        return Bill(held, cost_micros(held, bound.price), None, at_reservation=True)
    return Bill(usage, cost)


def overrun(cost: int, reserved: int) -> bool:
    """A bill past its reservation: the bound failed, and the cap can no longer be promised."""
    return whole("a cost", cost) > whole("a reservation", reserved)


class LocalLedger(Ledger):
    """A shared ledger for one process (thread-safe): the reference that shared ledgers must match."""

    __slots__ = ("_lock",)

    def __init__(self, max_usd_micros: int | None, max_tokens: int | None = None):
        import threading

        super().__init__(max_usd_micros, max_tokens)
        self._lock = threading.Lock()

    def reserve(self, amount_micros: int, tokens: int) -> bool:
        with self._lock:
            return super().reserve(amount_micros, tokens)

    def settle(self, reserved_micros: int, actual_micros: int, reserved_tokens: int, actual_tokens: int) -> None:
        with self._lock:
            super().settle(reserved_micros, actual_micros, reserved_tokens, actual_tokens)
