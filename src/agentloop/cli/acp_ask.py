"""The questions agentloop asks the person at the editor over ACP: permissions, and forms (AskUserQuestion and others).

Rules (pages under agentclientprotocol.com/protocol/v1):

1. A permission question is ``session/request_permission`` (tool-calls#requesting-permission)
   with the options allow once, allow always (this exact call, as the
   terminal's "always") and reject. Its tool call carries the title, kind,
   locations and input of the call, and for Write, Edit and MultiEdit the diff
   of the change (``acp_updates`` rule 2); a Bash command that would run
   outside the sandbox says so in the title. A cancelled or failed request is a
   refusal.
2. A form (AskUserQuestion's questions, ExitPlanMode's approval, an MCP
   server's elicitation: the agent's ``elicit``) goes to the editor as
   ``elicitation/create`` in form mode, tied to the session and the tool call
   (elicitation), when the client said it renders forms
   (``clientCapabilities.elicitation.form``). Accepted, its content is the
   answer; declined or cancelled, there is none.
3. A client without forms gets each question of the form as a permission
   request whose options are the answers, one option each (a choice among
   ``enum`` values, or yes and no for a boolean), plus "Decline to answer".
   A question with a free-text answer cannot be asked that way and is left
   unanswered; a declined question declines the form.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentloop.agent.pipeline import OUTSIDE_THE_SANDBOX

from .acp_updates import KINDS, ToolUpdates, locations, tool_title

__all__ = ["Asker"]

_DECLINE = "_decline"


class Asker:
    """Asks the editor on behalf of one session, from the agent's thread (the connection runs on ``loop``)."""

    def __init__(self, conn: Any, loop: asyncio.AbstractEventLoop, sid: str, cwd: str, updates: ToolUpdates,
                 forms: Callable[[], bool]):
        self.conn, self.loop, self.sid, self.cwd, self.updates, self.forms = conn, loop, sid, cwd, updates, forms

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def permission(self, call: Any, decision: Any) -> str:
        """Rule 1: ``allow``, ``always`` or ``deny``."""
        from acp.schema import PermissionOption, ToolCallUpdate

        options = [
            PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="always", name="Always allow this exact call", kind="allow_always"),
            PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
        ]
        args = call.arguments if isinstance(call.arguments, dict) else {}
        diff = self.updates.diffs.get(call.id)
        title = tool_title(call.name, args, self.cwd)
        if OUTSIDE_THE_SANDBOX in str(getattr(decision, "reason", "")):  # the question says where it would run
            title = f"{title} ({OUTSIDE_THE_SANDBOX})"
        tool_call = ToolCallUpdate(tool_call_id=call.id, title=title, kind=KINDS.get(call.name, "other"),  # type: ignore[arg-type]
                                   status="pending", raw_input=args, locations=locations(call.name, args, self.cwd),
                                   content=[diff] if diff is not None else None)
        try:
            resp = self._call(self.conn.request_permission(session_id=self.sid, tool_call=tool_call, options=options))
        except Exception:  # noqa: BLE001 - an editor that cannot answer has not allowed anything
            return "deny"
        outcome = resp.outcome
        if getattr(outcome, "outcome", None) != "selected":
            return "deny"
        return {"allow": "allow", "always": "always"}.get(outcome.option_id, "deny")

    def elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The agent's ``elicit``: the answers, or None when the person declined (rules 2 and 3)."""
        if self.forms():
            return self._form(message, schema)
        answers: dict[str, Any] = {}
        props = schema.get("properties")
        for key, prop in (props if isinstance(props, dict) else {}).items():
            if not isinstance(prop, dict):
                continue
            got = self._one(message, key, prop)
            if got is _DECLINE:
                return None
            if got is not None:
                answers[key] = got
        return answers

    def _form(self, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        from acp.schema import ElicitationFormSessionMode

        mode = ElicitationFormSessionMode.model_validate(
            {"sessionId": self.sid, "toolCallId": self.updates.current, "requestedSchema": schema})
        try:
            resp = self._call(self.conn.create_elicitation(message=message, mode=mode))
        except Exception:  # noqa: BLE001 - no answer is a declined form
            return None
        if getattr(resp, "action", None) != "accept":
            return None
        content = getattr(resp, "content", None)
        return dict(content) if isinstance(content, dict) else {}

    def _one(self, message: str, key: str, prop: dict[str, Any]) -> Any:
        """One question as a permission request (rule 3): the answer, None when it cannot be asked, or ``_DECLINE``."""
        from acp.schema import PermissionOption, ToolCallUpdate

        if prop.get("type") == "boolean":
            values: list[Any] = [True, False]
            names = ["Yes", "No"]
        elif isinstance(prop.get("enum"), list) and prop["enum"]:
            values = [str(v) for v in prop["enum"]]
            names = values
        else:
            return None
        options = [PermissionOption(option_id=f"answer-{i}", name=str(n)[:200], kind="allow_once") for i, n in enumerate(names)]
        options.append(PermissionOption(option_id=_DECLINE, name="Decline to answer", kind="reject_once"))
        title = str(prop.get("title") or message or key)
        call_id = self.updates.current or f"question-{key}"
        tool_call = ToolCallUpdate(tool_call_id=call_id, title=title[:200], kind="think", status="pending",
                                   raw_input={"question": title, "details": prop.get("description"), "answers": names})
        try:
            resp = self._call(self.conn.request_permission(session_id=self.sid, tool_call=tool_call, options=options))
        except Exception:  # noqa: BLE001 - no answer declines
            return _DECLINE
        outcome = resp.outcome
        chosen = getattr(outcome, "option_id", None) if getattr(outcome, "outcome", None) == "selected" else None
        if chosen is None or chosen == _DECLINE or not str(chosen).startswith("answer-"):
            return _DECLINE
        return values[int(str(chosen)[len("answer-"):])]
