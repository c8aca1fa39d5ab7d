#!/usr/bin/env python3
"""How long a repository a sandboxed command plants is visible to the host before the write wall moves it.

A background Bash command in the real bubblewrap sandbox makes, once a second, a new git repository with a
hook (``git init dN``, then ``dN/.git/hooks/pre-commit``); a thread on the host looks for each hook every
0.2 ms and notes how long it was there before the watch moved it aside. That time is the window the host
could see it in (docs/decisions/0014-one-write-wall-for-every-write-path.md, 0024). ``--folders N`` first fills
the workspace with N folders, to show whether the window grows with the tree.

Each run measures the watch alone (the creation supervisor switched off) and, in the same run, a baseline:
the watch made to walk the whole tree on every look (what it did before it re-read only the folders inotify
names), and prints the ratio. Then it runs the same plants with the creation supervisor on (record 0025): the
host must see none of them (``seen by the host: 0``).

    PYTHONPATH=src .venv/bin/python bench/bench_write_window.py [--plants 8] [--folders 0] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox import bubblewrap as sbx
from agentloop.agent.sandbox.watch import WriteWatch
from agentloop.testing import ScriptedModel, reply


def measure(plants: int, folders: int, supervised: bool = False) -> list[float]:
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
    sbx.SUPERVISE = supervised
    try:
        assert a.sandbox.active, "no sandbox here"
        t.start()
        a.ask("go")
        deadline = time.monotonic() + plants + 15
        while not supervised and len(gone) < plants and time.monotonic() < deadline:
            time.sleep(0.1)
        if supervised:  # nothing is planted, so nothing is ever moved: wait for the command to end its plants
            time.sleep(plants + 4)
    finally:
        stop.set()
        a.close()
        shutil.rmtree(base, ignore_errors=True)
        sbx.SUPERVISE = True
    if supervised:
        print(f"  supervised: seen by the host: {len(seen)} of {plants} plants")
        return []
    missed = [i for i in range(1, plants + 1) if i not in seen]
    stayed = [i for i in seen if i not in gone]
    if missed or stayed:
        print(f"  not seen by the host at all: {missed}; never moved: {stayed}")
    return [gone[i] - seen[i] for i in sorted(gone)]


@contextmanager
def whole_tree_every_look() -> Iterator[None]:
    """The baseline: each look walks the whole tree, and no name is looked at sooner than the others."""
    WriteWatch.whole_tree_every_look = True
    try:
        yield
    finally:
        WriteWatch.whole_tree_every_look = False


def summary(w: list[float]) -> str:
    if not w:
        return "nothing measured"
    return (f"median {statistics.median(w) * 1000:.1f} ms, max {max(w) * 1000:.1f} ms, min {min(w) * 1000:.1f} ms"
            f" over {len(w)} plants")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plants", type=int, default=8)
    ap.add_argument("--folders", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1, help="alternate the two this many times")
    args = ap.parse_args()
    now: list[float] = []
    base: list[float] = []
    for _ in range(args.rounds):
        with whole_tree_every_look():
            base += measure(args.plants, args.folders)
        now += measure(args.plants, args.folders)
        measure(args.plants, args.folders, supervised=True)
    print(f"{args.folders} extra folders, load average {os.getloadavg()[0]:.1f}")
    print(f"  baseline (whole tree every look): {summary(base)}")
    print(f"  now (the folders inotify names):  {summary(now)}")
    if now and base:
        print(f"  ratio now/baseline: median {statistics.median(now) / statistics.median(base):.2f},"
              f" max {max(now) / max(base):.2f}")


if __name__ == "__main__":
    main()
