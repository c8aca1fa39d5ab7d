"""Output that fits an 80-column terminal (issue 22, point 10): lines no wider than 80 columns,
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
