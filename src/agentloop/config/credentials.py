"""Which environment variables hold credentials, and the environment a child process starts with.

One list for every child process agentloop starts (Bash commands, hooks, MCP
stdio servers, git): none of them inherits a provider's key, and none
inherits a variable whose name looks like a secret unless the user allowed
that name (``child_environment``). ``agent/spawn.py`` is the one place the
agent starts processes and the only caller that decides the allowed names;
``mcp/env.py`` applies the same rule to the stdio servers the MCP library starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["PROVIDER_KEY_VARS", "SECRET_NAME_PARTS", "ChildEnv", "carries_credentials", "child_environment",
           "hide_process_memory", "hold_in_process", "provider_key_vars", "register_provider_keys", "secret_named", "token_shaped"]

PROVIDER_KEY_VARS = frozenset({
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AZURE_OPENAI_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY",
    "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY",
    "AGENTLOOP_API_KEY", "ANTHROPIC_CUSTOM_HEADERS",
    # Claude on Bedrock signs with AWS's credentials, or sends a Bedrock API key (providers/bedrock.py)
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
})
"""Variables holding a model provider's credentials (a gateway's custom headers too: they may carry one): never
passed to a child, allowed or not. Today's providers' key, token and header variables are all here, so they
hold where no provider is loaded; a provider's record adds its own as the registry loads it
(``register_provider_keys``; ``tests/test_provider_record.py`` checks both). (Vertex's ``GOOGLE_APPLICATION_CREDENTIALS`` names a key file:
secret-named, kept from children unless allowed by name.)"""

_REGISTERED: set[str] = set()


def register_provider_keys(names: Iterable[str]) -> None:
    """A provider's key, token and header variables, told by the provider registry as it loads each record
    (``providers/__init__.py``): kept from every child as ``PROVIDER_KEY_VARS`` are, so a new provider's variables
    need no line here. They only add: the list above holds where no provider is loaded (an MCP server started by a
    library user)."""
    _REGISTERED.update(n for n in names if n)


def provider_key_vars() -> frozenset[str]:
    """Every variable holding a provider's credentials: ``PROVIDER_KEY_VARS`` and every registered provider's."""
    return PROVIDER_KEY_VARS | frozenset(_REGISTERED)


SECRET_NAME_PARTS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL", "JWT", "COOKIE", "WEBHOOK", "DSN")
"""A name holding one of these (any case, anywhere: ``*TOKEN*``...) is kept from children unless allowed by name.

The same rule as Codex's default excludes for its shell environment
(``*KEY*``, ``*SECRET*``, ``*TOKEN*``), with passwords, credentials, JWTs, cookies, webhook URLs (the secret
is the path) and DSNs (the key is the user part) added.
"""


class ChildEnv(dict[str, str]):
    """An environment made by ``child_environment``: what the spawn path accepts as already decided."""


_SECRET_NAME_WORDS = re.compile(r"(?:^|_)PASS|(?:^|_)AUTH(?!OR(?!IZ))(?!_SOCK$)|_PWD$|(?:^|_)PAT$|(?:^|_)PW(?:_|$)|CRED")
"""Names that carry credentials by convention: ``*_PASS*`` (``SMTP_PASS``), ``*_AUTH*`` (``NPM_AUTH``; not
``GIT_AUTHOR_*`` nor the ``SSH_AUTH_SOCK`` path), ``*_PWD`` (``MYSQL_PWD``; not ``PWD``), ``*_PAT`` (``GH_PAT``),
``*_PW`` (``LDAP_BIND_PW``), ``*CRED*`` (``ARTIFACTORY_CREDS``)."""
_CREDENTIAL_TEXT = re.compile(
    r"(?i)(?:\b(?:proxy-)?authorization\s*:|\b(?:bearer|basic)\s+[A-Za-z0-9+/=._~\-]{8,}"
    r"|(?:^|[;\s])(?:password|passwd|pwd)\s*[=\s]\s*[^;\s]{4,})")
"""A value holding a credential inside other text, whatever the variable's name: an HTTP header
(``GIT_CONFIG_VALUE_0=AUTHORIZATION: basic ...``, ``http.extraheader`` in ``GIT_CONFIG_PARAMETERS``), a bearer or
basic credential, a connection string's ``Password=...;`` or a netrc's ``password ...``."""
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@\s:]*:[^/?#@\s]+|[^/?#@\s:]{16,})@")
"""A URL with a password in it (``postgres://u:pw@h``, ``http://user:pass@proxy:3128``), or a user part long
enough to be a token (``https://<32 hex>@o1.ingest.sentry.io/1``, ``https://<token>@github.com/o/r``)."""
_TOKEN_VALUE = re.compile(
    r"\A\s*(?:eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"  # a JWT: two base64url JSON parts
    r"|(?:gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|AKIA|ASIA|npm_|hf_|pypi-|shp(?:at|ss|ca)_|SG\.)"
    r"[A-Za-z0-9_.\-]{16,})\s*\Z")
"""A value that is a credential by its own shape, whatever its name: a JWT, or a token with an issuer's
published prefix (GitHub, GitLab, Slack, OpenAI/Anthropic-style ``sk-``, AWS access key ids, npm, Hugging Face,
PyPI, Shopify, SendGrid)."""


def hide_process_memory() -> str | None:
    """Make this process's memory unreadable to other processes of the same user: ``prctl(PR_SET_DUMPABLE, 0)``.

    A process holding the keys in memory is still readable through ``/proc/PID/mem`` (and ``environ``,
    ``fd/``, ``maps``) by any process of the same user that may ptrace it: on a kernel without Yama, or
    with ``ptrace_scope`` 0, that is every process the user runs, a hook or an MCP server started by this
    one included. A process that is not dumpable is ptraced, and its ``/proc`` files opened, only by a
    holder of ``CAP_SYS_PTRACE`` (ptrace(2), "Ptrace access mode checking"); the flag is per process and
    a program this one starts gets the default back at ``execve``, so children are unchanged. No core
    dump is written either (it would hold the keys).

    Returns None when done, else why not (not Linux, no C library): the caller says so.
    """
    import sys

    if not sys.platform.startswith("linux"):
        return f"not on Linux ({sys.platform})"
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
            import os

            return os.strerror(ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None


def secret_named(name: str) -> bool:
    """True for a variable whose name looks like it holds a secret (``SECRET_NAME_PARTS``, ``_SECRET_NAME_WORDS``)."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS) or _SECRET_NAME_WORDS.search(upper) is not None


def carries_credentials(name: str, value: str) -> bool:
    """True for a variable a child must not get unless allowed by name: a secret name, a value that is a URL
    holding a password or a token as its user (``DATABASE_URL``, ``HTTPS_PROXY`` with credentials, a Sentry
    DSN), a value holding a credential in other text (``_CREDENTIAL_TEXT``: a header, a connection string's
    password), or a value shaped as a credential (``token_shaped``), whatever the name."""
    return (secret_named(name) or _URL_PASSWORD.search(value) is not None or token_shaped(value)
            or (len(value) < 65536 and _CREDENTIAL_TEXT.search(value) is not None))


def token_shaped(value: str) -> bool:
    """Is ``value`` a credential by its own shape (``_TOKEN_VALUE``: a JWT, a prefixed issuer token)?"""
    return len(value) < 16384 and _TOKEN_VALUE.match(value) is not None


_HELD: dict[str, str] = {}
"""The provider keys this process holds (``hold_in_process``): name -> value."""


def hold_in_process(keys: Mapping[str, str]) -> None:
    """Record the keys this process holds in memory (the ``agentloop`` command's, ``--api-key-env``'s variable
    among them, whatever its name): ``child_environment`` leaves each out of every child's environment, by name
    and by value, whichever environment the child's was made from."""
    _HELD.update({k: v for k, v in keys.items() if k and v})


def child_environment(
    environ: Mapping[str, str],
    *,
    allowed: Iterable[str] = (),
    drop: Iterable[str] = (),
    held: Iterable[str] = (),
) -> ChildEnv:
    """``environ`` as a child may see it.

    Left out: the provider keys (``PROVIDER_KEY_VARS``, and ``drop``: the
    variable ``--api-key-env`` names), any variable whose value is a key the
    agent holds (``held``), the keys this process holds (``hold_in_process``), and every secret-named variable (``secret_named``)
    or variable holding a URL with a password (``carries_credentials``)
    that ``allowed`` does not name exactly. A provider key stays out even when
    allowed: the key that pays for the model is never a tool's.
    """
    names = provider_key_vars() | {d for d in drop if d} | set(_HELD)
    values = {v for v in held if v} | {v for v in _HELD.values() if len(v) >= 8}  # no key is shorter
    keep = set(allowed) - names
    return ChildEnv({
        k: v for k, v in environ.items()
        if k not in names and v not in values and (k in keep or not carries_credentials(k, v))
    })
