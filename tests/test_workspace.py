"""Workspace confinement: real paths, symlinks followed before the check, no check/use window."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from agentloop.agent.tools.workspace import OutsideWorkspace, Workspace
from agentloop.tools import ToolError

SECRET = "outside secret\n"


@pytest.fixture
def tree(tmp_path):
    base = tmp_path.resolve()
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "inside.txt").write_text("inside\n")
    (root / "sub" / "file.txt").write_text("sub file\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    evil = base / "root-evil"
    evil.mkdir()
    (evil / "x.txt").write_text("evil\n")
    extra = base / "extra"
    extra.mkdir()
    (extra / "e.txt").write_text("extra\n")
    (base / "extra-evil").mkdir()
    ro = base / "spill"
    ro.mkdir()
    (ro / "out.txt").write_text("spilled\n")
    os.symlink(root / "sub", root / "link_in")
    os.symlink(outside, root / "link_out")
    os.symlink(outside / "secret.txt", root / "file_link_out")
    os.symlink(base / "nowhere" / "new.txt", root / "dangling_out")
    os.symlink(root / "link_out", root / "chain_out")
    os.symlink(root / "inside.txt", root / "file_link_in")
    return base


# (path, for_write, expected: "ok" or "out"); "{b}" is the base directory
CASES = [
    ("inside.txt", False, "ok"),
    ("./inside.txt", False, "ok"),
    ("sub/../inside.txt", False, "ok"),
    ("sub/file.txt", True, "ok"),
    ("new/dir/file.txt", True, "ok"),
    (".", False, "ok"),
    ("{b}/root/inside.txt", False, "ok"),
    ("link_in/file.txt", False, "ok"),
    ("file_link_in", True, "ok"),
    ("../outside/secret.txt", False, "out"),
    ("sub/../../outside/secret.txt", False, "out"),
    ("..", False, "out"),
    ("{b}/outside/secret.txt", False, "out"),
    ("/etc/passwd", False, "out"),
    ("/", False, "out"),
    ("{b}/root-evil/x.txt", False, "out"),
    ("../root-evil/x.txt", False, "out"),
    ("{b}/root-evil", True, "out"),
    ("link_out/secret.txt", False, "out"),
    ("link_out", False, "out"),
    ("file_link_out", False, "out"),
    ("file_link_out", True, "out"),
    ("chain_out/secret.txt", False, "out"),
    ("dangling_out", True, "out"),
    ("link_in/../../outside/secret.txt", False, "out"),
    ("{b}/extra/e.txt", True, "ok"),
    ("{b}/extra-evil/x", True, "out"),
    ("{b}/spill/out.txt", False, "ok"),
    ("{b}/spill/out.txt", True, "out"),
    ("~/anything", False, "out"),
    ("", False, "out"),
    ("bad\0name", False, "out"),
]


@pytest.mark.parametrize("path,for_write,expected", CASES)
def test_resolve_confines_paths_to_the_workspace(tree, path, for_write, expected):
    ws = Workspace(str(tree / "root"), [str(tree / "extra")], read_only_dirs=[str(tree / "spill")])
    p = path.replace("{b}", str(tree))
    if expected == "ok":
        real = ws.resolve(p, for_write=for_write)
        assert os.path.isabs(real)
        assert real == os.path.realpath(real)
        assert ws.contains(real, for_write=for_write)
    else:
        with pytest.raises(OutsideWorkspace):
            ws.resolve(p, for_write=for_write)


def test_a_tilde_path_means_the_home_directory(tree, monkeypatch):
    monkeypatch.setenv("HOME", str(tree / "root"))
    ws = Workspace(str(tree / "root"))
    assert ws.resolve("~/inside.txt") == str(tree / "root" / "inside.txt")


def test_outside_workspace_is_a_tool_error_whose_message_names_the_path(tree):
    ws = Workspace(str(tree / "root"))
    with pytest.raises(ToolError) as info:
        ws.resolve("link_out/secret.txt")
    assert "link_out/secret.txt" in str(info.value)
    assert "outside the workspace" in str(info.value)


def test_a_symlinked_root_is_resolved_so_paths_through_either_name_work(tree):
    os.symlink(tree / "root", tree / "root_alias")
    ws = Workspace(str(tree / "root_alias"))
    assert ws.root == str(tree / "root")
    assert ws.resolve(str(tree / "root" / "inside.txt")) == str(tree / "root" / "inside.txt")
    assert ws.read_bytes(str(tree / "root_alias" / "inside.txt")) == b"inside\n"


def test_reading_and_writing_inside_work(tree):
    ws = Workspace(str(tree / "root"))
    assert ws.read_bytes("link_in/file.txt") == b"sub file\n"
    real = ws.write_bytes("deep/er/new.txt", b"hello")
    assert real == str(tree / "root" / "deep" / "er" / "new.txt")
    assert (tree / "root" / "deep" / "er" / "new.txt").read_bytes() == b"hello"


def test_writing_through_a_symlink_that_points_out_is_refused_and_changes_nothing(tree):
    ws = Workspace(str(tree / "root"))
    with pytest.raises(OutsideWorkspace):
        ws.write_bytes("file_link_out", b"pwned")
    with pytest.raises(OutsideWorkspace):
        ws.write_bytes("link_out/new.txt", b"pwned")
    assert (tree / "outside" / "secret.txt").read_text() == SECRET
    assert not (tree / "outside" / "new.txt").exists()


# --- time of check / time of use ------------------------------------------------


def _swap_dir_for_link(root, name, target):
    os.rename(root / name, root / f"{name}.away")
    os.symlink(target, root / name)


def test_negative_control_a_plain_open_after_the_check_would_read_the_secret(tree):
    """The swap below really opens a window: a naive open of the checked path leaks."""
    ws = Workspace(str(tree / "root"))
    (tree / "outside" / "file.txt").write_text(SECRET)
    real = ws.resolve("sub/file.txt")
    _swap_dir_for_link(tree / "root", "sub", tree / "outside")
    with open(real) as f:
        assert f.read() == SECRET


def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused_at_open(tree):
    ws = Workspace(str(tree / "root"))
    (tree / "outside" / "file.txt").write_text(SECRET)
    real = ws.resolve("sub/file.txt")
    _swap_dir_for_link(tree / "root", "sub", tree / "outside")
    with pytest.raises(OutsideWorkspace):
        ws.open_resolved(real)


def test_a_file_swapped_for_a_symlink_after_the_check_is_refused_at_open(tree):
    ws = Workspace(str(tree / "root"))
    real = ws.resolve("inside.txt")
    os.unlink(tree / "root" / "inside.txt")
    os.symlink(tree / "outside" / "secret.txt", tree / "root" / "inside.txt")
    with pytest.raises(OutsideWorkspace):
        ws.open_resolved(real)


def test_a_write_after_a_parent_swap_does_not_land_outside(tree, monkeypatch):
    ws = Workspace(str(tree / "root"))
    original = Workspace.resolve

    def resolve_then_swap(self, path, *, for_write=False):
        real = original(self, path, for_write=for_write)
        if not (tree / "root" / "sub.away").exists():
            _swap_dir_for_link(tree / "root", "sub", tree / "outside")
        return real

    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)
    with pytest.raises(OutsideWorkspace):
        ws.write_bytes("sub/planted.txt", b"pwned")
    assert not (tree / "outside" / "planted.txt").exists()


def test_a_link_that_stops_being_one_while_it_is_followed_is_a_tool_error(tree, monkeypatch):
    # realpath saw a link (lstat), then readlink found none: another process swapped it
    # at that moment. The call fails as a tool error, never as an escaped OSError.
    ws = Workspace(str(tree / "root"))
    os.symlink(tree / "root" / "sub", tree / "root" / "hop")

    def gone(path, *a, **kw):  # type: ignore[no-untyped-def]
        raise OSError(errno.EINVAL, "Invalid argument", path)

    monkeypatch.setattr(os, "readlink", gone)
    with pytest.raises(ToolError, match=r"cannot resolve the path 'hop/file.txt': Invalid argument"):
        ws.resolve("hop/file.txt")


def test_a_symlink_swapped_in_and_out_by_another_thread_never_leaks_the_outside_file(tree):
    ws = Workspace(str(tree / "root"))
    (tree / "outside" / "file.txt").write_text(SECRET)
    root = tree / "root"
    stop = threading.Event()
    swaps = 0

    def swapper():
        nonlocal swaps
        while not stop.is_set():
            os.rename(root / "sub", root / "sub.away")
            os.symlink(tree / "outside", root / "sub")
            os.unlink(root / "sub")
            os.rename(root / "sub.away", root / "sub")
            swaps += 1

    t = threading.Thread(target=swapper)
    t.start()
    seen = {"inside": 0, "refused": 0}
    # at least 3,000 reads, and on until both outcomes were seen (a loaded machine can starve one
    # thread for a while), for at most 30 s: the guard is that no read ever returns the outside file
    deadline = time.monotonic() + 30
    n = 0
    try:
        while n < 3000 or ((not seen["inside"] or not seen["refused"]) and time.monotonic() < deadline):
            n += 1
            try:
                data = ws.read_bytes("sub/file.txt")
            except (OutsideWorkspace, ToolError, FileNotFoundError):
                seen["refused"] += 1
                continue
            assert data != SECRET.encode(), "read the outside file through a swapped symlink"
            assert data == b"sub file\n"
            seen["inside"] += 1
    finally:
        stop.set()
        t.join()
    assert swaps > 10
    assert seen["inside"] > 0
