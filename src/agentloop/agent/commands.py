"""Custom slash commands (Markdown prompt templates) and skills (folders with a SKILL.md).

Rules:

1. Commands are ``*.md`` files under ``<home>/commands/`` (the user's),
   ``~/.claude/commands/``, ``<cwd>/.claude/commands/`` and
   ``<cwd>/.agentloop/commands/``; a later place overrides an earlier one
   with the same name. As in Claude Code, a command in a subfolder keeps its
   file's name (``frontend/build.md`` is ``/build``) and the folder shows in
   its description; two of one name in one place keep the first, with a
   warning.
2. A template may start with front matter (``---`` lines) giving
   ``description``, ``argument-hint`` and ``allowed-tools`` (permission rules
   that hold for the command's own turn, and for its ``!`` lines); without a
   description, the first line of the body is used. ``!`command``` in the
   body is run before the prompt is sent, through the same permissions and
   hooks as the model's Bash calls, and its output takes its place
   (``bang_commands``). ``render`` puts the arguments in place of
   ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$1``..``$9`` (split like a shell);
   a template with no placeholder gets the arguments appended.
3. Skills are folders ``skills/<name>/SKILL.md`` in the same places. Only
   their names and descriptions go into the context (``render_skill_index``);
   the body is read when the model (the ``Skill`` tool, which needs no
   approval) or the user (``/name``) loads it. ``disable-model-invocation:
   true`` keeps a skill out of the index and the tool (only ``/name`` loads
   it); ``allowed-tools`` holds while the skill is active (the rest of the
   turn that loaded it).
4. Front matter is a small YAML subset (``key: value``, quoted strings,
   ``[a, b]`` lists, indented continuation lines), parsed here rather than
   pulling in PyYAML for three keys. A broken header is treated as body text,
   never as an error that stops the agent from starting.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tools import Tool, ToolError

__all__ = [
    "BANG",
    "CustomCommand",
    "bang_commands",
    "Skill",
    "load_commands",
    "load_skills",
    "parse_front_matter",
    "render_skill_index",
    "skill_tool",
    "substitute",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
BANG = re.compile(r"!`([^`\n]+)`")
"""``!`git status``` in a command's body: run before the prompt is sent, its output in its place."""
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


def _read(path: str, warnings: list[str] | None = None) -> str | None:
    """A template's text, at most ``MAX_TEMPLATE_BYTES``; None (and a warning) for what is not a regular file.

    A FIFO would block the start and a device (a symlink to ``/dev/zero``)
    never end: neither is opened for reading.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            if warnings is not None:
                warnings.append(f"{path}: not a regular file (a FIFO, device or socket); skipped")
            return None
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_TEMPLATE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data[:MAX_TEMPLATE_BYTES].decode("utf-8", "replace")


def _places(cwd: str, home: str, kind: str, user_home: str | None = None) -> list[tuple[str, str]]:
    out = [(os.path.join(home, kind), "user")]
    if user_home:
        out.append((os.path.join(user_home, ".claude", kind), "user"))
    out += [
        (os.path.join(cwd, ".claude", kind), "project"),
        (os.path.join(cwd, ".agentloop", kind), "project"),
    ]
    return out


def tool_rules(value: Any) -> tuple[str, ...]:
    """``allowed-tools`` as written (``Bash(git add:*), Read`` or a list) as permission rules."""
    if isinstance(value, list):
        items = [str(v) for v in value]
    elif isinstance(value, str):
        items, depth, cur = [], 0, ""
        for ch in value:
            depth += ch == "("
            depth -= ch == ")"
            if ch in ", " and depth <= 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        items.append(cur)
    else:
        return ()
    return tuple(i.strip() for i in items if i.strip())


def bang_commands(template: str) -> list[str]:
    """The ``!`command``` lines of a template, in order."""
    return [m.group(1).strip() for m in BANG.finditer(template)]


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
class CustomCommand:
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

    @property
    def allowed_tools(self) -> tuple[str, ...]:
        return tool_rules(self.meta.get("allowed-tools"))

    def render(self, arguments: str) -> str:
        """The prompt with ``arguments`` substituted for ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$1``..``$9``."""
        return substitute(self.template, arguments)


def load_commands(cwd: str, home: str, user_home: str | None = None, warnings: list[str] | None = None) -> dict[str, CustomCommand]:
    """The custom slash commands visible from ``cwd``; ``home`` is agentloop's home.

    A project command overrides a user command of the same name, and
    ``.agentloop/commands`` overrides ``.claude/commands``. Two commands of one
    name in one place (in different subfolders) keep the first by path; the
    other is named in ``warnings``.
    """
    out: dict[str, CustomCommand] = {}
    for root, scope in _places(cwd, home, "commands", user_home):
        if not os.path.isdir(root):
            continue
        here: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = os.path.relpath(dirpath, root)
            folder = "" if rel == os.curdir else rel.replace(os.sep, ":")
            for fn in sorted(filenames):
                if not fn.endswith(".md"):
                    continue
                stem = fn[:-3]
                if not _NAME.match(stem):
                    continue
                path = os.path.join(dirpath, fn)
                if stem in here:
                    if warnings is not None:
                        warnings.append(f"{path}: the command /{stem} is also {here[stem]}; the first is used")
                    continue
                text = _read(path, warnings)
                if text is None:
                    continue
                here[stem] = path
                meta, body = parse_front_matter(text)
                desc = str(meta.get("description") or _first_line(body))
                if folder:
                    desc = f"{desc} ({scope}:{folder})"
                out[stem] = CustomCommand(
                    name=stem,
                    path=path,
                    template=body,
                    description=desc,
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
    model_invocable: bool = True
    """False with ``disable-model-invocation: true``: only the user (``/name``) loads it."""
    allowed_tools: tuple[str, ...] = ()
    """Permission rules that hold while the skill is active."""

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


def load_skills(cwd: str, home: str, user_home: str | None = None) -> dict[str, Skill]:
    """The skills visible from ``cwd`` (same places and precedence as commands)."""
    out: dict[str, Skill] = {}
    for root, scope in _places(cwd, home, "skills", user_home):
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
            out[name] = Skill(
                name=name, description=" ".join(desc.split()), path=path, scope=scope,
                model_invocable=meta.get("disable-model-invocation") is not True,
                allowed_tools=tool_rules(meta.get("allowed-tools")),
            )
    return out


def render_skill_index(skills: dict[str, Skill]) -> str:
    """The names and descriptions of the skills the model may load, for the system prompt ("" when none)."""
    skills = {n: s for n, s in skills.items() if s.model_invocable}
    if not skills:
        return ""
    lines = [
        "Skills are available. Each is a set of instructions; load one with the Skill tool "
        "when the task matches its description:"
    ]
    for s in skills.values():
        lines.append(f"- {s.name}: {s.description}")
    return "\n".join(lines) + "\n"


def skill_tool(skills: dict[str, Skill], on_load: Callable[[Skill], None] | None = None) -> Tool:
    """A read-only ``Skill`` tool ({skill}) that returns a skill's instructions.

    Skills with ``disable-model-invocation`` are not offered; ``on_load`` is
    told of each skill loaded (the agent grants its ``allowed-tools``).
    """
    offered = {n: s for n, s in skills.items() if s.model_invocable}

    def load(**kw: Any) -> str:
        name = str(kw["skill"]).lstrip("/")
        skill = offered.get(name)
        if skill is None:
            have = ", ".join(sorted(offered)) or "none"
            why = " (it is for the user to load, with /" + name + ")" if name in skills else ""
            raise ToolError(f"no skill named {name!r}{why} (have: {have})")
        if on_load is not None:
            on_load(skill)
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
