"""The decision records keep their own rule (docs/decisions/0000): every record is
listed in the index, and a record that a later one amends or supersedes says so
in a line at its top, naming the later record."""

from __future__ import annotations

import re
from pathlib import Path

DECISIONS = Path(__file__).resolve().parent.parent / "docs" / "decisions"


def _records() -> dict[str, str]:
    return {p.name[:4]: p.read_text(encoding="utf-8") for p in sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))}


def test_every_record_is_in_the_index() -> None:
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    missing = [n for n in _records() if n != "0000" and f"[{n}](" not in index]
    assert not missing, f"records not listed in docs/decisions/README.md: {missing}"


def test_a_record_that_a_later_one_amends_says_so_at_its_top() -> None:
    records = _records()
    unsaid = []
    for number, text in records.items():
        head = "\n".join(text.splitlines()[:6])
        for older in re.findall(r"(?:Amends|Supersedes) \[(\d{4})\]", head):
            top = "\n".join(records[older].splitlines()[:8])
            if not re.search(rf"(?:Amended|Superseded) by[^\n]*(?:\n[^\n]*)*\[{number}\]", top):
                unsaid.append(f"{older} does not say at its top that {number} changes it")
    assert not unsaid, unsaid


def test_a_record_named_as_changing_another_exists() -> None:
    records = _records()
    dangling = []
    for number, text in records.items():
        top = "\n".join(text.splitlines()[:8])
        for later in re.findall(r"\[(\d{4})\]\(", top):
            if later not in records:
                dangling.append(f"{number} names {later}, which does not exist")
    assert not dangling, dangling
