"""`agentloop verify` on a file that is not a transcript says so in one line, exit 2.

A damaged transcript is still reported record by record (exit 1): only a file
none of whose first lines is a record is called something else.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentloop import Budget, TranscriptWriter, run
from agentloop.testing import ScriptedModel, reply

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _verify(*files: Path, json_out: bool = False) -> subprocess.CompletedProcess[str]:
    args = [*AGENTLOOP, "verify", *map(str, files)] + (["--json"] if json_out else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_a_text_file_is_named_as_not_a_transcript_in_one_line_with_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello\nworld\n" * 50)
    p = _verify(f)
    assert p.returncode == 2
    assert p.stdout.strip() == f"{f}: not an agentloop transcript: line 1 is not a record"


def test_json_that_is_not_a_record_is_named_too(tmp_path: Path) -> None:
    f = tmp_path / "data.jsonl"
    f.write_text('{"a": 1}\n{"b": 2}\n')
    p = _verify(f, json_out=True)
    assert p.returncode == 2 and '"error": "not an agentloop transcript: line 1 is JSON but not a record"' in p.stdout


def test_a_transcript_with_a_damaged_first_line_is_still_reported_as_tampered(tmp_path: Path) -> None:
    f = tmp_path / "run.jsonl"
    with TranscriptWriter(str(f)) as w:
        run(ScriptedModel([reply("hi")]), [], "hello", Budget(max_steps=2, max_usd_micros=10_000), transcript=w)
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"garbage\n" + b"".join(lines[1:]))
    p = _verify(f)
    assert p.returncode == 1 and "FAILED" in p.stdout and "not an agentloop transcript" not in p.stdout
