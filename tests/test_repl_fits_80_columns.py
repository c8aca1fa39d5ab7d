"""Everything the REPL prints fits an 80-column terminal without the terminal breaking a word:
the banner, the spend-cap line, a failed-server notice, /help, /sessions and /mcp. In a real
terminal (pexpect + pyte) 80 columns wide: agentloop folds its own lines at word boundaries to
79 columns, so a screen line that fills all 80 is one the terminal wrapped mid-word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _pty import Term, env_for

COLS = 80


def test_the_repl_at_80_columns_never_lets_the_terminal_wrap_a_line(tmp_path: Path) -> None:
    proj = tmp_path / "a-project-folder-with-a-rather-long-name-to-push-the-banner-past-eighty"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "missing-server-with-a-long-name": {"command": "/nonexistent/path/to/an/mcp/server/that/is/not/there"}}}))
    script = tmp_path / "replies-for-a-test-of-the-eighty-column-terminal-layout.json"
    script.write_text(json.dumps([{"text": "first"}, {"text": "second"}]))
    env = env_for(str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS=str(COLS))
    long_prompt = "please look at the whole repository and tell me what every module does in detail"
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "agentloop"), "-p", long_prompt, "--trust",
                    "--model", f"scripted:{script}"], cwd=proj, env=env, capture_output=True, timeout=120, check=True)
    t = Term(["--trust", "--model", f"scripted:{script}"], cwd=str(proj), env=env, cols=COLS, rows=60)
    try:
        t.wait_for(r"(?m)^>")
        t.wait_for(r"missing-server-with-a-long-name")
        for command, shown in (("/help", r"Ctrl\+D exits"), ("/sessions", r"verified  prompt"), ("/mcp", r"missing-server")):
            mark = t.mark()
            t.type(command)
            t.wait_for(shown, after=mark)
            t.pump(0.5)
        full = [ln for ln in t.lines()[:-1] if len(ln) >= COLS]  # the last line is the status line
        assert full == [], "\n".join(full)
        assert "please …" in t.text()  # the /sessions row is there, its prompt cut to what 80 columns leave
    finally:
        t.kill()
