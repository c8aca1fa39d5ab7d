"""A line runs without a question only when it cannot write, cannot read outside, and runs no repository code.

Generated from ``tests/data/read_only/writes_and_reads.json`` and checked against the real bash, the real
coreutils and the real git: each line is first run (the oracle: it does write the target, read the
file outside the workspace, or run the repository's program), then the policy must not approve it.

- compound commands with a redirection (``(echo x) > t``, ``{ }``, ``if``, ``for``, ``case``, a pipe into
  a group) are not read-only, and no allow rule approves the write, since none shows it;
- every path a read-only line can touch, globs and braces expanded as bash expands them, must be inside
  the workspace (``*/../../x``, ``{../../x,src}/stamp``, ``?rc/../..``, a symlink a glob matches);
- ``uniq``'s second operand is an output file, however the options before it are spelled;
- an allow rule approves a redirection only to the targets it shows;
- git is auto-approved only for subcommands that read objects and refs: run in a repository that sets
  every program git can run (fsmonitor, hooks, textconv, external diff, filters, pager, gpg), in any
  spelling (a BOM, ``include.path``, a nested repository, a bare one), they run none of it.

Claude Code's permissions reference is the behaviour followed: read-only commands run without approval;
"Bash(safe-cmd *)" does not approve "safe-cmd && other-cmd" (rules are aware of shell operators).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.permissions.rules import READ_ONLY_GIT, PermissionPolicy
from agentloop.config.settings import SettingsSource

BASH = shutil.which("bash")
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")
DATA: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "read_only" / "writes_and_reads.json").read_text())


def policy(cwd: Path | str, allow: list[str] | None = None) -> PermissionPolicy:
    src = SettingsSource(f"{cwd}/.agentloop/settings.json", "project", {"permissions": {"allow": allow or []}})
    return PermissionPolicy.from_settings([src], cwd=str(cwd))


def bash(line: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    p = subprocess.run([BASH or "bash", "--norc", "--noprofile", "-c", line], cwd=cwd, capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL, env=env or {"PATH": "/usr/bin:/bin", "HOME": str(cwd)})
    return p.stdout + p.stderr


@pytest.mark.parametrize("line", DATA["compound_writes"])
def test_a_compound_command_with_a_redirection_is_never_auto_approved(tmp_path: Path, line: str) -> None:
    (tmp_path / "target.txt").write_text("original\n")
    bash(line, tmp_path)
    assert (tmp_path / "target.txt").read_text() != "original\n", f"the oracle: bash writes target.txt for {line!r}"
    for allow in ([], ["Bash(echo:*)", "Bash(cat:*)", "Bash(ls:*)", "Bash(bash:*)"]):
        for mode in ("default", "plan", "acceptEdits"):
            p = policy(tmp_path, allow)
            p.set_mode(mode)
            assert p.decide("Bash", {"command": line}).behavior != "allow", (line, allow, mode)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace three folders below a folder ``outside`` holding a secret; ``src/link`` points there."""
    base = tmp_path_factory.mktemp("nest")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("SECRET-outside-7f3\n")
    proj = base / "w1" / "w2" / "proj"
    for d in ("src", "1", "2"):
        (proj / d).mkdir(parents=True)
    (proj / "src" / "stamp").write_text("inside-stamp\n")
    (proj / "src" / "link").symlink_to(base / "outside")
    return proj


def _fill(line: str, proj: Path) -> str:
    return line.replace("@OUTSIDE@", str(proj.parent.parent.parent / "outside"))


@pytest.mark.parametrize("line", DATA["outside_reads"])
def test_a_glob_or_brace_word_that_reaches_outside_is_not_auto_approved(nested: Path, line: str) -> None:
    line = _fill(line, nested)
    assert "secret" in bash(line, nested).lower(), f"the oracle: bash reads outside the workspace for {line!r}"
    d = policy(nested).decide("Bash", {"command": line})
    assert d.behavior == "ask", (line, d)


@pytest.mark.parametrize("line", DATA["inside_reads"])
def test_glob_and_brace_words_that_stay_inside_still_run_without_a_question(nested: Path, line: str) -> None:
    assert "secret" not in bash(line, nested).lower()
    assert policy(nested).decide("Bash", {"command": line}).behavior == "allow", line


@pytest.mark.parametrize("line", DATA["operand_writes"])
def test_uniq_with_an_output_operand_is_not_read_only(tmp_path: Path, line: str) -> None:
    (tmp_path / "v").write_text("a\na\nb\n")
    bash(line, tmp_path)
    written = [f for f in ("victim", "-victim") if (tmp_path / f).exists()]
    assert written, f"the oracle: uniq writes its second operand for {line!r}"
    assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "ask", line


@pytest.mark.parametrize("allow,line", DATA["rule_redirections"])
def test_an_allow_rule_approves_a_redirection_only_to_the_target_it_shows(tmp_path: Path, allow: str, line: str) -> None:
    bash(line, tmp_path)
    assert (tmp_path / "victim").exists(), f"the oracle: bash writes victim for {line!r}"
    assert policy(tmp_path, [allow]).decide("Bash", {"command": line}).behavior == "ask", (allow, line)


def test_an_allow_rule_showing_the_redirection_still_approves_exactly_it(tmp_path: Path) -> None:
    p = policy(tmp_path, ["Bash(echo * > out.txt)"])
    assert p.decide("Bash", {"command": "echo hi > out.txt"}).behavior == "allow"
    assert p.decide("Bash", {"command": "echo a b >out.txt"}).behavior == "allow"


# --- git: objects and refs only --------------------------------------------------------------

GIT_ENV = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PAGER": "cat"}
HOSTILE = {
    "core.fsmonitor": "touch RAN-fsmonitor; false", "diff.external": "touch RAN-external", "diff.t.textconv": "touch RAN-textconv; cat",
    "filter.f.clean": "touch RAN-clean; cat", "filter.f.smudge": "touch RAN-smudge; cat", "filter.f.process": "touch RAN-process",
    "core.pager": "touch RAN-pager; cat", "log.showSignature": "true", "gpg.program": "touch RAN-gpg", "alias.x": "!touch RAN-alias",
    "core.hooksPath": "hooks-here", "core.alternateRefsCommand": "touch RAN-alternate",
}
HOOKS = ("post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc", "post-rewrite")
AUTO_LINES = ["git rev-parse HEAD", "git rev-parse --show-toplevel", "git branch -a", "git branch -vv", "git tag -l",
              "git cat-file -p HEAD", "git ls-tree -r HEAD", "git rev-list HEAD", "git for-each-ref", "git show-ref",
              "git merge-base HEAD HEAD", "git name-rev HEAD", "git count-objects -v", "git version", "git remote -v"]


def _git(args: list[str], cwd: Path, home: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**GIT_ENV, "HOME": str(home)})


def _section(key: str) -> str:
    parts = key.split(".")
    return f'[{parts[0]} "{parts[1]}"]' if len(parts) == 3 else f"[{parts[0]}]"


def _hostile_repo(path: Path, home: Path, spelling: str) -> Path:
    """A repository whose configuration names every program git can run; ``spelling``: how it is written."""
    path.mkdir(parents=True)
    _git(["init", "-q"], path, home)
    (path / ".gitattributes").write_text("*.txt diff=t filter=f\n")
    (path / "f.txt").write_text("x\n")
    _git(["add", "."], path, home)
    _git(["commit", "-qm", "one"], path, home)
    _git(["tag", "v1"], path, home)
    (path / "f.txt").write_text("y\n")
    hooks = path / "hooks-here"
    hooks.mkdir()
    for h in HOOKS:
        (hooks / h).write_text(f"#!/bin/sh\ntouch RAN-{h}\n")
        (hooks / h).chmod(0o755)
    body = "".join(f"{_section(k)}\n\t{k.rsplit('.', 1)[1]} = {v}\n" for k, v in HOSTILE.items())
    config = path / ".git" / "config"
    if spelling == "bom":
        config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes() + body.encode())
    elif spelling == "include":
        (path / "more.cfg").write_text(body)
        config.write_text(config.read_text() + "[include]\n\tpath = ../more.cfg\n")
    else:
        config.write_text(config.read_text() + body)
    return path


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each hostile spelling: (the workspace, the ``cd`` before git)."""
    if GIT is None:
        pytest.skip("needs git")
    base = tmp_path_factory.mktemp("gitwall")
    home = base / "home"
    home.mkdir()
    out = {s: (_hostile_repo(base / s, home, s), "") for s in ("plain", "bom", "include")}
    outer = _hostile_repo(base / "outer", home, "plain")
    _hostile_repo(outer / "sub", home, "plain")  # a nested repository: cd sub && git ...
    out["nested"] = (outer, "cd sub && ")
    bare = base / "host"
    shutil.copytree(out["plain"][0] / ".git", bare / "evil.git")
    _git(["config", "--file", str(bare / "evil.git" / "config"), "core.bare", "true"], bare, home)
    out["bare"] = (bare, "cd evil.git && ")
    return out


def _markers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("RAN-*"))


def _run_git_line(root: Path, line: str) -> list[str]:
    for p in root.rglob("RAN-*"):
        p.unlink()
    bash(line, root, {**GIT_ENV, "HOME": str(root)})
    return _markers(root)


@pytest.mark.parametrize("spelling", ["plain", "bom", "include", "nested", "bare"])
def test_an_auto_approved_git_line_runs_no_program_the_repository_names(repos: dict[str, tuple[Path, str]], spelling: str) -> None:
    root, cd = repos[spelling]
    oracle = "git x" if spelling == "bare" else "git status"
    assert _run_git_line(root, cd + oracle), f"the oracle: the real git runs the {spelling} repository's programs on {oracle!r}"
    for line in AUTO_LINES:
        full = cd + line
        assert policy(root).decide("Bash", {"command": line}).behavior in ("allow", "ask")
        ran = _run_git_line(root, full)
        assert ran == [], f"{full!r} ran the repository's programs: {ran}"


@pytest.mark.parametrize("line", ["git status", "git describe --dirty", "git diff", "git log -p", "git show", "git blame f.txt",
                                  "git grep x", "git ls-files -m", "cd sub && git status", "git log --show-signature",
                                  "git log --format=%G?", "git tag -v v1", "git x"])
def test_git_lines_that_can_run_repository_programs_always_ask(tmp_path: Path, line: str) -> None:
    (tmp_path / ".git").mkdir()  # a repository with no configuration at all: the subcommand decides, not the file
    assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "ask", line


def test_the_auto_approved_git_lines_are_the_objects_and_refs_subcommands(tmp_path: Path) -> None:
    for line in AUTO_LINES:
        sub = line.split()[1]
        assert sub in READ_ONLY_GIT
        assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "allow", line


# --- options: each read-only program's own list; anything else asks -----------------------------

OPTION_WRITES = ["sort --out=victim v", "sort --outp=victim v", "sort -ovictim v", "sort -uo victim v", "sort -u -o victim v"]


@pytest.mark.parametrize("line", OPTION_WRITES)
def test_an_option_that_writes_in_any_spelling_is_not_read_only(tmp_path: Path, line: str) -> None:
    (tmp_path / "v").write_text("b\na\n")
    bash(line, tmp_path)
    assert (tmp_path / "victim").exists(), f"the oracle: {line!r} writes victim"
    assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "ask", line


@pytest.mark.parametrize("line", ["ls --frobnicate", "cat --show-al v", "head --byte=3 v", "sort -T . v", "grep --devic=read x v",
                                  "wc --tot=always v", "du --exclude-f=list .", "tree -o out", "rg -z x", "date -s 2020-01-01",
                                  "tail --pid 1 v", "file -C -m m"])
def test_an_option_not_on_the_programs_read_only_list_asks(tmp_path: Path, line: str) -> None:
    """Unknown options are not read-only: an abbreviation (``--show-al``), a new option, or one that writes
    (``sort -T`` writes temporary files where it is told) asks."""
    if line == "tail --pid 1 v":  # listed: a value taken from the next word is still read-only
        assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "allow"
        return
    assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "ask", line


@pytest.mark.parametrize("line", ["ls -la", "ls --color=auto -lh", "head -5 v", "head -n 5 v", "tail -n5 v", "grep -rn TODO .",
                                  "grep -A 3 x v", "sort -k 2 -t , v", "cut -d: -f1 v", "du -sh .", "wc -l v", "jq -r .a v",
                                  "uniq -c v", "diff -u v v", "stat -c %s v", "cat -- -v"])
def test_the_usual_read_only_options_still_run_without_a_question(tmp_path: Path, line: str) -> None:
    assert policy(tmp_path).decide("Bash", {"command": line}).behavior == "allow", line
