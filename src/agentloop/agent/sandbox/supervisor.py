"""The creation supervisor: inside the sandbox, every call that makes a name is made by this code, not the command.

docs/decisions/0025-a-supervisor-makes-every-name-a-command-creates.md. A seccomp filter sends each call that
creates a name (``open``/``openat`` with ``O_CREAT``, ``creat``, ``mkdir``, ``mknod``, ``link``, ``symlink``,
``rename`` and their ``*at`` forms) to a thread of the process that installed it (``SECCOMP_RET_USER_NOTIF``);
the thread reads the path from the caller's memory, resolves its parent folder itself, judges the final
(folder, name) by ``CreationPolicy.refusal`` and, when allowed, makes the call with its own copy of the path and
answers with the result (an opened file is handed back with ``SECCOMP_IOCTL_NOTIF_ADDFD``). It never lets the
caller's call go on (``CONTINUE``): another thread of the caller could change the path after the check.

The rule, inside the writable roots (the sandbox's ``/tmp`` and ``/dev`` are its own and pass): no name
``HEAD`` or ``.git`` comes into being but inside the git directories gitguard already mounted (and the folders
inside them, where git makes its own ``HEAD``s: ``logs/HEAD``, ``refs/remotes/origin/HEAD``); nothing is made in
a folder that holds a ``HEAD`` unless it is one of those; in a planned git directory ``config``, ``hooks``,
``info``, ``commondir``, ``config.worktree``, ``gitdir`` are not made, in a folder inside one ``objects``,
``commondir``, ``gitdir``, ``.git``, ``config``, ``config.worktree``, ``hooks`` are not; the names gitguard's plan could not mount
(``CreationPolicy.missing``) are not made. Git needs ``HEAD`` (with ``objects`` and ``refs``, or a
``commondir``) for a folder to be a repository and ``.git`` to find one, so no new repository can appear, not
even for an instant.

This file is self-contained (standard library only): the session's runner and the launcher of a command with
a bubblewrap of its own run its source inside the sandbox (``bubblewrap.runner_source``, ``launcher_source``),
where agentloop's package is not importable. So the facts it shares with the host's code are written here again
(``SANDBOX_TMP_PREFIX``, the git names of ``PLANNED_FORBIDDEN``); ``tests/test_create_supervisor.py`` holds them
equal to their declarations there.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import struct
import threading
from collections.abc import Callable, Sequence

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SYSCALLS = {
    "x86_64": {"open": 2, "creat": 85, "mkdir": 83, "mknod": 133, "link": 86, "symlink": 88, "rename": 82,
               "openat": 257, "mkdirat": 258, "mknodat": 259, "linkat": 265, "symlinkat": 266, "renameat": 264,
               "renameat2": 316, "openat2": 437, "io_uring_setup": 425},
    "aarch64": {"openat": 56, "mkdirat": 34, "mknodat": 33, "linkat": 37, "symlinkat": 36, "renameat": 38,
                "renameat2": 276, "openat2": 437, "io_uring_setup": 425},
}
"""The calls trapped, by machine (``uname -m``); any other machine has no supervisor (the watch alone)."""

X32_BIT = 0x40000000
O_CREAT = 0o100
AT_FDCWD = -100
AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = 0x400, 0x1000
RENAME_EXCHANGE = 2
_RET_ALLOW, _RET_NOTIFY, _RET_ERRNO = 0x7FFF0000, 0x7FC00000, 0x00050000
_NOTIF_RECV, _NOTIF_SEND, _NOTIF_ID_VALID, _NOTIF_ADDFD = 0xC0502100, 0xC0182101, 0x40082102, 0x40182103
_NOTIF = struct.Struct("=QIIiIQ6Q")  # id, pid, flags, nr, arch, instruction pointer, args
_RESP = struct.Struct("=QqiI")
_ADDFD = struct.Struct("=QIIII")

GIT_NAMES = ("HEAD", ".git")
PLANNED_FORBIDDEN = frozenset({"config", "hooks", "info", "commondir", "config.worktree", "gitdir"})
INNER_FORBIDDEN = frozenset({"objects", "commondir", "gitdir", ".git", "config", "config.worktree", "hooks"})
"""Inside a git directory's folders (not at its top): what would make one of them a repository of its own, or
give one (a socket ``objects`` made by ``bind``, which is not trapped) something to run."""
_CASELESS_FS = frozenset({0x4D44, 0x2011BAB0, 0x5346544E, 0x482B, 0xFF534D42, 0xFE534D42, 0x7366746E})
"""File systems whose names ignore case (vfat, exfat, ntfs, hfs+, smb, ntfs3): ``head`` is ``HEAD`` there."""


def unavailable(machine: str | None = None) -> str | None:
    """Why no supervisor can run on this machine (None: it can)."""
    m = machine or os.uname().machine
    return None if m in SYSCALLS else f"creations cannot be supervised on {m} (only x86_64 and aarch64)"


def filter_program(machine: str) -> bytes:
    """The classic BPF program for ``seccomp(SECCOMP_SET_MODE_FILTER)``, assembled by hand."""
    nrs = SYSCALLS[machine]
    prog: list[tuple[int, int, str | None, str | None]] = []  # code, k, jump-if-true label, jump-if-false label
    labels: dict[str, int] = {}

    def op(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        prog.append((code, k, jt, jf))

    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    op(ld, 4)  # arch
    op(jeq, AUDIT_ARCH[machine], None, "enosys")  # another ABI (i386 through int 0x80): refused
    op(ld, 0)  # nr
    op(jset, X32_BIT, "enosys")  # the x32 ABI
    for name in ("creat", "mkdir", "mkdirat", "mknod", "mknodat", "link", "linkat", "symlink", "symlinkat",
                 "rename", "renameat", "renameat2"):
        if name in nrs:
            op(jeq, nrs[name], "notify")
    op(jeq, nrs["openat"], "flags2")
    if "open" in nrs:
        op(jeq, nrs["open"], "flags1")
    op(jeq, nrs["openat2"], "enosys")  # its flags are in memory: glibc falls back to openat
    op(jeq, nrs["io_uring_setup"], "eperm")  # io_uring's operations never meet seccomp
    op(ret, _RET_ALLOW)
    for label, arg in (("flags2", 2), ("flags1", 1)):
        labels[label] = len(prog)
        op(ld, 16 + 8 * arg)  # the low 32 bits of the flags argument
        op(jset, O_CREAT, "notify")
        op(ret, _RET_ALLOW)
    for label, k in (("notify", _RET_NOTIFY), ("enosys", _RET_ERRNO | errno.ENOSYS), ("eperm", _RET_ERRNO | errno.EPERM)):
        labels[label] = len(prog)
        op(ret, k)
    out = b""
    for i, (code, k, jt, jf) in enumerate(prog):
        t = labels[jt] - i - 1 if jt else 0
        f = labels[jf] - i - 1 if jf else 0
        out += struct.pack("=HBBI", code, t, f, k)
    return out


SANDBOX_TMP_PREFIX = "agentloop-sandbox-"
"""The name of a session's private ``/tmp`` as the host sees it (``bubblewrap.TMP_PREFIX``)."""


class _Refused(Exception):
    """A creation the rule does not allow (answered EPERM, reported)."""


class CreationPolicy:
    """What may be made, from the host's plan for the newest command (paths as the sandbox sees them)."""

    def __init__(self, roots: Sequence[str] = (), gitdirs: Sequence[str] = (), missing: Sequence[str] = ()):
        self.roots = tuple(r.rstrip("/") or "/" for r in roots)
        self.planned: set[tuple[int, int]] = set()
        for d in gitdirs:
            try:
                st = os.stat(d)
            except OSError:
                continue
            self.planned.add((st.st_dev, st.st_ino))
        self.planned_paths = tuple(os.path.normpath(d) for d in gitdirs)
        self.missing = frozenset(os.path.normpath(m) for m in missing)
        self.missing_names = frozenset(os.path.basename(m) for m in self.missing)

    @classmethod
    def from_json(cls, data: object) -> CreationPolicy:
        d = data if isinstance(data, dict) else {}
        return cls(*(tuple(str(x) for x in d.get(k) or ()) for k in ("roots", "gitdirs", "missing")))

    def guarded(self, folder: str) -> bool:
        """``folder`` is in a writable root (and not in the sandbox's own ``/tmp`` or ``/dev`` inside it)."""
        best, guarded = -1, False
        for r, g in [*((r, True) for r in self.roots), ("/tmp", False), ("/dev", False)]:
            if (folder == r or folder.startswith(r.rstrip("/") + "/")) and len(r) > best:
                best, guarded = len(r), g
        return guarded

    def link_refusal(self, pfd: int, target: str) -> str | None:
        """Why a symbolic link to ``target`` may not be made in the folder at ``pfd`` (None: it may).

        The host resolves a link in the workspace in its own view, where the sandbox's ``/tmp`` is the folder
        ``$TMPDIR/agentloop-sandbox-...`` and ``/proc/PID/root`` or ``cwd`` leads into a sandboxed process's:
        a link reaching either would show the host's git a repository made there (scratch repositories are
        allowed in ``/tmp``). Reaching them takes that name as a component of some link's target, each judged
        here, so no chain of links gets there either."""
        parts = target.split("/")
        if not any(p == "proc" or p.startswith(SANDBOX_TMP_PREFIX) for p in parts):
            return None
        if not self.guarded(_path_of(pfd)):
            return None
        return "a link into the sandbox's own /tmp or /proc, which the host's git would follow"

    def refusal(self, pfd: int, name: str) -> str | None:
        """Why making ``name`` in the folder open at ``pfd`` is refused (None: allowed)."""
        st = os.fstat(pfd)
        why, folder = None, None
        if (st.st_dev, st.st_ino) in self.planned:
            why = f"{name} in a git directory runs code for the host's git" if name in PLANNED_FORBIDDEN else None
        else:
            git_name = name in GIT_NAMES or (name.upper() == "HEAD" or name.lower() == ".git") and _caseless(pfd)
            head = not git_name and _lexists(pfd, "HEAD")
            if git_name or head or name in INNER_FORBIDDEN:
                folder = _path_of(pfd)
                if any(folder.startswith(p + "/") for p in self.planned_paths):
                    # inside a git directory (its refs, logs, worktrees...), where git makes HEAD itself
                    # (refs/remotes/origin/HEAD, logs/HEAD): no folder there may become a repository's own
                    why = f"{name} inside a git directory (it would make a repository there)" if name in INNER_FORBIDDEN else None
                elif git_name:
                    why = f"a name ({name}) that makes a git repository"
                elif head:
                    why = "a name in a folder holding HEAD (it would make a git repository)"
        if why is None and name in self.missing_names:
            folder = folder or _path_of(pfd)
            if os.path.join(folder, name) in self.missing:
                why = f"{name}, a file that would run code outside the sandbox"
        if why is not None and not self.guarded(folder or _path_of(pfd)):
            return None  # the sandbox's own /tmp or /dev: never seen by the user's tools
        return why


def _lexists(pfd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=pfd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def _caseless(pfd: int) -> bool:
    """Names ignore case in this folder (a case-insensitive file system, or ext4's casefold folders)."""
    buf = ctypes.create_string_buffer(120)
    if _libc.fstatfs(pfd, buf) == 0 and struct.unpack_from("=q", buf)[0] & 0xFFFFFFFF in _CASELESS_FS:
        return True
    try:
        fd = os.open(f"/proc/self/fd/{pfd}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return True  # cannot tell: as if it did
    try:
        import fcntl

        flags = bytearray(4)
        fcntl.ioctl(fd, 0x80086601, flags, True)  # FS_IOC_GETFLAGS
        return bool(struct.unpack("=I", flags)[0] & 0x40000000)  # FS_CASEFOLD_FL
    except OSError:
        return False
    finally:
        os.close(fd)


_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int) -> int:
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret


class _Target:
    """The calling thread of one notification: its memory, folders and umask, read through /proc."""

    def __init__(self, sup: Supervisor, nid: int, tid: int):
        self.tid = tid
        self.fds: list[int] = []
        self.sup = sup
        self.nid = nid
        try:
            self._look(sup, nid, tid)
        except BaseException:
            self.close()  # nothing opened here outlives the call
            raise

    def _look(self, sup: Supervisor, nid: int, tid: int) -> None:
        self.mem = self._open(f"/proc/{tid}/mem", os.O_RDONLY)
        root = self._open(f"/proc/{tid}/root", os.O_PATH)
        status = self._open(f"/proc/{tid}/status", os.O_RDONLY)
        mnt = os.stat(f"/proc/{tid}/ns/mnt")
        sup.valid(nid)  # everything opened above belongs to the caller, not to a process that took its pid
        rs, me = os.fstat(root), os.stat("/")
        if (rs.st_dev, rs.st_ino) != (me.st_dev, me.st_ino) or mnt.st_ino != sup.mnt_ns:
            raise _Refused("the calling process changed its root or mount namespace")
        text = os.read(status, 4096).decode("ascii", "replace")
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        self.tgid = int(fields.get("Tgid", "0").strip() or 0)
        self.umask = int(fields.get("Umask", "0022").strip() or "0022", 8)

    def _open(self, path: str, flags: int) -> int:
        fd = os.open(path, flags | os.O_CLOEXEC)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)

    def string(self, addr: int) -> str:
        """The NUL-terminated path at ``addr`` in the caller's memory (read once: this copy is what is used)."""
        out = b""
        while len(out) < 4096:
            chunk = 4096 - (addr + len(out)) % 4096
            try:
                got = os.pread(self.mem, chunk, addr + len(out))
            except (OSError, OverflowError):
                raise OSError(errno.EFAULT, "bad address") from None
            if not got:
                raise OSError(errno.EFAULT, "bad address")
            end = got.find(b"\0")
            if end >= 0:
                out += got[:end]
                self.sup.valid(self.nid)  # still the same caller: the bytes are its own
                return os.fsdecode(out)
            out += got
        raise OSError(errno.ENAMETOOLONG, "path too long")

    def _self_path(self, path: str) -> str:
        """``/proc/self``, ``/dev/fd``, ``/dev/stdout``... named as the caller's, not this process's."""
        for link, real in (("/proc/thread-self", f"/proc/{self.tgid}/task/{self.tid}"), ("/proc/self", f"/proc/{self.tgid}"),
                           ("/dev/fd", f"/proc/{self.tgid}/fd"), ("/dev/stdin", f"/proc/{self.tgid}/fd/0"),
                           ("/dev/stdout", f"/proc/{self.tgid}/fd/1"), ("/dev/stderr", f"/proc/{self.tgid}/fd/2")):
            if path == link or path.startswith(link + "/"):
                return real + path[len(link):]
        return path

    def parent(self, dirfd: int, path: str) -> tuple[int, str, bool]:
        """``(fd of the folder the last name is made in, the last name, trailing slash)``, resolved here."""
        if not path:
            raise OSError(errno.ENOENT, "empty path")
        path = self._self_path(path)
        slash = path.endswith("/") and path.strip("/") != ""
        head, _, name = path.rstrip("/").rpartition("/") if path.strip("/") else ("", "", "/")
        if path.startswith("/"):
            base = "/"
            head = head or "/"
        elif dirfd == AT_FDCWD:
            base = f"/proc/{self.tid}/cwd"
        else:
            base = f"/proc/{self.tid}/fd/{dirfd}"
        if path.startswith("/"):
            pfd = self._open(head, os.O_PATH | os.O_DIRECTORY)
        else:
            bfd = self._open(base, os.O_PATH)
            pfd = os.open(head or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=bfd)
            self.fds.append(pfd)
        if os.fstat(pfd).st_dev == self.sup.proc_dev:
            where = _path_of(pfd)
            if not any(where == p or where.startswith(p + "/") for p in (f"/proc/{self.tgid}", f"/proc/{self.tid}")):
                raise OSError(errno.EACCES, "another process's /proc")  # this process's own fds above all
        return pfd, name, slash


class Supervisor:
    """The thread that answers the trapped calls of every process below the one that installed the filter."""

    def __init__(self) -> None:
        self.listener = -1
        self.policy = CreationPolicy()
        self.broken: str | None = None
        """Why the supervisor stopped (its listener is then closed: every trapped call fails)."""
        self._refused: list[str] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.proc_dev = os.stat("/proc").st_dev
        self.mnt_ns = os.stat("/proc/self/ns/mnt").st_ino
        self.report: Callable[[str], None] | None = None
        """Called with each refusal too (the launcher writes it to the command's output)."""

    def set_policy(self, data: object) -> None:
        self.policy = CreationPolicy.from_json(data)

    def take_refused(self) -> list[str]:
        with self._lock:
            out, self._refused = self._refused, []
        return out

    def valid(self, nid: int) -> None:
        import fcntl

        fcntl.ioctl(self.listener, _NOTIF_ID_VALID, bytearray(struct.pack("=Q", nid)), True)

    def run(self) -> None:
        import fcntl

        self._ready.wait()
        if self.listener < 0:
            return
        buf = bytearray(_NOTIF.size)
        try:
            while True:
                buf[:] = bytes(_NOTIF.size)
                try:
                    fcntl.ioctl(self.listener, _NOTIF_RECV, buf, True)
                except OSError as exc:
                    if exc.errno in (errno.EINTR, errno.ENOENT):
                        continue
                    raise
                nid, tid, _flags, nr, _arch, _ip, *args = _NOTIF.unpack(buf)
                self._answer(nid, tid, nr, args)
        except BaseException as exc:  # fail closed: with the listener closed, every trapped call fails
            self.broken = f"the creation supervisor stopped ({exc!r}); every creation now fails"
        finally:
            os.close(self.listener)

    def _answer(self, nid: int, tid: int, nr: int, args: list[int]) -> None:
        val, err, target = 0, 0, None
        try:
            target = _Target(self, nid, tid)
            got = _serve(target, self.names.get(nr, ""), args)
            if isinstance(got, tuple):
                self._hand_back(nid, *got)
                return
            val = got
        except _Later as later:
            threading.Thread(target=self._finish, args=(nid, later), daemon=True).start()
            return
        except _Refused as r:
            err = errno.EPERM
            self._note(str(r))
        except OSError as exc:
            err = exc.errno or errno.EIO
        except Exception as exc:  # never let the call go on: answer it as failed
            err = errno.EPERM
            self._note(f"a creation could not be judged ({exc!r}): refused")
        finally:
            if target is not None:
                target.close()
        self._send(nid, val, err)

    def _send(self, nid: int, val: int, err: int) -> None:
        import fcntl

        try:
            fcntl.ioctl(self.listener, _NOTIF_SEND, bytearray(_RESP.pack(nid, val, -err if err else 0, 0)), True)
        except OSError:
            pass  # the caller is gone (killed meanwhile)

    def _hand_back(self, nid: int, fd: int, cloexec: bool) -> None:
        """Put ``fd`` into the caller's descriptor table, close this copy, then answer its call with the number.

        The copy is closed before the caller goes on: while any process holds a file open for writing, the
        kernel refuses to run it (ETXTBSY), so a ``cp prog ./p && ./p`` or a compiler's output run at once
        would fail whenever this thread is slow to close (the GIL held elsewhere, the CPU busy)."""
        import fcntl

        try:
            try:
                number = fcntl.ioctl(self.listener, _NOTIF_ADDFD,
                                     bytearray(_ADDFD.pack(nid, 0, fd, 0, os.O_CLOEXEC if cloexec else 0)), True)
            finally:
                os.close(fd)
        except OSError as exc:
            self._send(nid, 0, exc.errno or errno.EIO)
            return
        self._send(nid, number, 0)

    def _finish(self, nid: int, later: _Later) -> None:
        try:
            fd = later.work()
        except OSError as exc:
            self._send(nid, 0, exc.errno or errno.EIO)
            return
        self._hand_back(nid, fd, later.cloexec)

    def _note(self, line: str) -> None:
        with self._lock:
            if len(self._refused) < 50:
                self._refused.append(line[:500])
        if self.report is not None:
            self.report(line)

    names: dict[int, str] = {}

    def start(self) -> str | None:
        """Start the thread, then trap the calling thread's creations (and its children's, forked later).
        None when running; else why not (nothing was installed)."""
        machine = os.uname().machine
        why = unavailable(machine)
        if why is not None:
            return why
        Supervisor.names = {nr: name for name, nr in SYSCALLS[machine].items()}
        thread = threading.Thread(target=self.run, name="agentloop-creation-supervisor", daemon=True)
        thread.start()  # before the filter: the thread itself is never trapped
        code = filter_program(machine)
        prog = ctypes.create_string_buffer(code)
        fprog = struct.pack("=HxxxxxxQ", len(code) // 8, ctypes.addressof(prog))
        fbuf = ctypes.create_string_buffer(fprog)
        _libc.prctl(38, 1, 0, 0, 0)  # no_new_privs (bubblewrap set it already)
        # NEW_LISTENER, and WAIT_KILLABLE_RECV (5.19): once the call is received, only a fatal signal ends the
        # caller's wait, so a call this thread made is never restarted and made twice (mkdir then EEXIST)
        fd = _libc.syscall(ctypes.c_long(SYS_SECCOMP[machine]), ctypes.c_long(1), ctypes.c_long(8 | 32), fbuf)
        if fd < 0 and ctypes.get_errno() == errno.EINVAL:
            fd = _libc.syscall(ctypes.c_long(SYS_SECCOMP[machine]), ctypes.c_long(1), ctypes.c_long(8), fbuf)
        if fd < 0:
            e = ctypes.get_errno()
            self._ready.set()  # the thread ends: its listener stays -1
            return f"seccomp's user notification is not available here ({os.strerror(e)})"
        os.set_inheritable(fd, False)
        self.listener = fd
        self._ready.set()
        return None


def _mode(t: _Target, mode: int) -> int:
    return mode & 0o7777 & ~t.umask


def _serve(t: _Target, call: str, a: list[int]) -> int | tuple[int, bool]:
    """Make the trapped call ``call`` with arguments ``a`` for ``t``: its result, or (fd, close-on-exec)."""
    def s32(x: int) -> int:
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >= 1 << 31 else x

    if call in ("open", "openat", "creat"):
        if call == "openat":
            dirfd, path, flags, mode = s32(a[0]), t.string(a[1]), s32(a[2]), a[3]
        elif call == "open":
            dirfd, path, flags, mode = AT_FDCWD, t.string(a[0]), s32(a[1]), a[2]
        else:
            dirfd, path, flags, mode = AT_FDCWD, t.string(a[0]), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, a[1]
        return _open(t, dirfd, path, flags, _mode(t, mode)), bool(flags & os.O_CLOEXEC)
    if call in ("mkdir", "mkdirat"):
        dirfd, path, mode = (AT_FDCWD, t.string(a[0]), a[1]) if call == "mkdir" else (s32(a[0]), t.string(a[1]), a[2])
        pfd, name, _ = _allowed(t, dirfd, path)
        os.mkdir(name, _mode(t, mode), dir_fd=pfd)
        return 0
    if call in ("mknod", "mknodat"):
        dirfd, path, mode, dev = (AT_FDCWD, t.string(a[0]), a[1], a[2]) if call == "mknod" else (s32(a[0]), t.string(a[1]), a[2], a[3])
        pfd, name, slash = _allowed(t, dirfd, path)
        fmt = (mode & 0o170000) or 0o100000
        os.mknod(name + ("/" if slash else ""), fmt | _mode(t, mode), dev & 0xFFFFFFFF, dir_fd=pfd)
        return 0
    if call in ("symlink", "symlinkat"):
        text = t.string(a[0])
        dirfd, path = (AT_FDCWD, t.string(a[1])) if call == "symlink" else (s32(a[1]), t.string(a[2]))
        pfd, name, slash = _allowed(t, dirfd, path)
        why = t.sup.policy.link_refusal(pfd, text)
        if why is not None:
            raise _Refused(f"{os.path.join(_path_of(pfd), name)} -> {text}: {why}")
        os.symlink(text, name + ("/" if slash else ""), dir_fd=pfd)
        return 0
    if call in ("link", "linkat"):
        if call == "link":
            od, op_, nd, np_, fl = AT_FDCWD, t.string(a[0]), AT_FDCWD, t.string(a[1]), 0
        else:
            od, nd, fl = s32(a[0]), s32(a[2]), s32(a[4])
            op_, np_ = (t.string(a[1]) if a[1] else ""), t.string(a[3])
        return _link(t, od, op_, nd, np_, fl)
    if call in ("rename", "renameat", "renameat2"):
        if call == "rename":
            od, op_, nd, np_, fl = AT_FDCWD, t.string(a[0]), AT_FDCWD, t.string(a[1]), 0
        else:
            od, op_, nd, np_ = s32(a[0]), t.string(a[1]), s32(a[2]), t.string(a[3])
            fl = s32(a[4]) if call == "renameat2" else 0
        return _rename(t, od, op_, nd, np_, fl)
    raise OSError(errno.ENOSYS, "not a supervised call")


def _allowed(t: _Target, dirfd: int, path: str) -> tuple[int, str, bool]:
    """The parent folder and last name of ``path``, when the policy lets that name be made there."""
    pfd, name, slash = t.parent(dirfd, path)
    why = t.sup.policy.refusal(pfd, name)
    if why is not None:
        raise _Refused(f"{os.path.join(_path_of(pfd), name)}: {why}")
    return pfd, name, slash


def _link(t: _Target, od: int, op_: str, nd: int, np_: str, fl: int) -> int:
    pfd, name, slash = _allowed(t, nd, np_)
    if fl & AT_EMPTY_PATH and not op_:
        src = f"/proc/{t.tid}/fd/{od}" if od != AT_FDCWD else f"/proc/{t.tid}/cwd"
        return _check(_libc.linkat(AT_FDCWD, os.fsencode(src), pfd, os.fsencode(name + ("/" if slash else "")), AT_SYMLINK_FOLLOW))
    sfd, sname, sslash = t.parent(od, op_)
    return _check(_libc.linkat(sfd, os.fsencode(sname + ("/" if sslash else "")), pfd,
                               os.fsencode(name + ("/" if slash else "")), fl & AT_SYMLINK_FOLLOW))


def _rename(t: _Target, od: int, op_: str, nd: int, np_: str, fl: int) -> int:
    pfd, name, slash = _allowed(t, nd, np_)
    if fl & RENAME_EXCHANGE:
        sfd, sname, sslash = _allowed(t, od, op_)  # the other side gets a new entry too
    else:
        sfd, sname, sslash = t.parent(od, op_)
    return _check(_libc.renameat2(sfd, os.fsencode(sname + ("/" if sslash else "")), pfd,
                                  os.fsencode(name + ("/" if slash else "")), ctypes.c_uint(fl & 0xFFFFFFFF)))


def _open(t: _Target, dirfd: int, path: str, flags: int, mode: int) -> int:
    """``openat`` with ``O_CREAT``, made here: the final name judged at each symbolic link followed."""
    pfd, name, slash = t.parent(dirfd, path)
    if slash:
        raise OSError(errno.EISDIR, "is a directory")
    excl, nofollow = flags & os.O_EXCL, flags & os.O_NOFOLLOW
    for _ in range(40):
        why = t.sup.policy.refusal(pfd, name)
        fl = (flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC) & ~(os.O_CREAT | os.O_EXCL if why else 0)
        try:
            fd = os.open(name, fl, mode, dir_fd=pfd)
        except OSError as exc:
            if why is not None and exc.errno == errno.ENOENT:
                raise _Refused(f"{os.path.join(_path_of(pfd), name)}: {why}") from None
            if exc.errno in (errno.ENXIO, errno.EWOULDBLOCK) and not flags & os.O_NONBLOCK:
                return _open_blocking(name, flags, mode, pfd)  # a FIFO with no reader yet
            if exc.errno != errno.ELOOP or nofollow or excl:
                raise OSError(errno.EEXIST if exc.errno == errno.ELOOP and excl else exc.errno, exc.strerror) from None
            if os.fstat(pfd).st_dev == t.sup.proc_dev:  # a /proc link of the caller's own: it names what exists
                return os.open(name, (flags | os.O_CLOEXEC) & ~(os.O_CREAT | os.O_EXCL), mode, dir_fd=pfd)
            target = os.readlink(name, dir_fd=pfd)
            base = pfd if not target.startswith("/") else AT_FDCWD
            pfd, name, slash = _relative(t, base, target)
            if slash:
                raise OSError(errno.EISDIR, "is a directory") from None
            continue
        if why is not None and excl:
            os.close(fd)
            raise OSError(errno.EEXIST, "exists")
        if not flags & os.O_NONBLOCK:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd
    raise OSError(errno.ELOOP, "too many links")


def _relative(t: _Target, base: int, target: str) -> tuple[int, str, bool]:
    """A symbolic link's target resolved from the folder it is in (``base``), or from the root."""
    if base == AT_FDCWD:
        return t.parent(AT_FDCWD, target)
    slash = target.endswith("/")
    head, _, name = target.rstrip("/").rpartition("/")
    pfd = os.open(head or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=base) if head else os.dup(base)
    t.fds.append(pfd)
    if os.fstat(pfd).st_dev == t.sup.proc_dev:
        return t.parent(AT_FDCWD, os.path.join(_path_of(pfd), target.rpartition("/")[2]))
    return pfd, name or ".", slash


class _Later(Exception):
    """A call that may wait long (a FIFO's other end): made and answered in a thread of its own."""

    def __init__(self, work: Callable[[], int], cloexec: bool = False):
        super().__init__("later")
        self.work = work
        self.cloexec = cloexec


def _open_blocking(name: str, flags: int, mode: int, pfd: int) -> int:
    """Open a FIFO that waits for its other end, in a thread of its own so other creations go on: the name
    exists, so it is opened without ``O_CREAT`` and without following a link put there meanwhile."""
    mine = os.dup(pfd)

    def work() -> int:
        try:
            return os.open(name, (flags | os.O_NOFOLLOW | os.O_CLOEXEC) & ~(os.O_CREAT | os.O_EXCL), mode, dir_fd=mine)
        finally:
            os.close(mine)

    raise _Later(work, bool(flags & os.O_CLOEXEC))


def launch(policy: str, argv: Sequence[str]) -> int:
    """The launcher of a command with a bubblewrap of its own: supervise, then run ``argv`` as a child (so this
    process stays its ancestor) and exit with its status. Refusals are written to the command's output."""
    sup = Supervisor()

    def report(line: str) -> None:
        os.write(2, f"sandbox: refused to create {line}\n".encode())

    sup.report = report
    why = sup.start()
    if why is None:
        sup.set_policy(json.loads(policy))
    else:
        os.write(2, f"sandbox: {why}; the write watch alone guards this command\n".encode())
    mask = os.umask(0) if why is None else None
    _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans stay below this process
    pid = os.fork()
    if pid == 0:
        try:
            if mask is not None:
                os.umask(mask)
            os.execvp(argv[0], list(argv))
        except OSError as exc:
            os.write(2, f"sandbox: cannot start the command: {exc}\n".encode())
        os._exit(127)
    while True:
        got, status = os.waitpid(-1, 0)
        if got == pid:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
