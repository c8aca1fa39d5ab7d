"""Every sabotage in scripts/negative_control.py still finds the line it breaks.

A sabotage whose guarded text was edited away is reported STALE by the script
at the end of CI, after the whole suite. This test says so in the suite, first
thing, naming the sabotage, so whoever changes a guarded line updates its
sabotage in the same commit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sabotages() -> list[object]:
    spec = importlib.util.spec_from_file_location("negative_control", ROOT / "scripts" / "negative_control.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["negative_control"] = mod  # its dataclass looks its module up while it is defined
    spec.loader.exec_module(mod)
    return list(mod.SABOTAGES)


SABOTAGES = _sabotages()


@pytest.mark.parametrize("sab", SABOTAGES, ids=[s.name[:60] for s in SABOTAGES])  # type: ignore[attr-defined]
def test_each_sabotage_finds_its_guarded_line_and_its_tests(sab) -> None:  # type: ignore[no-untyped-def]
    target = ROOT / sab.path
    assert target.is_file(), f"{sab.path}: the sabotaged file is gone"
    if sab.old is not None:
        assert sab.old in target.read_text(encoding="utf-8"), f"{sab.path}: the guarded text is gone: {sab.old!r}"
    for t in sab.tests:
        assert (ROOT / t.split("::")[0]).is_file(), f"{t}: the guarding test file is gone"
