"""The agent's WebFetch and WebSearch, made from what the agent holds: its model choice (models, prices), its
redaction and the budget the parent's loop has left for tools' model calls (``subagents.parent_budget.ParentBudget``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...tools import Tool
from .web_fetch import PromptModel, WebFetch
from .web_search import WebSearch

if TYPE_CHECKING:
    from ..model_choice import ModelChoice

__all__ = ["web_tools"]

log = logging.getLogger("agentloop.agent")


def _open_plain(models: ModelChoice, spec: str) -> Any:
    """The provider's small model, without the session's thinking or effort (a short side call needs neither)."""
    from ...providers import ProviderConfigError, open_model

    try:
        return open_model(spec, base_url=models.base_url, api_key_env=models.api_key_env, env=models.env, prices=models.prices,
                          chosen_by_project=models.project_env, key_helper=models.key_helper)
    except ProviderConfigError as exc:
        if "sends a key only to the host" in str(exc):
            raise  # the key-to-host wall holds here too: never retried another way
        return models.open(spec)
    except Exception:  # a changed signature or a provider's refusal: the session's own way of opening a model
        return models.open(spec)


def web_tools(models: ModelChoice, redact: Callable[[str], str], budget: Any, cheap: Callable[[str], str | None]) -> list[Tool]:
    """WebFetch (its prompt applied by the provider's cheap model, else the session's) and WebSearch."""
    lock = threading.Lock()
    opened: dict[str, Any] = {}

    def prompt_model() -> PromptModel | None:
        spec = cheap(models.model_spec)
        model: Any = None
        name = ""
        if spec is not None:
            with lock:
                if spec not in opened:
                    try:
                        opened[spec] = _open_plain(models, spec)
                    except Exception as exc:
                        log.warning("WebFetch: cannot open %s (%s); the session's model applies prompts", spec, exc)
                        opened[spec] = None
                model = opened[spec]
                name = spec.split(":", 1)[-1]
        if model is None:
            model, name = models.model, models.name
        if model is None:
            return None
        return PromptModel(model, models.prices.resolve(name), budget, name)

    def secret_in(text: str) -> bool:
        """A held secret in the URL, in any shape (``secret_shapes``), also once or twice %-decoded (a base64
        shape's ``+``, ``/`` and ``=`` are often %-encoded in a query)."""
        from ..secret_shapes import sent_forms

        return any(redact(t) != t for t in sent_forms(text))

    fetch = WebFetch(prompt_model, secret_in=secret_in)
    search = WebSearch(prompt_model)
    return [fetch.tool(), search.tool()]
