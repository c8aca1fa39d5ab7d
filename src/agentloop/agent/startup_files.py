"""The files an agent reads once at start: memory files (CLAUDE.md, AGENTS.md, rules), custom commands and skills.

Claude Code asks once per project whether memory files may import from outside
the workspace and keeps the answer; so does agentloop, in
``AGENTLOOP_HOME/memory-imports.json``. Without a way to ask (``-p``, ACP)
those imports stay out until the user said yes once. An untrusted folder's
commands and skills are text only: their ``allowed-tools`` grant nothing.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config.settings import user_home

__all__ = ["StartupFiles", "read_startup_files"]

log = logging.getLogger("agentloop.agent")

AskImports = Callable[[list[str]], bool]


@dataclass(frozen=True)
class StartupFiles:
    """What ``read_startup_files`` found."""

    memory_files: list[str]
    memory_text: str
    commands: dict[str, Any]
    skills: dict[str, Any]
    load_warnings: list[str] = field(default_factory=list)
    """What could not be honoured as written in the files read at start (shown by the CLI)."""
    notices: list[str] = field(default_factory=list)
    """Memory files skipped, imports waiting for an answer: said once at start."""


def read_startup_files(
    cwd: str, home: str, env: Mapping[str, str], add_dirs: Sequence[str], *, trusted: bool, ask_imports: AskImports | None
) -> StartupFiles:
    """Memory files, custom commands and skills of ``cwd`` (see the module's docstring)."""
    from .session.memory import load_memory, render_memory

    notices: list[str] = []
    uh = user_home(env)
    files = load_memory(cwd, home, user_home=uh, roots=list(add_dirs),
                        external=lambda paths: _external_imports(home, cwd, paths, ask_imports))
    for f in files:
        if not f.text and ("never read" in f.reason or "not a regular file" in f.reason):
            notices.append(f"memory: {f.path}: {f.reason.rsplit('skipped: ', 1)[-1]}; skipped")
    waiting = [f.path for f in files if not f.text and "not approved" in f.reason]
    if waiting:
        n = f"memory: {len(waiting)} import(s) from outside the workspace not loaded ({', '.join(waiting[:3])}"
        n += ", ...)" if len(waiting) > 3 else ")"
        n += "; approve them once in the REPL" if ask_imports is None else ""
        notices.append(n)
    for n in notices:
        log.warning(n)
    commands, skills, warnings = _commands_and_skills(cwd, home, uh, trusted)
    return StartupFiles([f.path for f in files if f.text], render_memory(files), commands, skills, warnings, notices)


def _commands_and_skills(cwd: str, home: str, uh: str, trusted: bool) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    from .commands import load_commands, load_skills

    warnings: list[str] = []
    commands = dict(load_commands(cwd, home, uh, warnings))
    skills = dict(load_skills(cwd, home, uh, warnings))
    if not trusted:  # an untrusted folder's commands and skills are text: their allowed-tools and model choose nothing
        from .trust import without_grants

        commands = without_grants(commands, cwd, home, uh, warnings)
        skills = without_grants(skills, cwd, home, uh, warnings)
    for w in warnings:
        log.warning(w)
    return commands, skills, warnings


def _external_imports(home: str, cwd: str, paths: list[str], ask: AskImports | None) -> bool:
    """Whether this folder's memory files may import ``paths`` from outside: the answer given once, kept per folder."""
    path = os.path.join(home, "memory-imports.json")
    try:
        with open(path, encoding="utf-8") as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if isinstance(known.get(cwd), bool):
        return bool(known[cwd])
    if ask is None:
        return False
    answer = bool(ask(paths))
    known[cwd] = answer
    try:
        os.makedirs(home, mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(known, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot remember the answer about memory imports in %s: %s", path, exc)
    return answer
