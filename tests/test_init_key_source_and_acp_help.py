"""Two facts the command line states: where the API key came from, and which options ``acp`` takes.

- ``-p --output-format stream-json``'s ``system``/``init`` carries ``apiKeySource``, one of the
  Agent SDK's ``ApiKeySource`` values (``sdk.d.ts``: ``'ANTHROPIC_API_KEY' | 'apiKeyHelper' |
  '/login managed key' | 'none' | ...``); Claude Code reports ``"ANTHROPIC_API_KEY"`` when its key
  comes from that variable.
- ``agentloop acp --help`` lists only options an ACP agent takes: the editor names the session
  (``session/load``) and its folder, and the output formats belong to ``-p``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.cli.agent_args import NOT_FOR_ACP
from agentloop.cli.claude_format import api_key_source
from agentloop.testing.fakeprovider import FakeProvider

AGENTLOOP = [sys.executable, "-m", "agentloop.cli.main"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e.update(AGENTLOOP_HOME=str(tmp_path / "home"), NO_COLOR="1", **extra)
    return e


def _init(tmp_path: Path, model: list[str], env: dict[str, str]) -> dict[str, object]:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    p = subprocess.run([*AGENTLOOP, "-p", "hi", "--output-format", "stream-json", "--verbose", *model], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    first = json.loads(p.stdout.splitlines()[0])
    assert first["subtype"] == "init"
    return first  # type: ignore[no-any-return]


def test_init_says_the_key_came_from_anthropic_api_key_when_it_did(tmp_path: Path) -> None:
    with FakeProvider({"replies": [{"text": "hello"}]}) as fp:
        init = _init(tmp_path, ["--model", "anthropic:claude-haiku-4-5"],
                     _env(tmp_path, ANTHROPIC_BASE_URL=fp.url, ANTHROPIC_API_KEY="sk-ant-test"))
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"


def test_init_says_none_without_an_anthropic_key(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hello"}]))
    assert _init(tmp_path, ["--model", f"scripted:{script}"], _env(tmp_path))["apiKeySource"] == "none"


@pytest.mark.parametrize(("spec", "key_env", "env", "source"), [
    ("anthropic:claude-haiku-4-5", None, {"ANTHROPIC_API_KEY": "k"}, "ANTHROPIC_API_KEY"),
    ("anthropic:claude-haiku-4-5", "MY_KEY", {"ANTHROPIC_API_KEY": "k", "MY_KEY": "k"}, "none"),  # another variable
    ("anthropic:claude-haiku-4-5", None, {"ANTHROPIC_API_KEY": ""}, "none"),
    ("openai:gpt-4o-mini", None, {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "none"),  # not the key in use
])
def test_the_key_source_names_only_the_key_the_session_uses(spec: str, key_env: str | None, env: dict[str, str], source: str) -> None:
    assert api_key_source(spec, key_env, env) == source


def test_acp_help_lists_only_the_options_acp_takes() -> None:
    out = subprocess.run([*AGENTLOOP, "acp", "--help"], capture_output=True, text=True, timeout=60).stdout
    for flag in NOT_FOR_ACP:
        assert flag not in out, flag
    for flag in ("--model", "--max-usd", "--permission-mode", "--mcp-config", "--sandbox"):
        assert flag in out, flag
    top = subprocess.run([*AGENTLOOP, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--output-format" in top and "--resume" in top  # still the REPL's and -p's


def test_acp_refuses_a_print_only_option_by_name() -> None:
    p = subprocess.run([*AGENTLOOP, "acp", "--output-format", "json"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "--output-format" in p.stderr and "Traceback" not in p.stderr
