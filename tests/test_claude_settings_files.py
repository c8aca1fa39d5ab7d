"""Settings keys from Claude Code's settings reference, honoured as it documents them.

- Settings reference, "Environment variables": ``BASH_DEFAULT_TIMEOUT_MS`` ("Default timeout for
  long-running bash commands") and ``BASH_MAX_TIMEOUT_MS`` ("Maximum timeout the model can set for
  long-running bash commands"), in the process environment or the settings' ``env``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop.agent.agent import Agent
from agentloop.transcript import read_records


def bash_call(cmd: str, timeout_ms: int | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"command": cmd}
    if timeout_ms is not None:
        args["timeout"] = timeout_ms
    return {"text": "", "tool_calls": [{"name": "Bash", "arguments": args}], "usage": [100, 10]}


def write_settings(proj: Path, data: dict[str, Any]) -> None:
    (proj / ".claude").mkdir(exist_ok=True)
    (proj / ".claude" / "settings.json").write_text(json.dumps(data))


def test_bash_timeouts_come_from_the_settings_env(proj: Path, scripted: Callable[..., str]) -> None:
    """Environment variables: the default timeout applies when the model gives none; the maximum caps the one it gives."""
    write_settings(proj, {"permissions": {"allow": ["Bash"]},
                          "env": {"BASH_DEFAULT_TIMEOUT_MS": "1000", "BASH_MAX_TIMEOUT_MS": "1500"}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([bash_call("sleep 4; echo late"), bash_call("sleep 4; echo late", 600_000),
                                                        bash_call("echo quick"), {"text": "done", "usage": [10, 1]}]))
    try:
        assert (a.shell_timeout_s, a.shell_max_timeout_s) == (1.0, 1.5)
        t0 = time.monotonic()
        a.ask("go")
        took = time.monotonic() - t0
    finally:
        a.close()
    default, capped, quick = [r.payload for r in read_records(a.session.path) if r.kind == "tool_result"]
    assert not default["ok"] and "timed out after 1 s" in default["error"]
    assert not capped["ok"] and "timed out after 1.5 s" in capped["error"]
    assert quick["ok"] and took < 7


def test_a_bad_bash_timeout_is_named_and_the_default_kept(proj: Path, scripted: Callable[..., str]) -> None:
    write_settings(proj, {"env": {"BASH_DEFAULT_TIMEOUT_MS": "soon"}})
    a = Agent(cwd=str(proj), trust=True, model=scripted([]))
    try:
        assert a.shell_timeout_s == 120.0 and a.shell_max_timeout_s is None
        assert any("BASH_DEFAULT_TIMEOUT_MS='soon' is not a positive number of milliseconds" in w for w in a.config_warnings)
    finally:
        a.close()
