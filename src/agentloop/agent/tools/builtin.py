"""The built-in tools, named and shaped as Claude Code's: Bash, Read, Write, Edit, Glob, Grep, LS, NotebookEdit (and the session tools, apply_patch).

Rules:

1. Names and argument names are Claude Code's (``file_path``, ``old_string``,
   ``replace_all``, ``-i``, ``output_mode``...), so permission rules and hook
   scripts written for Claude Code apply unchanged.
2. Every path goes through the ``Workspace``: resolved, checked, and opened
   without a check/use window. Glob, Grep and LS skip files git ignores,
   symlinks leading out, and paths a ``visible`` callback hides (the agent
   passes its Read-deny rules there).
3. Read, Glob, Grep and LS change nothing and say so (``read_only=True``):
   the loop may run them in parallel.
4. An output over 10,000 characters is written to a file under ``spill_dir``
   and the model gets a preview and the path (readable with Read and Grep).
   Read itself pages instead: up to 2,000 lines, stopping before about
   25,000 tokens (``READ_MAX_CHARS``) and saying which ``offset`` continues,
   so reading a spilled file never spills again. Images come back as image
   blocks, PDFs and notebooks as text (``read_media``, ``notebook``).
5. Bash runs in its own process group. On timeout (or ``kill_all``) the whole
   group is terminated, then killed, so no child survives it. Output kept in
   memory is capped (head and tail) whatever the command prints.
6. Failures the model should act on raise ``ToolError`` with a message
   written for it.
7. Edit, Write and NotebookEdit refuse a file the model has not read or that
   changed since it read it, and special, sparse or huge files before opening
   them (``file_state``).
"""

from __future__ import annotations

import bisect
import contextvars
import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from ...tools import Registry, ToolError
from .. import spawn
from .background import BackgroundShells, start_background
from .file_state import MAX_EDIT_BYTES, ReadState, check_regular, find_edit
from .linear_regex import Matcher, RegexError, compile_linear
from .notebook import dump_notebook, edit_notebook, load_notebook, render_notebook
from .read_media import MAX_IMAGE_BYTES, image_kind, image_result, pdf_text
from .record import ToolRecord
from .session_tools import SessionLink
from .terminal_codes import strip_terminal_codes
from .walk import Found, glob_to_regex, walk, walk_files
from .workspace import Workspace

__all__ = [
    "BASH",
    "BASH_OUTPUT_CAP",
    "EDIT",
    "GLOB",
    "GREP",
    "LS",
    "NOTEBOOK_EDIT",
    "READ",
    "SPILL_THRESHOLD",
    "WRITE",
    "CommandSandbox",
    "RunningProcesses",
    "build_registry",
    "spill",
]

SPILL_THRESHOLD = 10_000
"""Characters of tool output beyond which the output goes to a file."""
PREVIEW_HEAD = 2_000
PREVIEW_TAIL = 1_000
BASH_OUTPUT_CAP = 1_000_000
"""Bytes of a command's output kept in memory (half head, half tail)."""
MAX_TIMEOUT_MS = 600_000
READ_DEFAULT_LIMIT = 2_000
READ_MAX_LINE = 2_000
READ_MAX_CHARS = 100_000
"""Characters of one Read page: about 25,000 tokens (Claude Code's Read limit)."""
READ_MAX_TOKENS_SAID = "25,000"
PDF_MAX_BYTES = 100_000_000
GLOB_MAX_RESULTS = 1_000
GREP_MAX_FILE_BYTES = 20_000_000
GREP_TIME_LIMIT_S = 20.0
"""A search of many files stops with an error past this (each file is searched in linear time)."""
LS_MAX_ENTRIES = 1_000
KILL_GRACE_S = 1.0



class _SandboxFlags(Protocol):
    @property
    def allow_unsandboxed(self) -> bool: ...


class CommandSandbox(Protocol):
    """What Bash uses of the session's sandbox (``sandbox.bubblewrap.Sandbox``; named by shape, so the tools
    do not import the sandbox, whose settings reading reaches the permission rules that read these records)."""

    @property
    def active(self) -> bool: ...

    @property
    def settings(self) -> _SandboxFlags: ...

    def launch(self, argv: Sequence[str], cwd: str, command: str, env: Mapping[str, str], pass_fds: Sequence[int],
               *, alone: bool = False) -> Any: ...

    def explain(self, command: str, output: str) -> str | None: ...


def spill(text: str, spill_dir: str, tool_name: str) -> str:
    """``text`` itself when short, else a preview and the path of a file holding all of it.

    The file name is derived from the content, so the same output spills to
    the same file (replay writes nothing new).
    """
    if len(text) <= SPILL_THRESHOLD:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    from ...config.private import private_dirs, private_write

    private_dirs(spill_dir)
    path = os.path.join(os.path.realpath(spill_dir), f"{tool_name}-{digest}.txt")
    if not os.path.exists(path):
        private_write(path, text.encode("utf-8", "surrogatepass"))  # the user's alone, as the session file
    lines = text.count("\n") + 1
    return (
        f"{text[:PREVIEW_HEAD]}\n\n... [{len(text) - PREVIEW_HEAD - PREVIEW_TAIL} characters omitted] ...\n\n"
        f"{text[-PREVIEW_TAIL:]}\n\n"
        f"[The output was {len(text)} characters ({lines} lines), too long to show. "
        f"The full output is in {path} : read it with Read (offset/limit) or search it with Grep.]"
    )


def _spilling(
    fn: Callable[..., str], spill_dir: str, name: str, redact: Callable[[str], str] | None = None
) -> Callable[..., str]:
    """``fn`` with its output (and error message) redacted, then spilled when long."""
    clean = redact or (lambda s: s)

    def run(**kwargs: Any) -> str:
        try:
            out = fn(**kwargs)
        except ToolError as exc:
            msg = str(exc)
            red = clean(msg)
            if len(red) > SPILL_THRESHOLD:
                raise type(exc)(spill(red, spill_dir, name)) from None
            if red != msg:
                raise type(exc)(red) from None
            raise
        return spill(clean(out), spill_dir, name)

    run.__name__ = name
    run.__qualname__ = f"builtin.{name}"
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def _redacting(fn: Callable[..., Any], redact: Callable[[str], str] | None) -> Callable[..., Any]:
    """``fn`` with its output and error message redacted (Read: it pages, it never spills)."""
    if redact is None:
        return fn
    clean = redact

    def run(**kwargs: Any) -> Any:
        try:
            out = fn(**kwargs)
            if isinstance(out, dict):  # an image result: its text blocks are redacted, the image is data
                return {"content": [{**b, "text": clean(b["text"])} if b.get("type") == "text" else b for b in out["content"]]}
            return clean(out)
        except ToolError as exc:
            msg = str(exc)
            red = clean(msg)
            if red != msg:
                raise type(exc)(red) from None
            raise

    run.__name__ = fn.__name__
    run.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


# --- Bash --------------------------------------------------------------------


class RunningProcesses:
    """The process groups of the commands in flight, so an interrupt can end them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def kill_all(self) -> int:
        """Kill every running command's whole process group. Returns how many groups."""
        with self._lock:
            groups = list(self._groups)
        for g in groups:
            _killpg(g, signal.SIGKILL)
        return len(groups)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class _Capture:
    """A command's output: the first and the last ``cap/2`` bytes, and a count of the rest."""

    def __init__(self, cap: int):
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        extra = len(self.tail) - self.half
        if extra > 0:
            del self.tail[:extra]
            self.dropped += extra

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.tail:
            return head
        tail = self.tail.decode("utf-8", "replace")
        if self.dropped:
            return f"{head}\n... [{self.dropped} bytes of output dropped] ...\n{tail}"
        return head + tail


def _shell() -> list[str]:
    bash = shutil.which("bash")
    return [bash, "-c"] if bash else ["/bin/sh", "-c"]


def _start_shell(
    command: str,
    cwd: str,
    pass_fds: tuple[int, ...],
    env: Mapping[str, str] | None,
    launcher: Callable[[list[str], dict[str, str], tuple[int, ...]], Any] | None,
) -> Any:
    """The shell running ``command`` in a new session, its output on one pipe (a Popen or its look-alike)."""
    argv = [*_shell(), command]
    try:
        return spawn.popen(argv, cwd=cwd, env=env, pass_fds=pass_fds, launcher=launcher)  # the one spawn path
    except OSError as exc:
        raise ToolError(f"cannot start the shell in {cwd}: {exc.strerror or exc}") from None


BASH_OUTPUT: contextvars.ContextVar[Callable[[bytes], None] | None] = contextvars.ContextVar("bash_output", default=None)
"""A front end's listener for a Bash command's output as it arrives (the ACP server streams it to the
editor), called on the thread that reads the output; set it around ``Agent.ask``."""


def _pump(fd: int, cap: _Capture, on_output: Callable[[bytes], None] | None = None) -> None:
    """Read the command's output into ``cap`` (and to ``on_output``) until the pipe closes."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        cap.feed(chunk)
        if on_output is not None:
            try:
                on_output(chunk)
            except Exception:  # noqa: BLE001 - a listener that fails must not lose the command's output
                on_output = None


def _wait_or_kill(proc: Any, pgid: int, timeout_s: float) -> bool:
    """Wait for the shell; at the timeout end its group (SIGTERM, a grace, SIGKILL). True when it timed out."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _killpg(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _killpg(pgid, signal.SIGKILL)
        proc.wait()
        return True
    return False


def run_command(
    command: str,
    *,
    cwd: str,
    timeout_s: float,
    processes: RunningProcesses | None = None,
    output_cap: int = BASH_OUTPUT_CAP,
    pass_fds: tuple[int, ...] = (),
    env: Mapping[str, str] | None = None,
    launcher: Callable[[list[str], dict[str, str], tuple[int, ...]], Any] | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> tuple[int | None, str, bool]:
    """Run ``command`` in a shell in a new process group.

    Returns (exit code or None when killed, output with stderr merged, timed_out).
    On timeout the group gets SIGTERM, then SIGKILL after a short grace.
    When the shell exits but something it started still holds the output
    open, that group is killed too, so nothing it started outlives the call.
    ``env`` is the child's environment (default: this process's).
    ``launcher(argv, env, pass_fds)`` starts it instead of ``subprocess.Popen``
    (the sandbox, ``Sandbox.launch``): it returns a Popen or its look-alike.
    ``on_output(chunk)`` sees the output as it arrives (``BASH_OUTPUT``).
    """
    proc = _start_shell(command, cwd, pass_fds, env, launcher)
    pgid = proc.pid
    if processes is not None:
        processes.add(pgid)
    cap = _Capture(output_cap)
    assert proc.stdout is not None
    out = proc.stdout
    reader = threading.Thread(target=_pump, args=(out.fileno(), cap, on_output), daemon=True)
    reader.start()
    timed_out = False
    try:
        timed_out = _wait_or_kill(proc, pgid, timeout_s)
        reader.join(timeout=0.5 if not timed_out else KILL_GRACE_S)
        if reader.is_alive():
            # Something in the group still holds the pipe: end it.
            _killpg(pgid, signal.SIGTERM)
            reader.join(timeout=KILL_GRACE_S)
            _killpg(pgid, signal.SIGKILL)
            reader.join(timeout=KILL_GRACE_S)
        elif timed_out:
            _killpg(pgid, signal.SIGKILL)
    except BaseException:
        _killpg(pgid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        if processes is not None:
            processes.discard(pgid)
        out.close()
    code = proc.returncode
    return (None if timed_out or (code is not None and code < 0) else code), cap.text(), timed_out


# --- helpers for the file tools ------------------------------------------------


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _open_file(ws: Workspace, path: str) -> tuple[str, int]:
    """The real path of a file and a descriptor open on it (a regular file: anything else is refused)."""
    real = ws.resolve(path)
    try:
        fd = ws.open_resolved(real)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except (IsADirectoryError, NotADirectoryError):
        raise ToolError(f"cannot open {path}") from None
    except PermissionError:
        raise ToolError(f"permission denied: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot open {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{path} is a directory: use LS to list it")
    return real, fd


_CONTINUATION = bytes(range(0x80, 0xC0))
READ_CHUNK = 1 << 20
READ_LINE_BYTES = READ_MAX_LINE * 4
"""Bytes of one line kept in memory: enough for READ_MAX_LINE characters of UTF-8."""
READ_COUNT_MAX_BYTES = 1 << 30
"""After the page, lines are counted through at most this many more bytes."""


class _Page:
    """The numbered lines of one Read page: at most ``limit``, stopping before ``READ_MAX_CHARS`` characters."""

    def __init__(self, limit: int):
        self.limit = limit
        self.entries: list[str] = []
        self.size = 0
        self.full = False
        """The page stopped at its size, before ``limit`` lines."""

    def take(self, line_no: int, raw: bytes, over: int) -> bool:
        """Take line ``line_no`` (``raw``, and ``over`` characters beyond it) into the page; False when the page is full."""
        if raw.endswith(b"\r") and not over:
            raw = raw[:-1]
        text = raw.decode("utf-8", "surrogateescape")
        n = len(text) + over
        if n > READ_MAX_LINE:
            text = text[:READ_MAX_LINE] + f" ... [line truncated, {n} characters]"
        entry = f"{line_no:>6}\t{text}\n"
        entries = self.entries
        if entries and len(entries) >= self.limit:
            return False
        if entries and self.size + len(entry) > READ_MAX_CHARS - 300:
            self.full = True
            return False
        entries.append(entry)
        self.size += len(entry)
        return len(entries) < self.limit


def _read_page(fd: int, offset: int, limit: int) -> tuple[_Page, int, bool] | None:
    """Stream the lines ``offset`` .. ``offset + limit - 1`` of a file, in bounded memory.

    Returns (the page of numbered entries, lines counted, whether the count reached the
    end of the file), or None for a binary file (a NUL byte in its first
    8 KiB, sniffed before anything else is read). A line is kept up to
    ``READ_LINE_BYTES``; the rest of it is only counted. The page stops before
    ``READ_MAX_CHARS`` characters. Memory stays near ``READ_CHUNK`` whatever
    the size of the file or of one line.
    """
    if _is_binary(os.pread(fd, 8192, 0)):
        return None
    page = _Page(limit)
    line_no = 1  # the line being read
    buf = bytearray()
    over = 0  # characters of the current line beyond ``buf``
    in_line = False  # bytes of the current line have been read
    paging = True
    scanned_after = 0
    with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
        while True:
            chunk = f.read(READ_CHUNK)
            if not chunk:
                break
            if not paging:
                line_no += chunk.count(b"\n")
                in_line = not chunk.endswith(b"\n")
                scanned_after += len(chunk)
                if scanned_after > READ_COUNT_MAX_BYTES:
                    return page, line_no - 1, False
                continue
            if line_no < offset and line_no + chunk.count(b"\n") < offset:
                line_no += chunk.count(b"\n")  # the whole chunk lies before the page
                in_line = not chunk.endswith(b"\n")
                continue
            pos = 0
            n = len(chunk)
            while pos < n:
                j = chunk.find(b"\n", pos)
                end = j if j >= 0 else n
                if line_no >= offset:
                    room = READ_LINE_BYTES - len(buf)
                    if room > 0:
                        buf += chunk[pos : min(end, pos + room)]
                    if end - pos > room:
                        rest = chunk[pos + max(room, 0) : end]
                        over += len(rest.translate(None, _CONTINUATION))  # UTF-8 lead bytes: characters
                in_line = True
                if j < 0:
                    break
                if line_no >= offset and not page.take(line_no, bytes(buf), over):
                    paging = False
                    line_no += 1 + chunk.count(b"\n", j + 1)
                    in_line = not chunk.endswith(b"\n")
                    break
                line_no += 1
                in_line = False
                buf.clear()
                over = 0
                pos = j + 1
    if paging and in_line and line_no >= offset:
        page.take(line_no, bytes(buf), over)
    total = line_no if in_line else line_no - 1
    return page, total, True


def _read_text(ws: Workspace, path: str) -> tuple[str, str | None]:
    """The real path and text of a file; the text is None for a binary file."""
    real, fd = _open_file(ws, path)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{path} is a directory: use LS to list it")
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    return real, None if _is_binary(data) else data.decode("utf-8", "surrogateescape")


def _read_found(ws: Workspace, found: Found) -> tuple[float, bytes] | None:
    """(mtime, content) of a regular file the walk found; None to skip it.

    Opened relative to its directory's descriptor with O_NOFOLLOW (no second
    walk from the root), or through the workspace for a symlinked file.
    """
    try:
        if found.dir_fd is not None:
            fd = os.open(found.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=found.dir_fd)
        else:
            fd = ws.open_resolved(found.path)
    except (OSError, ToolError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > GREP_MAX_FILE_BYTES:
            return None
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 65536))
            if not chunk:
                break
            chunks.append(chunk)
        return st.st_mtime, b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def file_lines(text: str) -> list[str]:
    """Lines as ``cat -n`` counts them: split at ``\n`` only (not at form feeds or U+2028)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def numbered_lines(lines: list[str], start: int) -> str:
    return "".join(f"{start + i:>6}\t{line}\n" for i, line in enumerate(lines))


# --- the tools --------------------------------------------------------------------


class _Shared:
    """What the built-in tools of one registry share: the workspace, what may be seen, Bash's settings and directory."""

    def __init__(
        self,
        ws: Workspace,
        shell_timeout_s: int,
        processes: RunningProcesses | None,
        visible: Callable[[str], bool] | None,
        sandbox: CommandSandbox | None,
        env: Mapping[str, str] | None,
        read_state: ReadState | None = None,
    ):
        self.ws = ws
        self.read_state = read_state if read_state is not None else ReadState()
        """What the model has read, for read-before-edit and the stale-file check (``file_state``)."""
        self.shell_timeout_s = shell_timeout_s
        self.procs = processes if processes is not None else RunningProcesses()
        self.is_visible: Callable[[str], bool] = visible or (lambda _p: True)
        self.sandbox = sandbox
        self.env = env
        self.patch_guard: Callable[[str], str | None] = lambda _p: None
        self.shell_cwd = ws.root
        """Where the next Bash command starts: `cd` carries over from one call to the next."""
        self.max_timeout_ms = MAX_TIMEOUT_MS
        """The longest timeout the model may ask Bash for (Claude Code's ``BASH_MAX_TIMEOUT_MS``)."""
        self.background: BackgroundShells | None = None
        """Bash's ``run_in_background`` shells (``background.py``)."""
        self.session = SessionLink()
        """What TodoWrite, ExitPlanMode and AskUserQuestion reach of the agent (``session_tools``)."""


def _bound(fn: Callable[..., Any], shared: _Shared) -> Callable[..., Any]:
    """The tool ``fn`` called with the registry's shared state and the model's arguments."""

    def run(**kw: Any) -> Any:
        return fn(shared, **kw)

    run.__name__ = fn.__name__
    run.__qualname__ = fn.__qualname__
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def _bash(t: _Shared, **kw: Any) -> str:
    command = kw["command"]
    timeout_ms = kw.get("timeout")
    if not command.strip():
        raise ToolError("the command is empty")
    if timeout_ms is None:
        timeout_s = float(t.shell_timeout_s)
    else:
        timeout_s = min(max(int(timeout_ms), 1), t.max_timeout_ms) / 1000
    cwd = t.shell_cwd
    if not os.path.isdir(cwd) or not t.ws.contains(os.path.realpath(cwd), for_write=True):
        cwd = t.shell_cwd = t.ws.root
    # unsandboxed only as asked and approved (the pipeline asks a person or an allow rule first)
    sandbox = None if _unsandboxed(t, kw) else t.sandbox
    if kw.get("run_in_background") and t.background is not None:
        return start_background(t.background, command, cwd=cwd, shell=_shell(), env=t.env, sandbox=sandbox)
    code, output, timed_out, reported = _run_reporting_cwd(t, command, cwd, timeout_s, sandbox)
    output = _after_command(t, command, strip_terminal_codes(output).rstrip("\n"), reported, sandbox)
    if timed_out:
        raise ToolError(
            f"the command timed out after {timeout_s:g} s and was killed with its whole process group"
            + (f"; output so far:\n{output}" if output else "")
        )
    if code is None:
        raise ToolError("the command was killed" + (f"; output so far:\n{output}" if output else ""))
    if code != 0:
        text = f"{output}\n[exit code {code}]" if output else f"[exit code {code}]"
        if code == 1 and _exit_1_is_an_answer(command):
            return text  # grep found nothing, diff found a difference: an answer, not a failure
        raise ToolError(text)
    return output if output else "(no output)"


_ANSWERS_WITH_1 = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "diff", "cmp", "test", "[", "[["})
"""Commands whose exit status 1 is an answer (no match, a difference, false), as Claude Code reads them."""


def _exit_1_is_an_answer(command: str) -> bool:
    """True when the line's status is that of one such command: its last simple command, with no && or ||
    before it (whose status could be another command's)."""
    if "&&" in command or "||" in command:
        return False
    last = re.split(r"[|;\n&]", command.strip())[-1].split()
    while last and "=" in last[0] and not last[0].startswith(("=", "[")):
        last = last[1:]  # VAR=value before the command
    return bool(last) and os.path.basename(last[0]) in _ANSWERS_WITH_1


def _unsandboxed(t: _Shared, kw: Mapping[str, Any]) -> bool:
    """``dangerouslyDisableSandbox: true`` where a sandbox is on and ``sandbox.allowUnsandboxedCommands`` is not false."""
    sb = t.sandbox
    return kw.get("dangerouslyDisableSandbox") is True and sb is not None and sb.active and sb.settings.allow_unsandboxed


def _run_reporting_cwd(
    t: _Shared, command: str, cwd: str, timeout_s: float, sandbox: CommandSandbox | None,
) -> tuple[int | None, str, bool, str]:
    """Run ``command`` in ``cwd``; also what the shell reported as the directory it ended in.

    The shell reports where it ends up on a pipe, so `cd` carries over to
    the next call as in Claude Code; a trap runs even after `exit`.
    """
    r, w = os.pipe()
    try:
        launcher = None
        if sandbox is not None:
            sb, here = sandbox, cwd

            def launcher(argv: list[str], env_: dict[str, str], fds: tuple[int, ...]) -> Any:
                return sb.launch(argv, here, command, env_, fds)

        code, output, timed_out = run_command(
            f"trap 'pwd -P >&{w} 2>/dev/null' EXIT\n{command}",
            cwd=cwd, timeout_s=timeout_s, processes=t.procs, pass_fds=(w,), env=t.env, launcher=launcher,
            on_output=BASH_OUTPUT.get(),
        )
    finally:
        os.close(w)
        try:
            os.set_blocking(r, False)
            reported = os.read(r, 65536).decode("utf-8", "replace")
        except OSError:
            reported = ""
        os.close(r)
    return code, output, timed_out, reported


def _after_command(t: _Shared, command: str, output: str, reported: str, sandbox: CommandSandbox | None) -> str:
    """Move Bash's directory to where the command ended (when inside the workspace); add the notes the model needs."""
    note = ""
    ended = reported.strip().splitlines()[-1] if reported.strip() else ""
    if ended and os.path.isabs(ended):
        if t.ws.contains(os.path.realpath(ended), for_write=True):
            t.shell_cwd = ended
        else:
            t.shell_cwd = t.ws.root
            note = f"[{ended} is outside the workspace: the working directory is back at {t.ws.root}]"
    if note:
        output = f"{output}\n{note}" if output else note
    if sandbox is not None:  # a part may fail on the sandbox while the line exits 0
        why = sandbox.explain(command, output)
        if why:
            output = f"{output}\n{why}" if output else why
    return output


def _read(t: _Shared, **kw: Any) -> str | dict[str, Any]:
    file_path = kw["file_path"]
    offset = max(int(kw.get("offset") or 1), 1)
    limit = int(kw.get("limit") or READ_DEFAULT_LIMIT)
    if limit < 1:
        raise ToolError("limit must be at least 1")
    real = t.ws.resolve(file_path)
    if check_regular(real, file_path) is None:
        raise ToolError(f"file not found: {file_path}")
    real, fd = _open_file(t.ws, file_path)
    try:
        st = os.fstat(fd)
        suffix = os.path.splitext(real)[1].lower()
        head = os.pread(fd, 16, 0)
        if kw.get("pages") and not (head.startswith(b"%PDF-") or suffix == ".pdf"):
            raise ToolError(f"pages applies to PDF files only; {file_path} is not one: use offset and limit")
        special = _read_special(t, fd, st, real, file_path, suffix, head, kw.get("pages"))
        if special is not None:
            t.read_state.saw(real, st)
            return special
        page = _read_page(fd, offset, limit)
    finally:
        os.close(fd)
    if page is None:
        raise ToolError(f"{file_path} is a binary file; Read shows text, images (png, jpg, gif, webp), PDFs and notebooks")
    t.read_state.saw(real, st)
    return _page_text(page, real, file_path, offset, *page[1:])


def _read_special(
    t: _Shared, fd: int, st: os.stat_result, real: str, shown: str, suffix: str, head: bytes, pages: str | None
) -> str | dict[str, Any] | None:
    """Read's result for an image, a PDF or a notebook; None for any other file (read as text)."""
    kind = image_kind(head)
    if kind is not None:
        if st.st_size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{shown} is an image of {st.st_size} bytes, over the {MAX_IMAGE_BYTES} a model accepts; "
                "make a smaller copy with Bash and Read that"
            )
        return image_result(_read_all(fd), kind, shown)
    if head.startswith(b"%PDF-"):
        if st.st_size > PDF_MAX_BYTES:
            raise ToolError(f"{shown} is a PDF of {st.st_size} bytes, over the {PDF_MAX_BYTES} Read opens; use Bash (pdftotext)")
        return _cut_page(pdf_text(_read_all(fd), shown, pages), "pages")
    if suffix == ".ipynb":
        if st.st_size > PDF_MAX_BYTES:
            raise ToolError(f"{shown} is a notebook of {st.st_size} bytes, too large to show; use Bash (jq) on it")
        return _cut_page(render_notebook(load_notebook(_read_all(fd), shown), shown), "cells")
    return None


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _cut_page(text: str, unit: str) -> str:
    if len(text) <= READ_MAX_CHARS:
        return text
    return (text[:READ_MAX_CHARS] + f"\n[cut at about {READ_MAX_TOKENS_SAID} tokens ({READ_MAX_CHARS} characters); "
            f"ask for fewer {unit} to see the rest]")


def _page_text(page: tuple[_Page, int, bool], real: str, shown: str, offset: int, total: int, counted_all: bool) -> str:
    entries = page[0].entries
    if total == 0:
        return f"(the file {real} is empty)"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown} ({total} lines)")
    body = "".join(entries).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    last = offset + len(entries) - 1
    if last < total or not counted_all:
        of = f"{total}" if counted_all else f"more than {total}"
        why = (f"the page stopped at about {READ_MAX_TOKENS_SAID} tokens; " if page[0].full else "")
        body += f"[showing lines {offset}-{last} of {of}; {why}call Read with offset={last + 1} to continue]\n"
    return body


def _write(t: _Shared, **kw: Any) -> str:
    ws = t.ws
    file_path, content = kw["file_path"], kw["content"]
    real = ws.resolve(file_path, for_write=True)
    st = check_regular(real, file_path, max_bytes=MAX_EDIT_BYTES)
    t.read_state.check_before_write(real, file_path, st, "Write")
    data = content.encode("utf-8")
    try:
        real = ws.write_bytes(file_path, data)
    except (IsADirectoryError, NotADirectoryError, PermissionError, FileNotFoundError) as exc:
        raise ToolError(f"cannot write {file_path}: {exc.strerror or exc}") from None
    t.read_state.saw(real)
    n = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Updated" if st is not None else "Created"
    return f"{verb} {real} ({len(data)} bytes, {n} lines)"


def _edit(t: _Shared, **kw: Any) -> str:
    ws = t.ws
    file_path = kw["file_path"]
    old, new = kw["old_string"], kw["new_string"]
    replace_all = bool(kw.get("replace_all", False))
    if old == new:
        raise ToolError("old_string and new_string are the same: nothing to change")
    real = ws.resolve(file_path, for_write=True)
    st = check_regular(real, file_path, max_bytes=MAX_EDIT_BYTES)
    if old == "":
        if st is not None and st.st_size > 0:
            raise ToolError(
                f"old_string is empty but {file_path} already has content: "
                "give the text to replace, or use Write"
            )
        ws.write_bytes(real, new.encode("utf-8"))
        t.read_state.saw(real)
        return f"Created {real} ({len(new)} characters)"
    if st is None:
        raise ToolError(f"file not found: {file_path} (to create a file, use Write)")
    t.read_state.check_before_write(real, file_path, st, "Edit")
    _, text = _read_text(ws, real)
    if text is None:
        raise ToolError(f"{file_path} is a binary file; Edit changes text files only")
    m = find_edit(text, old, new)
    if m.count == 0:
        raise ToolError(
            f"old_string was not found in {file_path}. Read the file and copy the text "
            "exactly, including whitespace and indentation."
        )
    if m.count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {m.count} times in {file_path}; it must be unique. Add "
            "surrounding lines to make it unique, or set replace_all to true to change every one."
        )
    updated, first = m.apply(replace_all)
    ws.write_bytes(real, updated.encode("utf-8", "surrogateescape"))
    t.read_state.saw(real)
    line_no = m.text.count("\n", 0, first) + 1
    lines = file_lines(updated)
    lo = max(line_no - 3, 1)
    hi = min(line_no + m.new.count("\n") + 3, len(lines))
    snippet = numbered_lines(lines[lo - 1 : hi], lo)
    snippet = snippet.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    n = m.count if replace_all else 1
    return f"Edited {real}: replaced {n} occurrence{'s' if n != 1 else ''}.\n{snippet}"


def _notebook_edit(t: _Shared, **kw: Any) -> str:
    ws = t.ws
    path = kw["notebook_path"]
    mode = kw.get("edit_mode") or "replace"
    real = ws.resolve(path, for_write=True)
    if not real.endswith(".ipynb"):
        raise ToolError(f"{path} is not a notebook (.ipynb); use Edit for other files")
    st = check_regular(real, path, max_bytes=MAX_EDIT_BYTES)
    if st is None:
        raise ToolError(f"notebook not found: {path} (create it with Write)")
    t.read_state.check_before_write(real, path, st, "NotebookEdit")
    if mode == "insert" and not kw.get("cell_type"):
        raise ToolError("edit_mode insert needs cell_type: code or markdown")
    nb = load_notebook(ws.read_bytes(real), path)
    done = edit_notebook(nb, cell=kw.get("cell_id"), source=kw.get("new_source", ""), cell_type=kw.get("cell_type"), mode=mode)
    ws.write_bytes(real, dump_notebook(nb))
    t.read_state.saw(real)
    return f"Edited {real}: {done}."


def _base(t: _Shared, path: str | None) -> str:
    base = t.ws.resolve(path) if path else t.ws.root
    if not os.path.exists(base):
        raise ToolError(f"no such directory: {path}")
    if not os.path.isdir(base):
        raise ToolError(f"{path} is not a directory")
    return base


def _glob(t: _Shared, **kw: Any) -> str:
    pattern = kw["pattern"]
    while pattern.startswith("./"):
        pattern = pattern[2:]
    base = _base(t, kw.get("path"))
    if pattern.startswith("/"):
        raise ToolError("the pattern must be relative; put the directory to search in `path`")
    rx = glob_to_regex(pattern)
    # Start the walk below the pattern's literal directories (`src/app/**/*.ts` walks src/app only).
    start = base
    for part in pattern.split("/")[:-1]:
        if any(c in part for c in "*?[{\\") or part in ("", ".", ".."):
            break
        start = os.path.join(start, part)
    if not os.path.isdir(start):
        return "No files found"
    deadline = time.monotonic() + GREP_TIME_LIMIT_S
    found: list[tuple[float, str]] = []
    # As Claude Code's Glob: files git ignores are found too (build output, node_modules); .git is never walked.
    for n, p in enumerate(walk_files(t.ws, start, respect_gitignore=False, visible=t.is_visible)):
        if not n & 0x3FF and time.monotonic() > deadline:
            raise ToolError(
                f"Glob stopped after {GREP_TIME_LIMIT_S:g} s ({n} files walked): "
                "give a narrower path or a pattern that starts with a directory"
            )
        rel = os.path.relpath(p, base).replace(os.sep, "/") if p.startswith(base) else None
        if rel is None or rel.startswith("../"):
            continue
        if rx.match(rel):
            try:
                found.append((os.stat(p).st_mtime, p))
            except OSError:
                continue
    if not found:
        return "No files found"
    found.sort(key=lambda t: (-t[0], t[1]))
    paths = [p for _, p in found[:GLOB_MAX_RESULTS]]
    text = "\n".join(paths)
    if len(found) > GLOB_MAX_RESULTS:
        text += f"\n(showing {GLOB_MAX_RESULTS} of {len(found)} files; use a narrower pattern or path)"
    return text


def _grep(t: _Shared, **kw: Any) -> str:
    ws = t.ws
    multiline = bool(kw.get("multiline"))
    # RE2, linear in the text whatever the pattern; without multiline a
    # match stays within one line, as in ripgrep (see linear_regex.py).
    flags = "m" + ("i" if kw.get("-i") else "") + ("s" if multiline else "")
    try:
        rx = compile_linear(kw["pattern"], flags=flags, never_nl=not multiline)
    except RegexError as exc:
        pat = kw["pattern"]
        shown = repr(pat) if len(pat) <= 200 else f"{pat[:200]!r}… ({len(pat)} characters)"
        raise ToolError(f"invalid regular expression {shown}: {exc}") from None
    deadline = time.monotonic() + GREP_TIME_LIMIT_S
    mode = kw.get("output_mode") or "files_with_matches"
    path = kw.get("path")
    target = ws.resolve(path) if path else ws.root
    if not os.path.exists(target):
        raise ToolError(f"no such file or directory: {path}")
    file_glob = kw.get("glob")
    globs = [glob_to_regex(g.strip()) for g in _split_globs(file_glob)] if file_glob else []
    exts = _file_type(kw.get("type"))
    numbers = kw.get("-n", True)
    around: int = kw["-C"] if kw.get("-C") is not None else kw.get("context") or 0
    after: int = kw["-A"] if kw.get("-A") is not None else around
    before: int = kw["-B"] if kw.get("-B") is not None else around
    only = bool(kw.get("-o"))
    if os.path.isdir(target):
        files: Iterator[Found] = walk(ws, target, visible=t.is_visible)
    else:
        files = iter([Found(target, None, os.path.basename(target))])
    results: list[str] = []
    matched_files: list[tuple[float, str]] = []
    searched = 0
    for found in files:
        _check_deadline(deadline, searched)
        searched += 1
        got = _grep_data(ws, found, target, globs, exts)
        if got is None:
            continue
        mtime, data = got
        p = found.path
        if mode == "files_with_matches":
            if rx.search(data):
                matched_files.append((mtime, p))
            continue
        if mode == "count":
            n = 0
            for _ in rx.finditer(data):
                n += 1
                if not n & 0xFFF:
                    _check_deadline(deadline, searched)
            if n:
                results.append(f"{p}:{n}")
            continue
        if only:
            results.extend(_only_matching(p, data, rx, bool(numbers), deadline))
            continue
        results.extend(_content_lines(p, data, rx, multiline, before, after, bool(numbers), deadline))
    return _grep_output(mode, results, matched_files, kw.get("head_limit"), int(kw.get("offset") or 0))


def _file_type(name: Any) -> tuple[str, ...] | None:
    """The suffixes of a Grep ``type`` (ripgrep's names, and the common spellings of them)."""
    if not name:
        return None
    key = str(name).lower().lstrip(".")
    exts = _TYPES.get(_TYPE_ALIASES.get(key, key))
    if exts is None:
        raise ToolError(f"unknown file type {name!r}; known: {', '.join(sorted(_TYPES))} (or filter with glob, e.g. \"*.{key}\")")
    return exts


def _only_matching(path: str, data: bytes, rx: Matcher, numbers: bool, deadline: float) -> list[str]:
    """``-o``: each match on its own line, as ``path:line:match``."""
    out: list[str] = []
    line, at = 1, 0
    for m in rx.finditer(data):
        if m.end() == m.start():
            continue
        line += data.count(b"\n", at, m.start())
        at = m.start()
        text = _decode(m.group(0)[: READ_MAX_LINE * 4])[:READ_MAX_LINE]
        out.append(f"{path}:{line}:{text}" if numbers else f"{path}:{text}")
        if not len(out) & 0xFFF:
            _check_deadline(deadline, 0)
    return out


def _grep_data(
    ws: Workspace, found: Found, target: str, globs: list[Any], exts: tuple[str, ...] | None
) -> tuple[float, bytes] | None:
    """A file's modified time and text for Grep (lines end at \\n); None when a filter or its content excludes it."""
    p = found.path
    if globs:
        name = os.path.basename(p)
        rel = os.path.relpath(p, target).replace(os.sep, "/") if os.path.isdir(target) else name
        if not any(g.match(name) or g.match(rel) for g in globs):
            return None
    if exts is not None and not p.endswith(exts):
        return None
    got = _read_found(ws, found)
    if got is None:
        return None
    mtime, data = got
    if _is_binary(data):
        return None
    # Lines end at \n; a \r before it is not part of the line.
    return mtime, data.replace(b"\r\n", b"\n")


def _grep_output(mode: str, results: list[str], matched_files: list[tuple[float, str]], head_limit: Any, offset: int = 0) -> str:
    if mode == "files_with_matches":
        matched_files.sort(key=lambda t: (-t[0], t[1]))
        results = [p for _, p in matched_files]
    if not results:
        return "No matches found"
    total_matches = sum(int(r.rsplit(":", 1)[1]) for r in results) if mode == "count" else 0
    total = len(results)
    if offset or head_limit:
        end = offset + int(head_limit) if head_limit else total
        results = results[offset:end]
        if not results:
            return f"No results past offset {offset} (there are {total})"
        if offset or end < total:
            more = f"; call again with offset={end} to see more" if end < total else ""
            results.append(f"(showing results {offset + 1}-{offset + len(results)} of {total}{more})")
    if mode == "files_with_matches":
        return f"Found {len(matched_files)} file{'s' if len(matched_files) != 1 else ''}\n" + "\n".join(results)
    if mode == "count":
        n_files = total
        results.append(f"Found {total_matches} match{'es' if total_matches != 1 else ''} in {n_files} file{'s' if n_files != 1 else ''}")
    return "\n".join(results)


def _ls(t: _Shared, **kw: Any) -> str:
    ws = t.ws
    path = kw.get("path")
    base = _base(t, path)
    ignore = [glob_to_regex(g) for g in kw.get("ignore") or []]
    lines: list[str] = []
    try:
        fd = ws.open_resolved(base)
    except OSError as exc:
        raise ToolError(f"cannot list {path or base}: {exc.strerror}") from None
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            full = os.path.join(base, e.name)
            if e.name == ".git" or any(g.match(e.name) for g in ignore) or not t.is_visible(full):
                continue
            try:
                if e.is_symlink():
                    target = os.readlink(e.name, dir_fd=fd)
                    note = "" if ws.contains(os.path.realpath(full)) else " (outside the workspace)"
                    lines.append(f"{e.name} -> {target}{note}")
                elif e.is_dir(follow_symlinks=False):
                    lines.append(e.name + "/")
                else:
                    lines.append(e.name)
            except OSError:
                continue
    except OSError as exc:
        raise ToolError(f"cannot list {path or base}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if not lines:
        return f"{base} is empty"
    more = ""
    if len(lines) > LS_MAX_ENTRIES:
        more = f"\n(showing {LS_MAX_ENTRIES} of {len(lines)} entries)"
        lines = lines[:LS_MAX_ENTRIES]
    return f"{base}/\n" + "\n".join("  " + x for x in lines) + more


def _encodable(fn: Callable[..., str]) -> Callable[..., str]:
    def run(**kw: Any) -> str:
        try:
            return fn(**kw)
        except UnicodeEncodeError:
            raise ToolError(
                "the text contains characters that cannot be written as UTF-8 (lone surrogates)"
            ) from None

    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def build_registry(
    records: Sequence[ToolRecord],
    workspace: Workspace,
    *,
    spill_dir: str,
    shell_timeout_s: int = 120,
    processes: RunningProcesses | None = None,
    visible: Callable[[str], bool] | None = None,
    sandbox: CommandSandbox | None = None,
    env: Mapping[str, str] | None = None,
    redact: Callable[[str], str] | None = None,
    session: SessionLink | None = None,
    patch_guard: Callable[[str], str | None] | None = None,
    require_read: bool = True,
    shell_max_timeout_s: float | None = None,
    background: BackgroundShells | None = None,
    follow_shell: Callable[[Callable[[], str | None]], None] | None = None,
) -> Registry:
    """A registry holding the tools of ``records`` that have a function (``ToolRecord.run``), in their order,
    confined to ``workspace``; ``catalog.builtin_registry`` passes every built-in tool's record.

    Args:
        workspace: where the file tools may read and write.
        spill_dir: where outputs over 10,000 characters go (Read may read there).
        shell_timeout_s: Bash's default timeout when the model gives none.
        processes: collects Bash's process groups so an interrupt can kill them.
        visible: ``visible(real_path) -> bool`` hides paths from Glob, Grep and
            LS (the agent passes its Read-deny rules).
        sandbox: wraps each Bash command (``agent.sandbox``); None runs it as is.
        env: Bash's environment (``sandbox.child_env.child_env``); None: this process's.
        redact: applied to every tool's output and error before it is spilled
            or returned (``sandbox.child_env.Redactor.text``).
        session: what TodoWrite, ExitPlanMode and AskUserQuestion reach of the
            agent (``session_tools.SessionLink``); None: a list of their own,
            never plan mode, nobody to ask.
        patch_guard: ``guard(real_path) -> reason or None``: a file apply_patch
            may not change (the agent's Edit deny rules and protected paths).
        require_read: Edit, Write and NotebookEdit of an existing file need a
            Read of it first (``file_state`` rule 1).
        shell_max_timeout_s: the longest timeout the model may give Bash (default 600 s).
        background: Bash's background shells (the session's, which the agent
            kills when the session ends); None: new ones.
        follow_shell: given a ``where()`` naming the folder Bash's shell stands in, None once
            these tools are gone (``PermissionPolicy.follow_shell``).
    """
    t = _Shared(workspace.with_read_only(spill_dir), shell_timeout_s, processes, visible, sandbox, env,
                ReadState(required=require_read))
    t.patch_guard = patch_guard or (lambda _p: None)
    if shell_max_timeout_s is not None:  # the model's own timeout is capped here (BASH_MAX_TIMEOUT_MS)
        t.max_timeout_ms = max(1, int(shell_max_timeout_s * 1000))
    t.background = background if background is not None else BackgroundShells(spill_dir)
    if redact is not None:
        t.background.redact = redact  # no held secret in a background command's log on disk
    if session is not None:
        t.session = session
    if follow_shell is not None:  # the permission policy judges a line from where the shell stands
        shell = weakref.ref(t)  # a sub-agent's tools end with it; the policy (maybe the parent's) must not keep them
        follow_shell(lambda: None if (alive := shell()) is None else alive.shell_cwd)
    reg = Registry()
    for r in records:
        if r.run is not None:
            reg.register(r.tool(_wrapped(r, t, spill_dir, redact), r.describe(t) if r.describe is not None else None))
    return reg


def _wrapped(r: ToolRecord, t: _Shared, spill_dir: str, redact: Callable[[str], str] | None) -> Callable[..., Any]:
    """``r``'s function bound to the registry's shared state, its output redacted and spilled as ``r.output`` says."""
    assert r.run is not None
    fn = _bound(r.run, t)
    if r.text_only:
        fn = _encodable(fn)
    if r.output == "page":
        return _redacting(fn, redact)
    if r.output == "raw":
        return fn
    return _spilling(fn, spill_dir, r.name, redact)


def _split_globs(text: str) -> list[str]:
    """``"*.{ts,tsx}"`` stays one glob; ``"*.py *.md"`` and ``"*.py,*.md"`` are two."""
    out: list[str] = []
    cur = ""
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
        if (ch in " ," and depth == 0):
            if cur:
                out.append(cur)
            cur = ""
            continue
        cur += ch
    if cur:
        out.append(cur)
    return out


def _check_deadline(deadline: float, searched: int) -> None:
    if time.monotonic() > deadline:
        raise ToolError(
            f"Grep stopped after {GREP_TIME_LIMIT_S:g} s ({searched} files searched): "
            "narrow the search with path, glob or type"
        )


def _content_lines(
    path: str,
    data: bytes,
    rx: Matcher,
    multiline: bool,
    before: int,
    after: int,
    numbers: bool,
    deadline: float,
) -> list[str]:
    """The ``path:line:text`` lines of one file's matches, with context.

    One search runs over the whole text and resumes at the line after each
    hit, so a file costs one linear pass, not one call per line.
    """
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    starts = [0]
    for ln in raw:
        starts.append(starts[-1] + len(ln) + 1)
    hits: set[int] = set()
    if multiline:
        for m in rx.finditer(data):
            a = bisect.bisect_right(starts, m.start()) - 1
            b = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
            hits.update(range(max(a, 0), min(b, len(raw) - 1) + 1))
            if not len(hits) & 0xFFF:
                _check_deadline(deadline, 0)
    else:
        pos = 0
        while True:
            m = rx.search(data, pos)
            if m is None:
                break
            i = bisect.bisect_right(starts, m.start()) - 1
            if i >= len(raw):
                break
            hits.add(i)
            pos = starts[i + 1]
            if not len(hits) & 0xFFF:
                _check_deadline(deadline, 0)
    if not hits:
        return []
    show: set[int] = set()
    for i in hits:
        show.update(range(max(i - before, 0), min(i + after, len(raw) - 1) + 1))
    out: list[str] = []
    prev = -2
    for i in sorted(show):
        if (before or after) and prev >= 0 and i > prev + 1:
            out.append("--")
        sep = ":" if i in hits else "-"
        text = _decode(raw[i][: READ_MAX_LINE * 4])
        line = text if len(text) <= READ_MAX_LINE and len(raw[i]) <= READ_MAX_LINE * 4 else text[:READ_MAX_LINE] + " ..."
        out.append(f"{path}{sep}{i + 1}{sep}{line}" if numbers else f"{path}{sep}{line}")
        prev = i
    return out


_TYPES: dict[str, tuple[str, ...]] = {
    "py": (".py", ".pyi"),
    "js": (".js", ".mjs", ".cjs", ".jsx"),
    "ts": (".ts", ".tsx", ".mts", ".cts"),
    "rust": (".rs",),
    "go": (".go",),
    "java": (".java",),
    "kotlin": (".kt", ".kts"),
    "swift": (".swift",),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
    "cs": (".cs",),
    "php": (".php",),
    "scala": (".scala",),
    "lua": (".lua",),
    "sql": (".sql",),
    "xml": (".xml",),
    "vue": (".vue",),
    "md": (".md", ".markdown"),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "sh": (".sh", ".bash", ".zsh"),
    "html": (".html", ".htm"),
    "css": (".css", ".scss", ".sass", ".less"),
    "rb": (".rb",),
    "txt": (".txt",),
}
"""ripgrep's type names (``rg --type-list``) for the common languages."""
_TYPE_ALIASES = {
    "python": "py", "javascript": "js", "typescript": "ts", "rs": "rust", "golang": "go",
    "c++": "cpp", "cxx": "cpp", "csharp": "cs", "c#": "cs", "ruby": "rb", "markdown": "md",
    "yml": "yaml", "shell": "sh", "bash": "sh", "zsh": "sh", "kt": "kotlin", "htm": "html",
    "scss": "css", "text": "txt", "jsx": "js", "tsx": "ts",
}
"""Names models also use for a type: mapped to ripgrep's."""

def _duration(seconds: float) -> str:
    """``120`` as "2 minutes", ``90`` as "90 s": how Bash's description says a timeout."""
    if seconds >= 60 and seconds % 60 == 0:
        m = int(seconds // 60)
        return f"{m} minute{'s' if m != 1 else ''}"
    return f"{seconds:g} s"


def _bash_doc(default_s: float, max_ms: int) -> str:
    """Bash's description, with the session's timeouts (``BASH_DEFAULT_TIMEOUT_MS``, ``BASH_MAX_TIMEOUT_MS``)."""
    return (
        "Run a shell command (bash) and return its combined stdout and stderr. It starts in the "
        "workspace directory; a `cd` carries over to later calls (within the workspace). A non-zero "
        "exit code makes the call an error, with the output and the code at the end (exit 1 of grep, "
        f"rg, diff and test is an answer, not an error). The default timeout is {_duration(default_s)} "
        f"(at most {_duration(max_ms / 1000)}); on timeout the command and everything it started are "
        "killed. Prefer Read, Grep, Glob and Edit to cat, grep, find and sed. Output over 10,000 "
        "characters is saved to a file and a preview is returned. What a command leaves running "
        "(`cmd &`) is killed when it returns: for a server or a watcher, set run_in_background and "
        "read it later with BashOutput."
    )


_BASH_DOC = _bash_doc(120, MAX_TIMEOUT_MS)
_BASH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command to run."},
        "timeout": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TIMEOUT_MS,
            "description": f"Timeout in milliseconds (at most {MAX_TIMEOUT_MS}).",
        },
        "description": {"type": "string", "description": "What the command does, in 5-10 words."},
        "run_in_background": {
            "type": "boolean",
            "description": "Start the command and return a shell id at once; read it with BashOutput, stop it with KillShell.",
        },
        "dangerouslyDisableSandbox": {
            "type": "boolean",
            "description": "Run this one command outside the sandbox (with the network and your user's full access). "
            "The user is asked first (unless an allow rule of theirs names the command); use it only after "
            "the sandbox stopped the command and the task needs it.",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}
_READ_DOC = (
    "Read a file from the workspace. Text comes back with numbered lines (number, tab, text; the "
    "number is not part of the file). A call returns up to 2000 lines from `offset` (default: "
    f"line 1), and stops sooner once the page reaches about {READ_MAX_TOKENS_SAID} tokens; the end of the "
    "result then says which offset continues. Lines over 2000 characters are cut. Images (png, "
    "jpg, gif, webp) are shown to you as images; PDFs come back as text page by page (at most 20 "
    "pages a call, choose them with `pages`); notebooks (.ipynb) as their cells with outputs. "
    "Read a file before you Edit or Write it: changing a file you have not read, or one that "
    "changed since you read it, is refused. Read several files at once by calling it several "
    "times in one turn."
)
_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path of the file (absolute, or relative to the workspace)."},
        "offset": {"type": "integer", "minimum": 0, "description": "Line number to start at (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": f"How many lines to read (default {READ_DEFAULT_LIMIT})."},
        "pages": {"type": "string", "description": "PDF only: the pages to read, such as \"3\", \"1-5\" or \"2,7-9\" (at most 20)."},
    },
    "required": ["file_path"],
    "additionalProperties": False,
}
_WRITE_DOC = (
    "Write a whole file, creating it (and missing directories) or replacing what it holds. An "
    "existing file must have been read with Read first, and must not have changed since. For a "
    "change to part of a file use Edit, which sends only the change."
)
_WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path of the file to write."},
        "content": {"type": "string", "description": "The whole new content."},
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
}
_EDIT_DOC = (
    "Change a file by replacing old_string with new_string. Read the file first (an unread file, "
    "or one changed since your last Read, is refused). old_string is the file's text as Read "
    "shows it after the line-number tab, whitespace included; it must occur once unless "
    "replace_all is true (then every occurrence changes). Line endings are matched whatever the "
    "file uses (CRLF files stay CRLF), and straight quotes match the file's curly ones. An empty "
    "old_string creates a new file."
)
_EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path of the file to change."},
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {"type": "boolean", "default": False, "description": "Replace every occurrence."},
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
}
_NOTEBOOK_DOC = (
    "Change one cell of a Jupyter notebook (.ipynb). Name the cell by the id Read shows "
    "(`cell-N` for notebooks without ids). edit_mode replace (default) swaps the cell's source "
    "and clears its outputs; insert adds a new cell after cell_id (or first, without one) and "
    "needs cell_type; delete removes the cell. Read the notebook first."
)
_NOTEBOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "notebook_path": {"type": "string", "description": "Path of the notebook."},
        "cell_id": {"type": "string", "description": "The cell to change, or to insert after."},
        "new_source": {"type": "string", "description": "The cell's new source (empty for delete)."},
        "cell_type": {"enum": ["code", "markdown"], "description": "The cell's type (needed for insert)."},
        "edit_mode": {"enum": ["replace", "insert", "delete"], "description": "What to do (default replace)."},
    },
    "required": ["notebook_path", "new_source"],
    "additionalProperties": False,
}
_GLOB_DOC = (
    "Find files whose path matches a glob (`**/*.py`, `src/**/*.{ts,tsx}`), relative to `path` "
    "(default: the workspace). Files git ignores are included, .git is not. Returns absolute "
    f"paths, most recently modified first, at most {GLOB_MAX_RESULTS}. To search inside files use Grep."
)
_GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The glob, relative to path."},
        "path": {"type": "string", "description": "Directory to search (default: the workspace root)."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}
_GREP_DOC = (
    "Search file contents with a regular expression (RE2 syntax, close to ripgrep's: no "
    "backreferences or lookaround), skipping files git ignores and binary files. output_mode: "
    "files_with_matches (default; paths, newest first), content (matching lines; -n, -A, -B, "
    "-C or context, -o for the matched text only) or count (matches per file and a total). "
    "Filter files with glob (`*.py`, `*.{ts,tsx}`) or type (py, js, ts, rust, go, java...). A match "
    "stays within a line unless multiline is true. Page long results with head_limit and offset. "
    "Use this instead of grep or rg in Bash."
)
_GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The regular expression."},
        "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
        "glob": {"type": "string", "description": "Only files matching this glob (`*.js`, `*.{ts,tsx}`)."},
        "type": {"type": "string", "description": "Only files of this type (py, js, ts, rust, go, java, ...)."},
        "output_mode": {"enum": ["content", "files_with_matches", "count"]},
        "-i": {"type": "boolean", "description": "Case-insensitive."},
        "-n": {"type": "boolean", "description": "Line numbers in content mode (default true)."},
        "-o": {"type": "boolean", "description": "Content mode: show only the matched text, one match a line."},
        "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match."},
        "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match."},
        "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match."},
        "context": {"type": "integer", "minimum": 0, "description": "The same as -C."},
        "multiline": {"type": "boolean", "description": "Let . and patterns span lines."},
        "head_limit": {"type": "integer", "minimum": 1, "description": "Only the first N results (lines, files or counts)."},
        "offset": {"type": "integer", "minimum": 0, "description": "Skip the first N results (with head_limit, to page)."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}
_LS_DOC = "List the entries of one directory (directories end with /, symlinks show their target)."
_LS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The directory (default: the workspace root)."},
        "ignore": {"type": "array", "items": {"type": "string"}, "description": "Globs of names to leave out."},
    },
    "additionalProperties": False,
}


# --- the records (``record.py``): one per tool, listed once in ``catalog.py`` ---------

BASH = ToolRecord(
    "Bash", _BASH_DOC, _BASH_SCHEMA, rule="bash", hook="bash", acp="execute", run=_bash,
    describe=lambda t: _bash_doc(t.shell_timeout_s, t.max_timeout_ms),
)
READ = ToolRecord("Read", _READ_DOC, _READ_SCHEMA, read_only=True, asks=False, paths=("file_path",), rule="read",
                  hook="read", acp="read", run=_read, output="page")
WRITE = ToolRecord("Write", _WRITE_DOC, _WRITE_SCHEMA, paths=("file_path",), rule="edit", hook="write", acp="edit",
                   run=_write, text_only=True)
EDIT = ToolRecord("Edit", _EDIT_DOC, _EDIT_SCHEMA, paths=("file_path",), rule="edit", hook="edit", acp="edit",
                  run=_edit, text_only=True)
GLOB = ToolRecord("Glob", _GLOB_DOC, _GLOB_SCHEMA, read_only=True, asks=False, paths=("path",), default_path=True,
                  rule="search", acp="search", run=_glob)
GREP = ToolRecord("Grep", _GREP_DOC, _GREP_SCHEMA, read_only=True, asks=False, paths=("path",), default_path=True,
                  rule="search", acp="search", run=_grep)
LS = ToolRecord("LS", _LS_DOC, _LS_SCHEMA, read_only=True, asks=False, paths=("path",), default_path=True,
                rule="search", acp="search", run=_ls)
NOTEBOOK_EDIT = ToolRecord("NotebookEdit", _NOTEBOOK_DOC, _NOTEBOOK_SCHEMA, paths=("notebook_path",), rule="edit",
                           acp="edit", run=_notebook_edit, text_only=True)
