"""Nothing a user gives is accepted in silence, and doubt is settled on the strict side.

Claude Code's settings documentation ("Settings files", "Permission settings")
describes ``permissions`` with ``allow``, ``ask`` and ``deny`` lists, deny
rules taking precedence; a settings file is JSON, which leaves a key given
twice undefined (RFC 8259, section 4). agentloop names the file and the key,
and never lets the repetition drop a deny rule. ``maxUsd`` is agentloop's own
key: a value that is not an amount of dollars stops the run rather than fall
back to the default cap. ``verify --repair`` cuts only a torn tail off a
transcript: a file that is not one is refused, and no file is ever emptied.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent, AgentError
from agentloop.config.settings import ConfigError, json_object

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTLOOP, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)


RM = [{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "rm victim.txt"}}]}, {"text": "done"}]


def test_a_duplicated_permissions_key_keeps_every_deny_rule_and_says_so(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / "victim.txt").write_text("keep\n")
    (proj / ".agentloop").mkdir()
    settings = proj / ".agentloop" / "settings.json"
    settings.write_text(
        '{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]},\n "permissions": {"allow": ["Bash"]}}\n'
    )
    p = _run(["--trust", "-p", "clean up", "--model", scripted(RM)], proj)
    assert (proj / "victim.txt").exists(), p.stderr
    warned = [ln for ln in p.stderr.splitlines() if "given twice" in ln]
    assert len(warned) == 1 and str(settings) in warned[0] and '"permissions"' in warned[0]


def test_a_duplicated_deny_list_inside_permissions_keeps_both(proj: Path, scripted: Callable[..., str]) -> None:
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text('{"permissions": {"deny": ["Bash(rm:*)"], "deny": ["Read(./secret)"]}}')
    a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]), trust=True)
    try:
        perms = [s.data["permissions"] for s in a.sources if "permissions" in s.data]
        assert perms[-1]["deny"] == ["Bash(rm:*)", "Read(./secret)"]
        assert any('"deny" is given twice' in w for w in a.config_warnings)
    finally:
        a.close()


def test_a_key_given_twice_anywhere_is_one_warning_naming_file_and_key() -> None:
    warnings: list[str] = []
    data = json_object("s.json", '{"model": "a", "env": {"X": "1", "X": "2"}, "model": "b"}', warnings)
    assert data == {"model": "b", "env": {"X": "2"}}
    assert sorted(warnings) == sorted([
        's.json: the key "X" is given twice in one object; the later value is used',
        's.json: the key "model" is given twice in one object; the later value is used',
    ])


BAD_MAX_USD = ["NaN", "Infinity", "-Infinity", '"-5"', "-5", "true", "[1]", "{}", "null", '"five"', "1e400", "0.0000001"]


@pytest.mark.parametrize("value", BAD_MAX_USD)
def test_an_invalid_max_usd_stops_the_run_naming_file_and_key_instead_of_the_default_cap(
    proj: Path, scripted: Callable[..., str], value: str
) -> None:
    (proj / ".agentloop").mkdir()
    settings = proj / ".agentloop" / "settings.json"
    settings.write_text('{"maxUsd": ' + value + '}')
    with pytest.raises(AgentError) as info:
        Agent(cwd=str(proj), model=scripted([{"text": "x"}]))
    assert str(settings) in str(info.value) and "maxUsd" in str(info.value)
    assert not list(proj.glob("**/*.jsonl"))


def test_an_invalid_max_usd_on_the_command_line_settings_is_one_line_exit_2(proj: Path, scripted: Callable[..., str]) -> None:
    p = _run(["--settings", '{"maxUsd": NaN}', "-p", "hi", "--model", scripted([{"text": "x"}])], proj)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "maxUsd" in p.stderr and "--settings" in p.stderr


@pytest.mark.parametrize("value", ['"unlimited"', "0.5", '"2"', "3"])
def test_a_valid_max_usd_is_taken(proj: Path, scripted: Callable[..., str], value: str) -> None:
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text('{"maxUsd": ' + value + '}')
    a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]), trust=True)
    a.close()


def test_settings_given_on_the_command_line_warn_of_prices_and_of_keys_given_twice(proj: Path, scripted: Callable[..., str]) -> None:
    given = '{"prices": {"m": {"input": 1, "output": 2}}, "maxSteps": 3, "maxSteps": 4}'
    a = Agent(cwd=str(proj), model=scripted([{"text": "x"}]), cli_settings=[given])
    try:
        prices = [w for w in a.config_warnings if "prices" in w]
        twice = [w for w in a.config_warnings if "given twice" in w]
        assert len(prices) == 1 and "--settings" in prices[0] and "ignored" in prices[0]
        assert len(twice) == 1 and '"maxSteps"' in twice[0]
        assert a.max_steps == 4
    finally:
        a.close()


def test_the_settings_loader_refuses_an_invalid_max_usd_itself() -> None:
    from agentloop.config.settings import check_max_usd

    for value in ("NaN", "true", '"-5"', "[1]"):
        with pytest.raises(ConfigError, match=r"^f\.json: maxUsd: "):
            check_max_usd("f.json", json_object("f.json", '{"maxUsd": ' + value + '}'))


NOT_TRANSCRIPTS = {
    "random bytes": os.urandom(4096).replace(b"\n", b" ") + b"\n" + os.urandom(100),
    "zeros": b"\0" * 100_000,
    "a JSON object that is not a record": b'{"a": 1}\n{"b": 2}\n',
    "a torn first record": b'{"hash":"00',
}


@pytest.mark.parametrize("what", list(NOT_TRANSCRIPTS))
def test_repair_refuses_a_file_whose_first_line_is_not_a_record_and_never_empties_it(tmp_path: Path, what: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_bytes(NOT_TRANSCRIPTS[what])
    p = _run(["verify", "--repair", str(f)], tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("\n") == 1 and "first line is not a record" in p.stderr and "nothing was changed" in p.stderr
    assert f.read_bytes() == NOT_TRANSCRIPTS[what]
    assert not list(tmp_path.glob("t.jsonl.torn-*"))


def test_repair_of_a_sparse_tail_keeps_the_side_file_sparse(tmp_path: Path) -> None:
    from agentloop.audit.repair import repair_file
    from agentloop.transcript import TranscriptWriter, verify_file

    f = tmp_path / "t.jsonl"
    with TranscriptWriter(f) as w:
        for i in range(3):
            w.append("note", {"i": i})
    good = f.read_bytes()
    with open(f, "r+b") as fh:
        fh.truncate(len(good) + (256 << 20))
    res = repair_file(str(f))
    assert f.read_bytes() == good and verify_file(f).ok
    side = Path(res.side_file or "")
    assert side.stat().st_size == 256 << 20 and res.removed_bytes == 256 << 20
    assert side.stat().st_blocks * 512 < 16 << 20  # holes stayed holes
    with open(side, "rb") as fh:
        assert fh.read(1 << 20) == b"\0" * (1 << 20)
