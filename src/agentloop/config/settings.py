"""Settings files, in Claude Code's layout, and where agentloop keeps its state.

Sources, lowest precedence first: the user's ``$AGENTLOOP_HOME/settings.json``
(``~/.agentloop`` by default), the project's ``.agentloop/settings.json``, and
``.agentloop/settings.local.json`` (not committed). Each part of agentloop reads
its own keys (``permissions``, ``hooks``, ``mcpServers``, ``prices``, ``model``,
``env``...) from the list of sources, so that it can say where a rule came from.
A file that is not a JSON object is a ``ConfigError`` naming the file and the
place, never a traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..budget import Price, PriceTable
from ..prices import default_prices

__all__ = ["ConfigError", "prices_from_settings", "SettingsSource", "agentloop_home", "load_settings", "project_hash"]

Scope = Literal["user", "project", "local"]


class ConfigError(Exception):
    """A configuration file is malformed: the message names the file and where."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class SettingsSource:
    path: str
    scope: Scope
    data: dict[str, Any]


def agentloop_home(env: Mapping[str, str] | None = None) -> str:
    """``$AGENTLOOP_HOME``, or ``~/.agentloop``."""
    e = os.environ if env is None else env
    home = e.get("AGENTLOOP_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    return os.path.join(os.path.expanduser("~"), ".agentloop")


def project_hash(cwd: str) -> str:
    """16 hex characters of SHA-256 of the real path: the same through any symlink."""
    import hashlib

    return hashlib.sha256(os.path.realpath(cwd).encode()).hexdigest()[:16]


def read_json_object(path: str) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when the file does not exist.

    Raises:
        ConfigError: unreadable, not JSON (with line and column), or not an object.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, or nesting past the parser's depth
        raise ConfigError(path, f"cannot be read as JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(path, f"must hold a JSON object, not a {type(data).__name__}")
    return data


def settings_paths(cwd: str, home: str) -> list[tuple[str, Scope]]:
    return [
        (os.path.join(home, "settings.json"), "user"),
        (os.path.join(cwd, ".agentloop", "settings.json"), "project"),
        (os.path.join(cwd, ".agentloop", "settings.local.json"), "local"),
    ]


def load_settings(cwd: str, home: str) -> list[SettingsSource]:
    """Every settings file that exists, lowest precedence first.

    Raises:
        ConfigError: a file exists but is malformed.
    """
    out = []
    for path, scope in settings_paths(cwd, home):
        data = read_json_object(path)
        if data is not None:
            out.append(SettingsSource(path, scope, data))
    return out


def merged(sources: list[SettingsSource], key: str) -> Any:
    """The value of a top-level key, the highest-precedence source winning."""
    value = None
    for s in sources:
        if key in s.data:
            value = s.data[key]
    return value


def prices_from_settings(sources: Iterable[Any], base: PriceTable | None = None) -> PriceTable:
    """The built-in table with every settings file's ``"prices"`` laid over it, lowest precedence first.

    Each file adds or replaces models one by one (a project file that prices
    one model keeps the user file's others). ``sources`` are
    ``SettingsSource`` values (``load_settings``).

    Raises:
        ConfigError: a ``prices`` value is not an object of model to prices,
            naming the file and the model.
    """
    table = base if base is not None else default_prices()
    for src in sources:
        obj = src.data.get("prices")
        if obj is None:
            continue
        if not isinstance(obj, Mapping):
            raise ConfigError(src.path, '"prices" must be an object of model name to prices')
        layer: dict[str, Price] = {}
        for name, v in obj.items():
            if not isinstance(v, Mapping):
                raise ConfigError(src.path, f'prices.{name}: must be an object like {{"input": 3000000, "output": 15000000}}')
            if not {"input", "output"} <= set(v):
                raise ConfigError(src.path, f'prices.{name}: needs "input" and "output" (micro-USD per million tokens)')
            try:
                layer[str(name)] = Price.from_json(v)
            except ValueError as exc:
                raise ConfigError(src.path, f"prices.{name}: {exc}") from None
        table = table.merged(layer)
    return table
