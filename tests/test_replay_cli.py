"""``agentloop replay``: the summary, the exit codes, and the user's mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentloop.cli.main import main
from agentloop.demo import act_core


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    act_core(str(d))
    return d


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NO_COLOR", "1")


def test_an_equal_replay_exits_0_with_a_summary(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(demo_dir / "demo-recover.jsonl")])
    out = capsys.readouterr().out
    assert code == 0
    assert "(full): EQUAL (byte-identical)" in out
    assert "16 records recorded, 16 replayed; 1 run: no_tool_calls after 5 steps" in out
    assert "warnings: none" in out


def test_out_writes_the_replayed_transcript(demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new.jsonl"
    for mode in ("full", "live-tools"):
        if out.exists():
            out.unlink()
        assert main(["replay", str(demo_dir / "demo-answer.jsonl"), "--mode", mode, "--out", str(out)]) == 0
        assert out.read_bytes() == (demo_dir / "demo-answer.jsonl").read_bytes()
    assert f"replay written to {out}" in capsys.readouterr().out


def test_dry_run_exits_1_and_counts_the_steps_that_used_tool_output(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(demo_dir / "demo-recover.jsonl"), "--mode", "dry-run"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT" in out and "decisions: the same model turns and stops" in out
    assert "tools skipped: 4 call(s); 4 step(s) depended on tool output" in out


def test_a_changed_tool_given_with_tools_exits_1_naming_the_first_difference_and_the_tool(
    demo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mytools.py").write_text(textwrap.dedent('''
        from agentloop import Registry, tool
        from agentloop.demo import demo_tools

        def changed():
            @tool(read_only=True)
            def add(a: int, b: int) -> dict:
                """Add, off by one."""
                return {"sum": a + b + 1}
            return Registry([add if t.name == "add" else t for t in demo_tools()])
    '''))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "mytools", raising=False)
    code = main(["replay", str(demo_dir / "demo-answer.jsonl"), "--mode", "live-tools", "--tools", "mytools:changed"])
    out = capsys.readouterr().out
    assert code == 1
    assert "first difference: record 3 (tool_result, step 1): $.content.sum: 42 -> 43" in out
    assert "warning: tool 'add' changed since the run was recorded: fingerprint sha256:" in out


def test_json_output_is_one_object(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(demo_dir / "demo-answer.jsonl"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["equal"] is True and obj["records"] == obj["original_records"] == 7 and obj["warnings"] == []


def _tampered(demo_dir: Path, tmp_path: Path) -> Path:
    data = (demo_dir / "demo-answer.jsonl").read_bytes().replace(b'"sum":42', b'"sum":43')
    p = tmp_path / "tampered.jsonl"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("mode", ["full", "live-tools", "dry-run"])
def test_a_tampered_file_exits_2_with_one_line(demo_dir: Path, tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(_tampered(demo_dir, tmp_path)), "--mode", mode]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "fails verification at record 3: hash_mismatch" in err[0] and "not replayed" in err[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "{missing}"], "cannot read: No such file or directory"),
        (["replay", "{answer}", "--tools", "nocolon"], "expected MODULE:FUNCTION"),
        (["replay", "{answer}", "--tools", "no_such_module_xyz:f"], "cannot import 'no_such_module_xyz'"),
        (["replay", "{answer}", "--tools", "agentloop.demo:nope"], "has no function 'nope'"),
        (["replay", "{answer}", "--tools", "agentloop.demo:act_core"], "act_core() raised TypeError"),
        (["replay", "{answer}", "--tools", "agentloop.demo:_kinds"], "_kinds() raised TypeError"),
        (["replay", "{answer}", "--salt-env", "AGENTLOOP_NO_SUCH_SALT"], "that environment variable is not set"),
        (["replay", "{answer}", "--out", "{answer}"], "exists and is not empty"),
    ],
)
def test_user_mistakes_exit_2_with_one_line_naming_the_problem(
    demo_dir: Path, tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    subst = {"missing": str(tmp_path / "missing.jsonl"), "answer": str(demo_dir / "demo-answer.jsonl")}
    assert main([a.format(**subst) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agentloop: error:") and message in err[0], err


def test_tools_returning_something_else_than_a_registry_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "badtools.py").write_text("def make():\n    return [1, 2]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "badtools", raising=False)
    assert main(["replay", str(demo_dir / "demo-answer.jsonl"), "--tools", "badtools:make"]) == 2
    assert "returned a list, not an agentloop Registry" in capsys.readouterr().err


def test_the_installed_command_refuses_a_tampered_file_without_a_traceback(demo_dir: Path, tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "replay", str(_tampered(demo_dir, tmp_path))],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and "fails verification" in p.stderr
