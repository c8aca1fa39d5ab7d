"""A session's system prompt: the static part (the same bytes every session), then this session's facts.

Two messages, the first marked as the cache boundary, so a provider's prompt
cache keeps the static prefix whatever the day, the directory or the memory
files are (Anthropic: a ``cache_control`` breakpoint on it; OpenAI caches the
longest common prefix). The dynamic part is the environment block (git asked
once a session), the memory files, the skills' index and
``--append-system-prompt``; ``--system-prompt`` replaces the built-in prompt,
and only ``--append-system-prompt`` stays beside it.

What the prompt is made of is a ``PromptFacts``: a frozen value the builder
makes from the agent each time the prompt is asked for (``builder.prompt_facts``),
so this module never sees the agent.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..events import Message

if TYPE_CHECKING:
    from .model_options import ModelOptions
    from .sandbox.bubblewrap import Sandbox, SandboxSettings

__all__ = ["PromptFacts", "SessionPrompt", "options_fact"]


@dataclass(frozen=True, slots=True)
class PromptFacts:
    """The session's facts the system prompt says, as they are now: where it works, its model and mode, the
    sandbox and the cap (as lines), the memory files and skills."""

    cwd: str
    shell: str
    child_env: Mapping[str, str]
    """What git is asked with (the environment children start with)."""
    model_spec: str
    permission_mode: str
    memory_text: str
    skills: Mapping[str, Any]
    add_dirs: tuple[str, ...]
    max_output_tokens: int | None
    sandbox: str
    """``sandbox_fact``'s line."""
    cap: str
    """``cap_fact``'s line."""


class SessionPrompt:
    def __init__(self, override: str | None, append: str | None):
        self.override = override
        """``--system-prompt``: replaces the built-in prompt."""
        self.append = append
        """``--append-system-prompt``."""
        self._git: tuple[str | None] | None = None
        """The environment block's git snapshot, taken once a session (None: not yet)."""
        self.style: tuple[str, str] | None = None
        """The settings' ``outputStyle``: (its name, its text), added to the dynamic part (``agent/output_styles.py``)."""

    def new_session(self) -> None:
        """The git snapshot is taken again for each session."""
        self._git = None

    def messages(self, a: PromptFacts) -> list[Message]:
        static = self.override if self.override is not None else _static(a)
        dynamic = self.dynamic(a)
        out: list[Message] = [{"role": "system", "content": static, "cache_boundary": True}]
        if dynamic:
            out.append({"role": "system", "content": dynamic})
        return out

    def dynamic(self, a: PromptFacts) -> str:
        if self.override is not None:  # --system-prompt replaces the built-in prompt: only --append-system-prompt stays
            return self.append or ""
        parts = [self.environment(a)]
        if a.memory_text:
            parts.append(a.memory_text)
        if a.skills:
            from .commands import render_skill_index

            parts.append(render_skill_index(dict(a.skills)))
        if self.style is not None:
            parts.append(f"# Output style: {self.style[0]}\n\n{self.style[1]}")
        if self.append:
            parts.append(self.append)
        return "\n\n".join(parts)

    def environment(self, a: PromptFacts) -> str:
        """The environment block of the system prompt (``agent/system_prompt.py``); git is asked once a session."""
        from .system_prompt import git_snapshot

        if self._git is None:
            self._git = (git_snapshot(a.cwd, a.child_env),)
        return _environment(a, a.cwd, self._git[0])

    def for_child(self, a: PromptFacts, cwd: str) -> str:
        """What a sub-agent working in ``cwd`` is told besides its type's prompt: the parent's working rules
        (the same static prompt, or ``--system-prompt``), the environment block as seen from ``cwd`` (its git
        state asked there), and the memory files."""
        from .system_prompt import git_snapshot

        static = self.override if self.override is not None else _static(a)
        parts = [static, _environment(a, cwd, git_snapshot(cwd, a.child_env))]
        if a.memory_text:
            parts.append(a.memory_text)
        return "\n\n".join(parts)


def _static(a: PromptFacts) -> str:
    """The built-in prompt, naming the one edit tool the model is offered (``system_prompt.static_prompt``)."""
    from ..providers import edit_format
    from .system_prompt import static_prompt

    return static_prompt(edit_format(a.model_spec))


def _environment(a: PromptFacts, cwd: str, git: str | None) -> str:
    from .system_prompt import EnvFacts, environment_block

    return environment_block(EnvFacts(
        cwd=cwd, platform=f"{platform.system()} {platform.release()}", shell=a.shell,
        date=f"{datetime.now(timezone.utc):%Y-%m-%d}", model=a.model_spec, permission_mode=a.permission_mode,
        sandbox=a.sandbox, cap=a.cap, git=git, add_dirs=a.add_dirs, max_output_tokens=a.max_output_tokens,
    ))


def options_fact(o: ModelOptions) -> dict[str, Any]:
    """What the model is asked for each turn (``agent/model_options.py``), as the session records it."""
    return {"max_output_tokens": o.max_output_tokens, "source": o.source, **o.provider_options()}


def cap_fact(max_usd_micros: int | None) -> str:
    from ..budget import format_usd

    if max_usd_micros is None:
        return "none (the user chose no cap)"
    return f"{format_usd(max_usd_micros)} for the whole session"


def sandbox_fact(s: SandboxSettings, sandbox: Sandbox) -> str:
    """One line on what a Bash command can reach."""
    if s.mode == "danger-full-access":
        return "off (danger-full-access): commands run with the user's full access"
    if not sandbox.active:
        return "unavailable: every Bash command asks the user first"
    net = "network on" if s.network else ("network only to " + ", ".join(s.allowed_domains) if s.allowed_domains else "no network")
    where = "nothing writable" if s.mode == "read-only" else "writes only in the working directories and a private /tmp"
    return f"on ({s.mode}): {where}; {net}"
