"""WebFetch: Claude Code's tool of that name, against a real HTTP server on 127.0.0.1 and the local fake provider.

Claude Code's tools reference (code.claude.com/docs/en/tools-reference, WebFetch; its tool description):
WebFetch takes ``url`` and ``prompt``, "fetches content from a specified URL and processes it using
an AI model": the page is converted to Markdown and a small, fast model answers ``prompt`` against it;
HTTP is upgraded to HTTPS; a redirect to a different host is reported with the new URL rather than
followed; responses are cached for 15 minutes; permission is required. Its permissions page
(code.claude.com/docs/en/permissions): ``WebFetch(domain:example.com)`` matches fetch requests to example.com.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.subagents.parent_budget import ParentBudget
from agentloop.agent.tools import web_fetch
from agentloop.agent.tools.web_fetch import MAX_MARKDOWN, WebFetch, check_url
from agentloop.budget import usd
from agentloop.replay import replay
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.tools import ToolError
from agentloop.transcript import read_records, verify_file

PAGE = ("<html><head><title>Widget docs</title><script>steal()</script></head><body>"
        "<h1>Installing</h1><p>Run <code>pip install widget==2.1</code> then <a href='/next'>go on</a>.</p></body></html>")


class _Site(BaseHTTPRequestHandler):
    hits: list[str]

    def log_message(self, *a: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        port = self.server.server_address[1]
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE.encode(), {}),
            "/huge": (200, "text/plain", b"line of text\n" * 30_000, {}),
            "/elsewhere": (302, "text/plain", b"", {"Location": f"http://localhost:{port}/page"}),
            "/same": (301, "text/plain", b"", {"Location": "/page"}),
            "/binary": (200, "application/octet-stream", b"\x00\x01" * 100, {}),
            "/missing": (404, "text/plain", b"no such page", {}),
        }
        status, ctype, body, headers = routes.get(self.path, routes["/missing"])
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    srv.hits = []  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def _agent(tmp_path: Path, fp: FakeProvider, rules: dict[str, list[str]] | None = None, **kw: Any) -> Agent:
    cwd = tmp_path / "proj"
    (cwd / ".claude").mkdir(parents=True, exist_ok=True)
    if rules:
        (cwd / ".claude" / "settings.json").write_text(json.dumps({"permissions": rules}))
    return Agent(cwd=str(cwd), home=str(tmp_path / "home"), model="anthropic:claude-sonnet-4-5", base_url=fp.url,
                 env={}, max_usd_micros=usd("5"), trust=True, **kw)


def _fetch_call(url: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "WebFetch", "arguments": {"url": url, "prompt": "How is it installed?"}}]}


def _results(a: Agent) -> list[dict[str, Any]]:
    return [r.payload for r in read_records(a.session.path) if r.kind == "tool_result" and r.payload["name"] == "WebFetch"]


def test_an_allow_rule_for_the_domain_fetches_the_page_and_a_small_model_answers_the_prompt(tmp_path: Path, site: Any) -> None:
    replies = [_fetch_call(_url(site, "/page")), {"text": "Install it with pip install widget==2.1."}, {"text": "done"}]
    with FakeProvider({"replies": replies}) as fp:
        a = _agent(tmp_path, fp, {"allow": ["WebFetch(domain:127.0.0.1)"]})  # no asker: as in -p
        try:
            a.ask("install widget")
        finally:
            a.close("prompt_input_exit")
        bodies = [r["body"] for r in fp.requests if r["protocol"]]
    (res,) = _results(a)
    assert res["ok"] and res["content"] == "Install it with pip install widget==2.1."
    side = bodies[1]  # the prompt, applied by the provider's small model to the page as Markdown
    assert side["model"] == "claude-haiku-4-5" and "thinking" not in side
    sent = json.dumps(side["messages"])
    assert "# Installing" in sent and "`pip install widget==2.1`" in sent and "[go on](/next)" in sent
    assert "steal()" not in sent and "How is it installed?" in sent
    (cost,) = [r.payload for r in read_records(a.session.path) if r.kind == "side_cost"]
    assert cost["purpose"] == "web_fetch" and cost["cost_micros"] > 0  # charged to the run, under its cap
    assert site.hits == ["/page"]


def test_a_deny_rule_for_the_domain_refuses_before_anything_is_fetched(tmp_path: Path, site: Any) -> None:
    with FakeProvider({"replies": [_fetch_call(_url(site, "/page")), {"text": "done"}]}) as fp:
        a = _agent(tmp_path, fp, {"deny": ["WebFetch(domain:127.0.0.1)"], "allow": ["WebFetch"]})
        try:
            a.ask("x")
        finally:
            a.close("prompt_input_exit")
    (res,) = _results(a)
    assert not res["ok"] and "denied" in res["error"] and "WebFetch(domain:127.0.0.1)" in res["error"]
    assert site.hits == []


def test_without_an_allow_rule_it_asks_and_with_no_one_to_ask_it_is_refused(tmp_path: Path, site: Any) -> None:
    with FakeProvider({"replies": [_fetch_call(_url(site, "/page")), {"text": "done"}]}) as fp:
        a = _agent(tmp_path, fp, {"allow": ["WebFetch(domain:example.com)"]})  # another domain's rule allows nothing here
        try:
            a.ask("x")
        finally:
            a.close("prompt_input_exit")
    (res,) = _results(a)
    assert not res["ok"] and "no one could be asked" in res["error"]
    assert site.hits == []
    asked: list[str] = []

    def ask(call: Any, decision: Any) -> str:
        asked.append(call.arguments["url"])
        return "deny"

    with FakeProvider({"replies": [_fetch_call(_url(site, "/page")), {"text": "done"}]}) as fp:
        a = _agent(tmp_path, fp, ask_permission=ask)  # the REPL: a person is asked
        try:
            a.ask("x")
        finally:
            a.close("prompt_input_exit")
    assert asked == [_url(site, "/page")] and site.hits == []


def test_always_at_the_prompt_remembers_the_domain_not_every_fetch(tmp_path: Path, site: Any) -> None:
    with FakeProvider({"replies": [_fetch_call(_url(site, "/page")), {"text": "ok"}, {"text": "done"}]}) as fp:
        a = _agent(tmp_path, fp, ask_permission=lambda call, d: "always")
        try:
            a.ask("x")
            assert a.policy.decide("WebFetch", {"url": "https://127.0.0.1/other"}).behavior == "allow"
            assert a.policy.decide("WebFetch", {"url": "https://example.com/"}).behavior == "ask"
        finally:
            a.close("prompt_input_exit")


def test_a_redirect_to_another_host_is_reported_not_followed(site: Any) -> None:
    wf = WebFetch(None)
    out = wf.fetch(_url(site, "/elsewhere"), "p")
    assert f"http://localhost:{site.server_address[1]}/page" in out and "redirects to another host" in out
    assert site.hits == ["/elsewhere"]  # nothing was read from the other host
    out = wf.fetch(_url(site, "/same"), "p")  # the same host: followed
    assert "pip install widget==2.1" in out and site.hits[-2:] == ["/same", "/page"]


def test_a_huge_page_is_cut_with_a_note_and_without_a_model_the_text_comes_back_cut_and_says_why(site: Any) -> None:
    out = WebFetch(None).fetch(_url(site, "/huge"), "p")
    assert out.startswith("[the prompt was not applied (no model to apply the prompt with)")
    assert f"cut at {MAX_MARKDOWN:,} of {len('line of text' + chr(10)) * 30_000:,} characters" in out
    assert len(out) < web_fetch.FALLBACK_CHARS + 1_000


def test_the_fetched_body_is_bounded(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_fetch, "MAX_BYTES", 1_000)
    out = WebFetch(None).fetch(_url(site, "/huge"), "p")
    assert "only its first 1,000 bytes were fetched" in out and out.count("line of text") < 100
    monkeypatch.setattr(web_fetch, "MAX_BYTES", 10 * 1024 * 1024)
    monkeypatch.setattr(web_fetch, "READ_DEADLINE_S", 0.0)  # a body still arriving at the deadline is cut there
    out = WebFetch(None).fetch(_url(site, "/huge"), "p")
    assert "it was still arriving after 0 s" in out


@pytest.mark.parametrize(("url", "why"), [
    ("ftp://example.com/file", "only http:// and https:// URLs, not a ftp: URL"),
    ("file:///etc/passwd", "not a file: URL; for a local file use Read"),
    ("example.com/page", "a URL without a scheme"),
    ("https://user:pw@example.com/", "user name or password"),
    ("https://exa mple.com/", "spaces, control characters or backslashes"),
    ("https://evil.com\\@example.com/", "backslashes"),
])
def test_a_url_that_is_not_plain_http_gets_a_clear_error(url: str, why: str) -> None:
    with pytest.raises(ToolError, match=None) as e:
        check_url(url)
    assert why in str(e.value)


def test_http_is_upgraded_to_https_except_on_the_loopback_host() -> None:
    assert check_url("http://example.com/a?b=1#frag") == ("https://example.com/a?b=1", "example.com")
    assert check_url("http://127.0.0.1:8080/x")[0] == "http://127.0.0.1:8080/x"


def test_a_url_holding_a_session_secret_is_never_sent(site: Any) -> None:
    wf = WebFetch(None, secret_in=lambda u: "s3cr3t-value" in u)
    with pytest.raises(ToolError, match="holds a secret"):
        wf.fetch(_url(site, "/page?k=s3cr3t-value"), "p")
    assert site.hits == []


def test_a_page_is_cached_for_fifteen_minutes(site: Any) -> None:
    now = [1000.0]
    wf = WebFetch(None, clock=lambda: now[0])
    wf.fetch(_url(site, "/page"), "p")
    now[0] += 14 * 60
    wf.fetch(_url(site, "/page"), "p")
    assert site.hits == ["/page"]
    now[0] += 2 * 60
    wf.fetch(_url(site, "/page"), "p")
    assert site.hits == ["/page", "/page"]


def test_binary_content_and_an_error_status_are_refused_in_one_line(site: Any) -> None:
    with pytest.raises(ToolError, match="application/octet-stream .* reads only text and HTML"):
        WebFetch(None).fetch(_url(site, "/binary"), "p")
    with pytest.raises(ToolError, match="answered HTTP 404"):
        WebFetch(None).fetch(_url(site, "/missing"), "p")


def test_with_no_room_under_the_cap_the_prompt_is_not_applied_and_the_result_says_so(site: Any) -> None:
    class Budget(ParentBudget):
        def hold(self, micros: int, tokens: int) -> Any:
            return None

    called: list[Any] = []

    class Model:
        def complete(self, req: Any) -> Any:
            called.append(req)
            raise AssertionError("no call without a hold")

    from agentloop.budget import Price

    pm = web_fetch.PromptModel(Model(), Price(1_000_000, 5_000_000), Budget())
    out = WebFetch(lambda: pm).fetch(_url(site, "/page"), "p")
    assert out.startswith("[the prompt was not applied (the spend cap has no room") and "pip install widget==2.1" in out
    assert called == []


def test_a_session_with_webfetch_replays_offline_from_its_record(tmp_path: Path, site: Any) -> None:
    replies = [_fetch_call(_url(site, "/page")), {"text": "pip install widget==2.1"}, {"text": "done"}]
    with FakeProvider({"replies": replies}) as fp:
        a = _agent(tmp_path, fp, {"allow": ["WebFetch(domain:127.0.0.1)"]})
        try:
            a.ask("install widget")
        finally:
            a.close("prompt_input_exit")
    site.shutdown()  # no network: the tool's result and its side cost come from the record
    assert verify_file(a.session.path).ok
    rep = replay(a.session.path)
    assert rep.equal, rep.first_difference


def test_a_pretooluse_hook_matching_webfetch_by_name_sees_the_url_and_can_block_it(tmp_path: Path, site: Any) -> None:
    """Claude Code's hooks reference: a PreToolUse matcher is the tool name; exit code 2 blocks the call, stderr its reason."""
    seen = tmp_path / "proj" / "seen.json"  # in the workspace: a project's hook runs in the sandbox
    hook = {"hooks": {"PreToolUse": [{"matcher": "WebFetch", "hooks": [
        {"type": "command", "command": f"cat > {seen}; echo 'no fetching today' >&2; exit 2"}]}]}}
    (tmp_path / "proj" / ".claude").mkdir(parents=True)
    (tmp_path / "proj" / ".claude" / "settings.local.json").write_text(json.dumps(hook))
    with FakeProvider({"replies": [_fetch_call(_url(site, "/page")), {"text": "done"}]}) as fp:
        a = _agent(tmp_path, fp, {"allow": ["WebFetch(domain:127.0.0.1)"]})
        try:
            a.ask("x")
        finally:
            a.close("prompt_input_exit")
    (res,) = _results(a)
    assert not res["ok"] and "no fetching today" in res["error"]
    payload = json.loads(seen.read_text())
    assert payload["tool_name"] == "WebFetch" and payload["tool_input"]["url"] == _url(site, "/page")
    assert site.hits == []


def test_a_sub_agent_may_fetch_under_the_parents_rules_and_its_prompt_call_is_charged_to_the_parent(tmp_path: Path, site: Any) -> None:
    replies = [
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "read docs", "prompt": "find the install line"}}]},
        _fetch_call(_url(site, "/page")),  # the child's turn
        {"text": "pip install widget==2.1"},  # the small model, applying the prompt
        {"text": "child: pip install widget==2.1"},
        {"text": "done"},
    ]
    with FakeProvider({"replies": replies}) as fp:
        a = _agent(tmp_path, fp, {"allow": ["WebFetch(domain:127.0.0.1)"]})
        try:
            r = a.ask("install widget")
        finally:
            a.close("prompt_input_exit")
    assert site.hits == ["/page"]
    recs = list(read_records(a.session.path))
    (sub,) = [x.payload for x in recs if x.kind == "subagent"]
    assert sub["answer"] == "child: pip install widget==2.1"
    costs = [x.payload for x in recs if x.kind == "side_cost"]
    assert sorted(c["purpose"] for c in costs) == ["subagent", "web_fetch"]
    assert r.spent_micros == sum(x.payload["cost_micros"] for x in recs if x.kind == "budget") + sum(c["cost_micros"] for c in costs)
