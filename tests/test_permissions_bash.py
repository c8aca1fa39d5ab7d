"""Bash rules against the real bash: a deny rule sees every command bash would run.

Random command lines are built from three stub programs (``a``, ``b``, ``c``,
each logging its own name when run) and the shell's ways of running things:
operators, subshells, groups, ``if``, ``case``, loops, functions, command and process substitution (also
inside double quotes and assignments), backticks, ``sh -c`` and ``eval``
strings, wrappers (``command``, ``env``, ``nice``, ``timeout``, ``exec``,
assignments), and quoted or escaped command names. bash runs each line with
only the stubs and those wrappers on its PATH; then the policy decides the
same line. The property: if bash ran ``b``, the policy with ``deny:
Bash(b:*)`` denies the line, however ``b`` was reached. And a line that ran
``b`` is never allowed by rules that allow only ``a`` and ``c``.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentloop.agent.permissions import PermissionPolicy
from agentloop.config.settings import SettingsSource

LONG = os.environ.get("AGENTLOOP_LONG") == "1"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

STUB = '#!/bin/sh\nprintf "%s\\n" "${0##*/}" >> "$STUB_LOG"\n'
WRAPPERS = ("sh", "env", "nice", "timeout")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    for name in "abc":
        (d / name).write_text(STUB)
        (d / name).chmod(0o755)
    for name in WRAPPERS:
        real = shutil.which(name)
        assert real, f"{name} is needed on PATH"
        os.symlink(real, d / name)
    return d


_RUNS = itertools.count()


def ran(stubs: Path, line: str, tmp: Path) -> set[str]:
    """The stubs bash ran for ``line`` (nothing when bash refuses its syntax)."""
    # a log of its own: a stub left running in the background by an earlier line ("( a & )"
    # is not waited for) must not write into this line's log
    log = tmp / f"ran-{next(_RUNS)}.log"
    log.write_text("")
    # FUNCNEST: a function defined inside itself would recurse forever; bash stops it at 4 deep
    env = {"PATH": str(stubs), "STUB_LOG": str(log), "HOME": str(tmp), "FUNCNEST": "4"}
    proc = subprocess.Popen([BASH or "bash", "--norc", "--noprofile", "-c", line + "\nwait"], env=env, cwd=tmp,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"bash did not finish: {line!r}")
    return set(log.read_text().split())


def policy(allow: list[str], deny: list[str]) -> PermissionPolicy:
    src = SettingsSource("/proj/.agentloop/settings.json", "project", {"permissions": {"allow": allow, "deny": deny}})
    return PermissionPolicy.from_settings([src], cwd="/proj")


# --- the command lines ------------------------------------------------------------

name = st.sampled_from("abc").flatmap(lambda n: st.sampled_from([
    n, f"'{n}'", f'"{n}"', f"\\{n}", f"{n}''", f'""{n}', f"$'\\x{ord(n):02x}'", f"$'{n}'",
]))
wrapper = st.sampled_from(["", "", "", "command ", "env ", "env X=1 ", "X=1 ", "nice ", "nice -n 5 ", "timeout 5 ", "exec "])
arg = st.sampled_from(["", " x", " -y", ' "z w"', " 'q'", " a", " --", " >/dev/null", " 2>&1"])
simple = st.builds(lambda w, n, a: w + n + a, wrapper, name, arg)
OPERATORS = ["; ", " && ", " || ", " | ", " & ", "\n"]
fn = st.integers(0, 3)


def _compound(kids: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda x, op, y: f"{x}{op}{y}", kids, st.sampled_from(OPERATORS), kids),
        st.builds(lambda x: f"( {x} )", kids),
        st.builds(lambda x: f"{{ {x}; }}", kids),
        st.builds(lambda n, x: f"{n} $({x})", name, kids),
        st.builds(lambda n, x: f'{n} "v=$({x})"', name, kids),
        st.builds(lambda x: f"v=$({x})", kids),
        st.builds(lambda n, x: f"{n} <({x})", name, kids),
        st.builds(lambda x, y: f"if {x}; then {y}; fi", kids, kids),
        st.builds(lambda x: f"sh -c {shlex.quote(x)}", kids),
        st.builds(lambda x: f"eval {shlex.quote(x)}", kids),
        st.builds(lambda n, s: f"{n} `{s}`", name, simple),
        st.builds(lambda x, y: f"case q in q) {x};; *) {y};; esac", kids, kids),
        st.builds(lambda x, y: f"while {x}; do {y}; break; done", kids, kids),
        st.builds(lambda x, y: f"until {x}; do {y}; break; done", kids, kids),
        st.builds(lambda x: f"for i in 1; do {x}; done", kids),
        st.builds(lambda n, x: f"{n} <<< \"$({x})\"", name, kids),
        st.builds(lambda n, x: f"{n} > \"$({x})\"", name, kids),
        st.builds(lambda n, x: f'{n} "${{v:-$({x})}}"', name, kids),
        st.builds(lambda x: f"[[ -n $({x}) ]]", kids),
        st.builds(lambda x: f"! {x}", kids),
        st.builds(lambda x: f"time {x}", kids),
        st.builds(lambda k, x: f"f{k}() {{ {x}; }}; f{k}", fn, kids),
        st.builds(lambda k, x: f"function f{k} {{ {x}\n}}\nf{k}", fn, kids),
        st.builds(lambda k, x: f"function f{k} () ( {x} ); f{k}", fn, kids),
    )


line = st.recursive(simple, _compound, max_leaves=6)


@settings(max_examples=3_000 if LONG else 250, deadline=None, derandomize=not LONG,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(line)
@example("timeout 5 $'\\x62' x")
@example("a \"v=$(env X=1 'b')\"")
@example("sh -c 'eval \"c; \\b\"'")
@example("a <(exec b)")
@example("{ ( nice -n 5 a ); }")  # found by this test: "(" after "{" was refused, and the crude pieces kept "-n 5 a"
@example("f() { timeout 5 b; }; f")
@example("function a { b; }; a")  # found by this test: "function name {" hid its body (allowed by Bash(a:*))
@example("x (b)")  # a syntax error to bash: runs nothing
@example("sh -c 'case q in q) a;; *) b;; esac'")  # found: a case inside sh -c hid its branches
@example("time while a; do b; break; done")  # found: bash's keyword time, then a loop
def test_whatever_bash_runs_a_deny_rule_sees(stubs: Path, tmp_path: Path, line: str) -> None:
    names = ran(stubs, line, tmp_path)
    for n in names:
        d = policy([], [f"Bash({n}:*)"]).decide("Bash", {"command": line})
        assert d.behavior == "deny", (line, n, names, d)
    if "b" in names:
        d = policy(["Bash(a:*)", "Bash(c:*)"], []).decide("Bash", {"command": line})
        assert d.behavior != "allow", (line, names, d)


def test_the_stubs_log_what_bash_runs_and_nothing_else(stubs: Path, tmp_path: Path) -> None:
    # the oracle itself: without it every property above would hold vacuously
    assert ran(stubs, "a; b | c", tmp_path) == {"a", "b", "c"}
    assert ran(stubs, "a $(b) `c`", tmp_path) == {"a", "b", "c"}
    assert ran(stubs, "sh -c 'eval \"c; \\b\"'", tmp_path) == {"b", "c"}
    assert ran(stubs, "a <<EOF\nb\nEOF", tmp_path) == {"a"}, "a heredoc's body is data"
    assert ran(stubs, "'a' \\b $'\\x63'", tmp_path) == {"a"}, "the first word runs; the rest are arguments"
    assert ran(stubs, "( a", tmp_path) == set(), "a syntax error runs nothing"
