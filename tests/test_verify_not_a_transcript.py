"""`agentloop verify` on a file that is not a transcript reports what it finds, exit 1.

The format's spec (docs/transcript-format.md section 4, "Exit codes") gives exit 1
for problems found and 2 only for a file that cannot be read or a usage error;
the Node verifier and the conformance vectors (``not-records-*``) agree. So a
text file or JSON that holds no record is reported problem by problem
(``bad_json``, ``missing_fields``), with a note for a person that it may not be
a transcript at all; the JSON report is the spec's, unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentloop import Budget, TranscriptWriter, run
from agentloop.testing import ScriptedModel, reply

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _verify(*files: Path, json_out: bool = False) -> subprocess.CompletedProcess[str]:
    args = [*AGENTLOOP, "verify", *map(str, files)] + (["--json"] if json_out else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_a_text_file_is_reported_line_by_line_with_exit_1_and_a_note(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello\nworld\n" * 50)
    p = _verify(f)
    assert p.returncode == 1, p.stdout
    assert p.stdout.startswith(f"{f}: FAILED, 100 problem(s) in 100 records\n")
    assert "may not be an agentloop transcript" in p.stdout and "record 0 (line 1): bad_json" in p.stdout


def test_json_that_is_not_a_record_gets_the_specs_report_with_exit_1(tmp_path: Path) -> None:
    f = tmp_path / "data.jsonl"
    f.write_text('{"a": 1}\n{"b": 2}\n')
    p = _verify(f, json_out=True)
    assert p.returncode == 1
    report = json.loads(p.stdout)
    assert report["ok"] is False and report["records"] == 2 and "error" not in report
    assert [(pr["index"], pr["kind"]) for pr in report["problems"]] == [(0, "missing_fields"), (1, "missing_fields")]


def test_a_transcript_with_a_damaged_first_line_is_still_reported_as_tampered(tmp_path: Path) -> None:
    f = tmp_path / "run.jsonl"
    with TranscriptWriter(str(f)) as w:
        run(ScriptedModel([reply("hi")]), [], "hello", Budget(max_steps=2, max_usd_micros=10_000), transcript=w)
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"garbage\n" + b"".join(lines[1:]))
    p = _verify(f)
    assert p.returncode == 1 and "FAILED" in p.stdout and "not an agentloop transcript" not in p.stdout
