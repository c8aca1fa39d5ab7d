"""With the home as the workspace, the file tools see what sandboxed commands see: its project content, not
its dot folders and files.

Read, Grep, Glob, Write and Edit run on the host, not in the sandbox, so the sandbox's allow-list of the home
(``sandbox.home.allow_list_mounts``) did not hold for them: Grep over the home printed every credential store
and history, Read returned ``~/.aws/credentials``. The workspace now treats a home's dot entries as outside a
root that shows that home whole; an ``--add-dir`` naming one is a root of its own and is readable.

Claude Code's settings page (https://code.claude.com/docs/en/settings, "Permission settings",
``additionalDirectories``) is how the user adds a directory the file tools may reach; Claude Code warns when
started in the home folder for the same reason.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.testing import ScriptedModel, reply
from test_home_allow_list import SECRETS, home  # noqa: F401  (the fixture: a home with credential stores)


def tool_results(where: Path, calls: list[tuple[str, dict[str, object]]], add_dirs: tuple[str, ...] = ()) -> list[str]:
    model = ScriptedModel([reply("", [c]) for c in calls] + [reply("done")])
    a = Agent(cwd=str(where), home=os.environ["AGENTLOOP_HOME"], model=model, permission_mode="bypassPermissions",
              add_dirs=list(add_dirs))
    try:
        res = a.ask("go")
    finally:
        a.close()
    return [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]


def test_read_grep_and_glob_do_not_reach_the_credential_stores_of_a_home_workspace(home: Path) -> None:  # noqa: F811
    (home / ".netrc").write_text("netrc-secret\n")
    calls: list[tuple[str, dict[str, object]]] = [
        ("Grep", {"pattern": "secret", "path": str(home), "output_mode": "content"}),
        ("Grep", {"pattern": "secret", "path": str(home / ".config"), "output_mode": "content"}),
        ("Glob", {"pattern": "**/*", "path": str(home)}),
        ("Read", {"file_path": str(home / ".docker" / "config.json")}),
        ("Read", {"file_path": "~/.netrc"}),
        ("Read", {"file_path": str(home / "proj" / "main.py")}),
        ("Grep", {"pattern": "notes", "path": str(home), "output_mode": "content"}),
    ]
    outs = tool_results(home, calls)
    text = "\n".join(outs)
    leaked = [s for s in [*SECRETS.values(), "netrc-secret"] if s in text]
    assert not leaked, f"readable by the file tools: {leaked}"
    assert ".docker" not in outs[2] and ".netrc" not in outs[2] and "main.py" in outs[2]
    assert "not part of a home workspace" in outs[3] and "--add-dir" in outs[3]
    assert "print('hi')" in outs[5], "project content of the home stays readable"
    assert "notes" in outs[6]


def test_write_and_edit_do_not_reach_the_start_up_files_of_a_home_workspace(home: Path) -> None:  # noqa: F811
    before = (home / ".vimrc").read_text()
    outs = tool_results(home, [
        ("Write", {"file_path": str(home / ".vimrc"), "content": "!touch /tmp/x\n"}),
        ("Write", {"file_path": str(home / ".bashrc.d" / "late.sh"), "content": "touch /tmp/x\n"}),
        ("Edit", {"file_path": str(home / ".vimrc"), "old_string": "set", "new_string": "!touch /tmp/x|set"}),
        ("Write", {"file_path": str(home / "proj" / "new.txt"), "content": "fine\n"}),
    ])
    assert (home / ".vimrc").read_text() == before and not (home / ".bashrc.d").exists()
    assert all("not part of a home workspace" in o for o in outs[:3]), outs
    assert (home / "proj" / "new.txt").read_text() == "fine\n"


def test_a_dot_folder_the_user_adds_is_readable_again(home: Path) -> None:  # noqa: F811
    """Negative control: ``--add-dir ~/.config/github-copilot`` is the user's word for that folder."""
    outs = tool_results(home, [("Read", {"file_path": str(home / ".config/github-copilot/hosts.json")}),
                               ("Read", {"file_path": str(home / ".gemini/oauth_creds.json")})],
                        add_dirs=(str(home / ".config/github-copilot"),))
    assert "copilot-secret" in outs[0] and "gemini-secret" not in outs[1]
