"""The workspace: the directories the file tools may touch, and the one place paths are checked.

Rules:

1. A path is resolved to its real path (every symlink followed, ``..``
   collapsed) BEFORE it is checked, so ``link -> /etc`` and ``a/../../x``
   are judged by where they really lead.
2. "Inside" means equal to a root or below it with a separator:
   ``/w/root-evil`` is not inside ``/w/root`` (the prefix-sibling trick).
3. Checking a name and then opening it leaves a window in which a directory
   or the final file can be swapped for a symlink that leads out
   (time-of-check/time-of-use). ``open`` therefore never opens the checked
   name in one go: it opens the root, then walks the resolved path one
   component at a time with ``O_NOFOLLOW`` relative to the previous
   directory's descriptor. The resolved path has no symlinks in it, so any
   symlink met during the walk means the tree changed since the check, and
   the open is refused. Finally the open descriptor is ``fstat``-ed: a
   descriptor that is not a regular file or directory is refused too.
4. Refusals raise ``OutsideWorkspace``, a ``ToolError``: the model reads the
   message and can correct itself.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Sequence

from ...tools import ToolError

__all__ = ["OutsideWorkspace", "Workspace", "protected_in_home"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted in the tree must not hang an open


def protected_in_home(path: str) -> str | None:
    """The start-up file or folder of the user's home that ``path`` (absolute) writes, if any: shell and
    tool start-up files, ``~/.ssh``, ``~/.claude.json``, ``~/.local/bin``, user-site packages
    (``sandbox.gitguard.STARTUP_FILES``). The same paths are read-only to sandboxed commands; an edit
    of one asks in every mode, and only an allow rule naming it allows it (``permissions.rules``)."""
    from ..sandbox.gitguard import STARTUP_FILES, account_homes, user_home_of

    try:
        cands = {os.path.abspath(path), _real(path)}
    except (ValueError, OSError):  # a NUL in the name, a link that changed: nothing is written there anyway
        return None
    for home in account_homes(user_home_of(os.environ)):
        for name in STARTUP_FILES:
            top = os.path.join(home, name)
            if any(_inside(c, top) for c in cands):
                return top
    return None


class OutsideWorkspace(ToolError):
    """A path leads outside the workspace and its additional directories."""


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def _inside(path: str, root: str) -> bool:
    if root == os.sep:
        return path.startswith(os.sep)
    return path == root or path.startswith(root + os.sep)


class Workspace:
    """The workspace root plus additional directories; every file tool goes through it.

    ``read_only_dirs`` are readable but never writable (the spill directory
    for large tool outputs lives there, so the model can ``Read`` a spilled
    output without being able to write beside the session files).
    """

    def __init__(
        self,
        root: str,
        additional_dirs: Sequence[str] = (),
        *,
        read_only_dirs: Sequence[str] = (),
        on_write: Callable[[str, bytes | None, bytes], None] | None = None,
    ):
        self.on_write = on_write
        """Told ``(real path, previous content or None, new content)`` before each write (checkpoints)."""
        self.root = _real(root)
        """The workspace root, as a real path; relative tool paths start here."""
        self.additional_dirs = tuple(_real(d) for d in additional_dirs)
        """Further readable and writable directories, as real paths."""
        self.read_only_dirs = tuple(_real(d) for d in read_only_dirs)
        """Directories that may be read but not written, as real paths."""
        from ..sandbox.gitguard import account_homes, user_home_of
        from ..sandbox.home import listed_homes

        self.hidden_homes = tuple(listed_homes(account_homes(user_home_of(os.environ)), self.roots))
        """The user's homes that a root shows whole (the workspace is the home or a folder above it): their dot
        entries (credential stores, agent sockets, histories, start-up files) are outside the workspace for the
        file tools, as they are hidden from sandboxed commands (``sandbox.home.allow_list_mounts``), unless a
        root of its own (``--add-dir``) names them."""

    @property
    def roots(self) -> tuple[str, ...]:
        """The root and the additional directories: the writable places."""
        return (self.root, *self.additional_dirs)

    def with_read_only(self, *dirs: str) -> Workspace:
        """A copy that may also read (not write) ``dirs``."""
        return Workspace(
            self.root, self.additional_dirs, read_only_dirs=(*self.read_only_dirs, *dirs), on_write=self.on_write
        )

    def _allowed_roots(self, for_write: bool) -> tuple[str, ...]:
        return self.roots if for_write else (*self.roots, *self.read_only_dirs)

    def contains(self, real_path: str, *, for_write: bool = False) -> bool:
        """True when an already-resolved real path lies inside an allowed root, and not in the hidden part of
        a home the root shows whole (the nearest root decides: an added ``~/.config/nvim`` is readable)."""
        best = max((r for r in self._allowed_roots(for_write) if _inside(real_path, r)), key=len, default=None)
        if best is None:
            return False
        if self.hidden_homes and any(_inside(h, best) for h in self.hidden_homes):
            from ..sandbox.home import hidden_part

            return not hidden_part(real_path, self.hidden_homes)
        return True

    def resolve(self, path: str, *, for_write: bool = False) -> str:
        """The real absolute path of ``path`` (relative paths start at the root).

        Symlinks are followed before the check; a path that does not exist yet
        is resolved as far as it exists and collapsed lexically after that.
        ``~/x`` means the user's home directory, as in a shell.

        Raises:
            OutsideWorkspace: the path leads outside every allowed directory
                (for writes, read-only directories do not count).
            ToolError: a link on the path changed while it was being followed.
        """
        if not isinstance(path, str) or not path:
            raise OutsideWorkspace("an empty path is not a file in the workspace")
        if "\0" in path:
            raise OutsideWorkspace(f"the path {path!r} contains a NUL character")
        if path == "~" or path.startswith("~/"):
            path = os.path.expanduser(path)
        joined = path if os.path.isabs(path) else os.path.join(self.root, path)
        try:
            real = os.path.realpath(joined)
        except OSError as exc:  # a link changed while it was followed (lstat saw a link, readlink did not)
            raise ToolError(f"cannot resolve the path {path!r}: {exc.strerror or exc}") from None
        if not self.contains(real, for_write=for_write):
            where = ", ".join(self._allowed_roots(for_write))
            kind = "written" if for_write else "read"
            if any(_inside(real, r) for r in self._allowed_roots(for_write)):
                raise OutsideWorkspace(
                    f"the path {path!r} resolves to {real}, in your home's dot folders and files (credential stores,"
                    f" histories, start-up files), which are not part of a home workspace and cannot be {kind};"
                    " the user can add one with --add-dir"
                )
            raise OutsideWorkspace(
                f"the path {path!r} resolves to {real}, which is outside the workspace "
                f"and cannot be {kind} (allowed: {where})"
            )
        return real

    def relative(self, real_path: str) -> str:
        """``real_path`` relative to the root when inside it, else unchanged (for display)."""
        if _inside(real_path, self.root):
            rel = os.path.relpath(real_path, self.root)
            return rel
        return real_path

    # -- opening without a check/use window --------------------------------

    def _root_of(self, real: str, for_write: bool) -> str:
        best = ""
        for r in self._allowed_roots(for_write):
            if _inside(real, r) and len(r) > len(best):
                best = r
        if not best:
            raise OutsideWorkspace(f"{real} is outside the workspace")
        return best

    def _walk_to_parent(self, real: str, for_write: bool, *, create_dirs: bool) -> tuple[int, str]:
        """A descriptor of ``real``'s parent directory, opened component by component."""
        root = self._root_of(real, for_write)
        rel = os.path.relpath(real, root)
        parts = [] if rel == os.curdir else rel.split(os.sep)
        if not parts:
            raise OutsideWorkspace(f"{real} is a workspace root, not a file in it")
        try:
            fd = os.open(root, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except OSError as exc:
            raise ToolError(f"cannot open the workspace directory {root}: {exc.strerror}") from None
        walked = root
        try:
            for part in parts[:-1]:
                walked = os.path.join(walked, part)
                try:
                    nfd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nfd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except OSError as exc:
            is_link = False
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                try:
                    is_link = stat.S_ISLNK(os.stat(os.path.basename(walked), dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    is_link = True
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and not is_link:
                raise ToolError(f"{walked} is a file, not a directory") from None
            raise _walk_error(real, exc) from None
        return fd, parts[-1]

    def open(
        self,
        path: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o666,
        *,
        for_write: bool = False,
        create_dirs: bool = False,
    ) -> int:
        """Resolve ``path`` and open it without following any symlink after the check.

        Returns a raw file descriptor (the caller closes it). ``create_dirs``
        makes missing parent directories, each inside the walk.

        Raises:
            OutsideWorkspace: the path leads out, or a symlink appeared between
                the check and the open.
            FileNotFoundError, IsADirectoryError, PermissionError: as ``os.open``.
        """
        real = self.resolve(path, for_write=for_write)
        return self.open_resolved(real, flags, mode, for_write=for_write, create_dirs=create_dirs)

    def open_resolved(
        self,
        real: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o666,
        *,
        for_write: bool = False,
        create_dirs: bool = False,
    ) -> int:
        """Like ``open`` for a path that ``resolve`` has already returned."""
        if not self.contains(real, for_write=for_write):
            raise OutsideWorkspace(f"{real} is outside the workspace")
        if real in self._allowed_roots(for_write):
            fd = os.open(real, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        else:
            dfd, name = self._walk_to_parent(real, for_write, create_dirs=create_dirs)
            try:
                # Look before opening: opening a socket fails oddly and opening
                # a device can act (a tape rewinds, a watchdog arms).
                _refuse_special(name, dfd, real)
                fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode, dir_fd=dfd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise OutsideWorkspace(
                        f"{real} became a symbolic link after it was checked; refused"
                    ) from None
                raise
            finally:
                os.close(dfd)
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            os.close(fd)
            raise ToolError(f"{real} is not a regular file")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd

    def read_bytes(self, path: str) -> bytes:
        """The whole content of a file inside the workspace (or a read-only directory)."""
        fd = self.open(path)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def unchanged_path(self, real: str) -> str:
        """``real`` (as ``resolve`` returned it), looked at again just before it is handed by name to another
        program (ACP's ``fs/write_text_file``): each component below its root must still be what it was, no
        symbolic link (a racing rename could have made one that leads out).

        Raises:
            OutsideWorkspace: a component is now a symbolic link, or the path now resolves elsewhere.
        """
        root = self._root_of(real, True)
        walked = root
        rel = os.path.relpath(real, root)
        for part in [] if rel == os.curdir else rel.split(os.sep):
            walked = os.path.join(walked, part)
            try:
                st = os.lstat(walked)
            except FileNotFoundError:
                break  # not made yet: the program that writes makes it
            if stat.S_ISLNK(st.st_mode):
                raise OutsideWorkspace(f"{walked} became a symbolic link after {real} was checked; refused")
        if _real(real) != real:
            raise OutsideWorkspace(f"{real} now resolves to {_real(real)}; refused")
        return real

    def refuse_code_for_git(self, pending: dict[str, bytes | None]) -> None:
        """Raise ToolError when writing ``pending`` (real path -> bytes, None to remove) would make the
        user's git run code it did not run before (``sandbox.gitguard.write_refusal``, the check every
        write path shares: a hook, a program in a repository's configuration, a ``commondir`` or
        ``.git`` pointer, in any folder git would take for a repository)."""
        from ..sandbox.gitguard import write_refusal

        why = write_refusal(pending, self.roots)
        if why is not None:
            raise ToolError(f"refused: {why}. Files that git runs without being asked are not written by the agent;"
                            " the user can make this change themselves")

    def write_bytes(self, path: str, data: bytes) -> str:
        """Replace a file's content atomically (a temporary file renamed over it).

        Missing parent directories are created. Returns the real path written.
        The rename happens relative to the parent directory's descriptor from
        the symlink-free walk, so it cannot land outside.
        """
        real = self.resolve(path, for_write=True)
        if real in self.roots:
            raise ToolError(f"{real} is a directory")
        self.refuse_code_for_git({real: data})
        dfd, name = self._walk_to_parent(real, True, create_dirs=True)
        tmp = f".{name}.agentloop-tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            mode = 0o644
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise OutsideWorkspace(f"{real} became a symbolic link after it was checked; refused")
                if stat.S_ISDIR(st.st_mode):
                    raise ToolError(f"{real} is a directory")
                mode = stat.S_IMODE(st.st_mode)
                before: bytes | None = None
                if self.on_write is not None:
                    rfd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
                    with os.fdopen(rfd, "rb") as rf:
                        before = rf.read()
            except FileNotFoundError:
                before = None
            if self.on_write is not None:
                self.on_write(real, before, data)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
        finally:
            os.close(dfd)
        return real


def _refuse_special(name: str, dir_fd: int, real: str) -> None:
    """Raise ToolError when ``name`` exists and is neither a regular file, a directory nor a link."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return  # missing (about to be created) or unreadable: the open says so
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise ToolError(f"{real} is not a regular file")


def _walk_error(real: str, exc: OSError) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return OutsideWorkspace(
            f"a directory on the way to {real} was replaced (by a symbolic link or a file) "
            "after the path was checked; refused"
        )
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"{real} does not exist")
    return ToolError(f"cannot open {real}: {exc.strerror}")
