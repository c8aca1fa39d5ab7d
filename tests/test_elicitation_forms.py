"""An MCP server's form (elicitation) shows what the user can answer: the choices of a single or
multiple choice one a line by their titles, the default and that Enter keeps it; an answer may be
the number, the title or the value, and the value is what is sent. The shapes are the MCP
specification's elicitation schemas (enum with enumNames, oneOf const/title, an array of choices)."""

from __future__ import annotations

from typing import Any

from agentloop.mcp.elicit import ask_fields

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "title": "Colour", "oneOf": [
            {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"], "default": "m"},
        "toppings": {"type": "array", "title": "Toppings", "minItems": 1,
                     "items": {"anyOf": [{"const": "ch", "title": "Cheese"}, {"const": "mu", "title": "Mushroom"},
                                         {"const": "ol", "title": "Olive"}]}},
        "count": {"type": "integer", "default": 2},
    },
    "required": ["colour", "toppings"],
}


def _answer(answers: list[str]) -> tuple[dict[str, Any] | None, list[str]]:
    asked: list[str] = []
    it = iter(answers)

    def read(q: str) -> str:
        asked.append(q)
        return next(it)

    return ask_fields(SCHEMA, read), asked


def test_choices_are_listed_by_title_and_defaults_are_shown() -> None:
    got, asked = _answer(["2", "", "Cheese, 3", ""])
    assert "1) Red" in asked[0] and "2) Green" in asked[0]
    assert "1) Small" in asked[1] and "default m: Enter keeps it" in asked[1]
    assert "1) Cheese" in asked[2] and "2) Mushroom" in asked[2] and "3) Olive" in asked[2]
    assert "one or more, separated by commas" in asked[2]
    assert "default 2" in asked[3]
    assert got == {"colour": "g", "size": "m", "toppings": ["ch", "ol"], "count": 2}


def test_a_choice_may_be_given_by_number_title_or_value_and_a_wrong_one_is_asked_again() -> None:
    got, asked = _answer(["purple", "red", "Large", "mu", "5"])
    assert len(asked) == 5 and asked[0] == asked[1]  # "purple" is no choice: asked again
    assert got == {"colour": "r", "size": "l", "toppings": ["mu"], "count": 5}


def test_a_multiple_choice_below_its_minimum_is_asked_again() -> None:
    got, asked = _answer(["r", "", "", "Olive", ""])
    assert asked[2] == asked[3] and got is not None and got["toppings"] == ["ol"]
