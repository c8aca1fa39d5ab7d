"""Output that fits an 80-column terminal: lines no wider than 80 columns,
shortened at their least important parts, never cut mid-word by the table renderer ("…")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len


def _env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e.update(AGENTLOOP_HOME=str(tmp_path / "home"), COLUMNS="80", NO_COLOR="1")
    return e


def test_the_demo_table_fits_80_columns_with_nothing_cut(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "agentloop.cli.main", "demo", "--out", "out"], env=_env(tmp_path), cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    table = [line for line in lines if "$0." in line]
    assert table and not any("…" in line for line in table)
    assert all(line.split()[-1].count("/") == 1 for line in table)  # the claims column is whole


def test_the_batch_progress_line_and_report_fit_80_columns() -> None:
    import io

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from agentloop.cli.cmd_batch import _summary, progress_status

    status = progress_status({"done": 998, "failed": 2, "running": 8, "ledger": {"spent_micros": 4_123_456, "used_tokens": 9_999_999}},
                             5_000_000, 10_000_000)
    con = Console(file=io.StringIO(), width=80, record=True, color_system=None)
    bar = Progress(TextColumn("[bold]batch"), BarColumn(bar_width=12), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                   TextColumn("ETA"), TimeRemainingColumn(), console=con)
    bar.add_task("batch", total=1000, completed=1000, status=status)
    con.print(bar.make_tasks_table(bar.tasks))
    line = con.export_text().rstrip("\n")
    assert cell_len(line) <= 80 and "…" not in line and "done 998 failed 2 run 8 $4.12/$5.00" in line

    class Report:
        entries = [{"stop_reason": "no_tool_calls", "status": "ok", "resumed": False, "retried": False}] * 3
        backend, workers, elapsed, interrupted = "local", 2, 1.5, False
        ledger = {"spent_micros": 123, "used_tokens": 10, "reservations": 3, "refusals": 0, "forfeited_micros": 0, "overrun_micros": 0}
        anchor = {"root": "ab" * 32}

        def count(self, status: str) -> int:
            return 3 if status == "ok" else 0

    from agentloop.cli import _common

    out = io.StringIO()
    saved = _common.console
    _common.console = lambda stderr=False: Console(file=out, width=80, color_system=None)  # type: ignore[assignment]
    try:
        _summary(Report(), "out", 5_000_000, None)
    finally:
        _common.console = saved
    text = out.getvalue()
    assert max(cell_len(x) for x in text.splitlines()) <= 80 and "abababababababab… (in batch.anchor.json)" in text


def test_the_cost_line_fits_80_columns_by_leaving_out_whole_parts() -> None:
    """The REPL's and ``-p``'s cost line: at 80 columns the tokens go first,
    then the words; what is left is whole."""
    from types import SimpleNamespace

    from agentloop.agent.session.store import SessionStats
    from agentloop.cli.agent_entry import cost_line

    stats = SessionStats(spent_micros=12_345_678, last_input_tokens=64_000)
    agent = SimpleNamespace(stats=stats, max_usd_micros=50_000_000, window=128_000, last_usage_estimated=True)
    result = SimpleNamespace(spent_micros=1_234_567, usage=SimpleNamespace(input_tokens=123_456, output_tokens=7_890))
    full = cost_line(agent, result)
    assert full == "cost $1.234567 this turn (123456 in / 7890 out, estimated) · session $12.345678 / $50.000000 · context 50%"
    line = cost_line(agent, result, 80)
    assert cell_len(line) <= 80 and line == "cost $1.234567 this turn · session $12.345678 / $50.000000 · context 50%"
    short = cost_line(agent, result, 50)
    assert cell_len(short) <= 50 and short == "turn $1.234567 · session $12.345678 / $50.000000"
