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

The second half generates the constructs whose command
cannot be known from the text: computed, globbed and brace-expanded command
words, ``"$@"``, scripts piped or fed into a shell (here-documents, here-strings),
``source``, ``trap``, ``coproc``, ``sh -c`` with options, aliases, interpreters'
inline code, ``git -c alias``, ``find -exec``, ``xargs``, leading redirections,
``time --``, the wrappers ``flock``, ``taskset``, ``script -c``, ``chrt``,
``ionice``, ``setsid``, ``stdbuf``, ``nohup``, and code that bash evaluates in
arithmetic, ``[[ -eq ]]``, ``test -v``, ``printf -v``, ``declare`` subscripts and
``${x-\\}...}``. Whatever bash ran is never allowed: not under ``allow: ["Bash"]``
with a deny rule for it, not in bypassPermissions, not by allow rules for the
other commands; and a line the reader calls fully known is denied outright.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentloop.agent.permissions.bash_reader import ShellSyntax, analyze
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.config.settings import SettingsSource

LONG = os.environ.get("AGENTLOOP_LONG") == "1"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

STUB = '#!/bin/sh\nprintf "%s\\n" "${0##*/}" >> "$STUB_LOG"\n'
WRAPPERS = ("sh", "env", "nice", "timeout")
# the programs these constructs use; those missing here are left out of the lines
RUNNERS = tuple(n for n in ("bash", "cat", "flock", "taskset", "script", "chrt", "ionice", "setsid", "stdbuf", "nohup",
                            "python3", "perl", "git", "find", "xargs", "awk", "sed", "dirname", "ls")
                if shutil.which(n))


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    for name in ("a", "b", "c", "rm", "touch"):
        (d / name).write_text(STUB)
        (d / name).chmod(0o755)
    for name in WRAPPERS:
        real = shutil.which(name)
        assert real, f"{name} is needed on PATH"
        os.symlink(real, d / name)
    for name in RUNNERS:
        real = sys.executable if name == "python3" else (shutil.which(name) or name)  # not pyenv's shim script
        os.symlink(os.path.realpath(real), d / name)
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


def policy(allow: list[str], deny: list[str], mode: str | None = None) -> PermissionPolicy:
    src = SettingsSource("/proj/.agentloop/settings.json", "project", {"permissions": {"allow": allow, "deny": deny}})
    return PermissionPolicy.from_settings([src], cwd="/proj", mode=mode)


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
@example("$'\\x61' <<< \"$([[ -n $(b) ]])\"")  # found: "]])" read the ) as the condition's own
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


# --- what the text cannot show --------------------------------------


def _has(*names: str) -> bool:
    return all(n in RUNNERS for n in names)


def _q(x: str) -> str:
    return shlex.quote(x)


def _opaque_constructs(kids: st.SearchStrategy[str]) -> list[st.SearchStrategy[str]]:
    n = st.sampled_from("abc")
    out: list[st.SearchStrategy[str]] = [
        st.builds(lambda k: f"X={k}; $X", n),
        st.builds(lambda k: f"$(echo {k}) x", n),
        st.builds(lambda k: f"{{{k},}} x", n),
        st.builds(lambda k: f"set -- {k} x; \"$@\"", n),
        st.builds(lambda k: f"\"$PATH\"/[{k}] x", n),
        st.builds(lambda x: f"echo {_q(x)} | sh", kids),
        st.builds(lambda x: f"sh <<< {_q(x)}", kids),
        st.builds(lambda x: f"sh <<'E0F'\n{x}\nE0F", kids),
        st.builds(lambda x: f"echo {_q(x)} > s.sh; . ./s.sh", kids),
        st.builds(lambda x: f"echo {_q(x)} > s.sh; source s.sh", kids),
        st.builds(lambda x: f"trap {_q(x)} EXIT", kids),
        st.builds(lambda x: f"coproc {x}; wait", simple),
        st.builds(lambda x: f"sh -c -e {_q(x)}", kids),
        st.builds(lambda x: f"sh -e -c {_q(x)}", kids),
        st.builds(lambda x: f"shopt -s expand_aliases\nalias q={_q(x)}\nq", kids),
        st.builds(lambda x: f">o {x}", simple),
        st.builds(lambda x: f"2>/dev/null {x}", simple),
        st.builds(lambda x: f"time -- {x}", simple),
        st.builds(lambda x: f"v={_q('a[$(' + x + ')]')}; (( v ))", kids),
        st.builds(lambda x: f"v={_q('a[$(' + x + ')]')}; echo $((v))", kids),
        st.builds(lambda x: f"[[ 1 -eq {_q('a[$(' + x + ')]')} ]]", kids),
        st.builds(lambda x: f"[[ -v {_q('a[$(' + x + ')]')} ]]", kids),
        st.builds(lambda x: f"test -v {_q('a[$(' + x + ')]')}", kids),
        st.builds(lambda x: f"printf -v {_q('a[$(' + x + ')]')} x", kids),
        st.builds(lambda x: f"declare {_q('a[$(' + x + ')]=1')}", kids),
        st.builds(lambda x: f"let {_q('a[$(' + x + ')]=1')}", kids),
        st.builds(lambda x: f"read v <<< {_q('a[$(' + x + ')]')}; [[ $v -eq 1 ]]", kids),
        st.builds(lambda x: f"echo ${{v-\\}} #$({x})}}", kids),
        st.builds(lambda x: f"echo \"${{v:-\\}} $({x})}}\"", kids),
        st.builds(lambda x: f"PS4={_q('$(' + x + ')')}; set -x; :", kids),
    ]
    if _has("bash"):
        out += [st.builds(lambda x: f"bash -c -e {_q(x)}", kids), st.builds(lambda x: f"echo {_q(x)} | bash -s", kids)]
    for w in ("flock lk", "taskset 1", "chrt -o 0", "ionice -c 3", "setsid -w", "stdbuf -oL", "nohup", "flock -n lk"):
        if _has(w.split()[0]):
            out.append(st.builds(lambda x, w=w: f"{w} {x}", simple))
    if _has("flock"):
        out.append(st.builds(lambda x: f"flock lk -c {_q(x)}", kids))
    if _has("script"):
        out.append(st.builds(lambda x: f"script -qec {_q(x)} /dev/null", kids))
    if _has("python3"):
        out.append(st.builds(lambda x: f"python3 -c {_q('import os; os.system(' + repr(x) + ')')}", kids))
        out.append(st.builds(lambda x: f"python3 - <<'E0F'\nimport os; os.system({x!r})\nE0F", kids))
    if _has("perl"):
        out.append(st.builds(lambda x: f"perl -e {_q('system(' + repr(x) + ')')}", kids))
    if _has("git"):
        out.append(st.builds(lambda x: f"git -c alias.q={_q('!' + x)} q", kids))
    if _has("find"):
        out.append(st.builds(lambda k: f"find . -maxdepth 0 -exec {k} \\;", n))
    if _has("xargs"):
        out.append(st.builds(lambda k: f"echo x | xargs {k}", n))
    if _has("awk"):
        out.append(st.builds(lambda x: f"awk {_q('BEGIN { system(' + chr(34) + x.replace(chr(34), '') + chr(34) + ') }')}", kids))
    if _has("sed"):
        out.append(st.builds(lambda k: f"echo x | sed 'e {k}'", n))
    return out


line_unknowable = st.recursive(simple, lambda kids: st.one_of(*_opaque_constructs(kids), _compound(kids)), max_leaves=3)


def _known(line: str) -> bool:
    try:
        return not analyze(line).opaque
    except ShellSyntax:
        return False


def check_never_allowed(stubs: Path, tmp: Path, line: str) -> set[str]:
    names = ran(stubs, line, tmp)
    for n in names:
        others = [f"Bash({m}:*)" for m in "abc" if m != n]
        for mode in (None, "bypassPermissions"):
            d = policy(["Bash"], [f"Bash({n}:*)"], mode).decide("Bash", {"command": line})
            assert d.behavior != "allow", (line, n, names, mode, d)
            if _known(line):
                assert d.behavior == "deny", ("a line read as fully known must be denied", line, n, d)
        d = policy(others, []).decide("Bash", {"command": line})
        assert d.behavior != "allow", (line, n, names, d)
    return names


@settings(max_examples=1_500 if LONG else 150, deadline=None, derandomize=not LONG,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(line_unknowable)
@example("git status ${x-\\} #$(b)}")
@example("a && [[ 1 -eq 'a[$(b)]' ]]")
@example("test -v 'a[$(b)]'")
@example("printf -v 'a[$(b)]' x")
@example(">out b v")
@example("[[ -n <(b) ]]")  # a process substitution still runs inside [[ ]] (found while adding [[ ]] to the reader)
def test_whatever_bash_runs_through_what_the_text_cannot_show_is_never_allowed(stubs: Path, tmp_path: Path, line: str) -> None:
    check_never_allowed(stubs, tmp_path, line)


# Each line ran `rm` under bash while `allow: ["Bash"]` and `deny: ["Bash(rm:*)"]` let it through
# (48 of 118 such lines), or ran `touch` past narrow allow rules. Here `rm` and `touch` are
# stubs that log; the test shows bash runs them (where the programs used are installed) and that
# the policy never allows the line.
ATTACKS = [
    "X=rm; $X -rf v", "$(echo rm) v", "{r,}m v", "set -- rm v; \"$@\"", "\"$PATH\"/r? v", "echo 'rm v' | sh",
    "bash <<'EOF'\nrm v\nEOF", "bash <<< 'rm v'", "echo 'rm v' > f; source f", "echo 'rm v' > f; . ./f",
    "trap 'rm v' EXIT", "coproc rm v; wait", "sh -c -e 'rm v'", ">out rm v", "time -- rm v", "flock lk rm v",
    "taskset 1 rm v", "script -qc 'rm v' /dev/null", "chrt -o 0 rm v", "ionice -c 3 rm v", "setsid -w rm v",
    "shopt -s expand_aliases\nalias x='rm v'\nx", "python3 -c 'import os; os.system(\"rm v\")'",
    "perl -e 'system(\"rm v\")'", "git -c alias.x='!rm v' x", "x='a[$(rm v)]'; (( x ))", "echo ${x-\\} #$(rm v)}",
    "echo ${x:-\\} #$(rm v)}", "test -v 'a[$(rm v)]'", "printf -v 'a[$(rm v)]' x", "[[ -v 'a[$(rm v)]' ]]",
    "ls && [[ 1 -eq 'a[$(rm v)]' ]]", "declare 'a[$(rm v)]=1'", "PS4='$(rm v)'; set -x; :",
    "echo v | xargs rm", "awk 'BEGIN { system(\"rm v\") }'",
    "echo x | sed 'e rm v'", "cat <<EOF | bash\nrm v\nEOF", "python3 - <<'EOF'\nimport os; os.system('rm v')\nEOF",
    "echo rm v > s.sh; bash s.sh", "bash -c \"$(echo rm v)\"", "x=rm; eval $x v",
    "stdbuf -oL rm v", "nohup rm v", "unshare -r rm v", "busybox rm v", "flock lk -c 'rm v'",
    "read x <<< 'a[$(rm v)]'; [[ $x -eq 1 ]]", "let 'a[$(rm v)]=1'", "IFS=,; x=rm,v; $x", "env -S 'rm v'",
    "git init -q; git config alias.x '!rm v'; git x", "script /dev/null -c 'rm v'",
    "hash -p \"$PATH/rm\" ls; ls v", "p=$PATH/r; BASH_CMDS[ls]=${p}m; ls v", "mapfile -C 'rm v' -c 1 a <<< 1",
    "compgen -C 'rm v' x",
]


@pytest.mark.parametrize("line", ATTACKS)
def test_lines_that_ran_rm_past_a_deny_rule_are_not_allowed(stubs: Path, tmp_path: Path, line: str) -> None:
    for mode in (None, "bypassPermissions"):
        d = policy(["Bash"], ["Bash(rm:*)"], mode).decide("Bash", {"command": line})
        assert d.behavior != "allow", (line, mode, d)
    narrow = [f"Bash({c}:*)" for c in ("echo", "ls", "test", "printf", "git", "set", "x", "cat", "bash", "sh", "source",
                                       "trap", "coproc", "flock", "taskset", "script", "chrt", "ionice", "setsid", "stdbuf",
                                       "nohup", "unshare", "busybox", "env", "python3", "perl", "awk", "sed", "find", "xargs",
                                       "declare", "read", "let", "eval", "builtin", "shopt", "alias", ".")]
    assert policy(narrow, []).decide("Bash", {"command": line}).behavior != "allow", line
    words = set(re.findall(r"[\w.]+", line))
    if all(shutil.which(w) or w not in {"python3", "perl", "git", "flock", "taskset", "script", "chrt", "ionice",
                                           "setsid", "stdbuf", "nohup", "unshare", "busybox", "awk", "sed", "xargs", "find"}
           for w in words):
        logged = ran(stubs, line.replace("rm v", "rm v"), tmp_path)
        if "unshare" not in line:  # needs user namespaces, which the machine may refuse
            assert "rm" in logged, f"the oracle: bash should run rm for {line!r} (ran {logged})"


@pytest.mark.parametrize("allow,line", [
    (["Bash(git status:*)", "Bash(ls:*)"], "git status ${x-\\} #$(touch PWNED)}"),
    (["Bash(git status:*)", "Bash(ls:*)"], "ls && [[ 1 -eq 'a[$(touch PWNED)]' ]]"),
    (["Bash(echo:*)"], "echo ${x:-\\} #$(touch PWNED)}"),
    (["Bash(test:*)"], "test -v 'a[$(touch PWNED)]'"),
    (["Bash(printf:*)"], "printf -v 'a[$(touch PWNED)]' x"),
])
def test_narrow_allow_rules_do_not_approve_lines_that_run_something_else(stubs: Path, tmp_path: Path, allow: list[str], line: str) -> None:
    d = policy(allow, ["Bash(touch:*)"]).decide("Bash", {"command": line})
    assert d.behavior != "allow", d
    assert policy(allow, []).decide("Bash", {"command": line}).behavior != "allow"
    assert "touch" in ran(stubs, line, tmp_path), "the oracle: bash runs touch"


# --- a decision takes time linear in the line's length ---------------------------------------
# Not a timing threshold: the growth from a line to one eight times longer, best of five runs each (CPU time).
# Linear reading grows about 8 times; a quadratic step (a copy of the words at every word, a
# rescan at every command) grows 64 times. The margin (24) absorbs a loaded machine.

LONG_WORD = "abcdefghijklmnopqrstuvwxyz0123456789" * 3
GROWTH_SHAPES = {
    "words": lambda n: "echo " + "abcdefghijklmnopqrstuvw " * (n // 24),
    "commands": lambda n: f"ls {LONG_WORD}; " * (n // 113),
    "quotes and words": lambda n: "echo " + "a'b'\"c\"$'d'a'b'\"c\"$'d' " * (n // 23),
    "substitutions": lambda n: 'echo "' + f"$(ls {LONG_WORD}) " * (n // 114) + '"',
    "heredoc": lambda n: "cat <<'E'\n" + "some line\n" * (n // 10) + "E",
    "keywords": lambda n: f"if test {LONG_WORD} {LONG_WORD}; then " * (n // 235) + "ls" + "; fi" * (n // 235),
    "parameters": lambda n: "echo " + "${x:-abcdefghijklmnopqrstuv} " * (n // 29),
}


@pytest.mark.parametrize("shape", list(GROWTH_SHAPES))
def test_a_decision_grows_linearly_with_the_line(shape: str) -> None:
    import gc
    import time

    p = policy(["Bash"], ["Bash(rm:*)"])

    def best(line: str) -> float:
        # CPU time of this process, the collector held off: other work on the machine does not count
        runs = []
        for _ in range(5):
            gc.collect()
            gc.disable()
            try:
                t = time.process_time()
                p.decide("Bash", {"command": line})
                runs.append(time.process_time() - t)
            finally:
                gc.enable()
        return min(runs)

    small, large = GROWTH_SHAPES[shape](50_000), GROWTH_SHAPES[shape](400_000)
    analyze(large)  # within the reader's bounds: the whole line is read, not cut short
    growth = best(large) / max(best(small), 0.005)  # below 5 ms, caches and timer noise rule
    assert growth < 24, f"{shape}: 8x the line took {growth:.1f}x the time (quadratic reading grows ~64x)"
