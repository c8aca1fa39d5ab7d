"""The task-file loader: good files load; any fault names the line and the field; only TaskFileError escapes."""

from __future__ import annotations

import json
import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _batch import add_task
from agentloop.batch import TaskFileError, load_tasks, parse_tasks
from agentloop.budget import Budget

LONG = bool(os.environ.get("AGENTLOOP_LONG"))


def _lines(*tasks: object) -> bytes:
    return b"".join(orjson.dumps(t) + b"\n" for t in tasks)


def test_a_good_file_loads_in_order_with_its_budgets_tools_and_script(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(_lines(add_task(1)) + b"\n" + _lines(add_task(2, budget={"max_usd": "0.25", "max_tokens": 900})))
    tasks = load_tasks(p)
    assert [t.id for t in tasks] == ["t0001", "t0002"]
    assert tasks[0].budget == Budget(max_steps=3, max_usd_micros=1_000_000)
    assert tasks[1].budget == Budget(max_tokens=900, max_usd_micros=250_000)
    assert tasks[0].tools == ("add",) and tasks[0].toolset == "demo"
    assert tasks[0].script is not None and tasks[0].script[0]["tool_calls"][0]["name"] == "add"
    assert tasks[1].line == 3
    assert tasks[0].digest != tasks[1].digest


def test_messages_and_provider_specs_load():
    t = parse_tasks(_lines({
        "id": "p1", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "model": "openai:gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "budget": {"unlimited": True},
    }))[0]
    assert t.model == "openai:gpt-4o-mini" and t.base_url == "http://127.0.0.1:9/v1" and t.script is None
    assert t.budget.is_unlimited and len(t.messages) == 2


BAD = [
    (b"{not json}\n", 1, None, "not JSON"),
    (b"[1, 2]\n", 1, None, "JSON object"),
    (_lines({**add_task(1), "modle": "x"}), 1, "modle", "not a task field"),
    (_lines({k: v for k, v in add_task(1).items() if k != "id"}), 1, "id", "required"),
    (_lines({**add_task(1), "id": "../etc"}), 1, "id", "1-128 characters"),
    (_lines(add_task(1), add_task(1)), 2, "id", "already used on line 1"),
    (_lines({k: v for k, v in add_task(1).items() if k != "prompt"}), 1, "prompt", "exactly one"),
    (_lines({**add_task(1), "messages": [{"role": "user", "content": "x"}]}), 1, "prompt", "exactly one"),
    (_lines({**{k: v for k, v in add_task(1).items() if k != "prompt"}, "messages": [{"role": "robot", "content": "x"}]}), 1, "messages[0].role", "one of"),
    (_lines({k: v for k, v in add_task(1).items() if k != "model"}), 1, "model", "required"),
    (_lines({k: v for k, v in add_task(1).items() if k != "script"}), 1, "script", "required"),
    (_lines({**add_task(1), "script": []}), 1, "script", "non-empty"),
    (_lines({**add_task(1), "script": [{"txt": "x"}]}), 1, "script[0].txt", "not a reply field"),
    (_lines({**add_task(1), "script": [{"tool_calls": [{"arguments": {}}]}]}), 1, "script[0].tool_calls[0]", "'name'"),
    (_lines({**add_task(1), "script": [{"usage": {"input_tokens": -1}}]}), 1, "script[0].usage.input_tokens", ">= 0"),
    (_lines({**add_task(1), "script": [{"delay_ms": 1.5}]}), 1, "script[0].delay_ms", "integer"),
    (_lines({k: v for k, v in add_task(1).items() if k != "budget"}), 1, "budget", "required"),
    (_lines({**add_task(1), "budget": {}}), 1, "budget", "at least one"),
    (_lines({**add_task(1), "budget": {"max_usd": 0.05}}), 1, "budget.max_usd", "as a string"),
    (_lines({**add_task(1), "budget": {"max_usd": "0.0000001"}}), 1, "budget.max_usd", "finer than one micro-dollar"),
    (_lines({**add_task(1), "budget": {"max_steps": True}}), 1, "budget.max_steps", "integer"),
    (_lines({**add_task(1), "budget": {"max_step": 3}}), 1, "budget.max_step", "not a budget field"),
    (_lines({**add_task(1), "tools": ["add", "rm_rf"]}), 1, "tools[1]", 'no tool "rm_rf"'),
    (_lines({**add_task(1), "tools": "add"}), 1, "tools", "list"),
    (_lines({**add_task(1), "toolset": "os:system"}), 1, "toolset", "unknown tool set"),
    (_lines({**add_task(1), "base_url": "http://x"}), 1, "base_url", "scripted model takes no base_url"),
    (_lines({**add_task(1), "model": "gpt 4"}), 1, "model", "provider spec"),
    (_lines({**{k: v for k, v in add_task(1).items() if k != "script"}, "model": "gemini:pro"}), 1, "model", "unknown provider 'gemini'"),
    (_lines({**{k: v for k, v in add_task(1).items() if k != "script"}, "model": "gpt-4o"}), 1, "model", "openai:gpt-4o"),
    (_lines({**add_task(1), "max_output_tokens": 0}), 1, "max_output_tokens", ">= 1"),
    (_lines({**add_task(1), "price": {"input": "1"}}), 1, "price.input", "integer"),
    (_lines(add_task(1)) + b"\xff\xfe\n", 2, None, "not JSON"),
    (b"\n  \n", 0, None, "no tasks"),
]


@pytest.mark.parametrize(("data", "line", "field", "words"), BAD, ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_a_fault_names_the_line_and_the_field(data, line, field, words):
    with pytest.raises(TaskFileError) as ei:
        parse_tasks(data, "tasks.jsonl")
    err = ei.value
    assert (err.line, err.field) == (line, field), str(err)
    assert words in str(err)
    assert str(err).startswith(f"tasks.jsonl:{line}: " if line else "tasks.jsonl: ")
    if field:
        assert f"field {field!r}" in str(err)


def test_an_unreadable_file_is_a_task_file_error(tmp_path):
    with pytest.raises(TaskFileError, match="cannot read"):
        load_tasks(tmp_path / "missing.jsonl")


def test_a_caller_named_tool_set_is_used_and_a_broken_one_is_named(tmp_path):
    t = parse_tasks(_lines({**add_task(1), "toolset": "mine", "tools": ["echo"]}), toolsets={"mine": "agentloop.demo:demo_tools"})[0]
    assert t.toolset_target == "agentloop.demo:demo_tools"
    with pytest.raises(TaskFileError, match="tool set 'broken'"):
        parse_tasks(_lines(add_task(1)), toolsets={"demo": "agentloop.demo:demo_tools", "broken": "no_such_module_x:f"})


# --- fuzzing: whatever the bytes, a list of tasks or TaskFileError -------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
_keys = st.sampled_from(["id", "prompt", "messages", "model", "script", "base_url", "budget", "tools", "toolset",
                         "sentinel", "max_output_tokens", "loop_threshold", "price", "text", "usage", "delay_ms"])


@st.composite
def _mutated(draw):
    task = add_task(draw(st.integers(0, 50)))
    for _ in range(draw(st.integers(1, 4))):
        key = draw(_keys)
        where = task
        script = task.get("script")
        if key in ("text", "usage", "delay_ms") and isinstance(script, list) and script and isinstance(script[0], dict):
            where = script[0]
        if draw(st.booleans()):
            where.pop(key, None)
        else:
            where[key] = draw(_json)
    return json.dumps(task).encode()


def _only_task_file_error(data: bytes) -> None:
    try:
        tasks = parse_tasks(data, "fuzz.jsonl")
    except TaskFileError as exc:
        assert str(exc).startswith("fuzz.jsonl")
        return
    assert tasks and all(t.id for t in tasks)


@settings(max_examples=3000 if LONG else 300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_mutated(), min_size=1, max_size=3))
def test_fuzzed_tasks_end_in_tasks_or_task_file_error(lines):
    _only_task_file_error(b"\n".join(lines))


@settings(max_examples=3000 if LONG else 300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_end_in_tasks_or_task_file_error(data):
    _only_task_file_error(data)


@settings(max_examples=2000 if LONG else 200, deadline=None)
@given(st.lists(_json, min_size=1, max_size=3))
def test_random_json_lines_end_in_tasks_or_task_file_error(values):
    _only_task_file_error(b"\n".join(json.dumps(v).encode() for v in values))
