"""Custom slash commands (Markdown prompt templates) and skills (folders with a SKILL.md).

Rules:

1. Commands are ``*.md`` files under ``<home>/commands/`` (the user's),
   ``<cwd>/.claude/commands/`` (for Claude Code compatibility) and
   ``<cwd>/.agentloop/commands/``; a later place overrides an earlier one
   with the same name. ``sub/name.md`` becomes ``/sub:name``.
2. A template may start with front matter (``---`` lines) giving
   ``description`` and ``argument-hint``; without a description, the first
   line of the body is used. ``render`` puts the arguments in place of
   ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$1``..``$9`` (split like a shell);
   a template with no placeholder gets the arguments appended.
3. Skills are folders ``skills/<name>/SKILL.md`` in the same three places.
   Only their names and descriptions go into the context
   (``render_skill_index``); the body is read when the model (the ``Skill``
   tool) or the user (``/name``) loads it.
4. Front matter is a small YAML subset (``key: value``, quoted strings,
   ``[a, b]`` lists, indented continuation lines), parsed here rather than
   pulling in PyYAML for three keys. A broken header is treated as body text,
   never as an error that stops the agent from starting.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..tools import Tool, ToolError

__all__ = [
    "Command",
    "Skill",
    "load_commands",
    "load_skills",
    "parse_front_matter",
    "render_skill_index",
    "skill_tool",
    "substitute",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
MAX_TEMPLATE_BYTES = 256_000
_PLACEHOLDER = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$([1-9])(?![0-9])|\$ARGUMENTS")


def _unquote(v: str) -> Any:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        inner = v[1:-1]
        if v[0] == '"':
            inner = inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        else:
            inner = inner.replace("''", "'")
        return inner
    if v.startswith("[") and v.endswith("]"):
        return [_unquote(x) for x in v[1:-1].split(",") if x.strip()]
    if v in ("true", "false"):
        return v == "true"
    return v


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; ({}, text) when there is no valid header."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    end = None
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            end = i
            break
    if end is None:
        return {}, text
    meta: dict[str, Any] = {}
    key: str | None = None
    block: str | None = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            if block is not None and key is not None:
                meta[key] += "\n"
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_\-]*)\s*:(.*)$", line)
        if m and not line[0].isspace():
            key = m.group(1)
            value = m.group(2).strip()
            if value in ("|", ">", "|-", ">-", "|+", ">+"):
                block = value[0]
                meta[key] = ""
            else:
                block = None
                meta[key] = _unquote(value)
            continue
        if key is None:
            return {}, text
        cont = line.strip()
        if block is not None:
            sep = "\n" if block == "|" else " "
            meta[key] = (meta[key] + sep + cont) if meta[key] else cont
        elif isinstance(meta[key], list):
            if cont.startswith("- "):
                meta[key].append(_unquote(cont[2:]))
        elif cont.startswith("- ") and meta[key] == "":
            meta[key] = [_unquote(cont[2:])]
        else:
            meta[key] = f"{meta[key]} {cont}".strip()
    body = "\n".join(lines[end + 1 :])
    return meta, body.lstrip("\n")


def _first_line(body: str) -> str:
    for line in body.splitlines():
        s = line.strip().lstrip("#").strip()
        if s:
            return s[:120]
    return ""


def _hint(value: Any) -> str:
    """``argument-hint: [env]`` reads as a YAML list; show it as it was written."""
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value or "")


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TEMPLATE_BYTES + 1)
    except OSError:
        return None
    return data[:MAX_TEMPLATE_BYTES].decode("utf-8", "replace")


def _places(cwd: str, home: str, kind: str) -> list[tuple[str, str]]:
    return [
        (os.path.join(home, kind), "user"),
        (os.path.join(cwd, ".claude", kind), "project"),
        (os.path.join(cwd, ".agentloop", kind), "project"),
    ]


def substitute(template: str, arguments: str) -> str:
    """``template`` with ``arguments`` in place of ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$1``..``$9``.

    Positional arguments are split like a shell. Substitution is one pass, so
    arguments that contain placeholders are not substituted again. A template
    without placeholders gets ``ARGUMENTS: ...`` appended.
    """
    arguments = arguments.strip()
    try:
        positional = shlex.split(arguments)
    except ValueError:
        positional = arguments.split()
    used = False

    def sub(m: re.Match[str]) -> str:
        nonlocal used
        used = True
        if m.group(1) is not None:
            k = int(m.group(1))
        elif m.group(2) is not None:
            k = int(m.group(2)) - 1
        else:
            return arguments
        return positional[k] if k < len(positional) else ""

    out = _PLACEHOLDER.sub(sub, template)
    if not used and arguments:
        out = f"{out.rstrip()}\n\nARGUMENTS: {arguments}"
    return out


@dataclass(frozen=True)
class Command:
    """A slash command from a Markdown template."""

    name: str
    path: str
    template: str
    """The body after the front matter."""
    description: str
    argument_hint: str = ""
    scope: str = "project"
    """``user`` or ``project``."""
    meta: dict[str, Any] = field(default_factory=dict)

    def render(self, arguments: str) -> str:
        """The prompt with ``arguments`` substituted for ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$1``..``$9``."""
        return substitute(self.template, arguments)


def load_commands(cwd: str, home: str) -> dict[str, Command]:
    """The custom slash commands visible from ``cwd``; ``home`` is agentloop's home.

    A project command overrides a user command of the same name, and
    ``.agentloop/commands`` overrides ``.claude/commands``.
    """
    out: dict[str, Command] = {}
    for root, scope in _places(cwd, home, "commands"):
        if not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = os.path.relpath(dirpath, root)
            prefix = "" if rel == os.curdir else rel.replace(os.sep, ":") + ":"
            for fn in sorted(filenames):
                if not fn.endswith(".md"):
                    continue
                stem = fn[:-3]
                if not _NAME.match(stem):
                    continue
                path = os.path.join(dirpath, fn)
                text = _read(path)
                if text is None:
                    continue
                meta, body = parse_front_matter(text)
                desc = meta.get("description")
                name = prefix + stem
                out[name] = Command(
                    name=name,
                    path=path,
                    template=body,
                    description=str(desc) if desc else _first_line(body),
                    argument_hint=_hint(meta.get("argument-hint")),
                    scope=scope,
                    meta=meta,
                )
    return out


@dataclass(frozen=True)
class Skill:
    """A skill: a folder holding SKILL.md (and any files it refers to)."""

    name: str
    description: str
    path: str
    """The SKILL.md file."""
    scope: str = "project"

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)

    def body(self) -> str:
        """The instructions, read now (after the front matter), with the folder named for relative paths.

        Raises:
            ToolError: the file can no longer be read.
        """
        text = _read(self.path)
        if text is None:
            raise ToolError(f"the skill {self.name!r} cannot be read from {self.path}")
        _meta, body = parse_front_matter(text)
        return f"Skill {self.name} (files in {self.directory}):\n\n{body.strip()}\n"

    def render(self, arguments: str) -> str:
        """The body as a prompt, with the arguments substituted as in a command (or appended)."""
        return substitute(self.body(), arguments)


def load_skills(cwd: str, home: str) -> dict[str, Skill]:
    """The skills visible from ``cwd`` (same places and precedence as commands)."""
    out: dict[str, Skill] = {}
    for root, scope in _places(cwd, home, "skills"):
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry, "SKILL.md")
            if not os.path.isfile(path):
                continue
            text = _read(path)
            if text is None:
                continue
            meta, body = parse_front_matter(text)
            name = str(meta.get("name") or entry).strip()
            if not _NAME.match(name):
                name = entry
            desc = str(meta.get("description") or _first_line(body))
            out[name] = Skill(name=name, description=" ".join(desc.split()), path=path, scope=scope)
    return out


def render_skill_index(skills: dict[str, Skill]) -> str:
    """The names and descriptions of the skills, for the system prompt ("" when none)."""
    if not skills:
        return ""
    lines = [
        "Skills are available. Each is a set of instructions; load one with the Skill tool "
        "when the task matches its description:"
    ]
    for s in skills.values():
        lines.append(f"- {s.name}: {s.description}")
    return "\n".join(lines) + "\n"


def skill_tool(skills: dict[str, Skill]) -> Tool:
    """A read-only ``Skill`` tool ({skill}) that returns a skill's instructions."""

    def load(**kw: Any) -> str:
        name = str(kw["skill"]).lstrip("/")
        skill = skills.get(name)
        if skill is None:
            have = ", ".join(sorted(skills)) or "none"
            raise ToolError(f"no skill named {name!r} (have: {have})")
        return skill.body()

    return Tool(
        name="Skill",
        description="Load a skill's instructions by name (the list of skills is in the system prompt).",
        parameters={
            "type": "object",
            "properties": {"skill": {"type": "string", "description": "The skill's name."}},
            "required": ["skill"],
            "additionalProperties": False,
        },
        fn=load,
        read_only=True,
    )
