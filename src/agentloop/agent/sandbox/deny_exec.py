"""Deny rules enforced where programs start: the denied program's files are masked in the sandbox.

The permission rules read a command line as text (``permissions/bash_reader``) to decide what to ask a
person. Any program that starts another (``split --filter``, ``sed e``, ``find -exec``, ``python3 -c``,
``git rebase -x``, bash arithmetic that evaluates a subscript, the dynamic loader) reaches the program
without the line naming it. So a deny rule that names a whole program (``Bash(rm:*)``, ``Bash(rm *)``)
is also enforced by the mount table of the sandbox the command runs in:

1. The program's files are found by name in every directory of the command's ``PATH`` and in
   ``STANDARD_DIRS``, following symlinks to the real file (``/bin/rm`` and ``/usr/bin/rm``, an
   ``/etc/alternatives`` chain). The real file's other names (hard links: all of them, counted by
   ``st_nlink``, found by a walk of its file system) and byte-identical copies in those directories and in
   ``INSTALL_TREES`` are the same program.
2. Each of those files is covered (a read-only bind) by a stub that prints
   ``agentloop: rm is denied by rule Bash(rm:*)`` and exits 126. The real bytes are not under any path
   inside the sandbox: ``/proc/self/root`` is the sandbox's root, the PID namespace shows no host
   process, a copy (``cp /usr/bin/rm x``) copies the stub, and the loader (``ld.so /usr/bin/rm``) loads
   the stub. Mounts made by bubblewrap cannot be undone from inside (no capabilities; a nested user
   namespace gets them locked).
3. A multi-call program (``MULTICALL``: busybox, toybox, a multi-call coreutils) present in those
   directories that provides the denied program is masked whole. When the denied name itself resolves
   into a multi-call program, masking it would stop every program it provides: the rule cannot be
   enforced, and every command asks a person, saying why (``Masks.unenforceable``); so do hard links
   that cannot all be found.

What a deny rule promises is a program, not an effect: ``python3 -c 'os.remove("v")'`` is not ``rm``, and
a program the command writes itself is not the installed one. Rules naming a subcommand or arguments
(``Bash(git push:*)``) are read from the text only: the program itself stays.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from .. import spawn

__all__ = ["DENIED_EXIT", "INSTALL_TREES", "MULTICALL", "STANDARD_DIRS", "DeniedProgram", "Masks", "plan_masks", "stub_text"]

STANDARD_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/games",
                 "/usr/local/games", "/usr/libexec")
"""Where programs are run from besides ``PATH``: a copy of a denied program here is masked too."""
INSTALL_TREES = ("/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local", "/opt")
"""Where installed software keeps its files (walked once per process for copies of a denied program)."""
MULTICALL = ("busybox", "toybox", "coreutils")
"""Programs that are many programs (chosen by ``argv[0]`` or their first argument)."""
DENIED_EXIT = 126
"""The stub's exit status: bash's "found but cannot be run"."""
SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
"""Where a multi-call program may be asked what it provides (run on the host: only the system's own)."""
STUB_SHELLS = ("/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/sh", "/usr/bin/dash", "/usr/bin/bash")


@dataclass(frozen=True)
class DeniedProgram:
    """A program a deny rule names as a whole, and the rule's text (shown by the stub)."""

    name: str
    rule: str


@dataclass
class Masks:
    """What to cover in the sandbox, and the deny rules that cannot be enforced."""

    files: dict[str, str] = field(default_factory=dict)
    """Real path of a file to cover -> the message its stub prints."""
    unenforceable: list[str] = field(default_factory=list)
    """Why a deny rule cannot be enforced where programs start (then every command asks)."""


def stub_text(message: str, masked: Iterable[str]) -> tuple[str, int]:
    """The stub's bytes and mode: a ``sh`` script printing ``message`` and exiting ``DENIED_EXIT``; when
    every shell is itself masked, an empty file without execute permission (exec fails: 126 too)."""
    gone = set(masked)
    for sh in STUB_SHELLS:
        if os.path.isfile(sh) and os.path.realpath(sh) not in gone:
            return f"#!{sh}\nprintf '%s\\n' {shlex.quote(message)} >&2\nexit {DENIED_EXIT}\n", 0o555
    return "", 0o444


def plan_masks(denied: Sequence[DeniedProgram], path_dirs: Sequence[str], visible: Callable[[str], bool],
               keep: Collection[str] = ()) -> Masks:
    """The files to cover for ``denied`` (see the module's rules), for a command whose ``PATH`` is
    ``path_dirs``; ``visible(path)`` says whether a path shows in the sandbox (only those are covered);
    ``keep``: real paths that must stay (the shell Bash commands run in): a rule naming one cannot be enforced."""
    out = Masks()
    dirs = list(dict.fromkeys(d for d in [*path_dirs, *STANDARD_DIRS] if d.startswith("/") and os.path.isdir(d)))
    for d in denied:
        name = os.path.basename(d.name)
        message = f"agentloop: {name} is denied by rule {d.rule}"
        reals = _by_name(name, [*dirs, *([os.path.dirname(d.name)] if "/" in d.name else [])])
        for real in sorted(reals):
            if real in keep:
                out.unenforceable.append(
                    f"the deny rule {d.rule} cannot be enforced in the sandbox: {name} is {real}, the shell every Bash "
                    f"command runs in")
                continue
            if _is_multicall(real):
                out.unenforceable.append(
                    f"the deny rule {d.rule} cannot be enforced in the sandbox: {name} is {real}, a multi-call program "
                    f"that is every program it provides, so it cannot be masked alone")
                continue
            links, complete = _names_of(real, dirs)
            if not complete:
                out.unenforceable.append(
                    f"the deny rule {d.rule} cannot be enforced in the sandbox: {real} has hard links that could not all be found")
            for p in [*links, *_copies(real, dirs)]:
                if visible(p):
                    out.files.setdefault(p, message)
        for mc in _multicalls(dirs):
            if mc not in reals and _provides(mc, name) and visible(mc):
                out.files.setdefault(mc, f"agentloop: {os.path.basename(mc)} is masked: it runs {name}, denied by rule {d.rule}")
    return out


def _by_name(name: str, dirs: Sequence[str]) -> set[str]:
    """Real files the name resolves to in ``dirs`` (symlinks followed)."""
    found = set()
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.lexists(p):
            real = os.path.realpath(p)
            if os.path.isfile(real):
                found.add(real)
    return found


def _is_multicall(real: str) -> bool:
    base = os.path.basename(real)
    return any(base == m or base.startswith((m + ".", m + "-")) for m in MULTICALL)


def _multicalls(dirs: Sequence[str]) -> list[str]:
    out = []
    for d in dirs:
        for m in MULTICALL:
            p = os.path.join(d, m)
            if os.path.isfile(p):
                out.append(os.path.realpath(p))
    return list(dict.fromkeys(out))


_LOCK = threading.Lock()
_PROVIDES: dict[tuple[str, str], bool] = {}


def _provides(program: str, name: str) -> bool:
    """Does the multi-call ``program`` provide ``name``? Asked of it only when it is a system program (in
    ``SYSTEM_BIN``, owned by root, not writable by others): any other file (one a workspace holds) is never
    run on the host, and counts as yes."""
    key = (program, name)
    with _LOCK:
        if key in _PROVIDES:
            return _PROVIDES[key]
    try:
        st = os.stat(program)
        trusted = os.path.dirname(program) in SYSTEM_BIN and st.st_uid == 0 and not st.st_mode & 0o022
        listing = spawn.run([program, "--list"], env={"PATH": "/usr/bin:/bin"}, timeout=5)[1].decode("utf-8", "replace") if trusted else None
    except OSError:
        listing = None
    answer = listing is None or name in listing.split()
    with _LOCK:
        _PROVIDES[key] = answer
    return answer


_LINKS: dict[tuple[int, int], tuple[list[str], bool]] = {}


def _names_of(real: str, dirs: Sequence[str]) -> tuple[list[str], bool]:
    """Every name of the file ``real`` (hard links), and whether all ``st_nlink`` of them were found: ``dirs``
    first, then the trees software is installed in, then the whole file system it is on."""
    try:
        st = os.stat(real)
    except OSError:
        return [real], True
    if st.st_nlink <= 1:
        return [real], True
    key = (st.st_dev, st.st_ino)
    with _LOCK:
        if key in _LINKS:
            return _LINKS[key]
    found = {real}
    for top, deep in [*((d, False) for d in dirs), *((t, True) for t in INSTALL_TREES), (_mount_point(real), True)]:
        if len(found) >= st.st_nlink:
            break
        for p, s in _walk(top, st.st_dev, deep):
            if (s.st_dev, s.st_ino) == key:
                found.add(p)
    result = (sorted(found), len(found) >= st.st_nlink)
    with _LOCK:
        _LINKS[key] = result
    return result


def _mount_point(path: str) -> str:
    dev = os.stat(path).st_dev
    p = os.path.dirname(path)
    while p != "/" and os.stat(os.path.dirname(p)).st_dev == dev:
        p = os.path.dirname(p)
    return p if os.stat(p).st_dev == dev else path


_SKIP = ("/proc", "/sys", "/dev", "/run")


def _walk(top: str, dev: int | None = None, deep: bool = True) -> Iterable[tuple[str, os.stat_result]]:
    """Regular files under ``top`` (in it only, unless ``deep``; symlinks not followed; another file system
    skipped when ``dev`` is given)."""
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    s = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if dev is not None and s.st_dev != dev:
                    continue
                if e.is_dir(follow_symlinks=False):
                    if deep and e.path not in _SKIP:
                        stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    yield e.path, s


_SIZES: dict[int, list[str]] | None = None


def _copies(real: str, dirs: Sequence[str]) -> list[str]:
    """Byte-identical copies of ``real`` (other files) in ``dirs`` and under ``INSTALL_TREES``."""
    global _SIZES
    try:
        st = os.stat(real)
    except OSError:
        return []
    with _LOCK:
        if _SIZES is None:
            sizes: dict[int, list[str]] = {}
            for top in INSTALL_TREES:
                for p, s in _walk(top):
                    sizes.setdefault(s.st_size, []).append(p)
            _SIZES = sizes
        candidates = list(_SIZES.get(st.st_size, []))
    for d in dirs:
        try:
            with os.scandir(d) as it:
                candidates += [e.path for e in it if e.is_file(follow_symlinks=False) and e.stat().st_size == st.st_size]
        except OSError:
            continue
    want = _digest(real)
    if want is None:
        return []
    out = []
    for p in dict.fromkeys(candidates):
        try:
            s = os.stat(p)
        except OSError:
            continue
        if (s.st_dev, s.st_ino) != (st.st_dev, st.st_ino) and _digest(p) == want:
            out.append(p)
    return out


def _digest(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()
