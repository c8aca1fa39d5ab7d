"""The cost of reading Claude Code's settings files beside agentloop's, and of folder trust.

Two layouts of the same configuration (a hook, an allow and a deny rule, a
model, an MCP server in ``.mcp.json``): A in agentloop's files only
(``.agentloop/settings.json``, ``$AGENTLOOP_HOME/settings.json``), B spread over
Claude Code's files as well (``~/.claude/settings.json``, ``.claude/settings.json``,
``.claude/settings.local.json``). Measured in the same run, interleaved:

1. ``load_for_agent`` in process (read, sanitize, describe, digest, trust
   decision): median microseconds, B / A;
2. ``agentloop -p`` from a cold process, trusted (``--trust``), CPU time
   (user + system) of the child: median, B / A. Target: B / A at most 1.10.

    .venv/bin/python bench/bench_settings_load.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET = 1.10
AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


def write(p: Path, data: Any) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data))


def layout(root: Path, spread: bool) -> tuple[Path, dict[str, str]]:
    proj, home, user = root / "proj", root / "home", root / "user"
    for d in (proj, home, user):
        d.mkdir(parents=True)
    hook = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    perms = {"permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./secret/**)"]}}
    user_part = {"maxSteps": 20}
    if spread:
        write(user / ".claude" / "settings.json", user_part)
        write(proj / ".claude" / "settings.json", hook)
        write(proj / ".claude" / "settings.local.json", perms)
    else:
        write(home / "settings.json", user_part)
        write(proj / ".agentloop" / "settings.json", {**hook, **perms})
    write(proj / ".mcp.json", {"mcpServers": {}})
    (root / "r.json").write_text('[{"text": "hi"}]')
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOP_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(user), AGENTLOOP_HOME=str(home))
    return proj, env


def load_us(proj: Path, env: dict[str, str]) -> float:
    from agentloop.agent.trust import load_for_agent

    t0 = time.perf_counter()
    load_for_agent(str(proj), env["AGENTLOOP_HOME"], env, trust=True, managed="")
    return (time.perf_counter() - t0) * 1e6


def cli_cpu(proj: Path, env: dict[str, str]) -> float:
    p = subprocess.Popen([AGENTLOOP, "-p", "hi", "--trust", "--model", f"scripted:{proj.parent / 'r.json'}"],
                         cwd=proj, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("agentloop -p failed")
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    n = ap.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        a = layout(Path(tmp) / "a", spread=False)
        b = layout(Path(tmp) / "b", spread=True)
        la, lb, ca, cb = [], [], [], []
        for _ in range(n):
            la.append(load_us(*a))
            lb.append(load_us(*b))
            ca.append(cli_cpu(*a))
            cb.append(cli_cpu(*b))
    ma, mb = statistics.median(la), statistics.median(lb)
    print(f"load_for_agent: agentloop files {ma:.0f} us, with Claude Code's files {mb:.0f} us, ratio {mb / ma:.2f}")
    ra = statistics.median(ca)
    rb = statistics.median(cb)
    ratio = rb / ra
    print(f"agentloop -p CPU: agentloop files {ra * 1000:.0f} ms, with Claude Code's files {rb * 1000:.0f} ms, "
          f"ratio {ratio:.2f} (target <= {TARGET})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
