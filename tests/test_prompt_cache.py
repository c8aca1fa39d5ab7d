"""A cache-friendly system prompt: static part, cache boundary, dynamic part.

Anthropic's prompt caching reads a prefix up to a ``cache_control`` breakpoint in
the order tools, system, messages (Anthropic prompt caching docs: "Cache prefixes
are created in the following order: tools, system, then messages"). The agent's
system prompt is two messages: the static instructions (marked ``cache_boundary``,
where the adapter puts a breakpoint) and the dynamic part (working directory,
date, memory files). The fake Anthropic server (``agentloop.testing.fakeprovider``,
caching on) reports reads and writes as the API does.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from agentloop.providers.anthropic import to_anthropic
from agentloop.transcript import read_records

BENCH = Path(__file__).parent.parent / "bench" / "bench_prompt_cache.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_prompt_cache", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_breakpoint_goes_on_the_static_part_of_the_system_prompt() -> None:
    msgs = [{"role": "system", "content": "static", "cache_boundary": True}, {"role": "system", "content": "cwd and date"},
            {"role": "user", "content": "hi"}]
    system, out, _ = to_anthropic(msgs, ())
    assert [("cache_control" in b) for b in system] == [True, False]
    assert "cache_boundary" not in str(out)


def test_a_session_in_another_directory_reads_the_static_prompt_from_the_cache(tmp_path: Path) -> None:
    from agentloop.agent.agent import Agent
    from agentloop.testing.fakeprovider import FakeProvider, _State

    first_calls = []
    with FakeProvider({"replies": [{"text": "ok"}], "when_done": "repeat", "cache": True}) as fp:
        for name in ("a", "b"):
            cwd = tmp_path / name
            cwd.mkdir()
            (cwd / "AGENTS.md").write_text(f"Project {name}.\n")  # a different memory file too
            a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model="anthropic:claude-haiku-4-5", base_url=fp.url, env={})
            try:
                a.ask("hi")
            finally:
                a.close("prompt_input_exit")
            turns = [r.payload["reply"]["usage"] for r in read_records(a.session.path) if r.kind == "model_turn"]
            first_calls.append(turns[0])
        last = [r["body"] for r in fp.requests if str(r["path"]).endswith("/messages")][-1]
    assert first_calls[0]["cache_read_tokens"] == 0
    # the second directory's first call reads the tools and the first system block (the static
    # instructions, without the directory, date or memory) from the cache: the whole of that prefix
    static = _State({"replies": [], "cache": False}).anthropic_usage({"tools": last["tools"], "system": last["system"][:1], "messages": []})[0]
    assert "Working directory" not in last["system"][0]["text"]
    assert first_calls[1]["cache_read_tokens"] >= static > 0


def test_from_the_third_turn_on_at_least_90_percent_of_the_input_is_read_from_the_cache(tmp_path: Path) -> None:
    cwd, home = tmp_path / "proj", tmp_path / "home"
    os.makedirs(cwd)
    shares = _bench().shares(6, str(cwd), str(home))
    print("cache-read share by turn:", ", ".join(f"{x:.1%}" for x in shares))
    assert len(shares) == 6 and min(shares[2:]) >= 0.9
