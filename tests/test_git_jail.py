"""agentloop's own git runs nothing a repository configures on the host, whatever the spelling.

Git always reads a repository's ``.git/config``, and any setting there may
name a program: a filter driver (its name may hold ``=`` or ``.``), the
fsmonitor, hooks, a textconv or external diff, a pager, an ssh command, and
files brought in by ``include.path`` and ``includeIf`` that name more. Git's
own documentation (git-config, "CONFIGURATION FILE": section names are not
case-sensitive, subsection names are, and ``-c`` splits at the first ``=``)
is why no list of settings to switch off can be complete. So the git
agentloop runs for itself runs in the git jail (decision 0013), and these
tests plant each of those programs, with odd spellings, and look for what
they would leave on the host.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.agent import spawn
from agentloop.agent.sandbox import bubblewrap as sbx

_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                reason=f"no sandbox here: {_why}")

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789", "OPENAI_API_KEY": "sk-openai-planted-0123456789"}

HOOKS = ("post-index-change", "post-checkout", "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
         "reference-transaction", "pre-auto-gc", "post-rewrite", "post-merge")

# Written as a hostile repository would, in spellings git accepts: a driver named with "=" and one with
# dots, a section and keys in mixed case, the old [section.subsection] form with a value continued on the
# next line, programs brought in by include.path and includeIf.
CONFIG = """[core]
\trepositoryformatversion = 0
\tbare = false
\tFSMonitor = sh tools/mark.sh fsmonitor
\tpager = sh tools/mark.sh pager
\tsshCommand = sh tools/mark.sh ssh
[filter "a=b"]
\tclean = sh tools/mark.sh filter-eq
\tsmudge = sh tools/mark.sh filter-eq
[filter "x.y.z"]
\tclean = sh tools/mark.sh filter-dots
\tsmudge = sh tools/mark.sh filter-dots
[Filter "Mixed"]
\tCLEAN = sh tools/mark.sh filter-mixed
\tSmudge = sh tools/mark.sh filter-mixed
[filter.legacy]
\tclean = sh tools/mark.sh \\
filter-legacy
\tsmudge = sh tools/mark.sh filter-legacy
[diff "tc"]
\ttextconv = sh tools/mark.sh textconv
[diff]
\texternal = sh tools/mark.sh external-diff
[log]
\tshowSignature = true
[gpg]
\tprogram = sh tools/mark.sh gpg
[include]
\tpath = included.cfg
[includeIf "gitdir:/"]
\tpath = conditional.cfg
[user]
\temail = t@example.com
\tname = T
"""
INCLUDED = """[filter "inc"]
\tclean = sh tools/mark.sh filter-include
\tsmudge = sh tools/mark.sh filter-include
[core]
\thooksPath = hooks2
"""
CONDITIONAL = """[filter "cond"]
\tclean = sh tools/mark.sh filter-includeif
\tsmudge = sh tools/mark.sh filter-includeif
"""
ATTRIBUTES = """eq.txt filter=a=b diff=tc
dots.txt filter=x.y.z diff=tc
mixed.txt filter=Mixed diff=tc
inc.txt filter=inc diff=tc
cond.txt filter=cond diff=tc
legacy.txt filter=legacy diff=tc
"""
FILES = ("eq.txt", "dots.txt", "mixed.txt", "inc.txt", "cond.txt", "legacy.txt")


def _plain_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


def hostile_repo(root: Path) -> tuple[Path, Path]:
    """(a repository, the host folder its programs leave a marker in): every program it configures
    writes ``marks/NAME`` with its environment, and ``.ran-NAME`` in the folder it runs in."""
    repo, marks = root / "work", root / "marks"
    marks.mkdir()
    (repo / "tools").mkdir(parents=True)
    (repo / "tools" / "mark.sh").write_text(
        f'#!/bin/sh\nenv > "{marks}/$1"; cat /proc/$PPID/environ >> "{marks}/$1" 2>/dev/null\n'
        'touch ".ran-$1" 2>/dev/null\n[ "$1" = ssh ] || exec cat\n')
    for f in FILES:
        (repo / f).write_text(f"{f} one\n")
    (repo / ".gitattributes").write_text(ATTRIBUTES)
    assert _plain_git(repo, "init", "-q", "-b", "main").returncode == 0
    assert _plain_git(repo, "add", "-A").returncode == 0
    assert _plain_git(repo, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "start").returncode == 0
    git_dir = repo / ".git"
    (git_dir / "config").write_text(CONFIG)
    (git_dir / "included.cfg").write_text(INCLUDED)
    (git_dir / "conditional.cfg").write_text(CONDITIONAL)
    for folder in (git_dir / "hooks", repo / "hooks2"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            (folder / hook).write_text(f'#!/bin/sh\nsh "{repo}/tools/mark.sh" hook-{hook} </dev/null\n')
            (folder / hook).chmod(0o755)
    for i, f in enumerate(FILES):  # touched: the same size, a new time, so git must read each through its filter
        (repo / f).write_text(f"{f} two\n" if i % 2 else f"{f} one\n")
        os.utime(repo / f, (2_000_000_000 + i, 2_000_000_000 + i))
    (repo / "new.txt").write_text("untracked\n")
    return repo, marks


def _left(repo: Path, marks: Path) -> list[str]:
    return sorted(os.listdir(marks)) + sorted(str(p.relative_to(repo)) for p in repo.rglob(".ran-*"))


def _agentloop(cwd: Path, model: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloop", "--model", model, "-p", "hi", *extra],
                          cwd=cwd, capture_output=True, text=True, timeout=180, env={**os.environ, **KEYS})


def test_the_hostile_repository_runs_its_programs_under_plain_git(tmp_path: Path) -> None:
    """The control: the same repository under plain git runs each planted program (the traps are live)."""
    repo, marks = hostile_repo(tmp_path)
    _plain_git(repo, "status")
    _plain_git(repo, "diff")
    _plain_git(repo, "log", "-p", "-1")
    _plain_git(repo, "ls-remote", "ssh://example.invalid/x")
    _plain_git(repo, "commit", "-qam", "x")
    ran = set(os.listdir(marks))
    assert {"fsmonitor", "filter-eq", "filter-dots", "filter-mixed", "filter-include", "filter-includeif", "filter-legacy",
            "external-diff", "ssh", "hook-pre-commit", "hook-post-commit"} <= ran, ran


def test_a_plain_session_in_an_untrusted_folder_runs_none_of_the_repositorys_programs(tmp_path: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    """``agentloop -p hi``: the session-start git status runs in the jail with the repository's programs off."""
    repo, marks = hostile_repo(tmp_path)
    p = _agentloop(repo, scripted([{"text": "hello"}]))
    assert p.returncode == 0, p.stderr
    (transcript,) = Path(os.environ["AGENTLOOP_HOME"]).glob("projects/*/sessions/*.jsonl")
    assert "Git status when the session started" in transcript.read_text()  # git did run, in the jail
    assert _left(repo, marks) == []


def test_a_sub_agents_worktree_and_merge_back_run_none_of_the_repositorys_programs(tmp_path: Path, scripted) -> None:  # type: ignore[no-untyped-def]
    """The Agent tool's worktree: carry-over (``add -A``, commit), the child's edit, merge-back (``apply``)."""
    repo, marks = hostile_repo(tmp_path)
    model = scripted([
        {"tool_calls": [{"name": "Agent", "arguments": {"description": "edit", "prompt": "change eq.txt", "isolation": "worktree"}}]},
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": "eq.txt"}}]},
        {"tool_calls": [{"name": "Write", "arguments": {"file_path": "eq.txt", "content": "eq.txt three\n"}}]},
        {"text": "changed"},
        {"text": "done"},
    ])
    p = _agentloop(repo, model, "--permission-mode", "bypassPermissions")
    assert p.returncode == 0, p.stderr
    (transcript,) = Path(os.environ["AGENTLOOP_HOME"]).glob("projects/*/sessions/*.jsonl")
    assert '"applied":"applied"' in transcript.read_text()  # carried over, changed, merged back
    assert (repo / "eq.txt").read_text() == "eq.txt three\n", p.stdout  # merged back into the working tree
    assert (repo / "new.txt").read_text() == "untracked\n"
    assert _left(repo, marks) == []


def test_a_program_git_runs_for_agentloop_is_jailed(tmp_path: Path) -> None:
    """Whatever git runs for agentloop (here an alias, which no switch turns off) runs with no key, no
    network, no home, nothing of the host's ``/tmp`` and, for a read, nothing writable."""
    repo, marks = hostile_repo(tmp_path)
    home = Path(os.environ["HOME"])
    (home / "secret.txt").write_text("home secret\n")
    probe = repo / "tools" / "probe.sh"
    probe.write_text(
        f'#!/bin/sh\necho "env:$(env | grep -c planted)"; echo "home:$(cat {home}/secret.txt 2>&1)"\n'
        f'echo "marks:$(touch {marks}/alias 2>&1 && echo wrote)"; echo "repo:$(touch {repo}/.ran-alias 2>&1 && echo wrote)"\n'
        f'echo "pids:$(test -e /proc/{os.getpid()}/environ && echo seen)"\n'
        'echo "net:$(cat /proc/net/dev | grep -vc lo:)"\n')
    with (repo / ".git" / "config").open("a") as f:
        f.write('[alias]\n\tprobe = "!sh tools/probe.sh"\n')
    env = {**os.environ, **KEYS}
    out = spawn.git(["probe"], cwd=str(repo), env=env).stdout
    said = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert said["env"] == "0", out
    assert "home secret" not in said["home"], out
    assert "wrote" not in said["marks"] and "wrote" not in said["repo"], out
    assert said["pids"] == "", out  # a pid namespace of its own: agentloop's /proc entry is not there
    assert said["net"] == "2", out  # the header lines only: no interface but loopback
    assert _left(repo, marks) == []


def test_without_a_sandbox_agentloop_runs_no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no sandbox starts, git is not run on the host instead (no library reading the repository either:
    dulwich, for one, runs configured filter drivers): the call fails, and the session's git snapshot says
    why in one line."""
    from agentloop.agent.sandbox.gitjail import GitUnconfined
    from agentloop.agent.system_prompt import git_snapshot

    repo, marks = hostile_repo(tmp_path)
    monkeypatch.setattr(spawn.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(GitUnconfined, match="only inside a sandbox"):
        spawn.git(["status"], cwd=str(repo))
    said = git_snapshot(str(repo), dict(os.environ))  # the model is told why there is no status, by name
    assert said == "Git: not read: agentloop runs its own git only inside a sandbox, and bubblewrap (bwrap) is not installed"
    assert _left(repo, marks) == []



def test_inside_the_jail_the_repositorys_programs_are_switched_off_too(tmp_path: Path) -> None:
    """Defence in depth: with the repository writable, status, diff, log -p, add and commit leave no marker
    even where the jail would let one be written (the hooks, fsmonitor, filters, textconv, external diff
    and signature checks are switched off by exact key, a driver named ``a=b`` included)."""
    repo, marks = hostile_repo(tmp_path)
    ident = spawn.git_identity(str(repo))
    for args in (["status"], ["diff"], ["log", "-p", "-1"], ["add", "-A"], [*ident, "commit", "-qm", "x"]):
        p = spawn.git(args, cwd=str(repo), write=True)
        assert p.returncode == 0, (args, p.stderr)
        assert _left(repo, marks) == [], args
    assert _plain_git(repo, "log", "--format=%ae", "-1").stdout.strip() == "t@example.com"  # the repository's identity


def test_git_started_any_other_way_by_agentloop_is_refused(tmp_path: Path) -> None:
    """The spawn path's other door (``popen``) does not start git on the host: git goes through the jail."""
    with pytest.raises(ValueError, match="spawn.git"):
        spawn.popen(["git", "status"], cwd=str(tmp_path), env=None)
    with pytest.raises(ValueError, match="spawn.git"):
        spawn.popen(["/usr/bin/git", "status"], cwd=str(tmp_path), env=None)


def test_a_program_in_a_call_that_writes_cannot_change_what_git_runs_later(tmp_path: Path) -> None:
    """In a call where the repository is writable, its config, hooks and info stay read-only in the jail:
    whatever ran cannot leave a hook or a setting for the user's next git on the host."""
    repo, marks = hostile_repo(tmp_path)
    (repo / "tools" / "plant.sh").write_text(
        'echo "[core]\\n\\tfsmonitor = sh planted.sh" >> .git/config 2>/dev/null && echo config-written\n'
        'touch .git/hooks/pre-push 2>/dev/null && echo hook-written\n'
        'touch .git/info/attributes 2>/dev/null && echo info-written\n'
        'touch planted-in-work-tree && echo work-tree-written\n')
    before = (repo / ".git" / "config").read_text()
    with (repo / ".git" / "config").open("a") as f:
        f.write('[alias]\n\tplant = "!sh tools/plant.sh"\n')
    out = spawn.git(["plant"], cwd=str(repo), write=True).stdout.split()
    assert out == ["work-tree-written"], out  # the work tree is writable, as the call asked
    assert (repo / ".git" / "config").read_text().startswith(before) and "planted" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".git" / "hooks" / "pre-push").exists() and not (repo / ".git" / "info" / "attributes").exists()


def test_a_sub_agent_that_changed_nothing_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    from agentloop.agent.subagents.worktree import Worktree

    repo = tmp_path / "r"
    repo.mkdir()
    _plain_git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    _plain_git(repo, "add", "-A")
    _plain_git(repo, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "start")
    wt = Worktree.create(str(repo), "agent-x")
    assert Path(wt.path, "a.txt").read_text() == "a\n"
    assert wt.finish("agent-x") == {"changed": False, "removed": True}
    assert not Path(wt.scratch).exists()
    assert "agentloop/agent-x" not in _plain_git(repo, "branch", "--list").stdout
    assert _plain_git(repo, "worktree", "list").stdout.count("\n") == 1


def test_without_a_sandbox_a_worktree_is_refused_saying_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentloop.agent.subagents.worktree import Worktree, has_commit
    from agentloop.tools import ToolError

    repo, marks = hostile_repo(tmp_path)
    monkeypatch.setattr(spawn.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(ToolError, match='isolation "worktree" is not available: .*bubblewrap'):
        Worktree.create(str(repo), "agent-y")
    assert not has_commit(str(repo))  # so a child that would get a worktree by default works in the parent's folder
    assert _left(repo, marks) == []


def test_agentloops_home_inside_a_repository_stays_hidden_from_its_programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, marks = hostile_repo(tmp_path)
    home = repo / "al-home"
    home.mkdir()
    (home / "session.jsonl").write_text("a record\n")
    monkeypatch.setenv("AGENTLOOP_HOME", str(home))
    with (repo / ".git" / "config").open("a") as f:
        f.write('[alias]\n\tpeek = "!cat al-home/session.jsonl; cat eq.txt"\n')
    out = spawn.git(["peek"], cwd=str(repo)).stdout
    assert "eq.txt" in out and "a record" not in out, out  # the repository shows; agentloop's home inside it does not


def test_a_worktree_on_its_own_branch_has_the_filters_its_branch_brings_switched_off(tmp_path: Path) -> None:
    """git-config, "Conditional includes": ``includeIf "onbranch:..."`` is read only on a matching branch, and a
    worktree shares its repository's ``config`` on a branch of its own. A filter brought in only on the
    sub-agent's branch is still switched off in its worktree (the list of drivers is the worktree's own, not
    the one remembered for the main work tree), so even inside the jail it does not run."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("*.txt filter=ob\n")
    wt = tmp_path / "wt"
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "start"],
                 ["config", "includeIf.onbranch:agentloop-*.path", str(repo / ".git" / "ob.cfg")],
                 ["worktree", "add", "-q", "-b", "agentloop-t1", str(wt)]):
        assert _plain_git(repo, *args).returncode == 0, args
    (repo / ".git" / "ob.cfg").write_text(f'[filter "ob"]\n\tclean = sh -c "echo ran >> {wt}/ran.txt; cat"\n')
    assert spawn.filter_drivers(str(repo)) == []  # remembered for the main work tree, on its own branch
    assert spawn.filter_drivers(str(wt)) == ["ob"]
    (wt / "f.txt").write_text("two\n")
    p = spawn.git(["add", "-A"], cwd=str(wt), write=True)
    assert p.returncode == 0, p.stderr
    assert not (wt / "ran.txt").exists()
    _plain_git(wt, "add", "-A")  # the control: the user's git on that branch runs it
    assert (wt / "ran.txt").exists()


def test_a_child_made_from_agentloops_environment_gets_no_key_whatever_the_variables_name(tmp_path: Path) -> None:
    """``--api-key-env`` may name any variable (``LLM_GATEWAY``: no secret-looking part): once the command holds
    its keys in memory, the environment every child is made from leaves it out by name and value, even a
    child whose environment is this process's own (``spawn.run`` with none given). A plain variable is there
    (the control)."""
    code = ("import sys\nfrom agentloop.cli.held_keys import hold_keys\nhold_keys(['--api-key-env', 'LLM_GATEWAY'])\n"
            "from agentloop.agent import spawn\n"
            "sys.stdout.write(spawn.run(['env'], cwd=sys.argv[1], env=None, timeout=30)[1].decode())\n")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "LLM_GATEWAY": "gw0123456789abcdef", "A_PLAIN_SETTING": "kept"})
    assert p.returncode == 0, p.stderr
    assert "A_PLAIN_SETTING=kept" in p.stdout
    assert "gw0123456789abcdef" not in p.stdout and "LLM_GATEWAY" not in p.stdout


def test_agentloops_git_starts_with_an_allow_list_of_variables(tmp_path: Path) -> None:
    """Whatever the environment it is given (a project's settings ``env`` among it), the jail's git has only
    ``PATH``, ``HOME``, the locale and its own settings: not ``GIT_CONFIG_PARAMETERS`` (git-config's ``-c``
    passed on), ``GIT_COMMON_DIR``, ``LD_PRELOAD`` or ``BASH_ENV``. An alias (``!env``) prints what it has."""
    env = {**os.environ, "LANG": "C.UTF-8", "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='sh evil'",
           "GIT_COMMON_DIR": str(tmp_path), "LD_PRELOAD": str(tmp_path / "x.so"), "BASH_ENV": str(tmp_path / "x.sh"),
           "A_PLAIN_SETTING": "dropped"}
    p = spawn.git(["-c", "alias.show-env=!env", "show-env"], cwd=str(tmp_path), env=env)
    assert p.returncode == 0, p.stderr
    names = {line.split("=", 1)[0] for line in p.stdout.splitlines() if "=" in line}
    assert {"PATH", "LANG", "GIT_CONFIG_NOSYSTEM"} <= names
    assert not {"GIT_COMMON_DIR", "LD_PRELOAD", "BASH_ENV", "A_PLAIN_SETTING"} & names
    assert "sh evil" not in p.stdout  # git's own -c list is passed on to the alias, without the planted one


def test_a_sub_agents_worktree_is_checked_out_with_its_own_branchs_filters_switched_off(tmp_path: Path) -> None:
    """The worktree's files are written by a git that reads the worktree's configuration (its branch,
    ``agentloop/...``, may include a smudge filter through ``includeIf "onbranch:"``), so that filter is on
    the list switched off; written by ``worktree add`` in the main work tree it was not, and ran in the jail."""
    from agentloop.agent.subagents.worktree import Worktree

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("*.txt filter=ob\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "start"],
                 ["config", "includeIf.onbranch:agentloop/**.path", str(repo / ".git" / "ob.cfg")]):
        assert _plain_git(repo, *args).returncode == 0, args
    mark = repo / ".git" / "ran-smudge"
    (repo / ".git" / "ob.cfg").write_text(f'[filter "ob"]\n\tsmudge = sh -c "echo ran >> {mark}; cat"\n\tclean = cat\n')
    wt = Worktree.create(str(repo), "probe1")
    try:
        assert (Path(wt.path) / "f.txt").read_text() == "one\n"
        assert not mark.exists()
        (Path(wt.path) / "f.txt").unlink()
        assert _plain_git(Path(wt.path), "checkout", "-q", "--", "f.txt").returncode == 0
        assert mark.exists()  # the control: the user's git in that worktree runs it
    finally:
        wt.discard()


def test_an_object_store_a_repository_borrows_stays_read_only_in_a_call_that_writes(tmp_path: Path) -> None:
    """``objects/info/alternates`` (gitrepository-layout) is the repository's own file and may name any folder,
    a home among them; git only reads what it names. So the jail shows it read-only even in a call that
    writes: a program git runs there (an alias) cannot write it, while it can write the repository (the
    control)."""
    repo, store = tmp_path / "repo", tmp_path / "home-of-someone" / "objects"
    repo.mkdir()
    store.mkdir(parents=True)
    assert _plain_git(repo, "init", "-q").returncode == 0
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{store}\n")
    alias = f"alias.t=!touch {store}/planted; touch {repo}/written"
    p = spawn.git(["-c", alias, "t"], cwd=str(repo), write=True)
    assert (repo / "written").exists(), p.stderr
    assert not (store / "planted").exists()
