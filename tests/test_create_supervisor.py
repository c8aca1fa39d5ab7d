"""No window: a sandboxed command can never make a name that turns a folder into a git repository.

Every call that makes a name is made by the creation supervisor (docs/decisions/0025), which refuses ``HEAD``
and ``.git`` anywhere in the workspace but inside the git directories already there, anything inside a folder
that holds a ``HEAD``, ``commondir`` and the like inside a git directory. Each case plants with the real bash,
git, coreutils and Python in the real bubblewrap sandbox, then runs the real git on the host where the user
would, and looks for the planted program's trace.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing, "Filesystem isolation"): commands
write the working directory, nothing that configures the host; git's metadata is what the user's own git
runs without being asked.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _plantkit import agent, git, planting_ground, sandboxed
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.agent.sandbox import supervisor

_required = os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") == "1"
_path, _why = sbx.probe()
pytestmark = pytest.mark.skipif((_path is None or supervisor.unavailable() is not None) and not _required,
                                reason=f"no sandbox or supervisor here: {_why or supervisor.unavailable()}")

PY = sys.executable


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-create-test-")


def repo(base: Path) -> Path:
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    (proj / "a").write_text("a\n")
    git(base, "add", "a", cwd=proj)
    git(base, "commit", "-qm", "a", cwd=proj)
    return proj


def names(root: Path, *wanted: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name in wanted)


def bare_config(base: Path) -> str:
    return (f"[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ..\\n"
            f"\\tfsmonitor = {base}/fsmon\\n")


PLANTS = [
    "git init -q sub",
    "mkdir -p docs/objects docs/refs/heads; printf 'ref: refs/heads/main\\n' > docs/HEAD",
    "touch docs/HEAD", "mkdir docs/HEAD", "ln -s x docs/HEAD", "echo x > x; ln x docs/HEAD", "mv x docs/HEAD",
    "echo y > y; cp y docs/HEAD", "mkdir -p t/.git", "ln -s HEAD docs/lnk; echo z > docs/lnk",
    f"{PY} -c \"import os; open('z', 'w').close(); os.rename('z', 'docs/HEAD')\"",
    f"{PY} -c \"import os; os.mkdir('.git')\"",
    f"{PY} -c \"import os; os.symlink('../docs', 'e/.git')\"",
    f"{PY} -c \"import os; fd = os.open('docs', os.O_RDONLY); os.mkdir('HEAD', dir_fd=fd)\"",
]


def test_no_command_can_make_a_head_or_a_git_entry_in_the_workspace(base: Path) -> None:
    """Every way a shell or a program makes a name: ``>``, touch, mkdir, ln -s, ln, mv, cp, a link followed by
    ``>``, Python's rename, mkdir and ``mkdirat``: each is refused, and the host's git finds no repository."""
    script = "mkdir -p docs e\n" + "\n".join(f"( {p} ) 2>&1 | tail -1" for p in PLANTS) + f"\nprintf '{bare_config(base)}' > docs/config; echo end\n"
    (base / "proj" / "plant.sh").write_text(script)  # one file: the permission checks look at the command line
    out = sandboxed(base, ["bash plant.sh"])[0]
    assert "end" in out
    assert out.count("Operation not permitted") >= len(PLANTS) - 1, out
    assert names(base / "proj", "HEAD", ".git") == []
    assert "the sandbox refused to create" in out and "docs/HEAD" in out
    for d in (base / "proj" / "docs", base / "proj" / "sub", base / "proj"):
        if d.is_dir():
            git(base, "status", cwd=d)
    assert not (base / "pwned-fsmonitor").exists()


def test_a_folder_holding_head_gains_nothing_and_a_git_directory_gains_no_pointer(base: Path) -> None:
    """A folder with a ``HEAD`` already in it (put there by the user) cannot be given ``objects``, ``refs`` or
    ``config``; the workspace's own git directory cannot be given a ``commondir``, a ``config.worktree`` or a ``gitdir``, nor a
    folder inside it ``objects`` or ``config``."""
    proj = repo(base)
    (proj / "half").mkdir()
    (proj / "half" / "HEAD").write_text("ref: refs/heads/main\n")
    (proj / "plant.sh").write_text(
        "mkdir half/objects; mkdir half/refs; echo x > half/config; echo ../evil > .git/commondir;"
        " touch .git/config.worktree; touch .git/gitdir; mkdir .git/modules; mkdir .git/modules/m; touch .git/modules/m/HEAD; mkdir .git/modules/m/objects; echo x > .git/modules/m/config; echo end\n")
    out = sandboxed(base, ["bash plant.sh"])[0]
    assert "end" in out and out.count("Operation not permitted") == 8, out
    assert sorted(os.listdir(proj / "half")) == ["HEAD"]
    assert not (proj / ".git" / "commondir").exists() and not (proj / ".git" / "config.worktree").exists()
    assert not (proj / ".git" / "gitdir").exists()
    assert not (proj / ".git" / "modules" / "m" / "objects").exists()  # its HEAD may be made: git makes HEADs there
    assert not (proj / ".git" / "modules" / "m" / "config").exists()


def test_a_background_command_gets_the_same_refusals(base: Path) -> None:
    """``run_in_background``: the plants are refused while it runs, not undone later."""
    hook = f"#!/bin/sh\\ntouch {base}/pwned-hook\\n"
    (base / "proj" / "plant.sh").write_text(
        f"sleep 1; git init -q sub; mkdir -p sub/.git/hooks; printf '{hook}' > sub/.git/hooks/pre-commit;"
        " mkdir -p d/objects d/refs; echo 'ref: refs/heads/main' > d/HEAD; touch done; sleep 30\n")
    a = agent(base, [{"command": "bash plant.sh", "run_in_background": True}, "sleep 4; ls"])
    try:
        res = a.ask("go")
        outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
        assert (base / "proj" / "done").exists()
        assert names(base / "proj", "HEAD", ".git") == []
        assert "the sandbox refused to create" in outs[1] and "sub/.git" in outs[1]
    finally:
        a.close()
    assert not (base / "pwned-hook").exists()


def test_ordinary_work_still_works(base: Path) -> None:
    """A scratch repository in the sandbox's /tmp; a commit and a new branch in the workspace's own repository;
    what pip and npm do to a tree (folders, files written and renamed into place, O_EXCL temporary files, links,
    copies); a FIFO; /dev/stdout and a process substitution opened for writing; the umask kept."""
    proj = repo(base)
    work = (
        "cd /tmp && git init -q r && cd r && echo x > x && git add x && git -c user.name=t -c user.email=t@e commit -qm x"
        " && echo tmp-repo-ok; cd " + str(proj) + " && git -c user.name=t -c user.email=t@e checkout -qb feat && echo b > b"
        " && git add b && git -c user.name=t -c user.email=t@e commit -qm b && git log --oneline | wc -l;"
        f" {PY} -c \"import os, shutil, tempfile; os.makedirs('site/pkg/sub', exist_ok=True);"
        " f = tempfile.NamedTemporaryFile('w', dir='site', delete=False); f.write('x'); f.close(); os.replace(f.name, 'site/pkg/m.py');"
        " os.symlink('pkg/m.py', 'site/link.py'); os.link('site/pkg/m.py', 'site/hard.py'); shutil.copytree('site', 'site2');"
        " os.makedirs('node_modules/.bin'); os.symlink('../x/cli.js', 'node_modules/.bin/x'); print('tree-ok')\";"
        " mkfifo p; (sleep 0.3; cat p > fifo.out) & echo fifo-ok > p; wait; cat fifo.out;"
        " echo so > /dev/stdout; echo ps | tee >(cat > ps.out) > /dev/null; sleep 0.3; cat ps.out;"
        " umask 027; touch um; stat -c %a um")
    (proj / "work.sh").write_text(work + "\n")
    out = sandboxed(base, ["bash work.sh"])[0]
    assert out.split("\n")[:7] == ["tmp-repo-ok", "2", "tree-ok", "fifo-ok", "so", "ps", "640"], out
    assert (proj / "site" / "link.py").is_symlink() and (proj / "site2" / "pkg" / "m.py").is_file() and (proj / "site" / "hard.py").read_text() == "x"
    assert "refused" not in out


def test_git_makes_its_own_heads_inside_the_git_directory(base: Path) -> None:
    """A repository made on the host with no commit yet: the first commit in the sandbox writes ``logs/HEAD``; a
    remote's ``refs/remotes/origin/HEAD`` (what ``git fetch`` and ``git remote set-head`` write) is made too. A
    folder inside the git directory still cannot get ``objects`` (it would be a repository of its own)."""
    proj = base / "proj"
    git(base, "init", "-q", "-b", "main", cwd=proj)
    (proj / "work.sh").write_text(
        "echo a > a && git add a && git -c user.name=t -c user.email=t@e commit -qm first && echo committed;"
        " git update-ref refs/remotes/origin/main HEAD && git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main"
        " && echo remote-head; mkdir .git/refs/x; mkdir .git/refs/x/objects; echo end\n")
    out = sandboxed(base, ["bash work.sh"])[0]
    assert "committed" in out and "remote-head" in out and "end" in out, out
    assert (proj / ".git" / "logs" / "HEAD").is_file() and (proj / ".git" / "refs" / "remotes" / "origin" / "HEAD").is_file()
    assert not (proj / ".git" / "refs" / "x" / "objects").exists() and "refused to create" in out
    assert git(base, "log", "--oneline", cwd=proj).stdout.count("\n") == 1


PROC = r"""
import os
got = []
for n in range(0, 40):
    try:
        fd = os.open("/proc/2/fd/%d" % n, os.O_RDWR | os.O_CREAT, 0o600)
        got.append("opened %d -> %s" % (n, os.readlink("/proc/self/fd/%d" % fd)))
    except OSError as exc:
        pass
print("runner-fds", got)
"""


def test_the_supervisor_hands_out_none_of_its_own_descriptors(base: Path) -> None:
    """``open("/proc/2/fd/N", O_CREAT)`` is made by the supervisor, a thread of the runner (PID 2), which may open
    its own descriptors (its socket to the host, its listener): anything under another process's /proc is
    refused, so the command gets none of them."""
    (base / "proj" / "proc.py").write_text(PROC)
    out = sandboxed(base, [f"{PY} proc.py"])[0]
    assert "runner-fds []" in out, out


def test_a_link_from_the_workspace_into_the_sandboxs_own_tmp_is_refused(base: Path) -> None:
    """A repository made in the sandbox's /tmp (allowed: it is scratch) is, on the host, the folder
    ``$TMPDIR/agentloop-sandbox-...``; a link to it from the workspace would lead the user's git there. Such a link
    is refused, as is one through ``/proc`` (``/proc/PID/root/tmp`` on the host), whatever chain of links tries;
    a link to anything else is made."""
    proj = base / "proj"
    (proj / "p.sh").write_text(
        "t=$(awk '$5==\"/tmp\"{print $4}' /proc/self/mountinfo | head -1); git init -q /tmp/x &&"
        f" printf '[core]\\n\\tfsmonitor = touch {base}/pwned-fsmonitor\\n' >> /tmp/x/.git/config;"
        " ln -s $t/x link1; ln -s / up; ln -s up${t}/x link2; ln -s /proc/1/root/tmp/x link3; ln -s ../proc link4;"
        " ln -s /usr/bin/env ok; echo end\n")
    a = agent(base, ["bash p.sh"])
    try:  # the host's git looks through the links while the session (and its /tmp) is still there
        res = a.ask("go")
        out = str([m for m in res.messages if m.get("role") == "tool"][0].get("content"))
        for name in ("link1", "link2", "link3", "link4"):
            try:
                git(base, "status", cwd=proj / name)
            except OSError:
                pass  # not made, or not followable on the host (/proc/1/root)
        assert not (base / "pwned-fsmonitor").exists()
    finally:
        a.close()
    assert "end" in out and out.count("Operation not permitted") == 4, out
    assert sorted(p.name for p in proj.iterdir() if p.is_symlink()) == ["ok", "up"]


RACE = r"""
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8)
stop = []
def flip():
    while not stop:
        ctypes.memmove(buf, b"HEAD\0", 5)
        ctypes.memmove(buf, b"ok1\0\0", 5)
t = threading.Thread(target=flip)
t.start()
made = tries = 0
end = time.time() + 3
while time.time() < end and not os.path.lexists("HEAD"):
    tries += 1
    made += libc.mkdir(buf, 0o755) == 0
    if os.path.isdir("ok1"):
        os.rmdir("ok1")
stop.append(1)
t.join()
print("tries", tries, "made", made, "HEAD", os.path.lexists("HEAD"))
"""


def test_a_second_thread_changing_the_path_after_the_check_makes_nothing(base: Path) -> None:
    """One thread calls ``mkdir(buf)`` in a loop while another flips ``buf`` between ``ok1`` and ``HEAD``: the
    supervisor makes the folder from its own copy of the path, so ``HEAD`` is never made."""
    (base / "proj" / "race.py").write_text(RACE)
    out = sandboxed(base, [f"{PY} race.py"])[0]
    assert "HEAD False" in out, out
    assert int(out.split("made ")[1].split()[0]) > 0  # ok1 was made: the loop did run
    assert not (base / "proj" / "HEAD").exists()


def test_the_host_never_sees_a_planted_repository(base: Path) -> None:
    """No window: while a background command keeps planting (``git init``, a bare repository as plain files),
    a host thread looking every 0.2 ms never sees a ``.git`` or a ``HEAD`` in the workspace."""
    proj = base / "proj"
    plant = ("for i in $(seq 1 60); do git init -q d$i 2>/dev/null; mkdir -p b$i/objects b$i/refs;"
             " echo 'ref: refs/heads/main' > b$i/HEAD 2>/dev/null; done; touch planted-all; sleep 30")
    seen: list[str] = []
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            for i in range(1, 61):
                for p in (proj / f"d{i}" / ".git", proj / f"b{i}" / "HEAD"):
                    if os.path.lexists(p):
                        seen.append(str(p))
            time.sleep(0.0002)

    (proj / "plant.sh").write_text(plant + "\n")
    a = agent(base, [{"command": "bash plant.sh", "run_in_background": True}])
    t = threading.Thread(target=look, daemon=True)
    t.start()
    try:
        a.ask("go")
        deadline = time.monotonic() + 60
        while not (proj / "planted-all").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (proj / "planted-all").exists()
    finally:
        stop.set()
        t.join()
        a.close()
    assert seen == []
    assert (proj / "b60" / "objects").is_dir()  # the plain folders were made; only the names refused were not


SYSCALLS = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *a)
    return r, ctypes.get_errno()
print("openat2", *call(437, -100, b"x", 0, 0))
print("io_uring_setup", *call(425, 1, 0))
print("x32-mkdir", *call(0x40000000 | 83, b"x32dir", 0o755))
print("plain-mkdir", *call(83, b"plaindir", 0o755))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the syscall numbers below are x86_64's")
def test_openat2_io_uring_and_the_x32_abi_are_refused(base: Path) -> None:
    """``openat2`` keeps its flags in memory (ENOSYS: glibc falls back to ``openat``); io_uring's operations never
    meet seccomp (EPERM); a call through the x32 ABI (its number with bit 30 set) is refused (ENOSYS)."""
    (base / "proj" / "calls.py").write_text(SYSCALLS)
    out = sandboxed(base, [f"{PY} calls.py"])[0]
    assert f"openat2 -1 {errno.ENOSYS}" in out
    assert f"io_uring_setup -1 {errno.EPERM}" in out
    assert f"x32-mkdir -1 {errno.ENOSYS}" in out
    assert "plain-mkdir 0" in out
    assert not (base / "proj" / "x32dir").exists() and (base / "proj" / "plaindir").is_dir()


def _in_a_child(work: Callable[[], str]) -> str:
    """What ``work()`` returns, run in a forked child (so the filter it may install stays there)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(w, work().encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    answer = os.read(r, 4096).decode()
    os.close(r)
    return answer


def _mkdir(path: str) -> str:
    """"made", or the error number ``mkdir`` failed with."""
    try:
        os.mkdir(path)
        return "made"
    except OSError as exc:
        return str(exc.errno)


def test_with_no_supervisor_listening_every_trapped_call_fails() -> None:
    """Fail closed: once the listener is gone (the supervisor died), the kernel fails each trapped call (ENOSYS)
    instead of letting it through; calls that make nothing still run."""
    import ctypes
    import struct

    def work() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        machine = os.uname().machine
        code = supervisor.filter_program(machine)
        prog = ctypes.create_string_buffer(code)
        fprog = ctypes.create_string_buffer(struct.pack("=HxxxxxxQ", len(code) // 8, ctypes.addressof(prog)))
        d = tempfile.mkdtemp()  # made before the filter
        libc.prctl(38, 1, 0, 0, 0)
        fd = libc.syscall(ctypes.c_long(supervisor.SYS_SECCOMP[machine]), ctypes.c_long(1), ctypes.c_long(8), fprog)
        os.close(fd)
        return f"{_mkdir(os.path.join(d, 'x'))} {os.path.isdir(d)}"

    answer = _in_a_child(work)
    assert answer == f"{errno.ENOSYS} True", answer


def test_a_supervisor_that_stops_fails_every_creation_and_says_why() -> None:
    """The supervisor's thread stopping (here: on its first call) closes its listener: that call and every later
    one fail (ENOSYS), nothing is made, and ``broken`` says why (the runner reports it to the host)."""
    d = tempfile.mkdtemp()

    def work() -> str:
        sup = supervisor.Supervisor()

        def die(*_a: object) -> None:
            raise SystemExit("stopped")

        sup._answer = die  # type: ignore[method-assign]
        assert sup.start() is None
        got = [_mkdir(os.path.join(d, name)) for name in ("a", "b")]
        return f"{' '.join(got)} {sorted(os.listdir(d))} {sup.broken is not None}"

    answer = _in_a_child(work)
    shutil.rmtree(d, ignore_errors=True)
    assert answer == f"{errno.ENOSYS} {errno.ENOSYS} [] True", answer


def test_the_host_says_what_the_runner_reports_and_restarts_a_broken_sandbox(base: Path) -> None:
    """The runner's answers carry the refusals and a stopped supervisor: the next result names them, and a
    sandbox whose supervisor stopped is closed so the next command starts a new one."""
    home = str(base / "home")
    settings = sbx.settings_from([], mode=None, cwd=str(base / "proj"), user_home=home)
    sb = sbx.Sandbox.create(settings, roots=[str(base / "proj")], agentloop_home=str(base / "alhome"), user_home=home)
    closed: list[bool] = []
    runner = sbx._Runner.__new__(sbx._Runner)
    runner.refused, runner.broken, runner.ended, runner.supervisor_off = [], None, False, None
    runner.close = lambda: closed.append(True)  # type: ignore[method-assign]
    got = runner.take(b'{"code": 0, "refused": ["/w/HEAD: a name (HEAD) that makes a git repository"],'
                      b' "broken": "the creation supervisor stopped (x); every creation now fails"}')
    assert got["code"] == 0
    sb._runner = runner
    notes = sb._supervisor_notes()
    assert any("refused to create /w/HEAD" in n for n in notes)
    assert any("supervisor stopped" in n and "restarted" in n for n in notes)
    assert closed and sb._runner is None


def test_killing_the_supervisor_from_inside_ends_the_command_and_the_host_says_so(base: Path) -> None:
    """The supervisor is a thread of the session's runner (PID 2 in the sandbox): killing it kills the whole
    sandbox, so nothing is made without it; the result says the sandbox ended, and the next command runs in a
    new one, supervised again."""
    (base / "proj" / "kill.sh").write_text("kill -KILL 2; sleep 2; touch after-kill; echo survived\n")
    (base / "proj" / "next.sh").write_text("git init -q sub; echo next\n")
    out = sandboxed(base, ["bash kill.sh", "bash next.sh"])
    assert "survived" not in out[0] and not (base / "proj" / "after-kill").exists()
    assert "the session's sandbox ended during the command" in out[0]
    assert "next" in out[1] and "refused to create" in out[1]
    assert not (base / "proj" / "sub" / ".git").exists()


def test_a_command_in_a_bubblewrap_of_its_own_is_supervised_too(base: Path) -> None:
    """The launcher path (a sub-agent's sandbox, a background command while the runner is busy, hooks): the
    same refusals, written to the command's output."""
    home = str(base / "home")
    settings = sbx.settings_from([], mode=None, cwd=str(base / "proj"), user_home=home)
    sb = sbx.Sandbox.create(settings, roots=[str(base / "proj")], agentloop_home=str(base / "alhome"), user_home=home)
    sb.use_runner = False
    cmd = "git init -q sub; echo x > HEAD; mkdir ok && echo fine"
    try:
        argv, extra = sb.wrap(["/bin/bash", "-c", cmd], str(base / "proj"), cmd)
        p = subprocess.run(argv, cwd=base / "proj", env={**os.environ, **extra}, capture_output=True, text=True, timeout=60)
    finally:
        sb.close()
    assert "fine" in p.stdout
    assert "sandbox: refused to create" in p.stderr and "sub/.git" in p.stderr
    assert names(base / "proj", "HEAD", ".git") == [] and (base / "proj" / "ok").is_dir()


def run_filter(code: bytes, arch: int, nr: int, args: tuple[int, ...] = (0,) * 6) -> int:
    """What the classic BPF program ``code`` returns for one call (the few opcodes it uses, interpreted here)."""
    import struct

    data = struct.pack("=iIQ6Q", nr, arch, 0, *args)
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = struct.unpack_from("=HBBI", code, pc * 8)
        pc += 1
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x15:
            pc += jt if acc == k else jf
        elif op == 0x45:
            pc += jt if acc & k else jf
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unknown opcode {op:#x}")


def test_the_filter_traps_creations_and_refuses_other_abis_on_each_machine() -> None:
    """The hand-assembled filters, run: each creating call is sent to the supervisor, ``open``/``openat`` only with
    ``O_CREAT``; ``openat2`` ENOSYS, ``io_uring_setup`` EPERM; another ABI (i386 through ``int 0x80``, whose
    ``arch`` differs) and the x32 ABI (bit 30 of the number) ENOSYS whatever the call; everything else runs."""
    notify, allow = 0x7FC00000, 0x7FFF0000
    enosys, eperm = 0x50000 | errno.ENOSYS, 0x50000 | errno.EPERM
    for machine, table in supervisor.SYSCALLS.items():
        code = supervisor.filter_program(machine)
        arch = supervisor.AUDIT_ARCH[machine]
        for name in ("creat", "mkdir", "mkdirat", "mknod", "mknodat", "link", "linkat", "symlink", "symlinkat",
                     "rename", "renameat", "renameat2"):
            if name in table:
                assert run_filter(code, arch, table[name]) == notify, (machine, name)
        assert run_filter(code, arch, table["openat"], (0, 0, os.O_WRONLY | os.O_CREAT, 0, 0, 0)) == notify
        assert run_filter(code, arch, table["openat"], (0, 0, os.O_RDONLY, 0, 0, 0)) == allow
        if "open" in table:
            assert run_filter(code, arch, table["open"], (0, os.O_CREAT | (1 << 40), 0, 0, 0, 0)) == notify
            assert run_filter(code, arch, table["open"], (0, 1 << 40, 0, 0, 0, 0)) == allow
        assert run_filter(code, arch, table["openat2"]) == enosys
        assert run_filter(code, arch, table["io_uring_setup"]) == eperm
        assert run_filter(code, arch, 0x40000000 | table["mkdirat"]) == enosys
        assert run_filter(code, arch, 0x40000000 | 39) == enosys  # even a call that makes nothing
        assert run_filter(code, 0x40000003, 39) == enosys  # i386
        assert run_filter(code, arch, 39) == allow
    assert supervisor.unavailable("riscv64") is not None


def test_the_facts_the_supervisor_writes_again_equal_their_declarations() -> None:
    """The supervisor runs inside the sandbox without agentloop's package, so it spells again what the host's
    code declares: the name of a session's private /tmp (links into it are refused), and the names gitguard
    keeps read-only or watches in a git directory (none of them may be made there)."""
    from agentloop.agent.sandbox import gitguard

    assert supervisor.SANDBOX_TMP_PREFIX == sbx.TMP_PREFIX
    assert set(gitguard.GITDIR_READ_ONLY) | set(gitguard.GITDIR_WATCH) <= supervisor.PLANNED_FORBIDDEN


def test_where_creations_cannot_be_supervised_the_sandbox_listing_and_the_first_result_say_so(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's promise for a machine the supervisor has no table for: the watch guards alone, and both
    ``/sandbox`` and the first command's result say creations are not supervised (once, not every result)."""
    monkeypatch.setattr(supervisor, "unavailable", lambda machine=None: "creations cannot be supervised on riscv64")
    a = agent(base, ["echo one", "echo two"])
    try:
        assert "not supervised (creations cannot be supervised on riscv64)" in a.sandbox.describe()
        res = a.ask("go")
    finally:
        a.close()
    outs = [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]
    assert "creations are not supervised (creations cannot be supervised on riscv64)" in outs[0], outs
    assert "not supervised" not in outs[1], outs


def test_a_file_a_command_creates_can_be_run_as_soon_as_it_is_closed() -> None:
    """A compiler's output or a copied program is run at once (``cp /usr/bin/true ./t && ./t``); the kernel
    refuses to run a file any process holds open for writing (ETXTBSY, execve(2)). The supervisor makes the file
    with its own descriptor: that copy is closed before the caller's call returns, however slow the supervisor's
    thread is to close it (here each close it makes waits 0.5 s, as a busy interpreter might)."""
    d = tempfile.mkdtemp()

    def work() -> str:
        sup = supervisor.Supervisor()
        real_close = supervisor.os.close

        def slow_close(fd: int) -> None:
            if threading.current_thread().name == "agentloop-creation-supervisor":
                time.sleep(0.5)
            real_close(fd)

        supervisor.os.close = slow_close  # type: ignore[assignment]
        assert sup.start() is None
        sup.set_policy({"roots": [d]})
        target = os.path.join(d, "t")
        with open("/usr/bin/true", "rb") as src, open(target, "wb") as out:
            out.write(src.read())
        os.chmod(target, 0o755)
        got = subprocess.run([target], capture_output=True)
        return f"ran {got.returncode}"

    try:
        answer = _in_a_child(work)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert answer == "ran 0", answer
