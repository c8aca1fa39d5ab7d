"""What keeps the agent's secrets out of children and tool output: the child environment and the redactor.

``SecretGuard.create`` takes the provider keys the agent holds (the model's
and its fallbacks', and ``--api-key-env``'s), the secret-looking variables of
the environment, and the names the user's settings hand to children
(``allowedEnvVars``). Children get their environment from ``child_env``
(``agent/spawn.py``); every tool result passes ``redact_result``; a call's
secret arguments join the redactor before the tool runs (``note_secret_args``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.settings import SettingsSource
from ..events import ToolCall, ToolResult
from ..tools import Tool
from . import spawn
from .sandbox.child_env import Redactor

__all__ = ["SecretGuard", "held_keys"]


def held_keys(model: Any, env: Mapping[str, str], api_key_env: str | None) -> dict[str, str]:
    """The provider keys an agent with ``model`` holds: ``{what: value}``, one entry a distinct key (a model and
    its fallbacks of one vendor with keys of their own are told apart as "... API key (2)"). The chain is
    walked as far as a provider chains fallbacks (``model_description.MAX_CHAIN``)."""
    from ..model_description import MAX_CHAIN

    out: dict[str, str] = {}
    m: Any = model
    seen = 0
    while m is not None and seen < MAX_CHAIN:
        target = getattr(m, "target", None)
        held = getattr(target, "secrets", None)
        keys = held if isinstance(held, list) else [getattr(target, "api_key", None)]
        for key in keys:  # its key, a gateway's token, secret-named headers' values
            if isinstance(key, str) and key:
                out.setdefault(key, f"{getattr(m, 'vendor', 'provider')} API key")
        m = getattr(m, "fallback", None)
        seen += 1
    if api_key_env and env.get(api_key_env):
        out.setdefault(env[api_key_env], api_key_env)
    named: dict[str, str] = {}
    for key, name in out.items():
        label, n = name, 2
        while label in named:
            label, n = f"{name} ({n})", n + 1
        named[label] = key
    return named


@dataclass(frozen=True)
class SecretGuard:
    redactor: Redactor
    allowed_env: frozenset[str]
    """Secret-named variables the user's settings hand to children (``allowedEnvVars``)."""
    env_warnings: list[str]
    """What of ``allowedEnvVars`` was not honoured."""
    child_env: spawn.ChildEnv
    """The environment every child starts from. Only this guard changes it (``carry_exports``)."""
    host_env: spawn.ChildEnv
    """``child_env`` for a process that runs on the host (a user's hook, status line, ``apiKeyHelper``): made
    from the environment without a project's ``env`` (``AgentSettings.host_env``), by the same rule."""
    held: frozenset[str] = frozenset()
    """The provider keys' values the agent holds: never in a child's environment, whatever the name."""
    dropped: frozenset[str] = frozenset()
    """The variable ``--api-key-env`` names: a provider key too."""

    @classmethod
    def create(cls, model: Any, env: Mapping[str, str], api_key_env: str | None, sources: Sequence[SettingsSource],
               host_environ: Mapping[str, str] | None = None) -> SecretGuard:
        from .sandbox.child_env import secret_env_values

        held = held_keys(model, env, api_key_env)
        redactor = Redactor(secret_env_values(env))
        redactor.add(held)
        allowed, warnings = spawn.allowed_names(sources)
        # a secret-named variable allowedEnvVars hands to children is redacted in what they print, even where
        # its name is not one the redactor's own rule (looks_secret) picks out
        redactor.add_values("a variable allowedEnvVars passes on",
                            [env[n] for n in sorted(allowed) if env.get(n) and spawn.secret_named(n)])
        dropped = frozenset([api_key_env] if api_key_env else [])
        child = spawn.environment(env, allowed=allowed, drop=dropped, held=held.values())
        host = child if host_environ is None else spawn.environment(host_environ, allowed=allowed, drop=dropped, held=held.values())
        return cls(redactor, allowed, warnings, child, host, frozenset(held.values()), dropped)

    def carry_exports(self, exports: Mapping[str, str], where: str) -> list[str]:
        """Variables set for the session's later children (what SessionStart hooks exported through
        ``CLAUDE_ENV_FILE``), added to ``child_env`` by the rule that made it (``spawn.environment``): a provider
        key, a held key's value, a secret name or a credential-shaped value ``allowedEnvVars`` does not name stays
        out, and a warning names it. A secret-named one that is allowed joins the redactor, as at ``create``.
        ``where``: what set them, for the warnings. Returns the warnings."""
        kept = spawn.environment(exports, allowed=self.allowed_env, drop=self.dropped, held=self.held)
        warnings = [f"{where}: {name} is not passed to Bash (a provider key, or a secret-named or credential-shaped "
                    "variable: name it in allowedEnvVars to pass it; a provider key never is)"
                    for name in sorted(exports) if name not in kept]
        self.redactor.add_values("a variable allowedEnvVars passes on", [v for n, v in sorted(kept.items()) if v and spawn.secret_named(n)])
        self.child_env.update(kept)
        return warnings

    def held_in_arguments(self, call: ToolCall) -> str | None:
        """The held secret a call's arguments carry, in any shape (also %-decoded once or twice), when its tool
        sends them off this machine: WebFetch, WebSearch (``lookup`` tools) and every MCP tool (a server may be
        remote, or send on what it gets). None for any other tool, or when no argument holds one."""
        from .tools.catalog import record_of

        record = record_of(call.name)
        if not (call.name.startswith("mcp__") or (record is not None and record.lookup)) or not len(self.redactor):
            return None
        from .secret_shapes import sent_forms

        for text in _strings(call.arguments):
            for form in sent_forms(text):
                name = self.redactor.found(form)
                if name is not None:
                    return name
        return None

    def redact_result(self, r: ToolResult) -> ToolResult:
        red = self.redactor
        if not len(red):
            return r
        content = _withhold_images(r.content, red)  # judged by their bytes, before any text of them is touched
        content, error = red.value(content), (red.text(r.error) if isinstance(r.error, str) else r.error)
        if content is r.content and error == r.error:
            return r
        return ToolResult(r.call_id, r.name, r.ok, content=content, error=error, detail=r.detail)

    def note_secret_args(self, t: Tool, call: ToolCall) -> None:
        """Values of a call's secret arguments: hidden from every later tool output too."""
        if not (t.sensitive or t.secret_args):
            return
        from ..redact import Policy

        found: list[str] = []
        try:
            Policy.from_manifest([t.manifest_entry()], None, 1 << 30).call_arguments(call.name, call.arguments, found)
        except ValueError:
            return
        self.redactor.add_values(f"secret argument of {call.name}", found)


def _strings(v: Any) -> list[str]:
    """Every string in a JSON value, the keys of its objects included."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in [str(k), *_strings(x)]]
    return []


def _withhold_images(v: Any, red: Redactor) -> Any:
    """``v`` with each image block (``{"type": "image", "data": BASE64}``, Read's and MCP tools') whose bytes
    hold a known secret, in any shape, replaced by a line saying so (the same object when there is none)."""
    if isinstance(v, list):
        out = [_withhold_images(x, red) for x in v]
        return v if all(a is b for a, b in zip(out, v)) else out
    if isinstance(v, dict):
        if v.get("type") == "image" and isinstance(v.get("data"), str):
            import base64
            import binascii

            try:
                raw = base64.b64decode(v["data"], validate=False)
            except (binascii.Error, ValueError):
                raw = v["data"].encode()
            name = red.found(raw)
            if name is not None:
                return {"type": "text", "text": f"[image withheld: its bytes hold a secret ({name})]"}
            return v
        d = {k: _withhold_images(x, red) for k, x in v.items()}
        return v if all(d[k] is v[k] for k in v) else d
    return v
