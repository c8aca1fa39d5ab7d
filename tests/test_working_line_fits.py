"""The working line is one line at any width: a long MCP tool name on a narrow terminal is cut to
fit, so each redraw replaces the line instead of leaving a wrapped copy behind. In a real terminal
(pexpect + pyte) at 40, 80 and 120 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _pty import Term, env_for
from agentloop.cli.spinner import fitted
from mcp_servers.helpers import PY, PYSERVER

SERVER = "a_rather_long_server_name_for_the_working_line"


@pytest.mark.parametrize("cols", [40, 80, 120])
def test_the_line_never_passes_the_width_it_is_given(cols: int) -> None:
    from rich.cells import cell_len

    for label, detail in (("thinking", ""), (f"running mcp__{SERVER}__wait", "3/10 " + "fetching " * 20)):
        for secs in (0, 12, 12345):
            assert cell_len(fitted("⠋", label, detail, secs, cols - 1)) <= cols - 1


@pytest.mark.parametrize("cols", [40, 80, 120])
def test_a_long_working_line_leaves_no_copies_on_screen(tmp_path: Path, cols: int) -> None:
    proj = tmp_path / "proj"
    (proj / ".agentloop").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {SERVER: {"command": PY, "args": [PYSERVER]}}}))
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"allow": [f"mcp__{SERVER}"]}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"text": "", "tool_calls": [{"name": f"mcp__{SERVER}__wait", "arguments": {"seconds": 3, "tag": "waited"}}]},
        {"text": "all done"},
    ]))
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS=str(cols), TERM="xterm-256color")
    env.pop("NO_COLOR")  # the working line is drawn on colour terminals only
    t = Term(["--trust", "--model", f"scripted:{script}"], cwd=str(proj), env=env, cols=cols, rows=30)
    try:
        t.wait_for(r"(?m)^>")
        t.wait_for(r"(?m)/ \$5\.000000 \(\d+%\) ?$")  # the server is up
        t.type("go")
        t.wait_for(r"all done", timeout=60)
        assert b"running mcp__" in t.raw  # the working line was drawn
        copies = [ln for ln in t.lines() if "running mcp__" in ln or "esc to interrupt" in ln]
        assert copies == [], copies
    finally:
        t.kill()
