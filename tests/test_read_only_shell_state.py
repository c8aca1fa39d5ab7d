"""A read-only Bash line is judged in the state the shell really starts with: the environment Bash gets
(a settings file's ``env`` included), and bash's own reading of builtin options.

Claude Code's documented behaviour: read-only commands run without a prompt only while they stay inside the
working directory and the added directories (code.claude.com/docs/en/permissions, "Working directories"), and
a settings file's ``env`` sets "environment variables that will be applied to every session" (settings
reference, ``env``). Such a variable can change what a read-only command runs or opens: ``BASH_ENV`` is a script
bash runs before the line, ``PATH`` chooses which ``cat`` runs, ``CDPATH`` where ``cd x`` leads, ``GIT_DIR``
which repository git reads. So a line is auto-approved only when every variable a settings file set is on a
short allow-list (``LANG``, ``LC_*``, ``TZ``... with values naming no file); any other asks, and says why.

Each call starts a fresh ``bash -c`` (only the folder carries over, judged by ``shell_dirs``): aliases,
functions, ``shopt`` and ``set -o`` of an earlier call are gone, so only the environment and the folder are
state to judge. The tests run the real bash to show each refused spelling does what the check fears.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.config.settings import SettingsSource


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "src").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    (p / "bin").mkdir()
    (p / "first.sh").write_text("touch ran-first\n")
    cat = p / "bin" / "cat"
    cat.write_text("#!/bin/sh\ntouch ran-cat\n")
    cat.chmod(0o755)
    (p / "rg.cfg").write_text("--pre=./bin/cat\n")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "secret.txt").write_text("s\n")
    return p


def _policy(proj: Path, env: dict[str, str] | None) -> PermissionPolicy:
    src = SettingsSource(str(proj / ".claude" / "settings.json"), "project", {"permissions": {"allow": [], "deny": []}})
    policy = PermissionPolicy.from_settings([src], cwd=str(proj), mode="default")
    policy.follow_env(env)
    return policy


def _bash(proj: Path, command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=proj, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=20)


ORDINARY = ["cat src/a.txt", "ls -la src", "grep -rn a src", "head -n 1 src/a.txt", "wc -l src/a.txt",
            "find . -name '*.txt'", "sort src/a.txt | uniq -c", "cd src && cat a.txt", "printf '%s\\n' -v"]


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_reads_run_unasked_in_an_environment_settings_left_alone(proj: Path, command: str) -> None:
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC", "LANG": "C.UTF-8", "NO_COLOR": "1"}
    assert _policy(proj, env).decide("Bash", {"command": command}).behavior == "allow"
    assert _policy(proj, None).decide("Bash", {"command": command}).behavior == "allow"


def test_a_script_bash_env_names_makes_an_ordinary_read_ask(proj: Path) -> None:
    env = {**os.environ, "BASH_ENV": str(proj / "first.sh")}
    _bash(proj, "cat src/a.txt", env)
    assert (proj / "ran-first").exists()  # bash -c ran the script before the read
    d = _policy(proj, env).decide("Bash", {"command": "cat src/a.txt"})
    assert d.behavior == "ask" and "BASH_ENV" in d.reason


def test_a_path_settings_set_makes_cat_ask(proj: Path) -> None:
    env = {**os.environ, "PATH": f"{proj / 'bin'}:{os.environ['PATH']}"}
    _bash(proj, "cat src/a.txt", env)
    assert (proj / "ran-cat").exists()  # the workspace's cat ran, not the system's
    d = _policy(proj, env).decide("Bash", {"command": "cat src/a.txt"})
    assert d.behavior == "ask" and "PATH" in d.reason


def test_cd_is_followed_through_the_cdpath_bash_gets_not_this_process_s(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a ``CDPATH`` the user chose (their own settings' ``env``: trusted) is followed where Bash's ``cd`` follows it."""
    monkeypatch.delenv("CDPATH", raising=False)
    env = {**os.environ, "CDPATH": str(proj.parent / "outside")}
    assert _bash(proj, "cd sub >/dev/null && cat secret.txt", env).stdout == "s\n"
    assert _policy(proj, env).decide("Bash", {"command": "cd sub && cat secret.txt"}).behavior == "ask"
    trusted = _policy(proj, env)
    trusted.follow_env(env, env)
    assert trusted.decide("Bash", {"command": "cd sub && cat secret.txt"}).behavior == "ask"
    assert trusted.decide("Bash", {"command": "cd src && cat a.txt"}).behavior == "allow"


@pytest.mark.parametrize("name,value", [
    ("GIT_DIR", "/tmp"), ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "/tmp"), ("GIT_TRACE", "/tmp/trace"),
    ("RIPGREP_CONFIG_PATH", "rg.cfg"), ("MAGIC", "/etc/magic"), ("LD_PRELOAD", "./x.so"), ("GCONV_PATH", "."),
    ("LC_ALL", "/tmp/locale"), ("TZ", ":/etc/shadow"), ("HOME", "/tmp"), ("SOMETHING_NEW", "1"),
])
def test_a_variable_a_settings_file_set_outside_the_allow_list_makes_reads_ask(proj: Path, name: str, value: str) -> None:
    env = {**os.environ, name: value}
    if os.environ.get(name) == value:
        pytest.skip("this process already has it")
    for command in ("cat src/a.txt", "rg a src", "git rev-parse HEAD", "file src/a.txt"):
        d = _policy(proj, env).decide("Bash", {"command": command})
        assert d.behavior == "ask" and name in d.reason, (command, d)


@pytest.mark.parametrize("command", [
    "printf -v'a[$(touch pwn)]' x", "printf -vv'a[$(touch pwn)]' x", "printf \"-va[\\$(touch pwn)]\" x",
    "printf -v'a[`touch pwn`]' x", "printf -vx a",
])
def test_printf_with_a_variable_stuck_to_v_asks(proj: Path, command: str) -> None:
    """bash's printf reads ``-vNAME`` as ``-v NAME``; a subscript in NAME runs a command."""
    if "pwn" in command:
        _bash(proj, command)
        assert (proj / "pwn").exists()
        (proj / "pwn").unlink()
    assert _policy(proj, None).decide("Bash", {"command": command}).behavior == "ask"


@pytest.mark.parametrize("project_env,expected", [({"BASH_ENV": "first.sh"}, "ask"), ({"CDPATH": "/"}, "ask"),
                                                  ({"LC_ALL": "C"}, "allow"), ({}, "allow")])
def test_an_agent_judges_read_only_lines_in_the_environment_its_bash_gets(tmp_path: Path, project_env: dict[str, str],
                                                                          expected: str) -> None:
    """Through the agent's own wiring (``toolbox._policy``): a trusted project's settings ``env`` reaches Bash, so a
    steering variable there makes a plain ``cat`` ask; the user's own settings ``env`` (a tool folder) and the
    environment the agent was given are the user's choice and keep ordinary reads unasked."""
    import json

    from agentloop.agent.agent import Agent

    p = tmp_path / "proj"
    (p / "src").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    (p / ".claude").mkdir()
    (p / ".claude" / "settings.json").write_text(json.dumps({"env": project_env}))
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    (home / ".claude" / "settings.json").write_text(json.dumps({"env": {"MY_TOOL_DIR": "/opt/tool"}}))
    script = tmp_path / "script.json"
    script.write_text("[]")
    a = Agent(cwd=str(p), home=str(home), model=f"scripted:{script}", trust=True,
              env={"PATH": "/usr/bin:/bin", "HOME": str(home), "SOME_USER_VAR": "x"})
    try:
        assert a.toolbox.setup.env.get("MY_TOOL_DIR") == "/opt/tool"
        assert a.policy.decide("Bash", {"command": "cat src/a.txt"}).behavior == expected
    finally:
        a.close()


def _repo_with_a_secret_above(tmp_path: Path) -> Path:
    top = tmp_path / "mono"
    (top / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    (top / "secret.txt").write_text("above the workspace\n")
    (top / "sub" / "a.txt").write_text("a\n")
    git = ["git", "-C", str(top), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    return top


@pytest.mark.parametrize("command", ["git cat-file -p HEAD:secret.txt", "git ls-tree -r HEAD", "git rev-parse HEAD",
                                     "git rev-list --all"])
def test_git_asks_in_a_workspace_that_is_a_folder_of_a_larger_repository(tmp_path: Path, command: str) -> None:
    """With the workspace a subfolder of a repository, git reads the whole repository: ``git cat-file -p
    HEAD:secret.txt`` printed a file above the workspace. It asks; started at the repository's top, git's
    read-only commands still run unasked (negative control). An empty ``.git`` folder in the workspace does not
    hide the repository above: git passes over it, and so does the check."""
    top = _repo_with_a_secret_above(tmp_path)
    sub = top / "sub"
    if "secret" in command:
        assert subprocess.run(["git", *command.split()[1:]], cwd=sub, capture_output=True, text=True).stdout == "above the workspace\n"
    at_top = PermissionPolicy.from_settings([], cwd=str(top), mode="default")
    assert at_top.decide("Bash", {"command": command}).behavior == "allow"
    in_sub = PermissionPolicy.from_settings([], cwd=str(sub), mode="default")
    d = in_sub.decide("Bash", {"command": command})
    assert d.behavior == "ask" and "repository outside the workspace" in d.reason
    assert in_sub.decide("Bash", {"command": "cat a.txt"}).behavior == "allow"
    (sub / ".git").mkdir()  # not a git directory: git keeps looking above
    assert subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=sub, capture_output=True, text=True).stdout.strip() == str(top)
    d = PermissionPolicy.from_settings([], cwd=str(sub), mode="default").decide("Bash", {"command": command})
    assert d.behavior == "ask"


def test_a_line_with_a_nul_byte_is_not_auto_approved(proj: Path) -> None:
    """A NUL ends a C string: whatever passes the line on as one runs a prefix of what was judged, so such a
    line asks; the same line without it still runs unasked (negative control)."""
    policy = _policy(proj, None)
    assert policy.decide("Bash", {"command": "cat src/a.txt\x00/etc/passwd"}).behavior == "ask"
    assert policy.decide("Bash", {"command": "cat src/a.txt"}).behavior == "allow"


def test_a_call_leaves_no_shell_state_but_its_folder_for_the_next(proj: Path) -> None:
    """The check judges each line in a fresh bash (with the folder an earlier ``cd`` left): that holds only while
    Bash starts a new shell per call. A function, an alias, ``shopt``/``set -o`` options, ``hash -p`` and a ``PATH``
    set in one call are gone in the next, so an approved ``cat`` is the system's cat; the folder carries over."""
    from agentloop.agent.tools.catalog import builtin_registry
    from agentloop.agent.tools.workspace import Workspace
    from agentloop.events import ToolCall

    reg = builtin_registry(Workspace(str(proj)), spill_dir=str(proj.parent / "spill"), shell_timeout_s=30)
    setup = ("cat() { touch ran-fn; }; export -f cat; alias cat='touch ran-alias'; shopt -s expand_aliases globstar "
             "dotglob nocaseglob; set -o noglob; hash -p /usr/bin/touch cat; export PATH=\"$PWD/bin:$PATH\"; cd src")
    reg.invoke(ToolCall("0", "Bash", {"command": f"{setup}\ncat a.txt"}))
    assert (proj / "src" / "ran-alias").exists()  # within one call, the alias does shadow cat
    (proj / "src" / "ran-alias").unlink()
    reg.invoke(ToolCall("1", "Bash", {"command": "cd .."}))
    reg.invoke(ToolCall("1", "Bash", {"command": setup}))
    out = reg.invoke(ToolCall("2", "Bash", {"command": "cat a.txt; shopt globstar dotglob nocaseglob; set -o | grep noglob"}))
    lines = out.content.splitlines()
    assert lines[0] == "a"  # cat a.txt ran in src: the folder carried over
    assert all(line.split()[-1] == "off" for line in lines[1:]) and len(lines) == 5, lines
    assert not any((proj / "src" / n).exists() or (proj / n).exists() for n in ("ran-fn", "ran-alias", "ran-cat"))
    assert _policy(proj, None).decide("Bash", {"command": "cat src/a.txt"}).behavior == "allow"


GLOB_SPELLINGS = ["cat src/d/[]-f]/secret.txt", "cat src/d/[e\\]]/secret.txt", "cat src/d/[[:alpha:]\\]]/secret.txt",
                  "cat src/d/[]e]/secret.txt", "cat a=/[e]/secret.txt", "cat a=/*/secret.txt", "cat a=/?/secret.txt",
                  "cat src/d/\"[\"e]*/secret.txt"]


@pytest.mark.parametrize("command", GLOB_SPELLINGS)
def test_a_bracket_or_assignment_shaped_glob_that_reaches_a_link_out_asks(tmp_path: Path, command: str) -> None:
    """bash expands these into a link that leads out (``src/d/e``, ``a=/e``): a ``]`` first in brackets is a member
    (``[]-f]``), an escaped ``]`` does not close them (``[e\\]]``), an argument shaped like an assignment is still a
    pattern (``cat a=/*``: only a prefix assignment is not), and a quoted ``[`` is literal (``"["e]*``: that one only
    reads a file named so, and the check cannot tell it apart, so it asks too). An ordinary bracket glob inside
    still runs unasked (negative control)."""
    p = tmp_path / "proj"
    (p / "src" / "d").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    (p / "a=").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SENTINEL\n")
    (outside / "[e]x").mkdir()
    (outside / "[e]x" / "secret.txt").write_text("SENTINEL\n")
    os.symlink(outside, p / "src" / "d" / "e")
    os.symlink(outside / "[e]x", p / "src" / "d" / "[e]x")
    os.symlink(outside, p / "a=" / "e")
    assert "SENTINEL" in _bash(p, command).stdout
    policy = PermissionPolicy.from_settings([], cwd=str(p), mode="default")
    assert policy.decide("Bash", {"command": command}).behavior == "ask"
    for ordinary in ("cat src/[a].txt", "cat src/[!b].txt", "cat src/*.txt", "ls src/[a-z]*"):
        assert policy.decide("Bash", {"command": ordinary}).behavior == "allow", ordinary


@pytest.mark.parametrize("command", ["cat src/{01..02}/secret.txt", "cat src/{+1..2}x/secret.txt",
                                     "cat src/{-01..1}/secret.txt"])
def test_a_brace_sequence_is_expanded_as_bash_pads_and_signs_it(tmp_path: Path, command: str) -> None:
    """bash pads ``{01..02}`` to ``01 02`` (a leading zero pads every term to the wider end) and reads ``{+1..2}``
    as ``1 2``; both reached a link out (``src/01``, ``src/1x``, ``src/000``) while the check looked at ``src/1`` or
    at the word unexpanded. Plain sequences inside still run unasked (negative control)."""
    p = tmp_path / "proj"
    (p / "src").mkdir(parents=True)
    for n in ("01", "02", "1", "2"):
        (p / "src" / f"{n}.txt").write_text(n)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SENTINEL\n")
    for name in ("01", "1x", "000"):
        os.symlink(outside, p / "src" / name)
    assert "SENTINEL" in _bash(p, command).stdout
    policy = PermissionPolicy.from_settings([], cwd=str(p), mode="default")
    assert policy.decide("Bash", {"command": command}).behavior == "ask"
    for ordinary in ("cat src/{01..02}.txt", "cat src/{1..2}.txt", "cat src/{+1..2}.txt"):
        assert policy.decide("Bash", {"command": ordinary}).behavior == "allow", ordinary


@pytest.mark.parametrize("command", ['cat src/d/{"}",e}/secret.txt', "cat src/d/{'}',e}/secret.txt",
                                     "cat src/d/{\\},e}/secret.txt", 'cat src/d/{"{",e}/secret.txt',
                                     "cat src/d/{\\{,e}/secret.txt", 'cat src/d/{"x}y",e}/secret.txt',
                                     'cat < src/d/{"}"e,}/secret.txt'])
def test_a_word_with_quoted_braces_asks(tmp_path: Path, command: str) -> None:
    """A quoted or escaped brace is not one bash's brace expansion sees: ``{"}",e}`` is ``}`` and ``e``, and ``e``
    led out through ``src/d/e``, while the word, its quoting gone, read as ``{},e}`` (no expansion). Such a word
    asks; a quoted word without live braces and plain brace words still run unasked (negative control)."""
    p = tmp_path / "proj"
    (p / "src" / "d").mkdir(parents=True)
    (p / "src" / "a.txt").write_text("a\n")
    (p / "src" / "b.txt").write_text("b\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SENTINEL\n")
    os.symlink(outside, p / "src" / "d" / "e")
    if not command.startswith("cat <"):
        assert "SENTINEL" in _bash(p, command).stdout
    policy = PermissionPolicy.from_settings([], cwd=str(p), mode="default")
    assert policy.decide("Bash", {"command": command}).behavior == "ask"
    for ordinary in ("cat src/{a,b}.txt", 'cat "src/a.txt"', "cat 'src/{a,b}.txt'", 'grep -c "a" src/{a,b}.txt'):
        assert policy.decide("Bash", {"command": ordinary}).behavior == "allow", ordinary


@pytest.mark.parametrize("command", ["cat a=~/secret.txt", "cat a=x:~/secret.txt", "cat a+=~/secret.txt"])
def test_an_argument_shaped_like_an_assignment_with_a_tilde_asks(tmp_path: Path, command: str) -> None:
    """bash tilde-expands an argument shaped like an assignment after its ``=`` and each ``:``: ``cat a=~/secret.txt``
    opened ``a=/tmp/.../home/secret.txt``, and a link ``a=/tmp`` in the workspace led it to the home's file while
    the check looked at ``a=~/...``. Such a word asks; a ``~`` elsewhere in a word stays literal (negative control)."""
    p = tmp_path / "proj"
    (p / "a=").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("SENTINEL\n")
    first = str(home).split("/")[1]
    os.symlink("/" + first, p / "a=" / first)  # a=/tmp -> /tmp
    env = {**os.environ, "HOME": str(home)}
    if command == "cat a=~/secret.txt":
        assert _bash(p, command, env).stdout == "SENTINEL\n"
    policy = PermissionPolicy.from_settings([], cwd=str(p), mode="default", user_home=str(home))
    assert policy.decide("Bash", {"command": command}).behavior == "ask"
    assert policy.decide("Bash", {"command": "cat a=/x~y"}).behavior == "allow"


def test_git_asks_where_the_workspace_s_own_git_file_names_a_repository_that_does_not_name_it_back(tmp_path: Path) -> None:
    """A ``.git`` file at the workspace's top (``gitdir: /elsewhere/private/.git``, come with an unpacked archive)
    makes git read that repository: ``git cat-file -p HEAD:p.txt`` printed a private file. It asks; a linked
    worktree, whose git directory names this ``.git`` back, still runs git's reads unasked (negative control)."""
    private = tmp_path / "private"
    subprocess.run(["git", "init", "-q", str(private)], check=True)
    (private / "p.txt").write_text("private\n")
    git = ["git", "-C", str(private), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "add", "p.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {private / '.git'}\n")
    assert _bash(ws, "git cat-file -p HEAD:p.txt").stdout == "private\n"
    d = PermissionPolicy.from_settings([], cwd=str(ws), mode="default").decide("Bash", {"command": "git cat-file -p HEAD:p.txt"})
    assert d.behavior == "ask"
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    linked = PermissionPolicy.from_settings([], cwd=str(tmp_path / "wt"), mode="default")
    assert linked.decide("Bash", {"command": "git cat-file -p HEAD:p.txt"}).behavior == "allow"


def test_git_asks_where_the_workspace_s_own_repository_borrows_objects_from_elsewhere(tmp_path: Path) -> None:
    """``objects/info/alternates`` of the workspace's own repository (come with an archive, or a ``clone --shared``)
    lends it another repository's objects: ``git cat-file -p SHA`` printed a private file. It asks; without the
    list the same line runs unasked (negative control)."""
    private = tmp_path / "private"
    subprocess.run(["git", "init", "-q", str(private)], check=True)
    (private / "p.txt").write_text("private\n")
    subprocess.run(["git", "-C", str(private), "add", "p.txt"], check=True)
    sha = subprocess.run(["git", "-C", str(private), "rev-parse", ":p.txt"], capture_output=True, text=True).stdout.strip()
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    command = f"git cat-file -p {sha}"
    assert PermissionPolicy.from_settings([], cwd=str(ws), mode="default").decide("Bash", {"command": command}).behavior == "allow"
    (ws / ".git" / "objects" / "info" / "alternates").write_text(f"{private / '.git' / 'objects'}\n")
    assert _bash(ws, command).stdout == "private\n"
    assert PermissionPolicy.from_settings([], cwd=str(ws), mode="default").decide("Bash", {"command": command}).behavior == "ask"
