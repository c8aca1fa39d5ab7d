"""The tools that talk to the session rather than to files: TodoWrite, ExitPlanMode, AskUserQuestion.

Names and parameters are Claude Code's, so hooks and permission rules written
for it match them.

Rules:

1. TodoWrite replaces the whole task list with the one given (``content``,
   ``status`` pending / in_progress / completed, ``activeForm``) and returns
   it as the model will see it. The list lives in the ``Session`` object the
   agent keeps (``SessionLink.todos``); the REPL draws it under the working
   line and the ACP server sends it to the editor as a ``plan`` update.
2. ExitPlanMode outside plan mode says so and changes nothing. In plan mode
   it shows the plan to the user through ``SessionLink.ask`` (the REPL's form
   prompt) and, when approved, asks the agent to leave plan mode
   (``SessionLink.leave_plan``). Without anyone to ask (``-p``) the plan is
   not approved and the mode stays: the model is told to end its turn with
   the plan.
3. AskUserQuestion asks one to four questions, each with two to four options,
   through ``SessionLink.ask`` (the REPL's form; over ACP a form where the
   editor renders them, else a permission request with one option per
   answer); the answers come back as text. Without anyone
   to ask (``-p``, a sub-agent) the call is refused with what to do instead.
4. None of these writes a file or starts a process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...tools import ToolError
from .record import ToolRecord

__all__ = ["ASK_USER_QUESTION", "EXIT_PLAN_MODE", "TODO_WRITE", "SessionLink"]

Ask = Callable[[str, str, dict[str, Any]], "dict[str, Any] | None"]
"""``ask(source, message, schema) -> answers or None``: the front end's form prompt (``agent.elicit``)."""


@dataclass
class SessionLink:
    """What the session tools may reach of the agent: callables, never the agent itself."""

    ask: Callable[[], Ask | None] = lambda: None
    """The front end's form prompt now (None: nobody to ask, as in -p)."""
    plan_mode: Callable[[], bool] = lambda: False
    leave_plan: Callable[[], str] = lambda: "default"
    """Leave plan mode; returns the mode now in force."""
    todos: list[dict[str, str]] = field(default_factory=list)
    """The model's task list (rule 1)."""


_MARK = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def _todo_write(link: SessionLink, **kw: Any) -> str:
    todos = [{"content": str(t["content"]), "status": str(t["status"]), "activeForm": str(t.get("activeForm") or t["content"])}
             for t in kw["todos"]]
    link.todos[:] = todos
    if not todos:
        return "The task list is now empty."
    lines = [f"{_MARK.get(t['status'], '[ ]')} {t['content']}" for t in todos]
    doing = [t for t in todos if t["status"] == "in_progress"]
    note = ""
    if len(doing) > 1:
        note = f"\n({len(doing)} tasks are in progress; keep one in progress at a time.)"
    done = sum(t["status"] == "completed" for t in todos)
    return f"Task list updated ({done} of {len(todos)} done):\n" + "\n".join(lines) + note


def _exit_plan_mode(link: SessionLink, **kw: Any) -> str:
    plan = str(kw["plan"]).strip()
    if not plan:
        raise ToolError("the plan is empty: write the plan you want the user to approve")
    if not link.plan_mode():
        return "You are not in plan mode: there is nothing to leave. Go ahead with the work."
    ask = link.ask()
    if ask is None:
        raise ToolError(
            "There is no user here to approve the plan (a non-interactive run), so plan mode stays on and "
            "nothing may change. End your turn with the plan as your answer."
        )
    schema = {"type": "object", "properties": {"approve": {
        "type": "boolean", "title": "Leave plan mode and start on this plan?", "description": plan}}, "required": ["approve"]}
    answer = ask("plan", f"The plan:\n{plan}", schema)
    if not answer or answer.get("approve") is not True:
        raise ToolError("The user did not approve the plan; plan mode stays on. Ask what to change, or revise the plan.")
    mode = link.leave_plan()
    return f"The user approved the plan. Plan mode is off (the mode is now {mode}): start on the work."


def _ask_user_question(link: SessionLink, **kw: Any) -> str:
    questions = kw["questions"]
    ask = link.ask()
    if ask is None:
        raise ToolError(
            "There is no user to answer questions in this run (non-interactive). Choose the option that fits "
            "the request best, say which you chose and why, and go on."
        )
    props: dict[str, Any] = {}
    for i, q in enumerate(questions):
        labels = [str(o["label"]) for o in q["options"]]
        desc = "; ".join(f"{o['label']}: {o.get('description', '')}".rstrip(": ") for o in q["options"])
        if q.get("multiSelect"):
            props[f"q{i}"] = {"type": "string", "title": q["question"],
                              "description": f"One or more of: {desc} (separate them with commas), or your own answer"}
        else:
            props[f"q{i}"] = {"type": "string", "title": q["question"], "description": desc, "enum": labels}
    answer = ask("question", "The model asks:", {"type": "object", "properties": props})
    if answer is None:
        raise ToolError("The user declined to answer. Decide yourself and say what you assumed.")
    lines = [f"{q['question']} -> {answer.get(f'q{i}', '(no answer)')}" for i, q in enumerate(questions)]
    return "The user answered:\n" + "\n".join(lines)


_TODO_DOC = (
    "Keep a task list for the current work: each call replaces the whole list. Use it for work of "
    "three steps or more: add the steps, mark one in_progress before starting it and completed as "
    "soon as it is done, add tasks you discover. activeForm is the step said as it happens "
    "(\"Running the tests\"). The user sees the list."
)
_TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "description": "The task, as an order (\"Run the tests\")."},
                    "status": {"enum": ["pending", "in_progress", "completed"]},
                    "activeForm": {"type": "string", "description": "The task as it happens (\"Running the tests\")."},
                    "id": {"type": "string"},
                    "priority": {"enum": ["high", "medium", "low"]},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}
_EXIT_PLAN_DOC = (
    "In plan mode (when changing tools are refused), present the plan you have worked out to the "
    "user for approval. If approved, plan mode ends and you may make changes; if not, revise it. "
    "Use it only for plans of changes to make, not for research answers. Outside plan mode it does nothing."
)
_EXIT_PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"plan": {"type": "string", "description": "The plan, in Markdown, concise."}},
    "required": ["plan"],
    "additionalProperties": False,
}
_ASK_DOC = (
    "Ask the user one to four multiple-choice questions when a choice is theirs to make (a "
    "preference, an ambiguous requirement). Each question has two to four options; with "
    "multiSelect the user may pick several. In a non-interactive run there is no one to ask: the call "
    "is refused and you decide."
)
_ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The full question."},
                    "header": {"type": "string", "description": "A short label for it (a few words)."},
                    "options": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 4,
                        "items": {
                            "type": "object",
                            "properties": {"label": {"type": "string"}, "description": {"type": "string"}},
                            "required": ["label"],
                            "additionalProperties": False,
                        },
                    },
                    "multiSelect": {"type": "boolean", "description": "The user may pick several."},
                },
                "required": ["question", "options"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}


def _todo(ctx: Any, **kw: Any) -> str:
    return _todo_write(ctx.session, **kw)


def _exit_plan(ctx: Any, **kw: Any) -> str:
    return _exit_plan_mode(ctx.session, **kw)


def _ask(ctx: Any, **kw: Any) -> str:
    return _ask_user_question(ctx.session, **kw)


# the session's own bookkeeping: no file changes, so no permission, and plan mode lets them run (ExitPlanMode
# is how it ends); their answers are short and structured (returned as they are)
TODO_WRITE = ToolRecord("TodoWrite", _TODO_DOC, _TODO_SCHEMA, asks=False, acp="think", run=_todo, output="raw")
EXIT_PLAN_MODE = ToolRecord("ExitPlanMode", _EXIT_PLAN_DOC, _EXIT_PLAN_SCHEMA, asks=False, acp="think", run=_exit_plan,
                            output="raw")
ASK_USER_QUESTION = ToolRecord("AskUserQuestion", _ASK_DOC, _ASK_SCHEMA, asks=False, acp="think", run=_ask,
                               output="raw")
