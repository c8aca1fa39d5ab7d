"""Claude Code's ``apiKeyHelper``: a settings command whose output is the provider key.

Rules:

1. It runs only when a provider that takes one (``ProviderRecord.key_helper``) opens a model and no key or
   token variable is set (Claude Code: "lower priority than ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY"),
   once a session; its trimmed standard output is the key.
2. It starts through ``spawn`` (the one way the agent starts a process): its environment holds no provider
   key. A failure (no output, a non-zero exit, no end within ``TIMEOUT_S``) is one line naming the file that
   set it, never a traceback; its output never appears in a message.
3. The file that set it travels with it: a helper from a project's settings is that project's key (the
   key-to-host rule of ``providers/opening.py`` lets it go to the project's base URL), a user's is the user's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["TIMEOUT_S", "KeyHelper"]

TIMEOUT_S = 30.0


class KeyHelper:
    """``helper()`` runs the command once (rule 1) and gives its key."""

    def __init__(self, command: str, path: str, in_project: bool, env: Mapping[str, str], cwd: str | None = None):
        self.command, self.path, self.in_project = command, path, in_project
        self.env, self.cwd = env, cwd or os.getcwd()
        self._key: str | None = None

    def __call__(self) -> str:
        """The key. Raises ``ProviderConfigError`` when the command gives none (rule 2)."""
        if self._key is None:
            self._key = self._run()
        return self._key

    def _run(self) -> str:
        from ..providers import ProviderConfigError
        from . import spawn

        where = f"apiKeyHelper in {self.path}"
        try:
            code, out, _err = spawn.run(["/bin/sh", "-c", self.command], cwd=self.cwd, env=spawn.environment(self.env),
                                        timeout=TIMEOUT_S)
        except OSError as exc:
            raise ProviderConfigError(f"{where} cannot start: {exc.strerror or exc}") from None
        if code is None:
            raise ProviderConfigError(f"{where} did not finish within {TIMEOUT_S:g}s")
        key = out.decode("utf-8", "replace").strip()
        if code != 0 or not key:
            raise ProviderConfigError(f"{where} gave no key (exit {code}{', empty output' if not key else ''})")
        return key
