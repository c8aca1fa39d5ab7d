"""The replay test kit: a committed transcript as a regression test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentloop import Budget, MemoryTranscript, run
from agentloop import loop as loop_mod
from agentloop.demo import demo_tools
from agentloop.testing import ScriptedModel, assert_replays, reply

pytest_plugins = ["pytester"]


def _record(path: Path) -> None:
    t = MemoryTranscript()
    run(ScriptedModel([reply("", [("add", {"a": 40, "b": 2})], step=1), reply("42")]), demo_tools(), "40+2?",
        Budget(max_steps=5), transcript=t)
    path.write_bytes(t.getvalue())


def test_assert_replays_passes_for_an_unchanged_run(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    _record(p)
    r = assert_replays(p)
    assert r.equal


def test_assert_replays_fails_with_a_readable_diff_when_the_loop_decides_differently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "run.jsonl"
    _record(p)
    real = loop_mod.cost_micros
    monkeypatch.setattr(loop_mod, "cost_micros", lambda u, pr: real(u, pr) * 2)
    with pytest.raises(AssertionError) as e:
        assert_replays(p)
    msg = str(e.value)
    assert "DIFFERENT" in msg and "first difference: record 2 (budget, step 1)" in msg
    assert "--- recorded" in msg and "+++ replayed" in msg
    assert '-    "cost_micros":' in msg and '+    "cost_micros":' in msg


def test_assert_replays_fails_on_a_changed_tool_unless_warnings_are_allowed(tmp_path: Path) -> None:
    from agentloop import Registry, tool

    p = tmp_path / "run.jsonl"
    _record(p)

    @tool(read_only=True)
    def add(a: int, b: int) -> dict[str, int]:
        """Changed."""
        return {"sum": a + b}

    changed = Registry([add if t.name == "add" else t for t in demo_tools()])
    with pytest.raises(AssertionError, match="tool 'add' changed since the run was recorded"):
        assert_replays(p, tools=changed)
    assert assert_replays(p, tools=changed, allow_warnings=True).equal


def _suite(pytester: pytest.Pytester, transcript: Path) -> None:
    pytester.makepyfile(test_agent=textwrap.dedent(f'''
        from pathlib import Path
        from agentloop import Budget, TranscriptWriter, run
        from agentloop.demo import demo_tools
        from agentloop.testing import ScriptedModel, reply

        PATH = Path({str(transcript)!r})

        def record(path):
            model = ScriptedModel([reply("", [("add", {{"a": 1, "b": 2}})], step=1), reply("3")])
            with TranscriptWriter(path) as w:
                run(model, demo_tools(), "1+2?", Budget(max_steps=5), transcript=w)

        def test_decisions_unchanged(agentloop_replay):
            r = agentloop_replay(PATH, tools=demo_tools(), record=record)
            assert r.equal
    '''))


def test_the_installed_fixture_refuses_to_record_silently_and_fails_with_the_diff(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # a separate pytest process, as a project's suite would run: the plugin comes from the entry point
    path = tmp_path / "t" / "agent.jsonl"
    _suite(pytester, path)
    missing = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=300)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no transcript to replay; run pytest --agentloop-record to write it*"])
    pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--agentloop-record", timeout=300).assert_outcomes(passed=1)
    assert path.exists()
    # the loop now decides differently (a changed price): the suite fails with the diff
    lines = path.read_bytes().splitlines(keepends=True)
    pytester.makeconftest(textwrap.dedent("""
        import agentloop.loop as loop_mod
        loop_mod.cost_micros = lambda usage, price: 7
    """))
    changed = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=300)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*DIFFERENT*", "*first difference: record 2 (budget, step 1)*", "*+++ replayed*"])
    assert path.read_bytes().splitlines(keepends=True) == lines  # a failing check never rewrites the record
