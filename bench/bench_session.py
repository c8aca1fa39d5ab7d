"""A realistic coding session replayed by a scripted model through the real agent: turns, tokens and cost per task.

    .venv/bin/python bench/bench_session.py

A small repository (``calc.py`` with a bug, ``test_calc.py``) and two tasks, each
the way a strong model works them: explore (Glob and Grep in one turn), read
(two files in one turn), run the tests, edit, run them again, fix its own
mistake, commit, answer. The model is scripted; everything else is real: the
``Agent``, its tools, the Bash sandbox, git, and the fake Anthropic server with
prompt caching on (usage computed from the requests' sizes, as the API reports it).

Printed per task: model turns, input tokens (uncached, cache writes, cache
reads), output tokens and cost at claude-sonnet-4-5's prices; for the session
with the 45-word prompt agentloop had before (the baseline, ``--system-prompt``)
and with today's prompt, and their ratio. The run fails if the work was not done
(the tests must pass at the end and both commits must exist).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_prompt import OLD_PROMPT  # noqa: E402 - beside this file

MODEL = "anthropic:claude-sonnet-4-5"
GIT_ENV = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}

CALC = '''"""Small arithmetic helpers."""


def add(a, b):
    return a - b


def sub(a, b):
    return a - b
'''
TESTS = '''from calc import add, sub

assert add(2, 3) == 5, "add"
assert sub(5, 3) == 2, "sub"
print("ok")
'''


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": args}


def turn(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls)} if calls else {"text": text}


TASKS: list[tuple[str, list[dict[str, Any]]]] = [
    ("The add test fails. Fix it and commit.", [
        turn("Looking for the code and its tests.", call("Glob", pattern="**/*.py"), call("Grep", pattern="def add", output_mode="content", **{"-n": True})),
        turn("", call("Read", file_path="calc.py"), call("Read", file_path="test_calc.py")),
        turn("Running the tests first.", call("Bash", command="python3 test_calc.py")),
        turn("`calc.py:5` subtracts; it should add.", call("Edit", file_path="calc.py", old_string="def add(a, b):\n    return a - b",
                                                           new_string="def add(a, b):\n    return a + b")),
        turn("", call("Bash", command="python3 test_calc.py")),
        turn("Tests pass; committing.", call("Bash", command="git status --short && git add calc.py && git commit -q -m 'Fix add: it subtracted' && git log --oneline -1")),
        turn("Fixed `calc.py:5` (`add` subtracted), the tests pass, and the fix is committed."),
    ]),
    ("Add mul(a, b) with a test, and commit.", [
        turn("", call("Read", file_path="calc.py"), call("Read", file_path="test_calc.py")),
        turn("Adding mul and its test.",
             call("Edit", file_path="calc.py", old_string="def sub(a, b):\n    return a - b\n",
                  new_string="def sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"),
             call("Edit", file_path="test_calc.py", old_string="from calc import add, sub\n", new_string="from calc import add, mul, sub\n")),
        turn("", call("Edit", file_path="test_calc.py", old_string='assert sub(5, 3) == 2, "sub"\n',
                      new_string='assert sub(5, 3) == 2, "sub"\nassert mul(3, 4) == 13, "mul"\n')),
        turn("", call("Bash", command="python3 test_calc.py")),
        turn("My test expects 13; 3 x 4 is 12.", call("Edit", file_path="test_calc.py", old_string="== 13", new_string="== 12")),
        turn("", call("Bash", command="python3 test_calc.py")),
        turn("", call("Bash", command="git add calc.py test_calc.py && git commit -q -m 'Add mul, with a test' && git log --oneline -1")),
        turn("Added `mul` (`calc.py:12`) and its test (`test_calc.py:5`); the tests pass and it is committed."),
    ]),
]


@dataclass
class TaskFigures:
    turns: int = 0
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    micros: int = 0
    failed_calls: int = 0


def _repo(root: str) -> str:
    cwd = os.path.join(root, "repo")
    os.makedirs(cwd)
    env = {**os.environ, **GIT_ENV}
    for name, text in (("calc.py", CALC), ("test_calc.py", TESTS)):
        with open(os.path.join(cwd, name), "w") as f:
            f.write(text)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "calc with tests"]):
        subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True)
    return cwd


def run_session(root: str, system_prompt: str | None) -> list[TaskFigures]:
    """Both tasks, one session; the figures of each, read back from the session's transcript."""
    from agentloop.agent.agent import Agent
    from agentloop.testing.fakeprovider import FakeProvider
    from agentloop.transcript import read_records

    cwd = _repo(root)
    replies = [r for _, steps in TASKS for r in steps]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "SHELL")} | GIT_ENV
    with FakeProvider({"replies": replies, "cache": True}) as fp:
        env["ANTHROPIC_BASE_URL"] = fp.url
        a = Agent(cwd=cwd, home=os.path.join(root, "home"), model=MODEL, env=env, permission_mode="bypassPermissions",
                  system_prompt=system_prompt, max_usd_micros=5_000_000)
        try:
            for prompt, _ in TASKS:
                res = a.ask(prompt)
                if res.stop_reason != "no_tool_calls":
                    raise SystemExit(f"task {prompt!r} stopped with {res.stop_reason}: {res.error}")
        finally:
            a.close("prompt_input_exit")
    out: list[TaskFigures] = []
    for rec in read_records(a.session.path):
        if rec.kind == "run_start":
            out.append(TaskFigures())
        elif rec.kind == "model_turn":
            u = rec.payload["reply"]["usage"] or {}
            t = out[-1]
            t.turns += 1
            t.input += u.get("input_tokens", 0)
            t.cache_write += u.get("cache_write_tokens", 0)
            t.cache_read += u.get("cache_read_tokens", 0)
            t.output += u.get("output_tokens", 0)
        elif rec.kind == "budget":
            out[-1].micros += int(rec.payload["cost_micros"])
        elif rec.kind == "tool_result" and not rec.payload.get("ok"):
            out[-1].failed_calls += 1
    check = subprocess.run(["python3", "test_calc.py"], cwd=cwd, capture_output=True, text=True)
    log = subprocess.run(["git", "log", "--oneline"], cwd=cwd, capture_output=True, text=True).stdout.splitlines()
    if check.returncode != 0 or len(log) != 3:
        raise SystemExit(f"the work was not done: tests {check.returncode}, {len(log)} commits\n{check.stderr}")
    return out


def main() -> int:
    results: dict[str, list[TaskFigures]] = {}
    for label, prompt in (("before (45-word prompt)", OLD_PROMPT), ("after (agentloop's prompt)", None)):
        with tempfile.TemporaryDirectory() as d:
            results[label] = run_session(d, prompt)
    print(f"{'session':<28} {'task':>4} {'turns':>5} {'input':>7} {'c.write':>8} {'c.read':>8} {'output':>6} {'cost $':>9} {'failed':>6}")
    for label, figs in results.items():
        for i, t in enumerate(figs, 1):
            print(f"{label:<28} {i:>4} {t.turns:>5} {t.input:>7} {t.cache_write:>8} {t.cache_read:>8} {t.output:>6} "
                  f"{t.micros / 1e6:>9.4f} {t.failed_calls:>6}")
    before, after = (sum(t.micros for t in f) for f in results.values())
    n = sum(t.turns for t in results["after (agentloop's prompt)"])
    print(f"cost per task: before ${before / 2e6:.4f}, after ${after / 2e6:.4f} ({after / before:.2f}x); {n / 2:.1f} model turns per task")
    print("both sessions did the work: tests pass, two commits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
