"""A read-only Bash line runs without a question only when every file the shell will open is inside the
workspace, judged as bash expands the line and from every folder the shell can stand in.

Claude Code's documented behaviour: read-only commands run without a prompt only inside the working directory
and the added directories; a path elsewhere asks (code.claude.com/docs/en/permissions, "Working directories").
Its Bash tool keeps one shell whose "working directory persists across commands" (Bash tool reference), so
a ``cd`` in one call moves where the next call's relative paths start. What this checks:

- relative paths are judged from every folder a ``cd`` of the line (in any order, loop or subshell, through
  ``CDPATH``) and the shell's current folder can lead to: ``cd src/d && cat link/x`` reaches the link's target;
- an input redirection's target is expanded as an argument is (``< $HOME/x``, ``< src/*/x``, ``< $(rev <<< ..)``);
- an option value stuck to a bundle of short options is where getopt reads it (``grep -rf../x``, ``jq -L..``);
- programs that open files the line does not name ask: ``diff -r`` follows links deep in a folder (unless
  ``--no-dereference``), ``md5sum -c`` and ``file -f`` open every file a list names, ``jq`` loads modules and
  data files from its search path (``import "../../x" as $d``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _pty import env_for
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.config.settings import SettingsSource


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "src" / "d").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    (p / "src" / "x.json").write_text('{"a": 1}\n')
    (p / "empty").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n")
    (outside / "secret.json").write_text('{"s": 1}\n')
    os.symlink(outside, p / "src" / "d" / "e")
    return p


def _policy(proj: Path) -> PermissionPolicy:
    src = SettingsSource(str(proj / ".claude" / "settings.json"), "project", {"permissions": {"allow": [], "deny": []}})
    return PermissionPolicy.from_settings([src], cwd=str(proj), mode="default")


def _decide(proj: Path, command: str) -> str:
    return _policy(proj).decide("Bash", {"command": command}).behavior


@pytest.mark.parametrize("command", [
    "cd src/d && cat e/secret.txt", "cd src; cat d/e/secret.txt", "cd src; cd d/e; cat secret.txt",
    "cd src/d; ls e/", "( cd src/d && cat e/secret.txt )", "if cd src/d; then cat e/secret.txt; fi",
    "cd src/d || cat e/secret.txt", "cat src/a.txt; { cd src/d; }; cat e/secret.txt",
    "cd ./src/./d && cat ./e/../e/secret.txt", "cd -P src/d && head -n1 e/secret.txt",
    "cd src/d; grep -r s e/", "cd src/d; wc -c e/secret.txt", "cat e/secret.txt; cd src/d",
    "cd sr?/d && cat e/secret.txt", "cd src/{d,x} && cat e/secret.txt",
])
def test_relative_paths_are_judged_from_every_folder_a_cd_of_the_line_leads_to(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "ask", command


def test_a_cd_through_cdpath_is_followed(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _decide(proj, "cd outside; cat secret.txt") == "allow"  # no such folder here: the shell stays put
    monkeypatch.setenv("CDPATH", str(proj.parent))
    assert _decide(proj, "cd outside; cat secret.txt") == "ask"


@pytest.mark.parametrize("command", [
    "cat < src/d/*/secret.txt", "cat < src/d/?/secret.txt", "cat < src/d/[e]/secret.txt", "cat < $HOME/.bashrc",
    "cat < ${HOME}/.bashrc", 'cat < "$HOME"/.bashrc', "cat < $(tr a-z n-za-m <<< fep/q/r/frperg.gkg)",
    'cat < "$(rev <<< txt.terces/e/d/crs)"', "cat < `rev <<< txt.terces/e/d/crs`", "wc -l 0< src/d/e/secret.txt",
])
def test_an_input_redirection_is_expanded_as_the_shell_expands_it(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "ask", command


@pytest.mark.parametrize("command", [
    "grep -rf../outside/secret.txt src", "grep -sf../outside/secret.txt src/a.txt", "file -zm../outside/secret.txt src/a.txt",
    "hexdump -vf../outside/secret.txt src/a.txt", "jq -nL.. '1'", "cat -- -/../../outside/secret.txt",
])
def test_a_value_stuck_to_bundled_short_options_is_read_where_getopt_reads_it(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "ask", command


@pytest.mark.parametrize("command", [
    "diff -rN src/d empty", "diff -r src/d empty", "diff --recursive src/d empty", "md5sum -c src/a.txt",
    "sha256sum --check src/a.txt", "file -f src/a.txt", """jq -n 'import "../outside/secret" as $d; $d'""",
    """jq -n 'include "x"; 1'""", "jq -f src/a.txt src/x.json", "jq --from-file src/a.txt src/x.json",
    "jq -n {imp,}'ort \"../outside/secret\" as $d; $d'",
])
def test_a_program_that_opens_files_the_line_does_not_name_asks(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "ask", command


@pytest.mark.parametrize("command", [
    "cd src && cat a.txt", "cd src/d && ls", "cat < src/a.txt", "grep -rn a src", "head -n1 src/a.txt",
    "diff -r --no-dereference src/d empty", "diff src/a.txt src/a.txt", "md5sum src/a.txt", "jq .a src/x.json",
    "jq -r '.a' src/x.json", "cat < <(cat src/a.txt)",
])
def test_reads_inside_the_workspace_still_run_without_asking(proj: Path, command: str) -> None:
    assert _decide(proj, command) == "allow", command


def test_the_shell_left_in_a_folder_by_an_earlier_call_is_where_relative_paths_start(proj: Path) -> None:
    """The policy follows the shell the tools run (``follow_shell``): after ``cd src/d``, ``cat e/x`` is the link's."""
    policy = _policy(proj)
    where = [str(proj)]
    policy.follow_shell(lambda: where[0])
    assert policy.decide("Bash", {"command": "cat e/secret.txt"}).behavior == "allow"
    where[0] = str(proj / "src" / "d")
    assert policy.decide("Bash", {"command": "cat e/secret.txt"}).behavior == "ask"
    assert policy.decide("Bash", {"command": "cat ../a.txt"}).behavior == "allow"
    gone: list[str | None] = [None]  # a sub-agent's tools, ended: its shell no longer counts, nor is it kept
    policy.follow_shell(lambda: gone[0])
    assert policy.decide("Bash", {"command": "cat e/secret.txt"}).behavior == "ask"  # the first shell still does
    where[0] = str(proj)
    policy.follow_shell(lambda: None)
    assert len(policy.shell_dirs) == 2 and policy.decide("Bash", {"command": "cat e/secret.txt"}).behavior == "allow"


def test_a_cd_in_one_call_does_not_let_the_next_read_through_a_link_unasked(tmp_path: Path) -> None:
    """The real agent in -p with no allow rule: ``cd src/d`` runs (inside), the next call's ``head e/hostname``
    (``e`` -> ``/etc``) is not approved, and a read inside from there still is."""
    proj = tmp_path / "proj"
    (proj / "src" / "d").mkdir(parents=True)
    (proj / "src" / "a.txt").write_text("inside-text\n")
    os.symlink("/etc", proj / "src" / "d" / "e")
    script = tmp_path / "script.json"
    calls = ["cd src/d", "head -c 30 e/hostname", "cat ../a.txt"]
    script.write_text(json.dumps([{"tool_calls": [{"name": "Bash", "arguments": {"command": c}}]} for c in calls]
                                 + [{"text": "done"}]))
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path / "home"))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "agentloop"), "-p", "go", "--trust",
                          "--model", f"scripted:{script}", "--output-format", "stream-json"],
                         cwd=proj, env=env, capture_output=True, text=True, timeout=120)
    results = [b for line in out.stdout.splitlines() if line.startswith("{")
               for b in (json.loads(line).get("message") or {}).get("content") or [] if isinstance(b, dict)
               and b.get("type") == "tool_result"]
    assert len(results) == 3, out.stdout + out.stderr
    assert "not granted" in str(results[1]["content"]), results[1]
    assert "inside-text" in str(results[2]["content"]), results[2]


def test_a_read_deny_rule_holds_after_a_cd_and_for_a_stuck_option_value(proj: Path) -> None:
    """Claude Code applies Read deny rules to the files read-only Bash commands read: ``cd`` or a value stuck to an
    option does not move the file out of the rule's reach."""
    (proj / "secrets").mkdir()
    (proj / "secrets" / "k").write_text("k\n")
    src = SettingsSource(str(proj / ".claude" / "settings.json"), "project",
                         {"permissions": {"allow": [], "deny": ["Read(./secrets/**)"]}})
    policy = PermissionPolicy.from_settings([src], cwd=str(proj), mode="default")
    for command in ("cd secrets && cat k", "grep -rfsecrets/k src", "cat < secrets/k", "cd secrets; head -c1 < k"):
        assert policy.decide("Bash", {"command": command}).behavior != "allow", command
    assert policy.decide("Bash", {"command": "cd src && cat a.txt"}).behavior == "allow"


def test_git_is_not_auto_approved_in_a_repository_a_workspace_git_file_names_elsewhere(tmp_path: Path) -> None:
    """A ``.git`` file (``gitdir: /elsewhere/.git``) in a folder of the workspace makes git read another repository:
    ``cd sub && git cat-file -p HEAD:s.txt`` printed a file of a private repository outside. It asks; a repository
    nested inside the workspace, and the workspace's own, are still read without a question."""
    outside = tmp_path / "private"
    subprocess.run(["git", "init", "-q", str(outside)], check=True)
    (outside / "s.txt").write_text("private\n")
    git = ["git", "-C", str(outside), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "add", "s.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    subprocess.run(["git", "init", "-q", str(proj / "nested")], check=True)
    (proj / "sub" / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    policy = _policy(proj)
    for command in ("cd sub && git cat-file -p HEAD:s.txt", "cd sub; git rev-list --all", "cd sub/ && git branch -a"):
        assert policy.decide("Bash", {"command": command}).behavior == "ask", command
    policy.follow_shell(lambda: str(proj / "sub"))  # the shell an earlier call left in sub
    assert policy.decide("Bash", {"command": "git ls-tree -r HEAD"}).behavior == "ask"
    policy = _policy(proj)
    for command in ("git rev-parse --show-toplevel", "cd nested && git branch -a", "git cat-file -p HEAD:s.txt"):
        assert policy.decide("Bash", {"command": command}).behavior == "allow", command


def test_git_is_not_auto_approved_in_a_nested_repository_that_borrows_objects_from_elsewhere(tmp_path: Path) -> None:
    """``objects/info/alternates`` lends a repository another's objects (``git cat-file --batch-all-objects``
    lists them): a nested repository of the workspace that borrows from outside asks; one that borrows nothing
    does not (negative control)."""
    outside = tmp_path / "private"
    subprocess.run(["git", "init", "-q", str(outside)], check=True)
    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    subprocess.run(["git", "init", "-q", str(proj / "nested")], check=True)
    command = "cd nested && git cat-file --batch-all-objects --batch-check"
    assert _policy(proj).decide("Bash", {"command": command}).behavior == "allow"
    (proj / "nested" / ".git" / "objects" / "info" / "alternates").write_text(f"{outside / '.git' / 'objects'}\n")
    assert _policy(proj).decide("Bash", {"command": command}).behavior == "ask"
