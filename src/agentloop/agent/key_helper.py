"""Claude Code's ``apiKeyHelper``: a settings command whose output is the provider key.

Rules:

1. It runs only when a provider that takes one (``ProviderRecord.key_helper``) opens a model and no key or
   token variable is set (Claude Code: "lower priority than ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY");
   its trimmed standard output is the key.
2. It runs again as Claude Code runs it: when its key is older than ``CLAUDE_CODE_API_KEY_HELPER_TTL_MS``
   (default five minutes) at the next request, and once after a 401 (``renew``, asked by the provider's retry
   policy, which then retries the call once with the new key). Otherwise its key is reused.
3. It starts through ``spawn`` (the one way the agent starts a process): its environment holds no provider
   key, nor the key it gave before (when it runs again). A failure (no output, a non-zero exit, no end within ``TIMEOUT_S``) or a TTL that is not a whole number
   of milliseconds is one line naming the file or variable, never a traceback; its output never appears in a
   message (the provider scrubs every key it held, old ones included).
4. The file that set it travels with it: a helper from a project's settings is that project's key (the
   key-to-host rule of ``providers/opening.py`` lets it go to the project's base URL), a user's is the user's.
5. Where it runs follows who wrote it (record 0015): a project's helper names files the model can rewrite, so
   it runs in a jail (``sandbox/gitjail.py``: the root read-only, no home, no network, no other process to
   see), and where none can start it is not run, saying why; a user's runs on the host with the environment
   given here, which the agent makes without a project's ``env``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping

__all__ = ["DEFAULT_TTL_MS", "TIMEOUT_S", "TTL_ENV", "KeyHelper"]

TIMEOUT_S = 30.0
TTL_ENV = "CLAUDE_CODE_API_KEY_HELPER_TTL_MS"
DEFAULT_TTL_MS = 5 * 60 * 1000
"""Claude Code re-runs the helper after five minutes unless ``CLAUDE_CODE_API_KEY_HELPER_TTL_MS`` says otherwise."""


class KeyHelper:
    """``helper()`` gives the key, running the command when it has none or its key passed the TTL (rule 2);
    ``helper.renew()`` runs it again now (after a 401)."""

    def __init__(self, command: str, path: str, in_project: bool, env: Mapping[str, str], cwd: str | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.command, self.path, self.in_project = command, path, in_project
        self.env, self.cwd = env, cwd or os.getcwd()
        self._clock = clock
        self._key: str | None = None
        self._at = 0.0
        self._lock = threading.Lock()
        self.runs = 0
        """How many times the command ran (for tests and diagnostics; never the key)."""

    def __call__(self) -> str:
        """The key (run again once its TTL has passed). Raises ``ProviderConfigError`` when the command gives none,
        or the TTL variable is not a whole number of milliseconds (rule 3)."""
        with self._lock:
            ttl = self._ttl_ms()
            if self._key is None or (self._clock() - self._at) * 1000 >= ttl:
                self._fetch()
            assert self._key is not None
            return self._key

    def renew(self) -> str:
        """The key from running the command again now (Claude Code re-runs it on a 401)."""
        with self._lock:
            self._fetch()
            assert self._key is not None
            return self._key

    def _fetch(self) -> None:
        self._key = self._run()
        self._at = self._clock()

    def _ttl_ms(self) -> int:
        from ..providers import ProviderConfigError

        raw = self.env.get(TTL_ENV, "").strip()
        if not raw:
            return DEFAULT_TTL_MS
        if not raw.isdigit():
            raise ProviderConfigError(f"{TTL_ENV}={raw!r}: not a whole number of milliseconds (the apiKeyHelper's key lifetime)")
        return int(raw)

    def _run(self) -> str:
        from ..providers import ProviderConfigError
        from . import spawn

        where = f"apiKeyHelper in {self.path}"
        self.runs += 1
        argv = ["/bin/sh", "-c", self.command]
        if self.in_project:  # rule 5
            from .sandbox.gitjail import GitUnconfined, jail_argv

            try:
                argv = jail_argv(spawn.jail_bwrap(), argv, cwd=self.cwd, write=False)
            except GitUnconfined as exc:
                raise ProviderConfigError(f"{where} not run: a project's apiKeyHelper runs only inside a sandbox "
                                          f"({exc}); set it in your own settings to run it on the host") from None
        try:
            code, out, _err = spawn.run(argv, cwd=self.cwd, env=spawn.environment(self.env, held=[k for k in (self._key,) if k]),
                                        timeout=TIMEOUT_S)
        except OSError as exc:
            raise ProviderConfigError(f"{where} cannot start: {exc.strerror or exc}") from None
        if code is None:
            raise ProviderConfigError(f"{where} did not finish within {TIMEOUT_S:g}s")
        key = out.decode("utf-8", "replace").strip()
        if code != 0 or not key:
            raise ProviderConfigError(f"{where} gave no key (exit {code}{', empty output' if not key else ''})")
        return key
