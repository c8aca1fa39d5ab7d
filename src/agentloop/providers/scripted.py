"""The ``scripted`` provider: a model that answers from a script, offline (``scripted:FILE``, batch
tasks, the demo and the test kit, which takes it from here).

The one scripted-model format is a JSON list of replies.

A script is a list; each reply is an object::

    {"text": "Reading it.",                                  # optional, default ""
     "tool_calls": [{"name": "Read", "arguments": {...},    # optional, default []
                     "id": "call_7"}],                      #   id optional: call_<reply>_<call>
     "usage": [120, 30],                                    # optional: [input, output] tokens,
                                                            #   or {"input_tokens", "output_tokens",
                                                            #   "cache_read_tokens", "cache_write_tokens"}
     "finish_reason": "stop",                               # optional
     "delay_ms": 40}                                        # optional: wait first (a provider's latency)

``parse_replies`` checks a decoded script and names the first problem by its
place (``script[2].tool_calls[0].name: must be a string``); ``load_script``
reads a file; ``ScriptedModel.from_script`` answers from one. ``ScriptedModel``
fails loudly both ways: a call past the end of its script is an
``UnexpectedModelCall`` (the run then stops with ``model_error`` naming it),
and ``check()`` (or leaving a ``with`` block) raises ``UnconsumedModelSteps``
when steps are left over. The fake model server (``testing.fakeprovider``)
speaks wire protocols and keeps a richer format of its own, documented there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import orjson

from ..events import ModelReply, ModelRequest, ToolCall, Usage
from ..model_description import ModelDescription
from .errors import ProviderConfigError
from .record import OpenArgs, ProviderRecord

__all__ = ["RECORD", "ScriptError", "ScriptedModel", "ScriptedReply", "UnconsumedModelSteps", "UnexpectedModelCall", "load_script", "parse_replies"]

_FIELDS = ("text", "tool_calls", "usage", "finish_reason", "delay_ms")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
MAX_DELAY_MS = 600_000


class ScriptError(ValueError):
    """A script that is not a list of replies: ``where`` names the place, the message the problem."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.problem = message


@dataclass(frozen=True)
class ScriptedReply:
    reply: ModelReply
    delay_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        """The reply in the script format, every default spelled out (ids included)."""
        out: dict[str, Any] = {"text": self.reply.text, "tool_calls": [c.to_json() for c in self.reply.tool_calls]}
        if self.reply.usage is not None:
            u = self.reply.usage.to_json()
            out["usage"] = {k: int(u.get(k, 0)) for k in _USAGE_KEYS if u.get(k)} or {"input_tokens": 0}
        if self.reply.finish_reason is not None:
            out["finish_reason"] = self.reply.finish_reason
        if self.delay_ms:
            out["delay_ms"] = self.delay_ms
        return out


def _int(v: Any, where: str) -> int:
    if type(v) is not int or v < 0:
        raise ScriptError(where, f"must be an integer >= 0, got {json.dumps(v)[:40]}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise ScriptError(where, f"must be a string, got {json.dumps(v)[:40]}")
    return v


def _usage(u: Any, where: str) -> Usage | None:
    if u is None:
        return None
    if isinstance(u, list):
        if len(u) != 2:
            raise ScriptError(where, "must be [input_tokens, output_tokens] or an object of token counts")
        return Usage(_int(u[0], f"{where}[0]"), _int(u[1], f"{where}[1]"))
    if isinstance(u, dict):
        extra = sorted(set(u) - set(_USAGE_KEYS))
        if extra:
            raise ScriptError(f"{where}.{extra[0]}", f"is not a token count ({', '.join(_USAGE_KEYS)})")
        return Usage.from_json({k: _int(n, f"{where}.{k}") for k, n in u.items()})
    raise ScriptError(where, "must be [input_tokens, output_tokens] or an object of token counts")


def _call(c: Any, where: str, i: int, j: int) -> ToolCall:
    if not isinstance(c, dict) or "name" not in c or not set(c) <= {"id", "name", "arguments"}:
        raise ScriptError(where, "must be an object with 'name', 'arguments' and an optional 'id'")
    args = c.get("arguments", {})
    try:
        orjson.dumps(args)
    except (TypeError, orjson.JSONEncodeError):
        raise ScriptError(f"{where}.arguments", "must be JSON") from None
    cid = _str(c["id"], f"{where}.id") if "id" in c else f"call_{i}_{j}"
    return ToolCall(cid, _str(c["name"], f"{where}.name"), args)


def parse_replies(data: Any, where: str = "script", *, name: str = "scripted", empty: bool = False) -> list[ScriptedReply]:
    """The replies of a decoded script, checked (``empty``: an empty list is allowed).

    Raises:
        ScriptError: not a list of replies (or an empty one); names the first bad place.
    """
    if not isinstance(data, list) or (not data and not empty):
        raise ScriptError(where, "a scripted model needs a " + ("" if empty else "non-empty ") + "list of replies")
    out: list[ScriptedReply] = []
    for i, r in enumerate(data):
        w = f"{where}[{i}]"
        if not isinstance(r, dict):
            raise ScriptError(w, f"must be an object ({', '.join(_FIELDS)})")
        extra = sorted(set(r) - set(_FIELDS))
        if extra:
            raise ScriptError(f"{w}.{extra[0]}", f"is not a reply field ({', '.join(_FIELDS)})")
        calls = r.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ScriptError(f"{w}.tool_calls", "must be a list")
        delay = _int(r.get("delay_ms", 0), f"{w}.delay_ms")
        if delay > MAX_DELAY_MS:
            raise ScriptError(f"{w}.delay_ms", f"must be at most {MAX_DELAY_MS} (ten minutes)")
        finish = r.get("finish_reason")
        reply = ModelReply(
            text=_str(r.get("text", ""), f"{w}.text"),
            tool_calls=tuple(_call(c, f"{w}.tool_calls[{j}]", i, j) for j, c in enumerate(calls)),
            usage=_usage(r.get("usage"), f"{w}.usage"),
            model=name,
            finish_reason=None if finish is None else _str(finish, f"{w}.finish_reason"),
        )
        out.append(ScriptedReply(reply, delay))
    return out


def load_script(path: str, *, name: str = "scripted") -> list[ScriptedReply]:
    """The replies of a script file (an empty list is allowed: a session that asks nothing).

    Raises:
        ScriptError: the file is unreadable, not JSON, or not a list of replies;
            ``where`` starts with the path.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise ScriptError(path, f"cannot read the scripted model: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        detail = f"line {exc.lineno}, column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ScriptError(path, f"not valid JSON at {detail}") from None
    return parse_replies(data, path, name=name, empty=True)


def replies_of(script: Sequence[ScriptedReply]) -> list[ModelReply]:
    return [s.reply for s in script]


class UnexpectedModelCall(AssertionError):
    """The model was called after its script ran out."""


class UnconsumedModelSteps(AssertionError):
    """The run ended with steps of the script never used."""


Step = Union[ModelReply, BaseException, Callable[[ModelRequest], ModelReply]]


class ScriptedModel:
    """Replies from a script, one step a call. A step may be a reply, an
    exception to raise, or a function of the request.

    ``stream="words"`` sends the text to ``request.on_text`` word by word (as a
    provider streams), ``"whole"`` in one piece. ``delays_ms`` waits before the
    reply of the same index (a provider's latency). ``from_script`` makes one
    from the script format of ``testing.script`` (``scripted:FILE``, batch
    tasks).
    """

    def __init__(
        self, steps: Sequence[Step], *, name: str = "scripted", stream: str = "whole", delays_ms: Sequence[int] = (),
    ):
        self.steps = list(steps)
        self.name = name
        self.stream = stream
        self.delays_ms = list(delays_ms)
        self.calls = 0
        self.requests: list[ModelRequest] = []
        self.overrun = False

    @classmethod
    def from_script(cls, script: Sequence[ScriptedReply], *, name: str = "scripted", stream: str = "whole") -> ScriptedModel:
        return cls([s.reply for s in script], name=name, stream=stream, delays_ms=[s.delay_ms for s in script])

    def complete(self, request: ModelRequest) -> ModelReply:
        if self.calls >= len(self.steps):
            self.overrun = True
            raise UnexpectedModelCall(f"the scripted model has {len(self.steps)} replies and was called {self.calls + 1} times")
        s = self.steps[self.calls]
        delay = self.delays_ms[self.calls] if self.calls < len(self.delays_ms) else 0
        self.calls += 1
        self.requests.append(request)
        if delay:
            time.sleep(delay / 1000)
        if isinstance(s, BaseException):
            raise s
        out = s(request) if callable(s) and not isinstance(s, ModelReply) else s
        if request.on_text is not None and isinstance(out, ModelReply) and out.text:
            if self.stream == "words":
                words = out.text.split(" ")
                for j, w in enumerate(words):
                    request.on_text(w if j == len(words) - 1 else w + " ")
            else:
                request.on_text(out.text)
        return out

    @property
    def description(self) -> ModelDescription:
        """What the drivers know of it (``model_description``): its name, the ``scripted`` provider's, nothing more."""
        return ModelDescription(self.name, "scripted")

    @property
    def remaining(self) -> int:
        return len(self.steps) - self.calls

    def check(self) -> None:
        """Raise if the script was overrun or not used up."""
        if self.overrun:
            raise UnexpectedModelCall(f"the scripted model was called past the end of its {len(self.steps)} steps")
        if self.remaining:
            raise UnconsumedModelSteps(f"{self.remaining} of {len(self.steps)} scripted steps were never used")

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.check()


def _open_scripted(record: ProviderRecord, spec: str, a: OpenArgs) -> Any:
    """``scripted:FILE`` (or a ``script`` given): a model answering from the script, in order."""
    try:
        script = parse_replies(list(a.script)) if a.script is not None else load_script(spec.partition(":")[2])
    except ScriptError as exc:
        raise ProviderConfigError(str(exc)) from None
    return ScriptedModel.from_script(script, stream=str(a.options.get("stream", "words")))


RECORD = ProviderRecord(name="scripted", wire="scripted", factory=_open_scripted, names_models=False, telemetry_name="scripted")
"""The scripted provider: ``scripted:FILE`` answers from a script, offline (tests, batch tasks, the demo)."""
