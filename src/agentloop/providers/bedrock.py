"""Claude on Amazon Bedrock: the Anthropic adapter over Bedrock's transport, signing and framing.

What differs from the Anthropic Messages API, and only that, lives here;
the request body (messages, tools, cache breakpoints, thinking) and the
stream's events are ``anthropic.py``'s.

- The request: ``POST {base}/model/{modelId}/invoke-with-response-stream``,
  its body the Messages body without ``model`` and ``stream``, with
  ``anthropic_version: bedrock-2023-05-31``. The base is
  ``https://bedrock-runtime.{AWS_REGION}.amazonaws.com``, or
  ``ANTHROPIC_BEDROCK_BASE_URL`` (a gateway, a private endpoint).
- Authentication, as Claude Code does it: AWS credentials from botocore's
  default chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
  ``AWS_PROFILE``, SSO, the instance's role...), each request signed with
  SigV4 (service ``bedrock``, region ``AWS_REGION``) by botocore itself;
  or a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``) as a Bearer token; or
  nothing at all with ``CLAUDE_CODE_SKIP_BEDROCK_AUTH`` (a gateway signs).
- The stream: AWS's binary event-stream framing, read by botocore's
  ``EventStreamBuffer`` (prelude and message CRCs checked). Each ``chunk``
  event carries ``{"bytes": base64 of one Anthropic stream event}``; an
  exception arrives as a message of type ``exception`` (``throttlingException``
  is retried like a 429, the server's own failures like a 5xx).

botocore is an optional extra (``pip install 'agentloop-runtime[bedrock]'``):
without it, opening a Bedrock model says so in one line.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from ..events import ModelRequest
from .anthropic import AnthropicAssembler, AnthropicModel
from .base import Assembler, StreamError, Target
from .errors import ProviderConfigError, ProviderError
from .record import ModelAlias, ModelFamily, ProviderRecord, env_flag

__all__ = [
    "BEDROCK_VERSION",
    "RECORD",
    "DEFAULT_MODEL",
    "BedrockAssembler",
    "BedrockAuth",
    "BedrockModel",
    "EventStreamDecoder",
    "bedrock_target",
]

BEDROCK_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Bedrock's Claude models take in the body (the Anthropic SDK's Bedrock client sends it)."""
DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
"""Claude Code's primary model on Bedrock when none is pinned (code.claude.com/docs/en/amazon-bedrock, "Default models")."""
EVENT_STREAM = "application/vnd.amazon.eventstream"
SERVICE = "bedrock"
"""The SigV4 signing name of the bedrock-runtime endpoint."""

_RETRIED = {
    "throttlingException": ("rate_limit", True),
    "serviceUnavailableException": ("overloaded", True),
    "internalServerException": ("server", True),
    "modelStreamErrorException": ("server", True),
    "modelTimeoutException": ("server", True),
}
"""An exception message in the stream: its kind and whether it is retried (any other is final)."""


NO_REGION = "Claude on Bedrock needs AWS_REGION (e.g. export AWS_REGION=us-east-1), or ANTHROPIC_BEDROCK_BASE_URL"


def _botocore() -> Any:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        import botocore.eventstream
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise ProviderConfigError(
            "Claude on Bedrock needs botocore: pip install 'agentloop-runtime[bedrock]' (or pip install botocore)"
        ) from None
    return botocore


class BedrockAuth:
    """How each request is authenticated: SigV4 with credentials from AWS's chain, a Bedrock API key, or none."""

    def __init__(self, mode: str, region: str | None, credentials: Any = None, token: str | None = None):
        self.mode = mode
        """``sigv4``, ``bearer`` or ``none``."""
        self.region = region
        self.credentials = credentials
        """botocore's credentials (refreshable ones refresh themselves when frozen for a request)."""
        self.token = token

    @classmethod
    def from_env(cls, env: Mapping[str, str], region: str | None) -> BedrockAuth:
        """The authentication the environment configures.

        Raises:
            ProviderConfigError: botocore is missing, the profile is unknown, or no credentials were found (one line).
        """
        if env_flag(env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH"):
            return cls("none", region)
        token = env.get("AWS_BEARER_TOKEN_BEDROCK")
        if token:
            return cls("bearer", region, token=token)
        bc = _botocore()
        if not region:
            raise ProviderConfigError("Claude on Bedrock needs AWS_REGION (e.g. export AWS_REGION=us-east-1): requests are signed for a region")
        try:
            session = bc.session.Session(profile=env.get("AWS_PROFILE") or None)
            resolver = bc.credentials.create_credential_resolver(session)
            provider = resolver.get_provider("env")
            provider.environ = dict(env)  # the variables this model was opened with, not only the process's
            creds = resolver.load_credentials()
        except bc.exceptions.BotoCoreError as exc:
            raise ProviderConfigError(f"AWS credentials for Bedrock (AWS_PROFILE={env.get('AWS_PROFILE', '')!r}): {exc}") from None
        if creds is None:
            raise ProviderConfigError(
                "no AWS credentials for Bedrock: export AWS_PROFILE=... (after aws sso login), or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK; CLAUDE_CODE_SKIP_BEDROCK_AUTH=1 for a gateway"
            )
        return cls("sigv4", region, credentials=creds)

    def secrets(self) -> list[str]:
        """What no message may show: the token, the secret key and the session token."""
        if self.mode == "bearer" and self.token:
            return [self.token]
        if self.mode == "sigv4" and self.credentials is not None:
            try:
                c = self.credentials.get_frozen_credentials()
            except Exception:  # a refresh that fails now: the last figures botocore holds
                c = self.credentials
            return [s for s in (getattr(c, "secret_key", None), getattr(c, "token", None)) if isinstance(s, str)]
        return []

    def headers(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """``headers`` with the request's authentication added (SigV4 signs the method, URL, headers and body)."""
        if self.mode == "none":
            return headers
        if self.mode == "bearer":
            return {**headers, "authorization": f"Bearer {self.token}"}
        bc = _botocore()
        req = bc.awsrequest.AWSRequest(method="POST", url=url, data=body, headers=headers)
        bc.auth.SigV4Auth(self.credentials.get_frozen_credentials(), SERVICE, self.region).add_auth(req)
        return {k: str(v) for k, v in req.headers.items()}


def bedrock_target(name: str, env: Mapping[str, str], base_url: str | None = None) -> tuple[Target, BedrockAuth]:
    """The endpoint and authentication for Bedrock model ``name`` from Claude Code's variables.

    Raises:
        ProviderConfigError: no region where one is needed, or no credentials (one line).
    """
    region = env.get("AWS_REGION") or None
    base = base_url or env.get("ANTHROPIC_BEDROCK_BASE_URL") or None
    if base is None:
        if not region:
            raise ProviderConfigError(NO_REGION)
        base = f"https://bedrock-runtime.{region}.amazonaws.com"
    auth = BedrockAuth.from_env(env, region)
    secret = auth.token if auth.mode == "bearer" else None
    return Target("bedrock", name, base.rstrip("/"), secret), auth


class EventStreamDecoder:
    """AWS's event-stream framing read by botocore's ``EventStreamBuffer``: bytes in, ``(event, payload)`` out.

    An event message comes out as its ``:event-type``; an exception as ``exception:TYPE``, an error as
    ``error:CODE``, with its payload. A frame whose CRC or lengths are wrong comes out as ``malformed``
    (the assembler refuses it): the buffer cannot be trusted past it.
    """

    def __init__(self) -> None:
        self._buf = _botocore().eventstream.EventStreamBuffer()
        self._fed = 0
        self._parsed = 0
        self._broken = False

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        if self._broken or not chunk:
            return []
        self._fed += len(chunk)
        self._buf.add_data(chunk)
        out: list[tuple[str, bytes]] = []
        try:
            for msg in self._buf:
                self._parsed += msg.prelude.total_length
                out.append((_event_name(msg.headers), bytes(msg.payload)))
        except Exception as exc:  # botocore's ParserError family: a corrupt frame
            self._broken = True
            out.append(("malformed", f"{type(exc).__name__}: {exc}".encode()))
        return out

    def close(self) -> list[tuple[str, bytes]]:
        return []

    @property
    def pending(self) -> int:
        return self._fed - self._parsed


def _event_name(headers: Mapping[str, Any]) -> str:
    kind = str(headers.get(":message-type", "event"))
    if kind == "exception":
        return "exception:" + str(headers.get(":exception-type", "unknown"))
    if kind == "error":
        return "error:" + str(headers.get(":error-code", "unknown"))
    return str(headers.get(":event-type", ""))


class BedrockAssembler(AnthropicAssembler):
    """Anthropic's stream events, each unwrapped from its event-stream ``chunk``."""

    def feed(self, event: str, data: bytes) -> str | None:
        if event == "chunk":
            inner = base64.b64decode(orjson.loads(data)["bytes"], validate=True)
            return super().feed("", inner)
        if event == "malformed":
            raise StreamError(f"a corrupt event-stream frame: {data.decode('utf-8', 'replace')}", "malformed", True)
        if event.startswith(("exception:", "error:")):
            name = event.partition(":")[2]
            try:
                msg = str(orjson.loads(data).get("message", ""))
            except (orjson.JSONDecodeError, AttributeError):
                msg = data[:300].decode("utf-8", "replace")
            kind, retry = _RETRIED.get(name, ("bad_request", False))
            raise StreamError(f"Bedrock {name}: {msg}", kind, retry)
        self.idle = True
        return None  # another event type: tolerated, as Anthropic's new ones are


class BedrockModel(AnthropicModel):
    """Claude on Bedrock (``bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0``)."""

    vendor = "bedrock"
    stream_content_type = EVENT_STREAM
    counts_tokens = False
    """Bedrock's CountTokens is not used: the loop reserves from the bound, which a count never lowers."""

    def __init__(self, target: Target, *args: Any, auth: BedrockAuth | None = None, **kw: Any):
        super().__init__(target, *args, **kw)
        self.auth = auth or BedrockAuth("none", None)

    def url(self) -> str:
        return f"{self.target.base_url}/model/{quote(self.target.model, safe=':')}/invoke-with-response-stream"

    def headers(self) -> dict[str, str]:
        return {}

    def sign(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        try:
            return self.auth.headers(url, headers, body)
        except ProviderConfigError as exc:
            raise self._err(str(exc), "auth", False) from None
        except Exception as exc:  # botocore's credential refresh failing (an expired SSO session...)
            raise self._err(f"AWS credentials for Bedrock could not be had: {type(exc).__name__}: {exc}", "auth", False) from None

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        b = super().body(request, max_tokens)
        b.pop("model", None)
        b.pop("stream", None)
        return {"anthropic_version": BEDROCK_VERSION, **b}

    def stream_decoder(self) -> EventStreamDecoder:
        return EventStreamDecoder()

    def assembler(self) -> Assembler:
        return BedrockAssembler()

    def raw_text(self, raw: list[bytes]) -> str:
        return base64.b64encode(b"".join(raw)).decode("ascii")  # binary frames: kept as base64 (decision 0021)

    def key_hint(self) -> str:
        return "the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_BEARER_TOKEN_BEDROCK) and AWS_REGION"

    def classify(self, status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
        err = super().classify(status, headers, body)
        kind = headers.get("x-amzn-errortype", "").split(":", 1)[0]
        if kind == "ThrottlingException" and status != 429:  # throttled, whatever the status says
            return self._err(f"{err} ({kind})", "rate_limit", True, status)
        return err

    def secrets(self) -> list[str]:
        return [*super().secrets(), *self.auth.secrets()]  # the AWS secret key and session token, or the API key

    def count_tokens(self, request: ModelRequest) -> int | None:
        return None



def _endpoint(name: str, base_url: str | None, env: Mapping[str, str],
              chosen_by_project: Mapping[str, str]) -> tuple[str, str | None, dict[str, Any]]:
    """``ProviderRecord.endpoint``: the base URL, the Bedrock API key (or None) and the ``auth`` the adapter signs with.

    Raises:
        ProviderConfigError: besides ``bedrock_target``'s, a project's settings chose the base URL of another host
            than AWS's own and the user's credentials would go there (a signature or an API key).
    """
    target, auth = bedrock_target(name, env, base_url)
    var = "ANTHROPIC_BEDROCK_BASE_URL"
    own_creds = auth.mode == "sigv4" or (auth.mode == "bearer" and "AWS_BEARER_TOKEN_BEDROCK" not in chosen_by_project)
    host = urlsplit(target.base_url).hostname or ""
    if base_url is None and var in chosen_by_project and own_creds and not host.endswith(".amazonaws.com"):
        raise ProviderConfigError(
            f"{chosen_by_project[var]} sets {var}={target.base_url}, but the AWS credentials that would be sent there are yours, "
            f"not the project's: agentloop sends them only to AWS. Set {var} in your own environment or settings to send them there")
    return target.base_url, target.api_key, {"auth": auth}


_THINKING = ("claude-opus-4", "claude-sonnet-4", "claude-haiku-4-5", "claude-3-7-sonnet")
_GEOS = ("", "us.", "eu.", "apac.", "jp.", "au.", "ca.", "global.", "us-gov.")
"""Bedrock's cross-region inference profiles prefix the model id with a geography (``us.anthropic.claude-...``)."""

RECORD = ProviderRecord(
    name="bedrock",
    wire="bedrock",
    adapter=BedrockModel,
    endpoint=_endpoint,
    base_env=("ANTHROPIC_BEDROCK_BASE_URL",),
    options=frozenset({"cache"}),
    # Bedrock's own spellings are its alone: a bare ``us.anthropic.claude-...`` id or an inference profile's ARN is Bedrock's
    bare_prefixes=(*(f"{g}anthropic.claude-" for g in _GEOS), "arn:aws:bedrock:", "arn:aws-us-gov:bedrock:"),
    # Claude Code on Bedrock (code.claude.com/docs/en/model-config): opus is Opus 4.6, sonnet Sonnet 4.5; the ids are
    # Bedrock's US cross-region profiles (platform.claude.com/docs/en/about-claude/models/model-ids-and-versions)
    aliases=(
        ModelAlias("opus", "us.anthropic.claude-opus-4-6-v1", "ANTHROPIC_DEFAULT_OPUS_MODEL"),
        ModelAlias("sonnet", DEFAULT_MODEL, "ANTHROPIC_DEFAULT_SONNET_MODEL"),
        ModelAlias("haiku", "us.anthropic.claude-haiku-4-5-20251001-v1:0", "ANTHROPIC_DEFAULT_HAIKU_MODEL"),
    ),
    default_model="sonnet",
    model_env=("ANTHROPIC_MODEL",),
    cheap_model="haiku",
    cheap_model_env=("ANTHROPIC_SMALL_FAST_MODEL",),
    selected_by="CLAUDE_CODE_USE_BEDROCK",
    reasoning="budget",
    families=tuple(ModelFamily(f"{g}anthropic.{p}", thinking=True) for g in _GEOS for p in _THINKING),
    telemetry_name="aws.bedrock",
    no_key=NO_REGION,
)
"""Claude on Amazon Bedrock, chosen by ``CLAUDE_CODE_USE_BEDROCK=1`` as in Claude Code."""
