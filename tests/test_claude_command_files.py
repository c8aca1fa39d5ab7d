"""Commands, skills and sub-agent files as Claude Code documents them: arguments, ``!`` lines, ``@`` files, front matter.

The specification is Claude Code's skills reference (https://code.claude.com/docs/en/skills),
which also covers ``.claude/commands/*.md``:

- "Available string substitutions": ``$ARGUMENTS``; ``$ARGUMENTS[N]`` "by 0-based index";
  ``$N`` "Shorthand for ``$ARGUMENTS[N]``, such as ``$0`` for the first argument or ``$1``
  for the second"; "An indexed placeholder with no corresponding argument [...] stays in the
  content unchanged"; a single backslash before a placeholder keeps it literal; "If
  ``$ARGUMENTS`` is not present in the content, arguments are appended as ``ARGUMENTS: <value>``".
- "Inject dynamic context": ``!`command``` runs before the content is sent; "For multi-line
  commands, use a fenced code block opened with ```` ```! ````". A command that fails stops the
  invocation with ``Bash command failed for pattern "!`...`": ...``.
- Slash commands, "File references": ``@path`` in a command's body includes the file's contents.
- Frontmatter reference: ``disallowed-tools`` takes tools away while the command or skill is in
  force; ``model`` and ``hooks`` (commands and skills), and the sub-agents reference's ``hooks``:
  agentloop does not honour them, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.agent.commands import bang_commands, substitute

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def test_positional_placeholders_are_zero_based_and_a_missing_index_stays_as_written() -> None:
    """Skills reference, "Available string substitutions": ``$0`` is the first argument, ``$1`` the second."""
    body = "Deploy $0 to $1 as $ARGUMENTS[0]. Sum: awk '{sum+=$1}'"
    assert substitute(body, "api staging") == "Deploy api to staging as api. Sum: awk '{sum+=staging}'"
    # one argument: $1 has no argument and stays, so the awk program survives
    out = substitute("Total for $ARGUMENTS[0]: awk '{sum+=$1} END {print sum}' $2", "aggressive")
    assert out == "Total for aggressive: awk '{sum+=$1} END {print sum}' $2"
    # shell-style quoting groups words; $ARGUMENTS is the whole string as typed
    assert substitute("[$0] [$1] <$ARGUMENTS>", '"hello world" second') == '[hello world] [second] <"hello world" second>'
    # a single backslash keeps a placeholder literal (and goes); a doubled one stays and the placeholder expands
    assert substitute(r"costs \$1.00, $0", "x") == "costs $1.00, x\n\nARGUMENTS: x"
    assert substitute(r"\\$0 $ARGUMENTS", "x") == r"\\x x"


def test_arguments_are_appended_when_the_body_has_no_arguments_placeholder() -> None:
    """Skills reference: "If ``$ARGUMENTS`` is not present in the content, arguments are appended"."""
    assert substitute("Review the code.", "src/app.py") == "Review the code.\n\nARGUMENTS: src/app.py"
    assert substitute("Look at $0.", "a.py") == "Look at a.py.\n\nARGUMENTS: a.py"
    assert substitute("Fix $ARGUMENTS.", "bug 12") == "Fix bug 12."
    assert substitute("Review the code.", "") == "Review the code."


@pytest.fixture()
def proj(proj: Path) -> Path:
    """A project with commands as Claude Code lays them out, and one file to mention."""
    (proj / "notes.txt").write_text("NOTE-CONTENT-42\n")
    c = proj / ".claude" / "commands"
    c.mkdir(parents=True)
    (c / "env.md").write_text(
        "---\nallowed-tools: Bash(echo:*), Bash(printf:*)\n---\n## Environment\n\n```!\necho FIRST-LINE\nprintf 'SECOND-%s\\n' LINE\n```\n\nThen $0.\n"
    )
    (c / "broken.md").write_text("---\nallowed-tools: Bash(ls:*)\n---\nState: !`ls /no/such/dir-here`\nNever sent.\n")
    (c / "refused.md").write_text("State: !`touch MADE-BY-BANG`\n")
    (c / "review.md").write_text("---\ndisallowed-tools: Write\n---\nReview @notes.txt and @missing.txt.\n")
    return proj


def test_a_fenced_bang_block_runs_as_one_command_and_its_output_takes_its_place(proj: Path, scripted: Callable[..., str]) -> None:
    """Skills reference, "Inject dynamic context": a block opened with ```` ```! ```` runs before the prompt is sent."""
    assert bang_commands("a\n```!\necho 1\necho 2\n```\nb !`date`") == ["echo 1\necho 2", "date"]
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        prompt, rules = a.expand_command("/env the build") or ("", ())
        assert "FIRST-LINE\nSECOND-LINE" in prompt and "```!" not in prompt and "echo FIRST-LINE" not in prompt
        assert "Then the." in prompt
        assert rules == ("Bash(echo:*)", "Bash(printf:*)")
    finally:
        a.close()


def test_a_failing_bang_line_stops_the_command_with_the_documented_message(proj: Path, scripted: Callable[..., str]) -> None:
    """Skills reference, "Inject dynamic context": a ``!`` command that fails (or is not allowed) ends the invocation."""
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        with pytest.raises(AgentError) as exc:
            a.expand_command("/broken")
        assert str(exc.value).startswith('Bash command failed for pattern "!`ls /no/such/dir-here`": ')
        assert "non-zero status code 2" in str(exc.value) and "No such file" in str(exc.value)
        with pytest.raises(AgentError, match=r'Bash command failed for pattern "!`touch MADE-BY-BANG`"'):
            a.expand_command("/refused")  # no allowed-tools: the ! line asks, and no one can answer
        assert not (proj / "MADE-BY-BANG").exists()
    finally:
        a.close()


def test_print_mode_refuses_a_command_whose_bang_line_fails_and_sends_nothing(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    """The same in headless mode: one line naming the failure, exit 2, no model call (the script is empty)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "alhome")
    p = subprocess.run([*AGENTLOOP, "-p", "/broken", "--model", scripted([])], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert 'Bash command failed for pattern "!`ls /no/such/dir-here`"' in p.stderr and "Traceback" not in p.stderr


def test_a_file_mentioned_in_a_command_body_is_attached(proj: Path, scripted: Callable[..., str]) -> None:
    """Slash commands, "File references": ``@path`` in the body includes the file; a mention of nothing stays text."""
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "ok"}]))
    try:
        prompt, _ = a.expand_command("/review") or ("", ())
        assert prompt.startswith("Review @notes.txt and @missing.txt.")
        assert '<file path="notes.txt">\nNOTE-CONTENT-42' in prompt and "missing.txt\">" not in prompt
        a.ask(prompt)
        sent = [m["content"] for m in a.session.messages if m["role"] == "user"]
        assert "NOTE-CONTENT-42" in sent[0]
    finally:
        a.close()


def test_front_matter_agentloop_does_not_honour_is_named_in_a_warning(proj: Path, scripted: Callable[..., str]) -> None:
    """Sub-agents reference: an agent's ``hooks`` is documented; agentloop ignores it, and never in silence (a
    skill's hooks are honoured: tests/test_claude_front_matter_hooks.py); a skill's ``model`` is said to hold only
    for the turn ``/name`` starts."""
    sk = proj / ".claude" / "skills" / "lint"
    sk.mkdir(parents=True)
    (sk / "SKILL.md").write_text("---\nname: lint\ndescription: Lint\nmodel: haiku\nhooks:\n  PreToolUse:\n    - matcher: Bash\n---\nLint it.\n")
    ag = proj / ".claude" / "agents"
    ag.mkdir(parents=True)
    (ag / "guard.md").write_text("---\nname: guard\ndescription: Guards\nhooks:\n  Stop:\n    - hooks: []\n---\nGuard.\n")
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        text = "\n".join(a.load_warnings)
        assert "disallowed-tools" not in text  # honoured: see the next test
        assert "front matter 'model' of the skill 'lint' holds for the turn /lint starts" in text
        assert "front matter 'hooks' of the skill 'lint'" not in text
    finally:
        a.close()
    from agentloop.agent.subagents.agent_types import load_agent_types

    warnings: list[str] = []
    load_agent_types(str(proj), str(proj / "nohome"), None, warnings)
    assert any("front matter 'hooks' of agent 'guard' is not supported" in w for w in warnings)


def test_dollar_placeholders_in_a_real_command_file_reach_the_model(proj: Path, tmp_path: Path, scripted: Callable[..., str]) -> None:
    """End to end (``-p "/name args"``): the awk command of a one-argument call keeps its ``$1``."""
    (proj / ".claude" / "commands" / "sum.md").write_text("Sum the $0 column: awk '{sum+=$1} END {print sum}' data.txt\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path / "alhome")
    p = subprocess.run([*AGENTLOOP, "-p", "/sum aggressive", "--model", scripted([{"text": "ok"}]), "--output-format", "json"],
                       cwd=proj, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    from agentloop.transcript import read_records

    start = next(r.payload for r in read_records(json.loads(p.stdout)["transcript"]) if r.kind == "run_start")
    sent = start["messages"][-1]["content"]
    assert sent.startswith("Sum the aggressive column: awk '{sum+=$1} END {print sum}' data.txt")


def test_a_sub_agent_whose_model_cannot_be_opened_tells_the_model_why(proj: Path, scripted: Callable[..., str]) -> None:
    """Sub-agents reference, ``model`` field: a type's model that cannot be used is a reason the model can act on."""
    ag = proj / ".claude" / "agents"
    ag.mkdir(parents=True)
    (ag / "fast.md").write_text("---\nname: fast\ndescription: Quick looks\nmodel: nosuchvendor:gizmo-9\n---\nLook.\n")
    (proj / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Agent"]}}))
    call = {"text": "", "tool_calls": [{"name": "Agent", "arguments": {"description": "look", "prompt": "p", "subagent_type": "fast"}}],
            "usage": [100, 10]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([call, {"text": "done", "usage": [10, 1]}]), max_usd_micros=1_000_000)
    try:
        a.ask("delegate")
    finally:
        a.close()
    from agentloop.transcript import read_records

    (r,) = [x.payload for x in read_records(a.session.path) if x.kind == "tool_result"]
    assert not r["ok"] and "failed while running" not in r["error"]
    assert "the sub-agent type 'fast'" in r["error"] and "'nosuchvendor:gizmo-9', which cannot be used: " in r["error"]


def test_a_skills_bang_lines_run_when_the_user_or_the_model_loads_it(proj: Path, scripted: Callable[..., str]) -> None:
    """Skills reference, "Inject dynamic context": a skill's ``!`` lines run before its content is used, with
    its ``allowed-tools``; one that fails is the Skill tool's error (the model can act on it)."""
    sk = proj / ".claude" / "skills"
    (sk / "branch").mkdir(parents=True)
    (sk / "branch" / "SKILL.md").write_text("---\nname: branch\ndescription: Branch facts\nallowed-tools: Bash(echo:*)\n---\n"
                                            "Facts: !`echo SKILL-FACT`\n")
    (sk / "bad").mkdir()
    (sk / "bad" / "SKILL.md").write_text("---\nname: bad\ndescription: Fails\nallowed-tools: Bash(ls:*)\n---\nFacts: !`ls /no/such/place`\n")
    load = [{"text": "", "tool_calls": [{"name": "Skill", "arguments": {"skill": s}}], "usage": [10, 1]} for s in ("branch", "bad")]
    a = Agent(cwd=str(proj), trust=True, model=scripted([*load, {"text": "done", "usage": [10, 1]}]))
    try:
        prompt, _ = a.expand_command("/branch") or ("", ())
        assert "Facts: SKILL-FACT" in prompt and "!`" not in prompt
        a.ask("use the skills")
    finally:
        a.close()
    from agentloop.transcript import read_records

    ok, bad = [x.payload for x in read_records(a.session.path) if x.kind == "tool_result"]
    assert ok["ok"] and "Facts: SKILL-FACT" in json.dumps(ok["content"])
    assert not bad["ok"] and 'Bash command failed for pattern "!`ls /no/such/place`"' in bad["error"]


def test_a_commands_disallowed_tools_are_denied_for_its_turn_only(proj: Path, scripted: Callable[..., str]) -> None:
    """Frontmatter reference, ``disallowed-tools``: the tools are refused while the command is in force."""
    (proj / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write"]}}))
    write = {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "out.txt", "content": "x"}}], "usage": [10, 1]}
    a = Agent(cwd=str(proj), trust=True, model=scripted([write, {"text": "refused", "usage": [10, 1]}, write, {"text": "ok", "usage": [10, 1]}]))
    try:
        prompt, rules = a.expand_command("/review") or ("", ())
        a.ask(prompt, allowed_tools=rules)
        assert not (proj / "out.txt").exists()
        a.ask("now without the command")
        assert (proj / "out.txt").read_text() == "x"
    finally:
        a.close()
    from agentloop.transcript import read_records

    denied, allowed = [x.payload for x in read_records(a.session.path) if x.kind == "tool_result"]
    assert not denied["ok"] and "Write" in denied["error"] and allowed["ok"]


def test_a_skills_context_fork_and_agent_are_named_in_a_warning(proj: Path, tmp_path: Path) -> None:
    """Skills page, "Run skills in a subagent": ``context: fork`` runs the skill in a forked sub-agent and ``agent``
    names its type (https://code.claude.com/docs/en/skills#run-skills-in-a-subagent). agentloop runs the skill in the
    conversation and says so, naming both keys."""
    from agentloop.agent.commands import load_skills

    sk = proj / ".claude" / "skills" / "research"
    sk.mkdir(parents=True)
    (sk / "SKILL.md").write_text("---\nname: research\ndescription: Research\ncontext: fork\nagent: Explore\n---\nLook.\n")
    warnings: list[str] = []
    load_skills(str(proj), str(tmp_path / "alhome"), None, warnings)
    assert any("front matter 'context' of the skill 'research'" in w and "sub-agent" in w for w in warnings)
    assert any("front matter 'agent' of the skill 'research'" in w for w in warnings)
