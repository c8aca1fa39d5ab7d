"""The files a hook's command line names: what folder trust covers and the sandbox keeps read-only.

Shared by ``trust.hook_files`` (a settings hook) and ``plugins.project_plugin_files`` (a plugin's hook), so
neither imports the other."""

from __future__ import annotations

import os
import shlex

__all__ = ["named_files"]

_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".ps1")


def named_files(command: str, root: str) -> list[str]:
    """The files inside ``root`` that the words of ``command`` name (a script, a path), as real paths."""
    text = command.replace("${CLAUDE_PROJECT_DIR}", root).replace("$CLAUDE_PROJECT_DIR", root)
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        words = text.split()
    found = []
    for w in words:
        if w.startswith("-") or not ("/" in w or w.endswith(_SCRIPT_SUFFIXES)):
            continue
        real = os.path.realpath(os.path.join(root, os.path.expanduser(w)))
        if real.startswith(root + os.sep) and os.path.isfile(real):
            found.append(real)
    return found
