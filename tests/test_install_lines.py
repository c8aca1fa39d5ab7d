"""Every install line in the README and the docs installs this project, never PyPI's unrelated ``agentloop``.

PyPI's ``agentloop`` is another author's project; ours is the distribution
named in pyproject.toml, installed from the checkout (``pip install -e '.[acp]'``)
or by that name.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NAME = re.search(r'^\[project\][^\[]*?^name = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M | re.S)
assert _NAME is not None, "pyproject.toml: [project] has no name"
DIST = _NAME.group(1)

# the requirement a `pip install` line names: the first word after the options
_PIP = re.compile(r"pip install\s+((?:-{1,2}[\w-]+(?:[ =](?:[^\s'\"`-][^\s'\"`]*))?\s+)*)(['\"]?)([^\s'\"`)]+)")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _install_targets(text: str) -> list[str]:
    return [m.group(3) for m in _PIP.finditer(text)]


def test_the_distribution_name_is_ours_and_not_pypis_agentloop() -> None:
    assert DIST != "agentloop"
    assert DIST.startswith("agentloop-")


def test_every_install_line_installs_this_checkout_or_our_distribution() -> None:
    ours = re.compile(rf"^(\.|\.\[[\w,]+\]|{re.escape(DIST)}(\[[\w,]+\])?)$")
    bad = []
    for path in _doc_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for target in _install_targets(line):
                if target.split("[")[0].lower().replace("_", "-") == "agentloop" or (
                        target.startswith(("agentloop", ".")) and not ours.match(target)):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "install lines that do not install this project:\n" + "\n".join(bad)


def test_the_readme_says_how_to_install_with_an_extra_from_the_checkout() -> None:
    targets = _install_targets((ROOT / "README.md").read_text(encoding="utf-8"))
    assert ".[acp]" in targets and ".[otel]" in targets and ".[ray]" in targets


def test_the_checker_catches_pypis_agentloop() -> None:
    assert _install_targets("run `pip install 'agentloop[acp]'` first") == ["agentloop[acp]"]
    assert _install_targets("pip install -e '.[ray]'") == [".[ray]"]
