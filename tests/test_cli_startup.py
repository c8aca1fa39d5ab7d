"""Start-up of the terminal agent: what making the agent does to the garbage collector.

``make_agent`` holds the collector back while the package loads and freezes what
loaded (once per process), so neither a pass during the imports nor the one at
exit scans those objects. These tests hold it to leaving the collector as it
found it, and to freezing only for the first agent of a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = r"""
import gc, json, sys
from agentloop.cli.agent_setup import make_agent
from agentloop.cli.main import _parser_for, _prompt_to_option
from agentloop.cli._common import UserError

def args(*extra):
    argv = ["-p", "hi", "--model", "scripted:" + sys.argv[1], "--max-usd", "1", *extra]
    parser = _parser_for(argv)
    return parser.parse_args(_prompt_to_option(parser, argv))

out = {"before": gc.get_freeze_count()}
first = make_agent(args())
out["after_first"] = (gc.isenabled(), gc.get_freeze_count())
first.close()
second = make_agent(args())
out["after_second"] = (gc.isenabled(), gc.get_freeze_count())
second.close()

class Cycle:
    pass

c = Cycle(); c.me = c
import weakref
gone = weakref.ref(c)
del c
gc.collect()
out["later_cycle_collected"] = gone() is None

gc.disable()
try:
    make_agent(args("--cwd", "/nonexistent/folder"))
except UserError:
    out["failed_make_keeps_disabled"] = not gc.isenabled()
gc.enable()
try:
    make_agent(args("--cwd", "/nonexistent/folder"))
except UserError:
    out["failed_make_keeps_enabled"] = gc.isenabled()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def run_once(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One process makes the agents both tests read (a package import and three make_agent calls)."""
    return _run(tmp_path_factory.mktemp("startup"))


def _run(tmp_path: Path) -> dict[str, Any]:
    replies = tmp_path / "replies.json"
    replies.write_text('[{"text": "hello"}, {"text": "again"}]')
    userhome = tmp_path.parent / f"{tmp_path.name}-userhome"  # beside the workspace: one that holds the home asks first
    userhome.mkdir(exist_ok=True)
    env = {**os.environ, "AGENTLOOP_HOME": str(tmp_path / "home"), "HOME": str(userhome)}
    p = subprocess.run([sys.executable, "-c", _SCRIPT, str(replies)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    result: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def test_making_the_agent_freezes_what_loaded_once_and_leaves_the_collector_on(run_once: dict[str, Any]) -> None:
    out = run_once
    assert out["before"] == 0
    enabled, frozen = out["after_first"]
    assert enabled is True and frozen > 1000  # the package's objects: never scanned again
    enabled, again = out["after_second"]
    assert enabled is True and again <= frozen  # a second agent freezes nothing more (a frozen object may be freed)
    assert out["later_cycle_collected"] is True  # garbage made afterwards is still collected


def test_making_the_agent_leaves_the_collector_as_it_found_it_when_it_fails(run_once: dict[str, Any]) -> None:
    out = run_once
    assert out["failed_make_keeps_disabled"] is True
    assert out["failed_make_keeps_enabled"] is True
