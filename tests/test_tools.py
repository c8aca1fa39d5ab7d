"""Tools: schemas from typed functions, every validation error at once, failures as data."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.events import ToolCall
from agentloop.tools import InvalidToolSchema, Registry, Tool, ToolError, fingerprint, tool


@tool
def search(query: str, limit: int = 10, mode: Literal["fast", "deep"] = "fast", tags: list[str] | None = None) -> list[str]:
    """Search the index.

    Args:
        query: what to look for
        limit: how many results at most
    """
    return [query] * min(limit, 2)


def call(name: str, args: object) -> ToolCall:
    return ToolCall("c1", name, args)


def test_the_decorator_builds_a_schema_and_description_from_the_function() -> None:
    assert search.name == "search"
    assert search.description == "Search the index."
    s = search.parameters
    assert s["required"] == ["query"] and s["additionalProperties"] is False
    assert s["properties"]["query"] == {"type": "string", "description": "what to look for"}
    assert s["properties"]["limit"]["default"] == 10 and s["properties"]["limit"]["type"] == "integer"
    assert s["properties"]["mode"]["enum"] == ["fast", "deep"]
    assert s["properties"]["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}


def test_every_validation_error_is_reported_at_once_with_its_path() -> None:
    r = Registry([search]).invoke(call("search", {"limit": "ten", "mode": "slow", "extra": 1}))
    assert not r.ok and r.error is not None
    assert "(4 problems)" in r.error
    for needle in ("$: 'query' is a required property", "$.limit: 'ten' is not of type 'integer'", "$.mode:", "'extra'"):
        assert needle in r.error
    assert "Fix only the fields listed" in r.error  # seed 001: the model leaves the right fields alone


def test_arguments_that_are_not_an_object_are_refused() -> None:
    r = Registry([search]).invoke(call("search", ["q"]))
    assert not r.ok and "must be a JSON object" in (r.error or "")


def test_an_unknown_tool_names_the_tools_that_exist() -> None:
    r = Registry([search]).invoke(call("serch", {}))
    assert r.error == "no tool named 'serch' (have: search)"


def test_a_raising_tool_gives_the_model_a_neutral_message_and_people_the_detail() -> None:
    @tool
    def leak() -> None:
        """Fails with a secret in its message."""
        raise KeyError("sk-secret-in-the-exception")

    r = Registry([leak]).invoke(call("leak", {}))
    assert not r.ok and "sk-secret" not in (r.error or "")
    assert r.detail == {"type": "KeyError", "message": "'sk-secret-in-the-exception'"}


def test_a_tool_error_message_is_shown_to_the_model() -> None:
    @tool
    def picky(n: int) -> int:
        """Only likes 3."""
        if n != 3:
            raise ToolError("n must be 3")
        return n

    assert Registry([picky]).invoke(call("picky", {"n": 2})).error == "n must be 3"


def test_a_result_that_is_not_json_is_refused_and_the_run_can_go_on() -> None:
    @tool
    def weird() -> object:
        """Returns a set."""
        return {1, 2}

    r = Registry([weird]).invoke(call("weird", {}))
    assert not r.ok and "cannot be recorded" in (r.error or "")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "objekt"},
        {"type": "object", "properties": {"a": {"type": 5}}},
        {"type": "object", "required": "a"},
        {"minLength": -1},
    ],
)
def test_a_tool_with_an_invalid_schema_is_refused_at_registration(schema: dict[str, object]) -> None:
    with pytest.raises(InvalidToolSchema, match="invalid schema"):
        Tool("bad", "bad", schema, fn=lambda: None)


def test_explicit_schemas_with_refs_and_anyof_are_validated_in_full() -> None:
    schema = {
        "type": "object",
        "$defs": {"pos": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/pos"}, "v": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["n"],
        "additionalProperties": False,
    }
    t = Tool("t", "t", schema, fn=lambda n, v=None: n)
    reg = Registry([t])
    assert reg.invoke(call("t", {"n": 2})).ok
    bad = reg.invoke(call("t", {"n": 0, "v": 3}))
    assert "$.n: 0 is less than the minimum of 1" in (bad.error or "")
    assert "$.v:" in (bad.error or "")


def test_draft7_is_used_when_the_schema_says_so() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"xs": {"type": "array", "items": [{"type": "integer"}]}}}
    t = Tool("d7", "d7", schema, fn=lambda xs: xs)
    reg = Registry([t])
    assert reg.invoke(call("d7", {"xs": [1, "anything"]})).ok
    assert not reg.invoke(call("d7", {"xs": ["x"]})).ok


def test_an_object_schema_silent_about_extras_refuses_them() -> None:
    t = Tool("s", "s", {"type": "object", "properties": {"a": {"type": "string"}}}, fn=lambda a="": a)
    assert "'b' was unexpected" in (Registry([t]).invoke(call("s", {"b": 1})).error or "")
    open_t = Tool("o", "o", {"type": "object", "additionalProperties": True}, fn=lambda **kw: len(kw))
    assert Registry([open_t]).invoke(call("o", {"b": 1})).ok


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(InvalidToolSchema, match="already registered"):
        Registry([search, search])


def test_async_tools_run_in_both_drivers() -> None:
    import asyncio

    @tool
    async def slow(n: int) -> int:
        """Doubles n, eventually."""
        await asyncio.sleep(0)
        return 2 * n

    reg = Registry([slow])
    assert reg.invoke(call("slow", {"n": 2})).content == 4
    assert asyncio.run(reg.ainvoke(call("slow", {"n": 3}))).content == 6


def _helper(x: int) -> int:
    return x + 1


def _uses_helper(x: int) -> int:
    return _helper(x)


def test_the_fingerprint_covers_same_module_helpers() -> None:
    before = fingerprint(_uses_helper)
    global _helper
    original = _helper

    def _helper(x: int) -> int:  # noqa: F811 - redefined on purpose
        return x + 2

    try:
        assert fingerprint(_uses_helper) != before
    finally:
        _helper = original
    assert fingerprint(_uses_helper) == before


flat_schemas = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]),
            st.one_of(
                st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])}),
                st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, unique=True)}),
            ),
            max_size=4,
        ),
        "required": st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=3),
        "additionalProperties": st.just(False),
    }
)
arg_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.sampled_from(["x", "y", "q"]), st.lists(st.integers(), max_size=2))


@settings(max_examples=400, deadline=None)
@given(flat_schemas, st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), arg_values, max_size=5))
def test_the_quick_acceptor_never_accepts_what_jsonschema_rejects(schema: dict[str, object], args: dict[str, object]) -> None:
    import jsonschema

    from agentloop.tools import _quick_acceptor

    quick = _quick_acceptor(schema)
    assert quick is not None
    if quick(args):
        assert jsonschema.Draft202012Validator(schema).is_valid(args)
    t = Tool("t", "t", schema, fn=lambda **kw: None)
    assert (t.validate(args) == []) == jsonschema.Draft202012Validator(schema).is_valid(args)
