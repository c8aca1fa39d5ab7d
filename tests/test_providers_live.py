"""Opt-in checks against the real APIs: ``AGENTLOOP_LIVE=1`` and a key, else skipped.

    AGENTLOOP_LIVE=1 OPENAI_API_KEY=... ANTHROPIC_API_KEY=... .venv/bin/python -m pytest tests/test_providers_live.py -m live

Each spends well under one US cent (``--max-usd`` is capped at 0.02 per run).
The models can be changed with ``AGENTLOOP_LIVE_OPENAI_MODEL`` and
``AGENTLOOP_LIVE_ANTHROPIC_MODEL``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.budget import Budget, usd
from agentloop.events import ModelRequest, TextDelta
from agentloop.providers import open_model
from agentloop.run import run
from agentloop.tools import tool
from agentloop.transcript import TranscriptWriter, verify_file

pytestmark = pytest.mark.live

CASES = {
    "openai": ("OPENAI_API_KEY", os.environ.get("AGENTLOOP_LIVE_OPENAI_MODEL", "gpt-4o-mini")),
    "anthropic": ("ANTHROPIC_API_KEY", os.environ.get("AGENTLOOP_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5")),
}


def _need(vendor: str) -> tuple[str, str]:
    env, model = CASES[vendor]
    if os.environ.get("AGENTLOOP_LIVE") != "1" or not os.environ.get(env):
        pytest.skip(f"live test: set AGENTLOOP_LIVE=1 and {env}")
    return os.environ[env], model


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first
        b: the second
    """
    return a + b


@pytest.mark.parametrize("vendor", sorted(CASES))
def test_live_tool_use_run_streams_records_usage_and_keeps_the_key_out(tmp_path: Path, vendor: str) -> None:
    key, name = _need(vendor)
    m = open_model(f"{vendor}:{name}")
    deltas: list[str] = []
    path = tmp_path / "live.jsonl"
    with TranscriptWriter(path) as w:
        r = run(m, [add], [{"role": "system", "content": "Use the add tool for arithmetic, then answer with the number only."},
                           {"role": "user", "content": "What is 1234 + 4321?"}],
                Budget(max_usd_micros=usd("0.02"), max_steps=4), transcript=w, max_output_tokens=200,
                observer=lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None)
    assert r.stop_reason == "no_tool_calls", r.error
    assert "5555" in r.answer and r.steps >= 2
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0 and 0 < r.spent_micros <= usd("0.02")
    assert deltas and verify_file(path).ok and key not in path.read_text()


def test_live_anthropic_count_tokens_answers_an_exact_count() -> None:
    _, name = _need("anthropic")
    m = open_model(f"anthropic:{name}")
    n = m.count_tokens(ModelRequest([{"role": "user", "content": "Hello there"}], (), 10))
    assert isinstance(n, int) and 5 <= n <= 50
