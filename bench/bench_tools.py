#!/usr/bin/env python3
"""What confinement, .gitignore handling and permission checks cost, against plain baselines, same run.

- Read: ``Workspace.read_bytes`` (resolve, then open component by component
  with O_NOFOLLOW) against ``open(path).read()``.
- Grep: the Grep tool (files_with_matches, .gitignore honoured, symlink-safe
  directory walk) over this repository's ``src`` and ``tests`` against
  ``git grep -l`` (C, reads the index) and against a plain ``os.walk`` +
  ``re.search`` that ignores nothing.
- Permissions: ``PermissionPolicy.decide`` on a compound Bash line with
  wrappers against ``shlex.split`` of the same line.

No target is set for these; the figures show where the time goes.

    .venv/bin/python bench/bench_tools.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from agentloop.agent.permissions.rules import PermissionPolicy  # noqa: E402
from agentloop.agent.tools.catalog import builtin_registry  # noqa: E402
from agentloop.agent.tools.workspace import Workspace  # noqa: E402
from agentloop.config.settings import SettingsSource  # noqa: E402
from agentloop.events import ToolCall  # noqa: E402

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))


def best(fn, repeat: int, inner: int = 1) -> float:
    """Best-of-``repeat`` seconds per call."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    r = args.repeat

    ws = Workspace(REPO)
    target = os.path.join(REPO, "src", "agentloop", "loop.py")
    t_ws = best(lambda: ws.read_bytes("src/agentloop/loop.py"), r, 2000)

    def plain_read() -> bytes:
        with open(target, "rb") as f:
            return f.read()

    t_plain = best(plain_read, r, 2000)
    print(f"read   workspace {t_ws * 1e6:8.1f} us   plain open {t_plain * 1e6:8.1f} us   ratio {t_ws / t_plain:5.2f}x")

    with tempfile.TemporaryDirectory() as spill:
        reg = builtin_registry(ws, spill_dir=spill)

        def grep_tool() -> None:
            for sub in ("src", "tests"):
                res = reg.invoke(ToolCall("1", "Grep", {"pattern": r"def \w+_at_", "path": sub}))
                assert res.ok, res.error

        def git_grep() -> None:
            subprocess.run(["git", "-C", REPO, "grep", "-l", "-E", r"def \w+_at_", "--", "src", "tests"],
                           capture_output=True, check=False)

        rx = re.compile(r"def \w+_at_")

        def walk_grep() -> None:
            for sub in ("src", "tests"):
                for d, _dirs, files in os.walk(os.path.join(REPO, sub)):
                    for fn in files:
                        try:
                            with open(os.path.join(d, fn), "rb") as f:
                                rx.search(f.read().decode("utf-8", "replace"))
                        except OSError:
                            pass

        t_grep = best(grep_tool, r)
        t_git = best(git_grep, r)
        t_walk = best(walk_grep, r)
        print(
            f"grep   tool {t_grep * 1e3:8.1f} ms   git grep {t_git * 1e3:8.1f} ms   plain walk {t_walk * 1e3:8.1f} ms   "
            f"ratio vs git {t_grep / t_git:5.2f}x, vs walk {t_grep / t_walk:5.2f}x"
        )

    src = SettingsSource("/p/.agentloop/settings.json", "project", {"permissions": {
        "allow": ["Bash(npm run test *)", "Bash(git diff:*)", "Bash(ls *)", "Bash(grep *)"],
        "deny": ["Bash(rm *)", "Bash(curl *)", "Read(./secrets/**)"],
        "ask": ["Bash(git push *)"],
    }})
    policy = PermissionPolicy.from_settings([src], cwd="/p")
    line = "cd src && nice -n 5 ls -la | grep foo; sudo env A=1 bash -c 'git diff HEAD && npm run test unit' $(echo x)"
    t_decide = best(lambda: policy.decide("Bash", {"command": line}), r, 500)
    t_shlex = best(lambda: shlex.split(line), r, 500)
    print(f"permit decide {t_decide * 1e6:8.1f} us   shlex.split {t_shlex * 1e6:8.1f} us   ratio {t_decide / t_shlex:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
