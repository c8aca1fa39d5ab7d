"""Run ``agentloop acp`` under the ACP TypeScript SDK's client (``drive.mjs``) and check every message it saw.

The SDK and its JSON schema are installed by ``scripts/setup-test-peers`` into
``.cache/npm-acp`` (pinned). Without them the tests skip, except in CI.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / ".cache" / "npm-acp" / "node_modules" / "@agentclientprotocol" / "sdk"
ENTRY = SDK / "dist" / "v1" / "stable" / "acp.js"
SCHEMA = SDK / "schema" / "v1" / "schema.json"
DRIVER = Path(__file__).resolve().parent / "drive.mjs"


def need_sdk() -> None:
    """Skip when the SDK or node is missing, except in CI, where that is a failure."""
    if ENTRY.is_file() and SCHEMA.is_file() and shutil.which("node"):
        return
    msg = "the ACP TypeScript SDK is not installed (run scripts/setup-test-peers)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def drive(tmp_path: Path, cwd: Path, steps: list[dict[str, Any]], *, script: list[dict[str, Any]] | None = None,
          args: list[str] | tuple[str, ...] = (), answers: dict[str, Any] | None = None, buffers: dict[str, str] | None = None,
          timeout: float = 120) -> dict[str, Any]:
    """The scenario run against ``agentloop acp`` (with the scripted model ``script``): steps, wire, stderr."""
    need_sdk()
    command = [sys.executable, "-m", "agentloop.cli.main", "acp", *args]
    if script is not None:
        model = tmp_path / f"model-{len(list(tmp_path.glob('model-*.json')))}.json"
        model.write_text(json.dumps(script))
        command += ["--model", f"scripted:{model}"]
    userhome = tmp_path.parent / f"{tmp_path.name}-userhome"  # beside the workspace, never around it (a home workspace asks)
    scenario = {"sdk": str(ENTRY), "command": command, "cwd": str(cwd), "steps": steps,
                "env": {"AGENTLOOP_HOME": str(tmp_path / "home"), "HOME": str(userhome)},
                "answers": answers or {}, "buffers": buffers or {}}
    path = tmp_path / f"scenario-{len(list(tmp_path.glob('scenario-*.json')))}.json"
    path.write_text(json.dumps(scenario))
    userhome.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    done = subprocess.run(["node", str(DRIVER), str(path)], capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@functools.cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text())
    return loaded


@functools.cache
def _by_method() -> tuple[dict[str, str], dict[str, str]]:
    """``method -> definition`` for params (requests and notifications) and for results."""
    params, results = {}, {}
    for name, d in _schema()["$defs"].items():
        method = d.get("x-method") if isinstance(d, dict) else None
        if method:
            (results if name.endswith("Response") else params)[method] = name
    return params, results


def _check(name: str, value: Any) -> list[str]:
    v = Draft202012Validator({"$defs": _schema()["$defs"], "$ref": f"#/$defs/{name}"})
    return [f"{name}: {e.json_path}: {e.message[:300]}" for e in v.iter_errors(value)]


def schema_violations(wire: list[dict[str, Any]]) -> list[str]:
    """Every message checked against the ACP schema: a request's or notification's params by its
    method, a result by the method of the request it answers, an error as an ``Error``."""
    params, results = _by_method()
    asked: dict[tuple[str, Any], str] = {}
    out: list[str] = []
    for i, item in enumerate(wire):
        side, msg = item["from"], item["msg"]
        where = f"message {i} from the {side}"
        if msg.get("jsonrpc") != "2.0":
            out.append(f"{where}: no jsonrpc 2.0")
        if "method" in msg:
            method = msg["method"]
            if "id" in msg:
                asked[(side, msg["id"])] = method
            if method not in params:
                out.append(f"{where}: unknown method {method}")
                continue
            out += [f"{where} ({method}): {e}" for e in _check(params[method], msg.get("params"))]
        elif "error" in msg:
            out += [f"{where}: {e}" for e in _check("Error", msg["error"])]
        else:
            other = "agent" if side == "client" else "client"
            method = asked.get((other, msg.get("id")), "")
            if method not in results:
                out.append(f"{where}: a result for no known request (id {msg.get('id')})")
                continue
            out += [f"{where} (result of {method}): {e}" for e in _check(results[method], msg.get("result"))]
    return out


def updates(wire: list[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    """The ``session/update`` updates the agent sent (of one ``sessionUpdate`` kind)."""
    got = [w["msg"]["params"]["update"] for w in wire if w["from"] == "agent" and w["msg"].get("method") == "session/update"]
    return [u for u in got if kind is None or u.get("sessionUpdate") == kind]


def requests(wire: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """The params of each request of ``method`` the agent sent the client."""
    return [w["msg"]["params"] for w in wire if w["from"] == "agent" and w["msg"].get("method") == method and "id" in w["msg"]]
