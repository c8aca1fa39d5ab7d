"""The command names what was wrong and says what it did not do: an unknown flag by its name,
a subcommand's own usage, -c with nothing to continue, and calls refused in -p text mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    userhome = cwd.parent / f"{cwd.name}-userhome"  # beside the workspace: one that holds the home asks first
    userhome.mkdir(exist_ok=True)
    env.update(AGENTLOOP_HOME=str(cwd / ".home"), HOME=str(userhome), NO_COLOR="1")
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_mistyped_flag_is_named_with_the_flag_it_resembles(tmp_path: Path) -> None:
    p = _run(["--modle", "x", "-p", "hi"], tmp_path)
    assert p.returncode == 2
    assert "unknown option --modle (did you mean --model?)" in p.stderr
    assert "invalid choice" not in p.stderr
    p = _run(["--max-usd=1", "--frobnicate=3", "-p", "hi"], tmp_path)
    assert p.returncode == 2 and "unknown option --frobnicate" in p.stderr


def test_a_subcommands_usage_and_errors_are_its_own(tmp_path: Path) -> None:
    p = _run(["verify"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.startswith("usage: agentloop verify ")
    assert "agentloop verify: error: the following arguments are required: FILE" in p.stderr
    assert "COMMAND" not in p.stderr and "PROMPT" not in p.stderr


def test_continue_with_no_earlier_session_says_it_starts_a_new_one(tmp_path: Path) -> None:
    script = tmp_path / "r.json"
    script.write_text(json.dumps([{"text": "hello"}]))
    p = _run(["-p", "-c", "hi", "--model", f"scripted:{script}"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"
    assert "no earlier session in this directory to continue; starting a new one" in p.stderr


def test_a_refused_edit_is_said_on_stderr_in_print_mode(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("old\n")
    script = tmp_path / "r.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {
            "file_path": str(target), "old_string": "old", "new_string": "new"}}]},
        {"text": "Done: notes.txt says new."},
    ]))
    p = _run(["-p", "change it", "--model", f"scripted:{script}"], tmp_path)
    assert p.stdout == "Done: notes.txt says new.\n"
    assert target.read_text() == "old\n"
    refused = [ln for ln in p.stderr.splitlines() if ln.startswith("agentloop: refused: ")]
    assert refused == ["agentloop: refused: Edit notes.txt (permission denied; -p cannot ask: "
                       "allow it with --allowedTools or a rule)"], p.stderr


def test_rewind_needs_no_model_and_never_talks_about_prices(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("one\n")
    script = tmp_path / "r.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": str(target)}}]},
        {"text": "", "tool_calls": [{"name": "Edit", "arguments": {
            "file_path": str(target), "old_string": "one", "new_string": "two"}}]},
        {"text": "done"},
    ]))
    p = _run(["-p", "change it", "--model", f"scripted:{script}", "--permission-mode", "acceptEdits"], tmp_path)
    assert p.returncode == 0, p.stderr
    sessions = sorted((tmp_path / ".home" / "projects").glob("*/sessions/*.jsonl"))
    sid = sessions[-1].stem
    listing = _run(["rewind", sid], tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "price" not in listing.stderr and "price" not in listing.stdout
    back = _run(["rewind", sid, "--to", "1"], tmp_path)
    assert "price" not in back.stderr and target.read_text() == "one\n", back.stderr
