"""Secrets stay out of what the agent starts and of what tools tell the model.

Two pieces, used by Bash, hooks and MCP stdio servers alike:

1. ``child_env(env)``: the environment a child process gets, by the rule of
   ``agent/spawn.py`` (``config.credentials.child_environment``): the
   agent's provider credentials (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
   the variable ``--api-key-env`` names, and any variable holding a key the
   agent uses) are taken out, and so is every secret-named variable
   (``*TOKEN*``, ``*KEY*``...) the user's ``allowedEnvVars`` does not name
   (a build that needs ``NPM_TOKEN`` names it there). The values of those it
   does name are redacted from tool output (2).
2. ``Redactor``: replaces each known secret value in text by a marker
   ``[redacted: NAME]`` before a tool's output is spilled, recorded or shown
   to the model. Known values: the provider keys the agent holds, values of
   environment variables whose names look like keys, tokens, passwords or
   secrets (8 characters or more), and ``secret_args`` values seen in calls.
   Each value is looked for in every shape a command or a URL gives it
   (``agent/secret_shapes.py``: base64 at any offset and URL-safe, hex either
   case, %-encoded at will, reversed): one RE2 alternation of them all, so the
   cost is one linear pass over the output whatever the number of secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from ...config.credentials import (  # one rule for every child
    PROVIDER_KEY_VARS,
    ChildEnv,
    carries_credentials,
    child_environment,
)

__all__ = [
    "MIN_SECRET_LEN",
    "PROVIDER_KEY_VARS",
    "Redactor",
    "child_env",
    "looks_secret",
    "secret_env_values",
]

MIN_SECRET_LEN = 8
"""Shorter values are not searched for: they would match ordinary text."""


_SECRET_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PW", "CREDENTIAL",
                           "CREDENTIALS", "AUTH", "PAT", "PRIVATE", "COOKIE", "SESSION"})
_SECRET_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD")
_NOT_SECRET_LAST = frozenset({"SOCK", "PATH", "FILE", "DIR", "HOST", "PORT", "TYPE", "NAME", "MODE", "ID"})


def looks_secret(name: str) -> bool:
    """True for a variable name that looks like it holds a key, token, password or secret.

    Judged by its ``_``-separated words: one of KEY, TOKEN, SECRET, PASSWORD,
    AUTH... or a word ending so (``APIKEY``, ``GHTOKEN``); unless the last word
    says it holds something else (``SSH_AUTH_SOCK``, ``..._FILE``, ``..._ID``).
    """
    words = [w for w in name.upper().split("_") if w]
    if not words or words[-1] in _NOT_SECRET_LAST:
        return False
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words)


def secret_env_values(env: Mapping[str, str]) -> dict[str, str]:
    """``{name: value}`` of the variables whose names look secret (or hold credentials by convention:
    ``MYSQL_PWD``, ``GH_PAT``) and whose values are long enough, and the password in a URL value
    (``DATABASE_URL=postgres://u:PASSWORD@h``)."""
    out = {k: v for k, v in env.items()
           if (looks_secret(k) or carries_credentials(k, v)) and len(v) >= MIN_SECRET_LEN}
    for k, v in env.items():
        m = _URL_PASSWORD.search(v)
        if m is None:
            continue
        what, secret = ("password", m.group(1)) if m.group(1) else ("token", m.group(2))
        if len(secret) >= MIN_SECRET_LEN:
            out.setdefault(f"the {what} in {k}", unquote(secret))
    return out


_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@\s:]*:([^/?#@\s]+)|([^/?#@\s:]{16,}))@")


def child_env(
    env: Mapping[str, str], *, drop: Iterable[str] = (), held: Iterable[str] = (), allowed: Iterable[str] = ()
) -> ChildEnv:
    """``env`` without the agent's provider credentials and without the secret-named variables not ``allowed``.

    Args:
        env: the agent's environment.
        drop: more variable names to leave out (``--api-key-env``'s).
        held: key values the agent uses: any variable holding one is left out.
        allowed: secret-named variables to keep (the user's ``allowedEnvVars``).
    """
    return child_environment(env, allowed=allowed, drop=drop, held=held)


class Redactor:
    """Replaces known secret values in tool output with ``[redacted: NAME]``."""

    def __init__(self, secrets: Mapping[str, str] | None = None):
        self._secrets: dict[str, str] = {}
        self._known: dict[str, str] = {}
        """Each shape of each value (``secret_shapes.shapes_of``) -> its name."""
        self._pattern: Any = None
        """One RE2 pattern of every shape of every value (``secret_shapes.compile_shapes``)."""
        if secrets:
            self.add(secrets)

    def add(self, secrets: Mapping[str, str]) -> None:
        """Add ``{name: value}``; values under 8 characters are ignored."""
        self._add(secrets.items())

    def add_values(self, name: str, values: Iterable[str]) -> None:
        """Add values that share one name (a tool's secret arguments)."""
        self._add((name, v) for v in values)

    def _add(self, pairs: Iterable[tuple[str, str]]) -> None:
        from ..secret_shapes import compile_shapes, shapes_of

        changed = False
        for name, value in pairs:
            if isinstance(value, str) and len(value) >= MIN_SECRET_LEN and value not in self._secrets:
                self._secrets[value] = name
                for shape in shapes_of(value):
                    self._known.setdefault(shape, name)
                changed = True
        if changed:
            self._pattern = compile_shapes(self._secrets)

    def __len__(self) -> int:
        return len(self._secrets)

    def __contains__(self, value: object) -> bool:
        return value in self._secrets

    def text(self, s: str) -> str:
        """``s`` with every known secret, in any of its shapes, replaced by its marker."""
        p = self._pattern
        if p is None or not s or p.search(s) is None:
            return s
        from ..secret_shapes import name_of

        return str(p.sub(lambda m: f"[redacted: {name_of(m.group(0), self._known) or 'a secret'}]", s))

    def found(self, s: str | bytes) -> str | None:
        """The name of a known secret ``s`` holds in any of its shapes (bytes: read as Latin-1, so any byte
        string can be searched), or None."""
        p = self._pattern
        if p is None or not s:
            return None
        texts = [s.decode("latin-1"), s.decode("utf-8", "replace")] if isinstance(s, bytes) else [s]
        m = next((m for m in (p.search(t) for t in texts) if m is not None), None)
        if m is None:
            return None
        from ..secret_shapes import name_of

        return name_of(m.group(0), self._known) or "a secret"

    def value(self, v: Any) -> Any:
        """A JSON value with every string in it redacted (the same object when nothing changed)."""
        if self._pattern is None:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            out = [self.value(x) for x in v]
            return v if all(a is b for a, b in zip(out, v)) else out
        if isinstance(v, dict):
            d = {k: self.value(x) for k, x in v.items()}
            return v if all(d[k] is v[k] for k in v) else d
        return v
