"""What Bash tells the model carries no terminal control sequences.

A project that forces colour (pytest's ``--color=yes`` in ``addopts``) makes
every run of its tests cost the model the escape codes as well as the text.
The Bash tools (foreground and ``BashOutput``) send the text without them:
CSI (colours, cursor, erase), OSC (titles, hyperlinks, the clipboard), the
other string sequences, two-byte escapes, and a sequence cut off at the end.
The programs here are the real ones, run by the real bash in the sandbox.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.tools.terminal_codes import strip_terminal_codes
from agentloop.testing import ScriptedModel, reply

ESC = "\x1b"


@pytest.mark.parametrize(("raw", "plain"), [
    (f"{ESC}[32m551 passed{ESC}[0m in 1.2s", "551 passed in 1.2s"),
    (f"{ESC}[1;38;5;196mred{ESC}[m", "red"),
    (f"{ESC}]0;a title{ESC}\\text", "text"),
    (f"{ESC}]52;c;aGk={ESC}\\", ""),
    (f"{ESC}]8;;https://example.com{ESC}\\link{ESC}]8;;{ESC}\\", "link"),
    (f"{ESC}]0;bell-terminated\x07after", "after"),
    (f"{ESC}[2J{ESC}[Hcleared", "cleared"),
    (f"{ESC}(Bplain{ESC}7{ESC}8", "plain"),
    (f"{ESC}Pq#0;2;0;0;0{ESC}\\sixel gone", "sixel gone"),
    ("\x9b31mC1 form\x9b0m", "C1 form"),
    (f"done{ESC}[3", "done"),
    (f"done{ESC}", "done"),
    ("tabs\tand\r\nnewlines stay\n", "tabs\tand\r\nnewlines stay\n"),
    ("no escapes at all", "no escapes at all"),
])
def test_control_sequences_go_and_the_text_stays(raw: str, plain: str) -> None:
    assert strip_terminal_codes(raw) == plain


def test_stripping_is_linear_in_the_output(tmp_path: Path) -> None:
    """Unterminated sequences one after another (the worst shape for the cut-off rule) cost one pass."""
    start = time.process_time()
    strip_terminal_codes((f"{ESC}]no end " * 200_000) + "tail")
    strip_terminal_codes((f"{ESC}[" + "1;" * 50 + "x") * 50_000)
    assert time.process_time() - start < 5


@pytest.fixture
def base() -> Iterator[Path]:
    d = Path(os.path.realpath(__import__("tempfile").mkdtemp(prefix="al-codes-")))
    (d / "proj").mkdir()
    (d / "alhome").mkdir()
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _tool_outputs(base: Path, steps: list[object]) -> list[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home")}
    model = ScriptedModel([*steps, reply("done")])
    agent = Agent(cwd=str(base / "proj"), home=str(base / "alhome"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = agent.ask("go")
    finally:
        agent.close()
    return [str(m.get("content")) for m in res.messages if m.get("role") == "tool"]


def test_real_programs_forced_to_colour_reach_the_model_as_plain_text(base: Path) -> None:
    (base / "proj" / "notes.txt").write_text("alpha\nbeta match\n")
    (base / "proj" / "sub").mkdir()
    line = ("ls --color=always; grep --color=always match notes.txt; printf '\\033]0;title\\007\\033[2Jdone\\n'")
    (out,) = _tool_outputs(base, [reply("", [("Bash", {"command": line})])])
    assert ESC not in out and "\x07" not in out
    assert "sub" in out and "notes.txt" in out and "beta match" in out and "done" in out


def test_a_background_commands_output_reaches_the_model_as_plain_text(base: Path) -> None:
    def later(_req: object) -> object:  # once the command has printed (it starts late on a loaded machine)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                b"passed" in p.read_bytes() for p in (base / "alhome").rglob("background-bash_1.log")):
            time.sleep(0.05)
        return reply("", [("BashOutput", {"bash_id": "bash_1"})])

    outs = _tool_outputs(base, [
        reply("", [("Bash", {"command": "printf '\\033[32m3 passed\\033[0m\\n'", "run_in_background": True})]),
        later,
    ])
    assert ESC not in outs[1] and "3 passed" in outs[1]
