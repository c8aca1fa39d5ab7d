"""A local model server that speaks both wire protocols, for tests and demos.

Run it::

    python -m agentloop.testing.fakeprovider --script replies.json --port 0

It binds 127.0.0.1, prints its base URL (``http://127.0.0.1:PORT``) as the
first line on stdout, and serves until killed. Point a client at it with
``--model openai:NAME --base-url URL/v1`` or ``--model anthropic:NAME`` with
``ANTHROPIC_BASE_URL=URL`` (any key will do unless the script sets
``require_key``). Name a model the price table knows (``openai:gpt-4o-mini``,
``anthropic:claude-haiku-4-5``): an unknown name costs the table's highest
price, and a small ``--max-usd`` then stops the run before its first call. The paths it answers, with or without a leading ``/v1``:

- ``POST /chat/completions``: OpenAI Chat Completions, JSON or SSE (``stream``).
- ``POST /messages``: Anthropic Messages, JSON or SSE (``stream``).
- ``POST /messages/count_tokens``: Anthropic token counting (uses no reply).
- ``POST /responses``: OpenAI's Responses API, JSON or SSE (``fake_responses.py``: reasoning items,
  and what else a reply may say there).
- ``POST /model/{modelId}/invoke-with-response-stream`` (and ``/invoke``): Claude on Amazon
  Bedrock, the Anthropic events in AWS event-stream frames (``testing/awsframes.py``); the
  body must carry ``anthropic_version: bedrock-2023-05-31`` (or the API's dated version, as the SDK
  sends it) and no ``model``. With
  ``"aws": {"access_key_id", "secret_access_key", "region"}`` in the script, a request
  whose SigV4 signature does not verify gets a 403 (``InvalidSignatureException``).
- ``POST /projects/{p}/locations/{r}/publishers/anthropic/models/{m}:streamRawPredict``
  (and ``:rawPredict``): Claude on Vertex AI, Anthropic's SSE; the body must carry
  ``anthropic_version: vertex-2023-10-16`` and no ``model``.
- ``POST /token``: an OAuth token endpoint for google-auth's refresh, answering
  ``{"access_token": script's "google_token" (default "ya29.fake-token"), "expires_in": 3600}``.
- ``GET /requests``: the requests received so far, as JSON (keys never kept: ``auth`` says which header
  carried a credential, by its scheme).

The script is a JSON file: either a list of replies, or an object::

    {
      "replies": [REPLY, ...],
      "when_done": "error",        # after the last reply: "error" (a 500 saying so),
                                   # "repeat" (the last reply again), "cycle" (from the top)
      "seed": 0,                   # for random latencies
      "require_key": null,         # when set, any other key gets a 401
      "cache": true                # report prompt-cache reads and writes (below)
    }

Each request to a completion endpoint takes the next REPLY, an object with:

- ``text``: the assistant's text (default "").
- ``tool_calls``: ``[{"name": ..., "arguments": {...}, "id": optional}]``.
- ``stop_reason``: ``end_turn``, ``tool_use`` or ``max_tokens`` (the
  default is ``tool_use`` when there are tool calls, else ``end_turn``); sent
  as ``stop``, ``tool_calls`` and ``length`` on the OpenAI protocol. A streamed
  ``max_tokens`` reply with tool calls stops inside the last call's arguments.
- ``usage``: ``{"input_tokens": n, "output_tokens": n}`` to report instead
  of the computed figures (input: the request's characters // 4; output: the
  reply's characters // 4 + 1), or ``"none"`` to report no usage at all (as
  OpenAI-compatible servers that ignore ``stream_options.include_usage`` do),
  or ``"max"`` to bill every call its whole ``max_tokens`` of output (an
  honest provider at its dearest). The counts given are sent as they are
  (negative, fractional, huge, strings: a lying provider).
- ``thinking``: Anthropic protocol only: a ``thinking`` block with this text
  comes first, its ``signature`` the SHA-256 of the text (streamed as
  ``thinking_delta`` and ``signature_delta``), as extended thinking sends it.
- ``web_search``: Anthropic protocol only, answered when the request offers the
  ``web_search_20250305`` server tool: a list of searches, each
  ``{"query": ..., "results": [{"url", "title", "page_age"?}]}`` or
  ``{"query": ..., "error": "max_uses_exceeded"}`` (any documented error code).
  Each becomes a ``server_tool_use`` block and its ``web_search_tool_result``
  (results filtered by the tool's ``allowed_domains``/``blocked_domains``,
  subdomains included; a request with both is refused with a 400, as the API
  does; searches past ``max_uses`` become ``max_uses_exceeded``), before the
  reply's text; ``usage.server_tool_use.web_search_requests`` counts the
  searches made (or is the reply's ``usage.web_search_requests``, sent as given).
- ``model``: the model name to report (default: the one requested).
- ``latency``: seconds before the response, or ``[min, max]`` for a uniform
  random pick (seeded by ``seed``).
- ``chunk_size`` (default 8): characters of text or of tool-call arguments
  per streamed delta; ``chunk_delay`` (default 0): seconds between events.
- ``fault``: instead of a normal answer,
  ``"429"`` (rate limited, with ``retry_after`` seconds in ``retry-after``),
  ``"500"``, ``"529"`` (overloaded; ``retry_after`` optional),
  ``"401"`` (bad key), ``"quota"`` (out of credit: OpenAI's 429
  ``insufficient_quota``, Anthropic's 400 credit balance), ``"context"`` (a 400
  saying the input, ``input_tokens`` of the reply, plus the request's max tokens
  pass a window of ``limit`` tokens, in the vendor's words), ``"stall"`` (the
  stream starts, then nothing for ``stall_seconds``, default 60, then the
  connection closes), ``"cut"`` (the stream stops in the middle of a JSON
  fragment and the connection drops), ``"malformed"`` (one event's data is not
  JSON; the stream then goes on to its end), ``"content_type"`` (a 200 with an
  HTML page), ``"error_event"`` (Anthropic: an ``overloaded_error`` event
  mid-stream; OpenAI: an ``error`` chunk), ``"endless"`` (a stream that
  ignores ``max_tokens`` and sends text deltas of ``chunk_size`` characters
  until the client goes away), ``"throttling"`` (Bedrock: a 200 whose stream is one
  ``throttlingException`` message, as Bedrock throttles a stream; elsewhere a 429).

Prompt caching (``"cache": true``): on the Anthropic protocol, the prefix up
to each ``cache_control`` breakpoint (tools, then system, then messages; the
breakpoint marks themselves are not part of the content) is remembered; a
later request whose prefix, up to any block boundary before its last
breakpoint, was remembered reports it as ``cache_read_input_tokens``, and the
rest up to its last breakpoint as ``cache_creation_input_tokens``. On the OpenAI protocol, the longest
previously seen prefix of whole messages is reported as
``usage.prompt_tokens_details.cached_tokens``. Token counts are characters
// 4 of the canonical JSON of each part, the same figure ``count_tokens``
returns, so exact counting can be checked against usage.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random  # noqa: TID251 - a test server: seeded latencies
import socket  # noqa: TID251 - a test server
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeProvider", "load_script", "main"]

_API_VERSION = "2026-10-21"
"""The Messages API's version, which the official SDK's Bedrock and Vertex clients put in the body (anthropic 2.17)."""

FAULTS = ("429", "500", "529", "401", "quota", "stall", "cut", "malformed", "content_type", "error_event", "context",
          "endless", "failed", "throttling")


class FakeScriptError(ValueError):
    """The script file is not what the module docstring describes."""


def load_script(obj: Any, where: str = "script") -> dict[str, Any]:
    """A script as a dict, checked. ``obj`` is the parsed JSON (a list or an object)."""
    if isinstance(obj, list):
        obj = {"replies": obj}
    if not isinstance(obj, dict) or not isinstance(obj.get("replies"), list):
        raise FakeScriptError(f"{where}: must be a list of replies or an object with a 'replies' list")
    for i, r in enumerate(obj["replies"]):
        if not isinstance(r, dict):
            raise FakeScriptError(f"{where}: replies[{i}] must be an object")
        f = r.get("fault")
        if f is not None and str(f) not in FAULTS:
            raise FakeScriptError(f"{where}: replies[{i}].fault {f!r} is not one of {', '.join(FAULTS)}")
        for tc in r.get("tool_calls", []):
            if not isinstance(tc, dict) or "name" not in tc:
                raise FakeScriptError(f"{where}: replies[{i}].tool_calls entries need a 'name'")
    if obj.get("when_done", "error") not in ("error", "repeat", "cycle"):
        raise FakeScriptError(f"{where}: when_done must be error, repeat or cycle")
    return obj


def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _tokens(chars: int) -> int:
    return chars // 4


class _State:
    def __init__(self, script: dict[str, Any]):
        self.script = script
        self.replies: list[dict[str, Any]] = script["replies"]
        self.index = 0
        self.lock = threading.Lock()
        self.rng = random.Random(script.get("seed", 0))
        self.requests: list[dict[str, Any]] = []
        self.prefixes: set[str] = set()
        self.cache = bool(script.get("cache", True))
        self.issued: set[str] = set()
        """The reasoning items' encrypted contents issued on the Responses protocol (``fake_responses``)."""

    def next_reply(self) -> dict[str, Any] | None:
        with self.lock:
            n = len(self.replies)
            if self.index < n:
                r = self.replies[self.index]
            elif n and self.script.get("when_done") == "repeat":
                r = self.replies[-1]
            elif n and self.script.get("when_done") == "cycle":
                r = self.replies[self.index % n]
            else:
                r = None
            self.index += 1
            return r

    def latency(self, r: dict[str, Any]) -> float:
        lat = r.get("latency", 0)
        if isinstance(lat, list):
            with self.lock:
                return self.rng.uniform(float(lat[0]), float(lat[1]))
        return float(lat)

    # --- prompt caching ------------------------------------------------------

    def anthropic_usage(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(input, cache_read, cache_write) tokens for an Anthropic request."""
        units: list[tuple[str, bool]] = []

        def unit(x: Any, role: str | None = None) -> None:
            # a breakpoint marks where a prefix ends; it is not part of the prefix's content
            if isinstance(x, dict):
                bp = "cache_control" in x
                x = {k: v for k, v in x.items() if k != "cache_control"}
                if role is not None:
                    x = {"role": role, **x}
                units.append((_canon(x), bp))
            else:
                units.append((_canon({"role": role, "text": x}), False))

        for t in body.get("tools") or []:
            unit(t)
        system = body.get("system")
        for b in [system] if isinstance(system, str) else system or []:
            unit(b, "system")
        for m in body.get("messages") or []:
            c = m.get("content")
            for b in [c] if isinstance(c, str) else c or []:
                unit(b, m.get("role"))
        total = _tokens(sum(len(u) for u, _ in units))
        if not self.cache:
            return total, 0, 0
        h = hashlib.sha256()
        chars = 0
        bounds: list[tuple[str, int, bool]] = []
        for u, bp in units:
            h.update(u.encode())
            chars += len(u)
            bounds.append((h.copy().hexdigest(), _tokens(chars), bp))
        last = max((i for i, b in enumerate(bounds) if b[2]), default=-1)
        read = write = 0
        with self.lock:
            # like the API, a breakpoint finds an earlier cached prefix at any block boundary before it
            for digest, toks, _ in reversed(bounds[: last + 1]):
                if digest in self.prefixes:
                    read = toks
                    break
            if last >= 0 and bounds[last][0] not in self.prefixes:
                write = bounds[last][1] - read
            for digest, _, bp in bounds:
                if bp:
                    self.prefixes.add(digest)
        return max(0, total - read - write), read, write

    def openai_cached(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) for an OpenAI request."""
        units = [_canon(body.get("tools") or [])] + [_canon(m) for m in body.get("messages") or []]
        total = _tokens(sum(len(u) for u in units))
        if not self.cache:
            return total, 0
        h = hashlib.sha256()
        chars = 0
        cached = 0
        seen = []
        for u in units:
            h.update(u.encode())
            chars += len(u)
            seen.append((h.copy().hexdigest(), _tokens(chars)))
        with self.lock:
            for digest, toks in seen[:-1]:
                if digest in self.prefixes:
                    cached = toks
            for digest, _ in seen:
                self.prefixes.add(digest)
        return total, cached


def _split(s: str, n: int) -> list[str]:
    n = max(1, n)
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return

    # --- plumbing ----------------------------------------------------------

    def _path(self) -> str:
        p = self.path.split("?", 1)[0]
        while p.startswith("/v1/"):
            p = p[3:]
        return p

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, content_type: str = "text/event-stream; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the connection without ending the chunked body: the client sees a cut."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _key(self) -> str | None:
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key")

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self._path() == "/requests":
            with self.server.state.lock:
                self._send_json(200, list(self.server.state.requests))
            return
        if self._path() in ("/models", "/health"):
            self._send_json(200, {"object": "list", "data": []})
            return
        self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        path = self._path()
        if path == "/token":  # google-auth's refresh: the form it posts holds a refresh token, never kept
            with self.server.state.lock:
                self.server.state.requests.append({"path": path, "protocol": "oauth"})
            self._send_json(200, {"access_token": self.server.state.script.get("google_token", "ya29.fake-token"),
                                  "expires_in": 3600, "token_type": "Bearer"})
            return
        cloud = _cloud_route(path)
        proto = "openai" if path == "/chat/completions" else "anthropic" if path.startswith("/messages") else None
        proto = "responses" if path == "/responses" else proto
        if cloud is not None:
            proto = cloud[0]
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, self._error_body(proto or "openai", "invalid_request_error", "body is not JSON"))
            return
        st = self.server.state
        want = st.script.get("require_key")
        key = self._key()
        rec = {
            "path": path,
            "protocol": proto,
            "body": body,
            "has_key": bool(key),
            "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() not in ("authorization", "x-api-key")},
            # where a credential came, never its value: the authorization header's scheme, x-api-key's presence
            "auth": {k.lower(): (v.split(" ", 1)[0].lower() if k.lower() == "authorization" else "present")
                     for k, v in self.headers.items() if k.lower() in ("authorization", "x-api-key")},
        }
        refused = self._cloud_check(cloud, rec, raw) if cloud is not None else None
        with st.lock:
            st.requests.append(rec)
        if refused is not None:
            status, message, kind = refused
            self._send_json(status, self._error_body(str(proto), kind, message), {"x-amzn-errortype": kind} if proto == "bedrock" else {})
            return
        if proto is None:
            self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {self.path}"}})
            return
        if want is not None and key != want:
            self._send_json(401, self._error_body(proto, "authentication_error", "invalid x-api-key" if proto == "anthropic" else "Incorrect API key provided"))
            return
        if path == "/messages/count_tokens":
            inp, read, write = _State({"replies": [], "cache": False}).anthropic_usage(body)
            self._send_json(200, {"input_tokens": inp + read + write})
            return
        r = st.next_reply()
        if r is None:
            self._send_json(500, self._error_body(proto, "api_error", f"the fake provider's script has no reply for request {st.index}"))
            return
        self.server.stopping.wait(st.latency(r))
        fault = r.get("fault")
        if fault is not None and self._simple_fault(proto, str(fault), r):
            return
        if proto == "openai":
            self._openai(body, r)
        elif proto == "responses":
            self._responses(body, r)
        elif cloud is not None:
            self._cloud(cloud, body, r)
        else:
            self._anthropic(body, r)

    def _cloud_check(self, cloud: tuple[str, str, bool], rec: dict[str, Any], raw: bytes) -> tuple[int, str, str] | None:
        """Check a Bedrock or Vertex request as the platform would: its body's version, no model in it, the
        signature (Bedrock, when the script gives the secret). Returns (status, message, error type) to refuse it."""
        from . import awsframes

        platform, model, _ = cloud
        body = rec["body"]
        rec["model"] = model
        want = "bedrock-2023-05-31" if platform == "bedrock" else "vertex-2023-10-16"
        # the platform's documented version, or the Messages API's dated one (what the official SDK's clients send)
        if not isinstance(body, dict) or body.get("anthropic_version") not in (want, _API_VERSION):
            return 400, f"anthropic_version must be {want}", "ValidationException" if platform == "bedrock" else "invalid_request_error"
        if "model" in body:
            return 400, "model is given in the path, not the body", "ValidationException" if platform == "bedrock" else "invalid_request_error"
        auth = self.headers.get("authorization", "")
        if platform != "bedrock":
            rec["auth"] = {"scheme": auth.split(" ", 1)[0] if auth else None}
            return None
        parsed = awsframes.parse_authorization(auth)
        rec["auth"] = {"scheme": auth.split(" ", 1)[0] if auth else None, **({k: v for k, v in parsed.items() if k != "signature"} if parsed else {})}
        aws = self.server.state.script.get("aws")
        if isinstance(aws, dict):
            host = self.headers.get("host", "")
            why = awsframes.verify_sigv4("POST", f"http://{host}{self.path}", dict(self.headers.items()), raw,
                                         access_key=str(aws.get("access_key_id")), secret_key=str(aws.get("secret_access_key")),
                                         region=str(aws.get("region")), session_token=aws.get("session_token"))
            rec["auth"]["verified"] = why is None
            if why is not None:
                return 403, f"The request signature we calculated does not match the signature you provided: {why}", "InvalidSignatureException"
        return None

    def _cloud(self, cloud: tuple[str, str, bool], body: dict[str, Any], r: dict[str, Any]) -> None:
        """A Bedrock or Vertex request answered as the Anthropic protocol would be, framed as the platform frames it."""
        from . import awsframes

        platform, model, stream = cloud
        body = {**body, "model": model, "stream": stream}
        if platform != "bedrock":
            self._anthropic(body, r)
            return
        if r.get("fault") == "throttling":
            self._stream(iter([b""]), r, None, lambda ev: awsframes.exception_frame("throttlingException", "Too many tokens, please wait before trying again."),
                         "application/vnd.amazon.eventstream")
            return
        self._anthropic(body, r, _bedrock_frame)

    def _error_body(self, proto: str, kind: str, message: str) -> dict[str, Any]:
        if proto == "bedrock":  # AWS's JSON error: the type goes in the x-amzn-errortype header
            return {"message": message}
        if proto in ("anthropic", "vertex"):
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def _simple_fault(self, proto: str, fault: str, r: dict[str, Any]) -> bool:
        ra = r.get("retry_after")
        hdrs = {"retry-after": str(ra)} if ra is not None else {}
        if proto == "bedrock" and fault in ("429", "throttling"):
            hdrs["x-amzn-errortype"] = "ThrottlingException"
        if fault == "429" or (fault == "throttling" and proto != "bedrock"):
            self._send_json(429, self._error_body(proto, "rate_limit_error", "rate limited: slow down"), hdrs)
        elif fault == "500":
            self._send_json(500, self._error_body(proto, "api_error", "internal server error"))
        elif fault == "529":
            self._send_json(529, self._error_body(proto, "overloaded_error", "Overloaded"), hdrs)
        elif fault == "401":
            self._send_json(401, self._error_body(proto, "authentication_error", "invalid api key"))
        elif fault == "quota":
            if proto != "anthropic":
                self._send_json(429, {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
            else:
                self._send_json(400, self._error_body(proto, "invalid_request_error", "Your credit balance is too low to access the Anthropic API."))
        elif fault == "context":
            self._context_fault(proto, r)
        elif fault == "content_type":
            page = b"<html><body>Welcome to nginx!</body></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        else:
            return False
        return True

    def _context_fault(self, proto: str, r: dict[str, Any]) -> None:
        """A 400 saying the input plus max_tokens passes a window of ``limit`` tokens, in each vendor's words."""
        body = self.server.state.requests[-1]["body"]
        limit = int(r.get("limit", 1000))
        inp = int(r.get("input_tokens", limit // 2))
        if proto != "openai":
            msg = f"input length and `max_tokens` exceed context limit: {inp} + {body.get('max_tokens')} > {limit}, decrease input length or `max_tokens` and try again"
        else:
            out = body.get("max_completion_tokens") or body.get("max_tokens")
            msg = (f"This model's maximum context length is {limit} tokens. However, you requested {inp + int(out or 0)} tokens "
                   f"({inp} in the messages, {out} in the completion). Please reduce the length of the messages or completion.")
        self._send_json(400, self._error_body(proto, "invalid_request_error", msg))

    # --- a reply, in each protocol -------------------------------------------

    def _calls(self, r: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
        with self.server.state.lock:
            n = self.server.state.index
        return [
            {"id": tc.get("id") or f"{prefix}{n:03d}_{i}", "name": tc["name"], "arguments": tc.get("arguments", {})}
            for i, tc in enumerate(r.get("tool_calls") or [])
        ]

    def _out_tokens(self, r: dict[str, Any], calls: list[dict[str, Any]], body: dict[str, Any] | None = None) -> int:
        if r.get("usage") == "max" and body is not None:
            return int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        chars = len(r.get("text", "")) + sum(len(c["name"]) + len(_canon(c["arguments"])) for c in calls)
        return _tokens(chars) + 1

    def _stream(self, events: Iterator[bytes], r: dict[str, Any], cut_at: int | None, frame: Any = None,
                content_type: str | None = None) -> None:
        """Send events (each through ``frame``: Bedrock's binary framing); on a fault, stall, cut or corrupt the
        stream as the reply asks."""
        fault = r.get("fault")
        delay = float(r.get("chunk_delay", 0))
        if frame is not None and content_type is None:
            content_type = "application/vnd.amazon.eventstream"
        self._start_stream(*((content_type,) if content_type else ()))
        try:
            for i, ev in enumerate(events):
                if self.server.stopping.is_set():
                    self._drop()
                    return
                if fault == "stall" and i == 2:
                    self.server.stopping.wait(float(r.get("stall_seconds", 60)))
                    self._drop()
                    return
                if fault == "malformed" and i == 3:
                    ev = ev.replace(b"data: {", b"data: {{oops ", 1)
                if frame is not None:
                    ev = frame(ev)
                if fault == "cut" and cut_at is not None and i == cut_at:
                    # the event's data stops inside its JSON: half of it, then the connection drops
                    self._chunk(ev[: max(1, len(ev) // 2)])
                    self._drop()
                    return
                self._chunk(ev)
                if delay:
                    self.server.stopping.wait(delay)
            self._end_stream()
        except OSError:  # the client went away (or the server is stopping)
            self.close_connection = True

    def _openai(self, body: dict[str, Any], r: dict[str, Any]) -> None:
        st = self.server.state
        model = r.get("model") or body.get("model") or "fake"
        calls = self._calls(r, "call_")
        text = r.get("text", "")
        stop = r.get("stop_reason") or ("tool_use" if calls else "end_turn")
        finish = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}.get(stop, stop)
        prompt, cached = st.openai_cached(body)
        given = r.get("usage")
        u: dict[str, Any] = given if isinstance(given, dict) else {}
        pt = u.get("input_tokens", prompt)
        ct = u.get("output_tokens", self._out_tokens(r, calls, body))
        if isinstance(pt, int) and isinstance(cached, int):
            cached = min(cached, max(0, pt))  # the cached tokens are part of the prompt's
        usage: dict[str, Any] = {
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "total_tokens": pt + ct if isinstance(pt, int) and isinstance(ct, int) else 0,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        cid = f"chatcmpl-fake{st.index:04d}"
        created = 1_700_000_000
        tool_calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _canon(c["arguments"])}} for c in calls
        ]
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else ""), "refusal": None}
            if tool_calls:
                msg["tool_calls"] = tool_calls
            self._send_json(200, {
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
                **({} if r.get("usage") == "none" else {"usage": usage}),
            })
            return
        size = int(r.get("chunk_size", 8))
        if stop == "max_tokens" and tool_calls:
            # cut at max tokens inside the last call's arguments, as a real model would be
            f = tool_calls[-1]["function"]
            f["arguments"] = f["arguments"][: max(1, len(f["arguments"]) // 2)]
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], fin: str | None = None, use: Any = None, choices: bool = True) -> bytes:
            obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                   "choices": [{"index": 0, "delta": delta, "finish_reason": fin, "logprobs": None}] if choices else []}
            if use is not None:
                obj["usage"] = use
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        events: list[bytes] = [chunk({"role": "assistant", "content": ""})]
        for piece in _split(text, size) if text else []:
            events.append(chunk({"content": piece}))
        cut_at = None
        for i, tc in enumerate(tool_calls):
            events.append(chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": ""}}]}))
            for piece in _split(tc["function"]["arguments"], size):
                if cut_at is None:
                    cut_at = len(events)
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        if r.get("fault") == "endless":  # ignores max_tokens: text until the client goes away
            self._stream(itertools.chain(events[:1], itertools.repeat(chunk({"content": "x" * size}))), r, None)
            return
        if r.get("fault") == "error_event":
            events.append(b"data: " + json.dumps({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}).encode() + b"\n\n")
            self._stream(iter(events), r, None)
            return
        events.append(chunk({}, finish))
        if include_usage and r.get("usage") != "none":
            events.append(chunk({}, use=usage, choices=False))
        events.append(b"data: [DONE]\n\n")
        self._stream(iter(events), r, cut_at if cut_at is not None else max(1, len(events) // 2))

    def _responses(self, body: dict[str, Any], r: dict[str, Any]) -> None:
        """OpenAI's Responses API (``fake_responses``)."""
        from .fake_responses import ResponsesReply, refusal

        st = self.server.state
        with st.lock:
            why = refusal(body, st.issued)
        if why is not None:
            self._send_json(400, self._error_body("responses", "invalid_request_error", why))
            return
        units = {"tools": body.get("tools") or [], "messages": [{"instructions": body.get("instructions")}, *(body.get("input") or [])]}
        prompt, cached = st.openai_cached(units)

        def issue(enc: str) -> None:
            with st.lock:
                st.issued.add(enc)

        rep = ResponsesReply(body, r, st.index, self._calls(r, "call_"), prompt, cached, issue, _covers)
        if not body.get("stream"):
            self._send_json(200, rep.final())
            return
        if r.get("fault") == "endless":  # ignores max_output_tokens: text until the client goes away
            head, delta = rep.endless()
            self._stream(itertools.chain(head, iter(delta, None)), r, None)
            return
        events = rep.events()
        self._stream(iter(events), r, rep.cut_at if rep.cut_at is not None else max(1, len(events) // 2))

    def _anthropic(self, body: dict[str, Any], r: dict[str, Any], frame: Any = None) -> None:
        st = self.server.state
        model = r.get("model") or body.get("model") or "fake"
        calls = self._calls(r, "toolu_")
        text = r.get("text", "")
        stop = r.get("stop_reason") or ("tool_use" if calls else "end_turn")
        inp, read, write = st.anthropic_usage(body)
        given = r.get("usage")
        u = given if isinstance(given, dict) else {}
        inp = u.get("input_tokens", inp)
        out = u.get("output_tokens", self._out_tokens(r, calls, body))
        write = u.get("cache_creation_input_tokens", write)
        mid = f"msg_fake{st.index:04d}"
        blocks: list[dict[str, Any]] = []
        if r.get("thinking"):
            th = str(r["thinking"])
            blocks.append({"type": "thinking", "thinking": th, "signature": hashlib.sha256(th.encode()).hexdigest()})
        searched = _web_search_blocks(body, r, st.index)
        if isinstance(searched, str):
            return self._send_json(400, self._error_body("anthropic", "invalid_request_error", searched))
        blocks += searched
        if text or not calls:
            blocks.append({"type": "text", "text": text})
        for c in calls:
            blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]})
        usage: dict[str, Any] = {"input_tokens": inp, "cache_creation_input_tokens": write, "cache_read_input_tokens": read, "output_tokens": out}
        if searched:  # the searches made (a failed one is not billed), or the count the script gives (a lying server)
            usage["server_tool_use"] = {"web_search_requests": u.get("web_search_requests", _searches(searched))}
        if not body.get("stream"):
            self._send_json(200, {"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
                                  "stop_reason": stop, "stop_sequence": None, "usage": usage})
            return
        size = int(r.get("chunk_size", 8))

        def ev(name: str, obj: dict[str, Any]) -> bytes:
            return b"event: " + name.encode() + b"\ndata: " + json.dumps(obj).encode() + b"\n\n"

        events = [
            ev("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                                 "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}}),
            b"event: ping\ndata: {\"type\": \"ping\"}\n\n",
        ]
        if r.get("fault") == "endless":  # ignores max_tokens: text until the client goes away
            events.append(ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            delta = ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x" * size}})
            self._stream(itertools.chain(events, itertools.repeat(delta)), r, None, frame)
            return
        cut_at = None
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
                for piece in _split(b["text"], size) if b["text"] else []:
                    events.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}}))
            elif b["type"] == "thinking":
                events.append(ev("content_block_start", {"type": "content_block_start", "index": i,
                                                         "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
                for piece in _split(b["thinking"], size):
                    events.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": piece}}))
                events.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": b["signature"]}}))
            elif b["type"] in ("web_search_tool_result", "server_tool_use"):
                events += _server_block_events(ev, i, b)
            else:
                events.append(ev("content_block_start", {"type": "content_block_start", "index": i,
                                                         "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
                js = _canon(b["input"])
                if stop == "max_tokens" and i == len(blocks) - 1:
                    js = js[: max(1, len(js) // 2)]  # cut inside the last call's input
                for piece in _split(js, size):
                    if cut_at is None:
                        cut_at = len(events)
                    events.append(ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}))
            events.append(ev("content_block_stop", {"type": "content_block_stop", "index": i}))
            if r.get("fault") == "error_event" and i == 0:
                events.append(ev("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
                self._stream(iter(events), r, None, frame)
                return
        events.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                           "usage": {"output_tokens": out}}))
        events.append(ev("message_stop", {"type": "message_stop"}))
        self._stream(iter(events), r, cut_at if cut_at is not None else max(1, len(events) // 2), frame)


def _cloud_route(path: str) -> tuple[str, str, bool] | None:
    """(platform, model, streamed) for a Bedrock or Vertex path, else None."""
    from urllib.parse import unquote

    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "model" and parts[3] in ("invoke", "invoke-with-response-stream"):
        return "bedrock", unquote(parts[2]), parts[3] != "invoke"
    if len(parts) == 9 and parts[1] == "projects" and parts[3] == "locations" and parts[5:7] == ["publishers", "anthropic"] and parts[7] == "models":
        model, _, verb = unquote(parts[8]).rpartition(":")
        if verb in ("rawPredict", "streamRawPredict"):
            return "vertex", model, verb == "streamRawPredict"
    return None


def _bedrock_frame(ev: bytes) -> bytes:
    """One SSE event of the Anthropic stream as Bedrock sends it: its data in a ``chunk`` frame."""
    from .awsframes import chunk_frame

    data = ev.split(b"data: ", 1)[1] if b"data: " in ev else ev
    return chunk_frame(data.rstrip(b"\n"))


def _covers(domain: str, url: str) -> bool:
    """A domain filter entry covers the URL's host (subdomains included) and, when it has one, its path prefix."""
    from urllib.parse import urlsplit

    d_host, _, d_path = domain.lower().partition("/")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return (host == d_host or host.endswith("." + d_host)) and parts.path.lstrip("/").startswith(d_path)


def _server_block_events(ev: Any, i: int, b: dict[str, Any]) -> list[bytes]:
    """A server tool's blocks streamed: ``server_tool_use`` with its input as one delta, its result whole at its start."""
    if b["type"] == "web_search_tool_result":
        return [ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": b})]
    return [ev("content_block_start", {"type": "content_block_start", "index": i,
                                       "content_block": {"type": "server_tool_use", "id": b["id"], "name": b["name"], "input": {}}}),
            ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                       "delta": {"type": "input_json_delta", "partial_json": _canon(b["input"])}})]


def _searches(blocks: list[dict[str, Any]]) -> int:
    return sum(isinstance(b.get("content"), list) for b in blocks)


def _web_search_blocks(body: dict[str, Any], r: dict[str, Any], n: int) -> list[dict[str, Any]] | str:
    """The ``server_tool_use`` and ``web_search_tool_result`` blocks of a reply's scripted searches (or a 400's message)."""
    tool = next((t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "web_search_20250305"), None)
    if tool is None or not r.get("web_search"):
        return []
    allowed, blocked = tool.get("allowed_domains"), tool.get("blocked_domains")
    if allowed and blocked:
        return "web_search: use either allowed_domains or blocked_domains, not both"
    limit = tool.get("max_uses")
    out: list[dict[str, Any]] = []
    for i, srch in enumerate(r["web_search"]):
        sid = f"srvtoolu_fake{n:03d}_{i}"
        out.append({"type": "server_tool_use", "id": sid, "name": "web_search", "input": {"query": srch.get("query", "")}})
        content: Any
        if srch.get("error") or (isinstance(limit, int) and i >= limit):
            content = {"type": "web_search_tool_result_error", "error_code": srch.get("error") or "max_uses_exceeded"}
        else:
            content = [
                {"type": "web_search_result", "url": x["url"], "title": x.get("title", ""),
                 "encrypted_content": hashlib.sha256(x["url"].encode()).hexdigest(), "page_age": x.get("page_age")}
                for x in srch.get("results", [])
                if (not allowed or any(_covers(d, x["url"]) for d in allowed)) and not any(_covers(d, x["url"]) for d in blocked or [])
            ]
        out.append({"type": "web_search_tool_result", "tool_use_id": sid, "content": content})
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], state: _State):
        super().__init__(addr, _Handler)
        self.state = state
        self.stopping = threading.Event()
        """Set by ``close``: stalls and latencies end at once."""
        self.conns: set[Any] = set()
        self.workers: list[threading.Thread] = []
        self.conn_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address), daemon=True)
        with self.conn_lock:
            self.conns.add(request)
            self.workers = [w for w in self.workers if w.is_alive()] + [t]
        t.start()

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.conns.discard(request)
        super().shutdown_request(request)

    def stop(self) -> None:
        """Stop serving, drop every open connection and wait for the handlers to end."""
        self.stopping.set()
        self.shutdown()
        with self.conn_lock:
            conns, workers = list(self.conns), list(self.workers)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for w in workers:
            w.join(5)
        self.server_close()


class FakeProvider:
    """The server in this process, on a thread: ``with FakeProvider(script) as fp: fp.url``."""

    def __init__(self, script: Any, *, host: str = "127.0.0.1", port: int = 0):
        self.state = _State(load_script(script))
        self.server = _Server((host, port), self.state)
        self.thread = threading.Thread(target=self.server.serve_forever, name="fakeprovider", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return list(self.state.requests)

    def start(self) -> FakeProvider:
        self.thread.start()
        return self

    def close(self) -> None:
        self.server.stop()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agentloop.testing.fakeprovider", description="A local OpenAI- and Anthropic-compatible model server that answers from a script.")
    ap.add_argument("--script", required=True, help="a JSON file of replies (see the module docstring)")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args(argv)
    try:
        with open(a.script, encoding="utf-8") as f:
            obj = json.load(f)
        script = load_script(obj, a.script)
    except (OSError, json.JSONDecodeError, FakeScriptError) as exc:
        print(f"fakeprovider: {a.script}: {exc}" if not isinstance(exc, FakeScriptError) else f"fakeprovider: {exc}", file=sys.stderr)
        return 2
    fp = FakeProvider(script, host=a.host, port=a.port)
    print(fp.url, flush=True)
    try:
        fp.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fp.server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
