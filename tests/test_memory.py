"""Memory files: AGENTS.md / CLAUDE.md / CLAUDE.local.md from the git root down, and @imports."""

from __future__ import annotations

import os
import subprocess

import pytest

from agentloop.agent.session.memory import (
    MAX_FILE_CHARS,
    MAX_IMPORT_DEPTH,
    load_memory,
    render_memory,
)


@pytest.fixture
def repo(tmp_path):
    base = tmp_path.resolve()
    root = base / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    home = base / "home"
    home.mkdir()
    return base, root, home


def names(files, base):
    return [os.path.relpath(f.path, base) for f in files]


def test_files_load_from_the_git_root_down_to_the_cwd_with_the_users_first(repo):
    base, root, home = repo
    (base / "AGENTS.md").write_text("above the repo: never loaded")
    (home / "AGENTS.md").write_text("user rules")
    (root / "AGENTS.md").write_text("root agents")
    (root / "CLAUDE.md").write_text("root claude")
    (root / "CLAUDE.local.md").write_text("root local")
    (root / "pkg" / "CLAUDE.md").write_text("pkg claude")
    (root / "pkg" / "sub" / "AGENTS.md").write_text("sub agents")
    files = load_memory(str(root / "pkg" / "sub"), str(home))
    assert names(files, base) == [
        "home/AGENTS.md",
        "repo/AGENTS.md",
        "repo/CLAUDE.md",
        "repo/CLAUDE.local.md",
        "repo/pkg/CLAUDE.md",
        "repo/pkg/sub/AGENTS.md",
    ]
    assert [f.reason for f in files][:4] == ["user", "project", "project", "local"]
    text = render_memory(files)
    assert text.index("user rules") < text.index("root agents") < text.index("sub agents")
    assert "never loaded" not in text


def test_outside_git_the_walk_starts_at_the_filesystem_root(tmp_path):
    base = tmp_path.resolve()
    (base / "a" / "b").mkdir(parents=True)
    (base / "AGENTS.md").write_text("top")
    (base / "a" / "b" / "CLAUDE.md").write_text("leaf")
    files = [f for f in load_memory(str(base / "a" / "b"), str(base / "nohome")) if f.path.startswith(str(base))]
    assert names(files, base) == ["AGENTS.md", "a/b/CLAUDE.md"]


def test_imports_load_relative_home_and_absolute_paths_after_the_importer(repo, monkeypatch):
    base, root, home = repo
    monkeypatch.setenv("HOME", str(base / "oshome"))
    (base / "oshome").mkdir()
    (base / "oshome" / "personal.md").write_text("personal prefs")
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text("style guide")
    (base / "abs.md").write_text("absolute import")
    (root / "CLAUDE.md").write_text(
        f"See @docs/style.md and @~/personal.md and @{base}/abs.md.\nMail me at me@example.com.\n"
    )
    files = load_memory(str(root), str(home), external=True)
    assert names(files, base) == ["repo/CLAUDE.md", "repo/docs/style.md", "oshome/personal.md", "abs.md"]
    assert files[1].reason == f"imported by {root}/CLAUDE.md"
    assert "personal prefs" in render_memory(files) and "absolute import" in render_memory(files)


def test_imports_inside_code_are_not_followed(repo):
    base, root, home = repo
    (root / "x.md").write_text("should not load")
    (root / "CLAUDE.md").write_text("Use `@x.md` literally.\n```\n@x.md\n```\n")
    assert names(load_memory(str(root), str(home)), base) == ["repo/CLAUDE.md"]


def test_a_file_loads_once_so_the_agents_bridge_and_cycles_do_not_repeat(repo):
    base, root, home = repo
    (root / "AGENTS.md").write_text("shared rules @CLAUDE.md")
    (root / "CLAUDE.md").write_text("@AGENTS.md")
    (root / "a.md").write_text("a @b.md")
    (root / "b.md").write_text("b @a.md")
    (root / "CLAUDE.local.md").write_text("@a.md")
    files = load_memory(str(root), str(home))
    assert names(files, base) == ["repo/AGENTS.md", "repo/CLAUDE.md", "repo/CLAUDE.local.md", "repo/a.md", "repo/b.md"]


def test_imports_stop_at_depth_four(repo):
    base, root, home = repo
    for i in range(8):
        (root / f"d{i}.md").write_text(f"level {i} @d{i + 1}.md")
    (root / "CLAUDE.md").write_text("@d0.md")
    files = load_memory(str(root), str(home))
    assert names(files, base) == ["repo/CLAUDE.md"] + [f"repo/d{i}.md" for i in range(MAX_IMPORT_DEPTH)]


def test_a_huge_file_is_cut_and_says_so(repo):
    base, root, home = repo
    (root / "AGENTS.md").write_text("x" * (MAX_FILE_CHARS * 3))
    (f,) = load_memory(str(root), str(home))
    assert len(f.text) < MAX_FILE_CHARS + 200
    assert "was cut" in f.text


def test_the_cwd_is_found_through_a_symlink(repo):
    base, root, home = repo
    (root / "AGENTS.md").write_text("rules")
    os.symlink(root / "pkg", base / "alias")
    files = load_memory(str(base / "alias"), str(home))
    assert names(files, base) == ["repo/AGENTS.md"]


def test_render_is_empty_without_files(repo):
    _, root, home = repo
    assert render_memory(load_memory(str(root), str(home))) == ""
