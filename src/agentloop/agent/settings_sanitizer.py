"""Settings loaded as Claude Code loads them: each source's bad entries dropped, one warning for each.

``sanitize(source)`` keeps every key agentloop honours (``HONOURED_KEYS``) in
the shape its reader expects, and drops the rest: a ``//`` comment in a
permission list, an unknown mode, a malformed hook or server, a bad price or
amount is skipped with one line naming the file and the entry, and the rest of
the file applies; every key agentloop does not read is named in one line per
file. ``restrict(source)`` is what an untrusted folder's file keeps: its deny
rules and the keys that only take power away. Folder trust (``agent/trust.py``)
decides which sources are restricted.

``hooks`` and ``permissions`` are parsed here once (each handler by
``handler_of``, each rule by ``parse_rule``) into frozen values bound to the
cleaned data (``SettingsSource.section``); the hook runner, the trust summary
and the permission policy take those values, and ``restrict`` narrows them
with the data, so a restricted source's parsed hooks are the restricted ones.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..config.settings import ConfigError, Sections, SettingsSource

__all__ = ["DROP", "HONOURED_KEYS", "RESTRICTING_KEYS", "SERVER_KEYS", "clean_servers", "placed", "printable", "restrict",
           "sanitize", "whole_text"]

HONOURED_KEYS: set[str] = {
    "$schema", "permissions", "hooks", "mcpServers", "prices", "model", "fallbackModel", "maxSteps", "maxUsd",
    "contextWindow", "sessionDurability", "toolResultCap", "loopCheckModel", "subagents", "loopThreshold", "env",
    "enabledMcpjsonServers", "disabledMcpjsonServers", "enableAllProjectMcpServers", "sandbox",
    "subagentIsolation", "allowedEnvVars", "allowManagedHooksOnly", "allowManagedPermissionRulesOnly", "statusLine",
    "strictKnownMarketplaces", "outputStyle",
    "maxOutputTokens", "alwaysThinkingEnabled", "maxThinkingTokens", "effortLevel",
    "enabledPlugins", "extraKnownMarketplaces", "apiKeyHelper",
}
"""Top-level settings keys agentloop reads. A module that reads another key adds it here; any other key is warned about."""

PERMISSION_KEYS = ("allow", "ask", "deny", "defaultMode", "additionalDirectories", "disableBypassPermissionsMode")
RESTRICTING_KEYS = frozenset({"$schema", "disabledMcpjsonServers"})
"""Top-level keys an untrusted folder keeps (with ``permissions.deny``): they only take power away."""
SERVER_KEYS = frozenset({"type", "command", "args", "env", "url", "headers", "timeout"})
"""The keys of an MCP server entry agentloop reads (``mcp.config.parse_server``)."""


def _short(v: Any, n: int = 80) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 1] + "…"


def whole_text(v: Any) -> str:
    """A value as the trust question shows it: all of it (what is approved is what runs)."""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def printable(text: str) -> str:
    """``text`` with control characters written as escapes: a file's text shown to the user stays one
    line and cannot move the cursor or recolour the terminal (a hook command with ESC sequences)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def sanitize(source: SettingsSource) -> tuple[SettingsSource, list[str]]:
    """``source`` with every bad entry taken out, and one warning for each (naming the file and the entry).

    Never raises: a file is read whole or skipped by ``load_settings``; inside
    a good file, what is wrong is dropped and the rest applies.
    """
    where = source.path
    warns: list[str] = []
    out: dict[str, Any] = {}
    parsed: dict[str, object] = {}
    ignored: list[str] = []

    def warn(place: str, problem: str, tail: str = "; skipped") -> None:
        warns.append(f"{where}: {placed(place, problem)}{tail}")

    for key, value in source.data.items():
        if key not in HONOURED_KEYS:
            ignored.append(key)
            continue
        try:
            cleaned = _CLEAN.get(key, _keep)(source, key, value, warn)
        except Exception as exc:  # a checker's bug must not stop the session
            warn(key, f"cannot be read ({type(exc).__name__}: {exc})")
            continue
        if isinstance(cleaned, Parsed):
            cleaned, parsed[key] = cleaned.value, cleaned.parsed
        if cleaned is not DROP:
            out[key] = cleaned
    if ignored:
        warns.append(f"{where}: not honoured by agentloop, ignored: {', '.join(ignored)}")
    return replace(source, data=out, parsed=Sections(out, parsed)), [printable(w) for w in warns]


DROP: Any = object()
Warn = Callable[..., None]
"""``warn(place, problem, tail="; skipped")``."""


def placed(place: str, problem: str) -> str:
    """``place: problem``, unless the problem (a loader's message) already starts with the place."""
    head = place.split(" ", 1)[0]
    return problem if problem.startswith(head) else f"{place}: {problem}"


def _keep(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    return value


def _clean_permissions(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    from .permissions.rules import MODES, Behavior, PermissionSection, Rule, RuleError, parse_rule

    if not isinstance(value, dict):
        warn("permissions", "must be an object")
        return DROP
    out: dict[str, Any] = {}
    parsed: list[tuple[Behavior, str, Rule]] = []
    for k, v in value.items():
        if k in ("allow", "ask", "deny"):
            if not isinstance(v, list):
                warn(f"permissions.{k}", "must be a list of rules")
                continue
            rules = []
            for i, text in enumerate(v):
                try:
                    rule = parse_rule(text)
                except RuleError as exc:
                    warn(f"permissions.{k}[{i}] {_short(text, 60)}", str(exc))
                    continue
                rules.append(text)
                parsed.append((k, text, rule))
            out[k] = rules
        elif k == "defaultMode":
            if v not in MODES:
                warn(f"permissions.defaultMode {_short(v)}", f"not a permission mode (one of {', '.join(MODES)})")
                continue
            out[k] = v
        elif k == "additionalDirectories":
            if not isinstance(v, list):
                warn("permissions.additionalDirectories", "must be a list of paths")
                continue
            dirs = []
            for i, d in enumerate(v):
                if not isinstance(d, str) or not d or "\x00" in d:
                    warn(f"permissions.additionalDirectories[{i}]", "must be a path")
                    continue
                dirs.append(d)
            out[k] = dirs
        elif k == "disableBypassPermissionsMode":
            if v != "disable":
                warn(f"permissions.disableBypassPermissionsMode {_short(v)}", "the only value is \"disable\"", "; ignored")
                continue
            out[k] = v
        else:
            warn(f"permissions.{k}", "not honoured by agentloop", "; ignored")
    section = PermissionSection(tuple(parsed), out.get("defaultMode"), tuple(out.get("additionalDirectories", ())),
                                out.get("disableBypassPermissionsMode") == "disable")
    return Parsed(out, section)


class Parsed:
    """A cleaned section together with its parsed value (``SettingsSource.section`` gives it to the readers)."""

    def __init__(self, value: Any, parsed: object):
        self.value, self.parsed = value, parsed


def _hook_text(h: dict[str, Any]) -> str:
    cmd = str(h.get("command", h.get("url", h.get("type", "?"))))
    return shlex.join([cmd, *map(str, h["args"])]) if isinstance(h.get("args"), list) else cmd


def _clean_hooks(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    """The hooks that load, each handler parsed once (``handler_of``) into the ``HookSection`` every reader takes."""
    from .hooks.runner import (
        HookEntry,
        HookHandler,
        HookSection,
        event_name,
        handler_of,
        matcher_of,
    )

    if not isinstance(value, dict):
        warn("hooks", "must be an object of event names")
        return DROP
    where = source.path
    entries: list[HookEntry] = []
    handlers: list[HookHandler] = []
    soft: list[str] = []
    out: dict[str, Any] = {}
    for raw, groups in value.items():
        try:
            event = event_name(raw, where)
        except ConfigError as exc:
            warn(f"hooks.{raw}", str(exc)[len(where) + 2 :])
            continue
        if not isinstance(groups, list):
            warn(f"hooks.{raw}", "must be a list of matcher groups")
            continue
        kept_groups = []
        for gi, group in enumerate(groups):
            at = f"hooks.{raw}[{gi}]"
            if not isinstance(group, dict):
                warn(at, "must be an object with \"hooks\"")
                continue
            try:
                matcher = matcher_of(group, at, where)
            except ConfigError as exc:
                warn(at, str(exc)[len(where) + 2 :])
                continue
            kept = []
            for hi, h in enumerate(group.get("hooks") or []):
                try:
                    one, more = handler_of(source, h, event, matcher, f"{at}.hooks[{hi}]")
                except ConfigError as exc:
                    warn(f"{at}.hooks[{hi}]", str(exc)[len(where) + 2 :])
                    continue
                kept.append(h)
                soft += more
                handlers += [one] if one is not None else []
                entries.append(HookEntry(raw, matcher, _hook_text(h), h["command"] if isinstance(h.get("command"), str) else None))
            kept_groups.append({**group, "hooks": kept})
        out[raw] = kept_groups
        # an event agentloop never fires is named when the hooks load, once for each handler it skips
    return Parsed(out, HookSection(tuple(entries), tuple(handlers), tuple(soft)))


def _clean_servers(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    return clean_servers(value, source.path, warn)


def clean_servers(value: Any, path: str, warn: Warn) -> Any:
    """The entries of an ``mcpServers`` object that ``parse_server`` accepts (Claude Code skips the others)."""
    from ..mcp.config import parse_server

    if not isinstance(value, dict):
        warn("mcpServers", "must be an object of server names")
        return DROP
    out = {}
    for name, entry in value.items():
        try:
            parse_server(name, entry, path)
        except ConfigError as exc:
            warn(f"mcpServers.{_short(name, 64)}", str(exc)[len(path) + 2 :])
            continue
        unknown = [k for k in entry if k not in SERVER_KEYS]
        if unknown:
            warn(f"mcpServers.{name}", f"not honoured by agentloop: {', '.join(map(str, unknown))}", "; the server loads without them")
        out[name] = entry
    return out


def _clean_prices(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    from ..config.settings import prices_from_settings

    if not isinstance(value, dict):
        warn("prices", "must be an object of model name to prices")
        return DROP
    out = {}
    for name, v in value.items():
        try:
            prices_from_settings([replace(source, data={"prices": {name: v}})])
        except ConfigError as exc:
            warn(f"prices.{_short(name, 60)}", str(exc)[len(source.path) + 2 :])
            continue
        out[name] = v
    return out


def _typed(check: Callable[[Any], bool], what: str) -> Callable[[SettingsSource, str, Any, Warn], Any]:
    def clean(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
        if not check(value):
            warn(f"{key} {_short(value, 40)}", f"must be {what}")
            return DROP
        return value

    return clean


def _usd_ok(v: Any) -> bool:
    from ..config.settings import max_usd_micros

    try:
        max_usd_micros(v)  # "unlimited": no cap, on purpose
    except ValueError:
        return False
    return True


def _clean_env(source: SettingsSource, key: str, value: Any, warn: Warn) -> Any:
    if not isinstance(value, dict):
        warn("env", "must be an object of variable names to strings")
        return DROP
    out = {}
    for k, v in value.items():
        if not k or "=" in k or "\x00" in k:
            warn(f"env.{_short(k, 40)}", "not a variable name")
            continue
        if isinstance(v, bool) or not isinstance(v, (str, int, float)) or "\x00" in str(v):
            warn(f"env.{k}", "must be a string")
            continue
        out[k] = str(v)
    return out


def _int_ok(lo: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _names_ok(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


_CLEAN: dict[str, Callable[[SettingsSource, str, Any, Warn], Any]] = {
    "permissions": _clean_permissions,
    "hooks": _clean_hooks,
    "mcpServers": _clean_servers,
    "prices": _clean_prices,
    "env": _clean_env,
    "model": _typed(lambda v: isinstance(v, str) and bool(v.strip()), "a model name"),
    "apiKeyHelper": _typed(lambda v: isinstance(v, str) and bool(v.strip()), "a shell command"),
    "fallbackModel": _typed(lambda v: isinstance(v, str) and bool(v.strip()), "a model name"),
    "loopCheckModel": _typed(lambda v: isinstance(v, str) or v is False, 'a model name, or false for no model check'),
    "maxSteps": _typed(_int_ok(1), "a whole number of at least 1"),
    "maxUsd": _typed(_usd_ok, 'an amount of dollars such as 0.50, or "unlimited"'),
    "contextWindow": _typed(_int_ok(1), "a number of tokens"),
    "toolResultCap": _typed(_int_ok(0), "a number of characters"),
    "loopThreshold": _typed(_int_ok(0), "a whole number (0 turns the check off)"),
    "sessionDurability": _typed(lambda v: v in ("flush", "fsync"), "\"flush\" or \"fsync\""),
    "subagents": _typed(lambda v: isinstance(v, bool), "true or false"),
    "enableAllProjectMcpServers": _typed(lambda v: isinstance(v, bool), "true or false"),
    "enabledMcpjsonServers": _typed(_names_ok, "a list of server names"),
    "enabledPlugins": _typed(lambda v: isinstance(v, dict), 'an object of "plugin@marketplace": true or false'),
    "extraKnownMarketplaces": _typed(lambda v: isinstance(v, dict), "an object of marketplace names and their sources"),
    "disabledMcpjsonServers": _typed(_names_ok, "a list of server names"),
}


def restrict(source: SettingsSource) -> SettingsSource:
    """What an untrusted folder's file keeps: its deny rules and the keys that only take power away.

    Decided on the parsed values too: the restricted source carries the restricted sections (no hooks), bound to
    its new data, so no reader can take the hooks parsed before (``SettingsSource.section``)."""
    from .hooks.runner import HookSection
    from .permissions.rules import PermissionSection

    data: dict[str, Any] = {k: v for k, v in source.data.items() if k in RESTRICTING_KEYS}
    perms = source.data.get("permissions")
    if isinstance(perms, dict) and isinstance(perms.get("deny"), list):
        data["permissions"] = {"deny": list(perms["deny"])}
    hooks = source.section("hooks", HookSection) or HookSection()
    kept: dict[str, object] = {"hooks": hooks.restricted()}
    perms_parsed = source.section("permissions", PermissionSection)
    if perms_parsed is not None:  # else the policy parses the deny rules kept in data
        kept["permissions"] = perms_parsed.restricted()
    return replace(source, data=data, parsed=Sections(data, kept))
