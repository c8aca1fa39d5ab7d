"""Custom slash commands from Markdown templates, and skills loaded on demand."""

from __future__ import annotations

import pytest

from agentloop.agent.commands import (
    load_commands,
    load_skills,
    parse_front_matter,
    render_skill_index,
    skill_tool,
)
from agentloop.events import ToolCall
from agentloop.tools import Registry, ToolError


@pytest.fixture
def dirs(tmp_path):
    cwd = tmp_path / "proj"
    home = tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_commands_come_from_all_three_places_with_project_overriding_user(dirs):
    cwd, home = dirs
    write(home / "commands" / "review.md", "user review")
    write(home / "commands" / "mine.md", "only mine")
    write(cwd / ".claude" / "commands" / "review.md", "claude review")
    write(cwd / ".claude" / "commands" / "legacy.md", "from claude")
    write(cwd / ".agentloop" / "commands" / "review.md", "agentloop review")
    write(cwd / ".agentloop" / "commands" / "frontend" / "component.md", "make a component")
    write(cwd / ".agentloop" / "commands" / "notes.txt", "not a command")
    cmds = load_commands(str(cwd), str(home))
    assert sorted(cmds) == ["component", "legacy", "mine", "review"]  # Claude Code: a subfolder command keeps its file name
    assert cmds["review"].template == "agentloop review"
    assert cmds["mine"].scope == "user" and cmds["review"].scope == "project"


def test_arguments_are_substituted(dirs):
    cwd, home = dirs
    write(cwd / ".agentloop" / "commands" / "fix.md", "Fix issue $ARGUMENTS now.")
    write(cwd / ".agentloop" / "commands" / "pos.md", "from $0 to $1 (first: $ARGUMENTS[0]); $10 stays")
    write(cwd / ".agentloop" / "commands" / "plain.md", "Summarise the repo.")
    cmds = load_commands(str(cwd), str(home))
    assert cmds["fix"].render("#123 urgently") == "Fix issue #123 urgently now."
    assert cmds["pos"].render('"main branch" dev') == "from main branch to dev (first: main branch); $10 stays"
    assert cmds["plain"].render("") == "Summarise the repo."
    assert cmds["plain"].render("focus on tests") == "Summarise the repo.\n\nARGUMENTS: focus on tests"


def test_substituted_arguments_are_not_substituted_again(dirs):
    cwd, home = dirs
    write(cwd / ".agentloop" / "commands" / "x.md", "a=$ARGUMENTS b=$1")
    cmd = load_commands(str(cwd), str(home))["x"]
    assert cmd.render("$0 $ARGUMENTS") == "a=$0 $ARGUMENTS b=$ARGUMENTS"  # $1 is the second argument (0-based)


def test_front_matter_gives_description_and_argument_hint(dirs):
    cwd, home = dirs
    write(
        cwd / ".agentloop" / "commands" / "deploy.md",
        "---\ndescription: \"Deploy: to an environment\"\nargument-hint: [env]\nmodel: fast\n---\nDeploy to $1.\n",
    )
    write(cwd / ".agentloop" / "commands" / "bare.md", "\n# Explain the code\n\nmore")
    cmds = load_commands(str(cwd), str(home))
    assert cmds["deploy"].description == "Deploy: to an environment"
    assert cmds["deploy"].argument_hint == "[env]"
    assert cmds["deploy"].template == "Deploy to $1.\n"
    assert cmds["bare"].description == "Explain the code"


FRONT = [
    ("---\na: 1\nb: 'it''s'\n---\nbody", {"a": "1", "b": "it's"}, "body"),
    ("---\nlist: [x, \"y\"]\n---\n", {"list": ["x", "y"]}, ""),
    ("---\nd: >\n  folded\n  text\n---\nB", {"d": "folded text"}, "B"),
    ("---\nd: |\n  one\n  two\n---\nB", {"d": "one\ntwo"}, "B"),
    ("---\nitems:\n  - a\n  - b\n---\nB", {"items": ["a", "b"]}, "B"),
    ("---\nno end\n", {}, "---\nno end\n"),
    ("no header", {}, "no header"),
    ("---\n  indented first\n---\nB", {}, "---\n  indented first\n---\nB"),
]


@pytest.mark.parametrize("text,meta,body", FRONT)
def test_front_matter_subset(text, meta, body):
    assert parse_front_matter(text) == (meta, body)


def test_skills_expose_only_descriptions_until_loaded(dirs):
    cwd, home = dirs
    write(
        cwd / ".agentloop" / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\n---\nSECRET-BODY: use pdftk in scripts/fill.sh\n",
    )
    write(home / "skills" / "notes" / "SKILL.md", "Keep notes tidy.\n\nDetails here.")
    write(cwd / ".claude" / "skills" / "empty" / "README.md", "not a skill")
    skills = load_skills(str(cwd), str(home))
    assert sorted(skills) == ["notes", "pdf-tools"]
    index = render_skill_index(skills)
    assert "pdf-tools: Fill and merge PDF forms" in index
    assert "notes: Keep notes tidy." in index
    assert "SECRET-BODY" not in index
    body = skills["pdf-tools"].body()
    assert "SECRET-BODY: use pdftk" in body and str(cwd / ".agentloop" / "skills" / "pdf") in body
    assert "name: pdf-tools" not in body


def test_the_skill_tool_loads_a_skill_for_the_model(dirs):
    cwd, home = dirs
    write(cwd / ".agentloop" / "skills" / "pdf" / "SKILL.md", "---\ndescription: PDFs\n---\nDo the PDF thing.")
    reg = Registry([skill_tool(load_skills(str(cwd), str(home)))])
    assert reg.get("Skill").read_only
    r = reg.invoke(ToolCall("1", "Skill", {"skill": "pdf"}))
    assert r.ok and "Do the PDF thing." in r.content
    r = reg.invoke(ToolCall("2", "Skill", {"skill": "nope"}))
    assert not r.ok and "no skill named 'nope'" in r.error and "pdf" in r.error


def test_a_skill_deleted_after_loading_the_index_is_a_tool_error(dirs):
    cwd, home = dirs
    p = cwd / ".agentloop" / "skills" / "gone" / "SKILL.md"
    write(p, "soon gone")
    skills = load_skills(str(cwd), str(home))
    p.unlink()
    with pytest.raises(ToolError):
        skills["gone"].body()


def test_a_skill_invoked_with_arguments_substitutes_them(dirs):
    cwd, home = dirs
    write(cwd / ".agentloop" / "skills" / "greet" / "SKILL.md", "Greet $ARGUMENTS warmly.")
    write(cwd / ".agentloop" / "skills" / "plain" / "SKILL.md", "Be plain.")
    skills = load_skills(str(cwd), str(home))
    assert "Greet Ada warmly." in skills["greet"].render("Ada")
    assert skills["plain"].render("x").rstrip().endswith("ARGUMENTS: x")
