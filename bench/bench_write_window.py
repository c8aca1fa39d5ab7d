#!/usr/bin/env python3
"""How long a repository a sandboxed command plants is visible to the host before the write wall moves it.

A background Bash command in the real bubblewrap sandbox makes, once a second, a new git repository with a
hook (``git init dN``, then ``dN/.git/hooks/pre-commit``); a thread on the host looks for each hook every
0.2 ms and notes how long it was there before the watch moved it aside. That time is the window the host
could see it in (docs/decisions/0014-one-write-wall-for-every-write-path.md). ``--folders N`` first fills
the workspace with N folders, to show how the watch's wait grows with the tree.

    PYTHONPATH=src .venv/bin/python bench/bench_write_window.py [--plants 8] [--folders 0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.testing import ScriptedModel, reply


def measure(plants: int, folders: int) -> list[float]:
    base = Path(tempfile.mkdtemp(prefix="agentloop-window-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    proj = base / "proj"
    proj.mkdir()
    for i in range(folders):
        (proj / "tree" / f"{i // 100}" / f"{i}").mkdir(parents=True)
    hook = "#!/bin/sh\\ntrue\\n"
    plant = (f"for i in $(seq 1 {plants}); do sleep 1; git init -q d$i; g=.g; g=${{g}}it;"
             f" printf '{hook}' > d$i/$g/hooks/pre-commit; done; sleep 3")
    model = ScriptedModel([reply("", [("Bash", {"command": plant, "run_in_background": True})]), reply("started")])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "LANG": "C.UTF-8"}
    a = Agent(cwd=str(proj), home=str(base / "al"), env=env, model=model, permission_mode="bypassPermissions")
    seen: dict[int, float] = {}
    gone: dict[int, float] = {}
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            now = time.monotonic()
            for i in range(1, plants + 1):
                there = (proj / f"d{i}" / ".git" / "hooks" / "pre-commit").exists()
                if there and i not in seen:
                    seen[i] = now
                elif not there and i in seen and i not in gone:
                    gone[i] = now
            time.sleep(0.0002)

    t = threading.Thread(target=look, daemon=True)
    try:
        assert a.sandbox.active, "no sandbox here"
        t.start()
        a.ask("go")
        deadline = time.monotonic() + plants + 15
        while len(gone) < plants and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        a.close()
        shutil.rmtree(base, ignore_errors=True)
    missed = [i for i in range(1, plants + 1) if i not in seen]
    stayed = [i for i in seen if i not in gone]
    if missed or stayed:
        print(f"  not seen by the host at all: {missed}; never moved: {stayed}")
    return [gone[i] - seen[i] for i in sorted(gone)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plants", type=int, default=8)
    ap.add_argument("--folders", type=int, default=0)
    args = ap.parse_args()
    w = measure(args.plants, args.folders)
    if w:
        print(f"window over {len(w)} plants, {args.folders} extra folders: median {statistics.median(w) * 1000:.0f} ms,"
              f" max {max(w) * 1000:.0f} ms, min {min(w) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
