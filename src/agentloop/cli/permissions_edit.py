"""``/permissions allow|ask|deny RULE`` and ``/permissions remove N``: rules edited from the REPL.

Rules:

1. A rule is added to a settings file, ``.agentloop/settings.local.json`` of
   the working directory unless ``--file PATH`` names another (as Claude
   Code's ``/permissions`` writes ``.claude/settings.local.json``), and takes
   effect at once. The reply names the file.
2. The rule is checked first: a malformed one is refused and nothing is
   written. A file that is not a JSON object is left as it is and named in
   the error; the file is replaced whole (a temporary file, then a rename),
   so a crash leaves the old one or the new one.
3. ``remove N`` takes the Nth rule of ``/permissions``' list out of the rules
   in effect and out of the file it came from; a rule that came from no file
   (a flag, an "always" answer) is only taken out of this session.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloop.agent.agent import Agent

__all__ = ["PermissionEditError", "add_rule", "remove_rule"]

ORDER = {"deny": 0, "ask": 1, "allow": 2}


class PermissionEditError(Exception):
    """The edit was refused; the message says why (nothing was changed)."""


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise PermissionEditError(f"{path}: cannot read it as JSON ({exc}); left as it is") from None
    if not isinstance(data, dict) or not isinstance(data.get("permissions", {}), dict):
        raise PermissionEditError(f"{path}: not a settings object with a permissions object; left as it is")
    return data


def _write(path: str, data: dict[str, Any]) -> None:
    """Write the settings file whole: a new one (and each folder made for it) the user's alone, whatever the
    umask; an existing one keeps its mode."""
    from agentloop.config.private import private_dirs

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        private_dirs(os.path.dirname(path))
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o600
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise PermissionEditError(f"{path}: cannot write it ({exc.strerror})") from None


def _show(path: str, cwd: str) -> str:
    return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path


def add_rule(agent: Agent, behavior: str, rest: str) -> str:
    """Add ``rest`` (one rule, quoted or not, then ``--file PATH`` optionally) as a ``behavior`` rule."""
    from agentloop.agent.permissions.rules import RuleError

    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise PermissionEditError(f"{rest!r}: {exc}") from None
    path = os.path.join(agent.cwd, ".agentloop", "settings.local.json")
    if "--file" in words:
        i = words.index("--file")
        if i + 1 >= len(words):
            raise PermissionEditError("--file needs a path")
        path = os.path.join(agent.cwd, os.path.expanduser(words[i + 1]))
        words = words[:i] + words[i + 2 :]
    if len(words) != 1:
        raise PermissionEditError(f'give one rule, e.g. /permissions {behavior} "Bash(npm test:*)"')
    text = words[0]
    path = os.path.abspath(path)
    data = _read(path)
    perms = data.setdefault("permissions", {})
    current = perms.setdefault(behavior, [])
    if not isinstance(current, list):
        raise PermissionEditError(f"{path}: permissions.{behavior} is not a list; left as it is")
    if text in current:
        return f"{behavior} {text} is already in {_show(path, agent.cwd)}"
    try:
        agent.policy.add_rule(behavior, text, source=path)  # type: ignore[arg-type]  # allow, ask or deny: the command's word
    except RuleError as exc:
        raise PermissionEditError(str(exc)) from None
    current.append(text)
    try:
        _write(path, data)
    except PermissionEditError:
        agent.policy.rules.pop()  # not written: not in effect either
        raise
    return f"added {behavior} {text} to {_show(path, agent.cwd)}"


def remove_rule(agent: Agent, rest: str) -> str:
    """Remove the Nth rule of the list ``/permissions`` shows."""
    try:
        n = int(rest.strip())
    except ValueError:
        raise PermissionEditError("remove N: give the rule's number from /permissions") from None
    bound = sorted(agent.policy.rules, key=lambda b: ORDER[b.behavior])
    if not 1 <= n <= len(bound):
        raise PermissionEditError(f"remove {n}: there are {len(bound)} rules (see /permissions)")
    b = bound[n - 1]
    where = "this session only (it came from no settings file)"
    if os.path.isabs(b.source) and os.path.isfile(b.source):
        data = _read(b.source)
        listed = data.get("permissions", {}).get(b.behavior)
        if isinstance(listed, list) and b.rule.text in listed:
            listed.remove(b.rule.text)
            _write(b.source, data)
            where = _show(b.source, agent.cwd)
        else:
            where = f"this session only ({_show(b.source, agent.cwd)} no longer lists it)"
    agent.policy.rules = [x for x in agent.policy.rules if x is not b]
    return f"removed {b.behavior} {b.rule.text} from {where}"
