"""Output styles: the settings' ``outputStyle``, a Markdown file whose body is added to the system prompt.

Claude Code's output styles page: a style is ``default``, a built-in (``Explanatory``, ``Learning``) or a Markdown
file in ``~/.claude/output-styles/`` or ``.claude/output-styles/`` (or a plugin's ``output-styles/``) with front
matter ``name``, ``description`` and ``keep-coding-instructions``; the chosen one is named by ``outputStyle``.
Here its body goes into the session's system prompt (its dynamic part). agentloop's own instructions always stay
(``keep-coding-instructions: false`` is named in a warning); the two built-ins are agentloop's own short texts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config.settings import SettingsSource
    from .plugins import Plugin

__all__ = ["BUILT_IN", "find_output_style", "session_output_style"]

BUILT_IN = {
    "explanatory": "Explain as you work: alongside the task, add short insights about why the code and the choices "
                   "are as they are (the codebase's patterns, the trade-offs), clearly marked and kept brief.",
    "learning": "Work with the user as a teacher: explain the choices you make, and where a small, well-defined piece "
                "of code is a good exercise, leave it for the user to write (mark the place and say what it should do).",
}
"""agentloop's own texts for Claude Code's built-in styles (Claude Code's wording is its own)."""


def _styles_in(folder: str, warnings: list[str]) -> dict[str, tuple[str, str]]:
    """``name`` (lower case) -> (its body, its file) for the ``*.md`` styles of ``folder``."""
    from .commands import _read
    from .front_matter import parse_front_matter

    out: dict[str, tuple[str, str]] = {}
    if not os.path.isdir(folder):
        return out
    for fn in sorted(os.listdir(folder)):
        path = os.path.join(folder, fn)
        text = _read(path, warnings) if fn.endswith(".md") else None
        if text is None:
            continue
        meta, body = parse_front_matter(text, warnings, path)
        name = str(meta.get("name") or fn[:-3]).strip()
        if meta.get("keep-coding-instructions") is False:
            warnings.append(f"{path}: keep-coding-instructions: false is not honoured by agentloop; its own instructions "
                            "stay and the style is added to them")
        out[name.lower()] = (body.strip(), path)
    return out


def find_output_style(name: str, folders: Sequence[str], warnings: list[str]) -> tuple[str, str] | None:
    """The style ``outputStyle`` names, as (its text, where it came from); None for ``default`` or one not found
    (named in ``warnings``). ``folders``: the output-styles folders, lowest precedence first (user, plugins, project)."""
    key = name.strip().lower()
    if key in ("", "default"):
        return None
    found: dict[str, tuple[str, str]] = {}
    for folder in folders:
        found.update(_styles_in(folder, warnings))
    if key in found:
        return found[key]
    if key in BUILT_IN:
        return BUILT_IN[key], "built-in"
    warnings.append(f"outputStyle {name!r}: no such output style (built-in: default, Explanatory, Learning; "
                    f"or a file in {', '.join(folders) or 'an output-styles folder'}); the default is used")
    return None


def session_output_style(sources: Sequence[SettingsSource], env: Mapping[str, str], cwd: str, plugins: Sequence[Plugin],
                         warnings: list[str]) -> tuple[str, str] | None:
    """The settings' ``outputStyle`` as (its name, its text), from the user's, the plugins' and the project's
    ``output-styles`` folders (lowest precedence first); None for the default or a style not found (warned)."""
    from ..config.settings import merged, user_home

    name = merged(list(sources), "outputStyle")
    if not isinstance(name, str):
        return None
    folders = [os.path.join(user_home(env), ".claude", "output-styles"),
               *(os.path.join(p.path, "output-styles") for p in plugins), os.path.join(cwd, ".claude", "output-styles")]
    found = find_output_style(name, folders, warnings)
    return None if found is None else (name, found[0])
