"""Every sabotage in scripts/negative_control.py still finds the line it breaks.

A sabotage whose guarded text was edited away is reported STALE by the script
at the end of CI, after the whole suite. This test says so in the suite, first
thing, naming the sabotage, so whoever changes a guarded line updates its
sabotage in the same commit.
"""

from __future__ import annotations

import importlib.util
import json
import re
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
        path, _, node = t.partition("::")
        assert (ROOT / path).is_file(), f"{t}: the guarding test file is gone"
        name = node.split("::")[-1].split("[")[0]  # a class's test, or one of a parametrized test's cases
        if name:
            assert re.search(rf"^\s*(?:async )?def {re.escape(name)}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), \
                f"{t}: no test of that name in {path} (renamed? a sabotage whose test is gone is never caught)"


NC = sys.modules["negative_control"]
GUARD = "def admits(amount: int, cap: int) -> bool:\n    return amount <= cap\n"
GUARD_TESTS = """
from guard import admits


def test_within_the_cap_is_admitted():
    assert admits(3, 5)


def test_past_the_cap_is_refused():
    assert not admits(6, 5)
"""


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    """A tree of its own for the script: one guard, its tests, and a test that fails whatever is done."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "guard.py").write_text(GUARD)
    (root / "tests" / "test_guard.py").write_text(GUARD_TESTS)
    (root / "tests" / "test_broken.py").write_text("def test_always_fails():\n    assert False\n")
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    return root


def sab(name: str, old: str | None, new: str, tests: list[str]):  # type: ignore[no-untyped-def]
    return NC.Sabotage(name, "src/guard.py", old, new, tests)


def test_the_script_passes_only_when_every_sabotage_is_caught_and_puts_the_copy_back(tiny_root: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    caught = sab("the cap admits everything", "amount <= cap", "True", ["tests/test_guard.py"])
    harmless = sab("a comment", None, "# nothing\n", ["tests/test_guard.py"])
    assert NC.run([caught], root=str(tiny_root), workers=1) == 0
    assert "caught  the cap admits everything" in capsys.readouterr().out
    # one copy for both: had the first edit stayed in it, the harmless one would look caught
    assert NC.run([caught, harmless], root=str(tiny_root), workers=1) == 1
    out = capsys.readouterr().out
    assert "MISSED  a comment" in out and "SOME SABOTAGE WENT UNNOTICED" in out


def test_a_sabotage_whose_line_is_gone_fails_the_script(tiny_root: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert NC.run([sab("gone", "amount < cap", "True", ["tests/test_guard.py"])], root=str(tiny_root), workers=1) == 1
    assert "SABOTAGE STALE: gone" in capsys.readouterr().out


def test_a_catching_test_that_fails_on_the_untouched_copy_too_fails_the_script(tiny_root: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    caught = sab("the cap admits everything", "amount <= cap", "True", ["tests/test_guard.py"])
    by_a_broken_test = sab("a comment", None, "# nothing\n", ["tests/test_broken.py"])
    assert NC.run([caught, by_a_broken_test], root=str(tiny_root), workers=2) == 2
    out = capsys.readouterr().out
    assert "tests/test_broken.py::test_always_fails" in out and "fails on the untouched copy" in out


def test_the_tests_that_caught_a_sabotage_before_only_order_the_run(tiny_root: Path, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    caught = sab("the cap admits everything", "amount <= cap", "True", ["tests/test_guard.py"])
    harmless = sab("a comment", None, "# nothing\n", ["tests/test_guard.py"])
    hints = {  # one outside the sabotage's own tests (ignored), one that no longer fails (the whole selection runs)
        caught.name: ["tests/test_broken.py::test_always_fails"],
        harmless.name: ["tests/test_guard.py::test_within_the_cap_is_admitted"],
    }
    assert NC.run([caught], root=str(tiny_root), workers=1, hints=hints) == 0
    assert NC.run([harmless], root=str(tiny_root), workers=1, hints=hints) == 1
    record = tmp_path / "catches.json"
    assert NC.run([caught], root=str(tiny_root), workers=1, hints={caught.name: ["tests/test_guard.py::test_past_the_cap_is_refused"]},
                  record=str(record)) == 0
    assert json.loads(record.read_text())[caught.name] == ["tests/test_guard.py::test_past_the_cap_is_refused"]


def test_an_edit_of_the_same_size_runs_as_edited_though_the_copy_was_compiled_before_it(tiny_root: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Each copy is compiled once, untouched (Worker.warm), into pycs and pytest's rewritten modules. A sabotage that
    keeps the file's size and is made within the same second must still run as edited, in a plain module and in one
    pytest rewrites (a conftest), and again after the copy is put back and broken once more."""
    (tiny_root / "tests" / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef cap():\n    return 5\n")
    (tiny_root / "tests" / "test_cap.py").write_text("def test_the_cap_is_five(cap):\n    assert cap == 5\n")
    plain = sab("the cap admits everything, in as many bytes", "amount <= cap", "True or cap  ", ["tests/test_guard.py"])
    rewritten = NC.Sabotage("the cap is nine", "tests/conftest.py", "return 5", "return 9", ["tests/test_cap.py"])
    assert len(plain.new) == len(plain.old) and len(rewritten.new) == len(rewritten.old)
    assert NC.run([plain, rewritten, plain, rewritten], root=str(tiny_root), workers=1) == 0
    out = capsys.readouterr().out
    assert out.count("caught  the cap admits everything, in as many bytes") == 2 and out.count("caught  the cap is nine") == 2


def test_only_the_summary_names_the_failing_tests() -> None:
    output = (
        "FFE\n"
        "------------------------------ Captured log call -------------------------------\n"
        "ERROR    asyncio:base_events.py:1771 Task exception was never retrieved\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_a.py::test_one[x-y] - AssertionError: no\n"
        "ERROR tests/test_b.py - ImportError: gone\n"
        "!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    )
    assert NC.failing_nodes(output) == ["tests/test_a.py::test_one[x-y]", "tests/test_b.py"]
