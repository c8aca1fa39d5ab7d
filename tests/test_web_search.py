"""WebSearch: Claude Code's tool of that name, through Anthropic's server-side web search, against the local fake provider.

Claude Code's tools reference (code.claude.com/docs/en/tools-reference, WebSearch): ``query``,
``allowed_domains``, ``blocked_domains``; permission required; not available with every provider.
Anthropic's web search tool (platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool):
the tool ``{"type": "web_search_20250305", "name": "web_search", "max_uses", "allowed_domains" |
"blocked_domains"}`` (one of the two, not both); the reply's ``server_tool_use`` and
``web_search_tool_result`` blocks (``web_search_result`` with ``url``, ``title``, ``page_age``,
``encrypted_content``); ``usage.server_tool_use.web_search_requests`` counts the searches, billed
at $10 per 1,000 on top of the tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.agent.tools.web_search import MAX_USES
from agentloop.budget import cost_micros, usd
from agentloop.events import Usage
from agentloop.providers.web_search import SEARCH_PRICE_MICROS
from agentloop.replay import replay
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records

SEARCH_REPLY = {
    "web_search": [{"query": "widget release", "results": [
        {"url": "https://docs.widget.dev/releases", "title": "Widget release notes", "page_age": "2 days ago"},
        {"url": "https://spam.example/widget", "title": "Cheap widgets"},
    ]}],
    "text": "Widget 2.1 came out this week.",
}


def _call(**args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "WebSearch", "arguments": {"query": "widget release", **args}}]}


def _run(tmp_path: Path, spec: str, replies: list[dict[str, Any]], cap: str = "5", rules: list[str] | None = None) -> tuple[Agent, list[dict[str, Any]]]:
    cwd = tmp_path / "proj"
    (cwd / ".claude").mkdir(parents=True, exist_ok=True)
    (cwd / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": rules if rules is not None else ["WebSearch"]}}))
    with FakeProvider({"replies": replies}) as fp:
        base = fp.url + "/v1" if spec.startswith("openai:") else fp.url
        a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=spec, base_url=base, env={}, max_usd_micros=usd(cap), trust=True)
        try:
            a.ask("what's new with widget?")
        finally:
            a.close("prompt_input_exit")
        return a, [r["body"] for r in fp.requests if r["protocol"]]


def _result(a: Agent) -> dict[str, Any]:
    (res,) = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result" and r.payload["name"] == "WebSearch"]
    return res


def test_a_search_goes_through_the_server_tool_and_its_results_and_price_are_recorded(tmp_path: Path) -> None:
    a, bodies = _run(tmp_path, "anthropic:claude-sonnet-4-5", [_call(allowed_domains=["docs.widget.dev"]), SEARCH_REPLY, {"text": "done"}])
    search = bodies[1]
    assert search["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": MAX_USES,
                                "allowed_domains": ["docs.widget.dev"]}]
    assert search["model"] == "claude-haiku-4-5" and "widget release" in json.dumps(search["messages"])
    res = _result(a)
    assert res["ok"]
    assert "1. [Widget release notes](https://docs.widget.dev/releases) (2 days ago)" in res["content"]
    assert "spam.example" not in res["content"]  # the domain filter reached the server tool
    assert "Widget 2.1 came out this week." in res["content"]
    (cost,) = [r.payload for r in read_records(a.session.path) if r.kind == "side_cost"]
    tokens = Usage(**{k: cost["usage"].get(k, 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")})
    assert cost["purpose"] == "web_search"
    assert cost["cost_micros"] == cost_micros(tokens, a.prices.resolve("claude-haiku-4-5")) + SEARCH_PRICE_MICROS  # one search billed
    rep = replay(a.session.path)  # offline: the search's result and its bill come from the record
    assert rep.equal, rep.first_difference


def test_a_failed_search_is_listed_and_not_billed_as_a_search(tmp_path: Path) -> None:
    failed = {"web_search": [{"query": "widget release", "error": "too_many_requests"}], "text": "The search failed."}
    a, _ = _run(tmp_path, "anthropic:claude-sonnet-4-5", [_call(), failed, {"text": "done"}])
    assert "search error: widget release: too_many_requests" in _result(a)["content"]
    (cost,) = [r.payload for r in read_records(a.session.path) if r.kind == "side_cost"]
    assert cost["cost_micros"] < SEARCH_PRICE_MICROS


def test_on_an_openai_compatible_provider_the_result_says_websearch_is_not_available(tmp_path: Path) -> None:
    a, bodies = _run(tmp_path, "openai:gpt-4o-mini", [_call(), {"text": "done"}])
    res = _result(a)
    assert not res["ok"] and "WebSearch is not available with this provider" in res["error"] and "WebFetch" in res["error"]
    assert len(bodies) == 2  # the two turns; no search request


def test_without_room_under_the_cap_no_search_is_made(tmp_path: Path) -> None:
    a, bodies = _run(tmp_path, "anthropic:claude-haiku-4-5", [_call(), {"text": "done"}], cap="0.15")
    res = _result(a)
    assert not res["ok"] and "no room for a web search" in res["error"]
    assert all("tools" not in b or all(t.get("type") != "web_search_20250305" for t in b["tools"]) for b in bodies)
    assert not [r for r in read_records(a.session.path) if r.kind == "side_cost"]


def test_allowed_and_blocked_domains_together_are_refused_before_any_request(tmp_path: Path) -> None:
    a, bodies = _run(tmp_path, "anthropic:claude-sonnet-4-5", [_call(allowed_domains=["a.dev"], blocked_domains=["b.dev"]), {"text": "done"}])
    assert "not both" in _result(a)["error"] and len(bodies) == 2


def test_websearch_asks_permission_and_a_deny_rule_refuses_it(tmp_path: Path) -> None:
    a, bodies = _run(tmp_path, "anthropic:claude-sonnet-4-5", [_call(), {"text": "done"}], rules=[])
    assert "no one could be asked" in _result(a)["error"] and len(bodies) == 2
