"""Settings files, agentloop's and Claude Code's, and where agentloop keeps its state.

Sources, lowest precedence first (Claude Code's order, with agentloop's own
file just above Claude Code's at each scope):

1. user: ``~/.claude/settings.json``, then ``$AGENTLOOP_HOME/settings.json``
   (``~/.agentloop`` by default);
2. shared project: ``.claude/settings.json``, then ``.agentloop/settings.json``;
3. local project: ``.claude/settings.local.json``, then
   ``.agentloop/settings.local.json`` (not committed);
4. (command-line flags, applied by the callers, beat every file above)
5. managed: ``/etc/claude-code/managed-settings.json``, when present; it beats
   the command line too.

A file reached twice (the working directory is the home folder, so
``.claude/settings.json`` is the user's own file) is read once, at the lower
scope. ``HOME`` is read from the environment given (``user_home``), so tests
and callers choose it. Each part of agentloop reads its own keys
(``permissions``, ``hooks``, ``mcpServers``, ``prices``, ``model``, ``env``...)
from the list of sources, so that it can say where a rule came from. A file
that is not a JSON object is a ``ConfigError`` naming the file and the place,
never a traceback; a bad entry inside a good file is skipped with a warning
(``agent.trust.sanitize``).

Nothing is accepted in silence, and doubt is settled on the strict side:

- A key given twice in one object is a warning naming the file and the key
  (``SettingsSource.warnings``). The later value is used, except that rules
  are never dropped that way: two ``deny`` (or ``ask``) lists, or two
  ``permissions`` objects, keep the rules of both (an ``allow`` list is the
  later one's alone).
- A ``maxUsd`` that is not an amount of dollars (NaN, Infinity, a negative
  amount, ``true``, a list...) is a ``ConfigError`` naming the file and the
  key: nothing runs rather than fall back to the default cap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ..budget import Price, PriceTable
from ..prices import default_prices

__all__ = [
    "MANAGED_SETTINGS",
    "ConfigError",
    "Sections",
    "SettingsSource",
    "agentloop_home",
    "all_settings_paths",
    "check_max_usd",
    "duplicate_keys_hook",
    "max_usd_micros",
    "load_settings",
    "prices_from_settings",
    "project_hash",
    "user_home",
]

Scope = Literal["user", "project", "local", "managed"]
Origin = Literal["agentloop", "claude"]

MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"
"""Claude Code's managed settings file on Linux: it beats every other source, the command line included."""


class ConfigError(Exception):
    """A configuration file is malformed: the message names the file and where."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


_T = TypeVar("_T")


@dataclass(frozen=True)
class Sections:
    """Sections of one source already parsed by their readers' parsers (``agent/settings_sanitizer.py``), bound to
    the very ``data`` object they were parsed from: a source whose data was replaced without binding new values
    (``dataclasses.replace``) carries none, so no reader takes a value parsed from other data."""

    of: dict[str, Any]
    values: Mapping[str, object]


@dataclass(frozen=True)
class SettingsSource:
    path: str
    scope: Scope
    data: dict[str, Any]
    origin: Origin = "agentloop"
    """Whose file it is: agentloop's own or Claude Code's."""
    warnings: tuple[str, ...] = ()
    """What reading the file noticed (a key given twice), one line each, naming the file."""
    plugin_root: str | None = None
    """A plugin's folder when the source is a plugin's ``hooks.json`` or ``.mcp.json``: its hooks get it as
    ``CLAUDE_PLUGIN_ROOT`` in their environment."""
    parsed: Sections | None = field(default=None, compare=False, repr=False)
    """What the sanitizer parsed of ``data`` (``section``): each section is parsed once, where it is read."""

    def section(self, key: str, kind: type[_T]) -> _T | None:
        """The parsed value of section ``key`` when it was parsed from this very ``data``; None: parse it now."""
        p = self.parsed
        value = p.values.get(key) if p is not None and p.of is self.data else None
        return value if isinstance(value, kind) else None

    @property
    def in_project(self) -> bool:
        """A file of the working directory (shared or local): what folder trust covers."""
        return self.scope in ("project", "local")


def written_by_commands(path: str, folders: Sequence[str]) -> bool:
    """``path`` (a settings or hooks file) lies, by real paths, inside one of ``folders`` (the workspace and the
    added directories: where sandboxed commands and the model write), but not in its ``.claude`` or
    ``.agentloop`` (with the home as the workspace: the user's own settings, read-only to commands)."""
    real = os.path.realpath(path)
    for folder in folders:
        top = os.path.realpath(folder).rstrip(os.sep) + os.sep
        if real.startswith(top) and not real.startswith((top + ".claude" + os.sep, top + ".agentloop" + os.sep)):
            return True
    return False


def agentloop_home(env: Mapping[str, str] | None = None) -> str:
    """``$AGENTLOOP_HOME``, or ``~/.agentloop``."""
    e = os.environ if env is None else env
    home = e.get("AGENTLOOP_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    return os.path.join(os.path.expanduser("~"), ".agentloop")


def user_home(env: Mapping[str, str] | None = None) -> str:
    """The user's home folder: ``$HOME`` of ``env`` (the process's when None), else the password database's."""
    e = os.environ if env is None else env
    h = e.get("HOME")
    return os.path.abspath(h) if h else os.path.expanduser("~")


def project_hash(cwd: str) -> str:
    """16 hex characters of SHA-256 of the real path: the same through any symlink."""
    import hashlib

    return hashlib.sha256(os.path.realpath(cwd).encode()).hexdigest()[:16]


MAX_CONFIG_BYTES = 4 << 20
"""A configuration file larger than this is refused (a cloned repository chooses its files)."""


def read_config_bytes(path: str) -> bytes | None:
    """The bytes of a configuration file; None when there is none.

    A FIFO or device where a settings file should be is refused at once
    rather than read (it could block or never end), and so is a file
    larger than ``MAX_CONFIG_BYTES``.

    Raises:
        ConfigError: not a regular file, too large, or unreadable.
    """
    import stat

    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    except ValueError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(path, "is not a regular file")
    if st.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(path, f"is larger than {MAX_CONFIG_BYTES >> 20} MiB")
    try:
        with open(path, "rb") as f:
            return f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None


def read_json_object(path: str, warnings: list[str] | None = None) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when the file does not exist. A key given twice adds a
    line to ``warnings`` (see the module's docstring).

    Raises:
        ConfigError: unreadable, not JSON (with line and column), or not an object.
    """
    raw = read_config_bytes(path)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"not UTF-8 text: byte {raw[exc.start]:#04x} at offset {exc.start}") from None
    return json_object(path, text, warnings)


_RULE_LISTS = ("deny", "ask")


def _merge_twice(key: str, first: Any, second: Any) -> tuple[Any, str]:
    """The value of a key given twice in one object, and what was done (module docstring)."""
    if key in _RULE_LISTS and isinstance(first, list) and isinstance(second, list):
        return first + [r for r in second if r not in first], f"the {key} rules of both are kept"
    if key == "permissions" and isinstance(first, dict) and isinstance(second, dict):
        out = dict(first)
        for k, v in second.items():
            out[k] = _merge_twice(k, first[k], v)[0] if k in first else v
        return out, "the deny and ask rules of both are kept, the rest is the later one's"
    return second, "the later value is used"


def duplicate_keys_hook(path: str, warnings: list[str] | None) -> Any:
    """The ``object_pairs_hook`` that settles a key given twice (module docstring), noting it in ``warnings``."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                out[k], how = _merge_twice(k, out[k], v)
                if warnings is not None:
                    warnings.append(f'{path}: the key "{k[:80]}" is given twice in one object; {how}')
            else:
                out[k] = v
        return out

    return hook


def json_object(path: str, text: str, warnings: list[str] | None = None) -> dict[str, Any]:
    """A configuration file's text as its JSON object ({} when blank); a ConfigError naming the
    file and the place for anything else (settings files and ``.mcp.json`` alike). A key given
    twice adds a line to ``warnings`` (module docstring)."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text, object_pairs_hook=duplicate_keys_hook(path, warnings))
    except json.JSONDecodeError as exc:
        raise ConfigError(path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(path, "not usable JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. a 5,000-digit integer, longer than Python will convert
        raise ConfigError(path, f"not usable JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(path, f"must hold a JSON object, not {json_kind(data)}")
    return data


def json_kind(v: Any) -> str:
    """What a JSON value is, in JSON's words (for messages): "an array", "a string", "null"..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number"
    )


def settings_paths(cwd: str, home: str) -> list[tuple[str, Scope]]:
    return [
        (os.path.join(home, "settings.json"), "user"),
        (os.path.join(cwd, ".agentloop", "settings.json"), "project"),
        (os.path.join(cwd, ".agentloop", "settings.local.json"), "local"),
    ]


def all_settings_paths(
    cwd: str, home: str, *, user_dir: str | None = None, managed: str | None = MANAGED_SETTINGS
) -> list[tuple[str, Scope, Origin]]:
    """Every settings file agentloop reads, lowest precedence first (see the module's docstring).

    ``user_dir`` is the user's home folder (``user_home()`` when None);
    ``managed`` the managed settings file (None: none). A path that names a
    file already listed (the same real path) is left out.
    """
    u = user_home() if user_dir is None else user_dir
    listed: list[tuple[str, Scope, Origin]] = [
        (os.path.join(u, ".claude", "settings.json"), "user", "claude"),
        (os.path.join(home, "settings.json"), "user", "agentloop"),
        (os.path.join(cwd, ".claude", "settings.json"), "project", "claude"),
        (os.path.join(cwd, ".agentloop", "settings.json"), "project", "agentloop"),
        (os.path.join(cwd, ".claude", "settings.local.json"), "local", "claude"),
        (os.path.join(cwd, ".agentloop", "settings.local.json"), "local", "agentloop"),
    ]
    if managed:
        listed.append((managed, "managed", "claude"))
    seen: set[str] = set()
    out = []
    for path, scope, origin in listed:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        out.append((path, scope, origin))
    return out


def load_settings(
    cwd: str, home: str, *, user_dir: str | None = None, managed: str | None = MANAGED_SETTINGS
) -> list[SettingsSource]:
    """Every settings file that exists, lowest precedence first.

    Raises:
        ConfigError: a file exists but is malformed.
    """
    out = []
    for path, scope, origin in all_settings_paths(cwd, home, user_dir=user_dir, managed=managed):
        warnings: list[str] = []
        data = read_json_object(path, warnings)
        if data is not None:
            check_max_usd(path, data)
            out.append(SettingsSource(path, scope, data, origin, tuple(warnings)))
    return out


def max_usd_micros(v: Any) -> int | None:
    """``maxUsd`` in micro-dollars: an amount of dollars, or None for ``"unlimited"`` (the one reading of it).

    Raises:
        ValueError: anything else (NaN, Infinity, a negative amount, a boolean, a list...).
    """
    if v == "unlimited" and isinstance(v, str):
        return None
    if not isinstance(v, (int, float, str)) or isinstance(v, bool):
        raise ValueError(f"is {json_kind(v)}, not an amount of dollars")
    from ..budget import usd

    return usd(str(v))


def check_max_usd(path: str, data: Mapping[str, Any]) -> None:
    """A settings object's ``maxUsd``, when there is one, is an amount of dollars or ``"unlimited"``.

    Raises:
        ConfigError: anything else (NaN, Infinity, a negative amount, a boolean, a list...):
            the run stops rather than fall back to a larger default cap.
    """
    if "maxUsd" not in data:
        return
    try:
        max_usd_micros(data["maxUsd"])
        return
    except ValueError as exc:
        problem = str(exc)
    raise ConfigError(
        path, f'maxUsd: {problem[:200]}; give dollars such as 0.50, or "unlimited" (nothing runs rather than fall back to the default cap)'
    )


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
