"""``run`` and ``arun`` declare the keywords they share once (``RunOptions``): the same names reach both, a
name neither takes is the caller's mistake, said as Python says it, and each driver keeps only its own
``executor``."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from agentloop import Budget, MemoryTranscript
from agentloop.run import RunOptions, arun, run
from agentloop.testing import ScriptedModel, reply


def test_run_and_arun_share_one_declaration_of_their_keywords() -> None:
    for driver in (run, arun):
        params = inspect.signature(driver).parameters
        assert list(params) == ["model", "tools", "messages", "budget", "executor", "options"]
        assert params["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert {"transcript", "observer", "prepare", "max_parallel", "tools_changed", "config"} <= RunOptions.__optional_keys__


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_keyword_neither_driver_takes_is_a_type_error_naming_it(driver: str) -> None:
    model = ScriptedModel([reply("hi")])
    with pytest.raises(TypeError, match="unexpected keyword argument 'transcipt'"):
        if driver == "run":
            run(model, [], "hello", Budget(max_steps=2), transcipt=MemoryTranscript())  # type: ignore[call-arg]
        else:
            asyncio.run(arun(model, [], "hello", Budget(max_steps=2), transcipt=MemoryTranscript()))  # type: ignore[call-arg]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_the_shared_keywords_reach_either_driver(driver: str) -> None:
    t = MemoryTranscript()
    kw: RunOptions = {"transcript": t, "run_id": "same", "max_output_tokens": 64}
    model = ScriptedModel([reply("hi", usage=(1, 1))])
    res = run(model, [], "hello", Budget(max_steps=2), **kw) if driver == "run" else asyncio.run(
        arun(model, [], "hello", Budget(max_steps=2), **kw))
    assert res.answer == "hi"
    start = next(r for r in t.records if r.kind == "run_start")
    assert start.payload["config"]["run_id"] == "same" and start.payload["config"]["max_output_tokens"] == 64
