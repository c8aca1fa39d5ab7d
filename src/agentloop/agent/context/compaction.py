"""Context management: what the model sees stays inside its window, for sessions of any length.

The loop keeps one list of messages (``State.messages``) and sends it as it
is. ``Compactor.prepare`` is given to ``run``/``arun`` as their
``prepare`` seam: before every model call it rewrites that list *in place*,
so the memory held for the model's context is bounded too, not only what is
sent. The transcript is never touched: every tool output stays there whole.

Rules:

1. Tokens are estimated at len//4 per message (plus the tool schemas), or
   counted exactly by ``counter`` (a provider's token counter) once the
   estimate passes the first warning level.
2. Warnings at 80% and 95% of the window: once per crossing, recorded.
3. Masking, only once the context is ``mask_at`` (65%) full: tool outputs
   over ``mask_threshold`` characters, older than the last ``keep_recent``
   tool outputs, become a placeholder giving their size and a file that holds
   the whole output, saved in ``spill_dir`` (the session's tool-results
   folder, which Read may read), so the model can read it again.
4. Tool-result budget: when the tool outputs in context total more than
   ``tool_result_cap`` characters, the oldest are evicted to a placeholder
   (never the newest one) until they fit.
5. Compaction at ``compact_at`` (90%) of the window, or on ``/compact``: the
   model summarises the older part; the recent part is kept from an
   assistant message on, so a tool call and its result are never separated.
   PreCompact may block it; PostCompact gets the summary. After
   ``max_failures`` failures in a row compaction is off for the session, with
   a notice.
6. Every change is recorded (``context`` and ``compaction`` records).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...budget import Price, message_bytes, text_bytes, tokens_for_chars
from ...canonical import canonical
from ...conversation import (
    EVICT_PREFIX,
    MASK_PREFIX,
    SUMMARY_PREFIX,
    original_size,
    placeholder,
    reapply,
)
from ...events import Message, ModelRequest
from ...loop import recount_bound, shrink_bound
from ..hooks.runner import HookRunner
from ..usage_warnings import WARN_LEVELS
from .side_calls import Account, LoopAccount, SideCall, side_call

__all__ = [
    "CompactionResult",
    "reapply",
    "Compactor",
    "check_pairing",
    "context_window",
    "estimate_message_tokens",
    "estimate_tokens",
]


COMPACT_PROMPT = (
    "You are compacting the history of a coding agent's session so it can continue within its context window. "
    "Write a faithful summary of the conversation below for the agent itself: the user's requests (quote the "
    "latest one exactly), what has been done, the files and commands involved, results and errors that still "
    "matter, decisions made, and what remains to do. Be concise; do not invent anything. Reply with the summary only."
)

# The one table of context windows, by model-family prefix (the agent's
# ``core.context_window`` reads it too, adding the "contextWindow" setting).
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gemini", 1_048_576),
    ("scripted", 200_000),
)
DEFAULT_WINDOW = 128_000


def context_window(model: str) -> int:
    """The context window of a model family, in tokens (128k when unknown).

    ``model`` may be a spec (``openai:gpt-4o``) or a routed name (``openai/gpt-4o``).
    """
    from ...prices import family_name
    from ...providers import PROVIDERS, is_spec

    low = model.lower()
    named = is_spec(low) and PROVIDERS[low.partition(":")[0].strip()].names_models  # scripted:FILE is the scripted family
    name = low.split(":", 1)[-1] if named else low
    family = family_name(name)  # a router's spelling or Bedrock's id, read as the price table reads it
    for prefix, n in _WINDOWS:
        if family.startswith(prefix) or f"/{prefix}" in name:
            return n
    return DEFAULT_WINDOW


def message_chars(m: Message) -> int:
    """A message's size for the typical estimate: its ``budget.message_bytes`` and 4 of overhead."""
    return message_bytes(m) + 4


def estimate_message_tokens(m: Message) -> int:
    """A typical token count of a message (``budget.tokens_for_chars`` of its ``budget.message_bytes``)."""
    return tokens_for_chars(message_chars(m))


def estimate_tokens(messages: Sequence[Message], extra_chars: int = 0) -> int:
    """A typical token count of messages, for how full the window is (never for money)."""
    return tokens_for_chars(sum(message_chars(m) for m in messages) + extra_chars)


def check_pairing(messages: Sequence[Message]) -> list[str]:
    """Every broken call/result pairing: a tool result whose call is not before it
    (an orphan), or a call answered nowhere before the next assistant message."""
    problems: list[str] = []
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            if open_calls:
                problems.append(f"message {i}: calls {sorted(open_calls)} were never answered")
            open_calls = {c["id"] for c in m.get("tool_calls", ())}
        elif role == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_calls:
                problems.append(f"message {i}: tool result for {cid!r} has no call before it (orphaned)")
            open_calls.discard(str(cid))
        elif open_calls:
            problems.append(f"message {i}: a {role} message between calls {sorted(open_calls)} and their results")
            open_calls = set()
    return problems


@dataclass(frozen=True)
class CompactionResult:
    status: str
    """``compacted``, ``blocked`` (PreCompact), ``failed``, ``nothing`` (too little to compact), ``disabled``."""
    trigger: str
    tokens_before: int = 0
    tokens_after: int = 0
    summarized_messages: int = 0
    summary: str = ""
    error: str | None = None
    call: SideCall | None = None
    head: int | None = None
    """Where the summary went: it replaced ``messages[head:head + summarized_messages]``."""

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "trigger": self.trigger,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "summarized_messages": self.summarized_messages,
        }
        if self.summary:
            out["summary"] = self.summary
        if self.head is not None:
            out["head"] = self.head
        if self.error is not None:
            out["error"] = self.error
        if self.call is not None:
            out["call"] = self.call.to_json()
        return out


Record = Callable[[str, Any], None]
_SAVED_IN = "; the whole output is saved in "
_READ_IT = ": Read it there"


@dataclass
class Compactor:
    """Keeps a session's context inside the window. One per session (its state lasts across runs)."""

    window: int
    """The model's context window, in tokens."""
    summarizer: Any = None
    """The model that writes compaction summaries (usually the session's own); None: no compaction."""
    price: Price | None = None
    """The summarizer's price; the run's own price when None."""
    hooks: HookRunner | None = None
    transcript_path: str = ""
    spill_dir: str = ""
    """Where a masked or evicted output is saved for the model's Read (rule 3); empty: nowhere."""
    mask_at: float = 0.65
    """How full the context must be before old outputs are masked (rule 3)."""
    mask_threshold: int = 2000
    keep_recent: int = 5
    tool_result_cap: int = 400_000
    """Characters of tool output kept in context in all; the oldest are evicted past it."""
    warn_levels: tuple[float, ...] = WARN_LEVELS
    compact_at: float = 0.90
    keep_fraction: float = 0.25
    """How much of the window the kept recent part may take after a compaction."""
    summary_max_tokens: int = 2048
    max_failures: int = 3
    counter: Callable[[Sequence[Message]], int | None] | None = None
    """Exact token counting (a provider's count_tokens), used from the first warning level on."""
    notify: Callable[[str], None] | None = None
    """Where notices for the user go (the REPL prints them)."""
    ledger: Any = None
    """Unused: a side call reserves with the run's own ledger, through its loop (kept for callers that pass it)."""
    failures: int = 0
    disabled: bool = False
    warned: set[float] = field(default_factory=set)
    compactions: int = 0
    last_saved: int = 0
    """UTF-8 bytes the last ``mask`` took out of the messages (the loop's bound counts bytes)."""
    saved: dict[str, str] = field(default_factory=dict)
    """Call id -> the file the output masked or evicted last under that id was saved in (for the record)."""
    _tools_key: tuple[str, ...] | None = None
    _tools_size: int = 0

    # -- measuring --

    def tokens(self, messages: Sequence[Message], extra_chars: int = 0) -> int:
        est = estimate_tokens(messages, extra_chars)
        if self.counter is not None and est >= min(self.warn_levels, default=0.8) * self.window:
            try:
                exact = self.counter(messages)
            except Exception:  # an exact count is an improvement, never a requirement
                return est
            return est if exact is None else int(exact) + tokens_for_chars(extra_chars)
        return est

    def _say(self, text: str) -> None:
        if self.notify is not None:
            self.notify(text)

    # -- masking and eviction (no model needed) --

    def _placeholder(self, prefix: str, m: Message, size: int, nbytes: int | None = None, file: str = "") -> str:
        return placeholder(prefix, str(m.get("tool_call_id")), size, self.transcript_path, nbytes, file)

    def _save(self, m: Message, content: str) -> str:
        """Keep a tool output about to be masked in ``spill_dir`` (named by its content), for Read; its path or ""."""
        if content.startswith((MASK_PREFIX, EVICT_PREFIX)):  # saved when it was masked: the placeholder names it
            head, sep, rest = content.partition(_SAVED_IN)
            return rest.split(_READ_IT, 1)[0] if sep else ""
        if not self.spill_dir:
            return ""
        data = content.encode("utf-8", "surrogatepass")
        name = f"{m.get('name') or 'tool'}-{hashlib.sha256(data).hexdigest()[:16]}.txt"
        path = os.path.join(os.path.realpath(self.spill_dir), name)
        try:
            if not os.path.exists(path):
                from ...config.private import private_write

                private_write(path, data)  # a tool's output: the user's alone, as the session file
        except OSError:
            return ""  # the placeholder then names the transcript only
        return path

    def mask(self, messages: list[Message], *, old_outputs: bool = True) -> tuple[list[str], list[str]]:
        """Mask old large tool outputs (unless ``old_outputs`` is false) and apply the tool-result budget, in place.

        Returns:
            The call ids masked and the call ids evicted.
        """
        tool_idx = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
        self.last_saved = 0
        masked: list[str] = []
        evicted: list[str] = []
        old = tool_idx[: -self.keep_recent] if self.keep_recent else tool_idx
        if len(tool_idx) <= self.keep_recent or not old_outputs:
            old = []
        for i in old:
            m = messages[i]
            c = m.get("content")
            if isinstance(c, str) and len(c) > self.mask_threshold and not c.startswith((MASK_PREFIX, EVICT_PREFIX)):
                file = self._save(m, c)
                new_c = self._placeholder(MASK_PREFIX, m, len(c), len(c.encode("utf-8", "surrogatepass")), file)
                if file:
                    self.saved[str(m.get("tool_call_id"))] = file
                messages[i] = {**m, "content": new_c}
                self.last_saved += text_bytes(c) - text_bytes(new_c)  # the loop's bound counts UTF-8 bytes
                masked.append(str(m.get("tool_call_id")))
        total = sum(len(str(messages[i].get("content", ""))) for i in tool_idx)
        for i in tool_idx[:-1]:
            if total <= self.tool_result_cap:
                break
            m = messages[i]
            c = str(m.get("content", ""))
            if c.startswith(EVICT_PREFIX):
                continue
            size, nbytes = original_size(c)
            file = self._save(m, c)
            new = self._placeholder(EVICT_PREFIX, m, size, nbytes, file)
            if file:
                self.saved[str(m.get("tool_call_id"))] = file
            if len(new) >= len(c):
                continue
            messages[i] = {**m, "content": new}
            total -= len(c) - len(new)
            self.last_saved += text_bytes(c) - text_bytes(new)
            evicted.append(str(m.get("tool_call_id")))
        return masked, evicted

    # -- compaction --

    def _split(self, messages: list[Message], extra_chars: int) -> tuple[int, int] | None:
        """(start of the body, start of the kept tail): the tail starts at an assistant message."""
        head = 0
        while head < len(messages) and messages[head].get("role") == "system":
            head += 1
        budget_chars = int(self.keep_fraction * self.window * 4) - extra_chars  # the inverse of tokens_for_chars
        assistants = [i for i in range(head, len(messages)) if messages[i].get("role") == "assistant"]
        if not assistants:
            return None
        cut = assistants[-1]  # at least the last call and its results are kept
        kept = sum(message_chars(m) for m in messages[cut:])
        for i in reversed(assistants[:-1]):
            more = sum(message_chars(m) for m in messages[i:cut])
            if kept + more > budget_chars:
                break
            kept += more
            cut = i
        if cut <= head:
            return None
        return head, cut

    def _render(self, old: Sequence[Message]) -> str:
        limit = max(4000, int(self.window * 4 * 0.5))
        parts: list[str] = []
        for m in old:
            role = m.get("role")
            content = str(m.get("content", ""))
            cap = 600 if role == "tool" else 3000
            if len(content) > cap:
                content = content[:cap] + f" …[{len(content) - cap} more chars]"
            line = f"{role}: {content}"
            for c in m.get("tool_calls", ()):
                args = canonical(c.get("arguments")).decode()[:300] if isinstance(c, dict) else ""
                line += f"\n  -> called {c.get('name')}({args})"
            parts.append(line)
        text = "\n\n".join(parts)
        if len(text) > limit:
            text = "…[older part cut]…\n" + text[-limit:]
        return text

    def _pre_compact(self, record: Record, trigger: str, custom_instructions: str, before: int) -> CompactionResult | None:
        """PreCompact hooks: None to go on, or the ``blocked`` result (recorded)."""
        if self.hooks is None or not self.hooks.has("PreCompact"):
            return None
        pre = self.hooks.run("PreCompact", {"trigger": trigger, "custom_instructions": custom_instructions}, matcher_value=trigger)
        record("hook", pre.to_record())
        if not pre.blocked:
            return None
        res = CompactionResult("blocked", trigger, before, before, error=pre.reason)
        record("compaction", res.to_record())
        return res

    def compact(
        self,
        messages: list[Message],
        record: Record,
        *,
        account: Account,
        price: Price,
        trigger: str = "manual",
        custom_instructions: str = "",
        extra_chars: int = 0,
    ) -> CompactionResult:
        """Summarise the older part of ``messages`` in place. Never raises for the model's failures."""
        before = self.tokens(messages, extra_chars)
        if self.disabled:
            res = CompactionResult("disabled", trigger, before, before)
            record("compaction", res.to_record())
            return res
        if self.summarizer is None:
            return self._fail(record, CompactionResult("failed", trigger, before, before, error="no model to summarise with"))
        if trigger == "manual":  # Claude Code fires PreCompact on every /compact, short conversations included
            stopped = self._pre_compact(record, trigger, custom_instructions, before)
            if stopped is not None:
                return stopped
        split = self._split(messages, extra_chars)
        if split is None:
            res = CompactionResult("nothing", trigger, before, before)
            record("compaction", res.to_record())
            return res
        head, cut = split
        if trigger == "manual" and sum(message_chars(m) for m in messages[head:cut]) < min(self.summary_max_tokens, self.window // 10) * 4:
            # what would be summarised is no longer than a summary may be, or a tenth of the window:
            # nothing to gain, so nothing is spent
            res = CompactionResult("nothing", trigger, before, before)
            record("compaction", res.to_record())
            return res
        if trigger != "manual":
            stopped = self._pre_compact(record, trigger, custom_instructions, before)
            if stopped is not None:
                return stopped
        old = messages[head:cut]
        prompt = COMPACT_PROMPT + (f"\nAlso: {custom_instructions}" if custom_instructions else "")
        req = ModelRequest(
            messages=[{"role": "system", "content": prompt}, {"role": "user", "content": self._render(old)}],
            tools=(),
            max_output_tokens=self.summary_max_tokens,
        )
        call = side_call(self.summarizer, req, price=price, account=account, purpose="compaction")
        summary = call.reply.text.strip() if call.reply is not None else ""
        if not call.ok or not summary:
            why = call.skipped or call.error or "the model returned an empty summary"
            return self._fail(record, CompactionResult("failed", trigger, before, before, error=why, call=call))
        new_msg: Message = {"role": "user", "content": SUMMARY_PREFIX + summary}
        messages[head:cut] = [new_msg]
        after = self.tokens(messages, extra_chars)
        if after >= before:
            messages[head : head + 1] = old
            return self._fail(record, CompactionResult("failed", trigger, before, before, error="the summary did not make the context smaller", call=call))
        self.failures = 0
        self.compactions += 1
        self.warned = {lv for lv in self.warned if after >= lv * self.window}
        res = CompactionResult("compacted", trigger, before, after, len(old), summary, call=call, head=head)
        record("compaction", res.to_record())
        if self.hooks is not None and self.hooks.has("PostCompact"):
            post = self.hooks.run("PostCompact", {"trigger": trigger, "compact_summary": summary}, matcher_value=trigger)
            record("hook", post.to_record())
        if self.hooks is not None and self.hooks.has("SessionStart"):
            # Claude Code's hooks reference, SessionStart matcher "compact": "Auto or manual compaction";
            # its context joins the summary (one user message, so roles still alternate)
            start = self.hooks.run("SessionStart", {"source": "compact"}, matcher_value="compact")
            if start.ran:
                record("hook", start.to_record())
            ctx = "\n\n".join(c for c in start.additional_context if c)
            if ctx:
                messages[head] = {"role": "user", "content": f"{new_msg['content']}\n\n{ctx}"}
        self._say(f"context compacted ({trigger}): {before} -> {after} tokens")
        return res

    def _fail(self, record: Record, res: CompactionResult) -> CompactionResult:
        self.failures += 1
        record("compaction", res.to_record())
        if self.failures >= self.max_failures and not self.disabled:
            self.disabled = True
            note = f"compaction failed {self.failures} times in a row ({res.error}); it is off for the rest of this session"
            record("compaction", {"status": "disabled", "trigger": res.trigger, "failures": self.failures, "notice": note})
            self._say(note)
        return res

    # -- the seam --

    def _tools_chars(self, tools: Sequence[Any]) -> int:
        """The size of the tool definitions for the typical estimate (computed once per set of tools)."""
        key = tuple(t.name for t in tools)
        if key != self._tools_key:
            self._tools_key, self._tools_size = key, len(canonical([t.to_json() for t in tools])) if tools else 0
        return self._tools_size

    def prepare(self, state: Any, record: Record) -> None:
        """``run(..., prepare=cm.prepare)``: mask, evict, warn and compact before each model call."""
        messages: list[Message] = state.messages
        extra = self._tools_chars(getattr(getattr(state, "config", None), "tools", ()))
        full = estimate_tokens(messages, extra) >= self.mask_at * self.window  # the estimate: no count call for it
        masked, evicted = self.mask(messages, old_outputs=full)
        if masked or evicted:
            shrink_bound(state, self.last_saved)  # the loop lowers its running bound (prepare keeps it right)
            rec: dict[str, Any] = {"step": state.steps, "masked": masked, "evicted": evicted, "where": self.transcript_path}
            files = {c: self.saved[c] for c in (*masked, *evicted) if c in self.saved}
            if files:
                rec["files"] = files
            record("context", rec)
        tokens = self.tokens(messages, extra)
        if tokens >= self.compact_at * self.window and not self.disabled:
            price = self.price or state.config.price
            res = self.compact(messages, record, account=LoopAccount(record), price=price, trigger="auto", extra_chars=extra)
            if res.status == "compacted":
                tokens = res.tokens_after
                recount_bound(state)
        for level in sorted(self.warn_levels):
            if tokens >= level * self.window and level not in self.warned:
                self.warned.add(level)
                pct = round(100 * tokens / self.window)
                record("context", {"step": state.steps, "warning": level, "tokens": tokens, "window": self.window})
                self._say(f"context is {pct}% full ({tokens} of {self.window} tokens)")
            elif tokens < level * self.window:
                self.warned.discard(level)
        return None
