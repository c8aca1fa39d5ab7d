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
   that hold for the command's own turn, and for its ``!`` lines) and ``model``
   (the model its turn runs on; the next turns go back to the session's);
   without a description, the first line of the body is used. ``!`command``` in the
   body is run before the prompt is sent, through the same permissions and
   hooks as the model's Bash calls, and its output takes its place
   (``bang_commands``); so is a fenced block opened with ````` ```! `````
   (its lines run as one command). ``render`` puts the arguments in place of
   ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N`` (split like a shell), as
   Claude Code's skills reference ("Available string substitutions") says:
   ``$N`` is shorthand for ``$ARGUMENTS[N]``, 0-based (``$0`` the first,
   ``$1`` the second); an index with no argument stays as written (so
   ``awk '{print $1}'`` survives a one-argument call); ``\\$1`` is a literal
   ``$1``. Without ``$ARGUMENTS`` in the body the arguments are appended as
   ``ARGUMENTS: ...``.
3. Skills are folders ``skills/<name>/SKILL.md`` in the same places. Only
   their names and descriptions go into the context (``render_skill_index``);
   the body is read when the model (the ``Skill`` tool, which needs no
   approval) or the user (``/name``) loads it. ``disable-model-invocation:
   true`` keeps a skill out of the index and the tool (only ``/name`` loads
   it); ``allowed-tools`` holds while the skill is active (the rest of the
   turn that loaded it). A skill's ``!`` lines run as a command's do, when
   it is loaded (the agent passes ``skill_tool`` its ``preprocess``).
4. Front matter is YAML, read as ``agent/front_matter.py`` says (a header that
   is not valid YAML is read line by line, as real files need). A broken header
   is treated as body text, never as an error that stops the agent from starting.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..tools import Tool, ToolError
from .front_matter import parse_front_matter
from .tools.record import ToolRecord

__all__ = [
    "BANG",
    "bang_command",
    "command_failed",
    "CustomCommand",
    "bang_commands",
    "Skill",
    "expand_mentions",
    "load_commands",
    "load_skills",
    "parse_front_matter",
    "render_skill_index",
    "skill_tool",
    "substitute",
    "unsupported_warnings",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
BANG = re.compile(r"^```!\s*\n(.*?)\n?^```[ \t]*$|!`([^`\n]+)`", re.MULTILINE | re.DOTALL)
"""``!`git status``` in a command's body, or a fenced block opened with ```` ```! ````: run before the
prompt is sent, its output in its place (group 1: the block's lines, group 2: the inline command)."""
MAX_TEMPLATE_BYTES = 256_000
_PLACEHOLDER = re.compile(r"(\\*)\$(?:ARGUMENTS\[(\d+)\]|(\d+)|(ARGUMENTS))")


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


def bang_command(m: re.Match[str]) -> tuple[str, str]:
    """A ``BANG`` match's command, and the pattern as written (for the failure message)."""
    if m.group(1) is not None:
        cmd = m.group(1).strip()
        return cmd, f"```!\n{cmd}\n```"
    cmd = m.group(2).strip()
    return cmd, f"!`{cmd}`"


def bang_commands(template: str) -> list[str]:
    """The ``!`command``` lines and ```` ```! ```` blocks of a template, in order."""
    return [bang_command(m)[0] for m in BANG.finditer(template)]


def command_failed(pattern: str, detail: str) -> str:
    """The message that ends a command whose ``!`` line failed (Claude Code's wording)."""
    return f"Bash command failed for pattern \"{pattern}\": {detail.strip()}"


def substitute(template: str, arguments: str) -> str:
    """``template`` with ``arguments`` in place of ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N`` (0-based).

    Positional arguments are split like a shell. An index with no argument
    stays as written; one backslash before a placeholder makes it literal
    (the backslash goes), two leave both and the placeholder still expands.
    Substitution is one pass, so arguments that contain placeholders are not
    substituted again. A template without ``$ARGUMENTS`` (or
    ``$ARGUMENTS[N]``) gets ``ARGUMENTS: ...`` appended.
    """
    arguments = arguments.strip()
    try:
        positional = shlex.split(arguments)
    except ValueError:
        positional = arguments.split()
    named = False

    def sub(m: re.Match[str]) -> str:
        nonlocal named
        slashes, token = m.group(1), m.group(0)[len(m.group(1)) :]
        if len(slashes) == 1:
            return token
        if m.group(4) is not None:
            named = True
            return slashes + arguments
        if m.group(2) is not None:
            named = True
        k = int(m.group(2) if m.group(2) is not None else m.group(3))
        return slashes + positional[k] if k < len(positional) else m.group(0)

    out = _PLACEHOLDER.sub(sub, template)
    if not named and arguments:
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

    @property
    def disallowed_tools(self) -> tuple[str, ...]:
        """``disallowed-tools``: deny rules for the command's turn."""
        return tool_rules(self.meta.get("disallowed-tools"))

    @property
    def model(self) -> str | None:
        """``model``: the model the command's turn runs on (None: the conversation's)."""
        return front_matter_model(self.meta)

    @property
    def hooks(self) -> Any:
        """``hooks``: hooks that run while the command's turn lasts (``agent/slash_commands.py``)."""
        return self.meta.get("hooks")

    def render(self, arguments: str) -> str:
        """The prompt with ``arguments`` substituted for ``$ARGUMENTS``, ``$ARGUMENTS[N]`` and ``$N``."""
        return substitute(self.template, arguments)


UNSUPPORTED_KEYS = {
    "context": "Claude Code runs a skill with context: fork in a sub-agent of its own; agentloop runs it in the "
               "conversation, with the conversation's tools",
    "agent": "the sub-agent type a context: fork skill runs in; agentloop runs the skill in the conversation",
}
"""Front matter Claude Code documents for commands and skills that agentloop does not honour, and what happens instead."""


def front_matter_model(meta: dict[str, Any]) -> str | None:
    """The ``model`` of a command's or skill's front matter: None when absent, empty or ``inherit``."""
    m = meta.get("model")
    if not isinstance(m, str) or not m.strip() or m.strip().lower() == "inherit":
        return None
    return m.strip()


def unsupported_warnings(path: str, meta: dict[str, Any], what: str) -> list[str]:
    """One warning per front matter key of ``UNSUPPORTED_KEYS`` in ``meta`` (never ignored in silence)."""
    return [f"{path}: front matter {k!r} of {what} is not supported by agentloop; ignored ({why})"
            for k, why in UNSUPPORTED_KEYS.items() if k in meta and (k != "context" or meta[k] == "fork")]


def load_commands(cwd: str, home: str, user_home: str | None = None, warnings: list[str] | None = None, *,
                  places: Sequence[tuple[str, str]] | None = None) -> dict[str, CustomCommand]:
    """The custom slash commands visible from ``cwd``; ``home`` is agentloop's home.

    A project command overrides a user command of the same name, and
    ``.agentloop/commands`` overrides ``.claude/commands``. Two commands of one
    name in one place (in different subfolders) keep the first by path; the
    other is named in ``warnings``. ``places``: (folder, scope) pairs to read instead (a plugin's).
    """
    out: dict[str, CustomCommand] = {}
    for root, scope in _places(cwd, home, "commands", user_home) if places is None else places:
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
                meta, body = parse_front_matter(text, warnings, path)
                if warnings is not None:
                    warnings += unsupported_warnings(path, meta, f"the command /{stem}")
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
    disallowed_tools: tuple[str, ...] = ()
    """``disallowed-tools``: deny rules while the skill is active."""
    model: str | None = None
    """``model``: the model the turn it starts with ``/name`` runs on (None: the conversation's)."""
    plugin_root: str = ""
    """A plugin's skill: its folder, for ``${CLAUDE_PLUGIN_ROOT}`` in the body."""
    hooks: Any = None
    """Front matter ``hooks``: hooks that run while the skill is active (``agent/slash_commands.py``)."""

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
        if self.plugin_root:
            body = body.replace("${CLAUDE_PLUGIN_ROOT}", self.plugin_root)
        return f"Skill {self.name} (files in {self.directory}):\n\n{body.strip()}\n"

    def render(self, arguments: str) -> str:
        """The body as a prompt, with the arguments substituted as in a command (or appended)."""
        return substitute(self.body(), arguments)


def load_skills(cwd: str, home: str, user_home: str | None = None, warnings: list[str] | None = None, *,
                places: Sequence[tuple[str, str]] | None = None) -> dict[str, Skill]:
    """The skills visible from ``cwd`` (same places and precedence as commands, or ``places``); front matter
    agentloop does not honour is named in ``warnings``."""
    out: dict[str, Skill] = {}
    for root, scope in _places(cwd, home, "skills", user_home) if places is None else places:
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry, "SKILL.md")
            if not os.path.isfile(path):
                continue
            text = _read(path)
            if text is None:
                continue
            meta, body = parse_front_matter(text, warnings, path)
            name = str(meta.get("name") or entry).strip()
            if not _NAME.match(name):
                name = entry
            if warnings is not None:
                warnings += unsupported_warnings(path, meta, f"the skill {name!r}")
                if front_matter_model(meta) and meta.get("disable-model-invocation") is not True:
                    warnings.append(f"{path}: front matter 'model' of the skill {name!r} holds for the turn /{name} starts; "
                                    f"when the model loads the skill itself, the turn's model goes on")
            desc = str(meta.get("description") or _first_line(body))
            out[name] = Skill(
                name=name, description=" ".join(desc.split()), path=path, scope=scope,
                model_invocable=meta.get("disable-model-invocation") is not True,
                allowed_tools=tool_rules(meta.get("allowed-tools")),
                disallowed_tools=tool_rules(meta.get("disallowed-tools")),
                model=front_matter_model(meta), hooks=meta.get("hooks"),
            )
    return out


MENTION = re.compile(r"(?<![\w@])@((?:[^\s\\]|\\ )+)")
"""``@path`` in a prompt or a command's body: the file (or a directory's listing) is attached."""
MAX_ATTACH = 200_000


def _inside(path: str, roots: Iterable[str]) -> bool:
    for r in roots:
        try:
            if os.path.commonpath([path, r]) == r:
                return True
        except ValueError:
            continue
    return False


def expand_mentions(
    text: str, cwd: str, roots: Iterable[str], *, refuse: Callable[[str], str | None] | None = None
) -> tuple[str, list[str], list[str]]:
    """Attach the files named by ``@path`` mentions.

    Returns the prompt with each attached file's content appended, the
    attached paths, and one message per mention that was refused. A mention
    whose real path is outside ``roots`` is refused (symlinks are followed
    first); so is one that ``refuse(real_path)`` gives a reason for (a Read
    deny rule). A mention of nothing that exists is left as text.
    """
    roots = [os.path.realpath(r) for r in roots]
    attached: list[str] = []
    refused: list[str] = []
    blocks: list[str] = []
    for m in MENTION.finditer(text):
        raw = m.group(1).replace("\\ ", " ").rstrip(".,;:!?)")
        full = os.path.join(cwd, os.path.expanduser(raw))
        if not os.path.lexists(full):
            continue
        real = os.path.realpath(full)
        if not _inside(real, roots):
            refused.append(f"@{raw} is outside the workspace; not attached")
            continue
        why = refuse(real) if refuse is not None else None
        if why:
            refused.append(f"@{raw}: {why}; not attached")
            continue
        if real in attached:
            continue
        rel = os.path.relpath(real, cwd)
        if os.path.isdir(real):
            try:
                names = sorted(os.listdir(real))
            except OSError as exc:
                refused.append(f"@{raw}: {exc.strerror}")
                continue
            listing = "\n".join(n + ("/" if os.path.isdir(os.path.join(real, n)) else "") for n in names[:500])
            blocks.append(f'<directory path="{rel}">\n{listing}\n</directory>')
        else:
            try:
                with open(real, "rb") as f:
                    data = f.read(MAX_ATTACH + 1)
            except OSError as exc:
                refused.append(f"@{raw}: cannot read: {exc.strerror}")
                continue
            if b"\0" in data[:8192]:
                refused.append(f"@{raw} is a binary file; not attached")
                continue
            body = data[:MAX_ATTACH].decode("utf-8", errors="replace")
            more = f"\n[truncated at {MAX_ATTACH} bytes]" if len(data) > MAX_ATTACH else ""
            blocks.append(f'<file path="{rel}">\n{body}{more}\n</file>')
        attached.append(real)
    if not blocks:
        return text, [], refused
    return text + "\n\n" + "\n\n".join(blocks), attached, refused



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


SKILL = ToolRecord(
    "Skill",
    "Load a skill's instructions by name (the list of skills is in the system prompt).",
    {
        "type": "object",
        "properties": {"skill": {"type": "string", "description": "The skill's name."},
                       "args": {"type": "string", "description": "Optional arguments for the skill ($ARGUMENTS in it)."}},
        "required": ["skill"],
        "additionalProperties": False,
    },
    read_only=True, asks=False,
)
"""Skill only returns a skill's instructions: it changes nothing and asks no permission."""


def skill_tool(
    skills: dict[str, Skill],
    on_load: Callable[[Skill], None] | None = None,
    preprocess: Callable[[Skill, str], str] | None = None,
) -> Tool:
    """A read-only ``Skill`` tool ({skill, args?}) that returns a skill's instructions, ``args`` put in place of its
    ``$ARGUMENTS`` as ``/name args`` would (Claude Code's Skill tool takes the same two fields).

    Skills with ``disable-model-invocation`` are not offered; ``on_load`` is
    told of each skill loaded (the agent grants its ``allowed-tools``);
    ``preprocess(skill, body)`` runs the body's ``!`` lines (the agent's, through
    its pipeline) and may raise ``ToolError`` when one fails.
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
        args = kw.get("args")
        body = skill.render(str(args)) if isinstance(args, str) and args.strip() else skill.body()
        return preprocess(skill, body) if preprocess is not None else body

    return SKILL.tool(load)
