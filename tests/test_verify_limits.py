"""`agentloop verify` and `agentloop replay` on hostile files: bounded time and memory, one line.

Issue 16 point 7: verify of a link to /dev/zero grew until memory ran out,
and of a FIFO it hung. A file that is not regular is refused before it is
read; no line is read past ``MAX_LINE_BYTES``; replay, which holds the record
in memory, refuses a file past ``REPLAY_MAX_BYTES`` without reading it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.transcript import MAX_LINE_BYTES, TranscriptWriter

# The child's own peak: VmHWM belongs to the memory map exec made, while ru_maxrss keeps the
# high-water mark of the process before exec (the test runner's, which can be large by then).
_CLI = (
    "import json, resource, sys\n"
    "from agentloop.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "try:\n"
    "    hwm = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
    "except (OSError, IndexError, ValueError):\n"
    "    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(json.dumps(hwm))\n"
    "sys.exit(code)\n"
)

_MIB = 1 << 20


def _cli(tmp_path: Path, *args: str, timeout: float = 20.0) -> tuple[int, str, str, int]:
    """(exit code, stdout without the last line, stderr, peak memory in KiB) of the CLI in a child."""
    env = dict(os.environ, AGENTLOOP_HOME=str(tmp_path / "home"), NO_COLOR="1")
    try:
        p = subprocess.run([sys.executable, "-c", _CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"agentloop {' '.join(args)} did not finish within {timeout:g} s")
    out = p.stdout.splitlines()
    rss = int(out[-1]) if out and out[-1].isdigit() else -1
    return p.returncode, "\n".join(out[:-1]), p.stderr, rss


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    f = tmp_path / "run.jsonl"
    os.mkfifo(f)
    return f


@pytest.fixture
def zero_link(tmp_path: Path) -> Path:
    f = tmp_path / "zero.jsonl"
    os.symlink("/dev/zero", f)
    return f


@pytest.mark.parametrize("command", [["verify"], ["verify", "--json"], ["replay"], ["verify", "--repair"]])
@pytest.mark.parametrize("kind", ["fifo", "zero_link"])
def test_a_fifo_or_a_link_to_dev_zero_is_refused_at_once_with_one_line(
    tmp_path: Path, command: list[str], kind: str, request: pytest.FixtureRequest
) -> None:
    path: Path = request.getfixturevalue(kind)
    code, out, err, rss = _cli(tmp_path, *command, str(path))
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert code == 2, (out, err)
    if "--json" in command:
        assert json.loads(out)["problems"][0]["message"] == f"{path}: not a regular file ({what})"
        return
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentloop: error:"), err
    assert str(path) in lines[0] and f"not a regular file ({what})" in lines[0]
    assert "Traceback" not in err


def test_verify_against_an_anchor_refuses_a_fifo_too(tmp_path: Path, fifo: Path) -> None:
    good = tmp_path / "good.jsonl"
    with TranscriptWriter(good) as w:
        w.append("a", {})
    assert _cli(tmp_path, "anchor", str(good))[0] == 0
    code, _, err, _ = _cli(tmp_path, "verify", str(fifo), "--anchor", f"{good}.anchor.json")
    assert code == 2 and err.strip() == f"agentloop: error: cannot read {fifo}: not a regular file (a FIFO)"


def _record_then_an_enormous_line(path: Path, size: int) -> None:
    with TranscriptWriter(path) as w:
        w.append("a", {"n": 1})
    with open(path, "ab") as f:
        f.write(b'{"x":"')
        f.truncate(size)  # a hole: hundreds of MB of NULs with no newline, costing no disk


def test_verify_reads_no_line_past_the_limit_so_memory_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    _record_then_an_enormous_line(path, 600 * _MIB)
    code, out, err, rss = _cli(tmp_path, "verify", str(path), timeout=60)
    assert code == 1, err
    assert f"line_too_long: line 2 is longer than {MAX_LINE_BYTES} bytes" in out
    assert rss < 250 * 1024, f"verify peaked at {rss // 1024} MB"


def test_replay_refuses_an_enormous_line_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    _record_then_an_enormous_line(path, 600 * _MIB)
    code, _, err, rss = _cli(tmp_path, "replay", str(path), timeout=60)
    assert code == 2
    assert err.strip() == f"agentloop: error: {path}: line 2 is longer than {MAX_LINE_BYTES} bytes; the file is not read past it; not replayed"
    assert rss < 250 * 1024, f"replay peaked at {rss // 1024} MB"


def test_replay_refuses_a_file_too_large_to_hold_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    _record_then_an_enormous_line(path, 1536 * _MIB)
    code, _, err, rss = _cli(tmp_path, "replay", str(path))
    assert code == 2
    assert "is more than replay reads into memory" in err and len(err.strip().splitlines()) == 1
    assert rss < 100 * 1024, f"replay peaked at {rss // 1024} MB"


def test_repair_cuts_an_enormous_junk_tail_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    _record_then_an_enormous_line(path, 300 * _MIB)
    code, out, err, rss = _cli(tmp_path, "verify", "--repair", str(path), timeout=60)
    assert code == 0, err
    assert "repaired: cut " in out and "a partial last line" in out
    assert rss < 250 * 1024, f"repair peaked at {rss // 1024} MB"
    assert _cli(tmp_path, "verify", str(path))[0] == 0
    for side in tmp_path.glob("huge.jsonl.torn-*"):
        side.unlink()


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _readline_lines(data: bytes, max_bytes: int) -> tuple[list[bytes], list[int]]:
    """What ``bounded_lines`` yields, as ``f.readline(max_bytes + 1)`` a line reads it."""
    import io

    f, out, n = io.BytesIO(data), [], 0
    while line := f.readline(max_bytes + 1):
        n += 1
        if len(line) > max_bytes and not line.endswith(b"\n"):
            return out, [n]
        out.append(line)
    return out, []


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"x", b"xy", b"\r", b"abcdefghij", b"\n\n"])).map(b"".join),
       st.integers(1, 12), st.integers(1, 9))
def test_bounded_lines_reads_in_chunks_the_lines_readline_would(data: bytes, max_bytes: int, chunk: int) -> None:
    """verify reads a chunk at a time (a readline call a line cost about 5% of its time):
    the same lines, and the same stop before the first line past the limit, whatever the chunk size."""
    import io

    import agentloop.transcript as tr

    old = tr._CHUNK
    tr._CHUNK = chunk
    try:
        too_long: list[int] = []
        got = list(tr.bounded_lines(io.BytesIO(data), too_long, max_bytes))
    finally:
        tr._CHUNK = old
    assert (got, too_long) == _readline_lines(data, max_bytes)
