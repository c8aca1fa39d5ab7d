"""The task file: JSON Lines, one task a line, checked whole before anything runs.

A task::

    {"id": "t1", "prompt": "Add 2 and 3", "tools": ["add"],
     "budget": {"max_steps": 4, "max_usd": "0.01"},
     "model": "scripted",
     "script": [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
                 "usage": {"input_tokens": 12, "output_tokens": 8}, "delay_ms": 40},
                {"text": "5"}]}

Fields:

- ``id`` (required): 1-128 characters of ``A-Z a-z 0-9 . _ -``, not starting
  with ``.`` or ``-``; unique in the file. It names the run's files.
- ``prompt`` (a string) or ``messages`` (a list of ``{"role", "content"}``,
  role one of system/user/assistant): exactly one of them.
- ``model`` (required): ``"scripted"`` with an inline ``script`` (a non-empty
  list of replies: ``text``, ``tool_calls`` [{``name``, ``arguments``, ``id``?}],
  ``usage`` {``input_tokens``, ``output_tokens``}, ``delay_ms`` to stand for a
  provider's latency), or a provider spec such as ``"openai:gpt-4o-mini"``
  with an optional ``base_url``.
- ``budget`` (required): ``max_steps``, ``max_tokens`` (integers),
  ``max_usd`` (dollars as a string like ``"0.05"``, or an integer), or
  ``{"unlimited": true}``.
- ``tools``: names from the task's tool set; ``toolset``: the set's name
  (``"demo"`` by default: ``agentloop.demo.demo_tools``).
- ``sentinel``, ``max_output_tokens``, ``loop_threshold``, ``price``
  (micro-USD per million tokens: ``input``, ``output``, ``cache_read``,
  ``cache_write``).

Rules:

1. Any fault names the file, the line and the field, and nothing runs: the
   loader raises ``TaskFileError`` and nothing else, whatever the bytes.
2. Unknown fields are faults (a typo must not silently drop a budget).
3. Tool sets are chosen by name from a table the caller passes in, never by an
   import path written in the file.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..budget import Budget, Price, usd
from ..tools import Registry

__all__ = ["DEFAULT_TOOLSETS", "Task", "TaskFileError", "check_startable", "load_tasks", "parse_tasks"]

DEFAULT_TOOLSETS: dict[str, str] = {"demo": "agentloop.demo:demo_tools", "none": ""}
"""Tool-set name -> ``module:function`` returning a ``Registry`` ("" = no tools)."""

_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_SPEC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")
_FIELDS = frozenset(
    (
        "id", "prompt", "messages", "model", "script", "base_url", "budget", "tools", "toolset",
        "sentinel", "max_output_tokens", "loop_threshold", "price",
    )
)
_ROLES = ("system", "user", "assistant")
_MAX_INT = 2**53


class TaskFileError(ValueError):
    """The task file cannot be used: ``str()`` names the file, line and field."""

    def __init__(self, path: str, line: int, field: str | None, message: str):
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        where = f"{path}:{line}" if line else path
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


@dataclass(frozen=True)
class Task:
    """One validated task. Plain data: it crosses process and node boundaries."""

    id: str
    messages: tuple[dict[str, Any], ...]
    model: str
    budget: Budget
    line: int
    script: tuple[dict[str, Any], ...] | None = None
    base_url: str | None = None
    tools: tuple[str, ...] = ()
    toolset: str = "demo"
    toolset_target: str = "agentloop.demo:demo_tools"
    sentinel: str | None = None
    max_output_tokens: int = 1024
    loop_threshold: int | None = None
    price: Price | None = None
    digest: str = ""
    """SHA-256 of the task's line as sorted-key JSON: a changed task is redone on resume."""

    @property
    def is_scripted(self) -> bool:
        return self.script is not None


class _Bad(Exception):
    def __init__(self, field: str | None, message: str):
        self.field = field
        self.message = message


def _int(v: Any, name: str, *, low: int = 0) -> int:
    if type(v) is not int or v < low or v > _MAX_INT:
        raise _Bad(name, f"must be an integer >= {low}, got {_show(v)}")
    return v


def _str(v: Any, name: str, *, empty: bool = False) -> str:
    if not isinstance(v, str) or (not empty and not v):
        raise _Bad(name, f"must be a {'' if empty else 'non-empty '}string, got {_show(v)}")
    return v


def _show(v: Any) -> str:
    text = orjson.dumps(v).decode() if v is None or isinstance(v, (bool, int, float, str)) else type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _budget(v: Any) -> Budget:
    if not isinstance(v, dict):
        raise _Bad("budget", f"must be an object, got {_show(v)}")
    extra = set(v) - {"max_steps", "max_tokens", "max_usd", "unlimited"}
    if extra:
        raise _Bad(f"budget.{sorted(extra)[0]}", "is not a budget field (max_steps, max_tokens, max_usd, unlimited)")
    if "unlimited" in v:
        if v["unlimited"] is not True or len(v) > 1:
            raise _Bad("budget.unlimited", "must be true and alone in the budget")
        return Budget.unlimited()
    steps = _int(v["max_steps"], "budget.max_steps") if "max_steps" in v else None
    tokens = _int(v["max_tokens"], "budget.max_tokens") if "max_tokens" in v else None
    micros = None
    if "max_usd" in v:
        m = v["max_usd"]
        if isinstance(m, float) or not isinstance(m, (str, int)) or isinstance(m, bool):
            raise _Bad("budget.max_usd", f"write dollars as a string such as \"0.05\" (got {_show(m)})")
        try:
            micros = usd(m)
        except ValueError as exc:
            raise _Bad("budget.max_usd", str(exc)) from None
        if micros > _MAX_INT:
            raise _Bad("budget.max_usd", "is too large")
    if steps is None and tokens is None and micros is None:
        raise _Bad("budget", "needs at least one of max_steps, max_tokens, max_usd (or \"unlimited\": true)")
    return Budget(max_steps=steps, max_tokens=tokens, max_usd_micros=micros)


def _messages(obj: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    has_p, has_m = "prompt" in obj, "messages" in obj
    if has_p == has_m:
        raise _Bad("prompt", "give exactly one of 'prompt' and 'messages'")
    if has_p:
        return ({"role": "user", "content": _str(obj["prompt"], "prompt")},)
    ms = obj["messages"]
    if not isinstance(ms, list) or not ms:
        raise _Bad("messages", "must be a non-empty list of {\"role\", \"content\"}")
    out = []
    for i, m in enumerate(ms):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _Bad(where, "must be an object with 'role' and 'content'")
        if set(m) != {"role", "content"}:
            raise _Bad(where, "must have exactly the keys 'role' and 'content'")
        if m["role"] not in _ROLES:
            raise _Bad(f"{where}.role", f"must be one of {', '.join(_ROLES)}, got {_show(m['role'])}")
        out.append({"role": m["role"], "content": _str(m["content"], f"{where}.content", empty=True)})
    return tuple(out)


def _script(v: Any) -> tuple[dict[str, Any], ...]:
    """The task's inline script, checked, every default spelled out (``providers/scripted.py``)."""
    from ..providers.scripted import ScriptError, parse_replies

    try:
        return tuple(r.to_json() for r in parse_replies(v, "script"))
    except ScriptError as exc:
        raise _Bad(exc.where, exc.problem) from None


def _price(v: Any) -> Price:
    if not isinstance(v, dict) or not set(v) <= {"input", "output", "cache_read", "cache_write"}:
        raise _Bad("price", "must be an object of input, output, cache_read, cache_write (micro-USD per Mtok)")
    for k, n in v.items():
        _int(n, f"price.{k}")
    return Price.from_json(v)


def _check_spec(model: str) -> None:
    try:
        from ..providers import ProviderConfigError, parse_spec
    except ImportError:  # pragma: no cover - the providers are part of the package
        return
    try:
        parse_spec(model)
    except ProviderConfigError as exc:
        raise _Bad("model", str(exc).replace("--model ", "")) from None


def _task(obj: Any, line: int, toolsets: Mapping[str, str], tool_names: Mapping[str, frozenset[str]]) -> Task:
    if not isinstance(obj, dict):
        raise _Bad(None, f"a task is a JSON object, not {type(obj).__name__ if obj is not None else 'null'}")
    extra = set(obj) - _FIELDS
    if extra:
        raise _Bad(sorted(extra)[0], f"is not a task field ({', '.join(sorted(_FIELDS))})")
    if "id" not in obj:
        raise _Bad("id", "is required")
    tid = obj["id"]
    if not isinstance(tid, str) or not _ID.fullmatch(tid):
        raise _Bad("id", f"must be 1-128 characters of A-Z a-z 0-9 . _ - not starting with . or - (got {_show(tid)})")
    messages = _messages(obj)
    if "model" not in obj:
        raise _Bad("model", "is required: \"scripted\" (with a script) or a provider spec such as \"openai:gpt-4o-mini\"")
    model = _str(obj["model"], "model")
    script = None
    base_url = None
    from ..providers.scripted import RECORD as SCRIPTED

    if model == SCRIPTED.name:
        if "script" not in obj:
            raise _Bad("script", "is required when model is \"scripted\"")
        if "base_url" in obj:
            raise _Bad("base_url", "a scripted model takes no base_url")
        script = _script(obj["script"])
    else:
        if not _SPEC.fullmatch(model):
            raise _Bad("model", f"is not a provider spec such as \"openai:gpt-4o-mini\" (got {_show(model)})")
        _check_spec(model)
        if "script" in obj:
            raise _Bad("script", "only a \"scripted\" model takes a script")
        if "base_url" in obj:
            base_url = _str(obj["base_url"], "base_url")
            if not re.fullmatch(r"https?://[^\s]+", base_url):
                raise _Bad("base_url", f"must be an http(s) URL, got {_show(base_url)}")
    if "budget" not in obj:
        raise _Bad("budget", "is required (say {\"unlimited\": true} if you mean it)")
    budget = _budget(obj["budget"])
    toolset = _str(obj.get("toolset", "demo"), "toolset")
    if toolset not in toolsets:
        raise _Bad("toolset", f"unknown tool set {_show(toolset)}; known: {', '.join(sorted(toolsets))}")
    tools = obj.get("tools", [])
    if not isinstance(tools, list):
        raise _Bad("tools", "must be a list of tool names")
    known = tool_names[toolset]
    for i, name in enumerate(tools):
        _str(name, f"tools[{i}]")
        if name not in known:
            raise _Bad(f"tools[{i}]", f"no tool {_show(name)} in tool set {toolset!r}; it has: {', '.join(sorted(known)) or 'none'}")
    if len(set(tools)) != len(tools):
        raise _Bad("tools", "names a tool twice")
    sentinel = None
    if obj.get("sentinel") is not None:
        sentinel = _str(obj["sentinel"], "sentinel")
    mot = _int(obj.get("max_output_tokens", 1024), "max_output_tokens", low=1)
    lt = None
    if obj.get("loop_threshold") is not None:
        lt = _int(obj["loop_threshold"], "loop_threshold", low=1)
    price = _price(obj["price"]) if "price" in obj else None
    return Task(
        id=tid, messages=messages, model=model, budget=budget, line=line, script=script, base_url=base_url,
        tools=tuple(tools), toolset=toolset, toolset_target=toolsets[toolset], sentinel=sentinel,
        max_output_tokens=mot, loop_threshold=lt, price=price,
        digest=hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest(),
    )


_REGISTRIES: dict[str, Registry] = {}


def load_registry(target: str) -> Registry:
    """The ``Registry`` that ``module:function`` returns (cached per process)."""
    if not target:
        return Registry()
    reg = _REGISTRIES.get(target)
    if reg is None:
        mod, _, fn = target.partition(":")
        obj = getattr(importlib.import_module(mod), fn)()
        if not isinstance(obj, Registry):
            raise TypeError(f"{target} returned a {type(obj).__name__}, not a Registry")
        reg = _REGISTRIES[target] = obj
    return reg


def _tool_names(target: str) -> frozenset[str]:
    if not target:
        return frozenset()
    return frozenset(load_registry(target).names())


def parse_tasks(data: bytes, path: str = "<tasks>", toolsets: Mapping[str, str] | None = None) -> list[Task]:
    """Parse and check a whole task file.

    Blank lines are skipped. Returns the tasks in file order.
    Raises:
        TaskFileError: the first fault, naming the line and the field.
    """
    sets = dict(DEFAULT_TOOLSETS if toolsets is None else toolsets)
    names: dict[str, frozenset[str]] = {}
    for name, target in sets.items():
        try:
            names[name] = _tool_names(target)
        except Exception as exc:  # a broken tool set is the caller's mistake, named as such
            raise TaskFileError(path, 0, None, f"tool set {name!r} ({target}) cannot be loaded: {type(exc).__name__}: {exc}") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise TaskFileError(path, n, None, f"not JSON: {exc}") from None
        try:
            task = _task(obj, n, sets, names)
        except _Bad as bad:
            raise TaskFileError(path, n, bad.field, bad.message) from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:  # a net under the checks above
            raise TaskFileError(path, n, None, f"invalid task ({type(exc).__name__}: {exc})") from None
        if task.id in seen:
            raise TaskFileError(path, n, "id", f"{task.id!r} was already used on line {seen[task.id]}")
        seen[task.id] = n
        tasks.append(task)
    if not tasks:
        raise TaskFileError(path, 0, None, "holds no tasks")
    return tasks


def load_tasks(path: str | os.PathLike[str], toolsets: Mapping[str, str] | None = None) -> list[Task]:
    """Read and check a task file (see the module docstring for the format).

    Raises:
        TaskFileError: the file is unreadable or any task has a fault.
    """
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TaskFileError(p, 0, None, f"cannot read: {exc.strerror or exc}") from None
    return parse_tasks(data, p, toolsets)


def check_startable(tasks: list[Task], path: str, env: Mapping[str, str]) -> None:
    """Every provider task can start here: its provider has a key (in ``env``) or the task a base URL.

    Checked for the whole file before anything runs, once per distinct
    (model, base URL); no request is made.

    Raises:
        TaskFileError: the first task that cannot start, with how many more cannot.
    """
    from ..providers import open_model
    from ..providers.errors import ProviderConfigError

    seen: dict[tuple[str, str | None], str | None] = {}
    bad: list[tuple[Task, str]] = []
    for t in tasks:
        if t.script is not None:
            continue
        spec = (t.model, t.base_url)
        if spec not in seen:
            try:
                model = open_model(t.model, base_url=t.base_url, env=env)
                close = getattr(model, "close", None)
                if callable(close):
                    close()
                seen[spec] = None
            except ProviderConfigError as exc:
                seen[spec] = str(exc)
        why = seen[spec]
        if why is not None:
            bad.append((t, why))
    if bad:
        first, why = bad[0]
        more = f" (and {len(bad) - 1} more tasks cannot start)" if len(bad) > 1 else ""
        raise TaskFileError(path, first.line, "model", f"cannot start: {why}{more}")
