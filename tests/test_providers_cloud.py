"""Claude on Amazon Bedrock and Google Vertex AI, configured with Claude Code's variables, against the fake provider.

Claude Code's documented behaviour is the reference:

- code.claude.com/docs/en/amazon-bedrock: ``CLAUDE_CODE_USE_BEDROCK=1``; "Claude Code uses the default AWS SDK
  credential chain" (``aws configure``, ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
  ``AWS_PROFILE`` after ``aws sso login``, Bedrock API keys in ``AWS_BEARER_TOKEN_BEDROCK``); "``AWS_REGION`` is a
  required environment variable"; the default primary model ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``.
- code.claude.com/docs/en/google-vertex-ai: ``CLAUDE_CODE_USE_VERTEX=1``, ``CLOUD_ML_REGION`` (``global`` or a
  region), ``ANTHROPIC_VERTEX_PROJECT_ID``, "Claude Code uses standard Google Cloud authentication".
- code.claude.com/docs/en/llm-gateway: ``ANTHROPIC_BEDROCK_BASE_URL`` with ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1``,
  ``ANTHROPIC_VERTEX_BASE_URL`` with ``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``: a gateway that adds its own credentials.
- code.claude.com/docs/en/model-config: on Bedrock and Vertex the ``sonnet`` alias resolves to Sonnet 4.5.

The wire: Bedrock's ``InvokeModelWithResponseStream`` answers in AWS event-stream frames whose ``chunk`` events
carry base64 Anthropic events (read here by botocore's own ``EventStreamBuffer``); requests are SigV4-signed and
the fake recomputes the signature from the test's secret. Vertex's ``streamRawPredict`` answers Anthropic's SSE.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentloop.events import ModelRequest
from agentloop.prices import default_prices
from agentloop.providers import ProviderConfigError, ProviderError, open_model
from agentloop.testing.awsframes import (
    chunk_frame,
    encode_message,
    exception_frame,
    parse_authorization,
    verify_sigv4,
)
from agentloop.testing.fakeprovider import FakeProvider

AK, SK = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
BEDROCK_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_ID = "claude-sonnet-4-5@20250929"
AWS = {"access_key_id": AK, "secret_access_key": SK, "region": "us-east-1"}


def _req(text: str = "hi") -> ModelRequest:
    return ModelRequest([{"role": "user", "content": text}], [], 200)


def _bedrock_env(url: str, **more: str) -> dict[str, str]:
    return {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "ANTHROPIC_BEDROCK_BASE_URL": url, **more}


def _quiet(**kw: Any) -> dict[str, Any]:
    return {"sleep": lambda s: None, "rand": lambda: 0.0, **kw}


# --- the event-stream framing ----------------------------------------------------------


def test_frames_written_by_the_fake_are_read_back_by_botocores_event_stream_buffer() -> None:
    """The writer follows AWS's documented frame (prelude, CRC, headers, payload, CRC): botocore reads it whole,
    headers and payload, and refuses it when one byte of the payload changes."""
    from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

    event = json.dumps({"type": "message_stop"}).encode()
    frames = chunk_frame(event) + exception_frame("throttlingException", "slow down")
    buf = EventStreamBuffer()
    buf.add_data(frames[:7])  # cut anywhere: nothing until a frame is whole
    assert list(buf) == []
    buf.add_data(frames[7:])
    first, second = list(buf)
    assert first.headers[":event-type"] == "chunk" and first.headers[":message-type"] == "event"
    assert base64.b64decode(json.loads(first.payload)["bytes"]) == event
    assert second.headers[":message-type"] == "exception" and second.headers[":exception-type"] == "throttlingException"
    assert json.loads(second.payload) == {"message": "slow down"}
    bad = bytearray(encode_message({":event-type": "chunk"}, b'{"bytes": ""}'))
    bad[-6] ^= 1
    broken = EventStreamBuffer()
    broken.add_data(bytes(bad))
    with pytest.raises(ChecksumMismatch):
        list(broken)


# --- Bedrock ---------------------------------------------------------------------------


def test_a_bedrock_call_is_signed_with_sigv4_that_verifies_and_sends_bedrocks_body() -> None:
    """Static keys from the environment, as the AWS credential chain reads them: the request goes to
    ``/model/{id}/invoke-with-response-stream``, carries a SigV4 ``Authorization`` for service ``bedrock`` in
    ``AWS_REGION`` whose signature the fake recomputes from the secret, and its body is the Messages body with
    ``anthropic_version: bedrock-2023-05-31`` and no ``model`` or ``stream``."""
    with FakeProvider({"replies": [{"text": "signed and sealed"}], "aws": AWS}) as fp:
        m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env(fp.url), **_quiet())
        got = m.complete(_req())
        (rec,) = fp.requests
    assert got.text == "signed and sealed" and got.finish_reason == "end_turn"
    assert rec["path"] == f"/model/{BEDROCK_ID}/invoke-with-response-stream" and rec["protocol"] == "bedrock"
    auth = rec["auth"]
    assert auth["verified"] is True and auth["scheme"] == "AWS4-HMAC-SHA256"
    assert (auth["access_key"], auth["region"], auth["service"]) == (AK, "us-east-1", "bedrock")
    assert {"host", "x-amz-date", "content-type"} <= set(auth["signed_headers"])
    body = rec["body"]
    assert body["anthropic_version"] == "bedrock-2023-05-31" and "model" not in body and "stream" not in body
    assert body["messages"][0]["role"] == "user" and body["max_tokens"] == 200
    assert rec["headers"]["accept"] == "application/vnd.amazon.eventstream"


def test_a_signature_made_with_another_secret_is_refused_and_the_secret_is_never_shown() -> None:
    """The fake's check has teeth: a request signed with the wrong secret gets AWS's 403, which is final (an
    authentication failure is not retried), and no message carries the secret."""
    with FakeProvider({"replies": [{"text": "never"}], "aws": {**AWS, "secret_access_key": "another-secret-key-0000000000"}}) as fp:
        m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env(fp.url), **_quiet())
        with pytest.raises(ProviderError) as e:
            m.complete(_req())
        assert len(fp.requests) == 1 and fp.requests[0]["auth"]["verified"] is False
    assert e.value.kind == "auth" and "403" in str(e.value) and SK not in str(e.value)
    assert "AWS_PROFILE" in str(e.value)  # it says where credentials come from


def test_verify_sigv4_refuses_a_changed_body_and_a_header_of_another_shape() -> None:
    """The verifier itself: a signed request verifies; the same headers over another body, or a Bearer token, do not."""
    from agentloop.providers.bedrock import BedrockAuth

    auth = BedrockAuth("sigv4", "eu-west-3", credentials=_creds())
    url = "http://127.0.0.1:9/model/x/invoke-with-response-stream"
    h = auth.headers(url, {"content-type": "application/json"}, b'{"a":1}')
    assert parse_authorization(h["Authorization"]) is not None
    ok = dict(access_key=AK, secret_key=SK, region="eu-west-3")
    h["host"] = "127.0.0.1:9"
    assert verify_sigv4("POST", url, h, b'{"a":1}', **ok) is None
    assert verify_sigv4("POST", url, h, b'{"a":2}', **ok) is not None
    assert verify_sigv4("POST", url, {**h, "Authorization": "Bearer abc"}, b'{"a":1}', **ok) is not None


def _creds() -> Any:
    from botocore.credentials import Credentials

    return Credentials(AK, SK)


def test_throttling_inside_bedrocks_stream_is_retried_like_a_429() -> None:
    """Bedrock reports throttling after a 200, as an ``exception`` message in the event stream: the call waits and
    tries again, with a notice naming it; a 429 with ``x-amzn-ErrorType: ThrottlingException`` is retried too."""
    notices: list[str] = []
    script = {"replies": [{"fault": "throttling"}, {"fault": "429"}, {"text": "after the wait"}], "aws": AWS}
    with FakeProvider(script) as fp:
        m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env(fp.url), **_quiet(on_notice=notices.append))
        got = m.complete(_req())
    assert got.text == "after the wait" and m.attempts == 3
    assert "throttlingException" in notices[0] and "retrying" in notices[0]
    assert "429" in notices[1]


def test_a_validation_exception_in_the_stream_is_final() -> None:
    """An exception Bedrock does not document as transient (``validationException``) ends the call at once."""
    frames = exception_frame("validationException", "max_tokens too large")
    m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env("http://bedrock.test"), transport=_frames_transport([frames]), **_quiet())
    with pytest.raises(ProviderError) as e:
        m.complete(_req())
    assert e.value.kind == "bad_request" and "validationException" in str(e.value) and m.attempts == 1


def _frames_transport(answers: list[bytes]) -> httpx.MockTransport:
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=queue.pop(0))

    return httpx.MockTransport(handle)


def _anthropic_events(text: str) -> list[bytes]:
    evs: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    return [json.dumps(e).encode() for e in evs]


def test_a_frame_with_a_wrong_crc_is_malformed_and_retried() -> None:
    """botocore's buffer checks each frame's CRCs: a corrupt frame is a malformed stream, retried, never read."""
    good = b"".join(chunk_frame(e) for e in _anthropic_events("whole"))
    bad = bytearray(good)
    bad[40] ^= 0xFF
    notices: list[str] = []
    m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env("http://bedrock.test"), transport=_frames_transport([bytes(bad), good]),
                   **_quiet(on_notice=notices.append))
    got = m.complete(_req())
    assert got.text == "whole" and m.attempts == 2 and "corrupt event-stream frame" in notices[0]


def test_a_bedrock_api_key_is_sent_as_a_bearer_token_and_skip_auth_sends_nothing() -> None:
    """``AWS_BEARER_TOKEN_BEDROCK`` (Claude Code's "Bedrock API keys") goes as ``Authorization: Bearer``;
    ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`` sends no credentials at all, for a gateway that signs."""
    token = "ABSKQmVkcm9ja0FQSUtleS1fake-token-1234"
    with FakeProvider({"replies": [{"text": "by key"}], "require_key": token}) as fp:
        env = {"AWS_REGION": "us-west-2", "AWS_BEARER_TOKEN_BEDROCK": token, "ANTHROPIC_BEDROCK_BASE_URL": fp.url}
        assert open_model(f"bedrock:{BEDROCK_ID}", env=env, **_quiet()).complete(_req()).text == "by key"
    with FakeProvider({"replies": [{"text": "by gateway"}]}) as fp:
        env = {"CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1", "ANTHROPIC_BEDROCK_BASE_URL": fp.url, "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}
        assert open_model(f"bedrock:{BEDROCK_ID}", env=env, **_quiet()).complete(_req()).text == "by gateway"
        (rec,) = fp.requests
    assert rec["auth"] == {"scheme": None} and not rec["has_key"]


def test_bedrock_needs_aws_region_and_credentials_and_says_which() -> None:
    """Without ``AWS_REGION`` (Claude Code: "a required environment variable") or without any credentials, opening
    the model fails in one line naming what to set."""
    with pytest.raises(ProviderConfigError, match="AWS_REGION"):
        open_model(f"bedrock:{BEDROCK_ID}", env={"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK})
    with pytest.raises(ProviderConfigError, match="AWS_PROFILE"):
        open_model(f"bedrock:{BEDROCK_ID}", env={"AWS_REGION": "us-east-1", "AWS_PROFILE": "no-such-profile-here"})
    assert "bedrock-runtime.eu-central-1.amazonaws.com" in open_model(
        f"bedrock:{BEDROCK_ID}", env={"AWS_REGION": "eu-central-1", "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}).url()


def test_without_the_platform_libraries_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore and google-auth are optional extras: without them, one line says which extra to install."""
    for mod in ("botocore", "botocore.session", "google.auth", "google"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ProviderConfigError, match=r"agentloop-runtime\[bedrock\]"):
        open_model(f"bedrock:{BEDROCK_ID}", env={"AWS_REGION": "us-east-1"})
    with pytest.raises(ProviderConfigError, match=r"agentloop-runtime\[vertex\]"):
        open_model(f"vertex:{VERTEX_ID}", env={"CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p"})


# --- Vertex ----------------------------------------------------------------------------


def _service_account(tmp_path: Path, token_uri: str) -> Path:
    """A service-account key file (as the Cloud console downloads one), its token endpoint the fake's: google-auth
    signs a JWT with the key and trades it there for an access token. (gcloud's user credentials always go to
    Google's own endpoint, so they cannot be pointed at the fake.)"""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    p = tmp_path / "sa.json"
    p.write_text(json.dumps({"type": "service_account", "project_id": "key-proj", "private_key_id": "fake-key-id-0123456789",
                             "private_key": pem, "client_email": "agent@key-proj.iam.gserviceaccount.com", "client_id": "1",
                             "token_uri": token_uri}))
    return p


def test_a_vertex_call_goes_to_vertexs_path_with_a_refreshed_google_token(tmp_path: Path) -> None:
    """Google credentials from ``GOOGLE_APPLICATION_CREDENTIALS`` are refreshed by google-auth (at the file's token
    endpoint) once, and sent as a Bearer token on every call; the request goes to
    ``/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict`` with
    ``anthropic_version: vertex-2023-10-16`` and no ``model`` in the body, and is streamed as Anthropic's SSE."""
    with FakeProvider({"replies": [{"text": "from vertex"}, {"text": "again"}], "require_key": "ya29.fake-token"}) as fp:
        env = {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "my-proj", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1",
               "GOOGLE_APPLICATION_CREDENTIALS": str(_service_account(tmp_path, fp.url + "/token"))}
        m = open_model(f"vertex:{VERTEX_ID}", env=env, **_quiet())
        assert m.complete(_req()).text == "from vertex"
        assert m.complete(_req()).text == "again"
        reqs = fp.requests
    assert [r["path"] for r in reqs] == ["/token"] + [f"/projects/my-proj/locations/us-east5/publishers/anthropic/models/{VERTEX_ID}:streamRawPredict"] * 2
    body = reqs[1]["body"]
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body and body["stream"] is True
    assert reqs[1]["auth"] == {"scheme": "Bearer"}


def test_vertex_endpoints_follow_cloud_ml_region_and_skip_auth_sends_no_token() -> None:
    """``CLOUD_ML_REGION=global`` uses the global host, a region its own; ``CLAUDE_CODE_SKIP_VERTEX_AUTH=1`` looks
    for no credentials and sends none."""
    skip = {"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p"}
    assert open_model(f"vertex:{VERTEX_ID}", env={**skip, "CLOUD_ML_REGION": "global"}).url() == (
        f"https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/anthropic/models/{VERTEX_ID}:streamRawPredict")
    assert open_model(f"vertex:{VERTEX_ID}", env={**skip, "CLOUD_ML_REGION": "europe-west1"}).url().startswith(
        "https://europe-west1-aiplatform.googleapis.com/v1/projects/p/locations/europe-west1/")
    with FakeProvider({"replies": [{"text": "through the gateway"}]}) as fp:
        m = open_model(f"vertex:{VERTEX_ID}", env={**skip, "CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1"})
        assert m.complete(_req()).text == "through the gateway"
        assert fp.requests[0]["auth"] == {"scheme": None}


def test_vertex_needs_a_region_and_a_project_and_says_which() -> None:
    with pytest.raises(ProviderConfigError, match="CLOUD_ML_REGION"):
        open_model(f"vertex:{VERTEX_ID}", env={"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p"})
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_VERTEX_PROJECT_ID"):
        open_model(f"vertex:{VERTEX_ID}", env={"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "CLOUD_ML_REGION": "global"})


def test_a_token_that_cannot_be_refreshed_is_an_authentication_error_naming_the_fix(tmp_path: Path) -> None:
    """A refresh the token endpoint refuses is final, says how to log in again, and shows no secret."""
    with FakeProvider({"replies": []}) as fp:
        env = {"CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1",
               "GOOGLE_APPLICATION_CREDENTIALS": str(_service_account(tmp_path, fp.url + "/no-such-token-endpoint"))}
        m = open_model(f"vertex:{VERTEX_ID}", env=env, **_quiet())
        with pytest.raises(ProviderError) as e:
            m.complete(_req())
    assert e.value.kind == "auth" and "refresh" in str(e.value) and "PRIVATE KEY" not in str(e.value)


def _vertex_after_a_refresh(fp: FakeProvider, tmp_path: Path, **kw: Any) -> Any:
    """A Vertex model whose credentials were refreshed once (the fake's token), then revoked by the server:
    the token it holds is still valid by its expiry, and no longer accepted."""
    env = {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "my-proj", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1",
           "GOOGLE_APPLICATION_CREDENTIALS": str(_service_account(tmp_path, fp.url + "/token"))}
    m = open_model(f"vertex:{VERTEX_ID}", env=env, max_attempts=1, **_quiet(**kw))
    assert m.auth.token() == "ya29.fake-token"
    m.auth.credentials.token = "ya29.revoked-token"
    return m


def test_a_vertex_401_refreshes_the_google_credentials_once_and_retries_once(tmp_path: Path) -> None:
    """google-auth's own transports refresh the credentials when a request answers 401
    (``google.auth.transport.DEFAULT_REFRESH_STATUS_CODES``) and send it again: a token the server stopped
    accepting before its expiry is renewed, and the call retried once (outside ``max_attempts``)."""
    with FakeProvider({"replies": [{"text": "after the refresh"}], "require_key": "ya29.fake-token"}) as fp:
        m = _vertex_after_a_refresh(fp, tmp_path)
        assert m.complete(_req()).text == "after the refresh"
        paths = [r["path"].rsplit(":", 1)[-1] for r in fp.requests]
    assert paths == ["/token", "streamRawPredict", "/token", "streamRawPredict"]
    assert "ya29.revoked-token" in m.auth.retired
    err = m.classify(401, {}, b'{"error":{"message":"token ya29.revoked-token was revoked"}}')
    assert "ya29.revoked-token" not in str(err)


def test_a_second_vertex_401_is_final_and_a_gateways_401_is_final_at_once(tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": "never"}], "require_key": "ya29.another-token"}) as fp:
        m = _vertex_after_a_refresh(fp, tmp_path)
        with pytest.raises(ProviderError) as e:
            m.complete(_req())
        paths = [r["path"].rsplit(":", 1)[-1] for r in fp.requests]
    assert e.value.kind == "auth" and e.value.status == 401 and "ya29." not in str(e.value)
    assert paths == ["/token", "streamRawPredict", "/token", "streamRawPredict"]
    with FakeProvider({"replies": [{"text": "never"}], "require_key": "the-gateways-own"}) as fp:
        skip = {"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p", "CLOUD_ML_REGION": "global",
                "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1"}
        with pytest.raises(ProviderError) as e:
            open_model(f"vertex:{VERTEX_ID}", env=skip, max_attempts=1, **_quiet()).complete(_req())
        assert e.value.status == 401 and len(fp.requests) == 1


# --- prices ----------------------------------------------------------------------------


@pytest.mark.parametrize(("platform_id", "anthropic"), [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
    ("global.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
    ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
    ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
    ("claude-3-5-haiku@20241022", "claude-3-5-haiku"),
])
def test_platform_model_ids_cost_what_anthropic_lists(platform_id: str, anthropic: str) -> None:
    """Bedrock's and Vertex's ids of a Claude model are priced at Anthropic's list price for it, not at the table's highest."""
    t = default_prices()
    assert t.key(platform_id) == anthropic and t.resolve(platform_id) == t.resolve(anthropic)


# --- end to end: the terminal agent with Claude Code's variables ---------------------------


def _agent(tmp_path: Path, env_more: dict[str, str], model: str | None) -> subprocess.CompletedProcess[str]:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_", "AWS_", "CLAUDE_CODE_", "GOOGLE_", "CLOUD_ML"))}
    env.update(AGENTLOOP_HOME=str(tmp_path / "home"), NO_COLOR="1", **env_more)
    agentloop = os.path.join(os.path.dirname(sys.executable), "agentloop")
    return subprocess.run([agentloop, "-p", "look around", *(["--model", model] if model else []), "--permission-mode", "bypassPermissions",
                           "--output-format", "json", "--max-budget-usd", "1"],
                          cwd=proj, env=env, capture_output=True, text=True, timeout=180)


def _files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


ROUND_TRIP = [
    {"fault": "throttling"},
    {"tool_calls": [{"name": "Bash", "arguments": {"command": "env; echo listed"}}], "usage": {"input_tokens": 1000, "output_tokens": 200}},
    {"text": "all done", "usage": {"input_tokens": 2000, "output_tokens": 100}},
]


def _cost(price: Any, calls: list[tuple[int, int, int]]) -> float:
    """Dollars for (input, output, cache write) tokens at ``price``, as the settled micro-dollars give them."""
    from agentloop.budget import cost_micros
    from agentloop.events import Usage

    return sum(cost_micros(Usage(i, o, 0, w), price) for i, o, w in calls) / 1_000_000


def test_the_agent_runs_a_tool_round_trip_on_bedrock_with_claude_codes_variables(tmp_path: Path) -> None:
    """``CLAUDE_CODE_USE_BEDROCK=1``, ``AWS_REGION``, static keys and ``ANTHROPIC_BEDROCK_BASE_URL``: ``-p`` rides
    out a throttled stream, runs the model's Bash call, sends its result back and prints the answer, priced at
    Sonnet 4.5's list price. The Bash command's environment holds no AWS credential, and neither the secret nor
    the key id reaches the session's files, the output or the next request."""
    with FakeProvider({"replies": ROUND_TRIP, "aws": AWS, "cache": False}) as fp:
        r = _agent(tmp_path, {"CLAUDE_CODE_USE_BEDROCK": "1", **_bedrock_env(fp.url)}, f"bedrock:{BEDROCK_ID}")
        reqs = fp.requests
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["result"] == "all done"
    assert len(reqs) == 3 and all(q["auth"]["verified"] for q in reqs)
    result = json.dumps(reqs[2]["body"]["messages"])
    assert "listed" in result and SK not in result and AK not in result and "AWS_SECRET_ACCESS_KEY" not in result
    assert SK.encode() not in _files(tmp_path / "home") and SK not in r.stdout + r.stderr
    price = default_prices().resolve("claude-sonnet-4-5")
    assert out["total_cost_usd"] == pytest.approx(_cost(price, [(1000, 200, 0), (2000, 100, 0)]))


def test_the_agent_runs_a_tool_round_trip_on_vertex_with_claude_codes_variables(tmp_path: Path) -> None:
    """``CLAUDE_CODE_USE_VERTEX=1``, ``CLOUD_ML_REGION``, ``ANTHROPIC_VERTEX_PROJECT_ID``, credentials from
    ``GOOGLE_APPLICATION_CREDENTIALS`` and ``ANTHROPIC_VERTEX_BASE_URL``: the same round trip over Vertex's path
    with a refreshed token; neither the key nor the access token reaches the records or the model."""
    with FakeProvider({"replies": [{"fault": "429"}, *ROUND_TRIP[1:]], "require_key": "ya29.fake-token", "cache": False}) as fp:
        env = {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "my-proj",
               "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1", "GOOGLE_APPLICATION_CREDENTIALS": str(_service_account(tmp_path, fp.url + "/token"))}
        r = _agent(tmp_path, env, f"vertex:{VERTEX_ID}")
        reqs = [q for q in fp.requests if q["path"] != "/token"]
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["result"] == "all done" and len(reqs) == 3
    result = json.dumps(reqs[2]["body"]["messages"])
    assert "listed" in result and "GOOGLE_APPLICATION_CREDENTIALS" not in result
    home = _files(tmp_path / "home")
    assert b"ya29.fake-token" not in home and b"PRIVATE KEY" not in home
    price = default_prices().resolve("claude-sonnet-4-5")
    assert out["total_cost_usd"] == pytest.approx(_cost(price, [(1000, 200, 0), (2000, 100, 0)]))


def test_the_crc_of_each_frame_is_what_zlib_says() -> None:
    """The frame's trailing CRC covers every byte before it, the prelude's CRC its first eight (AWS's format)."""
    f = encode_message({":event-type": "chunk"}, b"{}")
    assert int.from_bytes(f[8:12], "big") == zlib.crc32(f[:8])
    assert int.from_bytes(f[-4:], "big") == zlib.crc32(f[:-4])
    assert int.from_bytes(f[:4], "big") == len(f)


def test_aws_credentials_never_reach_a_child_even_when_allowed_by_name() -> None:
    """The AWS credentials that pay for Claude on Bedrock are provider keys: a child never gets them, whatever
    the allowed names say (a secret-named variable would otherwise pass when allowed). Vertex's key file path is
    secret-named: kept from children unless allowed."""
    from agentloop.config.credentials import child_environment

    env = {"PATH": "/bin", "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEFAKE",
           "AWS_BEARER_TOKEN_BEDROCK": "ABSKfake", "AWS_REGION": "us-east-1", "GOOGLE_APPLICATION_CREDENTIALS": "/k/sa.json"}
    allowed = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"]
    assert child_environment(env, allowed=allowed) == {"PATH": "/bin", "AWS_REGION": "us-east-1"}
    assert child_environment(env) == {"PATH": "/bin", "AWS_REGION": "us-east-1"}


@pytest.mark.parametrize("spec", [f"bedrock:{BEDROCK_ID}", f"vertex:{VERTEX_ID}"])
def test_a_platforms_model_gets_the_options_of_the_claude_model_its_id_names(spec: str) -> None:
    """Extended thinking and the output budget follow the Claude model behind the id, as on Anthropic's API."""
    from agentloop.agent.model_options import resolve_options

    assert resolve_options(spec) == resolve_options("anthropic:claude-sonnet-4-5")
    assert resolve_options(spec).thinking_budget


# --- the official SDK as the oracle ----------------------------------------------------------


def test_the_anthropic_sdks_bedrock_client_reads_the_fakes_frames_and_its_signature_verifies() -> None:
    """The Anthropic SDK's own Bedrock client (its SigV4 through boto3, its event-stream decoder through botocore)
    against the fake: its signature verifies with the fake's check, and it reads the fake's frames into the same
    message our adapter assembles. So the fake speaks Bedrock as the SDK does, and our adapter is tested against it."""
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("boto3")
    reply = {"text": "from the frames", "tool_calls": [{"name": "look", "arguments": {"path": "a b/ü.txt"}}]}
    with FakeProvider({"replies": [reply, reply], "aws": AWS}) as fp:
        client = anthropic.AnthropicBedrock(aws_access_key=AK, aws_secret_key=SK, aws_region="us-east-1", base_url=fp.url, max_retries=0)
        with client.messages.stream(model=BEDROCK_ID, max_tokens=200, messages=[{"role": "user", "content": "hi"}]) as s:
            sdk = s.get_final_message()
        ours = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env(fp.url), **_quiet()).complete(_req())
        sdk_req, our_req = fp.requests
    assert sdk_req["auth"]["verified"] is True and our_req["auth"]["verified"] is True
    assert sdk_req["path"] == our_req["path"]  # (the SDK puts the Messages API's dated version in the body, we Bedrock's own)
    assert "model" not in sdk_req["body"] and "stream" not in sdk_req["body"]
    assert sdk.content[0].text == ours.text == "from the frames"
    assert [(b.name, b.input) for b in sdk.content[1:]] == [(c.name, c.arguments) for c in ours.tool_calls]
    assert sdk.stop_reason == ours.finish_reason == "tool_use"


def test_the_anthropic_sdks_vertex_client_is_answered_at_the_same_path_as_our_adapter() -> None:
    """The Anthropic SDK's Vertex client and ours send the same path and version to the fake and read the same reply."""
    anthropic = pytest.importorskip("anthropic")
    with FakeProvider({"replies": [{"text": "vertex sse"}, {"text": "vertex sse"}], "require_key": "ya29.fake-token"}) as fp:
        client = anthropic.AnthropicVertex(region="us-east5", project_id="my-proj", access_token="ya29.fake-token", base_url=fp.url + "/v1",
                                           max_retries=0)
        with client.messages.stream(model=VERTEX_ID, max_tokens=200, messages=[{"role": "user", "content": "hi"}]) as s:
            sdk = s.get_final_message()
        env = {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "my-proj", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1",
               "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"}
        m = open_model(f"vertex:{VERTEX_ID}", env=env, extra_headers={"authorization": "Bearer ya29.fake-token"}, **_quiet())
        ours = m.complete(_req())
        sdk_req, our_req = fp.requests
    assert sdk_req["path"] == our_req["path"] and our_req["body"]["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in sdk_req["body"] and sdk_req["body"]["stream"] is True
    assert sdk.content[0].text == ours.text == "vertex sse"


def test_an_error_body_echoing_the_aws_secret_or_session_token_is_scrubbed() -> None:
    """Whatever a gateway echoes back, the secret key and the session token never reach an error message."""
    token = "IQoJb3JpZ2luX2VjEFAKE-session-token-0123456789"

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"message": f"bad signature for secret {SK} with token {token}"},
                              headers={"x-amzn-errortype": "InvalidSignatureException"})

    env = {**_bedrock_env("http://bedrock.test"), "AWS_SESSION_TOKEN": token}
    m = open_model(f"bedrock:{BEDROCK_ID}", env=env, transport=httpx.MockTransport(handle), **_quiet())
    with pytest.raises(ProviderError) as e:
        m.complete(_req())
    assert e.value.kind == "auth" and SK not in str(e.value) and token not in str(e.value) and "[REDACTED]" in str(e.value)


def test_a_bedrock_replys_raw_record_keeps_the_frames_as_base64() -> None:
    """With raw responses recorded (decision 0021: bytes as base64), Bedrock's binary frames are kept whole."""
    frames = b"".join(chunk_frame(e) for e in _anthropic_events("raw kept"))
    m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env("http://bedrock.test"), transport=_frames_transport([frames]),
                   record_raw=True, **_quiet())
    got = m.complete(_req())
    assert got.raw["vendor"] == "bedrock" and base64.b64decode(got.raw["stream"]) == frames


def test_a_vertex_error_echoing_the_access_token_is_scrubbed() -> None:
    """An error body that echoes the Google access token never shows it (a 403: a 401 is renewed first)."""
    from agentloop.providers.vertex import VertexAuth

    class _Creds:
        valid, token = True, "ya29.a0-echoed-access-token-0123456789"

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"error": {"code": 403, "message": f"token {request.headers['authorization'].split()[1]} lacks a role"}})

    m = open_model(f"vertex:{VERTEX_ID}", env={"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p"},
                   transport=httpx.MockTransport(handle), **_quiet())
    m.auth = VertexAuth(_Creds())
    with pytest.raises(ProviderError) as e:
        m.complete(_req())
    assert "lacks a role" in str(e.value) and _Creds.token not in str(e.value)


def test_the_platform_records_hold_claude_codes_selection_variables_and_default_models() -> None:
    """Claude Code on Bedrock: ``CLAUDE_CODE_USE_BEDROCK=1`` selects it, its primary model is
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` (code.claude.com/docs/en/amazon-bedrock, "Default models"); on
    Bedrock and Vertex ``opus`` is Opus 4.6 and ``sonnet`` Sonnet 4.5 (code.claude.com/docs/en/model-config), in each
    platform's spelling (platform.claude.com/docs/en/about-claude/models/model-ids-and-versions); ``ANTHROPIC_MODEL``
    names the session's model and ``ANTHROPIC_DEFAULT_*_MODEL`` pin an alias. Thinking follows the Claude model."""
    from agentloop.providers import record_for

    bedrock, vertex = record_for("bedrock"), record_for("vertex")
    assert (bedrock.selected_by, vertex.selected_by) == ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
    for r, sonnet, opus in ((bedrock, BEDROCK_ID, "us.anthropic.claude-opus-4-6-v1"), (vertex, VERTEX_ID, "claude-opus-4-6")):
        assert r.default_model == "sonnet" and r.model_env == ("ANTHROPIC_MODEL",)
        s, o = r.alias("sonnet"), r.alias("opus")
        assert s is not None and o is not None
        assert (s.model, s.env, o.model, o.env) == (sonnet, "ANTHROPIC_DEFAULT_SONNET_MODEL", opus, "ANTHROPIC_DEFAULT_OPUS_MODEL")
        assert r.thinks(sonnet) and r.thinks(opus) and not r.thinks("claude-3-5-haiku@20241022")
        assert default_prices().key(sonnet) == "claude-sonnet-4-5" and default_prices().key(opus) == "claude-opus-4-6"
    assert bedrock.thinks("eu.anthropic.claude-haiku-4-5-20251001-v1:0") and bedrock.thinks("anthropic.claude-sonnet-4-6")


def test_claude_codes_variables_select_the_platform_for_aliases_bare_ids_and_the_default_model() -> None:
    """As in Claude Code: with ``CLAUDE_CODE_USE_BEDROCK=1`` (or ``..._VERTEX``) the session's model is the platform's
    default Sonnet, ``ANTHROPIC_MODEL`` names it in the platform's id, the aliases resolve to the platform's ids
    (``ANTHROPIC_DEFAULT_*_MODEL`` pinning them), and the small fast model is its Haiku. A bare Bedrock id or
    inference-profile ARN is Bedrock's whatever is selected; a bare ``claude-...`` is Vertex's only when Vertex is."""
    from agentloop.agent.trust import resolve_model
    from agentloop.providers import cheap_spec, default_spec, env_model

    bed, vtx = {"CLAUDE_CODE_USE_BEDROCK": "1"}, {"CLAUDE_CODE_USE_VERTEX": "1"}
    for env, spec, var in (({**bed, "ANTHROPIC_API_KEY": "k"}, f"bedrock:{BEDROCK_ID}", "CLAUDE_CODE_USE_BEDROCK"),
                           (vtx, f"vertex:{VERTEX_ID}", "CLAUDE_CODE_USE_VERTEX")):
        found = default_spec(env)
        assert found is not None and found[0] == spec and var in found[1]
    assert env_model({**vtx, "ANTHROPIC_MODEL": "claude-opus-4-6"}) == ("vertex:claude-opus-4-6", "ANTHROPIC_MODEL is set")
    assert resolve_model("sonnet", env=bed) == f"bedrock:{BEDROCK_ID}"
    assert resolve_model("opus", env={**vtx, "ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-1@20250805"}) == "vertex:claude-opus-4-1@20250805"
    assert cheap_spec(f"bedrock:{BEDROCK_ID}", {}) == "bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert resolve_model("eu.anthropic.claude-haiku-4-5-20251001-v1:0", env={}) == "bedrock:eu.anthropic.claude-haiku-4-5-20251001-v1:0"
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
    assert resolve_model(arn, env={}) == f"bedrock:{arn}"
    assert resolve_model(VERTEX_ID, env=vtx) == f"vertex:{VERTEX_ID}"
    assert resolve_model("claude-sonnet-4-5", env={}) == "anthropic:claude-sonnet-4-5"


def test_the_agent_on_bedrock_takes_claude_codes_alias_for_its_model(tmp_path: Path) -> None:
    """``--model sonnet`` with ``CLAUDE_CODE_USE_BEDROCK=1`` calls Bedrock's Sonnet 4.5 id (code.claude.com/docs/en/model-config)."""
    with FakeProvider({"replies": [{"text": "aliased"}], "aws": AWS}) as fp:
        r = _agent(tmp_path, {"CLAUDE_CODE_USE_BEDROCK": "1", **_bedrock_env(fp.url)}, "sonnet")
        reqs = fp.requests
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "aliased" and reqs[0]["model"] == BEDROCK_ID and reqs[0]["auth"]["verified"]


def test_the_async_path_reads_bedrocks_frames_and_signs_too() -> None:
    """``acomplete`` (the async drivers') signs and reads the event stream as ``complete`` does."""
    import asyncio

    with FakeProvider({"replies": [{"fault": "throttling"}, {"text": "async frames"}], "aws": AWS}) as fp:
        m = open_model(f"bedrock:{BEDROCK_ID}", env=_bedrock_env(fp.url), asleep=_no_wait, **_quiet())
        got = asyncio.run(m.acomplete(_req()))
        reqs = fp.requests
    assert got.text == "async frames" and len(reqs) == 2 and all(q["auth"]["verified"] for q in reqs)


async def _no_wait(seconds: float) -> None:
    return None


def test_a_base_url_a_project_chose_never_receives_the_users_aws_credentials_or_google_token(tmp_path: Path) -> None:
    """A project's settings setting ``ANTHROPIC_BEDROCK_BASE_URL`` or ``ANTHROPIC_VERTEX_BASE_URL`` to another host would
    have the user's signature, Bedrock API key or Google token sent there: refused in one line, nothing sent. The
    user's own setting, the platform's own host, and a gateway the project's skip-auth leaves credential-free pass."""
    chosen = {"ANTHROPIC_BEDROCK_BASE_URL": ".claude/settings.json"}
    with FakeProvider({"replies": [{"text": "gateway"}]}) as fp:
        for creds in ({"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}, {"AWS_BEARER_TOKEN_BEDROCK": "ABSK-users-own-key"}):
            env = {"AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": fp.url, **creds}
            with pytest.raises(ProviderConfigError, match=r"\.claude/settings\.json sets ANTHROPIC_BEDROCK_BASE_URL=.*yours"):
                open_model(f"bedrock:{BEDROCK_ID}", env=env, chosen_by_project=chosen)
        vertex_env = {"CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "p", "ANTHROPIC_VERTEX_BASE_URL": fp.url + "/v1",
                      "GOOGLE_APPLICATION_CREDENTIALS": str(_service_account(tmp_path, fp.url + "/token"))}
        with pytest.raises(ProviderConfigError, match=r"p\.json sets ANTHROPIC_VERTEX_BASE_URL=.*Google access token.*yours"):
            open_model(f"vertex:{VERTEX_ID}", env=vertex_env, chosen_by_project={"ANTHROPIC_VERTEX_BASE_URL": "p.json"})
        assert fp.requests == []
        skip = {"AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": fp.url, "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
                "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}
        m = open_model(f"bedrock:{BEDROCK_ID}", env=skip, chosen_by_project={**chosen, "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "p.json"}, **_quiet())
        assert m.complete(_req()).text == "gateway" and fp.requests[0]["auth"] == {"scheme": None}
    mine = open_model(f"bedrock:{BEDROCK_ID}", env={"AWS_REGION": "us-east-1", "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9",
                                                   "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK})
    assert mine.url().startswith("http://127.0.0.1:9/")
    aws_host = "https://bedrock-runtime.eu-west-1.amazonaws.com"
    own = open_model(f"bedrock:{BEDROCK_ID}", env={"AWS_REGION": "eu-west-1", "ANTHROPIC_BEDROCK_BASE_URL": aws_host,
                                                  "AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}, chosen_by_project=chosen)
    assert own.url().startswith(aws_host)


def test_the_agent_with_only_claude_codes_bedrock_variables_opens_bedrocks_default_sonnet(tmp_path: Path) -> None:
    """No ``--model``: ``CLAUDE_CODE_USE_BEDROCK=1`` opens Claude Code's default model on Bedrock
    (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, code.claude.com/docs/en/amazon-bedrock), and ``ANTHROPIC_MODEL``
    names another in Bedrock's ids."""
    with FakeProvider({"replies": [{"text": "by default"}, {"text": "by name"}], "aws": AWS}) as fp:
        env = {"CLAUDE_CODE_USE_BEDROCK": "1", **_bedrock_env(fp.url)}
        r = _agent(tmp_path, env, None)
        q = _agent(tmp_path, {**env, "ANTHROPIC_MODEL": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}, None)
        reqs = fp.requests
    assert r.returncode == 0 and q.returncode == 0, r.stderr + q.stderr
    assert json.loads(r.stdout)["result"] == "by default" and json.loads(q.stdout)["result"] == "by name"
    assert [x["model"] for x in reqs] == [BEDROCK_ID, "us.anthropic.claude-haiku-4-5-20251001-v1:0"]
