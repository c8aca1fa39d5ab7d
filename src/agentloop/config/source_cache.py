"""The tools' source text kept between runs, so a fingerprint costs a file hash, not a parse.

A tool's fingerprint (``agentloop.tools.fingerprint``) hashes the source of every
function and class the tool reaches. Reading a class's source makes Python parse
its whole module, and a command that starts the terminal agent did that about
eighty times per start. Here each piece of source is stored under the SHA-256 of
the file it came from (with its kind, qualified name and first line): an edited
file hashes to a new key, so a changed source is never served stale text; the
fingerprint itself is still computed afresh from that text on every run.

The store is one JSON file under ``$AGENTLOOP_HOME/cache/`` (0600, written
whole through a temporary file and a rename, so a crash or a racing process
leaves either the old file or the new one). A file that cannot be read or
parsed is treated as empty; at most ``LIMIT`` entries are kept, the newest.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from .settings import agentloop_home

LIMIT = 4096
_NAME = "fingerprint-sources.json"


class DiskSourceCache:
    """``agentloop.tools.SourceCache`` on disk: loaded on first use, saved by ``save()``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: dict[str, str] | None = None
        self._dirty = False

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            try:
                with open(self.path, "rb") as f:
                    data: Any = json.loads(f.read(64 * 1024 * 1024))
                if isinstance(data, dict):
                    self._entries = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
            except (OSError, ValueError):
                pass
        return self._entries

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def put(self, key: str, source: str) -> None:
        entries = self._load()
        if entries.get(key) != source:
            entries.pop(key, None)
            entries[key] = source
            self._dirty = True

    def save(self) -> None:
        """Write the entries if any were added (the newest ``LIMIT``); errors are ignored: it is only a cache."""
        if not self._dirty or self._entries is None:
            return
        keep = dict(list(self._entries.items())[-LIMIT:])
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sources-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(keep, f)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
            self._dirty = False
        except OSError:
            pass


def default_source_cache() -> DiskSourceCache:
    """The cache under the agentloop home."""
    return DiskSourceCache(os.path.join(agentloop_home(), "cache", _NAME))
