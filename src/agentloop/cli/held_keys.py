"""The provider keys are held in agentloop's memory, never in its environment (decision 0013).

Anything of the same user started beside agentloop (a git filter, a trusted
hook, an MCP or language server) can read ``/proc/PID/environ`` of it. The
kernel shows there the environment the process was started with, whatever
the process changed since, so removing a key from ``os.environ`` is not
enough: the ``agentloop`` command starts itself again without them.

Rules:

1. At start, when the environment holds a provider key (``provider_key_vars()``,
   and the variable ``--api-key-env`` names), the command executes itself
   again (same pid, same interpreter and arguments) with those variables
   removed; their values go through a pipe it inherits, named by
   ``HELD_KEYS_FD``.
2. The new process reads the pipe and closes it before anything else, then
   puts the keys in its own ``os.environ`` (memory: not the block ``/proc``
   shows), where the providers read them as before. Every child is made by
   the spawn path, which never hands a provider key on: the keys are recorded
   as held (``hold_in_process``), so a child whose environment is made from
   ``os.environ`` lacks them too, ``--api-key-env``'s variable whatever its name.
3. Where the restart cannot happen (not POSIX, the interpreter cannot be
   executed), agentloop goes on as before and says so once.
4. Whatever the keys' way in (the environment, a settings file's ``env``, an
   ``apiKeyHelper``), the process that holds them is made not dumpable
   (``config.credentials.hide_process_memory``) before anything else, so no
   process of the user's reads them from ``/proc/PID/mem`` either: the
   restarted process, and the first one too when there is nothing to hand over.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence

from ..config.credentials import hide_process_memory, hold_in_process, provider_key_vars

__all__ = ["HELD_KEYS_FD", "hold_keys", "key_names"]

HELD_KEYS_FD = "AGENTLOOP_HELD_KEYS_FD"
"""The variable naming the inherited pipe that carries the keys to the restarted process (a number, no secret)."""

_MAX = 60_000
"""Keys of more bytes than this (far more than any key) are left where they are: a pipe holds about 64 KiB."""


def key_names(args: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The variables of ``environ`` that hold a provider key: ``provider_key_vars()`` and ``--api-key-env``'s."""
    names = set(provider_key_vars())
    for i, a in enumerate(args):
        if a == "--":
            break
        if a == "--api-key-env" and i + 1 < len(args):
            names.add(args[i + 1])
        elif a.startswith("--api-key-env="):
            names.add(a.split("=", 1)[1])
    return sorted(n for n in names if n and n in environ)


def _take(fd_text: str) -> None:
    """Rule 2: the keys read from the inherited pipe into ``os.environ``; the pipe closed."""
    try:
        fd = int(fd_text)
    except ValueError:
        return
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        keys = json.loads(b"".join(chunks).decode("utf-8"))
    except ValueError:
        return
    if isinstance(keys, dict):
        kept = {k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)}
        hold_in_process(kept)  # no child gets them, whatever environment it is made from
        os.environ.update(kept)


def hold_keys(args: Sequence[str]) -> None:
    """Rules 1 to 3, for the ``agentloop`` command started with ``args``. Returns only in the process that
    holds the keys in memory (or when there are none, or no restart can happen)."""
    hide_process_memory()  # rule 4 (where it cannot be done, /proc/PID/mem stays as ptrace(2) rules it)
    fd_text = os.environ.pop(HELD_KEYS_FD, None)
    if fd_text is not None:
        _take(fd_text)
        return
    names = key_names(args, os.environ)
    hold_in_process({n: os.environ[n] for n in names})
    if not names or os.name != "posix":
        return
    data = json.dumps({n: os.environ[n] for n in names}).encode("utf-8")
    if len(data) > _MAX:
        return
    env = {k: v for k, v in os.environ.items() if k not in names}
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    os.set_inheritable(r, True)
    env[HELD_KEYS_FD] = str(r)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError as exc:
        os.close(r)
        print(f"agentloop: warning: could not restart without the provider keys in the environment ({exc}); "
              "processes beside agentloop may read them from /proc", file=sys.stderr)
