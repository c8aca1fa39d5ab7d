"""Deny rules against every way of launching a command: programs that run command strings, ``env -S``
in all its spellings, imported functions, launchers, wrapper chains, and git's own options.

The lines come from ``tests/data/launchers/launchers.json`` (one line per find). Each line is run
by the real bash with a stub ``rm`` that logs when it runs, next to the real programs the line
uses: the oracle shows the line really runs ``rm``. Then the policy with ``allow: ["Bash"]`` and
``deny: ["Bash(rm:*)"]`` must not allow it, in the default mode nor in bypassPermissions, and
rules allowing every other program the line names must not approve it either. The generators below
build more lines of each class (``env -S`` spellings, wrapper chains of any depth, launchers under
wrappers) and hold the same property against the real bash.

Claude Code's permissions reference ("Bash" rules; "deny -> ask -> allow", "Bash(rm *)" as a scoped
deny that blocks matching calls) is the behaviour followed: a deny rule holds whatever runs the command.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentloop.agent.permissions.bash_reader import MAX_WRAPPERS, analyze, git_subcommand
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.config.settings import SettingsSource

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")
DATA = Path(__file__).parent / "data" / "launchers" / "launchers.json"
LAUNCHERS: list[dict[str, Any]] = json.loads(DATA.read_text())
STUB = '#!/bin/sh\nprintf "%s\\n" "${0##*/}" >> "$STUB_LOG"\n'
# the real programs the lines use (missing ones: the oracle is skipped for lines that need them)
REAL = ("sh", "bash", "env", "cat", "printf", "touch", "mkdir", "chmod", "echo", "vim", "vi", "view", "ex", "ed",
        "sqlite3", "make", "tar", "zip", "groff", "troff", "grotty", "preconv", "dpkg", "perl", "git", "ssh-agent",
        "x86_64", "linux64", "i386", "setarch", "run-parts", "rsync", "sort", "head", "yes", "nice", "nohup",
        "timeout", "stdbuf", "python3", "git-upload-pack", "gzip")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    (d / "rm").write_text(STUB)
    (d / "rm").chmod(0o755)
    for name in REAL:
        real = sys.executable if name == "python3" else shutil.which(name)
        if real:
            os.symlink(real if name == "python3" else os.path.realpath(real), d / name)
    return d


_RUNS = itertools.count()


def ran_rm(stubs: Path, line: str, tmp: Path) -> bool:
    """Did the real bash run ``rm`` for ``line``? (``{path}``, ``{log}`` filled in)."""
    work = tmp / f"run-{next(_RUNS)}"
    work.mkdir()
    log = work / "stub.log"
    log.write_text("")
    env = {"PATH": str(stubs), "STUB_LOG": str(log), "HOME": str(work)}
    proc = subprocess.Popen([BASH or "bash", "--norc", "--noprofile", "-c", fill(line, stubs, log)], env=env, cwd=work,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"bash did not finish: {line!r}")
    return "rm" in log.read_text().split()


def fill(line: str, stubs: Path, log: Path | str = "/nonexistent/log") -> str:
    return line.replace("{path}", str(stubs)).replace("{log}", str(log))


def policy(allow: list[str], deny: list[str], mode: str | None = None) -> PermissionPolicy:
    src = SettingsSource("/proj/.agentloop/settings.json", "project", {"permissions": {"allow": allow, "deny": deny}})
    return PermissionPolicy.from_settings([src], cwd="/proj", mode=mode)


def assert_never_allowed(line: str) -> None:
    for mode in (None, "bypassPermissions", "acceptEdits"):
        d = policy(["Bash"], ["Bash(rm:*)"], mode).decide("Bash", {"command": line})
        assert d.behavior != "allow", (line, mode, d)
    # a rule naming a program that runs command strings approves it by design (the user named it): leave those out
    runners = {u.runner for u in analyze(line).units if u.runner}
    others = sorted({w for w in re.findall(r"[A-Za-z_][\w.+-]*", line) if w != "rm" and w not in runners})
    d = policy([f"Bash({w}:*)" for w in others], []).decide("Bash", {"command": line})
    assert d.behavior != "allow", ("rules for the other programs approved it", line, d)


def installed(entry: dict[str, Any]) -> bool:
    return shutil.which(entry["program"]) is not None


@pytest.mark.parametrize("entry", LAUNCHERS, ids=[f"{e['program']}:{e['line'][:40]}" for e in LAUNCHERS])
def test_a_listed_launcher_that_runs_rm_is_never_allowed_past_a_deny_rule(stubs: Path, tmp_path: Path, entry: dict[str, Any]) -> None:
    line = fill(entry["line"], stubs)
    assert_never_allowed(line)
    if not installed(entry):
        pytest.skip(f"{entry['program']} is not installed: the policy was checked, the oracle is not run")
    assert ran_rm(stubs, entry["line"], tmp_path), f"the oracle: bash should run rm for {entry['line']!r}"


def test_the_stub_rm_logs_only_when_it_runs(stubs: Path, tmp_path: Path) -> None:
    # the oracle itself: without it every check above would pass vacuously
    assert ran_rm(stubs, "rm v", tmp_path)
    assert not ran_rm(stubs, "echo rm v", tmp_path)
    assert not ran_rm(stubs, "env -S 'echo rm v'", tmp_path)


# --- a program that runs command strings is opaque unless an allow rule names it --------------

RUNNER_LINES = [
    ("vim -es -c 'wq' f", "vim"), ("make test", "make"), ("tar xf a.tar --to-command=cat", "tar"),
    ("sqlite3 db.sqlite 'select 1'", "sqlite3"), ("sort --compress-program=gzip big.txt", "sort"),
    ("zip -TT 'unzip -t' a.zip f", "zip"), ("ed -s f < script.ed", "ed"), ("run-parts --test d", "run-parts"),
]


@pytest.mark.parametrize("line,program", RUNNER_LINES)
def test_a_program_that_runs_command_strings_is_opaque_unless_an_allow_rule_names_it(line: str, program: str) -> None:
    found = analyze(line)
    assert found.opaque and found.units[0].runner == program, found
    assert policy(["Bash"], ["Bash(rm:*)"]).decide("Bash", {"command": line}).behavior == "ask"
    assert policy(["Bash(echo:*)"], []).decide("Bash", {"command": line}).behavior == "ask"
    named = policy([f"Bash({program}:*)"], ["Bash(rm:*)"])
    assert named.decide("Bash", {"command": line}).behavior == "allow", "a rule naming the program approves it"
    assert named.decide("Bash", {"command": f"{line}; rm v"}).behavior == "deny"
    assert named.decide("Bash", {"command": f"{line} && curl x"}).behavior == "ask", "only the named program is lifted"


# --- generators, one per class, against the real bash ---------------------------------------

ENV_FLAGS = st.lists(st.sampled_from(["-v", "--debug", "-u X", "--unset=X", "--unset X", "-C .", "--chdir=.", "--ch .",
                                      "-", "-i", "-0"]), max_size=3)
ENV_SPLIT = st.sampled_from(["-S{q}", "-S {q}", "--split-string={q}", "--split-string {q}", "--split={q}", "--sp {q}",
                             "-vS{q}", "-iS{q}", "-viS{q}", "-u X -S{q}", "-S{q2}"])


def _env_line(flags: list[str], split: str) -> str:
    inner = "PATH={path} STUB_LOG={log} rm v"
    return "env " + " ".join([*flags, split.format(q=f"'{inner}'", q2=f"'-i {inner}'")])


WRAPPERS = st.sampled_from(["", "nice ", "nohup ", "timeout 9 ", "stdbuf -oL ", "command ", "env ", "env X=1 ",
                            "x86_64 ", "setarch x86_64 -R ", "linux64 ", "ssh-agent "])
LAUNCHED = st.sampled_from([e["line"] for e in LAUNCHERS if ";" not in e["line"] and "|" not in e["line"]])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ENV_FLAGS, ENV_SPLIT)
@example(["-u X"], "-S{q}")
@example([], "--split={q}")
def test_env_split_string_in_any_spelling_is_seen_by_deny_rules(stubs: Path, tmp_path: Path, flags: list[str], split: str) -> None:
    line = _env_line(flags, split)
    if not ran_rm(stubs, line, tmp_path):
        return  # env refused this combination (-0 with a command): nothing ran
    assert_never_allowed(fill(line, stubs))
    d = policy([], ["Bash(rm:*)"]).decide("Bash", {"command": fill(line, stubs)})
    assert d.behavior in ("deny", "ask"), (line, d)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(WRAPPERS, max_size=3), LAUNCHED)
def test_listed_launchers_under_wrappers_are_never_allowed_past_a_deny_rule(stubs: Path, tmp_path: Path, wrappers: list[str], line: str) -> None:
    full = "".join(wrappers) + line
    assert_never_allowed(fill(full, stubs))
    if "{" not in line and shutil.which(line.split()[0]) and ran_rm(stubs, full, tmp_path):
        d = policy([], ["Bash(rm:*)"]).decide("Bash", {"command": fill(full, stubs)})
        assert d.behavior in ("deny", "ask"), (full, d)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["env", "nice", "nohup", "timeout 9", "stdbuf -oL", "command"]), min_size=1, max_size=80))
@example(["env"] * (MAX_WRAPPERS + 1))
@example(["nice"] * (MAX_WRAPPERS + 1))
def test_a_wrapper_chain_of_any_depth_is_denied_or_asks(stubs: Path, tmp_path: Path, chain: list[str]) -> None:
    line = " ".join(chain) + " rm v"
    assert_never_allowed(line)
    if ran_rm(stubs, line, tmp_path):  # env cannot run the builtin "command": then nothing ran
        d = policy([], ["Bash(rm:*)"]).decide("Bash", {"command": line})
        assert d.behavior in ("deny", "ask"), (len(chain), d)
    if len(chain) > MAX_WRAPPERS:
        assert any("wrappers" in r for r in analyze(line).opaque), "deeper than the reader follows: fail closed"


# --- git's subcommand comes after its global options ----------------------------------------


@pytest.mark.parametrize("line,sub", [
    ("git --namespace log clean -fdx", "clean"), ("git -C . status", "status"), ("git --git-dir=.git log", "log"),
    ("git -c a.b=c --no-pager diff", "diff"), ("git --work-tree . --bare push", "push"), ("git --", None),
])
def test_gits_subcommand_is_found_after_its_global_options(line: str, sub: str | None) -> None:
    words = line.split()
    i = git_subcommand(words)
    assert (words[i] if i < len(words) else None) == sub


def test_a_git_global_option_does_not_hide_a_destructive_subcommand(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "untracked.txt").write_text("x")
    line = "git --namespace log clean -fdx"
    p = PermissionPolicy.from_settings([], cwd=str(repo))
    assert p.decide("Bash", {"command": line}).behavior == "ask", "not read-only: it deletes files"
    denied = PermissionPolicy.from_settings([SettingsSource("s", "project", {"permissions": {"deny": ["Bash(git clean:*)"]}})], cwd=str(repo))
    assert denied.decide("Bash", {"command": line}).behavior == "deny"
    subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True)
    assert not (repo / "untracked.txt").exists(), "the oracle: git ran clean"


@pytest.mark.parametrize("line", [
    "tar xzf a.tar", "tar --to-stdout -xf a.tar", "tar -cf a.tar Install.txt", "dpkg -l", "dpkg --status bash",
    "sort -n f", "zip -r a.zip d", "git grep -n x", "git ls-remote origin", "python3 -m pytest -q", "python3 script.py",
    "groff -Tascii f.ms", "perl script.pl", "env X=1 ls", "env -u HOME ls", "x86_64 ls", "setarch x86_64 -R ls",
])
def test_ordinary_calls_of_the_listed_programs_stay_readable(line: str) -> None:
    # the classes above fail closed on what runs command strings, not on the programs themselves
    found = analyze(line)
    assert not found.opaque, (line, found.opaque)
    assert policy(["Bash"], ["Bash(rm:*)"]).decide("Bash", {"command": line}).behavior == "allow", line


@pytest.mark.parametrize("line", ["env --split-string='rm v'", "env -vS'rm v'", "env -iS'PATH=/bin rm v'",
                                  "env -u X -S'rm v'", "env -S 'rm v'", "env -v -S'rm v'"])
def test_env_split_string_is_read_as_the_command_it_runs_so_the_deny_rule_names_it(line: str) -> None:
    """Not just 'not allowed': the reader sees ``rm v`` in each spelling of ``env -S`` (a view of the
    unit), so the deny rule itself decides, not the caution of an unreadable line."""
    views = [v for u in analyze(line).units for v, _ in u.views]
    assert any(v.split()[:1] == ["rm"] for v in views), views
    d = policy(["Bash"], ["Bash(rm:*)"]).decide("Bash", {"command": line})
    assert d.behavior == "deny" and d.rule == "Bash(rm:*)", d
