"""Claude on Google Vertex AI: the Anthropic adapter at Vertex's path, with a Google bearer token.

The request body and the stream (SSE, Anthropic's own events) are
``anthropic.py``'s; what differs lives here:

- The request: ``POST {base}/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict``,
  its body the Messages body without ``model``, with
  ``anthropic_version: vertex-2023-10-16``. The base is
  ``https://{region}-aiplatform.googleapis.com/v1`` (``https://aiplatform.googleapis.com/v1``
  for the ``global`` region), or ``ANTHROPIC_VERTEX_BASE_URL``.
- Claude Code's variables: ``CLOUD_ML_REGION`` (the region, ``global``
  included), ``ANTHROPIC_VERTEX_PROJECT_ID`` (else ``GOOGLE_CLOUD_PROJECT``,
  ``GCLOUD_PROJECT``, or the credentials' own project).
- Authentication: Google's Application Default Credentials
  (``google.auth.default()``: ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
  login, the metadata server), scoped to ``cloud-platform``; the access token
  is refreshed by google-auth when it has expired, and sent as a Bearer
  token. A 401 refreshes it once and retries the call once, as google-auth's
  own transports refresh on a 401 (``DEFAULT_REFRESH_STATUS_CODES``; they allow
  ``DEFAULT_MAX_REFRESH_ATTEMPTS`` = 2, we one: a token just issued and refused
  again is not stale); a second 401 is final. ``CLAUDE_CODE_SKIP_VERTEX_AUTH`` sends none (a gateway adds its own,
  and its 401 is final).

google-auth is an optional extra (``pip install 'agentloop-runtime[vertex]'``):
without it, opening a Vertex model says so in one line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from ..events import ModelRequest
from .anthropic import AnthropicModel
from .base import Target
from .errors import ProviderConfigError
from .record import ModelAlias, ModelFamily, ProviderRecord, env_flag

__all__ = ["DEFAULT_MODEL", "RECORD", "SCOPE", "VERTEX_VERSION", "VertexAuth", "VertexModel", "vertex_base", "vertex_target"]

VERTEX_VERSION = "vertex-2023-10-16"
"""The ``anthropic_version`` Vertex's Claude models take in the body (the Anthropic SDK's Vertex client sends it)."""
DEFAULT_MODEL = "claude-sonnet-4-5@20250929"
"""Claude Code's primary model on Vertex when none is pinned: its aliases resolve to Sonnet 4.5 on Vertex
(code.claude.com/docs/en/model-config, "Model aliases"), in Vertex's spelling of the version."""
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
NO_REGION = "Claude on Vertex AI needs CLOUD_ML_REGION (e.g. export CLOUD_ML_REGION=global, or us-east5)"


def _google_auth() -> Any:
    try:
        import google.auth
        import google.auth.exceptions
        import google.auth.transport
    except ImportError:
        raise ProviderConfigError(
            "Claude on Vertex AI needs google-auth: pip install 'agentloop-runtime[vertex]' (or pip install google-auth)"
        ) from None
    return google.auth


def vertex_base(region: str) -> str:
    """Vertex's endpoint for ``region``: the global one, or the region's own host."""
    if region == "global":
        return "https://aiplatform.googleapis.com/v1"
    return f"https://{region}-aiplatform.googleapis.com/v1"


class VertexAuth:
    """A Google access token for each request (refreshed when expired), or none (``CLAUDE_CODE_SKIP_VERTEX_AUTH``)."""

    def __init__(self, credentials: Any = None, transport: Any = None):
        self.credentials = credentials
        self.transport = transport
        """What the token refresh is sent through (a test's transport; None: the network)."""
        self._lock = threading.Lock()
        self.retired: list[str] = []
        """Tokens held before a forced refresh: still scrubbed from every message."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> tuple[VertexAuth, str | None]:
        """The authentication the environment configures, and the project its credentials name (if any).

        Raises:
            ProviderConfigError: google-auth is missing, or no credentials were found (one line).
        """
        if env_flag(env, "CLAUDE_CODE_SKIP_VERTEX_AUTH"):
            return cls(None), None
        ga = _google_auth()
        try:
            path = env.get("GOOGLE_APPLICATION_CREDENTIALS")
            if path and path != os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
                creds, project = _from_file(path)
            else:  # Application Default Credentials, as google-auth finds them (the same file, gcloud's, the metadata server)
                creds, project = ga.default(scopes=[SCOPE])
        except (ga.exceptions.GoogleAuthError, OSError, ValueError) as exc:
            raise ProviderConfigError(
                f"Google credentials for Vertex AI: {exc}; run gcloud auth application-default login, or set "
                "GOOGLE_APPLICATION_CREDENTIALS; CLAUDE_CODE_SKIP_VERTEX_AUTH=1 for a gateway"
            ) from None
        return cls(creds), project if isinstance(project, str) else None

    def token(self) -> str | None:
        """The current access token, refreshed first when it is missing or expired.

        Raises:
            Exception: google-auth's ``RefreshError``/``TransportError`` (the model turns them into an ``auth`` error).
        """
        c = self.credentials
        if c is None:
            return None
        with self._lock:
            if not c.valid:
                c.refresh(_request(self.transport))
            return str(c.token)

    def refresh(self) -> bool:
        """Refresh the token now, valid or not (after a 401: the server refused it); False with no credentials.

        Raises:
            Exception: google-auth's ``RefreshError``/``TransportError``.
        """
        c = self.credentials
        if c is None:
            return False
        with self._lock:
            old = getattr(c, "token", None)
            if isinstance(old, str) and old and old not in self.retired:
                self.retired.append(old)
            c.refresh(_request(self.transport))
        return True


def _from_file(path: str) -> tuple[Any, str | None]:
    """Credentials from a key file named in the environment this model was opened with, loaded by their type
    (google-auth's loaders for service-account keys and gcloud's user credentials).

    Raises:
        ValueError: the file is not JSON, or of a type this cannot load itself.
    """
    import json

    from google.oauth2 import credentials as user
    from google.oauth2 import service_account

    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    kind = info.get("type") if isinstance(info, dict) else None
    if kind == "service_account":
        return service_account.Credentials.from_service_account_info(info, scopes=[SCOPE]), info.get("project_id")  # type: ignore[no-untyped-call]
    if kind == "authorized_user":
        return user.Credentials.from_authorized_user_info(info, scopes=[SCOPE]), info.get("quota_project_id")  # type: ignore[no-untyped-call]
    raise ValueError(f"{path}: credentials of type {kind!r}; put them in the process's GOOGLE_APPLICATION_CREDENTIALS instead")


def _request(transport: Any) -> Any:
    """A google-auth ``Request`` sent with httpx (google-auth's own transports need requests or urllib3)."""
    import httpx

    ga = _google_auth()

    class _Response(ga.transport.Response):  # type: ignore[misc, name-defined]
        def __init__(self, r: httpx.Response):
            self._r = r

        @property
        def status(self) -> int:
            return self._r.status_code

        @property
        def headers(self) -> Mapping[str, str]:
            return self._r.headers

        @property
        def data(self) -> bytes:
            return self._r.content

    class _Request(ga.transport.Request):  # type: ignore[misc, name-defined]
        def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None, timeout: Any = None,
                     **kwargs: Any) -> Any:
            t = transport if isinstance(transport, httpx.BaseTransport) else None
            try:
                with httpx.Client(transport=t, timeout=timeout or 30.0) as client:
                    r = client.request(method, url, content=body, headers=headers)
                    r.read()
            except httpx.HTTPError as exc:
                raise ga.exceptions.TransportError(f"{type(exc).__name__}: {exc}") from None
            return _Response(r)

    return _Request()


def vertex_target(name: str, env: Mapping[str, str], base_url: str | None = None) -> tuple[Target, VertexAuth]:
    """The endpoint and authentication for Vertex model ``name`` from Claude Code's variables.

    Raises:
        ProviderConfigError: no region, no project or no credentials (one line).
    """
    region = (env.get("CLOUD_ML_REGION") or "").strip()
    if not region:
        raise ProviderConfigError(NO_REGION)
    auth, cred_project = VertexAuth.from_env(env)
    project = env.get("ANTHROPIC_VERTEX_PROJECT_ID") or env.get("GOOGLE_CLOUD_PROJECT") or env.get("GCLOUD_PROJECT") or cred_project
    if not project:
        raise ProviderConfigError("Claude on Vertex AI needs a project: export ANTHROPIC_VERTEX_PROJECT_ID=your-project-id")
    base = (base_url or env.get("ANTHROPIC_VERTEX_BASE_URL") or vertex_base(region)).rstrip("/")
    path = f"/projects/{quote(project, safe='')}/locations/{quote(region, safe='')}"
    return Target("vertex", name, base + path, None), auth


class VertexModel(AnthropicModel):
    """Claude on Vertex AI (``vertex:claude-sonnet-4-5@20250929``). ``target.base_url`` ends at the location."""

    vendor = "vertex"
    counts_tokens = False
    """Vertex's count-tokens is not used: the loop reserves from the bound, which a count never lowers."""

    def __init__(self, target: Target, *args: Any, auth: VertexAuth | None = None, **kw: Any):
        super().__init__(target, *args, **kw)
        self.auth = auth or VertexAuth(None)
        if self.auth.transport is None:
            self.auth.transport = self.transport

    def url(self) -> str:
        return f"{self.target.base_url}/publishers/anthropic/models/{quote(self.target.model, safe='@')}:streamRawPredict"

    def headers(self) -> dict[str, str]:
        try:
            token = self.auth.token()
        except Exception as exc:  # google-auth's RefreshError or TransportError: the credentials cannot be used
            raise self._err(f"Google credentials for Vertex AI could not be refreshed: {type(exc).__name__}: {exc}", "auth", False) from None
        return {} if token is None else {"authorization": f"Bearer {token}"}

    def renew_credentials(self) -> bool:
        """After a 401: the Google token refreshed once (``HTTPModel.renew_credentials``); with
        ``CLAUDE_CODE_SKIP_VERTEX_AUTH`` there is none to refresh, and the 401 is final."""
        try:
            return self.auth.refresh()
        except Exception as exc:  # google-auth's RefreshError or TransportError
            raise self._err(f"Google credentials for Vertex AI could not be refreshed: {type(exc).__name__}: {exc}", "auth", False) from None

    def body(self, request: ModelRequest, max_tokens: int) -> dict[str, Any]:
        b = super().body(request, max_tokens)
        b.pop("model", None)
        return {"anthropic_version": VERTEX_VERSION, **b}

    def key_hint(self) -> str:
        return "the Google credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS)"

    def secrets(self) -> list[str]:
        token = getattr(self.auth.credentials, "token", None)  # the access token, and those refused and refreshed
        return [*super().secrets(), *(t for t in (token, *self.auth.retired) if isinstance(t, str) and t)]

    def count_tokens(self, request: ModelRequest) -> int | None:
        return None


def _endpoint(name: str, base_url: str | None, env: Mapping[str, str],
              chosen_by_project: Mapping[str, str]) -> tuple[str, str | None, dict[str, Any]]:
    """``ProviderRecord.endpoint``: the base URL (to the location) and the ``auth`` the adapter gets its tokens from.

    Raises:
        ProviderConfigError: besides ``vertex_target``'s, a project's settings chose the base URL of another host than
            Google's own and the user's access token would go there.
    """
    target, auth = vertex_target(name, env, base_url)
    var = "ANTHROPIC_VERTEX_BASE_URL"
    host = urlsplit(target.base_url).hostname or ""
    if base_url is None and var in chosen_by_project and auth.credentials is not None and not host.endswith(".googleapis.com"):
        raise ProviderConfigError(
            f"{chosen_by_project[var]} sets {var}={target.base_url}, but the Google access token that would be sent there is "
            f"yours, not the project's: agentloop sends it only to Google. Set {var} in your own environment or settings to send it there")
    return target.base_url, None, {"auth": auth}


RECORD = ProviderRecord(
    name="vertex",
    wire="vertex",
    adapter=VertexModel,
    endpoint=_endpoint,
    base_env=("ANTHROPIC_VERTEX_BASE_URL",),
    options=frozenset({"cache"}),
    bare_prefixes=("claude-",),  # Anthropic's too: a bare claude-... is Vertex's only when CLAUDE_CODE_USE_VERTEX selects it
    # Claude Code on Vertex (code.claude.com/docs/en/model-config): opus is Opus 4.6, sonnet Sonnet 4.5, in Vertex's
    # spelling (platform.claude.com/docs/en/about-claude/models/model-ids-and-versions: the date after an @)
    aliases=(
        ModelAlias("opus", "claude-opus-4-6", "ANTHROPIC_DEFAULT_OPUS_MODEL"),
        ModelAlias("sonnet", DEFAULT_MODEL, "ANTHROPIC_DEFAULT_SONNET_MODEL"),
        ModelAlias("haiku", "claude-haiku-4-5@20251001", "ANTHROPIC_DEFAULT_HAIKU_MODEL"),
    ),
    default_model="sonnet",
    model_env=("ANTHROPIC_MODEL",),
    cheap_model="haiku",
    cheap_model_env=("ANTHROPIC_SMALL_FAST_MODEL",),
    selected_by="CLAUDE_CODE_USE_VERTEX",
    reasoning="budget",
    families=tuple(ModelFamily(p, thinking=True) for p in ("claude-opus-4", "claude-sonnet-4", "claude-haiku-4-5", "claude-3-7-sonnet")),
    telemetry_name="gcp.vertex_ai",
    no_key=NO_REGION,
)
"""Claude on Google Vertex AI, chosen by ``CLAUDE_CODE_USE_VERTEX=1`` as in Claude Code."""
