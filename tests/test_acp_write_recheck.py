"""An editor write over ACP goes to the path that was checked, even when a folder on it turns into a link.

ACP's ``fs/write_text_file`` hands the editor a path by name (agentclientprotocol.com/protocol/v1/file-system,
"Writing files"); an editor opens that name and follows links. A background command racing the write can
rename a folder of the path and put a link to somewhere outside in its place after the tool checked the path
and before the editor is asked, so the path is looked at again as it is sent.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.cli.acp_fs import use_client_fs
from agentloop.testing import ScriptedModel, reply


class FollowingEditor:
    """An ACP client that writes where the name leads (links followed, as editors do). ``race`` runs when
    the agent reads the buffer: after the tool checked the path, before it sends the write."""

    def __init__(self, race: Any):
        self.race = race
        self.writes: list[str] = []

    def read_text_file(self, session_id: str, path: str) -> Any:
        self.race()
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        return SimpleNamespace(content=Path(path).read_text())

    def write_text_file(self, session_id: str, path: str, content: str) -> None:
        self.writes.append(path)
        with open(path, "w") as f:
            f.write(content)


def write_through_editor(tmp_path: Path, swap: bool) -> tuple[str, FollowingEditor, Path, Path]:
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "sub").mkdir(parents=True)
    outside.mkdir()

    def race() -> None:
        if swap:
            os.rename(proj / "sub", proj / "sub-old")
            os.symlink(outside, proj / "sub")

    editor = FollowingEditor(race)
    target = str(proj / "sub" / "note.txt")
    model = ScriptedModel([reply("", [("Write", {"file_path": target, "content": "hello\n"})]), reply("done")])
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), model=model, permission_mode="bypassPermissions",
              sandbox="danger-full-access")
    try:
        use_client_fs(a, lambda x: x, editor, True, True)
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    return out, editor, proj, outside


def test_a_folder_that_became_a_link_before_the_editor_write_is_refused(tmp_path: Path) -> None:
    out, editor, _proj, outside = write_through_editor(tmp_path, swap=True)
    assert not (outside / "note.txt").exists(), "the editor wrote outside the workspace through the link"
    assert editor.writes == []
    assert "symbolic link" in out


def test_an_editor_write_with_no_race_goes_through(tmp_path: Path) -> None:
    out, editor, proj, _outside = write_through_editor(tmp_path, swap=False)
    assert (proj / "sub" / "note.txt").read_text() == "hello\n" and len(editor.writes) == 1, out
