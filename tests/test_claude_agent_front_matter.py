"""Agent files' front matter read as YAML, as Claude Code reads it: ``tools`` as a comma-separated string, a flow
list or a block list, laid out as Anthropic's plugin-dev and hookify agents and community reviewers write them.

Claude Code's sub-agents page, "File format" and "Supported frontmatter fields": sub-agents "are defined in Markdown
files with YAML frontmatter"; ``tools``: "Tools the subagent can use. Inherits all tools if omitted"
(https://code.claude.com/docs/en/sub-agents#supported-frontmatter-fields). Anthropic's own plugins write it as a YAML
flow list (``tools: ["Read", "Grep", "Glob", "Bash"]`` in plugins/plugin-dev/agents/plugin-validator.md).
"""

from __future__ import annotations

from pathlib import Path

from agentloop.agent.front_matter import parse_front_matter
from agentloop.agent.subagents.agent_types import read_agent_dir

PLUGIN_VALIDATOR = """\
---
name: plugin-validator
description: |
  Use this agent when the user asks to "validate my plugin".

  <example>
  user: "Validate my plugin before I publish it"
  </example>

model: inherit
color: yellow
tools: ["Read", "Grep", "Glob", "Bash"]
---

You are an expert plugin validator.
"""
BLOCK_LIST = """\
---
name: conversation-analyzer
description: Use this agent when: the user asks which hooks to write
tools:
  - Read
  - Grep
---
You read transcripts.
"""
REVIEWER = """\
---
name: reviewer
description: "Reviews code: style and tests"
tools: Read, Glob, Grep
---
You review.
"""


def _agents(tmp_path: Path, files: dict[str, str]) -> tuple[dict[str, object], list[str]]:
    d = tmp_path / "agents"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    warnings: list[str] = []
    return dict(read_agent_dir(str(d), warnings)), warnings


def test_a_flow_list_of_tools_is_a_list_of_tool_names(tmp_path: Path) -> None:
    types, warnings = _agents(tmp_path, {"plugin-validator.md": PLUGIN_VALIDATOR})
    t = types["plugin-validator"]
    assert t.tools == ("Read", "Grep", "Glob", "Bash")  # type: ignore[attr-defined]
    assert t.model is None and t.prompt == "You are an expert plugin validator."  # type: ignore[attr-defined]
    assert "<example>" in t.description  # type: ignore[attr-defined]
    assert warnings == []


def test_a_block_list_of_tools_is_read_even_when_the_header_is_not_valid_yaml(tmp_path: Path) -> None:
    """An unquoted ``description: Use this agent when: ...`` is not valid YAML; the line-by-line reading still
    gives the block list as two tools (it once split them as text and lost one)."""
    types, warnings = _agents(tmp_path, {"analyzer.md": BLOCK_LIST, "reviewer.md": REVIEWER})
    assert types["conversation-analyzer"].tools == ("Read", "Grep")  # type: ignore[attr-defined]
    assert types["conversation-analyzer"].description == "Use this agent when: the user asks which hooks to write"  # type: ignore[attr-defined]
    assert types["reviewer"].tools == ("Read", "Glob", "Grep")  # type: ignore[attr-defined]
    assert warnings == []


def test_flow_list_items_keep_commas_inside_quotes_and_parentheses() -> None:
    meta, body = parse_front_matter('---\nallowed-tools: [Bash(git add:*), "Bash(echo a, b)", Read]\n---\nbody')
    assert meta["allowed-tools"] == ["Bash(git add:*)", "Bash(echo a, b)", "Read"] and body == "body"
    loose, _ = parse_front_matter('---\ndescription: a: b\nallowed-tools: [Bash(git add:*), "Bash(echo a, b)"]\n---\n')
    assert loose["allowed-tools"] == ["Bash(git add:*)", "Bash(echo a, b)"]


def test_what_the_line_reading_cannot_understand_is_named_with_its_file_and_key(tmp_path: Path) -> None:
    text = "---\ndescription: Guard: checks writes\nhooks:\n  PreToolUse:\n    - matcher: Bash\n---\nbody\n"
    warnings: list[str] = []
    meta, _ = parse_front_matter(text, warnings, "x/SKILL.md")
    assert "hooks" not in meta and meta["description"] == "Guard: checks writes"
    assert warnings == ["x/SKILL.md: front matter 'hooks' cannot be read (the header is not valid YAML, and 'hooks' holds "
                        "an indented mapping); left out"]


def test_tools_of_the_wrong_shape_give_no_tools_and_a_warning(tmp_path: Path) -> None:
    types, warnings = _agents(tmp_path, {"odd.md": "---\nname: odd\ntools: {Read: yes}\n---\nx\n"})
    assert types["odd"].tools == ()  # type: ignore[attr-defined]
    assert any("front matter 'tools' must be a list" in w for w in warnings)


def test_yaml_anchors_and_aliases_are_not_expanded() -> None:
    """A header of aliases (the "billion laughs" shape) is not YAML here: it is read line by line, as text."""
    meta, _ = parse_front_matter("---\na: &x [1, 2]\nb: [*x, *x, *x]\n---\n")
    assert meta["b"] == ["*x", "*x", "*x"]
