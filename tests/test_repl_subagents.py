"""Sub-agents in the REPL, driven in a pseudo-terminal: each child's tool calls appear indented under its
``Agent`` call, then its answer as text (not JSON) with its facts line, and ``/agents`` lists the types.

Claude Code shows a sub-agent's tool uses nested under its Agent call in the transcript view, and its
``/agents`` command lists the available agent types with their tools, model and where they are defined.
"""

from __future__ import annotations

import os
import sys

from agentloop.testing.fakeprovider import FakeProvider

sys.path.insert(0, os.path.dirname(__file__))
from _pty import Term, env_for  # noqa: E402

PROMPT = r"(?m)^>\s*$"


def test_a_childs_tool_calls_are_indented_under_its_agent_call_then_its_answer_and_agents_lists_the_types(tmp_path, proj):  # type: ignore[no-untyped-def]
    (proj / "hello.txt").write_text("greetings from hello.txt\n")
    agents = proj / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews a change\ntools: Read, Grep\n---\nReview it.\n")
    script = {"replies": [
        {"text": "Asking a helper.", "tool_calls": [{"name": "Agent", "arguments": {
            "description": "read the greeting", "prompt": "what does hello.txt say?", "subagent_type": "general-purpose"}}]},
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}]},
        {"text": "It says greetings.\nSecond line of the report."},
        {"text": "The helper read it."},
    ]}
    with FakeProvider(script) as fp:
        t = Term(["--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1", "--permission-mode", "bypassPermissions"],
                 cwd=str(proj), env=env_for(str(tmp_path / "home")))
        try:
            t.wait_for(PROMPT)
            t.type("ask a helper")
            t.wait_for(r"⏺ Agent\(read the greeting · general-purpose\)")
            t.wait_for(r"(?m)^    ⏺ Read\(hello\.txt\)")  # the child's call, indented under the parent's
            t.wait_for(r"(?m)^      ⎿ Read 1 line")
            t.wait_for(r"⎿ It says greetings\.")
            t.wait_for(r"(?m)^    Second line of the report\.")
            t.wait_for(r"\[agent agent-[0-9a-f]+ \(general-purpose\) · 2 turns")
            t.wait_for(r"The helper read it\.")
            t.wait_for(PROMPT)
            assert '"answer"' not in t.text()
            m = t.mark()
            t.type("/agents")
            t.wait_for(r"Explore  \(built-in\)", after=m)
            t.wait_for(r"reviewer  \(", after=m)
            t.wait_for(r"tools: Read, Grep", after=m)
            t.wait_for(r"Reviews a change", after=m)
        finally:
            t.kill()
