"""RFC 8785 canonical JSON: the published vectors, and the fast path held to the reference."""

from __future__ import annotations

import enum
import json
import math
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.canonical import NotCanonicalizable, canonical, canonical_reference

VECTORS = Path(__file__).parent / "data" / "jcs-rfc8785"
CASES = sorted(p.stem for p in (VECTORS / "input").glob("*.json"))


@pytest.mark.parametrize("name", CASES)
def test_rfc8785_vector_is_reproduced_byte_for_byte(name: str) -> None:
    value = json.loads((VECTORS / "input" / f"{name}.json").read_text(encoding="utf-8"))
    expected = (VECTORS / "output" / f"{name}.json").read_bytes()
    hexed = bytes.fromhex("".join((VECTORS / "outhex" / f"{name}.txt").read_text().split()))
    assert expected == hexed
    assert canonical(value) == expected
    assert canonical_reference(value) == expected


def test_all_six_vectors_are_present() -> None:
    assert CASES == ["arrays", "french", "structures", "unicode", "values", "weird"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


def _fast_equals_reference(value: object) -> None:
    """Both paths refuse the value, or both write the same bytes."""
    try:
        ref = canonical_reference(value)
    except NotCanonicalizable:
        with pytest.raises(NotCanonicalizable):
            canonical(value)
        return
    assert canonical(value) == ref


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_fast_path_equals_the_reference_path(value: object) -> None:
    _fast_equals_reference(value)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_round_trip_to_the_same_double(x: float) -> None:
    text = canonical(x).decode()
    assert float(text) == x or (x == 0 and float(text) == 0)


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"), (0.000001, "0.000001"),
     (-0.0, "0"), (4.5, "4.5"), (1.5e300, "1.5e+300"), (2.0**53, "9007199254740992")],
)
def test_numbers_follow_ecmascript(value: float, text: str) -> None:
    assert canonical(value).decode() == text


@pytest.mark.parametrize("bad", [math.nan, math.inf, 2**53 + 1, {1: 2}, object(), "\ud800", {"\udc00": 1}, b"bytes"])
def test_values_without_a_canonical_form_are_refused(bad: object) -> None:
    with pytest.raises(NotCanonicalizable):
        canonical(bad)


@pytest.mark.parametrize(("value", "text"), [(2**53 + 2, "9007199254740994"), (10**21, "1e+21"), (-(2**60), "-1152921504606847000")])
def test_large_integers_exact_as_doubles_are_written_as_those_doubles(value: int, text: str) -> None:
    assert canonical(value).decode() == text
    # A reader holds numbers in doubles: what it parses back has the same form.
    assert canonical(json.loads(text), exact=False) == canonical(value)


def test_an_integer_a_double_cannot_hold_is_refused_when_writing_and_rounded_when_reading() -> None:
    with pytest.raises(NotCanonicalizable):
        canonical(2**53 + 1)
    assert canonical(2**53 + 1, exact=False) == b"9007199254740992"


class _Colour(enum.Enum):
    RED = 1


class _Key(str):
    pass


# The fast path's blind spots, each one a reason to fall back: keys past U+FFFF (orjson sorts by
# code point, JCS by UTF-16 unit), integers at and past 2**53, floats anywhere, tuples, subclasses
# and types orjson writes but JSON lacks (enums, UUIDs).
_awkward_keys = st.sampled_from(["", "a", "\uffff", "\ue000", "\U0001f600", "\U0001f600x", "é", "\u20ac"]) | st.text(max_size=4)
_awkward_leaves = (
    st.none() | st.booleans() | st.floats() | st.text()
    | st.sampled_from([2**53, -(2**53), 2**53 - 1, 2**53 + 1, 2**53 + 2, 2**64, -(2**63), 10**21, 0, -0.0, 1.0])
    | st.integers()
    | st.sampled_from([_Colour.RED, uuid.UUID(int=7), _Key("k"), b"x", 1 + 2j])
)
awkward_values = st.recursive(
    _awkward_leaves,
    lambda children: st.lists(children, max_size=4) | st.lists(children, max_size=3).map(tuple)
    | st.dictionaries(_awkward_keys, children, max_size=4)
    | st.dictionaries(_awkward_keys.map(_Key), children, max_size=2),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None)
@given(awkward_values)
def test_fast_path_equals_the_reference_path_on_awkward_values(value: object) -> None:
    _fast_equals_reference(value)


@pytest.mark.parametrize(
    "value",
    [{"\U0001f600": 1, "\uffff": 2}, [{"b": {"\U0001f600": 1, "\ue000": 2}}], {"a": "\U0001f600", "\ue000": 1, "\U0001f601": 2}],
)
def test_keys_past_u_ffff_sort_by_utf16_code_units(value: object) -> None:
    assert canonical(value) == canonical_reference(value)


@pytest.mark.parametrize("value", [_Colour.RED, uuid.UUID(int=7), {"k": _Colour.RED}, [uuid.UUID(int=1)]])
def test_types_orjson_writes_but_json_lacks_are_refused(value: object) -> None:
    with pytest.raises(NotCanonicalizable):
        canonical(value)


def test_strings_and_integers_skip_the_walk_but_not_the_rules() -> None:
    assert canonical("a\u2028\x1f\"") == canonical_reference("a\u2028\x1f\"")
    assert canonical(2**53) == b"9007199254740992"
    assert canonical(-(2**53)) == b"-9007199254740992"
    assert canonical(True) == b"true"
    with pytest.raises(NotCanonicalizable):
        canonical("\udfff")
