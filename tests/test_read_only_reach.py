"""A read-only Bash line is auto-approved only when every file it can reach is inside the workspace, judged as
the kernel resolves paths and as the program walks folders.

Claude Code's documented behaviour: read-only commands run without a prompt only inside the working
directory and the added directories; a path elsewhere asks (code.claude.com/docs/en/permissions, "Working
directories"). Here that is judged from what the program will reach, not from how the path is spelt:

- ``link/..`` is the parent of the link's target (the kernel resolves ``..`` after the link), so
  ``cat src/d/e/../../../x`` with ``src/d/e -> /etc`` reads ``/x``;
- an option that follows every link met while recursing (``grep -R``, ``rg -L``, ``ls -RL``, ``du -L``,
  ``tree -l``, ``find -L``) reaches whatever a link deep in the tree points at, so it asks;
- ``find``'s expression is an allow-list: an action that writes or runs, or a word it does not know, asks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.config.settings import SettingsSource


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "src" / "d").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n")
    os.symlink(outside, p / "src" / "d" / "e")
    return p


def _decide(proj: Path, command: str) -> str:
    src = SettingsSource(str(proj / ".claude" / "settings.json"), "project", {"permissions": {"allow": [], "deny": []}})
    policy = PermissionPolicy.from_settings([src], cwd=str(proj), mode=None)
    return policy.decide("Bash", {"command": command}).behavior


@pytest.mark.parametrize("command", [
    "cat src/d/e/../outside/secret.txt",
    "cat src/d/e/../../proj/../outside/secret.txt",
    "ls src/d/e/..",
    "head -c 10 src/d/e/../outside/secret.txt",
])
def test_dot_dot_after_a_link_is_judged_where_the_kernel_goes(proj: Path, command: str) -> None:
    assert (proj / "src/d/e/../outside/secret.txt").exists()  # the kernel really reaches it
    assert _decide(proj, command) == "ask", command


@pytest.mark.parametrize("command", [
    "grep -R s src", "grep --dereference-recursive s src", "grep -rR s src", "rg -L s src", "rg --follow s src",
    "ls -RL src", "ls -R --dereference src", "du -L src", "du --dereference src", "tree -l src",
    "find -L src", "find src -follow", "find src -exec cat {} ;", "find src -delete", "find src -fprint /tmp/x",
    "find src -newer src/a.txt -okdir rm {} ;", "find src -some-new-primary",
])
def test_a_line_that_follows_links_while_walking_or_acts_asks(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "ask", command


@pytest.mark.parametrize("command", [
    "grep -r s src", "rg s src", "ls -R src", "du -sh src", "tree src", "find src -name '*.txt' -type f",
    r"find src -maxdepth 2 \( -name a -o -iname B \) -print", "find -H src -newermt 2020-01-01 -ls",
    "cat src/a.txt", "cat src/d/../a.txt",
])
def test_ordinary_reads_inside_the_workspace_still_run_without_asking(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "allow", command
