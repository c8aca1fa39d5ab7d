"""Memory files where Claude Code users keep them.

Claude Code's memory documentation: project memory in ``./CLAUDE.md`` or
``./.claude/CLAUDE.md``; modular rules in ``./.claude/rules/*.md``
(subfolders too, and ``paths:`` front matter scoping a rule to some files);
user memory in ``~/.claude/CLAUDE.md`` and ``~/.claude/rules/``; the managed
policy file ``/etc/claude-code/CLAUDE.md`` on Linux; ``@path`` imports up to
five hops. Seed 004 names ``AGENT.md`` beside ``AGENTS.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.session.memory import load_memory, render_memory


@pytest.fixture()
def layout(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"  # the user's home
    al = tmp_path / "alhome"  # agentloop's home
    repo = tmp_path / "repo"
    for d in (home / ".claude" / "rules" / "style", al, repo / ".git", repo / ".claude" / "rules" / "backend", repo / "src"):
        d.mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("USER-CLAUDE\n")
    (home / ".claude" / "rules" / "style" / "tabs.md").write_text("USER-RULE-TABS\n")
    (repo / "CLAUDE.md").write_text("ROOT-CLAUDE\n")
    (repo / "AGENT.md").write_text("ROOT-AGENT\n")
    (repo / ".claude" / "CLAUDE.md").write_text("DOT-CLAUDE\n")
    (repo / ".claude" / "rules" / "testing.md").write_text("RULE-TESTING\n")
    (repo / ".claude" / "rules" / "backend" / "api.md").write_text('---\npaths:\n  - "src/api/**/*.py"\n---\nRULE-API\n')
    (repo / "src" / "CLAUDE.md").write_text("SRC-CLAUDE\n")
    managed = tmp_path / "managed" / "CLAUDE.md"
    managed.parent.mkdir()
    managed.write_text("MANAGED\n")
    return {"home": home, "al": al, "repo": repo, "managed": managed}


def _texts(files: list) -> list[str]:  # type: ignore[type-arg]
    return [f.text.strip().splitlines()[-1] for f in files]


def test_claude_codes_memory_places_load_in_order_most_general_first(layout: dict[str, Path]) -> None:
    files = load_memory(str(layout["repo"] / "src"), str(layout["al"]), user_home=str(layout["home"]), managed=str(layout["managed"]))
    assert _texts(files) == [
        "MANAGED", "USER-CLAUDE", "USER-RULE-TABS",
        "ROOT-AGENT", "ROOT-CLAUDE", "DOT-CLAUDE", "RULE-API", "RULE-TESTING",
        "SRC-CLAUDE",
    ]
    reasons = {f.text.strip().splitlines()[-1]: f.reason for f in files}
    assert reasons["MANAGED"] == "managed" and reasons["USER-RULE-TABS"] == "user rule" and reasons["RULE-TESTING"] == "project rule"


def test_a_path_scoped_rule_is_loaded_and_says_which_files_it_is_about(layout: dict[str, Path]) -> None:
    files = load_memory(str(layout["repo"]), str(layout["al"]), user_home=str(layout["home"]), managed=str(layout["managed"]))
    api = next(f for f in files if f.path.endswith("api.md"))
    assert api.text.startswith("(This rule is about files matching: src/api/**/*.py.)") and "paths:" not in api.text


def test_imports_follow_five_hops_as_claude_code_does(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("start @h1.md\n")
    for i in range(1, 7):
        (repo / f"h{i}.md").write_text(f"HOP{i} @h{i + 1}.md\n")
    files = load_memory(str(repo), str(tmp_path / "al"), user_home=str(tmp_path / "nohome"), managed=str(tmp_path / "none"))
    loaded = {Path(f.path).name for f in files}
    assert {"h1.md", "h5.md"} <= loaded and "h6.md" not in loaded


def test_the_agent_puts_claude_code_memory_in_its_system_prompt(layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTLOOP_HOME", str(layout["al"]))
    script = tmp_path / "s.json"
    script.write_text("[]")
    a = Agent(cwd=str(layout["repo"]), model=f"scripted:{script}", env={"HOME": str(layout["home"]), "AGENTLOOP_HOME": str(layout["al"])})
    try:
        prompt = a.system_prompt()
        for marker in ("USER-CLAUDE", "USER-RULE-TABS", "DOT-CLAUDE", "RULE-TESTING", "ROOT-AGENT"):
            assert marker in prompt, marker
        assert str(layout["repo"] / ".claude" / "CLAUDE.md") in a.memory_files
    finally:
        a.close()


def test_render_names_every_file_it_holds(layout: dict[str, Path]) -> None:
    files = load_memory(str(layout["repo"]), str(layout["al"]), user_home=str(layout["home"]), managed=str(layout["managed"]))
    text = render_memory(files)
    for f in files:
        assert f.path in text
