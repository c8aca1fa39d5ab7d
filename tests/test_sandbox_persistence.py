"""Nothing a sandboxed command writes makes a later command outside the sandbox run its code.

Each case plants from inside the real bubblewrap sandbox (a Bash call of a
real agent, the paths computed at run time so no permission rule can see
them), then runs the real git on the host, as the user would next, and checks
that the planted code did not run. The payload of every case touches a file
outside the workspace, which only code running on the host can do.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing,
"Filesystem isolation") describes the same promise: commands write the
working directory, nothing that configures the host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.testing import ScriptedModel, reply

_required = os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") == "1"
_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and not _required, reason=f"no sandbox here: {_why}")


@pytest.fixture
def watch_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write watch and the after-check alone, the backstop: with the creation supervisor on (record 0025),
    these plants are refused before they exist (tests/test_create_supervisor.py)."""
    monkeypatch.setattr(sbx, "SUPERVISE", False)


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="agentloop-wall-test-", dir=root))
    for name in ("proj", "home", "alhome"):
        (d / name).mkdir()
    monkeypatch.setenv("HOME", str(d / "home"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def git_env(base: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(base: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real git on the host, as the user runs it after the session."""
    return subprocess.run(["git", *args], cwd=cwd or base / "proj", env=git_env(base), capture_output=True,
                          text=True, timeout=60)


def repo(base: Path, where: Path | None = None) -> Path:
    w = where or base / "proj"
    w.mkdir(parents=True, exist_ok=True)
    git(base, "init", "-q", "-b", "main", str(w))
    (w / "a.txt").write_text("a\n")
    git(base, "add", "a.txt", cwd=w)
    git(base, "commit", "-qm", "first", cwd=w)
    return w


def sandboxed(base: Path, commands: list[str]) -> list[str]:
    """Each command as one Bash call of a real agent in the default sandbox; the outputs the model got."""
    model = ScriptedModel([reply("", [("Bash", {"command": c})]) for c in commands] + [reply("done")])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
           "AGENTLOOP_HOME": str(base / "alhome")}
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env, model=model,
              permission_mode="bypassPermissions")
    try:
        assert a.sandbox.active
        res = a.ask("go")
    finally:
        a.close()
    outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
    assert len(outs) == len(commands), res.messages
    return outs


def payload(base: Path, tag: str) -> str:
    """A hook or program body that leaves ``base/pwned-TAG`` when it runs."""
    return f"#!/bin/sh\ntouch {base}/pwned-{tag}\n"


def pwned(base: Path) -> list[str]:
    return sorted(p.name for p in base.glob("pwned-*"))


G = "g=.g; g=${g}it; "
"""Each planting line spells .git at run time."""


def test_renaming_git_aside_to_rebuild_it_with_a_hook_is_refused(base: Path) -> None:
    repo(base)
    outs = sandboxed(base, [
        G + f"cp -r $g /tmp/n && printf '{payload(base, 'rename')}' > /tmp/n/hooks/pre-commit && chmod +x /tmp/n/hooks/pre-commit;"
        " mv $g $g.old; mv $g/hooks $g/hooks.old; echo renamed=$?",
        # rebuilt in place instead: everything but what git runs can be replaced
        G + "rm -rf $g/* 2>/dev/null; cp -r /tmp/n/. $g/ 2>/dev/null; ls $g/hooks; echo end",
    ])
    assert "busy" in outs[0].lower() and "renamed=1" in outs[0]  # .git and its hooks are mount points
    assert "end" in outs[1] and "pre-commit\n" not in outs[1]
    (base / "proj" / "b.txt").write_text("b\n")
    git(base, "add", "b.txt")
    r = git(base, "commit", "-qm", "second")
    assert r.returncode == 0, r.stderr
    assert pwned(base) == []
    assert (base / "proj" / ".git" / "HEAD").is_file()


@pytest.mark.usefixtures("watch_alone")
def test_a_planted_commondir_is_moved_aside_before_git_reads_it(base: Path) -> None:
    repo(base)
    outs = sandboxed(base, [
        G + f"mkdir -p evil/hooks && printf '{payload(base, 'commondir')}' > evil/hooks/pre-commit && chmod +x evil/hooks/pre-commit;"
        " cp -r $g/objects $g/refs evil/; printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = ' > evil/config;"
        f" echo '{base}/proj/evil/fsmon' >> evil/config; printf '{payload(base, 'fsmonitor')}' > evil/fsmon; chmod +x evil/fsmon;"
        " echo ../evil > $g/commondir; echo end",
    ])
    assert "commondir" in outs[0] and "moved" in outs[0]
    assert not (base / "proj" / ".git" / "commondir").exists()
    git(base, "status")
    (base / "proj" / "b.txt").write_text("b\n")
    git(base, "add", "b.txt")
    assert git(base, "commit", "-qm", "second").returncode == 0
    assert pwned(base) == []


@pytest.mark.parametrize("supervised", [True, False], ids=["supervised", "mounts-and-watch-alone"])
def test_a_repository_without_hooks_gets_none_planted(base: Path, supervised: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each wall holds on its own: the supervisor refuses the new ``hooks`` folder, and without it (a machine
    where it cannot run) the empty ``hooks`` made ahead and mounted read-only does."""
    monkeypatch.setattr(sbx, "SUPERVISE", supervised)
    repo(base)
    shutil.rmtree(base / "proj" / ".git" / "hooks")
    outs = sandboxed(base, [
        G + f"mkdir -p $g/hooks; printf '{payload(base, 'nohooks')}' > $g/hooks/pre-commit; chmod +x $g/hooks/pre-commit; echo end",
    ])
    assert "end" in outs[0]
    (base / "proj" / "b.txt").write_text("b\n")
    git(base, "add", "b.txt")
    assert git(base, "commit", "-qm", "second").returncode == 0
    assert pwned(base) == []


def _with_submodule(base: Path) -> Path:
    lib = repo(base, base / "lib")
    main = repo(base)
    r = subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub"], cwd=main,
                       env=git_env(base), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    git(base, "commit", "-qm", "sub")
    return main


def test_a_submodules_hooks_and_config_cannot_be_written(base: Path) -> None:
    _with_submodule(base)
    outs = sandboxed(base, [
        G + f"m=$g/modules/sub; printf '{payload(base, 'subhook')}' > $m/hooks/post-checkout; chmod +x $m/hooks/post-checkout;"
        f" printf '{payload(base, 'subfsmon')}' > fsmon; chmod +x fsmon; git -C sub config core.fsmonitor {base}/proj/fsmon;"
        " echo \"[core] fsmonitor = $PWD/fsmon\" >> $m/config; echo end",
    ])
    assert "end" in outs[0] and "Read-only file system" in outs[0]
    git(base, "status")  # recurses into the submodule, with its configuration
    git(base, "status", cwd=base / "proj" / "sub")
    git(base, "checkout", "-q", "HEAD", "--", ".", cwd=base / "proj" / "sub")
    assert pwned(base) == []


@pytest.mark.usefixtures("watch_alone")
def test_a_gitlink_cannot_bring_in_a_planted_repository(base: Path) -> None:
    repo(base)
    outs = sandboxed(base, [
        f"h=$(git rev-parse HEAD); git init -q v; printf '{payload(base, 'nested')}' > v/fsmon; chmod +x v/fsmon;"
        f" git -C v config core.fsmonitor {base}/proj/v/fsmon; git update-index --add --cacheinfo 160000,$h,v; echo end",
    ])
    assert "end" in outs[0] and "moved" in outs[0]
    git(base, "status")  # recurses into the gitlink's repository
    git(base, "status", cwd=base / "proj" / "v")
    assert pwned(base) == []


@pytest.mark.usefixtures("watch_alone")
def test_a_gitdir_file_cannot_point_the_hosts_git_outside_the_workspace(base: Path) -> None:
    """The sandbox's /tmp is a folder on the host while the session lasts: a ``.git`` file naming it
    (its host path is in /proc/self/mountinfo) would lead the user's git there."""
    repo(base)
    model = ScriptedModel([reply("", [("Bash", {"command": G + (
        "t=$(awk '$5==\"/tmp\"{print $4}' /proc/self/mountinfo | head -1); git init -q /tmp/x;"
        f" printf '{payload(base, 'gitdir')}' > /tmp/fsmon; chmod +x /tmp/fsmon; git -C /tmp/x config core.fsmonitor $t/fsmon;"
        " mkdir -p w; echo \"gitdir: $t/x/.git\" > w/.g; mv w/.g w/$g; echo end")})]), reply("done")])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "AGENTLOOP_HOME": str(base / "alhome")}
    a = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
        out = str([m for m in res.messages if m.get("role") == "tool"][0].get("content"))
        assert "end" in out and "outside the workspace" in out
        git(base, "status", cwd=base / "proj" / "w")  # while the session, and its /tmp, are still there
        git(base, "diff", cwd=base / "proj" / "w")
    finally:
        a.close()
    assert pwned(base) == []


def test_info_and_a_configured_hooks_path_are_read_only(base: Path) -> None:
    repo(base)
    (base / "proj" / ".githooks").mkdir()
    git(base, "config", "core.hooksPath", ".githooks")
    git(base, "config", "include.path", "../shared.gitconfig")  # relative to .git: the workspace's root
    outs = sandboxed(base, [
        G + f"printf '{payload(base, 'hookspath')}' > .githooks/pre-commit; chmod +x .githooks/pre-commit;"
        " echo '* diff=x' > $g/info/attributes;"
        f" printf '{payload(base, 'include')}' > inc; chmod +x inc; printf '[core]\\n\\tfsmonitor = {base}/proj/inc\\n' > shared.gitconfig;"
        " echo end",
    ])
    assert "end" in outs[0] and "Read-only file system" in outs[0]
    assert not (base / "proj" / ".git" / "info" / "attributes").exists()
    assert not (base / "proj" / "shared.gitconfig").exists()  # a missing include target that appeared is moved aside
    (base / "proj" / "b.txt").write_text("b\n")
    git(base, "add", "b.txt")
    assert git(base, "commit", "-qm", "second").returncode == 0
    assert pwned(base) == []


@pytest.mark.usefixtures("watch_alone")
def test_a_new_repository_with_a_program_in_its_config_is_moved_aside_but_a_plain_one_stays(base: Path) -> None:
    outs = sandboxed(base, [
        f"git init -q plain && git init -q bad && printf '{payload(base, 'newrepo')}' > fsmon && chmod +x fsmon"
        f" && git -C bad config core.fsmonitor {base}/proj/fsmon && echo end",
    ])
    assert "end" in outs[0] and "core.fsmonitor" in outs[0]
    assert (base / "proj" / "plain" / ".git").is_dir()  # what git init writes stays
    assert not (base / "proj" / "bad" / ".git").exists()
    git(base, "status", cwd=base / "proj" / "bad")
    assert pwned(base) == []


def test_ordinary_git_work_still_commits_inside_the_sandbox(base: Path) -> None:
    repo(base)
    git(base, "config", "--global", "user.name", "Sandbox Person")
    git(base, "config", "--global", "user.email", "sp@example.com")
    outs = sandboxed(base, [
        "echo c > c.txt && git add c.txt && git commit -qm third && git log --format=%an:%s -1"
        " && git checkout -qb topic && git stash list | wc -l && git status --short | wc -l",
    ])
    assert outs[0].splitlines()[:3] == ["Sandbox Person:third", "0", "0"], outs[0]
    assert git(base, "log", "--format=%s", "-1").stdout.strip() == "third"


@pytest.mark.usefixtures("watch_alone")
def test_a_hooks_folder_that_is_a_link_cannot_be_swapped_or_written(base: Path) -> None:
    repo(base)
    (base / "proj" / ".githooks").mkdir()
    shutil.rmtree(base / "proj" / ".git" / "hooks")
    (base / "proj" / ".git" / "hooks").symlink_to("../.githooks")
    outs = sandboxed(base, [
        G + f"printf '{payload(base, 'linktarget')}' > .githooks/pre-commit; rm $g/hooks; mkdir $g/hooks;"
        f" printf '{payload(base, 'linkswap')}' > $g/hooks/pre-commit; chmod +x $g/hooks/pre-commit; echo end",
    ])
    assert "end" in outs[0] and "put back" in outs[0]
    assert os.readlink(base / "proj" / ".git" / "hooks") == "../.githooks"
    (base / "proj" / "b.txt").write_text("b\n")
    git(base, "add", "b.txt")
    assert git(base, "commit", "-qm", "second").returncode == 0
    assert pwned(base) == []


@pytest.mark.usefixtures("watch_alone")
def test_a_new_repository_whose_config_git_would_read_another_way_is_moved_aside(base: Path) -> None:
    """A key on its section's line, or a value continued on the next line, is read by git: such a
    configuration is never taken for one that ``git init`` wrote."""
    outs = sandboxed(base, [
        G + f"printf '{payload(base, 'oddconfig')}' > fsmon && chmod +x fsmon; git init -q odd;"
        f" printf '[core] fsmonitor = {base}/proj/fsmon\\n' >> odd/$g/config; echo end",
    ])
    assert "end" in outs[0] and "moved" in outs[0]
    git(base, "status", cwd=base / "proj" / "odd")
    assert pwned(base) == []
