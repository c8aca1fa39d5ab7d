#!/usr/bin/env python3
"""Run a verifier over the conformance vectors and report every case it gets wrong.

    python conformance/run.py -- node verifiers/node/agentloop-verify.mjs
    python conformance/run.py -- agentloop            # or any command with the same interface
    python conformance/run.py --only anchor-truncated -- ./my-verifier

The command is given ``verify --json FILE [--anchor A] [--public-key K]`` or
``check-proof PROOF [--file F]`` (absolute paths) for each case; see README.md.
Exit 0 when every case passes. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
Invoker = Callable[[list[str]], tuple[int, str]]
"""Runs the verifier with these arguments: (exit code, standard output)."""


def load_cases(directory: str = HERE) -> list[dict[str, Any]]:
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        cases: list[dict[str, Any]] = json.load(f)["cases"]
    return cases


def arguments(case: dict[str, Any], directory: str = HERE) -> list[str]:
    def at(rel: str) -> str:
        return os.path.join(directory, rel)

    if case["command"] == "verify":
        args = ["verify", "--json", at(case["file"])]
        if "anchor" in case:
            args += ["--anchor", at(case["anchor"])]
        if "public_key" in case:
            args += ["--public-key", at(case["public_key"])]
        return args
    args = ["check-proof", at(case["proof"])]
    if "file" in case:
        args += ["--file", at(case["file"])]
    return args


def _report_of(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            out = json.loads(line)
        except ValueError:
            continue
        if isinstance(out, dict) and "problems" in out:
            return out
    return None


def check_case(case: dict[str, Any], code: int, stdout: str) -> str | None:
    """None when the verifier's answer is the expected one; else what differs."""
    want = case["expect"]
    if code != want["exit"]:
        return f"exit {code}, expected {want['exit']}"
    if "report" not in want:
        return None
    got = _report_of(stdout)
    if got is None:
        return "no JSON report on standard output"
    exp = want["report"]
    problems = [{k: p[k] for k in ("index", "kind", "end") if k in p} for p in got.get("problems", [])]
    seen = {"ok": got.get("ok"), "records": got.get("records"), "last_hash": got.get("last_hash"), "problems": problems}
    if "anchor" in exp:
        a = got.get("anchor") or {}
        seen["anchor"] = {k: a.get(k) for k in ("size", "leaves", "root", "signature", "consistency")}
    if seen != exp:
        diffs = [f"{k}: got {seen.get(k)!r}, expected {exp[k]!r}" for k in exp if seen.get(k) != exp[k]]
        return "; ".join(diffs)
    return None


def check_all(directory: str, invoke: Invoker, only: str | None = None) -> Iterator[str]:
    """One line per failing case."""
    for case in load_cases(directory):
        if only and case["name"] != only:
            continue
        code, out = invoke(arguments(case, directory))
        why = check_case(case, code, out)
        if why is not None:
            yield f"{case['name']} (section {case['spec']}): {why}"


def command_invoker(command: list[str]) -> Invoker:
    def invoke(args: list[str]) -> tuple[int, str]:
        p = subprocess.run([*command, *args], capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout

    return invoke


def python_invoker() -> Invoker:
    """agentloop's own CLI, in this process (no interpreter start per case)."""
    from agentloop.cli.main import main

    def invoke(args: list[str]) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
        return code, out.getvalue()

    return invoke


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=HERE, help="the conformance directory (default: this script's)")
    ap.add_argument("--only", help="run one case by name")
    ap.add_argument("--python", action="store_true", help="run agentloop's verifier in this process")
    ap.add_argument("command", nargs="*", help="the verifier command, after --")
    args = ap.parse_args()
    if not args.python and not args.command:
        ap.error("give the verifier command after --, or --python")
    invoke = python_invoker() if args.python else command_invoker(args.command)
    total = len([c for c in load_cases(args.dir) if not args.only or c["name"] == args.only])
    failures = list(check_all(args.dir, invoke, args.only))
    for line in failures:
        print(f"FAIL {line}")
    print(f"{total - len(failures)} of {total} conformance cases pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
