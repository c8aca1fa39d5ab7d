"""Compiled builds of the hottest core modules, used only while they match their sources.

``scripts/build-native`` compiles ``MODULES`` with mypyc into extension modules
beside their sources, and writes ``native.sha256``: the SHA-256 of each source
it compiled. They are the same code (mypy-strict Python compiled to C); a step
of the loop costs 262k instead of 303k instructions (callgrind, docs/DEVELOPING.md).

Python imports an extension module before a source of the same name, so a
build left behind by an edit would silently run the old code. Before any core
module is imported, ``install()`` hashes the sources and, when one differs
from what was compiled (or there is no build), puts a finder first on
``sys.meta_path`` that loads every one of ``MODULES`` from its source. All or
none: compiled modules call each other natively, so a mix would run old code
through the compiled ones.

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

__all__ = ["MODULES", "built_modules", "install", "read_stamp", "source_hashes", "status"]

MODULES = ("canonical", "line", "loop", "redact", "replay")
"""Compiled together, in one mypyc group: pure functions and classes nobody subclasses."""

_DIR = os.path.dirname(os.path.abspath(__file__))
_STAMP = os.path.join(_DIR, "native.sha256")
"""``sha256sum`` lines (``<hex>  <module>.py``) and ``#`` comments: no json (nor re) to import."""
_state = {"status": "not checked"}


def source_hashes(directory: str = _DIR) -> dict[str, str]:
    out = {}
    for name in MODULES:
        with open(os.path.join(directory, name + ".py"), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def read_stamp(path: str) -> dict[str, str]:
    """The hashes a build recorded, by module name."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                digest, _, file = line.strip().partition("  ")
                out[file.removesuffix(".py")] = digest
    return out


def built_modules() -> set[str]:
    """The modules of this package that have an extension file beside them (one listing)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return {f.split(".")[0] for f in os.listdir(_DIR) if f.endswith(suffixes)}


class _FromSource:
    """Loads the named modules of this package from their sources, whatever extension files lie beside them.

    A meta path finder by its one method (not an ``importlib.abc`` subclass:
    that module costs 18 ms to import, a third of ``agentloop --version``).
    """

    def __init__(self, names: frozenset[str]):
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        pkg, _, name = fullname.rpartition(".")
        if pkg != __package__ or name not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, os.path.join(_DIR, name + ".py"))


def install() -> str:
    """Decide once, before the core is imported: ``"compiled"``, or why the sources are used."""
    if _state["status"] != "not checked":
        return _state["status"]
    built = built_modules()
    # an extension file of a module no longer in MODULES is an older build's: never used
    sources = {n for n in built - set(MODULES) if os.path.exists(os.path.join(_DIR, n + ".py"))}
    why = ""
    try:
        stamp = read_stamp(_STAMP)
        if not set(MODULES) <= built:
            why = "source (the build is incomplete)"
        elif stamp != source_hashes():
            why = "source (a source changed since the build: run scripts/build-native)"
    except FileNotFoundError:
        why = "source (not built)"
    except (OSError, ValueError) as exc:
        why = f"source (native.sha256 unreadable: {exc})"
    if why:
        already = [n for n in MODULES if f"{__package__}.{n}" in sys.modules]
        if already:  # imported before the check: cannot be swapped under their importers
            why += f"; already imported: {', '.join(already)}"
        sources |= set(MODULES)
    if sources:
        sys.meta_path.insert(0, _FromSource(frozenset(sources)))
    _state["status"] = why or "compiled"
    return _state["status"]


def status() -> str:
    """``"compiled"`` when the core runs from its mypyc build, else why it runs from source."""
    return install()
