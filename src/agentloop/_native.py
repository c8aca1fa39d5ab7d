"""Compiled builds of the hottest core modules, used only while they match their sources.

``scripts/build-native`` compiles ``MODULES`` with mypyc into extension modules
beside their sources, and ``C_MODULES`` from their C sources (``<name>.c``), and
writes ``native.sha256``: the SHA-256 of each source it compiled. The mypyc
modules are the same code (mypy-strict Python compiled to C); a step of the
loop costs 262k instead of 303k instructions (callgrind, docs/DEVELOPING.md).
A C module has a pure-Python counterpart in its importer (``_linescan``: the
checks in ``line.py`` it replaces), which runs whenever the C module is absent.

Python imports an extension module before a source of the same name, so a
build left behind by an edit would silently run the old code. Before any core
module is imported, ``install()`` hashes the sources and, when one differs
from what was compiled (or there is no build), puts a finder first on
``sys.meta_path`` that loads every one of ``MODULES`` from its source. All or
none: compiled modules call each other natively, so a mix would run old code
through the compiled ones. The same finder refuses the C modules then (an
``ImportError``, as if never built), so their importers fall back on Python.

This module reads files, not the environment: it decides nothing about a run.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["C_MODULES", "MODULES", "built_modules", "install", "read_stamp", "source_files", "source_hashes", "status"]

MODULES = ("canonical", "line", "loop", "redact", "replay")
"""Compiled together, in one mypyc group: pure functions and classes nobody subclasses."""
C_MODULES = ("_linescan",)
"""Written in C (``<name>.c``), built in the same step; each importer has a Python fallback."""

_DIR = os.path.dirname(os.path.abspath(__file__))
_STAMP = os.path.join(_DIR, "native.sha256")
"""``sha256sum`` lines (``<hex>  <module>.py``) and ``#`` comments: no json (nor re) to import."""
_state = {"status": "not checked"}


def source_files() -> list[str]:
    """Every source a build compiles, by file name: ``line.py``..., ``_linescan.c``."""
    return [m + ".py" for m in MODULES] + [m + ".c" for m in C_MODULES]


def source_hashes(directory: str = _DIR) -> dict[str, str]:
    """The SHA-256 of every source a build compiles, by file name."""
    out = {}
    for name in source_files():
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def read_stamp(path: str) -> dict[str, str]:
    """The hashes a build recorded, by file name."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                digest, _, file = line.strip().partition("  ")
                out[file] = digest
    return out


def built_modules() -> set[str]:
    """The modules of this package that have an extension file beside them (one listing)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return {f.split(".")[0] for f in os.listdir(_DIR) if f.endswith(suffixes)}


class _FromSource:
    """Loads the named modules of this package from their sources, whatever extension files lie beside them,
    and refuses the named C modules (``ImportError``: their importers fall back on Python).

    A meta path finder by its one method (not an ``importlib.abc`` subclass:
    that module costs 18 ms to import, a third of ``agentloop --version``).
    """

    def __init__(self, names: frozenset[str], refused: frozenset[str] = frozenset()):
        self.names = names
        self.refused = refused

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        pkg, _, name = fullname.rpartition(".")
        if pkg != __package__:
            return None
        if name in self.refused:
            raise ModuleNotFoundError(f"{fullname}: not used ({_state['status']})", name=fullname)
        if name not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, os.path.join(_DIR, name + ".py"))


def install() -> str:
    """Decide once, before the core is imported: ``"compiled"``, or why the sources are used."""
    if _state["status"] != "not checked":
        return _state["status"]
    built = built_modules()
    # an extension file of a module no longer in MODULES is an older build's: never used
    sources = {n for n in built - set(MODULES) - set(C_MODULES) if os.path.exists(os.path.join(_DIR, n + ".py"))}
    refused: set[str] = set()
    why = ""
    try:
        stamp = read_stamp(_STAMP)
        if not set(MODULES) | set(C_MODULES) <= built:
            why = "source (the build is incomplete)"
        elif stamp != source_hashes():
            why = "source (a source changed since the build: run scripts/build-native)"
    except FileNotFoundError:
        why = "source (not built)"
    except (OSError, ValueError) as exc:
        why = f"source (native.sha256 unreadable: {exc})"
    if why:
        already = [n for n in MODULES + C_MODULES if f"{__package__}.{n}" in sys.modules]
        if already:  # imported before the check: cannot be swapped under their importers
            why += f"; already imported: {', '.join(already)}"
        sources |= set(MODULES)
        refused |= set(C_MODULES)
    _state["status"] = why or "compiled"
    if sources or refused:
        sys.meta_path.insert(0, _FromSource(frozenset(sources), frozenset(refused)))
    return _state["status"]


def status() -> str:
    """``"compiled"`` when the core runs from its build (mypyc and C), else why it runs from source."""
    return install()
