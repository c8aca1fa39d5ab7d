"""Web search through the provider's own server-side tool: Anthropic's ``web_search_20250305``.

The Messages API runs the searches itself when a request offers the tool
``{"type": "web_search_20250305", "name": "web_search", "max_uses": N,
"allowed_domains" | "blocked_domains": [...]}``: the reply holds a
``server_tool_use`` block per search, its ``web_search_tool_result`` (a list
of ``web_search_result`` with ``url``, ``title``, ``page_age`` and
``encrypted_content``, or a ``web_search_tool_result_error`` with an
``error_code``), and the model's text; ``usage.server_tool_use.web_search_requests``
counts the searches billed, at ``SEARCH_PRICE_MICROS`` each on top of the tokens.

One request, not streamed, with the model's own key and base URL, its body
read in bounded time and memory (``bounded.read_capped``: at most
``SEARCH_BODY_BYTES`` decoded, within the call's deadline); a failure is a
``ProviderError`` carrying no usage (nothing was answered), and a body past
the bound or figures past the request are charged the reservation. OpenAI's
Responses API has its own (``{"type": "web_search"}``: ``openai_responses.run_responses_search``,
allowed domains only, each ``web_search_call`` a search billed at the same $10 per 1,000); its Chat
Completions has none: ``supports_web_search`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import Usage
from .anthropic import AnthropicModel, _join
from .base import MAX_REPLY_BYTES, HTTPModel, post_search, reported_count

__all__ = ["SEARCH_INPUT_BOUND", "SEARCH_PRICE_MICROS", "SearchOutcome", "run_web_search", "supports_web_search"]

SEARCH_PRICE_MICROS = 10_000
"""Anthropic's price of one search: $10 per 1,000 (platform.claude.com, "Web search tool", usage and pricing)."""
SEARCH_INPUT_BOUND = 200_000
"""The most input tokens one search request can be billed: the results enter the model's context, which
holds at most this many tokens (the 200k window of the Claude models without the long-context beta)."""
TOOL_TYPE = "web_search_20250305"
SEARCH_BODY_BYTES = MAX_REPLY_BYTES
"""The most decoded bytes of a search's reply read (its results and text); past it the reply is refused, billed."""


def supports_web_search(model: Any) -> bool:
    """The model's provider has a server-side web search (Anthropic's Messages API; OpenAI's Responses API)."""
    from .openai_responses import ResponsesModel

    return isinstance(model, AnthropicModel | ResponsesModel)


@dataclass(frozen=True)
class SearchOutcome:
    text: str
    """The model's text after its searches (citations dropped: the results list the sources)."""
    results: list[dict[str, Any]] = field(default_factory=list)
    """``{"query", "url", "title", "page_age"}`` for each result, in order."""
    errors: list[str] = field(default_factory=list)
    """``query: error_code`` for each search that failed."""
    usage: Usage = Usage()
    searches: int = 0
    """``usage.server_tool_use.web_search_requests``: the searches billed."""


def run_web_search(
    model: HTTPModel, query: str, *, max_tokens: int, max_uses: int,
    allowed_domains: list[str] | None = None, blocked_domains: list[str] | None = None,
) -> SearchOutcome:
    """One Messages request offering the web search tool, asked to search for ``query``.

    Raises:
        ProviderError: the request failed (the provider's one-line message, keys scrubbed).
    """
    from .openai_responses import ResponsesModel, run_responses_search

    if isinstance(model, ResponsesModel):  # OpenAI's built-in web_search tool (openai_responses.py)
        return SearchOutcome(*run_responses_search(model, query, max_tokens=max_tokens, max_uses=max_uses,
                                                   allowed_domains=allowed_domains, blocked_domains=blocked_domains))
    tool: dict[str, Any] = {"type": TOOL_TYPE, "name": "web_search", "max_uses": max_uses}
    if allowed_domains:
        tool["allowed_domains"] = list(allowed_domains)
    if blocked_domains:
        tool["blocked_domains"] = list(blocked_domains)
    body = {
        "model": model.target.model,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": f"Search the web for: {query}\n\nThen list what the results say, briefly."}],
        "tools": [tool],
    }
    return post_search(model, _join(model.target.base_url, "/v1/messages"), body, read_search_reply)


def read_search_reply(msg: Any) -> SearchOutcome:
    """A Messages reply's search blocks, text and usage (unknown blocks skipped, counts checked)."""
    queries: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    texts: list[str] = []
    for b in msg.get("content") or [] if isinstance(msg, dict) else []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "server_tool_use" and b.get("name") == "web_search":
            inp = b.get("input")
            queries[str(b.get("id"))] = str(inp.get("query", "")) if isinstance(inp, dict) else ""
        elif t == "web_search_tool_result":
            q = queries.get(str(b.get("tool_use_id")), "")
            c = b.get("content")
            if isinstance(c, list):
                results += [{"query": q, "url": str(x.get("url", "")), "title": str(x.get("title", "")), "page_age": x.get("page_age")}
                            for x in c if isinstance(x, dict) and x.get("type") == "web_search_result"]
            elif isinstance(c, dict):
                errors.append(f"{q}: {c.get('error_code', 'error')}")
        elif t == "text":
            texts.append(str(b.get("text", "")))
    u = msg.get("usage") if isinstance(msg, dict) else None
    u = u if isinstance(u, dict) else {}
    stu = u.get("server_tool_use")
    stu = stu if isinstance(stu, dict) else {}
    usage = Usage(
        input_tokens=reported_count(u, "input_tokens"),
        output_tokens=reported_count(u, "output_tokens"),
        cache_read_tokens=reported_count(u, "cache_read_input_tokens"),
        cache_write_tokens=reported_count(u, "cache_creation_input_tokens"),
    )
    return SearchOutcome("".join(texts).strip(), results, errors, usage, reported_count(stu, "web_search_requests"))
