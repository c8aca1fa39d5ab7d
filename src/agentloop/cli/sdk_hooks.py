"""The Agent SDK's hooks: callbacks in the SDK's process, run as agentloop's own hooks are.

``initialize`` carries ``hooks``: per event, matchers each with
``hookCallbackIds`` (and a ``timeout`` in seconds). Each id becomes one
``HookHandler`` whose ``call`` sends a ``hook_callback`` control request (the
event's payload as ``input``, and its ``tool_use_id``) and takes the SDK's
answer as a command hook's JSON output: the same parser, the same rules for
what it may decide, the same records. A callback that fails or does not
answer in time is a failed handler (non-blocking, as a command that fails).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .sdk_control import ControlError

if TYPE_CHECKING:
    from agentloop.agent.hooks.runner import HandlerOutput

    from .sdk_control import ControlChannel

__all__ = ["register_callbacks"]

DEFAULT_TIMEOUT_S = 60.0
"""Claude Code's default for a hook's ``timeout`` (hooks reference, "Configuration")."""


def _caller(ch: ControlChannel, callback_id: str) -> Callable[[bytes, float], HandlerOutput]:
    from agentloop.agent.hooks.runner import HandlerOutput

    def call(data: bytes, timeout: float) -> HandlerOutput:
        payload = json.loads(data)
        body: dict[str, Any] = {"subtype": "hook_callback", "callback_id": callback_id, "input": payload}
        if isinstance(payload.get("tool_use_id"), str):
            body["tool_use_id"] = payload["tool_use_id"]
        try:
            answer = ch.request(body, timeout=timeout)
        except ControlError as exc:
            return HandlerOutput(error=f"the SDK's hook callback {callback_id}: {exc}")
        out = json.dumps(answer).encode("utf-8")
        return HandlerOutput(returncode=0, stdout=out, stdout_total=len(out))

    return call


def register_callbacks(ch: ControlChannel, config: Mapping[str, Any]) -> None:
    """Add ``initialize``'s hook callbacks to the session's hooks.

    Raises:
        ControlError: an unknown event or a malformed matcher, naming it.
    """
    from agentloop.agent.hooks.runner import ALIASES, EVENTS, HookHandler

    handlers = []
    for event, matchers in config.items():
        name = ALIASES.get(event, event)
        if name not in EVENTS:
            raise ControlError(f"initialize: hooks: unknown event {event!r}")
        if not isinstance(matchers, list):
            raise ControlError(f"initialize: hooks.{event}: must be a list of matchers")
        for i, m in enumerate(matchers):
            ids = m.get("hookCallbackIds") if isinstance(m, dict) else None
            if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
                raise ControlError(f"initialize: hooks.{event}[{i}]: hookCallbackIds must be a list of strings")
            timeout = m.get("timeout")
            seconds = float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0 else DEFAULT_TIMEOUT_S
            matcher = m.get("matcher") if isinstance(m.get("matcher"), str) else ""
            handlers += [HookHandler(event=name, matcher=matcher, command=f"sdk-callback:{cid}", timeout=seconds,
                                     source="the Agent SDK (initialize)", call=_caller(ch, cid)) for cid in ids]
    if handlers:
        ch.agent.add_hook_handlers(handlers)
