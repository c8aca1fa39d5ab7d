"""The toolchain folders commands see read-only do not show the registry tokens kept among them.

With the workspace elsewhere, the sandbox shows the home's toolchains (``~/.nvm``, ``~/.pyenv``, mise...)
read-only. npm keeps its global configuration, where ``npm config set --global`` puts a registry's
``_authToken``, at ``etc/npmrc`` of each Node a version manager installs; pip reads ``pip.conf`` of an
interpreter's prefix (an index URL with a password). A command read both. They are hidden now
(``bubblewrap.TOOLCHAIN_SECRETS``); the toolchain beside them still works. Claude Code's sandboxing page
(https://code.claude.com/docs/en/sandboxing, "Filesystem isolation") keeps credentials from commands.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import planting_ground, sandboxed
from agentloop.agent.sandbox import bubblewrap as sbx

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

FILES = {
    ".nvm/versions/node/v20.1.0/etc/npmrc": "nvm-npm-token",
    ".local/share/mise/installs/node/22/etc/npmrc": "mise-npm-token",
    ".pyenv/versions/3.12.0/pip.conf": "pyenv-pip-password",
    ".nvm/versions/node/v20.1.0/bin/node": "node-binary-shown",  # negative control: the toolchain itself
    ".pyenv/versions/3.12.0/bin/python": "python-binary-shown",
}


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-toolchain-test-")


def test_registry_tokens_in_version_managers_folders_are_hidden_and_the_toolchains_show(place: Path) -> None:
    home = place / "home"
    for rel, text in FILES.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text + "\n")
    (place / "proj" / "c.sh").write_text("".join(f"cat {home / rel} 2>/dev/null\n" for rel in FILES))
    (out,) = sandboxed(place, ["bash c.sh"])
    assert "node-binary-shown" in out and "python-binary-shown" in out, out
    leaked = [t for t in FILES.values() if t.endswith(("token", "password")) and t in out]
    assert not leaked, f"readable from the sandbox: {leaked}"
