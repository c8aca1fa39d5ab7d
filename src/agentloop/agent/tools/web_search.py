"""WebSearch: Claude Code's tool of that name (``query``, ``allowed_domains``, ``blocked_domains``), run by the
provider's own server-side search where it has one.

Rules:

1. Anthropic's models search through the Messages API's ``web_search_20250305``
   tool (``providers/web_search.py``), asked of the provider's small model;
   any other provider (OpenAI-compatible Chat Completions has no such tool)
   gets a result saying WebSearch is not available there, and what to do instead.
2. Money first, through the one metered path (``context.side_calls.metered``):
   the call's bound (the input the results can fill, at most a context
   window; ``OUTPUT_TOKENS`` of output; ``MAX_USES`` searches at their price)
   is held from what the parent's loop has left before the request; without
   room there is no request and the result says so. What it was billed
   (tokens, plus each search counted in
   ``usage.server_tool_use.web_search_requests``) is settled by
   ``budget.bill``: counts past what the request allowed (searches past
   ``max_uses``, output past ``max_tokens``) are charged the whole
   reservation as an overrun that stops the run; failures are charged what
   they were billed, at most the reservation.
3. ``allowed_domains`` and ``blocked_domains`` are passed to the server tool
   as given (host names, subdomains included); both at once is refused, as the API does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...budget import CallBound
from ...tools import Tool, ToolError
from ..context.side_calls import Answer, HeldAccount, metered
from .record import ToolRecord
from .web_fetch import PromptModel

__all__ = ["SEARCH_SCHEMA", "WEB_SEARCH", "WebSearch"]

MAX_USES = 5
OUTPUT_TOKENS = 2_048

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 2, "description": "What to search for."},
        "allowed_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Only results from these domains (subdomains included)."},
        "blocked_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Never results from these domains (subdomains included)."},
    },
    "required": ["query"],
    "additionalProperties": False,
}

_DOC = (
    "Search the web and get result titles and links with a short summary. Use it for facts newer than your "
    "training, current versions and documentation you need to find; read a result in full with WebFetch.\n"
    "- allowed_domains or blocked_domains (not both) narrow the results to or away from some sites.\n"
    "- Available only with Anthropic's models (a server-side search, billed per search under the spend cap).\n"
    "- Name the URLs you relied on when you use what you found."
)


WEB_SEARCH = ToolRecord("WebSearch", _DOC, SEARCH_SCHEMA, lookup=True, acp="search", spends=True)


class WebSearch:
    """The tool; ``model_of()`` gives the model that searches, its price and the budget (a ``PromptModel``)."""

    def __init__(self, model_of: Callable[[], PromptModel | None]):
        self.model_of = model_of

    def tool(self) -> Tool:
        def web_search(query: str, allowed_domains: list[str] | None = None, blocked_domains: list[str] | None = None) -> str:
            return self.search(query, allowed_domains, blocked_domains)

        return WEB_SEARCH.tool(web_search)

    def search(self, query: str, allowed: list[str] | None = None, blocked: list[str] | None = None) -> str:
        if allowed and blocked:
            raise ToolError("give allowed_domains or blocked_domains, not both")
        # deferred: the provider's HTTP client (httpx) loads only when a search is asked, not at every start
        from ...providers.web_search import (
            SEARCH_INPUT_BOUND,
            SEARCH_PRICE_MICROS,
            run_web_search,
            supports_web_search,
        )

        pm = self.model_of()
        if pm is None or not supports_web_search(pm.model):
            vendor = type(pm.model).__name__ if pm is not None else "no model"
            raise ToolError(f"WebSearch is not available with this provider ({vendor}): only Anthropic's Messages API "
                            "searches server-side. Use WebFetch on a URL you know, or ask the user for one.")
        bound = CallBound(SEARCH_INPUT_BOUND, OUTPUT_TOKENS, pm.price, uses=MAX_USES, use_micros=SEARCH_PRICE_MICROS)

        def call() -> Answer:
            out = run_web_search(pm.model, query, max_tokens=OUTPUT_TOKENS, max_uses=MAX_USES,
                                 allowed_domains=allowed, blocked_domains=blocked)
            return Answer(out, out.usage, out.searches)

        answer, rec = metered(call, bound, HeldAccount(pm.budget), "web_search")
        if rec.skipped is not None:
            raise ToolError(f"the spend cap has no room for a web search (its bound: {bound.micros} micro-USD); none was made")
        if answer is None:
            first = (rec.error or "").splitlines()[0] if rec.error else "no answer"
            raise ToolError(f"the web search failed: {first}")
        return _render(query, answer.value)


def _render(query: str, out: Any) -> str:
    lines = [f"Web search results for {query!r} ({out.searches} search{'es' if out.searches != 1 else ''}):"]
    if not out.results:
        lines.append("(no results)")
    for i, r in enumerate(out.results, 1):
        age = f" ({r['page_age']})" if r.get("page_age") else ""
        lines.append(f"{i}. [{r['title'] or r['url']}]({r['url']}){age}")
    for e in out.errors:
        lines.append(f"search error: {e}")
    if out.text:
        lines += ["", out.text]
    lines += ["", "Name the URLs you rely on when you use these results."]
    return "\n".join(lines)
