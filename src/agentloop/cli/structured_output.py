"""``-p --json-schema SCHEMA``: the final answer as JSON that matches a JSON Schema (``structured_output``).

Claude Code's CLI reference: ``--json-schema`` gets validated JSON output
matching a JSON Schema after the agent completes its work (print mode only);
the result carries it as ``structured_output``, and the SDK's
``error_max_structured_output_retries`` subtype says it could not be had.

Rules:

1. The schema is a JSON object given on the command line, checked as a JSON
   Schema before anything runs; a bad one is a user error naming the problem.
2. The prompt is sent with one added paragraph asking for the final answer as
   a single JSON value matching the schema (the schema included).
3. The final answer is read as JSON: the whole answer, or the inside of one
   fenced code block. A value that parses and validates is ``structured_output``.
4. When it does not, the model is told the problem, in the same session, as a
   new prompt (the spend cap and turn limits hold as for any prompt), at most
   ``MAX_RETRIES`` times. Still no valid value: the result's subtype is
   ``error_max_structured_output_retries`` (an error, exit 1) and ``errors``
   names the last problem; ``result`` keeps the model's last answer. A run that
   stopped for another reason (the cap, a turn limit, a model error) is not
   retried: its own subtype stands and ``structured_output`` is absent.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ._common import UserError
from .claude_format import FINISHED

__all__ = ["MAX_RETRIES", "Schema", "parse_schema"]

MAX_RETRIES = 2
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n(.*?)\n?```", re.DOTALL)


class Schema:
    """A checked ``--json-schema`` (rule 1) and what reads an answer against it (rule 3)."""

    def __init__(self, schema: dict[str, Any]):
        import jsonschema

        self.schema = schema
        self.validator = jsonschema.Draft202012Validator(schema)

    def instructions(self) -> str:
        return ("When you have finished, give your final answer as a single JSON value, with nothing before or after it, "
                "that matches this JSON Schema:\n" + json.dumps(self.schema, ensure_ascii=False))

    def read(self, answer: str) -> tuple[Any, str | None]:
        """The answer's JSON value, or the problem that keeps it from being one that matches (rule 3)."""
        text = answer.strip()
        fenced = _FENCE.findall(text)
        candidates = [text] + ([fenced[0]] if len(fenced) == 1 else [])
        value: Any = None
        problem = "the final answer is not JSON"
        for c in candidates:
            try:
                value = json.loads(c)
            except json.JSONDecodeError:
                continue
            problem = ""
            break
        if problem:
            return None, problem
        err = next(iter(sorted(self.validator.iter_errors(value), key=lambda e: list(e.path))), None)
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "(the top)"
            return None, f"the final answer does not match the schema at {where}: {err.message}"
        return value, None


def parse_schema(text: str) -> Schema:
    """``--json-schema``'s value as a ``Schema`` (rule 1); a user error naming the problem otherwise."""
    import jsonschema

    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"--json-schema: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(obj, dict):
        raise UserError("--json-schema: a JSON Schema is a JSON object")
    try:
        jsonschema.Draft202012Validator.check_schema(obj)
    except jsonschema.SchemaError as exc:
        raise UserError(f"--json-schema: not a valid JSON Schema: {exc.message}") from None
    return Schema(obj)


def retry_prompt(problem: str, schema: Schema) -> str:
    return f"Your final answer could not be used: {problem}. {schema.instructions()}"


def combined(first: Any, later: Any) -> Any:
    """Two results of one ``-p`` prompt as one (steps, tokens and spend added; the later answer and stop)."""
    return replace(later, steps=first.steps + later.steps, usage=first.usage + later.usage, tokens=first.tokens + later.tokens,
                   spent_micros=first.spent_micros + later.spent_micros)




def settle(result: Any, schema: Schema, ask: Any) -> tuple[Any, Any, str | None]:
    """The prompt's result, its structured value and the problem left (rules 3 and 4).

    ``ask(text)`` sends another prompt in the same session and returns its result."""
    if result.stop_reason not in FINISHED:
        return result, None, None
    value, problem = schema.read(result.answer or "")
    tries = 0
    while problem is not None and tries < MAX_RETRIES:
        tries += 1
        later = ask(retry_prompt(problem, schema))
        result = combined(result, later)
        if later.stop_reason not in FINISHED:
            return result, None, None
        value, problem = schema.read(later.answer or "")
    return result, value, problem


def apply(obj: dict[str, Any], value: Any, problem: str | None) -> None:
    """The result message with ``structured_output``, or the subtype that says it could not be had (rule 4)."""
    if problem is not None:
        obj.update(subtype="error_max_structured_output_retries", is_error=True, errors=[problem])
        obj.pop("result", None)  # an error result has none (the SDK's SDKResultError)
    elif obj.get("subtype") == "success":
        obj["structured_output"] = value
