"""Background shells: Bash's ``run_in_background``, ``BashOutput`` and ``KillShell`` (Claude Code's names).

Rules:

1. A background command starts through the one spawn path, in the
   session's sandbox beside the foreground commands (``Sandbox.launch_background``:
   a session of its own inside the runner, which a foreground command's end
   spares), so a server it starts answers later foreground calls on the
   sandbox's loopback. Where the runner cannot take it, it gets a bubblewrap
   of its own (as confined, with a loopback of its own). While one runs, a
   foreground command whose mounts differ from the runner's (a protected file
   such as ``.git/config`` created since) gets a bubblewrap of its own rather
   than a new runner, which would end the background commands.
2. Its output (stdout and stderr together) goes through a pipe to a file
   under the session's spill directory, at most ``OUTPUT_CAP`` bytes on disk
   per shell: past that the file starts over and the next read says how many
   unread bytes were dropped.
3. It runs until ``KillShell``, until its shell exits (whatever the shell
   left running is then ended with it), or until the session ends
   (``BackgroundShells.close``, called by ``Agent.close``): its whole process
   session (in the runner) or process group (its own bubblewrap) is killed.
4. ``BashOutput`` returns only what came since the last read, and the
   shell's status; with ``filter`` only the complete lines that match (a
   linear-time pattern) are shown, and the others are consumed.
5. A foreground command's own ``&`` children do not outlive the call (the
   sandbox ends them); ``run_in_background`` is the way to keep one running.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...config.private import private_dirs, private_file
from ...tools import ToolError
from .. import spawn
from .linear_regex import RegexError, compile_linear
from .record import ToolRecord
from .terminal_codes import strip_terminal_codes

__all__ = ["MAX_SHELLS", "OUTPUT_CAP", "BackgroundShells", "BASH_OUTPUT_TOOL", "KILL_SHELL", "start_background"]

OUTPUT_CAP = 8_000_000
"""Bytes of one shell's output kept on disk (unread output past this is dropped, and said)."""
MAX_SHELLS = 16
"""Background shells running at once; the next start is refused with what to do."""
FILTER_MAX_LINE = 1_000_000


@dataclass
class _Shell:
    id: str
    command: str
    proc: Any
    path: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: int = 0
    """Bytes the command has printed so far (all of them, dropped ones too)."""
    base: int = 0
    """The byte count at which the file on disk starts."""
    read: int = 0
    """The byte count up to which the model has read."""
    status_fd: int = -1
    """The shell writes its exit code here as it exits (a command in the session's runner has no Popen to wait on)."""
    status: str = "running"
    code: int | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _end(proc: Any) -> None:
    """Kill the command and everything it started: its session in the runner, or its process group."""
    end = getattr(proc, "end", None)
    if end is not None:
        end()
    elif proc.pid > 0:
        _killpg(proc.pid)


_HELD_MAX = 1 << 16
"""The longest line end the pump holds back for its redaction; past it, the line is written in parts."""


class BackgroundShells:
    """The background shells of one session: started, read and killed by id (``bash_1``, ``bash_2``...)."""

    def __init__(self, spill_dir: str, *, cap: int = OUTPUT_CAP):
        self.spill_dir = spill_dir
        self.cap = max(cap, 1 << 16)
        self._shells: dict[str, _Shell] = {}
        self._lock = threading.Lock()
        self._next = 1
        self.closed = False
        self.redact: Callable[[str], str] | None = None
        """Applied to the output before it is written to its file (``build_registry`` sets the session's): no held
        secret reaches the disk. By whole lines (``\\n`` or ``\\r``), so a secret is never cut by a read."""

    # -- starting --

    def start(
        self, command: str, *, cwd: str, argv: list[str], env: Mapping[str, str] | None,
        launcher: Callable[[list[str], dict[str, str], tuple[int, ...]], Any] | None,
        status_fd: tuple[int, int] | None = None,
    ) -> str:
        """Start ``argv`` (a shell running ``command``) in the background. Returns its id.

        Raises:
            ToolError: too many shells running, the session has ended, or it cannot start.
        """
        with self._lock:
            if self.closed:
                raise ToolError("the session has ended: no background command can start")
            running = [s.id for s in self._shells.values() if s.status == "running"]
            if len(running) >= MAX_SHELLS:
                raise ToolError(f"{len(running)} background shells are running (at most {MAX_SHELLS}); "
                                f"stop one with KillShell first ({', '.join(running)})")
            sid = f"bash_{self._next}"
            self._next += 1
            private_dirs(self.spill_dir)  # the command's output: the user's alone (0700, the log 0600)
            path = os.path.join(self.spill_dir, f"background-{sid}.log")
            try:
                proc = spawn.popen(argv, cwd=cwd, env=env, launcher=launcher,  # the one spawn path
                                   pass_fds=(status_fd[1],) if status_fd else ())
            except OSError as exc:
                raise ToolError(f"cannot start the background command in {cwd}: {exc.strerror or exc}") from None
            sh = _Shell(sid, command, proc, path, status_fd=status_fd[0] if status_fd else -1)
            self._shells[sid] = sh
        os.close(private_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
        threading.Thread(target=self._pump, args=(sh,), name=f"bg-{sid}", daemon=True).start()
        threading.Thread(target=self._wait, args=(sh,), name=f"bg-wait-{sid}", daemon=True).start()
        return sid

    def _pump(self, sh: _Shell) -> None:
        """Copy the command's output, redacted by whole lines, to its file, starting the file over past the cap."""
        assert sh.proc.stdout is not None
        fd = sh.proc.stdout.fileno()
        held = b""  # the end of a line not yet complete (at most _HELD_MAX bytes)
        with open(sh.path, "r+b", buffering=0) as f:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1 if chunk else len(chunk)
                if chunk and cut == 0 and len(held) + len(chunk) < _HELD_MAX:
                    held += chunk
                    continue
                out, held = (held + chunk, b"") if not chunk or cut == 0 else (held + chunk[:cut], chunk[cut:])
                if out:
                    self._write(sh, f, self._redacted(out))
                if not chunk:
                    break
        sh.proc.stdout.close()
        sh.done.set()

    def _redacted(self, data: bytes) -> bytes:
        if self.redact is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        shown = self.redact(text)
        return data if shown == text else shown.encode("utf-8", "surrogateescape")

    def _write(self, sh: _Shell, f: Any, chunk: bytes) -> None:
        with sh.lock:
            if sh.written - sh.base + len(chunk) > self.cap:
                f.seek(0)
                f.truncate()
                sh.base = sh.written
            f.write(chunk)
            sh.written += len(chunk)

    def _wait(self, sh: _Shell) -> None:
        """When the shell exits, end what it left running (its group) and record how it ended."""
        if getattr(sh.proc, "end", None) is not None:
            code = _read_status(sh.status_fd)
        else:
            code = sh.proc.wait()
            if sh.status_fd >= 0:
                os.close(sh.status_fd)
        _end(sh.proc)
        with sh.lock:
            if sh.status == "running":
                if code is not None and code < 0:
                    sh.status, sh.code = "killed", None
                else:
                    sh.status, sh.code = ("completed" if code == 0 else "failed"), code

    # -- reading and stopping --

    def _get(self, sid: Any, param: str) -> _Shell:
        sh = self._shells.get(sid) if isinstance(sid, str) else None
        if sh is None:
            known = ", ".join(self._shells) or "none started in this session"
            raise ToolError(f"{param}: no background shell {sid!r} (known: {known})")
        return sh

    def output(self, bash_id: Any, pattern: str | None = None) -> str:
        """What ``bash_id`` printed since the last read, and its status (``BashOutput``)."""
        sh = self._get(bash_id, "bash_id")
        matcher = None
        if pattern:
            try:
                matcher = compile_linear(pattern, never_nl=True)
            except RegexError as exc:
                raise ToolError(f"filter: {exc}") from None
        if sh.status != "running":
            sh.done.wait(timeout=2)  # the pipe's last bytes
        with sh.lock:
            dropped = max(sh.base - sh.read, 0)
            start = max(sh.read, sh.base)
            with open(sh.path, "rb") as f:
                f.seek(start - sh.base)
                data = f.read(sh.written - start)
            status, code = sh.status, sh.code
            if matcher is not None and status == "running" and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                if len(data) - cut < FILTER_MAX_LINE:  # a partial line waits for its end
                    data = data[:cut]
            sh.read = start + len(data)
        text = strip_terminal_codes(data.decode("utf-8", "replace"))
        if matcher is not None:
            text = "".join(line for line in text.splitlines(keepends=True) if matcher.search(line))
        return _report(sh, status, code, text, dropped)

    def kill(self, shell_id: Any) -> str:
        """Stop ``shell_id`` and everything it started (``KillShell``)."""
        sh = self._get(shell_id, "shell_id")
        with sh.lock:
            if sh.status != "running":
                return f"shell {sh.id} is not running ({_status(sh.status, sh.code)}); nothing to stop"
            sh.status = "killed"
        _end(sh.proc)
        sh.done.wait(timeout=5)
        return f"shell {sh.id} stopped (its command and everything it started were killed)"

    def running(self) -> list[str]:
        """The ids of the shells still running."""
        return [s.id for s in self._shells.values() if s.status == "running"]

    def close(self) -> None:
        """Kill every shell (the session ends); no shell starts after this."""
        with self._lock:
            self.closed = True
            shells = list(self._shells.values())
        for sh in shells:
            with sh.lock:
                if sh.status == "running":
                    sh.status = "killed"
            _end(sh.proc)
        for sh in shells:
            if getattr(sh.proc, "end", None) is not None:
                continue  # inside the runner: the sandbox reaps it
            try:
                sh.proc.wait(timeout=5)
            except Exception:  # it was killed: wait is only for the zombie
                pass


def _read_status(fd: int) -> int:
    """The exit code the shell wrote as it exited; -9 when it wrote none (killed)."""
    data = b""
    try:
        while True:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            data += chunk
            if b"\n" in data:  # what the shell started may hold the pipe open: its line is enough
                break
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        return int(data.decode().split()[-1])
    except (ValueError, IndexError):
        return -9


def _status(status: str, code: int | None) -> str:
    if status == "running":
        return "running"
    if status == "killed":
        return "killed"
    return f"exited with code {code}"


def _report(sh: _Shell, status: str, code: int | None, text: str, dropped: int) -> str:
    head = f"[shell {sh.id}: {_status(status, code)}]"
    parts = [head]
    if dropped:
        parts.append(f"[{dropped} bytes of unread output were dropped: at most {OUTPUT_CAP} bytes are kept]")
    parts.append(text.rstrip("\n") if text else "(no new output)")
    return "\n".join(parts)


# --- the tools ----------------------------------------------------------------------


def start_background(
    shells: BackgroundShells, command: str, *, cwd: str, shell: list[str], env: Mapping[str, str] | None,
    sandbox: Any,
) -> str:
    """Bash with ``run_in_background``: start ``command`` and say how to follow it."""
    launcher = None
    if sandbox is not None:
        sb = sandbox

        def launcher(argv: list[str], env_: dict[str, str], fds: tuple[int, ...]) -> Any:
            got = sb.launch_background(argv, cwd, command, env_, fds)  # beside the foreground commands
            return got if got is not None else sb.launch(argv, cwd, command, env_, fds, alone=True)

    r, w = os.pipe()
    try:
        script = f"trap 'echo $? >&{w} 2>/dev/null' EXIT\n{command}"
        sid = shells.start(command, cwd=cwd, argv=[*shell, script], env=env, launcher=launcher, status_fd=(r, w))
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return (f"Started in the background as shell {sid}. Read what it prints with BashOutput "
            f"(bash_id: \"{sid}\"); stop it with KillShell (shell_id: \"{sid}\"). It runs until stopped "
            "or the session ends, in the same sandbox as your other commands.")


_OUTPUT_DOC = (
    "Read what a background shell (Bash with run_in_background) printed since the last read, with "
    "its status (running, exited with a code, or killed). With `filter` (a regular expression), "
    "only the complete lines that match are shown; the others are consumed. "
    f"At most {OUTPUT_CAP} unread bytes are kept per shell."
)
_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "bash_id": {"type": "string", "description": "The shell id Bash returned (bash_1, ...)."},
        "filter": {"type": "string", "description": "Show only new lines matching this regular expression."},
    },
    "required": ["bash_id"],
    "additionalProperties": False,
}
_KILL_DOC = "Stop a background shell (Bash with run_in_background) and everything it started."
_KILL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"shell_id": {"type": "string", "description": "The shell id Bash returned (bash_1, ...)."}},
    "required": ["shell_id"],
    "additionalProperties": False,
}


def _bash_output(ctx: Any, **kw: Any) -> str:
    shells: BackgroundShells = ctx.background
    return shells.output(kw["bash_id"], kw.get("filter"))


def _kill_shell(ctx: Any, **kw: Any) -> str:
    shells: BackgroundShells = ctx.background
    return shells.kill(kw["shell_id"])


BASH_OUTPUT_TOOL = ToolRecord("BashOutput", _OUTPUT_DOC, _OUTPUT_SCHEMA, read_only=True, asks=False, acp="execute",
                              run=_bash_output)
"""BashOutput: what a background shell printed since the last look (``ctx.background``: the registry's shells)."""
KILL_SHELL = ToolRecord("KillShell", _KILL_DOC, _KILL_SCHEMA, asks=False, acp="execute", run=_kill_shell)
"""KillShell: it stops only shells the session started, so it asks no permission (as Claude Code's)."""
